// The silence alarm belongs to the stream, not to one recorder: events, the detection a new
// recorder of a silent stream starts with, and an alarm forgotten when the stream stops.
import Archive
import ControlProtocol
import Testing

@testable import Daemon
@testable import SystemSupport

@Suite("silence alarms per stream")
struct SilenceAlarmsTests {
    static let settings = SilenceSettings(thresholdDB: -40, seconds: 1.5)

    static func change(_ state: SilenceTransition.State, at seconds: Int64, peak: Float) -> SilenceChange {
        SilenceChange(
            state: state, since: UTCTime(secondsSinceEpoch: 1_000 + seconds),
            decided: UTCTime(secondsSinceEpoch: 1_000 + seconds, nanoseconds: 1_500_000_000), peak: peak)
    }

    @Test("one began per silence even when a continuing recorder reports it again; ended closes it with its length")
    func streamAlarm() throws {
        let sink = EventCollector()
        let alarms = SilenceAlarms(sink: sink, runner: nil)
        #expect(alarms.detection(app: "a", stream: "main", settings: Self.settings)?.alreadySilent == false)
        let threshold = try #require(alarms.detection(app: "a", stream: "main", settings: Self.settings)?.threshold)
        #expect(abs(threshold - 0.01) < 1e-6)
        alarms.handle(Self.change(.began, at: 0, peak: 0), app: "a", stream: "main", settings: Self.settings)
        // The stream's next recorder starts silent, and a began of its own is not announced.
        #expect(alarms.detection(app: "a", stream: "main", settings: Self.settings)?.alreadySilent == true)
        alarms.handle(Self.change(.began, at: 5, peak: 0), app: "a", stream: "main", settings: Self.settings)
        #expect(alarms.alarm(app: "a", stream: "main")?.since == UTCTime(secondsSinceEpoch: 1_000))
        alarms.handle(Self.change(.ended, at: 12, peak: 0.25), app: "a", stream: "main", settings: Self.settings)
        let events = sink.named("silence")
        #expect(events.map { $0["state"] } == ["began", "ended"])
        #expect(events.first?["seconds"] == 1.5 && events.first?["levelDB"] == -144)
        #expect(events.last?["seconds"] == 12 && events.last?["levelDB"] == -12)
        #expect(events.last?["since"] == "1970-01-01T00:16:52.000000Z")
        #expect(alarms.alarm(app: "a", stream: "main") == nil)
        // Detection off: no detection for new recorders.
        #expect(alarms.detection(app: "a", stream: "main", settings: SilenceSettings(seconds: 0)) == nil)
    }

    @Test("a stream stopped for good while silent loses its alarm without an event")
    func forget() {
        let sink = EventCollector()
        let alarms = SilenceAlarms(sink: sink, runner: nil)
        alarms.handle(Self.change(.began, at: 0, peak: 0.001), app: "a", stream: "main", settings: Self.settings)
        #expect(sink.named("silence").first?["levelDB"] == -60)
        alarms.forget(app: "a", stream: "main")
        #expect(alarms.alarm(app: "a", stream: "main") == nil && sink.named("silence").count == 1)
        alarms.handle(Self.change(.ended, at: 3, peak: 0.5), app: "a", stream: "main", settings: Self.settings)
        #expect(sink.named("silence").count == 1, "no ended for an alarm that is gone")
    }
}

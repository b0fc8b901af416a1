// True time end to end: time stays true. A private jackd is stopped (SIGSTOP) in the
// middle of a recording of recd-signal's counter; the archive's FLAC is read back with the
// reference tools.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("time stays true end to end", .serialized)
struct TrueTimeEndToEndTests {
    static let rate = 48_000

    @Test(
        "jackd stopped (SIGSTOP) for 3 s mid-recording: the stall is one clockStall gap of about 3 s (GAPS, the gap event), START + offset of the first sample after it is the wall-clock time jackd went on within 50 ms, the counter runs on (but for xruns), and the segment has CLOCK_DRIFT_PPM",
        .enabled(if: !TestServer.isPipeWire, Comment(rawValue: TestServer.startsItsOwnJackd)))
    func stalledServer() throws {
        let jack = try PrivateJack(period: 256, name: "recd-test-truetime", realtime: true)
        defer { jack.stop() }
        let (daemon, source, xrunsBefore) = try ReliabilityTests.counterLogger(on: jack)
        defer { source.stop() }
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        let watcher = try daemon.watch()
        usleep(2_000_000)

        // Each signal's wall-clock time is bracketed (before and after the kill): on a loaded
        // machine this test's own thread may wait to be scheduled between reading the clock and
        // sending the signal, and the bounds below hold around the bracket, not a point in it.
        let server = try #require(jack.process?.processIdentifier)
        let stopping = Date()
        kill(server, SIGSTOP)
        let stopped = Date()
        usleep(3_000_000)
        let resuming = Date()
        kill(server, SIGCONT)
        let resumed = Date()
        let events = watcher.waitFor(timeout: 5) {
            $0["event"] == "recording" && $0["state"] == "gap" && ($0["length"]?.intValue ?? 0) > Self.rate
        }
        usleep(1_500_000)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        #expect(try eventually { archiveFiles(daemon.directory + "/archive").contains { $0.hasSuffix(".flac") } })

        let gapEvent = try #require(
            events.filter { $0["state"] == "gap" }.max {
                ($0["length"]?.intValue ?? 0) < ($1["length"]?.intValue ?? 0)
            },
            "\(events.map(\.jsonText))")
        #expect(gapEvent["reason"] == "clockStall", "\(gapEvent.jsonText)")
        let file = try #require(archiveFiles(daemon.directory + "/archive").first)
        #expect(try flacTest(file))
        let gaps = try #require(try metaflacTag(file, "GAPS").flatMap { Self.parseGaps($0) }, "GAPS of \(file)")
        let xruns = try daemon.xruns() - xrunsBefore
        // The stall is the long gap. A dummy server late by more than a period at other times
        // (an xrun on a loaded machine) lost that time too: a short gap each.
        let gap = try #require(gaps.max { $0.length < $1.length })
        #expect(
            gaps.count == 1 || gaps.count <= 1 + xruns, "one gap for the stall and one per xrun (\(xruns)): \(gaps)")
        #expect(gapEvent["length"]?.intValue == gap.length, "\(gapEvent.jsonText) against GAPS \(gaps)")
        let stalled = Double(gap.length) / Double(Self.rate)
        let (shortest, longest) = (resuming.timeIntervalSince(stopped), resumed.timeIntervalSince(stopping))
        #expect(
            stalled > shortest - 0.1 && stalled < longest + 0.1,
            "the gap stands for \(stalled) s of a stall of \(shortest)…\(longest) s")

        // The first sample after the stall is file frame `position`; its time on the
        // recording's clock is START plus the frames before it and every gap up to it.
        let start = try #require(try PreRollEndToEndTests.startTime(file))
        let offset = gap.position + gaps.filter { $0.position <= gap.position }.map(\.length).reduce(0, +)
        let placed = start.addingTimeInterval(Double(offset) / Double(Self.rate))
        // How far the sample's time lies outside the bracket around SIGCONT (0 inside it).
        let error = min(0, placed.timeIntervalSince(resuming)) + max(0, placed.timeIntervalSince(resumed))
        #expect(
            abs(error) < 0.05,
            """
            START + offset of the first sample after the stall is \(error * 1000) ms outside jackd's SIGCONT \
            (sent within \(resumed.timeIntervalSince(resuming) * 1000) ms)
            """)
        let bracket = resumed.timeIntervalSince(resuming) * 1000
        print("stall: gaps \(gaps), xruns \(xruns), error \(error * 1000) ms, SIGCONT bracket \(bracket) ms")

        // recd-signal stood still with its server: nothing of the signal is missing, only time
        // (an xrun disturbs a period or two of the deck's counter, as ReliabilityTests says).
        let check = CounterCheck(try decodeFLAC(file, bits: 24), channels: 2, period: 256)
        #expect(
            check.disturbedBlocks.count <= 2 * xruns, "counter breaks at \(check.disturbedBlocks) with \(xruns) xruns")
        let drift = try #require(try metaflacTag(file, "CLOCK_DRIFT_PPM").flatMap(Double.init), "CLOCK_DRIFT_PPM")
        #expect(abs(drift) < 20_000, "CLOCK_DRIFT_PPM \(drift)")
        let listed = try daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue?.first
        #expect(listed?["clockDriftPpm"]?.doubleValue == drift, "\(listed?.jsonText ?? "no segment listed")")
        #expect(listed?["gaps"]?.intValue == gaps.count)
        print("stall: drift \(drift) ppm")
    }

    static func parseGaps(_ text: String) -> [(position: Int, length: Int)]? {
        var gaps: [(Int, Int)] = []
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "+")
            guard parts.count == 2, let position = Int(parts[0]), let length = Int(parts[1]) else { return nil }
            gaps.append((position, length))
        }
        return gaps
    }
}

// RecorderService alone: the real engine controller on the test's jackd, real archiver threads
// writing real FLAC files into a temporary archive, the real worker for verify; the test
// thread is the control thread (it runs what the archivers' wake posts, then asks the service
// for its news, as the router does). Only the event sink is a stand-in.
import Archive
import AudioEngine
import AudioTestSupport
import Codec
import ControlProtocol
import Foundation
import Glibc
import SessionPolicy
import SystemSupport
import TestSupport
import Testing

@testable import Daemon

@Suite("recorder service against jackd", .serialized)
final class RecorderServiceTests {
    let directory: TemporaryDirectory
    let mailbox = Mailbox()
    let events = EventCollector()
    let device: StandInDevice
    let engine: EngineController
    let worker: SlowRequestWorker
    let recorders: RecorderService
    /// The archive's index and requests, the one feature the recorders tell here.
    let archive: ArchiveService
    /// What the service reported since the test began.
    var news = RecorderNews()

    static let context = RecordingContext(category: "record", mode: "default", silenced: false)

    init() throws {
        directory = try TemporaryDirectory()
        device = try StandInDevice()
        let config = try testConfig(
            ports: systemPorts + port("line", "lineIn", "input", jack: device.sourcePorts), directory: directory.path)
        engine = try startedEngine(config, mailbox: mailbox)
        worker = try SlowRequestWorker(name: "test worker", deliver: mailbox.deliver)
        let mailbox = mailbox
        recorders = RecorderService(
            settings: config.archive, declared: [("logger", .route), ("desk", .port("line")), ("quiet", .no)],
            engine: engine.audio, ports: engine,
            sink: events, worker: worker, wake: { mailbox.deliver {} })
        archive = ArchiveService(directory: config.archive.dir, worker: worker, recorders: recorders)
        recorders.features = [archive]
        recorders.openArchive()
    }

    deinit {
        recorders.stopAllAndWait()
        worker.stop()
        engine.stop()
    }

    /// The control thread's share: posted work, then the service's news (start times too).
    func pump(seconds: Double = 10, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() > deadline { return false }
            if mailbox.run() == 0 { usleep(2_000) }
            let more = recorders.service(now: 0)
            news.finished += more.finished
        }
        return true
    }

    func record(_ app: String, port: String, type: PortType = .builtInMic, context: RecordingContext = context) throws
        -> RecorderStream
    {
        try recorders.startInput(
            RecorderSpec(app: app, stream: port, port: port), channels: 2, type: type, bandwidth: .full,
            context: context)
    }

    func recordingEvents(_ state: String) -> [JSONValue] { events.named("recording", state: state) }

    func declaredToStart() -> [(app: String, port: String?)] {
        recorders.recovery.declaredToStart { self.recorders.isRecording($0) }
    }

    @Test("a processed recorder reads through the voice processor with its session's features, a plain one not")
    func processedRecorder() throws {
        var voiceChat = Self.context
        voiceChat.processing = .voice
        voiceChat.referencePort = "spk"
        var echoOnly = Self.context
        echoOnly.processing = .echoCancellation
        echoOnly.referencePort = "spk"
        let plain = try record("logger", port: "mic")
        let voice = try record("call", port: "mic", context: voiceChat)
        let echo = try record("echo", port: "mic", context: echoOnly)
        #expect(plain.voice == nil && voice.tap.reference != nil && plain.tap.reference == nil)
        #expect(voice.voice?.features.isSuperset(of: .voiceChat) == true)
        #expect(echo.voice?.features.contains(.echoCancellation) == true)
        #expect(echo.voice?.features.contains(.noiseSuppression) == false)
        #expect(pump { (voice.voice?.latencySeconds ?? 0) > 0 && (echo.voice?.latencySeconds ?? 0) > 0 })
        #expect(pump { self.recordingEvents("segment").count == 3 }, "not every recorder opened a segment")
        usleep(300_000)
        for app in ["logger", "call", "echo"] { _ = try recorders.stopRecording(app: app, stream: nil) }
        #expect(pump { [plain, voice, echo].allSatisfy { self.news.finished.contains($0.id) } })
        let listed = try archive.archiveList(app: nil, since: nil).first { $0.0 == "segments" }?.1.arrayValue ?? []
        func segment(_ app: String) -> (app: String, frames: Int)? {
            listed.first { $0["app"]?.stringValue == app }.map { (app, $0["frames"]?.intValue ?? 0) }
        }
        let latency = try #require(voice.voice?.latencySeconds)
        let processedFrames = try #require(segment("call")?.frames)
        // The flush: every captured frame comes out, after `latency` of the processor's own.
        #expect(processedFrames == voice.tap.framesCaptured + Int((latency * 48_000).rounded()))
        #expect(segment("echo")?.frames ?? 0 > echo.tap.framesCaptured)
        #expect(segment("logger")?.frames == plain.tap.framesCaptured)
        let paths = listed.compactMap { entry in entry["path"]?.stringValue.map { (entry["app"]?.stringValue, $0) } }
        for (app, path) in paths {
            let tag = try FLACInspector.vorbisComments(path: path).first { $0.0 == CommentName.voiceProcessing }?.1
            let expected = ["call": "voice", "echo": "echoCancellation"][app ?? ""]
            #expect(tag == expected, "\(app ?? "?"): \(String(describing: tag))")
        }
    }

    @Test("the features hear a recorder's facts in order: configure, opened, finished (indexed first), ended")
    func featuresHearSegments() throws {
        // Not declared: once stopped, nothing of it waits, and its stream has ended.
        let heard = HeardFacts()
        heard.archive = archive
        recorders.features = [archive, heard]
        let stream = try record("notes", port: "mic")
        #expect(heard.facts.first == "configure notes/mic", "\(heard.facts)")
        #expect(pump { heard.facts.contains { $0.hasPrefix("opened") } }, "no segment was opened")
        #expect(pump { stream.tap.framesCaptured > 48_000 / 4 })
        _ = try recorders.stopRecording(app: "notes", stream: nil)
        #expect(pump { news.finished.contains(stream.id) })
        let path = try #require(heard.facts.first { $0.hasPrefix("opened") }.map { String($0.dropFirst(7)) })
        #expect(
            heard.facts == ["configure notes/mic", "opened \(path)", "finished \(path) indexed", "ended notes/mic"])
    }

    @Test("an input is archived as FLAC; stop returns at once and the finish follows with the recorder's own event")
    func recordsAndStops() throws {
        let stream = try record("logger", port: "mic")
        #expect(recorders.isRecording("logger") && recordingEvents("started").count == 1)
        #expect(pump { !recordingEvents("segment").isEmpty }, "no segment was opened")
        #expect(pump { stream.recorder.openPaths.isEmpty == false && stream.tap.framesCaptured > 48_000 / 4 })

        let stopped = try recorders.stopRecording(app: "logger", stream: nil)
        #expect(stopped.map(\.id) == [stream.id] && stopped.first?.json["stream"] == "mic")
        #expect(!recorders.isRecording("logger"), "a stopping recorder still counts as recording")
        #expect(!news.finished.contains(stream.id), "the finish came before the archiver finished")
        #expect(pump { news.finished.contains(stream.id) }, "the stop never finished")
        #expect(recordingEvents("stopped").first?["reason"] == "stop")

        let listed = try archive.archiveList(app: "logger", since: nil)
        let segments = try #require(listed.first { $0.0 == "segments" }?.1.arrayValue)
        let path = try #require(segments.first?["path"]?.stringValue)
        #expect(segments.count == 1 && (segments.first?["frames"]?.intValue ?? 0) > 0)
        #expect(listed.first { $0.0 == "next" }?.1 == .null, "one page holds it all")
        let paged = try archive.archiveList(app: "logger", since: nil, offset: 1, limit: 1)
        #expect(paged.first { $0.0 == "segments" }?.1.arrayValue == [])
        #expect(throws: SessionError.self) { try archive.archiveList(app: nil, since: nil, limit: 1001) }
        #expect(ArchiveVerifier.verify(path: path).isOK, "the segment does not decode")
        #expect(throws: SessionError.self) { try recorders.stopRecording(app: "logger", stream: nil) }
    }

    @Test("verify runs on the worker for a file inside the archive; a path outside it is refused at once")
    func verifyOnTheWorker() throws {
        let stream = try record("logger", port: "mic")
        #expect(pump { stream.tap.framesCaptured > 48_000 / 4 })
        _ = try recorders.stopRecording(app: "logger", stream: nil)
        #expect(pump { news.finished.contains(stream.id) })
        let reply = Shared<Result<[(String, JSONValue)], SessionError>?>(nil)
        try archive.verify(
            path: nil, uid: 0, groups: [0], administrator: true, for: ClientID(rawValue: 7), progress: nil
        ) { result in
            reply.update { $0 = result }
        }
        #expect(pump { reply.get != nil })
        let fields = try #require(reply.get).get()
        #expect(fields.first { $0.0 == "allOK" }?.1 == true)
        #expect(fields.first { $0.0 == "results" }?.1.arrayValue?.count == 1)
        let refused = #expect(throws: SessionError.self) {
            try self.archive.verify(
                path: "/etc/passwd", uid: 0, groups: [0], administrator: true, for: ClientID(rawValue: 7), progress: nil
            ) { _ in }
        }
        #expect(refused?.code == .badParam)
    }

    @Test("an interruption suspends an app's recorders; their specs come back once, to start again")
    func suspendAndResume() throws {
        let stream = try record("logger", port: "mic")
        recorders.suspendAll(of: "logger", by: "voice")
        #expect(!recorders.isRecording("logger") && recorders.recovery.hasSuspended("logger"))
        #expect(pump { news.finished.contains(stream.id) })
        #expect(recordingEvents("stopped").first?["reason"] == "interruption")
        #expect(recorders.recovery.waitingInfos.map(\.by) == ["voice"], "status says who interrupted")
        #expect(
            recorders.recovery.takeSuspended(of: "logger") == [RecorderSpec(app: "logger", stream: "mic", port: "mic")])
        #expect(recorders.recovery.takeSuspended(of: "logger").isEmpty && !recorders.recovery.hasSuspended("logger"))
    }

    @Test("silencing zeroes an app's taps from the next period; revoked permission zeroes and stops them")
    func silenceAndRevoke() throws {
        let stream = try record("logger", port: "mic")
        let other = try record("other", port: "line")
        recorders.setSilenced(of: "logger", true)
        #expect(stream.tap.isZeroed && !other.tap.isZeroed)
        recorders.setSilenced(of: "logger", false)
        #expect(!stream.tap.isZeroed)
        recorders.permissionRevoked(of: "logger")
        #expect(stream.tap.isZeroed && !recorders.isRecording("logger") && recorders.isRecording("other"))
        #expect(pump { news.finished.contains(stream.id) })
        #expect(recordingEvents("stopped").first?["reason"] == "permissionRevoked")
    }

    @Test("a route change stops the input recorders whose port is gone (asked of the engine), not the others")
    func stopsUnavailable() throws {
        let line = try record("desk", port: "line", type: .lineIn)
        let mic = try record("desk", port: "mic")
        device.unplug()
        #expect(waitForAvailability(engine, port: "line", false))
        recorders.stopUnavailable(of: "desk")
        #expect(recorders.of("desk").map(\.spec.port) == ["mic"])
        #expect(pump { news.finished.contains(line.id) })
        #expect(recordingEvents("stopped").first?["reason"] == "routeChange")
        #expect(!news.finished.contains(mic.id))
    }

    @Test(
        "a recorder that follows the route goes on from a new input: the segment ends with routeChange, the next starts at its end, no stopped event"
    )
    func goesOnFromANewInput() throws {
        let mic = try recorders.startInput(
            RecorderSpec(app: "desk", stream: "mic", port: "mic", followsRoute: true), channels: 2, type: .builtInMic,
            bandwidth: .full, context: Self.context)
        #expect(pump { mic.tap.framesCaptured > 48_000 / 2 && !recordingEvents("segment").isEmpty })
        let line = try recorders.startInput(
            RecorderSpec(app: "desk", stream: "mic", port: "line", followsRoute: true), channels: 2, type: .lineIn,
            bandwidth: .full, context: Self.context, replacing: mic)
        #expect(recorders.of("desk").map(\.spec.port) == ["line"] && line.spec.stream == "mic")
        #expect(!mic.tap.isAttached && line.tap.isAttached)
        let switched = try #require(recordingEvents("switched").first)
        #expect(switched["port"] == "line" && switched["previousPort"] == "mic" && switched["stream"] == "mic")
        #expect(pump { news.finished.contains(mic.id) && line.tap.framesCaptured > 48_000 / 2 })
        #expect(recordingEvents("stopped").isEmpty, "the stream did not stop")
        #expect(line.segments == 1, "the stream's count includes the segment from the mic")
        // Adjacent periods: the new tap's first frame follows the old tap's last (by JACK's
        // frame clock on jackd; PipeWire restarts its frame clock when a new link changes the
        // graph's driver, so there only the counted start below can show it).
        let first = try #require(mic.tap.firstFrameTime)
        let next = try #require(line.tap.firstFrameTime)
        if !TestServer.isPipeWire { #expect(Int(next &- first) == mic.tap.framesCaptured) }

        _ = try recorders.stopRecording(app: "desk", stream: nil)
        #expect(pump { news.finished.contains(line.id) })
        #expect(recordingEvents("stopped").count == 1)
        let finished = recordingEvents("finished").compactMap { $0["file"]?.stringValue }
        try #require(finished.count == 2)
        let old = try SegmentRecord.read(path: finished[0])
        let new = try SegmentRecord.read(path: finished[1])
        #expect(old.endReason == .routeChange && old.frames == mic.tap.framesCaptured)
        #expect(new.segment == old.segment + 1)
        let oldEnd = old.startTime.advanced(byFrames: old.frames, sampleRate: old.sampleRate)
        let drift = abs(new.startTime.nanosecondsSinceEpoch - oldEnd.nanosecondsSinceEpoch)
        #expect(drift <= 1_000, "the new segment starts \(drift) ns away from the old one's end")
    }

    @Test("declared recorders start only while nothing of their app records or waits to resume")
    func declared() throws {
        #expect(declaredToStart().map(\.app) == ["logger", "desk"])
        #expect(declaredToStart().last?.port == "line" && declaredToStart().first?.port == nil)
        _ = try record("logger", port: "mic")
        #expect(declaredToStart().map(\.app) == ["desk"])
        recorders.suspendAll(of: "logger", by: "voice")
        #expect(declaredToStart().map(\.app) == ["desk"], "a suspended recorder is started again, not twice")
    }

    @Test("archive list refuses a --since that is not a time, with badParam saying the form")
    func listSince() throws {
        let refused = #expect(throws: SessionError.self) {
            try self.archive.archiveList(app: nil, since: "yesterday")
        }
        #expect(refused?.code == .badParam && refused?.message.contains("ISO 8601") == true)
        #expect(try archive.archiveList(app: nil, since: "2026-01-01").first?.1.arrayValue == [])
    }
}

/// A feature that notes what it hears, and whether the index (the feature before it) has the
/// segment by then.
private final class HeardFacts: SegmentFeature {
    var facts: [String] = []
    weak var archive: ArchiveService?

    func configure(
        _ configuration: inout RecorderConfiguration, inputs: inout SegmentInputs, for spec: RecorderSpec
    ) {
        facts.append("configure \(spec.app)/\(spec.stream)")
    }
    func segmentOpened(_ segment: OpenedSegment) { facts.append("opened \(segment.path)") }
    func segmentFinished(_ record: SegmentRecord) {
        let indexed = (try? archive?.index?.record(path: record.path)) != nil
        facts.append("finished \(record.path)" + (indexed ? " indexed" : ""))
    }
    func streamChanged(_ change: StreamChange, app: String, stream: String) {
        if change == .ended { facts.append("ended \(app)/\(stream)") }
    }
}

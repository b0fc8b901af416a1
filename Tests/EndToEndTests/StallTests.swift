// A feed that delivers nothing is an alarm, and the time truth: the server's cycles are
// stopped (SIGSTOP of a private jackd, or of the test's PipeWire) in the middle of a recording
// of recd-signal's counter, and a jackd whose clock runs 1 % slow is recorded whole. The real
// recd and recctl, the hook, /metrics, and the archive's FLAC read back with the reference tools.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("stalled feeds and the time truth end to end", .serialized)
struct StallEndToEndTests {
    static let rate = 48_000
    static let stallSeconds = 1.5
    static let stoppedSeconds = 4.0

    /// The process whose cycles the test stops on the PipeWire pass: the test's PipeWire
    /// (scripts/lib.sh start_pipewire writes its pid beside PIPEWIRE_RUNTIME_DIR).
    static func pipewirePid() throws -> Int32 {
        let run = try #require(
            ProcessInfo.processInfo.environment["PIPEWIRE_RUNTIME_DIR"], "PIPEWIRE_RUNTIME_DIR (start_pipewire)")
        let file = (run as NSString).deletingLastPathComponent + "/pw.pid"
        let text = try String(contentsOfFile: file, encoding: .utf8)
        return try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), "the pid in \(file)")
    }

    /// `recd_recorder_stalled`'s value for app `logger` in a /metrics text.
    static func stalledMetric(_ port: UInt16) throws -> Double? {
        let text = try HTTPTestClient.get(port: port, path: "/metrics").text
        return text.split(separator: "\n").first { $0.hasPrefix("recd_recorder_stalled{app=\"logger\"") }
            .flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test(
        "the server's cycles stopped for 4 s mid-recording: `stalled` within stall_seconds + 1 s (status STALLED since, metric 1, hook RECD_STATE=stalled, a log line), then `resumed` (metric 0, hook resumed); the finished segment passes flac -t, on jackd has one gap of about 4 s, and on both START + frames + gaps is the stop's time"
    )
    func stalledServer() throws {
        let jack = TestServer.isPipeWire ? nil : try PrivateJack(period: 1024, name: "recd-test-stall")
        defer { jack?.stop() }
        let server = try jack.map { try #require($0.process?.processIdentifier) } ?? Self.pipewirePid()
        let hookDirectory = try makeTemporaryDirectory("recd-stall-hook")
        defer { try? FileManager.default.removeItem(atPath: hookDirectory) }
        let hook = hookDirectory + "/on-silence"
        try """
        #!/bin/sh
        env | grep -E '^RECD_' | sort > "\(hookDirectory)/run-$RECD_STATE-$$.env"
        """.write(toFile: hook, atomically: true, encoding: .utf8)
        chmod(hook, 0o755)
        let (daemon, source, xrunsBefore) = try ReliabilityTests.counterLogger(
            on: jack, extraSession: "stall_seconds = \(Self.stallSeconds)\non_silence = \(hook)\n",
            extraConfig: "[http]\nlisten = 127.0.0.1:0\n")
        defer { source.stop() }
        let port = try HTTPEndToEndTests.httpPort(daemon)
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        let watcher = try daemon.watch("logger")
        usleep(2_000_000)
        #expect(try Self.stalledMetric(port) == 0, "recd_recorder_stalled is in every scrape, 0 while frames flow")

        kill(server, SIGSTOP)
        let stopped = Date()
        let stalledEvents = watcher.waitFor(timeout: Self.stallSeconds + 3) {
            $0["event"] == "recording" && $0["state"] == "stalled"
        }
        let latency = Date().timeIntervalSince(stopped)
        let stalledEvent = stalledEvents.first { $0["state"] == "stalled" }
        let status = try daemon.recctl("--json", "status").json
        let human = try daemon.recctl("status").stdout
        let metricWhileStalled = try Self.stalledMetric(port)
        usleep(UInt32(max(0, Self.stoppedSeconds - Date().timeIntervalSince(stopped)) * 1e6))
        kill(server, SIGCONT)
        let resumed = watcher.waitFor(timeout: 5) {
            $0["event"] == "recording" && $0["state"] == "resumed" && $0["reason"] == "stalled"
        }.first { $0["state"] == "resumed" }
        print("stall: the stalled event came \(latency) s after SIGSTOP (stall_seconds \(Self.stallSeconds))")

        let event = try #require(stalledEvent, "no stalled event: \(watcher.events.map(\.jsonText))")
        #expect(latency <= Self.stallSeconds + 1, "stalled \(latency) s after the server stopped")
        #expect(latency >= Self.stallSeconds - 0.1, "stalled \(latency) s after the server stopped: too soon")
        #expect(event["reason"] == "noFrames", "\(event.jsonText)")
        let since = try #require(event["since"]?.stringValue)
        let recorder = status?["recorders"]?.arrayValue?.first
        #expect(recorder?["stalledSince"]?.stringValue == since, "\(status?.jsonText ?? "")")
        #expect(human.contains("STALLED since"), "\(human)")
        #expect(metricWhileStalled == 1)
        let back = try #require(resumed, "no resumed event: \(watcher.events.map(\.jsonText))")
        #expect(back["since"]?.stringValue == since, "\(back.jsonText)")
        #expect(try eventually { try Self.stalledMetric(port) == 0 })
        #expect(
            try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue?.first?["stalledSince"]
                == JSONValue.null)
        #expect(daemon.log.contains("STALLED: no audio"), "\(daemon.log)")

        usleep(1_500_000)
        let stopAsked = Date()
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        #expect(try eventually { archiveFiles(daemon.directory + "/archive").contains { $0.hasSuffix(".flac") } })
        let file = try #require(archiveFiles(daemon.directory + "/archive").first { $0.hasSuffix(".flac") })
        #expect(try flacTest(file))
        let gaps = try #require(
            try metaflacTag(file, "GAPS").flatMap { TrueTimeEndToEndTests.parseGaps($0) }, "GAPS of \(file)")
        let gap = try #require(gaps.max { $0.length < $1.length })
        let missing = Double(gap.length) / Double(Self.rate)
        print("stall: gaps \(gaps), the long one \(missing) s for \(Self.stoppedSeconds) s stopped")
        if jack != nil {
            // jackd runs no cycle while stopped: the stop is the gap, within a period and the
            // test's own timing.
            #expect(abs(missing - Self.stoppedSeconds) < 0.25, "the gap stands for \(missing) s")
            let xruns = try daemon.xruns() - xrunsBefore
            #expect(gaps.count <= 1 + xruns, "one gap for the stop and one per xrun (\(xruns)): \(gaps)")
        }
        // On both servers the time stays true: START plus the frames and the gaps is when the
        // recording stopped. (PipeWire runs the cycles it missed back to back when it resumes:
        // their frames are there, and a gap for the whole stop would put everything after it
        // seconds late.)
        let start = try #require(try PreRollEndToEndTests.startTime(file))
        let shown = try runTool("metaflac", ["--show-total-samples", file]).stdout
        let frames = try #require(Int(shown.trimmingCharacters(in: .whitespacesAndNewlines)))
        let end = start.addingTimeInterval(Double(frames + gaps.map(\.length).reduce(0, +)) / Double(Self.rate))
        let off = end.timeIntervalSince(stopAsked)
        print("stall: START + frames + gaps ends \(off) s from the stop request")
        #expect(abs(off) < 0.3, "the recording ends \(off) s off")

        #expect(
            try eventually {
                (try? FileManager.default.contentsOfDirectory(atPath: hookDirectory).filter { $0.hasSuffix(".env") }
                    .count) == 2
            })
        let runs = try FileManager.default.contentsOfDirectory(atPath: hookDirectory).filter { $0.hasSuffix(".env") }
        let stalledRun = try #require(runs.first { $0.hasPrefix("run-stalled-") }, "\(runs)")
        #expect(runs.contains { $0.hasPrefix("run-resumed-") }, "\(runs)")
        let environment = try String(contentsOfFile: hookDirectory + "/" + stalledRun, encoding: .utf8)
        #expect(environment.contains("RECD_STATE=stalled\n") && environment.contains("RECD_APP=logger\n"))
        #expect(environment.contains("RECD_SINCE=\(since)\n"), "\(environment)")
    }

    /// 1 % as the issue asks; 3 % because the rule before this one cut that into gaps already at
    /// a 1024-frame period (its baseline lagged 64 periods of lateness behind, above a period).
    @Test(
        "a jackd whose clock runs 1 % (and 3 %) slow, recorded for 10 s: no gap (but for xruns), CLOCK_DRIFT_PPM about -10000 (-30000); the stall test above still gets its gap",
        .enabled(if: !TestServer.isPipeWire, Comment(rawValue: TestServer.startsItsOwnJackd)),
        arguments: [0.99, 0.97])
    func slowServer(speed: Double) throws {
        let jack = try PrivateJack(
            period: 1024, name: "recd-test-slow", environment: try PrivateJack.slowClock(speed: speed))
        defer { jack.stop() }
        let (daemon, source, xrunsBefore) = try ReliabilityTests.counterLogger(on: jack)
        defer { source.stop() }
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        let watcher = try daemon.watch("logger")
        usleep(10_500_000)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        #expect(try eventually { archiveFiles(daemon.directory + "/archive").contains { $0.hasSuffix(".flac") } })
        let file = try #require(archiveFiles(daemon.directory + "/archive").first { $0.hasSuffix(".flac") })
        #expect(try flacTest(file))
        let xruns = try daemon.xruns() - xrunsBefore
        let gaps = try metaflacTag(file, "GAPS").flatMap { TrueTimeEndToEndTests.parseGaps($0) } ?? []
        let drift = try #require(try metaflacTag(file, "CLOCK_DRIFT_PPM").flatMap(Double.init), "CLOCK_DRIFT_PPM")
        print("slow server at \(speed): drift \(drift) ppm, gaps \(gaps), xruns \(xruns)")
        // A steadily slow graph is not cut: a gap only where the loaded dummy server really
        // skipped time (an xrun re-anchors its clock).
        #expect(gaps.count <= xruns, "gaps \(gaps) with \(xruns) xruns")
        #expect(!watcher.events.contains { $0["state"] == "stalled" }, "a slow feed is not a stalled one")
        let expected = (speed - 1) * 1e6
        #expect(abs(drift - expected) <= 2_000 + abs(expected) / 20, "CLOCK_DRIFT_PPM \(drift), want \(expected)")
    }
}

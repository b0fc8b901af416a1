// A feed that delivers nothing is an alarm, and the time truth: the source's cycles are
// stopped (SIGSTOP of a private jackd; on PipeWire the deck's node paused) in the middle of a
// recording of recd-signal's counter, twice, the second time until the recording is stopped;
// PipeWire's catch-up after a stop; and a jackd whose clock runs 1 % slow is recorded whole. The real
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
    /// recd's default `stall_seconds` (the config leaves it out): the latency reported is the default's.
    static let stallSeconds = 2.0
    static let stoppedSeconds = 4.0

    /// Stops and restarts the recorded source's cycles. On jackd the private server itself
    /// (SIGSTOP, SIGCONT). On PipeWire the deck's node (`pw-cli send-command ID Pause`, then
    /// `Start`): the graph's driver runs on, but recd's node, which the deck feeds, is not
    /// scheduled until the deck's node runs again — a suspended source node. (Measured on
    /// PipeWire 0.3.65: the node command `Suspend` leaves a running JACK client's node
    /// running, and a capture behind it went on at 48000 frames/s; `Pause` stops it, and
    /// `Start` resumes it at its pace, without running the missed cycles.)
    struct FeedStopper {
        let server: Int32?
        let node: String?

        init(jack: PrivateJack?, deck: SignalClient) throws {
            if let jack {
                server = try #require(jack.process?.processIdentifier)
                node = nil
            } else {
                server = nil
                node = try Self.pipewireNode(of: deck)
            }
        }

        /// The PipeWire node id of the deck's JACK client (its `ready NAME:out_1,...` line
        /// names it), from `pw-cli ls Node`.
        static func pipewireNode(of deck: SignalClient) throws -> String {
            let ready = try #require(deck.lines.first { $0.hasPrefix("ready ") }, "\(deck.output)")
            let client = String(ready.dropFirst(6).prefix { $0 != ":" })
            let listing = try runTool("pw-cli", ["ls", "Node"]).stdout
            var id: String?
            for line in listing.split(separator: "\n") {
                let text = line.trimmingCharacters(in: .whitespaces)
                if text.hasPrefix("id ") {
                    id = text.dropFirst(3).split(separator: ",").first.map(String.init)
                } else if text == "node.name = \"\(client)\"", let id {
                    return id
                }
            }
            throw DaemonFailure(message: "no PipeWire node for JACK client \(client) in:\n\(listing)")
        }

        func stop() throws {
            if let server { kill(server, SIGSTOP) }
            if let node { try #require(try runTool("pw-cli", ["send-command", node, "Pause", "{}"]).status == 0) }
        }

        func go() {
            if let server { kill(server, SIGCONT) }
            if let node { _ = try? runTool("pw-cli", ["send-command", node, "Start", "{}"]) }
        }
    }

    /// `recd_recorder_stalled`'s value for app `logger` in a /metrics text.
    static func stalledMetric(_ port: UInt16) throws -> Double? {
        let text = try HTTPTestClient.get(port: port, path: "/metrics").text
        return text.split(separator: "\n").first { $0.hasPrefix("recd_recorder_stalled{app=\"logger\"") }
            .flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test(
        "the source's cycles stopped for 4 s mid-recording (jackd SIGSTOPped; on PipeWire the deck's node paused): `stalled` within stall_seconds + 1 s (status STALLED since, metric 1, hook RECD_STATE=stalled, a log line), then `resumed` (metric 0, hook resumed) and a gap of about 4 s; stopped again and `record stop` while stalled: `stopped`, no `resumed`, the segment passes flac -t and ends with a gap up to the stop, and START + frames + gaps is the stop's time"
    )
    func stalledServer() throws {
        let jack = TestServer.isPipeWire ? nil : try PrivateJack(period: 1024, name: "recd-test-stall")
        defer { jack?.stop() }
        let hookDirectory = try makeTemporaryDirectory("recd-stall-hook")
        defer { try? FileManager.default.removeItem(atPath: hookDirectory) }
        let hook = hookDirectory + "/on-silence"
        try """
        #!/bin/sh
        env | grep -E '^RECD_' | sort > "\(hookDirectory)/run-$RECD_STATE-$$.env"
        """.write(toFile: hook, atomically: true, encoding: .utf8)
        chmod(hook, 0o755)
        let (daemon, source, xrunsBefore) = try ReliabilityTests.counterLogger(
            on: jack, extraSession: "on_silence = \(hook)\n",
            extraConfig: "[http]\nlisten = 127.0.0.1:0\n")
        defer { source.stop() }
        let feed = try FeedStopper(jack: jack, deck: source)
        defer { feed.go() }  // before the server is stopped (defers run last first)
        let port = try HTTPEndToEndTests.httpPort(daemon)
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        let watcher = try daemon.watch("logger")
        let words = try daemon.watchInWords("logger")
        usleep(2_000_000)
        #expect(try Self.stalledMetric(port) == 0, "recd_recorder_stalled is in every scrape, 0 while frames flow")

        // From before the stop: on PipeWire it includes pw-cli's own start-up.
        let stopped = Date()
        try feed.stop()
        let stalledEvents = watcher.waitFor(timeout: Self.stallSeconds + 3) {
            $0["event"] == "recording" && $0["state"] == "stalled"
        }
        let latency = Date().timeIntervalSince(stopped)
        let stalledEvent = stalledEvents.first { $0["state"] == "stalled" }
        let status = try daemon.recctl("--json", "status").json
        let human = try daemon.recctl("status").stdout
        let metricWhileStalled = try Self.stalledMetric(port)
        usleep(UInt32(max(0, Self.stoppedSeconds - Date().timeIntervalSince(stopped)) * 1e6))
        feed.go()
        let resumed = watcher.waitFor(timeout: 5) {
            $0["event"] == "recording" && $0["state"] == "resumed" && $0["reason"] == "stalled"
        }.first { $0["state"] == "resumed" }
        print(
            "stall: the stalled event came \(latency) s after the source's cycles stopped "
                + "(stall_seconds \(Self.stallSeconds))")

        let event = try #require(stalledEvent, "no stalled event: \(watcher.events.map(\.jsonText))")
        #expect(latency <= Self.stallSeconds + 1, "stalled \(latency) s after the cycles stopped")
        #expect(latency >= Self.stallSeconds - 0.1, "stalled \(latency) s after the cycles stopped: too soon")
        #expect(event["reason"] == "noFrames", "\(event.jsonText)")
        let since = try #require(event["since"]?.stringValue)
        let recorder = status?["recorders"]?.arrayValue?.first
        #expect(recorder?["stalledSince"]?.stringValue == since, "\(status?.jsonText ?? "")")
        #expect(human.contains("STALLED since"), "\(human)")
        #expect(metricWhileStalled == 1)
        let back = try #require(resumed, "no resumed event: \(watcher.events.map(\.jsonText))")
        #expect(back["since"]?.stringValue == since, "\(back.jsonText)")
        // The gap: the segment that holds it and the rate its frames are at, and in words its
        // length and place as times with the frames in brackets; the resumption in words
        // without the stall's "no frames since".
        let gap = try #require(
            watcher.waitFor(timeout: 5) { $0["event"] == "recording" && $0["state"] == "gap" }.first {
                $0["state"] == "gap"
            }, "\(watcher.events.map(\.jsonText))")
        #expect(gap["file"]?.stringValue?.hasSuffix(".flac") == true, "\(gap.jsonText)")
        #expect(gap["sampleRate"]?.intValue == Self.rate, "\(gap.jsonText)")
        #expect(
            try eventually(timeout: 5) { words.texts.contains { $0.contains(" gap (clockStall) of ") } }, "\(words.texts)")
        let gapLine = words.texts.first { $0.contains(" gap (clockStall) of ") } ?? ""
        #expect(
            gapLine.range(
                of: #" gap \(clockStall\) of \d+(\.\d+)? (ms|s) \[\d+\] at [0-9:.]+( s)? \[\d+\] of the recording, in /"#,
                options: .regularExpression) != nil, "\(gapLine)")
        let resumedLine = words.texts.first { $0.contains(" resumed ") } ?? ""
        print("stall: in words: \(gapLine) / \(resumedLine)")
        #expect(
            resumedLine.contains("frames come again after a stall from") && !resumedLine.contains("no frames since"),
            "\(resumedLine)")
        #expect(try eventually { try Self.stalledMetric(port) == 0 })
        #expect(
            try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue?.first?["stalledSince"]
                == JSONValue.null)
        #expect(daemon.log.contains("STALLED: no audio"), "\(daemon.log)")

        // Stopped while stalled: the recorder stops as asked, nothing says it resumed, and the
        // time from its last frame to the stop is a gap at the end of the segment.
        usleep(1_500_000)
        let stoppedAgain = Date()
        try feed.stop()
        let again = watcher.waitFor(count: 2, timeout: Self.stallSeconds + 3) {
            $0["event"] == "recording" && $0["state"] == "stalled"
        }
        #expect(again.filter { $0["state"] == "stalled" }.count == 2, "\(again.map(\.jsonText))")
        // recd stopped it between recctl's start and its answer (starting recctl takes a few
        // hundred ms on a loaded machine): times are checked against that window.
        let stopAsked = Date()
        let stop = try daemon.recctl("record", "stop", "logger")
        let stopAnswered = Date()
        try #require(stop.status == 0, "\(stop.stderr)")
        let ended = watcher.waitFor(timeout: 5) { $0["event"] == "recording" && $0["state"] == "stopped" }
        #expect(ended.contains { $0["state"] == "stopped" && $0["reason"] == "stop" }, "\(ended.map(\.jsonText))")
        feed.go()
        usleep(1_000_000)
        let resumedEvents = watcher.events.filter { $0["event"] == "recording" && $0["state"] == "resumed" }
        #expect(resumedEvents.count == 1, "no resumed after a stop while stalled: \(resumedEvents.map(\.jsonText))")

        #expect(try eventually { archiveFiles(daemon.directory + "/archive").contains { $0.hasSuffix(".flac") } })
        let file = try #require(archiveFiles(daemon.directory + "/archive").first { $0.hasSuffix(".flac") })
        #expect(try flacTest(file))
        #expect(try metaflacTag(file, "END_REASON") == "stop")
        let gaps = try #require(
            try metaflacTag(file, "GAPS").flatMap { TrueTimeEndToEndTests.parseGaps($0) }, "GAPS of \(file)")
        let shown = try runTool("metaflac", ["--show-total-samples", file]).stdout
        let frames = try #require(Int(shown.trimmingCharacters(in: .whitespacesAndNewlines)))
        let trailing = try #require(gaps.last, "no gaps: the stop while stalled left none")
        let stalledBeforeStop = stopAsked.timeIntervalSince(stoppedAgain)...stopAnswered.timeIntervalSince(stoppedAgain)
        let trailingSeconds = Double(trailing.length) / Double(Self.rate)
        print(
            "stall: gaps \(gaps); stopped while stalled \(stalledBeforeStop) s after the cycles stopped, "
                + "trailing gap \(trailingSeconds) s")
        #expect(trailing.position == frames, "the last gap is at the end: \(gaps), \(frames) frames")
        // (0.3 s of room above: on a loaded machine jackd's dummy server delivers the periods
        // after a stop faster than real time for a while, 0.2-0.3 s at load 12 here, and the
        // last period before the second stop came that much before it.)
        #expect(
            trailingSeconds > stalledBeforeStop.lowerBound - 0.25
                && trailingSeconds < stalledBeforeStop.upperBound + 0.3,
            "a trailing gap of \(trailingSeconds) s")
        // The first stop is the long gap before it (and on jackd one more per xrun).
        let middle = try #require(gaps.dropLast().max { $0.length < $1.length }, "\(gaps)")
        let missing = Double(middle.length) / Double(Self.rate)
        #expect(abs(missing - Self.stoppedSeconds) < 0.25, "the first stop's gap stands for \(missing) s")
        let xruns = try daemon.xruns() - xrunsBefore
        #expect(gaps.count <= 2 + xruns, "a gap for each stop and one per xrun (\(xruns)): \(gaps)")
        // START plus the frames and the gaps is when the recording stopped.
        let start = try #require(try PreRollEndToEndTests.startTime(file))
        let end = start.addingTimeInterval(Double(frames + gaps.map(\.length).reduce(0, +)) / Double(Self.rate))
        let off = end.timeIntervalSince(stopAsked)
        let window = stopAnswered.timeIntervalSince(stopAsked)
        print("stall: START + frames + gaps ends \(off) s after recctl record stop began (answered after \(window) s)")
        let timeLines = daemon.log.split(separator: "\n").filter {
            $0.contains("wall-clock") || $0.contains("STALLED") || $0.contains("audio again")
        }
        print("stall: recd's log of the time: \(timeLines)")
        #expect(off > -0.1 && off < window + 0.3, "the recording ends \(off) s from the stop request")

        #expect(
            try eventually {
                (try? FileManager.default.contentsOfDirectory(atPath: hookDirectory).filter { $0.hasSuffix(".env") }
                    .count) == 3
            })
        let runs = try FileManager.default.contentsOfDirectory(atPath: hookDirectory).filter { $0.hasSuffix(".env") }
        #expect(runs.filter { $0.hasPrefix("run-stalled-") }.count == 2, "\(runs)")
        #expect(runs.filter { $0.hasPrefix("run-resumed-") }.count == 1, "\(runs)")
        let environments = try runs.filter { $0.hasPrefix("run-stalled-") }.map {
            try String(contentsOfFile: hookDirectory + "/" + $0, encoding: .utf8)
        }
        let environment = try #require(environments.first { $0.contains("RECD_SINCE=\(since)\n") }, "\(environments)")
        #expect(environment.contains("RECD_STATE=stalled\n") && environment.contains("RECD_APP=logger\n"))
    }

    /// The test's PipeWire (scripts/lib.sh start_pipewire writes its pid beside
    /// PIPEWIRE_RUNTIME_DIR).
    static func pipewirePid() throws -> Int32 {
        let run = try #require(
            ProcessInfo.processInfo.environment["PIPEWIRE_RUNTIME_DIR"], "PIPEWIRE_RUNTIME_DIR (start_pipewire)")
        let file = (run as NSString).deletingLastPathComponent + "/pw.pid"
        let text = try String(contentsOfFile: file, encoding: .utf8)
        return try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), "the pid in \(file)")
    }

    @Test(
        "PipeWire stopped for 2.5 s under a lone recorder of its null sink runs the cycles it missed back to back when it goes on: they are not a gap on top of the stop — START + frames + gaps is the stop's time, and the gaps are what the catch-up did not make up",
        .enabled(
            if: TestServer.isPipeWire,
            Comment(
                rawValue: "jackd runs no cycle it missed (its stop is one gap: stalledServer, TrueTimeEndToEndTests); "
                    + "the catch-up is PipeWire's timer-driven null sink's")
        ))
    func pipewireCatchUp() throws {
        let daemon = try Daemon(
            extraConfig: """

                [session logger]
                category = record
                mic_usage = archive
                permission = granted
                """,
            ports: """
                [port mic]
                type = lineIn
                direction = input
                jack = system:capture_1, system:capture_2

                """)
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        let watcher = try daemon.watch("logger")
        usleep(1_500_000)
        let server = try Self.pipewirePid()
        kill(server, SIGSTOP)
        usleep(2_500_000)
        kill(server, SIGCONT)
        usleep(1_500_000)
        let stopAsked = Date()
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        #expect(try eventually { archiveFiles(daemon.directory + "/archive").contains { $0.hasSuffix(".flac") } })
        let file = try #require(archiveFiles(daemon.directory + "/archive").first { $0.hasSuffix(".flac") })
        #expect(try flacTest(file))
        let gaps = try metaflacTag(file, "GAPS").flatMap { TrueTimeEndToEndTests.parseGaps($0) } ?? []
        let shown = try runTool("metaflac", ["--show-total-samples", file]).stdout
        let frames = try #require(Int(shown.trimmingCharacters(in: .whitespacesAndNewlines)))
        let start = try #require(try PreRollEndToEndTests.startTime(file))
        let missing = gaps.map(\.length).reduce(0, +)
        let end = start.addingTimeInterval(Double(frames + missing) / Double(Self.rate))
        let off = end.timeIntervalSince(stopAsked)
        let gapEvents = watcher.events.filter { $0["state"] == "gap" }.map(\.jsonText)
        print("catch-up: gaps \(gaps) (\(Double(missing) / Double(Self.rate)) s), START + frames + gaps ends \(off) s from the stop request; gap events \(gapEvents)")
        #expect(abs(off) < 0.3, "the recording ends \(off) s off: the catch-up's frames and a gap for the whole stop")
        #expect(watcher.events.contains { $0["state"] == "stalled" }, "2.5 s without a frame is still a stall")
    }

    /// Why the slow-server test has no PipeWire run (measured, docs/protocol.md "Time stays true").
    static let noSlowPipeWire =
        "a PipeWire cannot be slowed the way jackd is: with libfaketime (libfaketime.so.1 or libfaketimeMT.so.1) preloaded into pipewire 0.3.65, its null sink drives no JACK cycle at all, even with FAKETIME=+0 (a recorder behind it got 0 frames/s, 48000 without the preload); the rule is the same code on both servers (TapClockTests drives it with a graph 10 % slow)"

    /// 1 % as the issue asks; 3 % because the rule before this one cut that into gaps already at
    /// a 1024-frame period (its baseline lagged 64 periods of lateness behind, above a period).
    @Test(
        "a jackd whose clock runs 1 % (and 3 %) slow, recorded for 10 s: no gap (but for xruns), CLOCK_DRIFT_PPM about -10000 (-30000); the stall test above still gets its gap",
        .enabled(if: !TestServer.isPipeWire, Comment(rawValue: Self.noSlowPipeWire)),
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

// Graph changes end to end: other clients change the JACK graph under a running recd. One
// changes the server's buffer size (jack_bufsize, or PipeWire's forced quantum) while recd
// records and plays; one removes recd's connections (jack_disconnect); the server comes back
// at another sample rate. Real jackd, real recd and recctl, recd-signal as the devices.
import ControlProtocol
import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Changes the default JACK server's period the way an operator would: `jack_bufsize N` on
/// jackd2; on PipeWire's JACK (RECD_TEST_SERVER=pipewire), where jack_set_buffer_size is a
/// silent no-op while the quantum is forced, `pw-metadata -n settings 0 clock.force-quantum N`.
func changeServerBufferSize(_ frames: Int) throws {
    let result =
        TestServer.isPipeWire
        ? try runTool("pw-metadata", ["-n", "settings", "0", "clock.force-quantum", "\(frames)"])
        : try runTool("jack_bufsize", ["\(frames)"])
    guard result.status == 0 else {
        throw DaemonFailure(message: "could not set the period to \(frames): \(result.stdout)\(result.stderr)")
    }
}

/// The default JACK server's period now (jack_bufsize without an argument prints it).
func serverBufferSize() throws -> Int? {
    Int(try runTool("jack_bufsize", []).stdout.trimmingCharacters(in: .whitespacesAndNewlines))
}

@Suite("the JACK graph changed by others", .serialized)
struct GraphChangeTests {
    static func ports(deck: String, sink: String) -> String {
        """
        [port mic]
        type = lineIn
        direction = input
        jack = \(deck):out_1, \(deck):out_2

        [port out]
        type = lineOut
        direction = output
        jack = \(sink):in_1, \(sink):in_2

        """
    }

    static func session(_ daemon: Daemon, _ app: String) throws -> JSONValue? {
        try daemon.recctl("--json", "session", "show", app).json
    }

    @Test(
        "another client changes the period 1024→256→2048: status and actual follow, active sessions get routeConfigurationChange, a recorder and a player lose nothing"
    )
    func bufferSizeChangedByAnotherClient() throws {
        let original = try #require(try serverBufferSize())
        defer { try? changeServerBufferSize(original) }
        try changeServerBufferSize(1024)
        let deck = uniqueName("deck")
        let sink = uniqueName("sink")
        let daemon = try Daemon(ports: Self.ports(deck: deck, sink: sink))
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "counter"])
        defer { source.stop() }
        // The played file: 16-bit values that survive the float path exactly (testSample).
        let fileFrames = 48_000 * 6
        let wav = daemon.directory + "/counter.wav"
        try writeWAV(
            path: wav, sampleRate: 48_000, channels: 2,
            samples: (0..<fileFrames).flatMap { [testSample($0, 0), testSample($0, 1)] })
        let raw = daemon.directory + "/played.raw"
        let capture = try SignalClient([
            "--name", sink, "capture", "--ports", "in_1,in_2", "--out", raw, "--seconds", "5",
        ])
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.allSatisfy { $0["available"] == true }
                    == true
            })

        try #require(
            daemon.recctl("session", "set", "logger", "--category", "record", "--mic-usage", "archive").status == 0)
        try #require(daemon.recctl("permission", "grant", "logger").status == 0)
        try #require(
            daemon.recctl("session", "set", "music", "--category", "playback", "--options", "mixWithOthers").status == 0
        )
        try #require(
            daemon.recctl("session", "set", "idle", "--category", "playback", "--options", "mixWithOthers").status == 0)
        let watcher = try daemon.watch()
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        try #require(daemon.recctl("play", "music", wav).status == 0)
        let xrunsBefore = try daemon.xruns()
        usleep(700_000)

        var changes = 0
        for frames in [256, 2048] {
            try changeServerBufferSize(frames)
            changes += 1
            let seen = watcher.waitFor(count: 2 * changes) { $0["reason"] == "routeConfigurationChange" }
            let heard = seen.filter { $0["reason"] == "routeConfigurationChange" }
            #expect(heard.count == 2 * changes, "logger and music are active, idle is not: \(heard.map(\.jsonText))")
            #expect(!heard.contains { $0["app"] == "idle" })
            for event in heard {
                #expect(event["event"] == "routeChange" && event["reasonCode"]?.intValue == 8)
                #expect(event["route"] == event["previousRoute"], "the route itself did not change: \(event.jsonText)")
            }
            #expect(try daemon.recctl("--json", "status").json?["jack"]?["bufferSize"]?.intValue == frames)
            for app in ["logger", "music", "idle"] {
                let actual = try Self.session(daemon, app)?["actual"]
                #expect(
                    actual?["ioBufferDuration"]?.doubleValue == Double(frames) / 48_000,
                    "\(app): \(actual?.jsonText ?? "")")
            }
            usleep(1_000_000)
        }
        #expect(capture.waitForExit(timeout: 20))
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        let xruns = try daemon.xruns() - xrunsBefore
        #expect(daemon.process?.isRunning == true, "recd survived: \(daemon.log)")
        // Breaks allowed: two per xrun JACK reported. PipeWire reports none, and a forced
        // quantum change garbles or drops data of its clients around the change, unreported
        // (measured on Debian 12's 0.3.65: from one period of 256 frames to hundreds of breaks
        // in the player's output, in most runs on a fresh machine): what reaches the files
        // there is PipeWire's doing, so on PipeWire the breaks are printed, not judged — the
        // events, status, actual and survival are (docs/jack-servers.md).
        let allowedBreaks = TestServer.isPipeWire ? Int.max : 2 * xruns

        // The recording: the counter continues frame after frame across both changes; a
        // break is allowed only where JACK itself reported an xrun (a period it skipped).
        let files = archiveFiles(daemon.directory + "/archive")
        try #require(files.count == 1, "one segment: \(files)")
        #expect(try flacTest(files[0]))
        // Checked frame by frame (a period of 1), as the period changed while it was recorded.
        let recorded = CounterCheck(try decodeFLAC(files[0], bits: 24), channels: 2, period: 1)
        print(
            "bufsize change: recorded \(recorded.frames) frames, breaks at \(recorded.disturbedBlocks.prefix(8)), \(xruns) xruns"
        )
        #expect(recorded.frames > 48_000 * 2)
        // Counted as runs of consecutive broken frames (one garbled period is one break).
        let breakRuns = recorded.disturbedBlocks.enumerated().filter { index, frame in
            index == 0 || recorded.disturbedBlocks[index - 1] != frame - 1
        }.count
        #expect(
            breakRuns <= allowedBreaks,
            "the counter breaks \(breakRuns) times, at frames \(recorded.disturbedBlocks.prefix(8)), with \(xruns) xrun(s)")

        // The player: what reached the sink is the file, in order, sample-exact; it may only
        // skip where JACK reported an xrun.
        let played = deinterleave(try readRawFloats(path: raw), channels: 2)
        let first = try #require(played[0].firstIndex { $0 != 0 }, "nothing reached the sink")
        var expected = (0..<fileFrames).first { Float(testSample($0, 0)) / 32768 == played[0][first] } ?? 0
        var playedBreaks = 0
        let playedFrames = played.map(\.count).min() ?? 0
        for frame in first..<playedFrames where expected < fileFrames {
            let matches = (0..<2).allSatisfy { played[$0][frame] == Float(testSample(expected, $0)) / 32768 }
            if !matches {
                playedBreaks += 1
                expected = (0..<fileFrames).first { Float(testSample($0, 0)) / 32768 == played[0][frame] } ?? expected
            }
            expected += 1
        }
        print("bufsize change: played \(playedFrames - first) frames, \(playedBreaks) breaks")
        #expect(playedFrames - first > 48_000 * 3)
        #expect(playedBreaks <= allowedBreaks, "the played file breaks \(playedBreaks) times with \(xruns) xrun(s)")
    }

    @Test("a third party's jack_disconnect of recd's output or input is repaired and logged, once a second at most")
    func disconnectRepaired() throws {
        let daemon = try Daemon()
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.allSatisfy { $0["available"] == true }
                    == true
            })
        let routes = try #require(daemon.recctl("--json", "routes").json?["ports"]?.arrayValue)
        let out = try #require(routes.first { $0["name"] == "out" }?["recdPorts"]?.arrayValue?.first?.stringValue)
        let mic = try #require(routes.first { $0["name"] == "mic" }?["recdPorts"]?.arrayValue?.first?.stringValue)
        func connections(_ port: String) throws -> [String] {
            let listed = try runTool("jack_lsp", ["-c", port]).stdout.split(separator: "\n")
            return listed.dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
        }
        #expect(
            try eventually { try connections(out) == ["system:playback_1"] && connections(mic) == ["system:capture_1"] }
        )

        for (source, destination) in [(out, "system:playback_1"), ("system:capture_1", mic)] {
            let ours = source == out ? out : mic
            let other = source == out ? destination : source
            let removed = try runTool("jack_disconnect", [source, destination])
            try #require(removed.status == 0, "\(removed.stderr)")
            let clock = ContinuousClock()
            let began = clock.now
            var back: Duration?
            while clock.now - began < .seconds(2) {
                if try connections(ours) == [other] {
                    back = clock.now - began
                    break
                }
            }
            // jack_lsp takes about 100 ms of its own to open a client and read the graph, so
            // this bounds the reaction only loosely; ConnectionRepairTests times the engine's.
            let seconds = back.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
            print(
                "jack_disconnect \(source) \(destination): jack_lsp sees it again after \(seconds.map { String(format: "%.1f ms", $0 * 1000) } ?? "never")"
            )
            #expect((seconds ?? .infinity) < 0.5, "\(source) → \(destination) came back after \(seconds ?? -1) s")
            let notice = "JACK connection \(source) → \(destination) was removed by another client"
            #expect(try eventually(timeout: 2) { daemon.log.contains(notice) }, "\(daemon.log)")
        }

        // Removed again, twice within a second (a careful operator, not a fight: recd's third
        // change to the connection within a second at most, docs/jack.md): repaired every time,
        // one notice a second at most. (Five removals in about a second, as this test once did,
        // is a fight by the reconciler's rule: `churn` below.)
        usleep(1_100_000)  // the repairs above are out of the one-second window
        let notice = "JACK connection \(out) → system:playback_1 was removed by another client"
        let noticesBefore = daemon.log.components(separatedBy: notice).count - 1
        let clock = ContinuousClock()
        let began = clock.now
        for _ in 0..<2 {
            try #require(runTool("jack_disconnect", [out, "system:playback_1"]).status == 0)
            #expect(
                try eventually(timeout: 0.5) { try connections(out) == ["system:playback_1"] }, "repaired each time")
        }
        let loop = clock.now - began
        usleep(200_000)
        let noticesNow = daemon.log.components(separatedBy: notice).count - 1
        // Two removals within (at most) a second or so of the previous notice: at most one more.
        if loop < .seconds(1) { #expect(noticesNow - noticesBefore <= 1, "\(daemon.log)") }
        usleep(1_000_000)
        try #require(runTool("jack_disconnect", [out, "system:playback_1"]).status == 0)
        #expect(
            try eventually { daemon.log.contains("\(notice) (removed ") },
            "the next notice counts the repeats: \(daemon.log)")
        #expect(try eventually { try connections(out) == ["system:playback_1"] })
    }

    @Test(
        "a connection removed in a loop: recd leaves it alone, logs one error, status lists it and answers fast",
        .timeLimit(.minutes(1)))
    func churn() throws {
        let daemon = try Daemon()
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.allSatisfy { $0["available"] == true }
                    == true
            })
        let routes = try #require(daemon.recctl("--json", "routes").json?["ports"]?.arrayValue)
        let out = try #require(routes.first { $0["name"] == "out" }?["recdPorts"]?.arrayValue?.first?.stringValue)
        let edge = "\(out) → system:playback_1"
        let control = try RawClient(path: daemon.socket)
        let busyBefore = daemon.controlThreadBusyLines.count
        var slowest = 0.0
        var listed = false
        let clock = ContinuousClock()
        let began = clock.now
        // A patchbay that insists: jack_disconnect again and again until recd lists the edge (6 s
        // at most: on a loaded machine each jack_disconnect and each repair take longer), while a
        // client asks for status between removals.
        while clock.now - began < .seconds(6) && !listed {
            _ = try runTool("jack_disconnect", [out, "system:playback_1"])
            let asked = clock.now
            control.send(#"{"id":1,"op":"status"}"# + "\n")
            let reply = try #require(control.readJSON(), "status answered")
            let took = (clock.now - asked).components
            slowest = max(slowest, Double(took.seconds) + Double(took.attoseconds) / 1e18)
            if reply["jack"]?["churning"]?.arrayValue?.contains(.string(edge)) == true { listed = true }
        }
        print("churn: slowest status \(String(format: "%.1f ms", slowest * 1000)), listed: \(listed)")
        #expect(listed, "status jack.churning lists \(edge)")
        // Late with no busy turn in recd's log (it logs a turn busy past 100 ms, the time it
        // waited for a CPU left out; the line follows the reply, hence the wait): no one turn of
        // recd's held the reply up.
        if slowest >= 0.1 { usleep(300_000) }
        let busy = daemon.controlThreadBusyLines.dropFirst(busyBefore)
        let late = "status answers within 100 ms throughout: \(slowest) s"
        #expect(
            slowest < 0.1,
            "\(busy.isEmpty ? RerunCause.noLongTurn(late + " (no turn of recd's control thread over 100 ms)") : late + "; recd: \(busy.joined(separator: "; "))")")
        let error = "JACK connection \(edge) changed 3 times in 1 s"
        #expect(eventually { daemon.log.contains(error) }, "\(daemon.log)")
        #expect(daemon.log.components(separatedBy: error).count - 1 == 1, "logged once: \(daemon.log)")
        let text = try daemon.recctl("status").stdout
        #expect(text.contains("churning: \(edge)"), "\(text)")
    }

    @Test(
        "the server comes back at another sample rate: mediaServicesWereReset, actual and status show the new rate, the resumed recorder writes at it",
        // It restarts a jackd2 dummy server of its own; PipeWire changes its rate live instead.
        .disabled(if: TestServer.isPipeWire)
    )
    func serverReturnsAtAnotherRate() throws {
        // A private server of a stable name derived from the default one (the suite's own
        // recd-test-* family under scripts/test); stopped cleanly, so JACK frees its slot.
        let name = (ProcessInfo.processInfo.environment["JACK_DEFAULT_SERVER"] ?? "recd-test") + "-rate"
        let jack = try PrivateJack(period: 1024, name: name)
        defer { jack.stop() }
        let deck = uniqueName("deck")
        let deckArguments = [
            "--server", name, "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:1000",
        ]
        var source = try SignalClient(deckArguments)
        let daemon = try Daemon(
            extraConfig: ReliabilityTests.logger, ports: ReliabilityTests.deckPorts(deck), jackServer: name)
        #expect(try eventually(timeout: 10) { try ReliabilityTests.recorders(daemon).count == 1 }, "\(daemon.log)")
        #expect(try daemon.recctl("--json", "status").json?["jack"]?["sampleRate"]?.intValue == 48_000)
        let watcher = try daemon.watch()
        usleep(500_000)

        jack.stop()
        #expect(
            watcher.waitFor(timeout: 10) { $0["event"] == "mediaServicesWereLost" }.contains {
                $0["event"] == "mediaServicesWereLost"
            })
        #expect(source.waitForExit(timeout: 10))
        // Hold recd while the deck's ports come up, so the reset finds them (see ReliabilityTests).
        let pid = try #require(daemon.pid)
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        try jack.start(period: 1024, rate: 44_100)
        source = try SignalClient(deckArguments)
        kill(pid, SIGCONT)
        #expect(
            watcher.waitFor(timeout: 10) { $0["event"] == "mediaServicesWereReset" }.contains {
                $0["event"] == "mediaServicesWereReset"
            }, "\(daemon.log)")
        #expect(
            try eventually(timeout: 10) { try ReliabilityTests.recorders(daemon).count == 1 },
            "auto_resume after the reset: \(daemon.log)")
        #expect(try daemon.recctl("--json", "status").json?["jack"]?["sampleRate"]?.intValue == 44_100)
        let actual = try Self.session(daemon, "logger")?["actual"]
        #expect(
            actual?["sampleRate"]?.doubleValue == 44_100 && actual?["ioBufferDuration"]?.doubleValue == 1024.0 / 44_100,
            "\(actual?.jsonText ?? "")")
        usleep(1_000_000)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        source.stop()

        let files = archiveFiles(daemon.directory + "/archive")
        try #require(files.count == 2, "one segment before the loss, one after the reset: \(files)")
        let rates = try files.map {
            try runTool("metaflac", ["--show-sample-rate", $0]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(rates == ["48000", "44100"], "\(files)")
        #expect(try files.allSatisfy(flacTest))
    }
}

/// PipeWire's JACK changes its sample rate live (jackd2 only with a new server).
@Suite(
    "a live sample-rate change (PipeWire's JACK)", .serialized,
    .enabled(if: TestServer.isPipeWire))
struct LiveRateChangeTests {
    static func forceRate(_ rate: Int) throws {
        let result = try runTool("pw-metadata", ["-n", "settings", "0", "clock.force-rate", "\(rate)"])
        guard result.status == 0 else { throw DaemonFailure(message: "pw-metadata: \(result.stderr)") }
    }

    @Test(
        "48 kHz → 44.1 kHz under a player and a recorder: the player stops (sampleRateChange), the recorder goes on in a new segment at 44.1 kHz"
    )
    func rateChangedLive() throws {
        defer { try? Self.forceRate(48_000) }
        let deck = uniqueName("deck")
        let ports = GraphChangeTests.ports(deck: deck, sink: "system")
            .replacingOccurrences(of: "system:in_", with: "system:playback_")
        let daemon = try Daemon(ports: ports)
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:1000"])
        defer { source.stop() }
        let wav = daemon.directory + "/tone.wav"
        try writeWAV(path: wav, sampleRate: 48_000, channels: 2, samples: [Int16](repeating: 1000, count: 48_000 * 20))
        try #require(
            daemon.recctl("session", "set", "logger", "--category", "record", "--mic-usage", "archive").status == 0)
        try #require(daemon.recctl("permission", "grant", "logger").status == 0)
        try #require(
            daemon.recctl("session", "set", "music", "--category", "playback", "--options", "mixWithOthers").status == 0
        )
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        let watcher = try daemon.watch()
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        try #require(daemon.recctl("play", "music", wav).status == 0)
        usleep(1_000_000)

        try Self.forceRate(44_100)
        let events = watcher.waitFor(count: 2) { $0["reason"] == "routeConfigurationChange" }
        #expect(
            events.contains {
                $0["event"] == "player" && $0["state"] == "stopped" && $0["reason"] == "sampleRateChange"
            })
        #expect(events.filter { $0["reason"] == "routeConfigurationChange" }.count == 2, "\(events.map(\.jsonText))")
        #expect(
            try eventually { try daemon.recctl("--json", "status").json?["jack"]?["sampleRate"]?.intValue == 44_100 })
        #expect(
            try daemon.recctl("--json", "session", "show", "music").json?["actual"]?["sampleRate"]?.doubleValue
                == 44_100)
        usleep(1_000_000)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)

        let files = archiveFiles(daemon.directory + "/archive")
        try #require(files.count == 2, "the segment at 48 kHz, then one at 44.1 kHz: \(files)")
        let rates = try files.map {
            try runTool("metaflac", ["--show-sample-rate", $0]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(rates == ["48000", "44100"])
        #expect(try metaflacTag(files[0], "END_REASON") == "sampleRateChange")
        #expect(try files.allSatisfy(flacTest))
    }
}

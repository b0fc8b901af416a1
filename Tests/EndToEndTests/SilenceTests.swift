// Silence alarms end to end: a recd-signal feed that goes silent and comes back, the real recd
// and recctl, the `silence` events, the on_silence program and the SILENCE_SECONDS tag; and
// programme that is not silence (speech with pauses, jack_metro's click track and recd-signal's,
// music with a fade, gated audio) beside real dead air (the input muted), on jackd and PipeWire.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("silence alarms end to end", .serialized)
struct SilenceEndToEndTests {
    @Test(
        "a feed silent from 3 s to 7 s: began at 4.5 s, ended at 7 s (±1 s), the hook ran once per change with its environment, the segment counts 4 s"
    )
    func silenceAndHook() throws {
        let deck = uniqueName("deck")
        let hookDirectory = try makeTemporaryDirectory("recd-hook")
        defer { try? FileManager.default.removeItem(atPath: hookDirectory) }
        let hook = hookDirectory + "/on-silence"
        // recd runs it without a shell; the program itself may be a script. One file per run.
        try """
        #!/bin/sh
        env | grep -E '^(RECD_|HOME=|NOTIFY_SOCKET=)' | sort > "\(hookDirectory)/run-$RECD_STATE-$$.env"
        """.write(toFile: hook, atomically: true, encoding: .utf8)
        chmod(hook, 0o755)
        let daemon = try Daemon(
            extraConfig: """

                [session logger]
                category = record
                mic_usage = Keeps the log
                permission = granted
                silence_seconds = 1.5
                silence_threshold_db = -40
                on_silence = \(hook)

                """, ports: ArchiveEndToEndTests.deckPorts(deck))
        let watcher = try daemon.watch("logger")
        let source = try SignalClient([
            "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:1000", "--level", "-12",
            "--silent-from", "3", "--silent-for", "4",
        ])
        let ready = Date()
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        let start = try daemon.recctl("record", "start", "logger")
        try #require(start.status == 0, "\(start.stderr)")
        #expect(Date().timeIntervalSince(ready) < 2.5, "the recording must start before the silence")

        func arrival(of state: String, timeout: Double) -> (JSONValue?, Double) {
            let events = watcher.waitFor(timeout: timeout) {
                $0["event"] == "silence" && $0["state"] == JSONValue.string(state)
            }
            let when = Date().timeIntervalSince(ready)
            return (events.first { $0["event"] == "silence" && $0["state"] == JSONValue.string(state) }, when)
        }
        let (began, beganAt) = arrival(of: "began", timeout: 8)
        let status = try daemon.recctl("--json", "status").json
        let human = try daemon.recctl("status").stdout
        let (ended, endedAt) = arrival(of: "ended", timeout: 8)
        let began1 = try #require(began, "no began: \(watcher.events)")
        let ended1 = try #require(ended, "no ended: \(watcher.events)")
        #expect(abs(beganAt - 4.5) <= 1, "began \(beganAt) s after ready, want 4.5 ± 1")
        #expect(abs(endedAt - 7) <= 1, "ended \(endedAt) s after ready, want 7 ± 1")
        #expect(began1["app"] == "logger" && began1["stream"] == ended1["stream"])
        #expect(began1["seconds"]?.doubleValue.map { abs($0 - 1.5) < 0.05 } == true, "\(began1.jsonText)")
        #expect(began1["levelDB"] == -144, "zeros read as the floor: \(began1.jsonText)")
        #expect(ended1["seconds"]?.doubleValue.map { abs($0 - 4) < 0.05 } == true, "\(ended1.jsonText)")
        #expect(ended1["levelDB"]?.doubleValue.map { abs($0 + 12) < 0.5 } == true, "\(ended1.jsonText)")
        // The silence's own times, from the samples: 4 s apart, 3 s after the first frame.
        let since = try #require(began1["since"]?.stringValue.flatMap(Self.date))
        let back = try #require(ended1["since"]?.stringValue.flatMap(Self.date))
        #expect(abs(back.timeIntervalSince(since) - 4) < 0.05)
        #expect(
            abs(since.timeIntervalSince(ready) - 3) <= 0.5,
            "silence placed \(since.timeIntervalSince(ready)) s after ready")
        // While silent, status marks the stream.
        let recorder = status?["recorders"]?.arrayValue?.first
        #expect(recorder?["silentSince"] == began1["since"], "\(status?.jsonText ?? "")")
        #expect(human.contains("SILENT since"), "\(human)")
        #expect(
            try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue?.first?["silentSince"]
                == JSONValue.null)

        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        source.stop()
        // The hook: once per change, no shell between, its environment as documented.
        #expect(
            try eventually {
                (try? FileManager.default.contentsOfDirectory(atPath: hookDirectory).filter { $0.hasSuffix(".env") }
                    .count) == 2
            })
        let runs = try FileManager.default.contentsOfDirectory(atPath: hookDirectory).filter { $0.hasSuffix(".env") }
            .sorted()
        #expect(runs.count == 2 && runs[0].hasPrefix("run-began-") && runs[1].hasPrefix("run-ended-"), "\(runs)")
        for (run, event) in zip(runs, [began1, ended1]) {
            let text = try String(contentsOfFile: hookDirectory + "/" + run, encoding: .utf8)
            var environment: [String: String] = [:]
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: "=", maxSplits: 1)
                environment[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
            }
            #expect(environment["RECD_APP"] == "logger")
            #expect(environment["RECD_STREAM"] == event["stream"]?.stringValue)
            #expect(environment["RECD_STATE"] == event["state"]?.stringValue)
            #expect(environment["RECD_SINCE"] == event["since"]?.stringValue)
            #expect(environment["RECD_LEVEL_DB"].flatMap(Double.init) == event["levelDB"]?.doubleValue)
            #expect(environment["HOME"] == nil && environment["NOTIFY_SOCKET"] == nil, "a clean environment: \(text)")
        }
        #expect(daemon.log.contains("on_silence \(hook)") && daemon.log.contains("exit status 0"), "\(daemon.log)")
        // The segment counts the silence: 4 s (to a block of 10 ms each side).
        let files = archiveFiles(daemon.directory + "/archive").filter { $0.hasSuffix(".flac") }
        try #require(!files.isEmpty)
        let counted = try files.compactMap { try metaflacTag($0, "SILENCE_SECONDS").flatMap(Double.init) }
        #expect(counted.count == files.count, "every segment has SILENCE_SECONDS")
        #expect(abs(counted.reduce(0, +) - 4) <= 0.05, "SILENCE_SECONDS \(counted)")
    }

    /// A `[session logger]` recording `port` with silence_seconds 3 at -50 dBFS, the silence
    /// events of `recctl watch`, and the times of a dead-air test.
    struct DeadAir {
        let daemon: Daemon
        let watcher: Watcher

        static let seconds = 3.0

        init(ports: String) throws {
            daemon = try Daemon(
                extraConfig: """

                    [session logger]
                    category = record
                    mic_usage = Keeps the log
                    permission = granted
                    silence_seconds = \(Self.seconds)
                    silence_threshold_db = -50

                    """, ports: ports)
            watcher = try daemon.watch("logger")
        }

        var silences: [JSONValue] { watcher.events.filter { $0["event"] == "silence" } }

        /// The seconds the logger's recorder has written.
        func recordedSeconds() throws -> Double {
            try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue?.first?["seconds"]?.doubleValue ?? 0
        }

        /// Waits until the recorder has written `seconds`.
        func recordedSeconds(atLeast seconds: Double) throws {
            try #require(try eventually(timeout: seconds + 15) { try recordedSeconds() >= seconds })
        }

        /// Records the feed's programme for `programme` seconds (no alarm), mutes the input
        /// (dead air: `began` within silence_seconds + 1 s), unmutes it (`ended` within 1 s) and
        /// records the programme `programme` seconds more (no alarm); the segments count the
        /// silence only. Returns what failed, in words (empty: nothing).
        func run(programme: Double) throws -> [String] {
            var failures: [String] = []
            #expect(
                try eventually {
                    try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
                })
            let start = try daemon.recctl("record", "start", "logger")
            try #require(start.status == 0, "\(start.stderr)")
            // The programme alone, `programme` seconds of it written: no alarm.
            try recordedSeconds(atLeast: programme)
            if !silences.isEmpty { failures.append("the programme raised \(silences.map(\.jsonText))") }
            let muted = Date()
            try #require(daemon.recctl("mute", "logger", "on").status == 0)
            let isBegan = { (event: JSONValue) in event["event"] == "silence" && event["state"] == "began" }
            let began = watcher.waitFor(timeout: Self.seconds + 3, isBegan).first(where: isBegan)
            let beganAfter = Date().timeIntervalSince(muted)
            if began == nil {
                failures.append("no began within \(Self.seconds + 3) s of dead air")
            } else if beganAfter > Self.seconds + 1 {
                failures.append("began \(beganAfter) s after the dead air began, want within \(Self.seconds + 1) s")
            }
            let unmuted = Date()
            try #require(daemon.recctl("mute", "logger", "off").status == 0)
            let ended = watcher.waitFor(timeout: 3) { $0["event"] == "silence" && $0["state"] == "ended" }
                .first { $0["event"] == "silence" && $0["state"] == "ended" }
            let endedAfter = Date().timeIntervalSince(unmuted)
            if ended == nil {
                failures.append("no ended within 3 s of the programme's return")
            } else if endedAfter > 1 {
                failures.append("ended \(endedAfter) s after the programme returned, want within 1 s")
            }
            let human = try daemon.recctl("status").stdout
            if human.contains("SILENT since") {
                failures.append("status still says SILENT with the programme back:\n\(human)")
            }
            try recordedSeconds(atLeast: try recordedSeconds() + programme)
            if silences.count != 2 {
                failures.append("silence events \(silences.map(\.jsonText)), want one began and one ended")
            }
            try #require(daemon.recctl("record", "stop", "logger").status == 0)
            // One rule for the alarm and the tag: the segments count the silence, from its start
            // to the sound's.
            if let since = began?["since"]?.stringValue.flatMap(SilenceEndToEndTests.date),
                let back = ended?["since"]?.stringValue.flatMap(SilenceEndToEndTests.date)
            {
                let files = archiveFiles(daemon.directory + "/archive").filter { $0.hasSuffix(".flac") }
                let counted = try files.compactMap { try metaflacTag($0, "SILENCE_SECONDS").flatMap(Double.init) }
                    .reduce(0, +)
                let silence = back.timeIntervalSince(since)
                if abs(counted - silence) > 0.05 {
                    failures.append("SILENCE_SECONDS add up to \(counted) s, the silence lasted \(silence) s")
                }
            }
            return failures
        }
    }

    @Test(
        "a jack_metro click track (-6 dBFS peak, 100 bpm) is programme: no alarm; dead air is found within silence_seconds + 1 s; the first click ends it; SILENCE_SECONDS counts the dead air only"
    )
    func clickTrack() throws {
        let metro = uniqueName("metro")
        let test = try DeadAir(
            ports: """
                [port desk]
                type = lineIn
                direction = input
                jack = \(metro):100_bpm

                """)
        // jack_metro knows nothing of recd: one output port, CLIENT:100_bpm, clicking at its
        // defaults (880 Hz, amplitude 0.5, 100 ms).
        let process = try ExternalTools.process("jack_metro", ["--bpm", "100", "--name", metro])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let failures = try test.run(programme: 6)
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))\nrecd's log:\n\(test.daemon.log)")
    }

    /// Programmes recd-signal plays (`--envelope`), as the issue lists them.
    static let programmes: [(name: String, arguments: [String])] = [
        // Syllables of 150 ms with 60 ms at -25 dB between them, phrases of 1.3 to 3 s, pauses of
        // 0.5 to 1.5 s of nothing.
        (
            "speech with pauses",
            ["--signal", "pink", "--level", "-6", "--envelope", speechEnvelope]
        ),
        // recd-signal's equivalent of jack_metro: 880 Hz at -6 dBFS for 100 ms every 600 ms.
        ("click track", ["--signal", "sine:880", "--level", "-6", "--envelope", "0.1:0,0.5:off"]),
        // A chord at -20 dBFS for 4 s, faded out over 3 s to -60 dB, 0.5 s of nothing, again.
        (
            "music with a fade",
            ["--signal", "sine:220+277+330", "--level", "-20", "--envelope", "4:0,3:0>-60,0.5:off"]
        ),
        ("gated audio", ["--signal", "pink", "--level", "-6", "--envelope", "1:0,1:off"]),
    ]

    static var speechEnvelope: String {
        var steps: [String] = []
        for (phrase, pause) in [(2.0, 0.5), (3.0, 1.5), (1.3, 1.0), (2.5, 0.7), (1.6, 1.5)] {
            for _ in 0..<Int(phrase / 0.21) { steps += ["0.15:0", "0.06:-25"] }
            steps.append("\(pause):off")
        }
        return steps.joined(separator: ",")
    }

    @Test(
        "speech with pauses, a click track, music with a fade, gated audio: no alarm; dead air between them found within silence_seconds + 1 s and ended within 1 s",
        arguments: programmes.map(\.name))
    func programmeAndDeadAir(name: String) throws {
        let deck = uniqueName("deck")
        let test = try DeadAir(ports: ArchiveEndToEndTests.deckPorts(deck))
        let arguments = try #require(Self.programmes.first { $0.name == name }?.arguments)
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2"] + arguments)
        defer { source.stop() }
        let failures = try test.run(programme: 8)
        #expect(failures.isEmpty, "\(name): \(failures.joined(separator: "; "))\nrecd's log:\n\(test.daemon.log)")
    }

    @Test(
        "a bad silence value names its key",
        arguments: [
            ("silence_seconds = -1", "silence_seconds"), ("silence_threshold_db = 3", "silence_threshold_db"),
            ("on_silence = relative/path", "on_silence"),
        ])
    func configErrors(line: String, key: String) throws {
        let path = try makeTemporaryDirectory("recd-conf") + "/bad.conf"
        try "[session logger]\n\(line)\n".write(toFile: path, atomically: true, encoding: .utf8)
        let checked = try runProgram(productsDirectory.appendingPathComponent("recd").path, ["--check-config", path])
        #expect(checked.status != 0)
        #expect(checked.stderr.contains("bad.conf:2: [session logger] \(key)"), "\(checked.stderr)")
    }

    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}

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

    /// Feeds recorded side by side by one recd: each a logger session (`record =` its port,
    /// silence_seconds 3 at -50 dBFS), the silence events of `recctl watch`, and the times of a
    /// dead-air test, run on every feed at once (the programmes are independent; one at a time
    /// they took a minute and a quarter of every pass).
    struct DeadAir {
        let daemon: Daemon
        let watcher: Watcher
        /// The feeds' application ids, in the order given.
        let apps: [String]

        static let seconds = 3.0

        /// `feeds`: each feed's application id and the `[port …]` section it records (the
        /// section's name is the session's `record`).
        init(feeds: [(app: String, port: String, section: String)]) throws {
            apps = feeds.map(\.app)
            let sessions = feeds.map { feed in
                """
                [session \(feed.app)]
                category = record
                options = mixWithOthers
                priority = logger
                mic_usage = Keeps the log
                permission = granted
                record = \(feed.port)
                silence_seconds = \(Self.seconds)
                silence_threshold_db = -50

                """
            }
            daemon = try Daemon(
                extraConfig: "\n" + sessions.joined(), ports: feeds.map(\.section).joined(separator: "\n"))
            watcher = try daemon.watch()
        }

        func silences(_ app: String) -> [JSONValue] {
            watcher.events.filter { $0["event"] == "silence" && $0["app"] == .string(app) }
        }

        /// The seconds each feed's recorder has written, by application id.
        func recordedSeconds() throws -> [String: Double] {
            var seconds: [String: Double] = [:]
            for recorder in try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue ?? [] {
                if let app = recorder["app"]?.stringValue { seconds[app] = recorder["seconds"]?.doubleValue ?? 0 }
            }
            return seconds
        }

        /// Waits until every feed's recorder has written `seconds` more than `since` says.
        func recorded(_ seconds: Double, since: [String: Double] = [:]) throws {
            var now: [String: Double] = [:]
            let done = try eventually(timeout: seconds + 15) {
                now = try recordedSeconds()
                return apps.allSatisfy { (now[$0] ?? 0) >= (since[$0] ?? 0) + seconds }
            }
            try #require(done, "the feeds recorded \(now), want \(seconds) s more than \(since)")
        }

        /// Each feed's first event that `matches` and when it was first seen, the feeds watched
        /// together (every 10 ms) until `timeout` after the latest of `from` (a feed not found
        /// then is missing).
        func arrivals(from: [String: Date], timeout: Double, _ matches: (JSONValue) -> Bool)
            -> [String: (event: JSONValue, seen: Date)]
        {
            var found: [String: (event: JSONValue, seen: Date)] = [:]
            let deadline = (from.values.max() ?? Date()).addingTimeInterval(timeout)
            while found.count < apps.count {
                let events = watcher.events
                let now = Date()
                for app in apps where found[app] == nil {
                    if let event = events.first(where: { $0["app"] == .string(app) && matches($0) }) {
                        found[app] = (event, now)
                    }
                }
                if now > deadline { break }
                usleep(10_000)
            }
            return found
        }

        /// Records each feed's programme for `programme` seconds (no alarm), mutes every feed
        /// (dead air: `began` within silence_seconds + 1 s of its own mute), unmutes them
        /// (`ended` within 1 s of the programme's first sound after it) and records the
        /// programmes `programme` seconds more (no alarm); the segments count the silence only.
        /// Returns what failed, in words, by application id (empty: nothing).
        func run(programme: Double) throws -> [String: [String]] {
            var failures: [String: [String]] = [:]
            // The programme alone, `programme` seconds of it written: no alarm.
            try recorded(programme)
            for app in apps where !silences(app).isEmpty {
                failures[app, default: []].append("the programme raised \(silences(app).map(\.jsonText))")
            }
            var muted: [String: Date] = [:]
            for app in apps {
                muted[app] = Date()
                try #require(daemon.recctl("mute", app, "on").status == 0)
            }
            let isBegan = { (event: JSONValue) in event["event"] == "silence" && event["state"] == "began" }
            var began: [String: JSONValue] = [:]
            let beganSeen = arrivals(from: muted, timeout: Self.seconds + 3, isBegan)
            for app in apps {
                guard let (event, seen) = beganSeen[app] else {
                    failures[app, default: []].append("no began within \(Self.seconds + 3) s of dead air")
                    continue
                }
                began[app] = event
                let after = seen.timeIntervalSince(muted[app]!)
                if after > Self.seconds + 1 {
                    failures[app, default: []].append(
                        "began \(after) s after the dead air began, want within \(Self.seconds + 1) s")
                }
            }
            var unmuted: [String: Date] = [:]
            for app in apps {
                unmuted[app] = Date()
                try #require(daemon.recctl("mute", app, "off").status == 0)
            }
            let isEnded = { (event: JSONValue) in event["event"] == "silence" && event["state"] == "ended" }
            var ended: [String: JSONValue] = [:]
            let endedSeen = arrivals(from: unmuted, timeout: 3, isEnded)
            for app in apps {
                guard let (event, seen) = endedSeen[app] else {
                    failures[app, default: []].append("no ended within 3 s of the programme's return")
                    continue
                }
                ended[app] = event
                // The programme's sound returns at the unmute, or after the pause it was in then
                // (speech pauses up to 1.5 s, the gate 1 s): the event's `since` is that sample's
                // time. Within 1 s of it, and not before the unmute.
                let back = event["since"]?.stringValue.flatMap(SilenceEndToEndTests.date) ?? unmuted[app]!
                let after = seen.timeIntervalSince(max(back, unmuted[app]!))
                if after > 1 {
                    failures[app, default: []].append("ended \(after) s after the programme returned, want within 1 s")
                }
                if back < unmuted[app]!.addingTimeInterval(-0.1) || back > unmuted[app]!.addingTimeInterval(1.6) {
                    let offset = back.timeIntervalSince(unmuted[app]!)
                    failures[app, default: []].append(
                        "the sound came back \(offset) s after the unmute, want within the programme's pauses (1.5 s)")
                }
            }
            let human = try daemon.recctl("status").stdout
            if human.contains("SILENT since") {
                failures["status", default: []].append("status still says SILENT with the programmes back:\n\(human)")
            }
            try recorded(programme, since: try recordedSeconds())
            for app in apps where silences(app).count != 2 {
                failures[app, default: []].append(
                    "silence events \(silences(app).map(\.jsonText)), want one began and one ended")
            }
            // Stopping recd closes every segment.
            daemon.stop()
            // One rule for the alarm and the tag: the segments count the silence, from its start
            // to the sound's.
            for app in apps {
                guard let since = began[app]?["since"]?.stringValue.flatMap(SilenceEndToEndTests.date),
                    let back = ended[app]?["since"]?.stringValue.flatMap(SilenceEndToEndTests.date)
                else { continue }
                let files = archiveFiles(daemon.directory + "/archive").filter {
                    $0.hasSuffix(".flac") && $0.split(separator: "/").last?.hasPrefix("\(app)-") == true
                }
                let counted = try files.compactMap { try metaflacTag($0, "SILENCE_SECONDS").flatMap(Double.init) }
                    .reduce(0, +)
                let silence = back.timeIntervalSince(since)
                if files.isEmpty || abs(counted - silence) > 0.05 {
                    failures[app, default: []].append(
                        "SILENCE_SECONDS of \(files.count) segments add up to \(counted) s, "
                            + "the silence lasted \(silence) s")
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
        let test = try DeadAir(feeds: [
            (
                app: "logger", port: "desk",
                section: """
                    [port desk]
                    type = lineIn
                    direction = input
                    jack = \(metro):100_bpm

                    """
            )
        ])
        // jack_metro knows nothing of recd: one output port, CLIENT:100_bpm, clicking at its
        // defaults (880 Hz, amplitude 0.5, 100 ms).
        let process = try ExternalTools.process("jack_metro", ["--bpm", "100", "--name", metro])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let failures = try test.run(programme: 6).values.joined()
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
        "speech with pauses, a click track, music with a fade, gated audio, each a feed of one recd: no alarm; dead air between them found within silence_seconds + 1 s and ended within 1 s"
    )
    func programmeAndDeadAir() throws {
        var feeds: [(app: String, port: String, section: String)] = []
        var sources: [SignalClient] = []
        defer { sources.forEach { $0.stop() } }
        for (index, programme) in Self.programmes.enumerated() {
            let deck = uniqueName("deck")
            let section = """
                [port feed\(index)]
                type = lineIn
                direction = input
                jack = \(deck):out_1, \(deck):out_2

                """
            feeds.append((app: "programme\(index)", port: "feed\(index)", section: section))
            sources.append(
                try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2"] + programme.arguments))
        }
        let test = try DeadAir(feeds: feeds)
        let failures = try test.run(programme: 8)
        for (index, programme) in Self.programmes.enumerated() {
            let said = (failures["programme\(index)"] ?? []) + (failures["status"] ?? [])
            #expect(said.isEmpty, "\(programme.name): \(said.joined(separator: "; "))")
        }
        if !failures.isEmpty { print("recd's log:\n\(test.daemon.log)") }
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

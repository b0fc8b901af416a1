// Issue 15, item 1 end to end: a recd-signal feed that goes silent and comes back, the real
// recd and recctl, the `silence` events, the on_silence program and the SILENCE_SECONDS tag.
import ControlProtocol
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("silence alarms end to end", .serialized)
struct SilenceEndToEndTests {
    @Test(
        "a feed silent from 3 s to 7 s: began at 4.5 s, ended at 9 s (±1 s), the hook ran once per change with its environment, the segment counts 4 s"
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
        #expect(abs(endedAt - 9) <= 1, "ended \(endedAt) s after ready, want 9 ± 1")
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

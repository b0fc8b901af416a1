// Loggers end to end: a declared `priority = logger` recorder keeps recording whatever
// other sessions do; prefersNoInterruptionsFromSystemAlerts spares a session from a
// system-alert-class activation and not from anything else; an interruption says who and
// since when in `session show`, `status`, the event, the log and the segment's tags. The real
// recd, recctl and JACK server (jackd or PipeWire, RECD_TEST_SERVER).
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("loggers nothing stops by accident end to end", .serialized)
struct LoggerPriorityTests {
    static let logger = """

        [session logger]
        category = record
        priority = logger
        mic_usage = Keeps the legal record
        record = mic
        permission = granted

        [session phone]
        category = playAndRecord
        mode = voiceChat
        priority = call
        mic_usage = Talks to callers

        """

    static func recorders(_ daemon: Daemon, of app: String) throws -> [JSONValue] {
        (try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue ?? []).filter { $0["app"]?.stringValue == app }
    }

    @Test(
        "a priority = logger recorder: a voice session and a call are refused with insufficientPriority naming the logger; it records on in the same segment"
    )
    func loggerIsNotInterrupted() throws {
        let daemon = try Daemon(extraConfig: Self.logger)
        // Recording, with its first segment open (the file comes a moment after the recorder).
        #expect(
            try eventually(timeout: 10) {
                try Self.recorders(daemon, of: "logger").first?["files"]?.arrayValue?.isEmpty == false
            },
            "the declared logger records from start-up: \(daemon.log)")
        let watcher = try daemon.watch("logger")
        let filesBefore = try Self.recorders(daemon, of: "logger").first?["files"]
        try #require(daemon.recctl("session", "set", "voice", "--category", "playAndRecord", "--mic-usage", "t").status == 0)
        for app in ["voice", "phone"] {
            let refused = try daemon.recctl("session", "activate", app)
            #expect(refused.status == 1, "\(app): \(refused.stdout)")
            #expect(refused.stderr.contains("insufficientPriority"), "\(app): \(refused.stderr)")
            #expect(refused.stderr.contains("logger (priority logger)"), "\(app): \(refused.stderr)")
        }
        // A mixable session activates beside it and interrupts nothing.
        try #require(
            daemon.recctl("session", "set", "radio", "--category", "playback", "--options", "mixWithOthers").status == 0)
        #expect(try daemon.recctl("session", "activate", "radio").status == 0)
        usleep(500_000)
        let show = try #require(daemon.recctl("--json", "session", "show", "logger").json)
        #expect(show["state"] == "active", "\(show.jsonText)")
        #expect(show["priority"] == "logger")
        let now = try Self.recorders(daemon, of: "logger")
        #expect(now.count == 1)
        #expect(now.first?["files"] == filesBefore, "the same segment: \(String(describing: filesBefore)) → \(now)")
        // No interruption, no stop, no new file (a clockStall gap of a loaded machine is not one).
        let interruptions = watcher.events.filter {
            $0["event"] == "interruption"
                || ($0["event"] == "recording"
                    && ["stopped", "started", "finished", "segment", "switched"].contains($0["state"]?.stringValue ?? ""))
        }
        #expect(interruptions.isEmpty, "the logger heard nothing: \(interruptions.map(\.jsonText))")
    }

    @Test(
        "prefersNoInterruptionsFromSystemAlerts: a voicePrompt alert plays beside it; without the preference the alert interrupts, and every place says by whom and since when"
    )
    func systemAlertsAndWhoInterrupted() throws {
        let daemon = try Daemon()
        for command in [
            ["session", "set", "talk", "--category", "playAndRecord", "--mic-usage", "records the talk",
                "--prefers-no-system-alerts", "yes"],
            ["permission", "grant", "talk"],
            ["session", "set", "chime", "--category", "playback", "--mode", "voicePrompt"],
        ] {
            let result = try daemon.recctl(arguments: command)
            try #require(result.status == 0, "\(command): \(result.stderr)")
        }
        #expect(try daemon.recctl("--json", "session", "show", "talk").json?[
            "prefersNoInterruptionsFromSystemAlerts"] == true)
        let watcher = try daemon.watch()
        try #require(daemon.recctl("record", "start", "talk", "--input", "mic").status == 0)
        #expect(try eventually(timeout: 5) { try Self.recorders(daemon, of: "talk").count == 1 })

        // The alert activates beside it: nothing is interrupted.
        try #require(daemon.recctl("session", "activate", "chime").status == 0)
        usleep(300_000)
        #expect(try daemon.recctl("--json", "session", "show", "talk").json?["state"] == "active")
        #expect(try Self.recorders(daemon, of: "talk").count == 1)
        #expect(!watcher.events.contains { $0["event"] == "interruption" && $0["app"] == "talk" })

        // Without the preference (session.prefer, as the libraries send it) the alert interrupts.
        try #require(daemon.recctl("session", "deactivate", "chime").status == 0)
        try #require(daemon.recctl("session", "prefer", "talk", "--prefers-no-system-alerts", "no").status == 0)
        let before = Date()
        try #require(daemon.recctl("session", "activate", "chime").status == 0)
        let began = watcher.waitFor { $0["event"] == "interruption" && $0["app"] == "talk" && $0["type"] == "began" }
            .first { $0["event"] == "interruption" && $0["app"] == "talk" }
        #expect(began?["by"] == "chime", "\(began?.jsonText ?? "no interruption event")")
        watcher.waitFor(timeout: 10) { $0["event"] == "recording" && $0["app"] == "talk" && $0["state"] == "stopped" }

        // session show, JSON and text.
        let session = try #require(daemon.recctl("--json", "session", "show", "talk").json)
        #expect(session["state"] == "interrupted")
        #expect(session["interruption"]?["by"] == "chime", "\(session.jsonText)")
        let since = try #require(session["interruption"]?["since"]?.stringValue, "\(session.jsonText)")
        let parser = DateFormatter()
        parser.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        parser.timeZone = TimeZone(identifier: "UTC")
        let sinceTime = try #require(parser.date(from: String(since.prefix(19))), "\(since)")
        #expect(abs(sinceTime.timeIntervalSince(before)) < 5, "since \(since), activated at \(before)")
        let clock = String(since.split(separator: "T")[1].prefix(8)) + "Z"
        let text = try daemon.recctl("session", "show", "talk").stdout
        #expect(text.contains("state:       interrupted by chime since \(clock) (reason default)"), "\(text)")
        // status: the recorder waits, saying who and since when.
        let status = try daemon.recctl("status").stdout
        let line = status.split(separator: "\n").first { $0.contains("talk/") && $0.contains(": waiting (") }
        #expect(line?.contains("waiting (interrupted by chime since \(clock); resumes when") == true, "\(status)")
        let waiting = try daemon.recctl("--json", "status").json?["waiting"]?.arrayValue ?? []
        #expect(waiting.contains { $0["app"] == "talk" && $0["reason"] == "interruption" && $0["by"] == "chime" })
        // The log and the segment.
        #expect(daemon.log.contains("talk interrupted by chime (reason default)"), "\(daemon.log)")
        let files = archiveFiles(daemon.directory + "/archive").filter { $0.contains("talk") && $0.hasSuffix(".flac") }
        let file = try #require(files.last, "\(files)")
        #expect(try metaflacTag(file, "END_REASON") == "interruption")
        #expect(try metaflacTag(file, "INTERRUPTED_BY") == "chime")
    }

    @Test("the preference survives a restart of recd (state.json), and a bad value is a usage error")
    func preferencePersists() throws {
        let daemon = try Daemon()
        try #require(
            daemon.recctl("session", "set", "talk", "--category", "playback", "--prefers-no-system-alerts", "on").status == 0)
        let bad = try daemon.recctl("session", "prefer", "talk", "--prefers-no-system-alerts", "maybe")
        #expect(bad.status == 2, "\(bad.stderr)")
        #expect(bad.stderr.contains("--prefers-no-system-alerts must be on or off"), "\(bad.stderr)")
        try daemon.restart()
        let session = try #require(daemon.recctl("--json", "session", "show", "talk").json)
        #expect(session["prefersNoInterruptionsFromSystemAlerts"] == true, "\(session.jsonText)")
    }
}

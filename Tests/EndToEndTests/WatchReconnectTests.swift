// `recctl watch` across recd's restarts, on the real daemon: a recd stopped with SIGTERM first
// sends the watchers the last events of its stop (each recording's `finished` segment), then
// closes; `recctl watch` says it lost recd, tries again until recd is back, says so, and tells
// what changed meanwhile — the watched sessions and recorders as they are now, and the segments
// that finished while it was away. A recd killed with SIGKILL sends nothing: the watcher learns
// of the segment recovered from what was left.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("recctl watch across restarts", .serialized)
struct WatchReconnectTests {
    /// A logger that records from recd's start (declared), 2 s segments.
    static let logger = """

        [session logger]
        category = record
        mic_usage = archive
        permission = granted
        record = mic

        """

    /// The finished segments of `logger` in the index, as recd lists them.
    static func finishedSegments(_ daemon: Daemon) throws -> [JSONValue] {
        let listed = try daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue ?? []
        return listed.filter { $0["state"] == "finished" }
    }

    @Test(
        "SIGTERM: the watcher gets the stop's finished segments, a lost line, and after the restart a reconnected line with the sessions, recorders and segments finished while it was away"
    )
    func restart() throws {
        let daemon = try Daemon(extraConfig: Self.logger, archiveSegmentSeconds: 2)
        let watcher = try daemon.watch("logger")
        #expect(watcher.waitFor(timeout: 10) { $0["event"] == "recording" && $0["state"] == "segment" }.count > 0)
        // The watcher sleeps through the restart: what the new recd finishes meanwhile it can
        // only learn from the report.
        kill(watcher.process.processIdentifier, SIGSTOP)
        let stoppedAt = Date()
        try daemon.restart()
        var restartedSegment: String?
        #expect(
            try eventually(timeout: 15) {
                restartedSegment = try Self.finishedSegments(daemon).first {
                    ($0["start"]?.stringValue ?? "") > TimeArgumentText.wire(stoppedAt)
                }?["path"]?.stringValue
                return restartedSegment != nil
            }, "no segment of the restarted recd finished")
        kill(watcher.process.processIdentifier, SIGCONT)
        let lines = watcher.waitFor(timeout: 20) { $0["event"] == "watch" && $0["state"] == "reconnected" }
        let lost = try #require(lines.firstIndex { $0["event"] == "watch" && $0["state"] == "lost" }, "\(lines)")
        let back = try #require(lines.firstIndex { $0["event"] == "watch" && $0["state"] == "reconnected" }, "\(lines)")
        #expect(lost < back)
        // Every segment the stop ended reached the watcher before recd closed the connection.
        let stopped = try Self.finishedSegments(daemon).filter { $0["endReason"] == "stop" }
        #expect(!stopped.isEmpty)
        let finishedBeforeLoss = Set(
            lines[..<lost].filter { $0["event"] == "recording" && $0["state"] == "finished" }.compactMap {
                $0["file"]?.stringValue
            })
        for segment in stopped {
            #expect(finishedBeforeLoss.contains(segment["path"]?.stringValue ?? ""), "\(segment.jsonText) not told")
        }
        #expect(lines[..<lost].contains { $0["event"] == "recording" && $0["state"] == "stopped" })
        // The report: the session and its recorder as they are now, the segment finished while away.
        let report = lines[back]
        #expect(report["sessions"]?.arrayValue?.contains { $0["app"] == "logger" && $0["state"] == "active" } == true)
        #expect(report["recorders"]?.arrayValue?.contains { $0["app"] == "logger" && $0["stream"] == "mic" } == true)
        let reported = (report["segments"]?.arrayValue ?? []).compactMap { $0["path"]?.stringValue }
        #expect(reported.contains(restartedSegment ?? "?"), "\(report.jsonText)")
        // Nothing told twice: a segment is in the report or in a live event, not in both.
        let live = lines.filter { $0["event"] == "recording" && $0["state"] == "finished" }.compactMap {
            $0["file"]?.stringValue
        }
        #expect(Set(reported).isDisjoint(with: live), "reported \(reported), live \(live)")
        #expect(watcher.process.isRunning)
    }

    @Test(
        "SIGKILL: the watcher, in words and in JSON, says it lost recd and that it is back, with the segment recovered from what the killed recd left"
    )
    func crash() throws {
        let daemon = try Daemon(extraConfig: Self.logger, archiveSegmentSeconds: 2)
        let watcher = try daemon.watch("logger")
        let words = try daemon.watchInWords("logger")
        // Killed once a segment the watchers saw begin holds a second of flushed audio: what
        // recovery keeps of it is then audio from after the watches began.
        let watching = TimeArgumentText.wire(Date())
        #expect(
            try eventually(timeout: 10) {
                let listed = try daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue ?? []
                return listed.contains {
                    $0["state"] == "open" && ($0["start"]?.stringValue ?? "") > watching
                        && ($0["seconds"]?.doubleValue ?? 0) >= 1
                }
            })
        let pid = try #require(daemon.pid)
        kill(pid, SIGKILL)
        daemon.process?.waitUntilExit()
        try daemon.start()
        let lines = watcher.waitFor(timeout: 20) { $0["event"] == "watch" && $0["state"] == "reconnected" }
        let report = try #require(lines.last { $0["event"] == "watch" && $0["state"] == "reconnected" }, "\(lines)")
        #expect(lines.contains { $0["event"] == "watch" && $0["state"] == "lost" })
        #expect(report["pid"]?.intValue == daemon.pid.map(Int.init))
        let recovered = (report["segments"]?.arrayValue ?? []).filter { $0["recovered"] == true }
        #expect(!recovered.isEmpty, "\(report.jsonText)")
        #expect(
            try eventually(timeout: 10) {
                let texts = words.texts
                return texts.contains { $0.hasPrefix("recctl: lost recd at ") }
                    && texts.contains { $0.hasPrefix("recctl: recd is back after ") }
                    && texts.contains { $0.contains("segment finished") && $0.contains("crash") }
            }, "\(words.texts)")
        #expect(watcher.process.isRunning && words.process.isRunning)
    }
}

/// ISO 8601 UTC with milliseconds, as recd's segment starts compare.
enum TimeArgumentText {
    static func wire(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}

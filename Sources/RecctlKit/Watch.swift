// `recctl watch [APP]`: recd's events, one a line, for as long as recctl runs. When recd goes
// away (a restart, a crash) recctl says so and tries again, a little later each time; once recd
// is back it says so and what changed while it was away: the watched sessions and recorders as
// they are now, and the segments that finished meanwhile (docs/protocol.md, "recctl watch
// across restarts"). Its own lines are `watch` lines in --json, never an event recd sends.
// Threads: the main thread only.
import ControlClient
import ControlProtocol
import Foundation
import Platform

/// One `recctl watch`, across recd's restarts.
struct Watch {
    let candidates: [String]
    let app: String?
    let output: Output

    /// Pauses between tries to reach recd again: from `firstPause`, doubling, at most `longestPause`.
    static let firstPause = 0.1
    static let longestPause = 2.0
    /// The report after a reconnection lists segments with audio after the loss less this much: a
    /// segment recovered after a crash ends up to a flush interval before recd went away.
    static let reportMargin = 5.0
    /// At most this many finished segments are remembered as told (the oldest forgotten first).
    static let toldCapacity = 4096

    /// When the first watch began: segments that ended before it are none of the report's.
    private var watchingSince = Date()
    /// Segments whose `finished` event was printed: the report does not tell them again.
    private var told: [String] = []
    private var toldSet: Set<String> = []

    init(candidates: [String], app: String?, output: Output) {
        self.candidates = candidates
        self.app = app
        self.output = output
    }

    /// Watches until recctl is stopped; 1 when recd refuses the watch.
    mutating func run(first: Connection) throws -> Int32 {
        var connection = first
        var early: [JSONValue] = []
        watchingSince = Date()
        let reply = try connection.call(.watch(app: app), onEvent: { early.append($0) })
        if let error = Wire.error(from: reply), reply["ok"]?.boolValue != true {
            output.failure(error)
            return 1
        }
        // From here on no event of the watched sessions is missed: a script that starts a
        // watch and then acts waits for this line.
        output.watchLine(
            ["event": "watch", "state": "watching", "app": JSONValue(app)],
            text: "recctl: watching \(app.map { "\($0)'s" } ?? "every session's") events")
        for event in early { show(event) }
        while true {
            let reason = follow(connection)
            let lostAt = Date()
            announceLost(at: lostAt, reason: reason)
            while true {
                let (again, events) = reconnect()
                connection = again
                do {
                    let later = try report(on: connection, lostAt: lostAt)
                    for event in events + later { show(event) }
                    break
                } catch {
                    continue  // gone again before the report: try on
                }
            }
        }
    }

    /// Prints events until the connection fails; returns why it did.
    private mutating func follow(_ connection: Connection) -> String {
        while true {
            do {
                let message = try connection.readMessage(timeout: nil)
                if message["event"] != nil { show(message) }
            } catch ClientFailure.io(let message) {
                return message
            } catch {
                return "\(error)"
            }
        }
    }

    /// Prints one of recd's events and remembers the segments it says finished.
    private mutating func show(_ event: JSONValue) {
        output.event(event)
        guard case .recording(let recording) = try? Event(json: event), recording.state == .finished,
            let file = recording.file
        else { return }
        told.append(file)
        toldSet.insert(file)
        if told.count > Self.toldCapacity { toldSet.remove(told.removeFirst()) }
    }

    /// A new connection watching again, and the events that came with the watch's reply; tries
    /// until recd answers (a refusal of the watch itself ends recctl).
    private func reconnect() -> (Connection, [JSONValue]) {
        var pause = Self.firstPause
        while true {
            SystemClock.sleep(seconds: pause)
            pause = min(pause * 2, Self.longestPause)
            guard let connection = try? Connection(candidates: candidates, interface: .recctl) else { continue }
            var early: [JSONValue] = []
            guard let reply = try? connection.call(.watch(app: app), timeout: 10, onEvent: { early.append($0) })
            else { continue }
            if let error = Wire.error(from: reply), reply["ok"]?.boolValue != true {
                output.failure(error)
                exit(1)
            }
            return (connection, early)
        }
    }

    private func announceLost(at time: Date, reason: String) {
        let since = TimeArgument.wire(time)
        output.watchLine(
            ["event": "watch", "state": "lost", "since": .string(since), "reason": .string(reason)],
            text: "recctl: lost recd at \(Output.timeOfDay(since)): \(reason); trying again")
    }

    /// After a reconnection: that recd is back, and what changed while it was away. Events that
    /// come meanwhile wait for the report: returned, for the caller to print after it.
    private func report(on connection: Connection, lostAt: Date) throws -> [JSONValue] {
        var later: [JSONValue] = []
        let status = try connection.call(.status, onEvent: { later.append($0) })
        let since = TimeArgument.wire(
            max(watchingSince, lostAt.addingTimeInterval(-Self.reportMargin)), microseconds: true)
        let first = try connection.call(.archiveList(app: app, since: since), onEvent: { later.append($0) })
        let listed = try Recctl.allPages(connection, first: first, key: "segments") {
            .archiveList(app: app, since: since, offset: $0)
        }
        let mine = { (item: JSONValue) in app == nil || item["app"]?.stringValue == app }
        let sessions = (status["sessions"]?.arrayValue ?? []).filter(mine)
        let recorders = (status["recorders"]?.arrayValue ?? []).filter(mine)
        let waiting = (status["waiting"]?.arrayValue ?? []).filter(mine)
        let segments = (listed["segments"]?.arrayValue ?? []).filter { segment in
            segment["state"]?.stringValue != "open" && !toldSet.contains(segment["path"]?.stringValue ?? "")
        }
        let seconds = (Date().timeIntervalSince(lostAt) * 10).rounded() / 10
        let pid = status["daemon"]?["pid"] ?? .null
        let line: JSONValue = [
            "event": "watch", "state": "reconnected", "since": .string(TimeArgument.wire(lostAt)),
            "seconds": .number(seconds), "pid": pid, "sessions": .array(sessions), "recorders": .array(recorders),
            "waiting": .array(waiting), "segments": .array(segments),
        ]
        var lines = [
            "recctl: recd is back after \(Readable.duration(seconds)) (pid \(pid.intValue.map(String.init) ?? "unknown")); "
                + "while it was away:"
        ]
        lines += sessions.compactMap { try? SessionInfo(json: $0) }.map {
            "  \($0.app): session \($0.state)" + ($0.interruption.map(Output.interruptionText) ?? "")
        }
        lines += recorders.compactMap { try? RecorderInfo(json: $0) }.map(Self.recorderLine)
        lines += waiting.compactMap { try? WaitingRecorderInfo(json: $0) }.map { "  " + Output.waitingLine($0) }
        let finished = segments.compactMap { try? SegmentInfo(json: $0) }
        lines += finished.isEmpty ? ["  no segment finished"] : finished.map(Self.segmentLine)
        output.watchLine(line, text: lines.joined(separator: "\n"))
        return later
    }

    /// `  logger: recording mic from mic, /var/lib/recd/archive/....flac.partial`
    static func recorderLine(_ r: RecorderInfo) -> String {
        "  \(r.app): recording \(r.stream) from \(r.port ?? "unknown")"
            + (r.files.isEmpty ? "" : ", " + r.files.joined(separator: ", "))
    }

    /// `  logger/mic: segment finished /var/lib/recd/archive/....flac (2 s, rotation)`
    static func segmentLine(_ s: SegmentInfo) -> String {
        "  \(s.app)/\(s.stream): segment finished \(s.path) (\(known(s.seconds, Readable.duration))"
            + (s.endReason.map { ", \($0)" } ?? "") + (s.recovered && s.endReason != "crash" ? ", recovered" : "") + ")"
    }
}

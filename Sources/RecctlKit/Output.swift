// recctl's output: people get aligned text, scripts get --json (SPEC §12 shapes). Numbers in
// the text are written as a person writes them (`Readable`: "11.7 ms", "2 chains", "16.54 s
// [793882]"); JSON keeps recd's exact numbers. A value a reply lacks (an optional key, from a
// recd older or newer than this recctl) is shown as `unknown`.
import ControlProtocol
import Foundation
import Platform
import SessionPolicy

struct Output {
    var json: Bool
    /// Standard output carries data (`archive export -o -`): everything else goes to stderr.
    var toStandardError = false

    private func emit(_ text: String) {
        if toStandardError { printError(text + "\n") } else { print(text) }
    }

    func failure(_ error: SessionError) {
        if json {
            emit(JSONValue.object([("error", Wire.errorObject(error, for: .recctl))]).jsonText)
        }
        printError("error: \(error.code.name) (\(error.code.rawValue)): \(error.message)\n")
    }

    /// The reply without `id` and `ok`; a single payload field stands for itself.
    static func payload(_ reply: JSONValue) -> JSONValue {
        let fields = (reply.objectValue ?? []).filter { $0.0 != "id" && $0.0 != "ok" }
        if fields.count == 1 { return fields[0].1 }
        return .object(fields)
    }

    /// Prints a successful reply; throws when its shape is not what this recctl knows.
    func success(command: ParsedCommand, reply: JSONValue) throws(ReplyDecodingError) {
        let payload = Self.payload(reply)
        if json {
            emit(payload.jsonText)
            return
        }
        switch command.spec.path {
        case ["status"]: print(Self.status(try StatusInfo(json: reply)))
        case ["session", "list"]:
            let sessions = try SessionInfo.list(reply: reply, key: "sessions")
            if sessions.isEmpty {
                print("no sessions")
            } else {
                print(
                    Self.table(
                        header: ["APP", "CATEGORY", "MODE", "STATE", "PERMISSION", "ROUTE"],
                        rows: sessions.map(Self.sessionRow)))
            }
        case ["permission", "list"]:
            let items = try PermissionInfo.list(reply: reply, key: "permissions")
            print(
                items.isEmpty
                    ? "no applications"
                    : Self.table(header: ["APP", "PERMISSION"], rows: items.map { [$0.app, $0.state] }))
        case ["permission", "request"], ["permission", "grant"], ["permission", "deny"], ["permission", "reset"]:
            let permission = try PermissionInfo(json: reply)
            print("\(permission.app): record permission \(permission.state)")
        case ["mute"]:
            let mute = try MuteInfo(json: reply)
            print("\(mute.app): input \(mute.muted ? "muted" : "unmuted")")
        case ["cue"]:
            let m = try MonitoringInfo(reply: reply, key: "monitoring")
            print(
                "\(m.app ?? "-"): main -> \(m.main ?? "(none)"), cue -> \(m.cue ?? "(none)"), "
                    + "mix \(JSONValue.format(m.mix)), split \(m.split ? "on" : "off")")
            for source in m.sources {
                print("  \(source.name) (\(source.kind)): \(source.bus) at \(JSONValue.format(source.gainDB)) dB")
            }
        case ["meter"]:
            let meters = try MetersInfo(json: reply)
            print((Self.meterBars(meters.meters) + Self.loudnessLines(meters.recordings)).joined(separator: "\n"))
        case ["routes"]:
            let routes = try RoutesInfo(json: reply)
            print(
                Self.table(
                    header: ["PORT", "TYPE", "DIRECTION", "CH", "AVAILABLE", "FROM", "JACK"],
                    rows: routes.ports.map {
                        [
                            $0.name, $0.type ?? "unknown", $0.direction ?? "unknown", known($0.channels) { "\($0)" },
                            $0.available ? "yes" : "no",
                            Self.originText($0.origins), $0.jack.joined(separator: ", "),
                        ]
                    }))
            if !routes.sessions.isEmpty {
                print("")
                print(
                    Self.table(
                        header: ["APP", "STATE", "ROUTE"],
                        rows: routes.sessions.map { [$0.app, $0.state, Self.routeText($0.route)] }))
            }
        case ["play"], ["pause"], ["stop"]:
            let list: [PlayerInfo] =
                if reply["player"] != nil {
                    [try PlayerInfo(reply: reply, key: "player")]
                } else {
                    reply["players"] == nil ? [] : try PlayerInfo.list(reply: reply, key: "players")
                }
            for player in list { print(Self.playerLine(player)) }
            if list.isEmpty { print("no players") }
        case ["record", "start"], ["record", "stop"]:
            if let armed = reply["armed"] {
                let level = armed["triggerDB"]?.doubleValue.map { JSONValue.format($0) + " dBFS" } ?? "unknown"
                let hold = armed["holdSeconds"]?.doubleValue.map(Readable.duration) ?? "unknown"
                print("\(armed["app"]?.stringValue ?? "unknown"): armed at \(level), hold \(hold)")
            }
            if reply["disarmed"] == true { print("disarmed") }
            let list: [RecorderInfo] =
                if reply["recorder"] != nil {
                    [try RecorderInfo(reply: reply, key: "recorder")]
                } else {
                    reply["recorders"] == nil ? [] : try RecorderInfo.list(reply: reply, key: "recorders")
                }
            let verb = command.spec.path == ["record", "start"] ? "recording" : "stopped"
            for r in list {
                print(
                    "\(r.app): \(verb) \(r.port ?? "unknown") as \(r.stream) (\(r.bandwidth ?? "unknown"), "
                        + "\(known(r.sampleRate) { "\($0) Hz" }))")
            }
        case ["archive", "list"]:
            let segments = try SegmentInfo.list(reply: reply, key: "segments")
            print(
                segments.isEmpty
                    ? "no segments"
                    : Self.table(
                        header: ["START (UTC)", "APP", "STREAM", "LENGTH", "RATE", "CH", "END", "PATH"],
                        rows: segments.map {
                            [
                                $0.start, $0.app, $0.stream, known($0.seconds, Readable.duration),
                                known($0.sampleRate) { "\($0)" }, known($0.channels) { "\($0)" },
                                $0.state == "open" ? "open" : $0.endReason ?? "", $0.path,
                            ]
                        }))
        case ["archive", "verify"]:
            for r in try VerifyInfo(json: reply).results {
                let frames = known(r.frames) { Readable.count($0, "frame") }
                print("\(r.ok ? "ok  " : "FAIL") \(r.path) (\(r.outcome ?? "unknown"), \(frames))")
            }
        case ["archive", "export"]:
            emit(Self.exportLine(try ExportInfo(json: reply)))
        case ["archive", "reindex"]:
            let info = try ReindexInfo(json: reply)
            print("indexed \(Readable.count(info.indexed, "segment"))")
            for path in info.skipped { print("skipped (unreadable, or not a segment recd wrote): \(path)") }
        case ["session", "remove"]:
            print("removed \(command.positionals[0])")
        case ["session", "delete"]:
            print("deleted \(command.positionals[0])")
        default:
            if reply["session"] != nil {
                print(Self.session(try SessionInfo(reply: reply, key: "session")))
            } else {
                print("ok")
            }
        }
    }

    func event(_ event: JSONValue) {
        if json {
            print(event.jsonText)
        } else {
            print(Self.describe(event: event))
        }
        fflush(nil)
    }

    /// One of `recctl watch`'s own lines (recd lost, recd back): the object in --json, the words
    /// otherwise.
    func watchLine(_ line: JSONValue, text: String) {
        print(json ? line.jsonText : text)
        fflush(nil)
    }

    /// One line for an event `recctl watch` received. An event this recctl does not know, or
    /// cannot read, is shown as its name and its fields as they came.
    static func describe(event message: JSONValue) -> String {
        let event = (try? Event(json: message)) ?? .unknown(name: message["event"]?.stringValue ?? "?", message)
        let app = event.app.map { "\($0): " } ?? ""
        switch event {
        case .interruption(_, let type, let reason, let shouldResume, let by):
            return "\(app)interruption \(type.name) (reason \(reason.name)\(by.map { ", by \($0)" } ?? ""))"
                + (shouldResume ? " shouldResume" : "")
        case .routeChange(let change):
            return "\(app)route change (\(change.reason.name)): \(routeText(change.previousRoute)) -> "
                + routeText(change.route)
        case .ducked(_, let by, let levelDB):
            return "\(app)ducked by \(by) to \(JSONValue.format(levelDB)) dB"
        case .unducked: return "\(app)unducked"
        case .inputMuteStateChange(_, let muted): return "\(app)input \(muted ? "muted" : "unmuted")"
        case .permission(_, let state): return "\(app)record permission \(state.rawValue)"
        case .session(_, let state): return "\(app)session \(state.rawValue)"
        case .sessionDeleted: return "\(app)session deleted"
        case .recording(let recording):
            return app + recordingText(recording)
        case .silence(let silence):
            let seconds = known(silence.seconds, Readable.duration)
            let level = known(silence.levelDB) { JSONValue.format($0) + " dBFS" }
            let since = silence.since ?? "unknown"
            return silence.state == .began
                ? "\(app)SILENCE on \(silence.stream) since \(since) (\(seconds), peak \(level))"
                : "\(app)sound again on \(silence.stream) since \(since) after \(seconds) of silence (peak \(level))"
        case .player(let player):
            let reason = player.reason.map { " (\($0))" } ?? ""
            return "\(app)player \(player.stream) \(player.state.rawValue)\(reason)"
        case .health(let health):
            return "health " + health.line
        case .silenceSecondaryAudioHint, .attachmentDetached, .mediaServicesWereLost, .mediaServicesWereReset,
            .unknown:
            let rest = (message.objectValue ?? []).filter { $0.0 != "event" && $0.0 != "app" }.map {
                "\($0.0)=\($0.1.stringValue ?? $0.1.jsonText)"
            }
            return "\(app)\(event.name)" + (rest.isEmpty ? "" : " " + rest.joined(separator: " "))
        }
    }

    /// A `recording` event in words: `recording mic segment FILE`, `recording mic finished FILE
    /// (rotation)`, `recording mic gap (clockStall) of 2.1 s [100800] at 16.54 s [793882] of the
    /// recording, in FILE`, `recording mic stalled FILE: no frames since T`, `recording mic resumed
    /// FILE: frames come again after a stall from T`, `recording mic stopped (diskFull); resumes
    /// when ...`.
    static func recordingText(_ recording: RecordingEvent) -> String {
        let head = "recording \(recording.stream ?? "unknown") \(recording.state.rawValue)"
        let file = recording.file.map { " \($0)" } ?? ""
        let reason = recording.reason.map { " (\($0))" } ?? ""
        let since = recording.since ?? "unknown"
        switch recording.state {
        case .gap:
            let rate = recording.sampleRate
            let length = known(recording.length) { Readable.length(frames: $0, sampleRate: rate) }
            let position = known(recording.position) { Readable.position(frames: $0, sampleRate: rate) }
            return head + reason + " of \(length) at \(position) of the recording"
                + (recording.file.map { ", in \($0)" } ?? "")
        case .stalled:
            return head + file + ": no frames since \(since)"
        case .resumed where recording.reason == RecordingEvent.State.stalled.rawValue:
            return head + file + ": frames come again after a stall from \(since)"
        case .resumed:
            return head + file + reason + (recording.since.map { "; it had stopped at \($0)" } ?? "")
        default:
            // A stream that starts again by itself says when.
            return head + file + reason + (recording.resumesWhen.map { "; resumes when \($0)" } ?? "")
        }
    }

    /// Where a port's audio comes from: `local`, `netjack2 peer NAME`, `RTP stream NAME@ADDRESS`,
    /// several joined when its JACK ports differ; `-` while none of them exists.
    static func originText(_ origins: [PortOriginInfo]) -> String {
        var texts: [String] = []
        for text in origins.map(\.text) where !texts.contains(text) { texts.append(text) }
        return texts.isEmpty ? "-" : texts.joined(separator: ", ")
    }

    static func routeText(_ route: RouteInfo) -> String {
        if route.inputs.isEmpty && route.outputs.isEmpty { return "(none)" }
        return "in [\(route.inputs.joined(separator: ", "))] out [\(route.outputs.joined(separator: ", "))]"
    }

    static func sessionRow(_ session: SessionInfo) -> [String] {
        [
            session.app, session.category, session.mode, session.state, session.recordPermission ?? "unknown",
            routeText(session.route),
        ]
    }

    /// ` by voice since 10:42:03Z (reason default)`: who interrupted a session and since when,
    /// after its state.
    static func interruptionText(_ i: SessionInfo.Interruption) -> String {
        (i.by.map { " by \($0)" } ?? "") + (i.since.map { " since \(timeOfDay($0))" } ?? "") + " (reason \(i.reason))"
    }

    /// `10:42:03Z` of an ISO 8601 UTC time (the whole text if it is not one).
    static func timeOfDay(_ iso: String) -> String {
        iso.split(separator: "T").last.map { String($0.prefix(8)) + "Z" } ?? iso
    }

    static func session(_ s: SessionInfo) -> String {
        var lines = [
            "\(s.app): \(s.category) / \(s.mode)",
            "  state:       \(s.state)" + (s.interruption.map(interruptionText) ?? ""),
            "  options:     \(s.options.isEmpty ? "(none)" : s.options.joined(separator: ", "))",
            "  policy:      \(s.policy ?? "unknown")   priority: \(s.priority ?? "unknown")",
            "  route:       \(routeText(s.route))",
            "  permission:  \(s.recordPermission ?? "unknown")   input muted: \(s.inputMuted ? "yes" : "no")",
        ]
        if let by = s.duckedBy { lines.append("  ducked by:   \(by)") }
        if s.isOtherAudioPlaying {
            let hint = s.secondaryAudioShouldBeSilencedHint ? " (primary audio: silence secondary audio)" : ""
            lines.append("  other audio: playing\(hint)")
        }
        if !s.availableInputs.isEmpty {
            let inputs = s.availableInputs.map { "\($0.name) (\($0.type), \(Readable.count($0.channels, "channel")))" }
            lines.append("  inputs:      \(inputs.joined(separator: ", "))")
        }
        for ignored in s.ignoredOptions {
            lines.append("  ignored:     \(ignored.option) \(ignored.why)")
        }
        if let usage = s.micUsage { lines.append("  mic usage:   \(usage)") }
        return lines.joined(separator: "\n")
    }

    static func playerLine(_ p: PlayerInfo) -> String {
        "\(p.app): \(p.stream) \(p.state) \(p.file ?? "unknown") on \(p.port ?? "unknown")"
    }

    /// `archive export`'s line: `/tmp/clip.flac: radio/mic START to END, 5 min [14400000 frames] at
    /// 48000 Hz, 2 channels, from 2 segments; silent gaps at 0.25 s [12000] for 100 ms [4800]`.
    static func exportLine(_ clip: ExportInfo) -> String {
        let rate = clip.sampleRate
        let length = rate.map { Readable.duration(Double(clip.frames) / Double(max($0, 1))) } ?? "unknown length"
        let clamped =
            clip.requestedEnd.map { "; ends at \(clip.end), not \($0): the recording has written no more yet" } ?? ""
        return "\(clip.file == "-" ? "standard output" : clip.file): \(clip.app ?? "unknown")/"
            + "\(clip.stream ?? "unknown") \(clip.start) to \(clip.end), \(length) [\(Readable.count(clip.frames, "frame"))] "
            + "at \(known(rate) { "\($0) Hz" }), \(known(clip.channels) { Readable.count($0, "channel") }), "
            + "from \(Readable.count(clip.segments.count, "segment"))" + gapsText(clip.gaps, sampleRate: rate) + clamped
    }

    /// The clip's GAPS (`pos+len,...` in clip frames) in words: `; silent gaps at 0.25 s [12000]
    /// for 100 ms [4800], ...`; the first ten, then how many more. Text recd sent that is not
    /// that form is shown as it came.
    static func gapsText(_ gaps: String?, sampleRate: Int?) -> String {
        guard let gaps else { return "; silent gaps unknown" }
        guard !gaps.isEmpty else { return "" }
        var spans: [String] = []
        for item in gaps.split(separator: ",") {
            let parts = item.split(separator: "+")
            guard parts.count == 2, let position = Int(parts[0]), let length = Int(parts[1]) else {
                return "; silent gaps \(gaps)"
            }
            spans.append(
                "at \(Readable.position(frames: position, sampleRate: sampleRate)) for "
                    + Readable.length(frames: length, sampleRate: sampleRate))
        }
        let shown = spans.prefix(10).joined(separator: ", ")
        return "; silent \(spans.count == 1 ? "gap" : "gaps") " + shown
            + (spans.count > 10 ? " and \(Readable.count(spans.count - 10, "more", "more"))" : "")
    }

    static func status(_ status: StatusInfo) -> String {
        let daemon = status.daemon
        let jack = status.jack
        let active = status.active.count
        var jackLine = "JACK:     "
        if jack.connected {
            // PipeWire's JACK never calls the xrun callback: its count says nothing.
            let onPipeWire = jack.implementation == "pipewire"
            jackLine +=
                "\(jack.client ?? "recd") on \(jack.server ?? "default")\(onPipeWire ? " (PipeWire)" : ""), "
                + "\(known(jack.sampleRate) { "\($0) Hz" }), \(known(jack.bufferSize) { Readable.count($0, "frame") }), "
                + (onPipeWire ? "xruns not reported" : known(jack.xruns) { Readable.count($0, "xrun") })
            if let stalled = jack.stalledSince { jackLine += "; STALLED: no process cycle since \(stalled)" }
        } else {
            jackLine +=
                "not connected" + (jack.error.map { " (\($0))" } ?? "") + "; sessions cannot activate until it is back"
        }
        // The health comes first: the one line to read when all is not well.
        var lines = status.health.map { [$0.line] } ?? []
        lines += [
            "recd \(daemon.version) (protocol \(daemon.protocolVersion)), pid \(daemon.pid), "
                + "up \(known(daemon.uptime, Readable.duration))",
            "config:   \(daemon.config ?? "unknown")",
            "socket:   \(daemon.socket ?? "unknown")",
            jackLine,
        ]
        for connection in jack.churning {
            lines.append("  churning: \(connection) (something keeps undoing recd's change; recd leaves it alone)")
        }
        if let clock = status.clock { lines.append(clockLine(clock)) }
        var archiveLine = "archive:  \(status.archive.dir)"
        if let space = status.archive.space {
            archiveLine +=
                ", \(bytes(space.freeBytes)) free (\(known(space.freePercent) { JSONValue.format($0) + "%" }))"
            if let count = space.segments { archiveLine += ", \(Readable.count(count, "segment"))" }
        }
        lines.append(archiveLine)
        for alarm in status.archive.chainAlarms {
            lines.append(
                "  ALARM since \(alarm.since): \(alarm.detail); \(alarm.segmentsUnchained) segments of "
                    + "\(alarm.app)/\(alarm.stream) not chained (recording goes on)")
        }
        for partial in status.archive.unrecovered {
            lines.append(
                "  not recovered: \(partial.path) since \(partial.since): \(partial.error); tried again when "
                    + partial.resumesWhen)
        }
        if let replication = status.replication {
            var line = "replicate: \(replication.remote), \(Readable.count(replication.backlog, "segment")) waiting"
            if let last = replication.lastSuccess {
                line += ", last copy \(Readable.duration(max(0, (Double(time(nil)) - last).rounded()))) ago"
            } else {
                line += ", no copy since recd started"
            }
            lines.append(line)
            if let error = replication.lastError { lines.append("  last error: \(error)") }
        }
        if let stamps = status.timeStamps {
            var line = "time-stamps: \(stamps.urls.first ?? "-")"
            line += stamps.urls.count > 1 ? " (+\(stamps.urls.count - 1) more), " : ", "
            line += "\(Readable.count(stamps.backlog, "chain head")) waiting"
            if let oldest = stamps.oldestUnstampedSeconds {
                line += ", the oldest for \(Readable.duration(oldest.rounded()))"
            }
            if let last = stamps.lastSuccess {
                line += ", last stamp \(Readable.duration(max(0, (Double(time(nil)) - last).rounded()))) ago"
            } else {
                line += ", no stamp since recd started"
            }
            lines.append(line)
            if let error = stamps.lastError { lines.append("  last error: \(error)") }
        }
        if status.recorders.isEmpty {
            lines.append("recording: nothing")
        } else {
            lines.append("recording:")
            lines.append(
                indented(
                    table(
                        header: [
                            "APP", "STREAM", "INPUT", "BANDWIDTH", "FOR", "OVERRUNS", "GAPS", "SILENT", "FILE",
                        ],
                        rows: status.recorders.map {
                            [
                                $0.app, $0.stream, $0.port ?? "unknown",
                                "\($0.bandwidth ?? "unknown") \(known($0.sampleRate) { "\($0) Hz" })",
                                known($0.seconds, Readable.duration), known($0.overruns) { "\($0)" },
                                known($0.gaps) { "\($0)" },
                                alarmMark(stalledSince: $0.stalledSince, silentSince: $0.silentSince),
                                $0.files.joined(separator: ", "),
                            ]
                        })))
        }
        if !status.waiting.isEmpty {
            lines.append("not recording:")
            for waiting in status.waiting { lines.append("  " + waitingLine(waiting)) }
        }
        if !status.players.isEmpty {
            lines.append("playing:")
            for player in status.players { lines.append("  " + playerLine(player)) }
        }
        if !status.attachments.isEmpty {
            lines.append("attached:")
            for attachment in status.attachments { lines.append("  " + attachmentLine(attachment)) }
        }
        let shown =
            status.sessions.count < status.sessionCount
            ? "; \(status.sessions.count) shown, active first: `recctl session list` lists all" : ""
        lines.append("sessions: \(status.sessionCount) (\(active) active\(shown))")
        if !status.sessions.isEmpty {
            lines.append(
                indented(
                    table(
                        header: ["APP", "CATEGORY", "MODE", "STATE", "PERMISSION", "ROUTE"],
                        rows: status.sessions.map(sessionRow))))
        }
        return lines.joined(separator: "\n")
    }

    /// `clock:    synchronised, estimated error 12 µs, at most 1.5 ms; source: chrony: ...`; the
    /// source `pending` until recd's first asking has an answer.
    static func clockLine(_ clock: StatusInfo.Clock) -> String {
        let source: String
        switch clock.source {
        case nil, StatusInfo.Clock.sourceUnknown?: source = "; source: unknown"
        case StatusInfo.Clock.sourcePending?: source = "; source: not known yet (recd is asking chrony and timesyncd)"
        case let text?: source = "; source: \(text)"
        }
        let maximum = known(clock.maximumErrorSeconds, Readable.duration)
        return clock.synchronized
            ? "clock:    synchronised, estimated error \(known(clock.estimatedErrorSeconds, Readable.duration)), "
                + "at most \(maximum)\(source)"
            : "clock:    NOT synchronised (maximum error \(maximum)): segment times are a free-running clock's; "
                + "start chrony or systemd-timesyncd\(source)"
    }

    /// `voip: JACK client linphone plays out_1, out_2 (into recd:linphone-1-play_1, ...), captures in_1`:
    /// an application's own JACK client under a session (`session.attach`); a processed capture
    /// says so: `captures in_1 (voice, 45.3 ms later, 0 underruns)`.
    static func attachmentLine(_ a: AttachmentInfo) -> String {
        var parts: [String] = []
        if !a.playPorts.isEmpty { parts.append("plays " + a.playPorts.joined(separator: ", ")) }
        if !a.capturePorts.isEmpty {
            var capture = "captures " + a.capturePorts.joined(separator: ", ")
            if let processing = a.processing {
                let later = a.processingLatency.map { " \(Readable.duration($0)) later," } ?? ""
                capture += " (\(processing),\(later) \(known(a.underruns) { Readable.count($0, "underrun") }))"
            }
            parts.append(capture)
        }
        return "\(a.app): JACK client \(a.client) " + (parts.isEmpty ? "(no ports)" : parts.joined(separator: "; "))
    }

    /// `logger/mic: waiting (diskFull since 10:42:03Z; resumes when 512 MiB are free in /srv/archive
    /// (3.1 MiB now))`; a recorder that does not come back by itself is `stopped`, with what starts it.
    static func waitingLine(_ w: WaitingRecorderInfo) -> String {
        let time = w.since.map(timeOfDay) ?? "unknown"
        let state = w.resumesWhen == nil ? "stopped" : "waiting"
        var note = w.resumesWhen.map { "resumes when \($0)" } ?? ""
        if let detail = w.detail { note += (note.isEmpty ? "" : "; last try: ") + detail }
        // An interruption says by whom: `logger/mic: waiting (interrupted by voice since 10:42:03Z; ...)`.
        let why = w.reason == "interruption" ? w.by.map { "interrupted by \($0)" } ?? w.reason : w.reason
        return "\(w.app)/\(w.stream): \(state) (\(why) since \(time)\(note.isEmpty ? "" : "; " + note))"
    }

    /// `STALLED since 10:02:13Z` for a recorder whose source delivers no frames (it outranks
    /// silence: a stalled feed has no level to judge), else `silentMark`.
    static func alarmMark(stalledSince: String?, silentSince: String?) -> String {
        guard let stalledSince else { return silentMark(silentSince) }
        guard let time = stalledSince.split(separator: "T").last else { return "STALLED since \(stalledSince)" }
        return "STALLED since \(time.prefix(8))Z"
    }

    /// `SILENT since 10:02:13Z` for a silent recorder (the time of day of its ISO 8601
    /// `silentSince`), `-` otherwise.
    static func silentMark(_ since: String?) -> String {
        guard let since else { return "-" }
        guard let time = since.split(separator: "T").last else { return "SILENT since \(since)" }
        return "SILENT since \(time.prefix(8))Z"
    }

    private static func indented(_ text: String) -> String {
        text.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
    }

    /// One line per channel: name, a peak bar from -60 to 0 dBFS with the RMS marked, figures.
    static func meterBars(_ meters: [MeterInfo]) -> [String] {
        if meters.isEmpty { return ["no meters (is JACK running and does the session have a route?)"] }
        let width = 40
        let nameWidth = meters.map(\.name.count).max() ?? 4
        return meters.map { meter in
            let peak = meter.peakDB
            let rms = meter.rmsDB
            func column(_ db: Double) -> Int { max(0, min(width, Int(((db + 60) / 60 * Double(width)).rounded()))) }
            var bar = Array(repeating: Character(" "), count: width)
            for i in 0..<column(peak) { bar[i] = "=" }
            for i in 0..<column(rms) { bar[i] = "#" }
            let name = meter.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            return
                "\(name) [\(String(bar))] peak \(String(format: "%6.1f", peak)) dB  rms \(String(format: "%6.1f", rms)) dB"
        }
    }

    /// One line per recording stream: its momentary and short-term loudness (EBU R128).
    static func loudnessLines(_ recordings: [RecordingLoudnessInfo]) -> [String] {
        func lufs(_ value: Double?) -> String { value.map { String(format: "%6.1f LUFS", $0) } ?? "     - LUFS" }
        return recordings.map {
            "\($0.app)/\($0.stream): momentary \(lufs($0.momentaryLufs))  short-term \(lufs($0.shortTermLufs))"
        }
    }

    static func bytes(_ value: Double) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var v = value
        var unit = 0
        while v >= 1024 && unit < units.count - 1 { v /= 1024; unit += 1 }
        return String(format: unit == 0 ? "%.0f %@" : "%.1f %@", v, units[unit])
    }

    static func table(header: [String], rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

/// `value` as `text` writes it, or `unknown` when a reply did not carry it.
func known<T>(_ value: T?, _ text: (T) -> String) -> String { value.map(text) ?? "unknown" }

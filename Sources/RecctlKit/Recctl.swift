// recctl: one request per invocation (or a watch), human output or --json.
// Exit status: 0 ok, 1 the daemon refused (error: NAME (CODE): MESSAGE), 2 usage, 3 unreachable.
// Threads: the main thread only.
import ControlClient
import ControlProtocol
import SessionPolicy
import Foundation
import Platform

#if canImport(Glibc)
import Glibc
#endif

public enum Recctl {
    static let commands: [CommandSpec] = [
        CommandSpec(path: ["status"], positionals: [], summary: "daemon, JACK, sessions and recorders at a glance", readsState: true),
        CommandSpec(path: ["session", "list"], positionals: [], summary: "sessions with effective configuration and state", readsState: true),
        CommandSpec(path: ["session", "show"], positionals: ["APP"], summary: "one session in full", readsState: true),
        CommandSpec(
            path: ["session", "set"], positionals: ["APP"],
            valueFlags: [
                "category", "mode", "options", "policy", "mic-usage", "prefers-interruption",
                "prefers-no-system-alerts",
            ],
            summary: "configure category, mode, options, policy (atomic: a rejected call changes nothing)",
            requiredFlags: ["category"], listFlags: ["options"],
            accepts: [
                ("category", Category.allCases.map(\.rawValue).joined(separator: " ")),
                ("mode", Mode.allCases.map(\.rawValue).joined(separator: " ") + " (default: default)"),
                ("options", CategoryOption.allCases.map(\.rawValue).joined(separator: " ") + " (comma- or space-separated)"),
                ("policy", RouteSharingPolicy.allCases.map(\.rawValue).joined(separator: " ") + " (default: default)"),
                ("mic-usage", "text of at most 1024 bytes, why the app records (needed to record)"),
                ("prefers-interruption", "yes|no (on|off): interrupted, rather than paused, when its output goes away"),
                ("prefers-no-system-alerts", "yes|no (on|off): system-alert-class sessions do not interrupt it"),
            ]),
        CommandSpec(path: ["session", "activate"], positionals: ["APP"], summary: "activate (arbitration applies)"),
        CommandSpec(path: ["session", "deactivate"], positionals: ["APP"], boolFlags: ["notify-others", "force"], summary: "deactivate; --force stops running streams"),
        CommandSpec(
            path: ["session", "prefer"], positionals: ["APP"],
            valueFlags: [
                "input", "sample-rate", "io-buffer", "input-channels", "output-channels", "prefers-no-system-alerts",
                "echo-cancelled-input",
            ], boolFlags: ["clear"],
            summary:
                "hardware preferences (hints; actual values come from JACK) and prefersNoInterruptionsFromSystemAlerts",
            accepts: [
                ("input", "a port name, as `recctl routes` lists them"),
                ("sample-rate", "Hz, e.g. 48000"), ("io-buffer", "seconds, e.g. 0.005"),
                ("input-channels", "a count, e.g. 2"), ("output-channels", "a count, e.g. 2"),
                ("prefers-no-system-alerts", "yes|no (on|off)"),
                ("echo-cancelled-input", "yes|no (on|off): prefersEchoCancelledInput (playAndRecord)"),
            ]),
        CommandSpec(path: ["session", "override"], positionals: ["APP", "speaker|none"], summary: "override the output to the speaker until the next route change"),
        CommandSpec(
            path: ["session", "remove"], positionals: ["APP"],
            summary: "remove a session and its saved state (owner or administrator); its streams stop"),
        CommandSpec(path: ["session", "delete"], positionals: ["APP"], summary: "the same as session remove"),
        CommandSpec(
            path: ["session", "attach"], positionals: ["APP", "CLIENT"], valueFlags: ["play", "capture"],
            summary: "put an unmodified JACK program's ports under the session (recd routes, gates and ducks them); "
                + "recctl holds the attachment until the program's JACK client goes, or until recctl is stopped",
            listFlags: ["play", "capture"],
            accepts: [
                ("CLIENT", "the program's JACK client name (jack_lsp lists them)"),
                ("play", "the program's output ports, CLIENT:PORT, comma- or space-separated"),
                ("capture", "the program's input ports, CLIENT:PORT, comma- or space-separated"),
            ]),
        CommandSpec(path: ["session", "detach"], positionals: ["APP", "CLIENT"], summary: "end an attachment (session.detach)"),
        CommandSpec(path: ["permission", "list"], positionals: [], summary: "record permission of every application", readsState: true),
        CommandSpec(path: ["permission", "request"], positionals: ["APP"], summary: "ask for record permission; waits until an administrator decides"),
        CommandSpec(path: ["permission", "grant"], positionals: ["APP"], summary: "grant record permission (administrators)"),
        CommandSpec(path: ["permission", "deny"], positionals: ["APP"], summary: "deny record permission (administrators)"),
        CommandSpec(path: ["permission", "reset"], positionals: ["APP"], summary: "back to undetermined (administrators)"),
        CommandSpec(path: ["mute"], positionals: ["APP", "on|off"], summary: "app input mute: the session's inputs record zeros", accepts: [("on|off", "on, yes, true | off, no, false")]),
        CommandSpec(
            path: ["play"], positionals: ["APP"], optionalPositionals: ["FILE"], valueFlags: ["stream", "to"],
            summary: "play a FLAC or WAV file through the session's output (no FILE: resume)",
            accepts: [("to", "PORT or PORT:CH,CH... (the port's channels, from 1), e.g. pa:1,2")]),
        CommandSpec(path: ["pause"], positionals: ["APP"], valueFlags: ["stream"], summary: "pause the session's players"),
        CommandSpec(path: ["stop"], positionals: ["APP"], valueFlags: ["stream"], summary: "stop the session's players"),
        CommandSpec(
            path: ["record", "start"], positionals: ["APP"], valueFlags: ["stream", "input", "bus", "trigger", "hold"],
            summary: "record an input to the FLAC archive (needs record permission); --trigger DB [--hold S]: takes "
                + "that start when the level reaches DB",
            accepts: [
                ("input", "a port name, as `recctl routes` lists them (default: the session's input route)"),
                ("bus", "main|cue: a monitoring bus instead of an input"),
                ("trigger", "a level in dBFS, e.g. -30"), ("hold", "seconds, e.g. 2.5"),
            ]),
        CommandSpec(path: ["record", "stop"], positionals: ["APP"], valueFlags: ["stream"], summary: "stop recording and finish the segment"),
        CommandSpec(
            path: ["archive", "list"], positionals: [], valueFlags: ["app", "since"],
            summary: "archived segments (from the index)", readsState: true,
            accepts: [
                ("app", "an application's name: only its segments (default: all you may read)"),
                ("since", "only segments with audio after this time: " + TimeArgument.forms),
            ]),
        CommandSpec(path: ["archive", "verify"], positionals: [], optionalPositionals: ["PATH"], summary: "decode and check MD5 of one segment or all"),
        CommandSpec(path: ["archive", "reindex"], positionals: [], summary: "rebuild the index from the files alone (administrators)"),
        CommandSpec(
            path: ["archive", "key"], positionals: [], valueFlags: ["dir"],
            summary: "the public key the archive's hash chains are signed with (ed25519:HEX), read from the archive",
            accepts: [("dir", "the archive's root (default: recd's [archive] dir, asked of recd)")]),
        CommandSpec(
            path: ["archive", "prove"], positionals: [],
            valueFlags: ["app", "stream", "from", "to", "dir", "key", "clip", "heads"],
            summary: "check segments against their hash chains and the chains' signatures, as you, by reading the "
                + "archive; names what is missing, altered, renamed, unchained, unsigned, rolled back or unproven; "
                + "exit 0 only when all holds",
            accepts: [
                ("from", "segments that start at or after this time: " + TimeArgument.forms),
                ("to", "segments that start before this time, as --from"),
                ("dir", "the archive's root or a copy of it (default: recd's [archive] dir, asked of recd)"),
                ("key", "ed25519:HEX or a file holding it (default: the archive's own archive-key.pub)"),
                ("clip", "a clip exported with --proof: checks it against FILE.proof, needing only --key"),
                (
                    "heads",
                    "recd's record of the heads it signed (STATE_DIR/chain-heads, or a copy of it): chains cut short "
                        + "or put back are named (default: recd's own when the archive is asked of recd and you may "
                        + "read it)"
                ),
            ]),
        CommandSpec(
            path: ["archive", "export"], positionals: [], valueFlags: ["app", "stream", "from", "to", "output"],
            boolFlags: ["proof"],
            summary: "one stream from --from to --to as one file; sample-exact, gaps silent and listed in GAPS; only recordings "
                + "you may read; --proof also writes FILE.proof, the signed chain entries the clip was cut from",
            requiredFlags: ["app", "from", "output"],
            accepts: [
                ("from", "a time: " + TimeArgument.forms),
                ("to", "a time, as --from (default: now)"),
                ("output", "FILE.flac, FILE.wav, or - (FLAC on standard output)"),
                ("stream", "the stream's name (default: the app's only stream)"),
            ]),
        CommandSpec(
            path: ["cue"], positionals: ["APP"], optionalPositionals: ["outputs|assign|mix|split", "SOURCE|X|on|off"],
            valueFlags: ["main", "cue", "bus", "gain"],
            summary: "main/cue monitoring: outputs --main P --cue P; assign SOURCE --bus main|cue|both|none "
                + "[--gain DB]; mix X; split on|off",
            accepts: [
                ("bus", "main|cue|both|none"), ("gain", "dB, e.g. -6"),
                ("SOURCE|X|on|off", "mix X: 0 (main) to 1 (cue)"),
            ]),
        CommandSpec(path: ["meter"], positionals: [], optionalPositionals: ["APP"], boolFlags: ["once"], summary: "live peak/RMS in dBFS per channel (--once: one reading)", readsState: true),
        CommandSpec(path: ["routes"], positionals: [], summary: "ports (type, availability, where their audio comes from, JACK ports) and each session's route", readsState: true),
        CommandSpec(path: ["watch"], positionals: [], optionalPositionals: ["APP"], summary: "live events, one per line", readsState: true),
    ]

    static var overview: String {
        """
            usage: recctl [--socket PATH] [--json] COMMAND ...

            Controls recd, the recording daemon. --socket (or RECD_SOCKET) names the control socket;
            --json prints machine-readable JSON. Exit: 0 ok, 1 refused, 2 usage, 3 recd unreachable.


            """ + commands.indices.map { index in
                // A blank line before each group of commands (session, permission, ...).
                let startsGroup = index > 0 && commands[index - 1].path[0] != commands[index].path[0]
                return (startsGroup ? "\n" : "") + commands[index].help
            }.joined(separator: "\n")
    }

    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        // A parent may have left signals blocked; `recctl watch` must still stop on SIGTERM.
        var none = sigset_t()
        sigemptyset(&none)
        sigprocmask(SIG_SETMASK, &none, nil)
        let globals: GlobalOptions
        let words: [String]
        do {
            (globals, words) = try ArgumentParser.split(arguments)
        } catch let error as UsageError {
            return usageFailure(error)
        } catch {
            return 2
        }
        if words.isEmpty || words == ["help"] {
            print(overview)
            return globals.help || words == ["help"] ? 0 : 2
        }
        if globals.help || words.first == "help" {
            let topic = words.first == "help" ? Array(words.dropFirst()) : words
            let matching = commands.filter { Array(topic.prefix($0.path.count)) == $0.path || $0.path.starts(with: topic) }
            guard !matching.isEmpty else { return usageFailure(UsageError(message: "no command \(topic.joined(separator: " "))", usage: "recctl --help")) }
            for spec in matching { print(spec.help) }
            return 0
        }
        let command: ParsedCommand
        do {
            command = try ArgumentParser.parse(words, commands: commands)
        } catch let error as UsageError {
            return usageFailure(error)
        } catch {
            return 2
        }
        // Done here as the caller, by reading the archive: no request to recd.
        if command.spec.path == ["archive", "key"] || command.spec.path == ["archive", "prove"] {
            return ArchiveProofCommands.run(command, globals: globals, environment: environment)
        }
        let request: Command
        do {
            request = try buildRequest(command)
        } catch let error as UsageError {
            return usageFailure(error)
        } catch let error as SessionError {
            Output(json: globals.json).failure(error)
            return 1
        } catch {
            return 2
        }

        // recd never opens the file a play request names: `play FILE` opens it here, with the
        // caller's rights, and passes the open file with the request.
        var opened: [OwnedFile] = []
        if request.op == .play, command.positionals.count > 1 {
            do {
                opened = [try openForPlaying(command.positionals[1])]
            } catch {
                printError("error: \(error.message)\n")
                return 1
            }
        }
        // `archive export` opens its output here, as the caller: recd writes the clip into it.
        var createdOutput: String?
        var exportFailed = true
        var passingStandardOutput = false
        if case .archiveExport(let export) = request {
            if export.file == "-" {
                passingStandardOutput = true
            } else {
                do {
                    opened = [try OwnedFile(export.file, .createExclusive(permissions: 0o644))]
                    createdOutput = export.file
                } catch {
                    let hint = error.errno == .fileExists ? "; choose a new name, recctl does not overwrite files" : ""
                    printError("error: cannot create \(export.file): \(error.message)\(hint)\n")
                    return 1
                }
            }
        }
        // A clip that was not written leaves no file behind.
        defer { if let createdOutput, exportFailed { unlink(createdOutput) } }
        // Closed when `opened` goes, after the request is answered.
        let passing = opened.map(\.descriptor) + (passingStandardOutput ? [1] : [])

        let candidates = ControlSocket.candidates(globals.socket, environment: environment)
        let connection: Connection
        do {
            connection = try Connection(candidates: candidates, interface: .recctl)
        } catch {
            printError("error: cannot reach recd (looked at \(error.tried.joined(separator: ", "))): \(error.reason). Is recd running? Start it with scripts/run or `systemctl start recd`, or pass --socket PATH.\n")
            return 3
        }
        let output = Output(json: globals.json, toStandardError: passingStandardOutput)
        do {
            if case .watch(let app) = request {
                var watch = Watch(candidates: candidates, app: app, output: output)
                return try watch.run(first: connection)
            }
            if case .sessionAttach(let attach) = request {
                return try holdAttachment(connection, attach, output: output)
            }
            if request.op == .meter && !command.has("once") {
                return try liveMeters(connection, request, output: output)
            }
            // An export of days of audio may take minutes; recd answers once the file is complete.
            let timeout: Double? = request.op == .permissionRequest || request.op == .archiveExport ? nil : 30
            var reply = try connection.call(request, passing: passing, timeout: timeout)
            switch request {
            case .sessionList:
                reply = try allPages(connection, first: reply, key: "sessions") { .sessionList(offset: $0, limit: nil) }
            case .archiveList(let app, let since, _, _):
                reply = try allPages(connection, first: reply, key: "segments") {
                    .archiveList(app: app, since: since, offset: $0)
                }
            default: break
            }
            if let error = Wire.error(from: reply), reply["ok"]?.boolValue != true {
                output.failure(error)
                return 1
            }
            if case .archiveExport(let export) = request, export.proof {
                // Written here, as the caller, beside the clip; a clip without its proof is a failure.
                guard let proof = reply["proof"]?.stringValue else {
                    printError("error: recd sent no proof for \(export.file)\n")
                    return 1
                }
                do {
                    let file = try OwnedFile(export.file + ".proof", .createExclusive(permissions: 0o644))
                    try file.writeAll(Array(proof.utf8), at: 0)
                } catch {
                    printError("error: cannot write \(export.file).proof: \(error.message)\n")
                    return 1
                }
            }
            exportFailed = false
            try output.success(command: command, reply: reply)
            // A verification that found damage is a failure for scripts.
            return reply["allOK"]?.boolValue == false ? 1 : 0
        } catch let error as ReplyDecodingError {
            printError("error: recd sent a reply this recctl does not understand: \(error.message)\n")
            return 1
        } catch ClientFailure.io(let message), ClientFailure.timedOut(let message) {
            printError("error: \(message)\n")
            return 3
        } catch {
            printError("error: \(error)\n")
            return 1
        }
    }

    /// `session list` and `archive list` show everything: recd answers a page at a time
    /// (`next`: the offset of the following page, null on the last), so the pages after
    /// `first` are asked for with `request(offset)` and their `key` lists joined into one reply
    /// of that list only, as before paging (`--json` prints the list).
    static func allPages(
        _ connection: Connection, first: JSONValue, key: String, request: (Int) -> Command
    ) throws -> JSONValue {
        guard first["ok"]?.boolValue == true else { return first }
        // recd's own objects, not re-encoded: a newer recd's keys pass through to --json.
        var items = first[key]?.arrayValue ?? []
        var reply = first
        var offset = 0
        // Entries come and go meanwhile; a page that does not move on ends the listing.
        while let next = reply["next"]?.intValue, next > offset {
            offset = next
            reply = try connection.call(request(next))
            guard reply["ok"]?.boolValue == true else { return reply }
            items += reply[key]?.arrayValue ?? []
        }
        let kept = (first.objectValue ?? []).filter { $0.0 == "id" || $0.0 == "ok" }
        return .object(kept + [(key, .array(items))])
    }

    /// Why recctl could not open a file to play.
    struct OpenFailure: Error {
        var message: String
    }

    /// Opens `path` for `play` as the calling user: read-only, close-on-exec, and non-blocking
    /// so a FIFO cannot hang us (it means nothing for regular files; recd reads with pread).
    static func openForPlaying(_ path: String) throws(OpenFailure) -> OwnedFile {
        do {
            return try OwnedFile(path, .readOnlyNonBlocking)
        } catch {
            let hint = error.errno == .permissionDenied ? "; recd plays only files you may read yourself" : ""
            throw OpenFailure(message: "cannot open \(path): \(error.message)\(hint)")
        }
    }

    static func usageFailure(_ error: UsageError) -> Int32 {
        let usage = HelpText.wrap(HelpText.words(of: error.usage), indent: "usage: ", continuation: "        ")
        printError("recctl: \(error.message)\n" + usage.joined(separator: "\n") + "\n")
        return 2
    }

    static func onOff(_ word: String, what: String, usage: String) throws -> Bool {
        switch word {
        case "on", "yes", "true": return true
        case "off", "no", "false": return false
        default: throw UsageError(message: "\(what) must be on or off, not \(word)", usage: usage)
        }
    }

    static func number(_ command: ParsedCommand, _ flag: String) throws -> Double? {
        guard let text = command.value(flag) else { return nil }
        guard let value = Double(text), value.isFinite else {
            throw UsageError(message: "--\(flag) needs a number, not \(text)", usage: command.spec.usage)
        }
        return value
    }

    static func integer(_ command: ParsedCommand, _ flag: String) throws -> Int? {
        guard let text = command.value(flag) else { return nil }
        guard let value = Int(text) else {
            throw UsageError(message: "--\(flag) needs a whole number, not \(text)", usage: command.spec.usage)
        }
        return value
    }

    /// The request a command line asks for. Usage problems throw `UsageError` (exit 2); a
    /// value outside the protocol's vocabulary throws the `SessionError` recd would reply
    /// with (exit 1), without asking recd.
    /// `--prefers-no-system-alerts yes|no` of `session set` and `session prefer`; nil when absent.
    static func prefersNoSystemAlerts(_ command: ParsedCommand) throws -> Bool? {
        try command.value("prefers-no-system-alerts").map {
            try onOff($0, what: "--prefers-no-system-alerts", usage: command.spec.usage)
        }
    }

    /// The request for a parsed command line. Times (`--since`, `--from`, `--to`) are resolved
    /// on `now` in `timeZone` (recctl's clock and TZ; tests pass their own).
    static func buildRequest(_ command: ParsedCommand, now: Date = Date(), timeZone: TimeZone = .current) throws
        -> Command
    {
        let p = command.positionals
        func time(_ flag: String) throws(UsageError) -> String? {
            guard let text = command.value(flag) else { return nil }
            return try TimeArgument.resolve(text, flag: flag, now: now, timeZone: timeZone)
        }
        let app = p.first ?? ""
        let usage = command.spec.usage
        switch command.spec.path {
        case ["status"]: return .status
        case ["session", "list"]: return .sessionList(offset: 0, limit: nil)
        case ["session", "show"]: return .sessionShow(app: app)
        case ["session", "set"]:
            let category = command.value("category") ?? ""
            var options: Set<CategoryOption> = []
            for name in (command.value("options") ?? "").split(separator: ",") {
                let trimmed = name.trimmingCharacters(in: .whitespaces)
                if !trimmed.isEmpty { options.insert(try Vocabulary.option(trimmed)) }
            }
            let prefers = try command.value("prefers-interruption").map {
                try onOff($0, what: "--prefers-interruption", usage: usage)
            }
            return .sessionSet(
                SessionSettings(
                    app: app, category: try Vocabulary.category(category),
                    mode: try Vocabulary.mode(command.value("mode") ?? "default"), options: options,
                    policy: try Vocabulary.policy(command.value("policy") ?? "default"),
                    micUsage: command.value("mic-usage").map { .some($0) } ?? .none,
                    prefersInterruptionOnRouteDisconnect: prefers,
                    prefersNoInterruptionsFromSystemAlerts: try prefersNoSystemAlerts(command)))
        case ["session", "activate"]: return .sessionActivate(app: app)
        case ["session", "deactivate"]:
            return .sessionDeactivate(app: app, notifyOthers: command.has("notify-others"), force: command.has("force"))
        case ["session", "prefer"]:
            return .sessionPrefer(
                PreferenceChange(
                    app: app, clear: command.has("clear"), input: command.value("input"),
                    sampleRate: try number(command, "sample-rate"), ioBuffer: try number(command, "io-buffer"),
                    inputChannels: try integer(command, "input-channels"),
                    outputChannels: try integer(command, "output-channels"),
                    prefersNoInterruptionsFromSystemAlerts: try prefersNoSystemAlerts(command),
                    prefersEchoCancelledInput: try command.value("echo-cancelled-input").map {
                        try onOff($0, what: "--echo-cancelled-input", usage: command.spec.usage)
                    }))
        case ["session", "override"]:
            guard p[1] == "speaker" || p[1] == "none" else {
                throw SessionError(.badParam, "override port \"\(p[1])\" is not speaker or none")
            }
            return .sessionOverride(app: app, speaker: p[1] == "speaker")
        case ["session", "remove"], ["session", "delete"]: return .sessionDelete(app: app)
        case ["session", "attach"]:
            func ports(_ flag: String) -> [String] {
                (command.value(flag) ?? "").split(separator: ",").map(String.init).filter { !$0.isEmpty }
            }
            let (play, capture) = (ports("play"), ports("capture"))
            guard !play.isEmpty || !capture.isEmpty else {
                throw UsageError(message: "session attach needs --play PORT... or --capture PORT...", usage: usage)
            }
            return .sessionAttach(AttachRequest(app: app, client: p[1], playPorts: play, capturePorts: capture))
        case ["session", "detach"]: return .sessionDetach(app: app, client: p[1])
        case ["permission", "list"]: return .permissionList
        case ["permission", "request"]: return .permissionRequest(app: app)
        case ["permission", "grant"]: return .permissionDecide(app: app, .granted)
        case ["permission", "deny"]: return .permissionDecide(app: app, .denied)
        case ["permission", "reset"]: return .permissionDecide(app: app, .undetermined)
        case ["mute"]: return .mute(app: app, muted: try onOff(p[1], what: "mute", usage: usage))
        case ["watch"]: return .watch(app: p.first)
        case ["routes"]: return .routes
        case ["meter"]: return .meter(app: p.first)
        case ["cue"]:
            guard p.count > 1 else { return .cueShow(app: app) }
            switch p[1] {
            case "outputs":
                guard p.count == 2 else { throw UsageError(message: "cue outputs takes --main PORT and --cue PORT", usage: usage) }
                return .cueOutputs(app: app, main: command.value("main"), cue: command.value("cue"))
            case "assign":
                guard p.count == 3, let bus = command.value("bus") else {
                    throw UsageError(message: "cue assign needs a SOURCE and --bus main|cue|both|none", usage: usage)
                }
                var gainDB: Double?
                if let gain = command.value("gain") {
                    guard let value = Double(gain) else { throw UsageError(message: "--gain needs a number of dB, not \(gain)", usage: usage) }
                    gainDB = value
                }
                return .cueAssign(app: app, source: p[2], bus: bus, gainDB: gainDB)
            case "mix":
                guard p.count == 3, let mix = Double(p[2]) else { throw UsageError(message: "cue mix needs a number from 0 to 1", usage: usage) }
                return .cueMix(app: app, mix: mix)
            case "split":
                guard p.count == 3 else { throw UsageError(message: "cue split needs on or off", usage: usage) }
                return .cueSplit(app: app, on: try onOff(p[2], what: "split", usage: usage))
            default:
                throw UsageError(message: "unknown cue command \(p[1]); use outputs, assign, mix or split", usage: usage)
            }
        case ["play"]:
            // The file's display name for events and status; recd reads the descriptor recctl
            // passes with the request (see `main`).
            let file = p.count > 1 ? absolute(p[1]) : nil
            return .play(
                PlayRequest(
                    app: app, file: file, stream: command.value("stream"),
                    to: try command.value("to").map { try PlayTarget(commandLine: $0) }))
        case ["record", "start"]:
            func seconds(_ flag: String, _ what: String) throws -> Double? {
                guard let text = command.value(flag) else { return nil }
                guard let value = Double(text) else { throw UsageError(message: "--\(flag) needs \(what), not \(text)", usage: usage) }
                return value
            }
            return .recordStart(
                RecordStartRequest(
                    app: app, stream: command.value("stream"), input: command.value("input"), bus: command.value("bus"),
                    triggerDB: try seconds("trigger", "a level in dBFS like -30"),
                    holdSeconds: try seconds("hold", "a number of seconds")))
        case ["record", "stop"]: return .recordStop(app: app, stream: command.value("stream"))
        case ["archive", "list"]: return .archiveList(app: command.value("app"), since: try time("since"))
        case ["archive", "verify"]:
            // Progress lines keep the reply's timeout from running out on a long verify.
            return .archiveVerify(path: p.first.map(absolute), progress: true)
        case ["archive", "reindex"]: return .archiveReindex
        case ["archive", "export"]:
            func required(_ flag: String) throws -> String {
                guard let value = command.value(flag) else {
                    throw UsageError(message: "archive export needs --\(flag)", usage: usage)
                }
                return value
            }
            let app = try required("app")
            let file = try required("output")
            let format: String
            if file == "-" {
                format = "flac"
            } else if file.lowercased().hasSuffix(".flac") {
                format = "flac"
            } else if file.lowercased().hasSuffix(".wav") {
                format = "wav"
            } else {
                throw UsageError(message: "-o FILE must end in .flac or .wav (or be - for FLAC on standard output)", usage: usage)
            }
            if command.has("proof") && file == "-" {
                throw UsageError(message: "--proof writes FILE.proof beside the clip: give -o FILE, not -", usage: usage)
            }
            return .archiveExport(
                ExportRequest(
                    app: app, stream: command.value("stream"), from: try time("from") ?? required("from"),
                    to: try time("to") ?? TimeArgument.resolve("now", flag: "to", now: now, timeZone: timeZone),
                    format: format, file: file == "-" ? "-" : absolute(file), proof: command.has("proof")))
        case ["pause"]: return .pause(app: app, stream: command.value("stream"))
        case ["stop"]: return .stop(app: app, stream: command.value("stream"))
        default: throw UsageError(message: "unhandled command", usage: usage)
        }
    }

    /// A path as the user typed it, made absolute from recctl's working directory.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// Redraws the meters about ten times a second until interrupted.
    static func liveMeters(_ connection: Connection, _ request: Command, output: Output) throws -> Int32 {
        var drawn = 0
        while true {
            let reply = try connection.call(request)
            if let error = Wire.error(from: reply), reply["ok"]?.boolValue != true {
                output.failure(error)
                return 1
            }
            if output.json {
                print(Output.payload(reply).jsonText)
            } else {
                let meters = try MetersInfo(json: reply)
                let lines = Output.meterBars(meters.meters) + Output.loudnessLines(meters.recordings)
                // Move back over the previous drawing and overwrite it.
                if drawn > 0 { print("\u{1B}[\(drawn)A", terminator: "") }
                for line in lines { print("\u{1B}[2K" + line) }
                drawn = lines.count
            }
            fflush(nil)
            SystemClock.sleep(seconds: 0.1)
        }
    }

    /// `session attach`: watches the app, attaches, then holds the connection (an attachment ends
    /// with the connection that made it) until the attachment ends: 0 when the program's client
    /// went (it exited), 1 for any other end (detached, session deleted, JACK lost), with why.
    static func holdAttachment(_ connection: Connection, _ attach: AttachRequest, output: Output) throws -> Int32 {
        let watching = try connection.call(.watch(app: attach.app))
        if let error = Wire.error(from: watching), watching["ok"]?.boolValue != true {
            output.failure(error)
            return 1
        }
        let reply = try connection.call(.sessionAttach(attach), onEvent: { _ in })
        if let error = Wire.error(from: reply), reply["ok"]?.boolValue != true {
            output.failure(error)
            return 1
        }
        if output.json {
            print(Output.payload(reply).jsonText)
        } else if let info = try? AttachmentInfo(json: reply["attachment"] ?? .null) {
            print("attached: " + Output.attachmentLine(info) + "; held until \(attach.client) exits (Ctrl-C detaches)")
        }
        fflush(nil)
        while true {
            let message = try connection.readMessage(timeout: nil)
            guard message["event"] != nil, let event = try? Event(json: message) else { continue }
            switch event {
            case .attachmentDetached(let app, let client, let reason) where app == attach.app && client == attach.client:
                output.event(message)
                return reason == .clientGone ? 0 : 1
            case .mediaServicesWereLost:
                output.event(message)
                return 1
            default:
                continue
            }
        }
    }

}

/// Writes a message to standard error in one write(2).
func printError(_ message: String) {
    let bytes = Array(message.utf8)
    bytes.withUnsafeBytes { try? Descriptor.writeAll(Descriptor.standardError, $0, path: nil) }
}

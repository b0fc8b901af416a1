// From a parsed command line to the request it asks for: flag values read and checked (usage
// problems exit 2), times resolved, paths made absolute, values outside the protocol's
// vocabulary refused as recd would refuse them.
import ControlProtocol
import Foundation
import SessionPolicy

extension Recctl {
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
                guard p.count == 2 else {
                    throw UsageError(message: "cue outputs takes --main PORT and --cue PORT", usage: usage)
                }
                return .cueOutputs(app: app, main: command.value("main"), cue: command.value("cue"))
            case "assign":
                guard p.count == 3, let bus = command.value("bus") else {
                    throw UsageError(message: "cue assign needs a SOURCE and --bus main|cue|both|none", usage: usage)
                }
                var gainDB: Double?
                if let gain = command.value("gain") {
                    guard let value = Double(gain) else {
                        throw UsageError(message: "--gain needs a number of dB, not \(gain)", usage: usage)
                    }
                    gainDB = value
                }
                return .cueAssign(app: app, source: p[2], bus: bus, gainDB: gainDB)
            case "mix":
                guard p.count == 3, let mix = Double(p[2]) else {
                    throw UsageError(message: "cue mix needs a number from 0 to 1", usage: usage)
                }
                return .cueMix(app: app, mix: mix)
            case "split":
                guard p.count == 3 else { throw UsageError(message: "cue split needs on or off", usage: usage) }
                return .cueSplit(app: app, on: try onOff(p[2], what: "split", usage: usage))
            default:
                throw UsageError(
                    message: "unknown cue command \(p[1]); use outputs, assign, mix or split", usage: usage)
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
                guard let value = Double(text) else {
                    throw UsageError(message: "--\(flag) needs \(what), not \(text)", usage: usage)
                }
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
                throw UsageError(
                    message: "-o FILE must end in .flac or .wav (or be - for FLAC on standard output)", usage: usage)
            }
            if command.has("proof") && file == "-" {
                throw UsageError(
                    message: "--proof writes FILE.proof beside the clip: give -o FILE, not -", usage: usage)
            }
            if command.has("credentials") && file == "-" {
                throw UsageError(
                    message: "--credentials hashes the clip as written (and writes FILE.c2pa beside a FLAC clip): "
                        + "give -o FILE.wav or -o FILE.flac, not -", usage: usage)
            }
            return .archiveExport(
                ExportRequest(
                    app: app, stream: command.value("stream"), from: try time("from") ?? required("from"),
                    to: try time("to") ?? TimeArgument.resolve("now", flag: "to", now: now, timeZone: timeZone),
                    format: format, file: file == "-" ? "-" : absolute(file), proof: command.has("proof"),
                    credentials: command.has("credentials")))
        case ["pause"]: return .pause(app: app, stream: command.value("stream"))
        case ["stop"]: return .stop(app: app, stream: command.value("stream"))
        default: throw UsageError(message: "unhandled command", usage: usage)
        }
    }

    /// A path as the user typed it, made absolute from recctl's working directory.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}

// Typed requests: every op with its arguments as Swift values, decoded once here for recd and
// encoded once in Command+Encoding.swift for recctl (chrony's candm.h in spirit: one definition
// both sides share).
//
// Keys are camelCase on the wire. Version-1 clients sent some arguments in snake_case
// (`notify_others`, `mic_usage`, `prefers_interruption_on_route_disconnect`, `sample_rate`,
// `io_buffer`, `input_channels`, `output_channels`, `gain_db`); those spellings are still
// accepted on requests (`Command.legacyKeys`), and the camelCase one wins when both are sent.
import Foundation
import SessionPolicy

public enum Command: Sendable, Equatable {
    case hello
    case status
    /// One page of the sessions, by app name: from `offset`, at most `limit` (nil: the most a
    /// page holds, `SessionPage.maxLimit`).
    case sessionList(offset: Int, limit: Int?)
    case sessionShow(app: String)
    case sessionSet(SessionSettings)
    /// `hold`: the activation is held by the requesting process (an application, not recctl):
    /// when its last connection to recd closes, recd deactivates the session as with notifyOthers.
    case sessionActivate(app: String, hold: Bool = false)
    case sessionDeactivate(app: String, notifyOthers: Bool, force: Bool)
    case sessionPrefer(PreferenceChange)
    case sessionOverride(app: String, speaker: Bool)
    case sessionDelete(app: String)
    case permissionList
    case permissionRequest(app: String)
    /// grant, deny or reset (`.undetermined`).
    case permissionDecide(app: String, RecordPermission)
    case mute(app: String, muted: Bool)
    case watch(app: String?)
    case unwatch
    case routes
    case play(PlayRequest)
    case pause(app: String, stream: String?)
    case stop(app: String, stream: String?)
    case recordStart(RecordStartRequest)
    case recordStop(app: String, stream: String?)
    /// Segments by start time, a page at a time: from `offset`, at most `limit` (nil: the
    /// most a page holds, 1000).
    case archiveList(app: String?, since: String?, offset: Int = 0, limit: Int? = nil)
    /// `progress`: send `{"id":N,"progress":{"done":k,"total":n}}` lines before the reply.
    case archiveVerify(path: String?, progress: Bool)
    case archiveReindex
    /// One stream's audio between two times, into the file passed with the request.
    case archiveExport(ExportRequest)
    case meter(app: String?)
    case cueOutputs(app: String, main: String?, cue: String?)
    case cueAssign(app: String, source: String, bus: String, gainDB: Double?)
    case cueMix(app: String, mix: Double)
    case cueSplit(app: String, on: Bool)
    case cueShow(app: String)
    case devicesInject([InjectedDeviceEvent])
    /// An application's own JACK client puts its audio under the session (`session.attach`).
    case sessionAttach(AttachRequest)
    case sessionDetach(app: String, client: String)

    /// Version-1 snake_case spellings still accepted on requests, by their camelCase key.
    public static let legacyKeys: [String: String] = [
        "notifyOthers": "notify_others", "micUsage": "mic_usage",
        "prefersInterruptionOnRouteDisconnect": "prefers_interruption_on_route_disconnect",
        "sampleRate": "sample_rate", "ioBuffer": "io_buffer", "inputChannels": "input_channels",
        "outputChannels": "output_channels", "gainDB": "gain_db", "triggerDB": "trigger_db",
        "holdSeconds": "hold_seconds",
    ]

    /// The app a command names, if any (for authorization and event filters).
    public var app: String? {
        switch self {
        case .hello, .status, .sessionList, .permissionList, .unwatch, .routes, .archiveVerify, .archiveReindex,
            .devicesInject:
            nil
        case .sessionShow(let app), .sessionActivate(let app, _), .sessionDeactivate(let app, _, _),
            .sessionOverride(let app, _), .sessionDelete(let app), .permissionRequest(let app),
            .permissionDecide(let app, _), .mute(let app, _), .pause(let app, _), .stop(let app, _),
            .recordStop(let app, _), .cueOutputs(let app, _, _), .cueAssign(let app, _, _, _), .cueMix(let app, _),
            .cueSplit(let app, _), .cueShow(let app), .sessionDetach(let app, _):
            app
        case .sessionAttach(let attach): attach.app
        case .watch(let app), .archiveList(let app, _, _, _), .meter(let app): app
        case .sessionSet(let settings): settings.app
        case .sessionPrefer(let change): change.app
        case .play(let play): play.app
        case .recordStart(let start): start.app
        case .archiveExport(let export): export.app
        }
    }

    // MARK: Decoding

    /// Decodes a request's arguments. Throws badParam naming the key that is missing or of the
    /// wrong type, or the value that is not in the vocabulary.
    public init(_ request: Request) throws(SessionError) {
        let a = Arguments(request: request)
        switch request.op {
        case .hello: self = .hello
        case .status: self = .status
        case .sessionList:
            self = .sessionList(offset: try a.optionalInt("offset") ?? 0, limit: try a.optionalInt("limit"))
        case .sessionShow: self = .sessionShow(app: try a.string("app"))
        case .sessionSet:
            var options: Set<CategoryOption> = []
            for name in try a.optionalStrings("options") ?? [] { options.insert(try Vocabulary.option(name)) }
            self = .sessionSet(
                SessionSettings(
                    app: try a.string("app"), category: try Vocabulary.category(try a.string("category")),
                    mode: try Vocabulary.mode(try a.optionalString("mode") ?? "default"), options: options,
                    policy: try Vocabulary.policy(try a.optionalString("policy") ?? "default"),
                    micUsage: a.has("micUsage") ? .some(try a.optionalString("micUsage")) : .none,
                    prefersInterruptionOnRouteDisconnect: try a.optionalBool("prefersInterruptionOnRouteDisconnect"),
                    prefersNoInterruptionsFromSystemAlerts: try a.optionalBool(
                        "prefersNoInterruptionsFromSystemAlerts")))
        case .sessionActivate:
            self = .sessionActivate(app: try a.string("app"), hold: try a.optionalBool("hold") ?? false)
        case .sessionDeactivate:
            self = .sessionDeactivate(
                app: try a.string("app"), notifyOthers: try a.optionalBool("notifyOthers") ?? false,
                force: try a.optionalBool("force") ?? false)
        case .sessionPrefer:
            self = .sessionPrefer(
                PreferenceChange(
                    app: try a.string("app"), clear: try a.optionalBool("clear") ?? false,
                    input: try a.optionalString("input"), sampleRate: try a.optionalDouble("sampleRate"),
                    ioBuffer: try a.optionalDouble("ioBuffer"), inputChannels: try a.optionalInt("inputChannels"),
                    outputChannels: try a.optionalInt("outputChannels"),
                    prefersNoInterruptionsFromSystemAlerts: try a.optionalBool(
                        "prefersNoInterruptionsFromSystemAlerts"),
                    prefersEchoCancelledInput: try a.optionalBool("prefersEchoCancelledInput")))
        case .sessionOverride:
            let app = try a.string("app")
            let port = try a.string("port")
            guard port == "speaker" || port == "none" else {
                throw SessionError(.badParam, "override port \"\(port)\" is not speaker or none")
            }
            self = .sessionOverride(app: app, speaker: port == "speaker")
        case .sessionDelete: self = .sessionDelete(app: try a.string("app"))
        case .permissionList: self = .permissionList
        case .permissionRequest: self = .permissionRequest(app: try a.string("app"))
        case .permissionGrant: self = .permissionDecide(app: try a.string("app"), .granted)
        case .permissionDeny: self = .permissionDecide(app: try a.string("app"), .denied)
        case .permissionReset: self = .permissionDecide(app: try a.string("app"), .undetermined)
        case .mute:
            let app = try a.string("app")
            guard let muted = try a.optionalBool("muted") else {
                throw SessionError(.badParam, "mute needs \"muted\": true or false")
            }
            self = .mute(app: app, muted: muted)
        case .watch: self = .watch(app: try a.optionalString("app"))
        case .unwatch: self = .unwatch
        case .routes: self = .routes
        case .play:
            self = .play(
                PlayRequest(
                    app: try a.string("app"), file: try a.optionalString("file"),
                    stream: try a.optionalString("stream"),
                    to: try a.playTarget("to")))
        case .pause: self = .pause(app: try a.string("app"), stream: try a.optionalString("stream"))
        case .stop: self = .stop(app: try a.string("app"), stream: try a.optionalString("stream"))
        case .recordStart:
            self = .recordStart(
                RecordStartRequest(
                    app: try a.string("app"), stream: try a.optionalString("stream"),
                    input: try a.optionalString("input"),
                    bus: try a.optionalString("bus"), triggerDB: try a.optionalDouble("triggerDB"),
                    holdSeconds: try a.optionalDouble("holdSeconds")))
        case .recordStop: self = .recordStop(app: try a.string("app"), stream: try a.optionalString("stream"))
        case .archiveList:
            self = .archiveList(
                app: try a.optionalString("app"), since: try a.optionalString("since"),
                offset: try a.optionalInt("offset") ?? 0, limit: try a.optionalInt("limit"))
        case .archiveVerify:
            self = .archiveVerify(path: try a.optionalString("path"), progress: try a.optionalBool("progress") ?? false)
        case .archiveReindex: self = .archiveReindex
        case .archiveExport:
            self = .archiveExport(
                ExportRequest(
                    app: try a.string("app"), stream: try a.optionalString("stream"), from: try a.string("from"),
                    to: try a.string("to"), format: try a.optionalString("format") ?? "flac",
                    file: try a.string("file"), proof: try a.optionalBool("proof") ?? false,
                    credentials: try a.optionalBool("credentials") ?? false))
        case .meter: self = .meter(app: try a.optionalString("app"))
        case .cueOutputs:
            self = .cueOutputs(
                app: try a.string("app"), main: try a.optionalString("main"), cue: try a.optionalString("cue"))
        case .cueAssign:
            self = .cueAssign(
                app: try a.string("app"), source: try a.string("source"), bus: try a.string("bus"),
                gainDB: try a.optionalDouble("gainDB"))
        case .cueMix:
            let app = try a.string("app")
            guard let mix = try a.optionalDouble("mix") else {
                throw SessionError(.badParam, "cue mix must be a number from 0 (cue only) to 1 (main only)")
            }
            self = .cueMix(app: app, mix: mix)
        case .cueSplit:
            let app = try a.string("app")
            guard let on = try a.optionalBool("on") else {
                throw SessionError(.badParam, "cue split needs \"on\": true or false")
            }
            self = .cueSplit(app: app, on: on)
        case .cueShow: self = .cueShow(app: try a.string("app"))
        case .devicesInject: self = .devicesInject(try a.deviceEvents())
        case .sessionAttach:
            self = .sessionAttach(
                AttachRequest(
                    app: try a.string("app"), client: try a.string("client"),
                    playPorts: try a.optionalStrings("playPorts") ?? [],
                    capturePorts: try a.optionalStrings("capturePorts") ?? []))
        case .sessionDetach: self = .sessionDetach(app: try a.string("app"), client: try a.string("client"))
        }
    }
}

/// A request's arguments by camelCase key, with the version-1 spellings as fallbacks.
private struct Arguments {
    let request: Request

    /// The key present on the wire: the camelCase one, else its legacy spelling.
    func key(_ name: String) -> String {
        if request.has(name) { return name }
        if let legacy = Command.legacyKeys[name], request.has(legacy) { return legacy }
        return name
    }

    func has(_ name: String) -> Bool { request.body[key(name)] != nil }
    func string(_ name: String) throws(SessionError) -> String { try request.string(key(name)) }
    func optionalString(_ name: String) throws(SessionError) -> String? { try request.optionalString(key(name)) }
    func optionalBool(_ name: String) throws(SessionError) -> Bool? { try request.optionalBool(key(name)) }
    func optionalDouble(_ name: String) throws(SessionError) -> Double? { try request.optionalDouble(key(name)) }
    func optionalInt(_ name: String) throws(SessionError) -> Int? { try request.optionalInt(key(name)) }
    func optionalStrings(_ name: String) throws(SessionError) -> [String]? { try request.optionalStrings(key(name)) }

    /// `{"port":"pa","channels":[1,2]}`; version 1's string form `"pa"` or `"pa:1,2"` too.
    func playTarget(_ name: String) throws(SessionError) -> PlayTarget? {
        guard let value = request.body[name], !value.isNull else { return nil }
        if let text = value.stringValue { return try PlayTarget(commandLine: text) }
        guard let port = value["port"]?.stringValue else {
            throw SessionError(.badParam, "\"\(name)\" must be {\"port\":NAME} or {\"port\":NAME,\"channels\":[1,2]}")
        }
        guard let channels = value["channels"], !channels.isNull else { return PlayTarget(port: port) }
        guard let items = channels.arrayValue, !items.isEmpty, items.allSatisfy({ $0.intValue != nil }) else {
            throw SessionError(
                .badParam, "\"\(name)\".channels must be a non-empty list of channel numbers, e.g. [1,2]")
        }
        return PlayTarget(port: port, channels: items.compactMap(\.intValue))
    }

    func deviceEvents() throws(SessionError) -> [InjectedDeviceEvent] {
        guard let items = request.body["events"]?.arrayValue else {
            throw SessionError(
                .badParam,
                "devices.inject needs \"events\": [{\"type\":\"jackSense\",\"card\":...,\"control\":...,\"plugged\":true}, ...]"
            )
        }
        var events: [InjectedDeviceEvent] = []
        for item in items {
            let card = item["card"]?.stringValue ?? "0"
            let control = item["control"]?.stringValue ?? ""
            switch item["type"]?.stringValue {
            case "jackSense":
                events.append(.jackSense(card: card, control: control, plugged: item["plugged"]?.boolValue ?? false))
            case "captureSwitch":
                events.append(.captureSwitch(card: card, control: control, on: item["on"]?.boolValue ?? true))
            case "cardRemoved": events.append(.cardRemoved(card: card))
            default:
                throw SessionError(
                    .badParam,
                    "event type \(item["type"]?.jsonText ?? "none") is not jackSense, captureSwitch or cardRemoved")
            }
        }
        return events
    }
}

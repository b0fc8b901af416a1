// Typed requests: every op with its arguments as Swift values, decoded once here for recd and
// encoded once here for recctl (chrony's candm.h in spirit: one definition both sides share).
//
// Keys are camelCase on the wire. Version-1 clients sent some arguments in snake_case
// (`notify_others`, `mic_usage`, `prefers_interruption_on_route_disconnect`, `sample_rate`,
// `io_buffer`, `input_channels`, `output_channels`, `gain_db`); those spellings are still
// accepted on requests (`Command.legacyKeys`), and the camelCase one wins when both are sent.
import Foundation
import SessionPolicy

/// Where a player's audio goes: an output port and, optionally, which of its channels (1-based).
public struct PlayTarget: Sendable, Equatable {
    public var port: String
    public var channels: [Int]?

    public init(port: String, channels: [Int]? = nil) {
        self.port = port
        self.channels = channels
    }

    /// `PORT` or `PORT:CH,CH,...` as typed on a command line (recctl's `--to`).
    public init(commandLine text: String) throws(SessionError) {
        guard let colon = text.firstIndex(of: ":") else {
            self.init(port: text)
            return
        }
        let list = text[text.index(after: colon)...].split(separator: ",", omittingEmptySubsequences: false)
            .map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !list.isEmpty, list.allSatisfy({ $0 != nil }) else {
            throw SessionError(.badParam, "--to \(text): channels must be a comma-separated list of numbers, e.g. --to pa:1,2")
        }
        self.init(port: String(text[..<colon]), channels: list.compactMap { $0 })
    }

    var json: JSONValue {
        var fields: [(String, JSONValue)] = [("port", .string(port))]
        if let channels { fields.append(("channels", .array(channels.map { .number(Double($0)) }))) }
        return .object(fields)
    }
}

/// `session.set`: the whole configuration of a session (options are not sticky).
public struct SessionSettings: Sendable, Equatable {
    public var app: String
    public var category: Category
    public var mode: Mode
    public var options: Set<CategoryOption>
    public var policy: RouteSharingPolicy
    /// `.none`: leave the description as it is; `.some(nil)`: clear it.
    public var micUsage: String??
    public var prefersInterruptionOnRouteDisconnect: Bool?
    /// nil leaves it as it is.
    public var prefersNoInterruptionsFromSystemAlerts: Bool?

    public init(
        app: String, category: Category, mode: Mode = .default, options: Set<CategoryOption> = [],
        policy: RouteSharingPolicy = .default, micUsage: String?? = .none,
        prefersInterruptionOnRouteDisconnect: Bool? = nil, prefersNoInterruptionsFromSystemAlerts: Bool? = nil
    ) {
        self.prefersNoInterruptionsFromSystemAlerts = prefersNoInterruptionsFromSystemAlerts
        self.app = app
        self.category = category
        self.mode = mode
        self.options = options
        self.policy = policy
        self.micUsage = micUsage
        self.prefersInterruptionOnRouteDisconnect = prefersInterruptionOnRouteDisconnect
    }
}

/// `session.prefer`: hardware preferences to change; nil leaves one as it is.
public struct PreferenceChange: Sendable, Equatable {
    public var app: String
    /// Start from no preferences before applying the others.
    public var clear: Bool
    /// A port name, or `"none"` to clear the preferred input.
    public var input: String?
    public var sampleRate: Double?
    public var ioBuffer: Double?
    public var inputChannels: Int?
    public var outputChannels: Int?
    /// Not a hardware preference (`clear` leaves it), but set here too so that a client changes
    /// it without restating its configuration (AVAudioSession's own setter).
    public var prefersNoInterruptionsFromSystemAlerts: Bool?
    /// AVAudioSession's prefersEchoCancelledInput (playAndRecord only); `clear` leaves it.
    public var prefersEchoCancelledInput: Bool?

    public init(
        app: String, clear: Bool = false, input: String? = nil, sampleRate: Double? = nil, ioBuffer: Double? = nil,
        inputChannels: Int? = nil, outputChannels: Int? = nil, prefersNoInterruptionsFromSystemAlerts: Bool? = nil,
        prefersEchoCancelledInput: Bool? = nil
    ) {
        self.prefersNoInterruptionsFromSystemAlerts = prefersNoInterruptionsFromSystemAlerts
        self.prefersEchoCancelledInput = prefersEchoCancelledInput
        self.app = app
        self.clear = clear
        self.input = input
        self.sampleRate = sampleRate
        self.ioBuffer = ioBuffer
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
    }
}

/// `play`: a file (its descriptor rides with the request line; `file` names it for people),
/// or nothing to resume paused players.
public struct PlayRequest: Sendable, Equatable {
    public var app: String
    public var file: String?
    public var stream: String?
    public var to: PlayTarget?

    public init(app: String, file: String? = nil, stream: String? = nil, to: PlayTarget? = nil) {
        self.app = app
        self.file = file
        self.stream = stream
        self.to = to
    }
}

/// `record.start`: an input port, or one of the monitoring buses.
public struct RecordStartRequest: Sendable, Equatable {
    public var app: String
    public var stream: String?
    public var input: String?
    public var bus: String?
    /// Arms a level-triggered take: it starts when a channel's peak reaches this (dBFS).
    public var triggerDB: Double?
    /// A take ends this many seconds after the level fell below `triggerDB` (default 10).
    public var holdSeconds: Double?

    public init(
        app: String, stream: String? = nil, input: String? = nil, bus: String? = nil, triggerDB: Double? = nil,
        holdSeconds: Double? = nil
    ) {
        self.app = app
        self.stream = stream
        self.input = input
        self.bus = bus
        self.triggerDB = triggerDB
        self.holdSeconds = holdSeconds
    }
}

/// `session.attach`'s arguments: the application's JACK client and its ports. `playPorts` are
/// the client's output ports whose audio the session plays (to its output route);
/// `capturePorts` are its input ports that receive the session's input route.
public struct AttachRequest: Sendable, Equatable {
    public var app: String
    public var client: String
    public var playPorts: [String]
    public var capturePorts: [String]

    public init(app: String, client: String, playPorts: [String] = [], capturePorts: [String] = []) {
        self.app = app
        self.client = client
        self.playPorts = playPorts
        self.capturePorts = capturePorts
    }
}

/// A simulated ALSA event for `devices.inject` (tests and simulation only).
public enum InjectedDeviceEvent: Sendable, Equatable {
    case jackSense(card: String, control: String, plugged: Bool)
    case captureSwitch(card: String, control: String, on: Bool)
    case cardRemoved(card: String)
}

/// Every request, typed. `Command(request)` decodes and checks argument types (badParam naming
/// the key); `op` and `arguments` encode. Meaning (does the port exist, is 0...1 a valid mix)
/// is for the daemon and the policy to judge.
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
                    app: try a.string("app"), file: try a.optionalString("file"), stream: try a.optionalString("stream"),
                    to: try a.playTarget("to")))
        case .pause: self = .pause(app: try a.string("app"), stream: try a.optionalString("stream"))
        case .stop: self = .stop(app: try a.string("app"), stream: try a.optionalString("stream"))
        case .recordStart:
            self = .recordStart(
                RecordStartRequest(
                    app: try a.string("app"), stream: try a.optionalString("stream"), input: try a.optionalString("input"),
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
                    file: try a.string("file"), proof: try a.optionalBool("proof") ?? false))
        case .meter: self = .meter(app: try a.optionalString("app"))
        case .cueOutputs:
            self = .cueOutputs(app: try a.string("app"), main: try a.optionalString("main"), cue: try a.optionalString("cue"))
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
            guard let on = try a.optionalBool("on") else { throw SessionError(.badParam, "cue split needs \"on\": true or false") }
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

    // MARK: Encoding

    /// The wire op.
    public var op: Op {
        switch self {
        case .hello: .hello
        case .status: .status
        case .sessionList: .sessionList
        case .sessionShow: .sessionShow
        case .sessionSet: .sessionSet
        case .sessionActivate: .sessionActivate
        case .sessionDeactivate: .sessionDeactivate
        case .sessionPrefer: .sessionPrefer
        case .sessionOverride: .sessionOverride
        case .sessionDelete: .sessionDelete
        case .permissionList: .permissionList
        case .permissionRequest: .permissionRequest
        case .permissionDecide(_, .granted): .permissionGrant
        case .permissionDecide(_, .denied): .permissionDeny
        case .permissionDecide(_, .undetermined): .permissionReset
        case .mute: .mute
        case .watch: .watch
        case .unwatch: .unwatch
        case .routes: .routes
        case .play: .play
        case .pause: .pause
        case .stop: .stop
        case .recordStart: .recordStart
        case .recordStop: .recordStop
        case .archiveList: .archiveList
        case .archiveVerify: .archiveVerify
        case .archiveReindex: .archiveReindex
        case .archiveExport: .archiveExport
        case .meter: .meter
        case .cueOutputs: .cueOutputs
        case .cueAssign: .cueAssign
        case .cueMix: .cueMix
        case .cueSplit: .cueSplit
        case .cueShow: .cueShow
        case .devicesInject: .devicesInject
        case .sessionAttach: .sessionAttach
        case .sessionDetach: .sessionDetach
        }
    }

    /// The arguments as wire fields, camelCase, optional ones only when set.
    public var arguments: [(String, JSONValue)] {
        var fields = Fields()
        switch self {
        case .hello, .status, .permissionList, .unwatch, .routes, .archiveReindex: break
        case .sessionList(let offset, let limit):
            if offset != 0 { fields.add("offset", Double(offset)) }
            fields.add("limit", limit.map(Double.init))
        case .sessionShow(let app), .sessionDelete(let app), .permissionRequest(let app),
            .permissionDecide(let app, _), .cueShow(let app):
            fields.add("app", app)
        case .sessionActivate(let app, let hold):
            fields.add("app", app)
            if hold { fields.add("hold", true) }
        case .sessionSet(let settings):
            fields.add("app", settings.app)
            fields.add("category", settings.category.rawValue)
            fields.add("mode", settings.mode.rawValue)
            fields.add("options", JSONValue.array(settings.options.sorted().map { .string($0.rawValue) }))
            fields.add("policy", settings.policy.rawValue)
            if case .some(let text) = settings.micUsage { fields.add("micUsage", text.map { JSONValue.string($0) } ?? .null) }
            fields.add("prefersInterruptionOnRouteDisconnect", settings.prefersInterruptionOnRouteDisconnect)
            fields.add("prefersNoInterruptionsFromSystemAlerts", settings.prefersNoInterruptionsFromSystemAlerts)
        case .sessionDeactivate(let app, let notifyOthers, let force):
            fields.add("app", app)
            fields.add("notifyOthers", notifyOthers)
            fields.add("force", force)
        case .sessionPrefer(let change):
            fields.add("app", change.app)
            if change.clear { fields.add("clear", true) }
            fields.add("input", change.input)
            fields.add("sampleRate", change.sampleRate)
            fields.add("ioBuffer", change.ioBuffer)
            fields.add("inputChannels", change.inputChannels.map(Double.init))
            fields.add("outputChannels", change.outputChannels.map(Double.init))
            fields.add("prefersNoInterruptionsFromSystemAlerts", change.prefersNoInterruptionsFromSystemAlerts)
            fields.add("prefersEchoCancelledInput", change.prefersEchoCancelledInput)
        case .sessionOverride(let app, let speaker):
            fields.add("app", app)
            fields.add("port", speaker ? "speaker" : "none")
        case .mute(let app, let muted):
            fields.add("app", app)
            fields.add("muted", muted)
        case .watch(let app), .meter(let app):
            fields.add("app", app)
        case .archiveList(let app, let since, let offset, let limit):
            fields.add("app", app)
            fields.add("since", since)
            if offset != 0 { fields.add("offset", Double(offset)) }
            fields.add("limit", limit.map(Double.init))
        case .play(let play):
            fields.add("app", play.app)
            fields.add("file", play.file)
            fields.add("stream", play.stream)
            if let to = play.to { fields.add("to", to.json) }
        case .pause(let app, let stream), .stop(let app, let stream), .recordStop(let app, let stream):
            fields.add("app", app)
            fields.add("stream", stream)
        case .recordStart(let start):
            fields.add("app", start.app)
            fields.add("stream", start.stream)
            fields.add("input", start.input)
            fields.add("bus", start.bus)
            fields.add("triggerDB", start.triggerDB)
            fields.add("holdSeconds", start.holdSeconds)
        case .archiveExport(let export):
            fields.add("app", export.app)
            fields.add("stream", export.stream)
            fields.add("from", export.from)
            fields.add("to", export.to)
            fields.add("format", export.format)
            fields.add("file", export.file)
            if export.proof { fields.add("proof", true) }
        case .archiveVerify(let path, let progress):
            fields.add("path", path)
            if progress { fields.add("progress", true) }
        case .cueOutputs(let app, let main, let cue):
            fields.add("app", app)
            fields.add("main", main)
            fields.add("cue", cue)
        case .cueAssign(let app, let source, let bus, let gainDB):
            fields.add("app", app)
            fields.add("source", source)
            fields.add("bus", bus)
            fields.add("gainDB", gainDB)
        case .sessionAttach(let attach):
            fields.add("app", attach.app)
            fields.add("client", attach.client)
            fields.add("playPorts", JSONValue(attach.playPorts))
            fields.add("capturePorts", JSONValue(attach.capturePorts))
        case .sessionDetach(let app, let client):
            fields.add("app", app)
            fields.add("client", client)
        case .cueMix(let app, let mix):
            fields.add("app", app)
            fields.add("mix", mix)
        case .cueSplit(let app, let on):
            fields.add("app", app)
            fields.add("on", on)
        case .devicesInject(let events):
            fields.add("events", JSONValue.array(events.map(\.json)))
        }
        return fields.pairs
    }

    /// The request a client sends: this command with `id`, the protocol version and the
    /// caller's interface.
    public func request(id: Int, interface: CallerInterface? = nil) -> Request {
        Request(id: id, op: op, arguments: arguments, interface: interface)
    }
}

extension InjectedDeviceEvent {
    var json: JSONValue {
        switch self {
        case .jackSense(let card, let control, let plugged):
            ["type": "jackSense", "card": .string(card), "control": .string(control), "plugged": .bool(plugged)]
        case .captureSwitch(let card, let control, let on):
            ["type": "captureSwitch", "card": .string(card), "control": .string(control), "on": .bool(on)]
        case .cardRemoved(let card):
            ["type": "cardRemoved", "card": .string(card)]
        }
    }
}

/// Optional wire fields, added only when set.
private struct Fields {
    var pairs: [(String, JSONValue)] = []

    mutating func add(_ key: String, _ value: JSONValue?) {
        if let value { pairs.append((key, value)) }
    }
    mutating func add(_ key: String, _ value: String?) { add(key, value.map { JSONValue.string($0) }) }
    mutating func add(_ key: String, _ value: Bool?) { add(key, value.map { JSONValue.bool($0) }) }
    mutating func add(_ key: String, _ value: Double?) { add(key, value.map { JSONValue.number($0) }) }
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
            throw SessionError(.badParam, "\"\(name)\".channels must be a non-empty list of channel numbers, e.g. [1,2]")
        }
        return PlayTarget(port: port, channels: items.compactMap(\.intValue))
    }

    func deviceEvents() throws(SessionError) -> [InjectedDeviceEvent] {
        guard let items = request.body["events"]?.arrayValue else {
            throw SessionError(.badParam, "devices.inject needs \"events\": [{\"type\":\"jackSense\",\"card\":...,\"control\":...,\"plugged\":true}, ...]")
        }
        var events: [InjectedDeviceEvent] = []
        for item in items {
            let card = item["card"]?.stringValue ?? "0"
            let control = item["control"]?.stringValue ?? ""
            switch item["type"]?.stringValue {
            case "jackSense": events.append(.jackSense(card: card, control: control, plugged: item["plugged"]?.boolValue ?? false))
            case "captureSwitch": events.append(.captureSwitch(card: card, control: control, on: item["on"]?.boolValue ?? true))
            case "cardRemoved": events.append(.cardRemoved(card: card))
            default:
                throw SessionError(.badParam, "event type \(item["type"]?.jsonText ?? "none") is not jackSense, captureSwitch or cardRemoved")
            }
        }
        return events
    }
}

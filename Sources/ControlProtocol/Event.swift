// The events recd pushes to watching clients, as one typed value each. recd builds an `Event`
// and encodes it here, once; every Swift client (the AudioSession library, recctl) decodes it
// here and switches on the case, so no one spells an event by hand. libaudiosession, in C,
// reads the few events it turns into callbacks by name (libaudiosession/events.c), held to the
// Swift library's notifications by CLibraryParityTests.
//
// `json` writes version 2's camelCase keys in the order docs/protocol.md lists and clients
// have always seen; `WireKeys.line` gives a version-1 client its spellings of the encoded
// line, as for replies. Decoding refuses an event only for a missing required key (a message
// that names it): `event`, `app`, and the keys its meaning rests on (a state, a type, a reason);
// other keys are optional and read as unknown when missing, unknown keys are passed over, and an
// event name this client does not know is `.unknown`, so an old client keeps running next to a
// newer recd (docs/protocol.md, "Whole replies, tolerant readers").
// Threads: any; values only.
import SessionPolicy

/// One event of recd's, from the daemon to the clients that watch (`watch`).
public enum Event: Sendable, Equatable {
    /// `interruption`: another session took the audio (began) or gave it back (ended). `by`:
    /// who interrupted (an app, or a muted port) on `began`; nil on `ended` and for a lost output.
    case interruption(app: String, type: InterruptionType, reason: InterruptionReason, shouldResume: Bool, by: String?)
    /// `routeChange`: the session's route changed.
    case routeChange(RouteChangeEvent)
    /// `silenceSecondaryAudioHint`: another session's primary audio started (begin) or stopped.
    case silenceSecondaryAudioHint(app: String, begin: Bool)
    /// `ducked`: another session (`by`) ducks this one's players to `levelDB`.
    case ducked(app: String, by: String, levelDB: Double)
    /// `unducked`: the ducking is over.
    case unducked(app: String)
    /// `inputMuteStateChange`: the app's input mute changed.
    case inputMuteStateChange(app: String, muted: Bool)
    /// `permission`: the app's record permission changed.
    case permission(app: String, state: RecordPermission)
    /// `session`: the session was activated, deactivated or interrupted.
    case session(app: String, state: ActivationState)
    /// `session` with state `deleted`: the session is gone.
    case sessionDeleted(app: String)
    /// `player`: a player started, paused, moved, resumed or stopped.
    case player(PlayerEvent)
    /// `recording`: a step of a recorder's life.
    case recording(RecordingEvent)
    /// `silence`: a recorded stream fell silent or has sound again.
    case silence(SilenceEvent)
    /// `attachment` with state `detached`: an application's JACK client is no longer attached.
    case attachmentDetached(app: String, client: String, reason: AttachmentEndReason)
    /// recd's JACK server went away.
    case mediaServicesWereLost
    /// recd's JACK server is back and the sessions were applied again.
    case mediaServicesWereReset
    /// `health`: the box's health state or its reasons changed (to every watcher; no `app`).
    case health(HealthInfo)
    /// An event this client does not know (a newer recd's): its name and the whole object.
    case unknown(name: String, JSONValue)

    /// The `event` name on the wire.
    public var name: String {
        switch self {
        case .interruption: "interruption"
        case .routeChange: "routeChange"
        case .silenceSecondaryAudioHint: "silenceSecondaryAudioHint"
        case .ducked: "ducked"
        case .unducked: "unducked"
        case .inputMuteStateChange: "inputMuteStateChange"
        case .permission: "permission"
        case .session, .sessionDeleted: "session"
        case .player: "player"
        case .recording: "recording"
        case .silence: "silence"
        case .attachmentDetached: "attachment"
        case .mediaServicesWereLost: "mediaServicesWereLost"
        case .mediaServicesWereReset: "mediaServicesWereReset"
        case .health: "health"
        case .unknown(let name, _): name
        }
    }

    /// The application the event is about; nil for a global event (every watcher gets it).
    public var app: String? {
        switch self {
        case .interruption(let app, _, _, _, _), .silenceSecondaryAudioHint(let app, _), .ducked(let app, _, _),
            .unducked(let app), .inputMuteStateChange(let app, _), .permission(let app, _), .session(let app, _),
            .sessionDeleted(let app), .attachmentDetached(let app, _, _):
            app
        case .routeChange(let event): event.app
        case .player(let event): event.app
        case .recording(let event): event.app
        case .silence(let event): event.app
        case .mediaServicesWereLost, .mediaServicesWereReset, .health: nil
        case .unknown(_, let json): json["app"]?.stringValue
        }
    }

    /// The event's object, version 2's keys, in wire order (`event` first, then `app`).
    public var json: JSONValue {
        let head: [(String, JSONValue)] = [("event", .string(name))] + (app.map { [("app", .string($0))] } ?? [])
        switch self {
        case .interruption(_, let type, let reason, let shouldResume, let by):
            var fields: [(String, JSONValue)] =
                head + [
                    ("type", .string(type.name)), ("typeCode", .number(Double(type.rawValue))),
                    ("reason", .string(reason.name)), ("reasonCode", .number(Double(reason.rawValue))),
                    ("options", shouldResume ? ["shouldResume"] : []),
                ]
            if let by { fields.append(("by", .string(by))) }
            return .object(fields)
        case .routeChange(let event):
            return .object(head + event.fields)
        case .silenceSecondaryAudioHint(_, let begin):
            return .object(head + [("type", begin ? "begin" : "end")])
        case .ducked(_, let by, let levelDB):
            return .object(head + [("by", .string(by)), ("levelDB", .number(levelDB))])
        case .inputMuteStateChange(_, let muted):
            return .object(head + [("muted", .bool(muted))])
        case .permission(_, let state):
            return .object(head + [("state", .string(state.rawValue))])
        case .session(_, let state):
            return .object(head + [("state", .string(state.rawValue))])
        case .sessionDeleted:
            return .object(head + [("state", "deleted")])
        case .player(let event):
            return .object(head + event.fields)
        case .recording(let event):
            return .object(head + event.fields)
        case .silence(let event):
            return .object(head + event.fields)
        case .attachmentDetached(_, let client, let reason):
            return .object(
                head + [("client", .string(client)), ("state", "detached"), ("reason", .string(reason.rawValue))])
        case .unducked, .mediaServicesWereLost, .mediaServicesWereReset:
            return .object(head)
        case .health(let health):
            return .object(head + (health.json.objectValue ?? []))
        case .unknown(_, let json):
            return json
        }
    }

    /// Decodes an event line's object. A known event without a key it needs (or with a value
    /// this client cannot read) fails with a message naming the key; an unknown name is `.unknown`.
    public init(json: JSONValue) throws(ReplyDecodingError) {
        let name = try ReplyFields(json, "an event").string("event")
        let f = try ReplyFields(json, "a \"\(name)\" event")
        switch name {
        case "interruption":
            self = .interruption(
                app: try f.string("app"), type: try f.code("typeCode", namedBy: "type", \.name),
                reason: try f.code("reasonCode", namedBy: "reason", \.name),
                shouldResume: try f.optionalStrings("options").contains("shouldResume"), by: try f.optionalString("by"))
        case "routeChange":
            self = .routeChange(try RouteChangeEvent(f))
        case "silenceSecondaryAudioHint":
            let type = try f.string("type")
            guard type == "begin" || type == "end" else {
                throw ReplyDecodingError("\"type\" of \(f.what) must be \"begin\" or \"end\", not \"\(type)\"")
            }
            self = .silenceSecondaryAudioHint(app: try f.string("app"), begin: type == "begin")
        case "ducked":
            self = .ducked(app: try f.string("app"), by: try f.string("by"), levelDB: try f.double("levelDB"))
        case "unducked":
            self = .unducked(app: try f.string("app"))
        case "inputMuteStateChange":
            self = .inputMuteStateChange(app: try f.string("app"), muted: try f.bool("muted"))
        case "permission":
            self = .permission(app: try f.string("app"), state: try f.name("state"))
        case "session":
            let app = try f.string("app")
            if try f.string("state") == "deleted" {
                self = .sessionDeleted(app: app)
            } else {
                self = .session(app: app, state: try f.name("state"))
            }
        case "player":
            self = .player(try PlayerEvent(f))
        case "recording":
            self = .recording(try RecordingEvent(f))
        case "silence":
            self = .silence(try SilenceEvent(f))
        case "attachment":
            let state = try f.string("state")
            guard state == "detached" else {
                throw ReplyDecodingError("\"state\" of \(f.what) is \"\(state)\", which this client does not know")
            }
            self = .attachmentDetached(
                app: try f.string("app"), client: try f.string("client"), reason: try f.name("reason"))
        case "mediaServicesWereLost":
            self = .mediaServicesWereLost
        case "mediaServicesWereReset":
            self = .mediaServicesWereReset
        case "health":
            self = .health(try HealthInfo(json: json))
        default:
            self = .unknown(name: name, json)
        }
    }
}

/// A `routeChange` event: why, and the route before and after, as names and as port descriptions.
public struct RouteChangeEvent: Sendable, Equatable {
    public var app: String
    public var reason: RouteChangeReason
    public var previousRoute: RouteInfo
    public var route: RouteInfo
    public var previousRouteDescription: RouteDescriptionInfo
    public var routeDescription: RouteDescriptionInfo

    public init(
        app: String, reason: RouteChangeReason, previousRoute: RouteInfo, route: RouteInfo,
        previousRouteDescription: RouteDescriptionInfo, routeDescription: RouteDescriptionInfo
    ) {
        self.app = app
        self.reason = reason
        self.previousRoute = previousRoute
        self.route = route
        self.previousRouteDescription = previousRouteDescription
        self.routeDescription = routeDescription
    }

    var fields: [(String, JSONValue)] {
        [
            ("reason", .string(reason.name)), ("reasonCode", .number(Double(reason.rawValue))),
            ("previousRoute", previousRoute.json), ("route", route.json),
            ("previousRouteDescription", previousRouteDescription.json), ("routeDescription", routeDescription.json),
        ]
    }

    init(_ f: ReplyFields) throws(ReplyDecodingError) {
        self.init(
            app: try f.string("app"), reason: try f.code("reasonCode", namedBy: "reason", \.name),
            previousRoute: try f.object("previousRoute"), route: try f.object("route"),
            previousRouteDescription: try f.optionalObject("previousRouteDescription") ?? .init(),
            routeDescription: try f.optionalObject("routeDescription") ?? .init())
    }
}

/// How fast recd reacted to a device: the pause of a player after JACK's news of a lost port
/// (the privacy rule says within one period), or its move after news of an arriving one
/// (`player` events carry it). The process thread applies what was published at its next
/// period, so sound changes at most `periodFrames` later.
public struct PortReaction: Sendable, Equatable {
    public var frames: Int
    public var periodFrames: Int?
    public var microseconds: Int?

    public init(frames: Int, periodFrames: Int?, microseconds: Int?) {
        self.frames = frames
        self.periodFrames = periodFrames
        self.microseconds = microseconds
    }
}

/// A `player` event: a player's state now, where it plays, and why it changed.
public struct PlayerEvent: Sendable, Equatable {
    public enum State: String, Sendable, CaseIterable {
        case playing, paused, stopped
    }

    public var app: String
    public var stream: String
    public var state: State
    /// nil: an event without it (read as unknown).
    public var file: String?
    /// Where its audio goes now.
    public var port: String?
    /// Why it paused, stopped or moved (a pause cause, a stop reason, a route change's reason,
    /// `error: ...`); nil when it (re)started playing where it was.
    public var reason: String?
    /// Where it played before a move.
    public var previousPort: String?
    /// How fast a pause for a lost port, or a move to an arriving one, was published.
    public var reaction: PortReaction?

    public init(
        app: String, stream: String, state: State, file: String?, port: String?, reason: String?,
        previousPort: String? = nil, reaction: PortReaction? = nil
    ) {
        self.app = app
        self.stream = stream
        self.state = state
        self.file = file
        self.port = port
        self.reason = reason
        self.previousPort = previousPort
        self.reaction = reaction
    }

    var fields: [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = [
            ("stream", .string(stream)), ("state", .string(state.rawValue)), ("file", JSONValue(file)),
            ("port", JSONValue(port)), ("reason", JSONValue(reason)),
        ]
        if let previousPort { fields.append(("previousPort", .string(previousPort))) }
        if let reaction {
            fields += [
                ("reactionFrames", .number(Double(reaction.frames))),
                ("periodFrames", JSONValue(reaction.periodFrames)),
                ("reactionUs", JSONValue(reaction.microseconds)),
            ]
        }
        return fields
    }

    init(_ f: ReplyFields) throws(ReplyDecodingError) {
        self.init(
            app: try f.string("app"), stream: try f.string("stream"), state: try f.name("state"),
            file: try f.optionalString("file"), port: try f.optionalString("port"),
            reason: try f.optionalString("reason"), previousPort: try f.optionalString("previousPort"),
            reaction: try f.optionalInt("reactionFrames").map { frames throws(ReplyDecodingError) in
                PortReaction(
                    frames: frames, periodFrames: try f.optionalInt("periodFrames"),
                    microseconds: try f.optionalInt("reactionUs"))
            })
    }
}

/// A `recording` event: one step of a recorder's life, with the fields that step carries
/// (docs/protocol.md, "Events"). An `armed` event carries no `file` or `reason`.
public struct RecordingEvent: Sendable, Equatable {
    public enum State: String, Sendable, CaseIterable {
        case started, switched, segment, finished, armed, gap, abandoned, stopped, resumed
        /// Its source delivered no frames for `stall_seconds` (a stopped graph, driver or server);
        /// `resumed` with reason `stalled` when frames come again.
        case stalled
    }

    public var app: String
    /// The stream; nil only in an `armed` event whose input is not known yet.
    public var stream: String?
    public var state: State
    /// The file opened (`segment`), closed (`finished`), left (`abandoned`) or last written (`stopped`).
    public var file: String?
    /// The end reason, a gap's cause, what a resumed recorder waited for, an abandoned segment's error.
    public var reason: String?
    /// The input it records; nil only in an `armed` event whose input is not known yet.
    public var port: String?
    /// `switched`: the input it recorded before.
    public var previousPort: String?
    /// `resumed`: when it stopped; `stalled`: when its last frame came (ISO 8601).
    public var since: String?
    /// `finished`: the segment's frames and gaps.
    public var frames: Int?
    public var gaps: Int?
    /// `gap`: where (frames delivered since the recording started, across its segments) and how
    /// long, in frames at the source's rate, which `sampleRate` gives.
    public var position: Int?
    public var length: Int?
    public var sampleRate: Int?
    /// `stopped` by a failure: what failed.
    public var error: SessionError?
    /// `stopped`, when it starts again by itself: when.
    public var resumesWhen: String?
    /// `armed`: the level that starts a take, and how long it stays below before the take ends.
    public var triggerDB: Double?
    public var holdSeconds: Double?

    public init(
        app: String, stream: String?, state: State, file: String? = nil, reason: String? = nil, port: String?,
        previousPort: String? = nil, since: String? = nil, frames: Int? = nil, gaps: Int? = nil,
        position: Int? = nil, length: Int? = nil, error: SessionError? = nil, resumesWhen: String? = nil,
        triggerDB: Double? = nil, holdSeconds: Double? = nil, sampleRate: Int? = nil
    ) {
        self.sampleRate = sampleRate
        self.app = app
        self.stream = stream
        self.state = state
        self.file = file
        self.reason = reason
        self.port = port
        self.previousPort = previousPort
        self.since = since
        self.frames = frames
        self.gaps = gaps
        self.position = position
        self.length = length
        self.error = error
        self.resumesWhen = resumesWhen
        self.triggerDB = triggerDB
        self.holdSeconds = holdSeconds
    }

    var fields: [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = [("stream", JSONValue(stream)), ("state", .string(state.rawValue))]
        if state != .armed { fields += [("file", JSONValue(file)), ("reason", JSONValue(reason))] }
        fields.append(("port", JSONValue(port)))
        // The fields only some steps carry, each in its place after `port`.
        let extras: [(String, JSONValue?)] = [
            ("previousPort", previousPort.map { .string($0) }), ("since", since.map { .string($0) }),
            ("frames", frames.map { .number(Double($0)) }), ("gaps", gaps.map { .number(Double($0)) }),
            ("position", position.map { .number(Double($0)) }), ("length", length.map { .number(Double($0)) }),
            ("sampleRate", sampleRate.map { .number(Double($0)) }),
            ("error", error.map { Wire.errorObject($0, for: .protocol) }),
            ("resumesWhen", resumesWhen.map { .string($0) }),
            ("triggerDB", triggerDB.map { .number($0) }), ("holdSeconds", holdSeconds.map { .number($0) }),
        ]
        for case (let key, let value?) in extras { fields.append((key, value)) }
        return fields
    }

    init(_ f: ReplyFields) throws(ReplyDecodingError) {
        let state: State = try f.name("state")
        let armed = state == .armed
        var error: SessionError?
        if let item = f.value["error"], !item.isNull {
            guard case .object = item, let decoded = Wire.error(from: f.value) else {
                throw ReplyDecodingError("\"error\" of \(f.what) must be an error object")
            }
            error = decoded
        }
        self.init(
            app: try f.string("app"), stream: try f.optionalString("stream"), state: state,
            file: armed ? nil : try f.optionalString("file"), reason: armed ? nil : try f.optionalString("reason"),
            port: try f.optionalString("port"), previousPort: try f.optionalString("previousPort"),
            since: try f.optionalString("since"), frames: try f.optionalInt("frames"), gaps: try f.optionalInt("gaps"),
            position: try f.optionalInt("position"), length: try f.optionalInt("length"), error: error,
            resumesWhen: try f.optionalString("resumesWhen"), triggerDB: try f.optionalDouble("triggerDB"),
            holdSeconds: try f.optionalDouble("holdSeconds"), sampleRate: try f.optionalInt("sampleRate"))
    }
}

/// A `silence` event: a recorded stream's silence alarm was raised (`began`) or ended.
public struct SilenceEvent: Sendable, Equatable {
    public enum State: String, Sendable, CaseIterable {
        case began, ended
    }

    public var app: String
    public var stream: String
    public var state: State
    /// `began`: how long it has been silent; `ended`: the silence's whole length.
    public var seconds: Double?
    /// `began`: the loudest peak of the silence; `ended`: of the sound that ended it (dBFS).
    public var levelDB: Double?
    /// When the silence started, or when the sound that ended it started (ISO 8601).
    public var since: String?

    public init(app: String, stream: String, state: State, seconds: Double?, levelDB: Double?, since: String?) {
        self.app = app
        self.stream = stream
        self.state = state
        self.seconds = seconds
        self.levelDB = levelDB
        self.since = since
    }

    var fields: [(String, JSONValue)] {
        [
            ("stream", .string(stream)), ("state", .string(state.rawValue)), ("seconds", JSONValue(seconds)),
            ("levelDB", JSONValue(levelDB)), ("since", JSONValue(since)),
        ]
    }

    init(_ f: ReplyFields) throws(ReplyDecodingError) {
        self.init(
            app: try f.string("app"), stream: try f.string("stream"), state: try f.name("state"),
            seconds: try f.optionalDouble("seconds"), levelDB: try f.optionalDouble("levelDB"),
            since: try f.optionalString("since"))
    }
}

/// Why an application's JACK client stopped being attached to its session (`attachment` events).
public enum AttachmentEndReason: String, Sendable, CaseIterable {
    /// The app asked (`session.detach`).
    case detached
    /// The control connection that attached it closed.
    case connectionClosed
    /// The JACK client went away.
    case clientGone
    /// The session was deleted.
    case sessionDeleted
    /// recd's JACK server went away (the app attaches again after mediaServicesWereReset).
    case mediaServicesLost

}

// How policy values look on the wire (SPEC §12 "JSON shapes that scripts rely on").
import ControlProtocol
import SessionPolicy

/// What the audio backend reports of the hardware for one session (SPEC §5); nil = unknown.
public struct ActualHardware: Sendable, Equatable {
    public var sampleRate: Double?
    public var ioBufferDuration: Double?
    public var inputLatency: Double?
    public var outputLatency: Double?
    public var inputChannels: Int?
    public var outputChannels: Int?

    public init(
        sampleRate: Double? = nil, ioBufferDuration: Double? = nil, inputLatency: Double? = nil,
        outputLatency: Double? = nil, inputChannels: Int? = nil, outputChannels: Int? = nil
    ) {
        self.sampleRate = sampleRate
        self.ioBufferDuration = ioBufferDuration
        self.inputLatency = inputLatency
        self.outputLatency = outputLatency
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
    }
}

enum WireFormat {
    static func route(_ route: Route) -> JSONValue {
        ["inputs": JSONValue(route.inputs), "outputs": JSONValue(route.outputs)]
    }

    static func preferences(_ prefs: HardwarePreferences) -> JSONValue {
        [
            "preferredInput": JSONValue(prefs.preferredInput), "sampleRate": JSONValue(prefs.sampleRate),
            "ioBufferDuration": JSONValue(prefs.ioBufferDuration), "inputChannels": JSONValue(prefs.inputChannels),
            "outputChannels": JSONValue(prefs.outputChannels),
        ]
    }

    static func actualJSON(_ hw: ActualHardware) -> JSONValue {
        [
            "sampleRate": JSONValue(hw.sampleRate), "ioBufferDuration": JSONValue(hw.ioBufferDuration),
            "inputLatency": JSONValue(hw.inputLatency), "outputLatency": JSONValue(hw.outputLatency),
            "inputChannels": JSONValue(hw.inputChannels), "outputChannels": JSONValue(hw.outputChannels),
        ]
    }

    static func session(_ session: Session, store: SessionStore, actual: ActualHardware) -> JSONValue {
        let config = session.configuration
        var interruption: JSONValue = .null
        if let current = session.interruption {
            var by: String?
            switch current.cause {
            case .nonMixable(let app), .spokenAudio(let app): by = app
            case .hardwareMute(let port): by = port
            case .routeDisconnected: by = nil
            }
            interruption = ["reason": .string(current.reason.name), "by": JSONValue(by)]
        }
        return [
            "app": .string(session.app),
            "ownerUID": .number(Double(session.ownerUID)),
            "category": .string(config.category.rawValue),
            "mode": .string(config.mode.rawValue),
            "options": JSONValue(config.effectiveOptionNames),
            "requestedOptions": JSONValue(config.requestedOptions.sorted().map(\.rawValue)),
            "ignoredOptions": .array(config.ignoredOptions.map { ["option": .string($0.option.rawValue), "why": .string($0.why)] }),
            "policy": .string(config.policy.rawValue),
            "priority": .string(session.priority.rawValue),
            "background": .bool(session.background),
            "autoResume": .bool(session.autoResume),
            "micUsage": JSONValue(session.micUsage),
            "state": .string(session.state.rawValue),
            "interruption": interruption,
            "route": route(session.route),
            "bandwidth": .array(store.bandwidths(app: session.app).map { ["port": .string($0.port), "bandwidth": .string($0.bandwidth.name)] }),
            "preferences": preferences(session.preferences),
            "actual": actualJSON(actual),
            "recordPermission": .string(store.permission(session.app).rawValue),
            "inputMuted": .bool(session.inputMuted),
            "duckedBy": JSONValue(session.duckedBy),
            "override": .string(session.overrideSpeaker ? "speaker" : "none"),
            "prefersInterruptionOnRouteDisconnect": .bool(session.prefersInterruptionOnRouteDisconnect),
            "streamsRunning": .bool(session.streamsRunning),
            "declaredInConfig": .bool(session.declaredInConfig),
        ]
    }

    /// The event line for an effect, or nil for effects that are not announced.
    static func event(_ effect: PolicyEffect, store: SessionStore) -> (app: String?, event: JSONValue)? {
        switch effect {
        case .interruption(let app, let type, let reason, let shouldResume):
            return (app, [
                "event": "interruption", "app": .string(app), "type": .string(type.name),
                "typeCode": .number(Double(type.rawValue)), "reason": .string(reason.name),
                "reasonCode": .number(Double(reason.rawValue)), "options": shouldResume ? ["shouldResume"] : [],
            ])
        case .ducked(let app, let by, let level):
            return (app, ["event": "ducked", "app": .string(app), "by": .string(by), "levelDB": .number(level)])
        case .unducked(let app):
            return (app, ["event": "unducked", "app": .string(app)])
        case .routeChange(let app, let reason, let previous, let current):
            return (app, [
                "event": "routeChange", "app": .string(app), "reason": .string(reason.name),
                "reasonCode": .number(Double(reason.rawValue)), "previousRoute": route(previous), "route": route(current),
            ])
        case .inputMuteStateChange(let app, let muted):
            return (app, ["event": "inputMuteStateChange", "app": .string(app), "muted": .bool(muted)])
        case .recordPermission(let app, let state):
            return (app, ["event": "permission", "app": .string(app), "state": .string(state.rawValue)])
        case .mediaServicesWereLost:
            return (nil, ["event": "mediaServicesWereLost"])
        case .mediaServicesWereReset:
            return (nil, ["event": "mediaServicesWereReset"])
        case .sessionDeleted(let app):
            return (app, ["event": "session", "app": .string(app), "state": "deleted"])
        case .pauseStreams, .stopStreams, .pausePlayers, .resumeStreams, .sessionChanged:
            return nil
        }
    }
}

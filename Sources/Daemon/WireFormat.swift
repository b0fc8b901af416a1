// How policy values look on the wire (SPEC §12 "JSON shapes that scripts rely on").
import AudioEngine
import ControlProtocol
import SessionPolicy

/// What the audio backend reports of the hardware for one session (SPEC §5); nil = unknown.
public typealias ActualHardware = SessionInfo.Actual

enum WireFormat {
    static func route(_ route: Route) -> JSONValue { routeInfo(route).json }

    static func routeInfo(_ route: Route) -> RouteInfo { RouteInfo(inputs: route.inputs, outputs: route.outputs) }

    static func cycleTimes(_ report: CycleTimeReport) -> StatusInfo.CycleTimes {
        func ints(_ values: [UInt64]) -> [Int] { values.map { Int(clamping: $0) } }
        return StatusInfo.CycleTimes(
            boundsMicros: ints(report.boundsMicros), startDelay: ints(report.startDelayCounts),
            duration: ints(report.durationCounts), maxStartDelayMicros: Int(clamping: report.maxStartDelayMicros),
            maxDurationMicros: Int(clamping: report.maxDurationMicros), late: Int(clamping: report.lateCycles),
            overlong: Int(clamping: report.overlongCycles),
            cycles: Int(clamping: report.cycles), startDelayMicrosTotal: Int(clamping: report.startDelayMicrosTotal),
            durationMicrosTotal: Int(clamping: report.durationMicrosTotal))
    }

    static func preferences(_ prefs: HardwarePreferences) -> JSONValue { prefs.json }

    /// A port as routes describe it; `asOutput` picks a duplex port's earpiece channels.
    static func portDescription(_ port: PortState, asOutput: Bool) -> PortDescriptionInfo {
        PortDescriptionInfo(name: port.name, type: port.type.rawValue, channels: port.channels(asOutput: asOutput))
    }

    /// A route's ports described from the configured ports (a name no port has: type
    /// `unknown`, 0 channels; routes hold configured names only).
    static func routeDescription(_ route: Route, ports: [PortState]) -> RouteDescriptionInfo {
        func describe(_ name: String, asOutput: Bool) -> PortDescriptionInfo {
            ports.first { $0.name == name }.map { portDescription($0, asOutput: asOutput) }
                ?? PortDescriptionInfo(name: name, type: "unknown", channels: 0)
        }
        return RouteDescriptionInfo(
            inputs: route.inputs.map { describe($0, asOutput: false) },
            outputs: route.outputs.map { describe($0, asOutput: true) })
    }

    /// `interruptedSince`: when the session's interruption began (ISO 8601, UTC), if recd knows.
    static func session(
        _ session: Session, store: SessionStore, actual: ActualHardware, interruptedSince: String? = nil
    ) -> SessionInfo {
        let config = session.configuration
        let maximum = store.maximumChannels(app: session.app)
        return SessionInfo(
            app: session.app, ownerUID: Int(session.ownerUID), category: config.category.rawValue,
            mode: config.mode.rawValue, options: config.effectiveOptionNames,
            requestedOptions: config.requestedOptions.sorted().map(\.rawValue),
            ignoredOptions: config.ignoredOptions.map { .init(option: $0.option.rawValue, why: $0.why) },
            policy: config.policy.rawValue, priority: session.priority.rawValue, background: session.background,
            autoResume: session.autoResume, micUsage: session.micUsage, state: session.state.rawValue,
            interruption: session.interruption.map { interruption($0, since: interruptedSince) },
            route: routeInfo(session.route),
            bandwidth: store.bandwidths(app: session.app).map { .init(port: $0.port, bandwidth: $0.bandwidth.name) },
            preferences: session.preferences,
            actual: actual, recordPermission: store.permission(session.app).rawValue,
            inputMuted: session.inputMuted, duckedBy: session.duckedBy,
            override: session.overrideSpeaker ? "speaker" : "none",
            prefersInterruptionOnRouteDisconnect: session.prefersInterruptionOnRouteDisconnect,
            streamsRunning: session.streamsRunning, declaredInConfig: session.declaredInConfig,
            routeDescription: routeDescription(session.route, ports: store.ports),
            availableInputs: store.availableInputs(app: session.app).map { portDescription($0, asOutput: false) },
            maximumInputChannels: maximum.input, maximumOutputChannels: maximum.output,
            isOtherAudioPlaying: store.isOtherAudioPlaying(app: session.app),
            secondaryAudioShouldBeSilencedHint: session.secondaryAudioShouldBeSilencedHint,
            heldBy: session.state == .inactive ? nil : session.holder.map(Int.init),
            prefersNoInterruptionsFromSystemAlerts: session.prefersNoInterruptionsFromSystemAlerts,
            prefersEchoCancelledInput: session.prefersEchoCancelledInput,
            isEchoCancelledInputAvailable: session.isEchoCancelledInputAvailable)
    }

    private static func interruption(_ current: Interruption, since: String?) -> SessionInfo.Interruption {
        SessionInfo.Interruption(reason: current.reason.name, by: current.by, since: since)
    }

    /// The event an effect announces, or nil for effects that are not announced.
    static func event(_ effect: PolicyEffect, store: SessionStore) -> Event? {
        switch effect {
        case .interruption(let app, let type, let reason, let shouldResume):
            .interruption(
                app: app, type: type, reason: reason, shouldResume: shouldResume,
                by: type == .began ? store.sessions[app]?.interruption?.by : nil)
        case .ducked(let app, let by, let level):
            .ducked(app: app, by: by, levelDB: level)
        case .unducked(let app):
            .unducked(app: app)
        case .routeChange(let app, let reason, let previous, let current):
            .routeChange(
                RouteChangeEvent(
                    app: app, reason: reason, previousRoute: routeInfo(previous), route: routeInfo(current),
                    previousRouteDescription: routeDescription(previous, ports: store.ports),
                    routeDescription: routeDescription(current, ports: store.ports)))
        case .silenceSecondaryAudioHint(let app, let begin):
            .silenceSecondaryAudioHint(app: app, begin: begin)
        case .inputMuteStateChange(let app, let muted):
            .inputMuteStateChange(app: app, muted: muted)
        case .recordPermission(let app, let state):
            .permission(app: app, state: state)
        case .mediaServicesWereLost:
            .mediaServicesWereLost
        case .mediaServicesWereReset:
            .mediaServicesWereReset
        case .sessionDeleted(let app):
            .sessionDeleted(app: app)
        case .pauseStreams, .stopStreams, .pausePlayers, .stopPlayers, .stopRecorders, .resumeStreams, .sessionChanged,
            .captureProcessingChange:
            nil
        }
    }
}

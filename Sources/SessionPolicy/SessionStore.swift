// The arbiter: a deterministic state machine over all sessions. Every call is
// (state, event) → (state, effects). A call that throws has changed nothing.
// No I/O, no clock, no threads: the daemon's control thread owns the one instance.

/// A fact of the world the daemon reports to the policy (`SessionStore.report`): what its
/// services and the system observed, never an order. Each is a whole picture, not a delta, so a
/// report repeated changes nothing.
public enum PolicyFact: Equatable, Sendable {
    /// The apps with players or recorders running, and the apps heard (players playing,
    /// attached applications audible): isBusy, isOtherAudioPlaying and the secondary-audio hint.
    case streams(running: Set<String>, audible: Set<String>)
    /// Every configured port with its availability now (the engine controller's).
    case ports([PortState])
    /// A port's input was muted or unmuted in hardware (a capture switch).
    case hardwareMute(port: String, muted: Bool)
    /// Process `pid` ended: whatever it held active is deactivated as with notifyOthers.
    case holderEnded(pid: Int32)
}

/// Something the daemon must do or tell because the policy state changed.
public enum PolicyEffect: Equatable, Sendable {
    case interruption(app: String, type: InterruptionType, reason: InterruptionReason, shouldResume: Bool)
    case ducked(app: String, by: String, levelDB: Double)
    case unducked(app: String)
    /// Pause players and recorders (recorders close their segment with the reason).
    case pauseStreams(app: String, reason: StreamStopReason)
    /// Stop players and recorders and finalize recordings.
    case stopStreams(app: String, reason: StreamStopReason)
    /// Privacy rule: the output went away, pause this session's players only.
    case pausePlayers(app: String)
    /// The session's new category has no output: stop its players (paused ones too).
    case stopPlayers(app: String, reason: StreamStopReason)
    /// The session's new category has no input: stop its recorders (suspended ones too) and
    /// finalize their recordings.
    case stopRecorders(app: String, reason: StreamStopReason)
    /// auto_resume: start again what was running when the interruption began.
    case resumeStreams(app: String)
    case inputMuteStateChange(app: String, muted: Bool)
    case recordPermission(app: String, state: RecordPermission)
    case routeChange(app: String, reason: RouteChangeReason, previous: Route, current: Route)
    /// What a session's capture goes through changed (`Session.captureProcessing`: its mode or
    /// category, `prefersEchoCancelledInput`, its route gaining or losing an input or output):
    /// its running recorders go on with the new processing. After the call's routeChange.
    case captureProcessingChange(app: String, previous: CaptureProcessing, current: CaptureProcessing)
    /// A mixable session's secondaryAudioShouldBeSilencedHint changed (true: begin, false: end).
    case silenceSecondaryAudioHint(app: String, begin: Bool)
    case mediaServicesWereLost
    case mediaServicesWereReset
    /// A session's stored configuration changed (persist it).
    case sessionChanged(app: String)
    case sessionDeleted(app: String)
}

/// All sessions, record permissions and port states; the single source of policy truth.
/// Equatable as a whole (private bookkeeping included): a refused call leaves it equal.
public struct SessionStore: Equatable, Sendable {
    public internal(set) var sessions: [String: Session] = [:]
    public internal(set) var permissions: [String: RecordPermission] = [:]
    public internal(set) var ports: [PortState] = []
    public internal(set) var mediaServicesAvailable = true
    /// Input ports whose hardware capture switch is off.
    public internal(set) var mutedPorts: Set<String> = []
    public var duckLevelDB: Double
    public var region: String?
    /// When each session was last used, in seconds of the daemon's wall clock (`noteUse`): a
    /// request that named it, or its application seen by the daemon. What `expired` reads.
    public private(set) var lastUsed: [String: Double] = [:]
    private var deleted: Set<String> = []
    var activationCounter = 0

    public init(duckLevelDB: Double = -14, region: String? = nil, ports: [PortState] = []) {
        self.duckLevelDB = duckLevelDB
        self.region = region
        self.ports = ports
    }

    /// Sessions sorted by app name, for listings.
    public var sortedSessions: [Session] { sessions.values.sorted { $0.app < $1.app } }

    public func session(_ app: String) throws(SessionError) -> Session {
        if let session = sessions[app] { return session }
        if deleted.contains(app) {
            throw SessionError(
                .expiredSession, "session \(app) was deleted", remedy: .configure(app: app, again: true))
        }
        throw SessionError(.expiredSession, "no session \(app)", remedy: .configure(app: app, again: false))
    }

    public func permission(_ app: String) -> RecordPermission { permissions[app] ?? .undetermined }

    // MARK: - Creating and configuring

    /// Adds a session (from config or persisted state) without arbitration.
    public mutating func insert(
        _ session: Session, configuration: SessionConfiguration, preferences: HardwarePreferences = .init(),
        inputMuted: Bool = false
    ) {
        var session = session
        session.configuration = configuration
        session.preferences = preferences
        session.inputMuted = inputMuted
        session.activation.state = .inactive
        sessions[session.app] = session
        deleted.remove(session.app)
        _ = reroute(reason: .categoryChange, only: session.app, quiet: true)
    }

    /// Sets category, mode, options and policy at once (SPEC §1); creates the session if new.
    ///
    /// On an active session the change takes effect at once and goes through the same
    /// arbitration as activation (SPEC §13): if the new configuration could not be activated
    /// now (insufficientPriority, cannotInterruptOthers, missingEntitlement) the call throws and
    /// changes nothing; otherwise the sessions that activation would interrupt are interrupted,
    /// and ducking follows the new options. Streams the new category cannot carry stop, in any
    /// state: players when it has no output, recorders when it has no input.
    ///
    /// missingEntitlement: only when this call makes an active session input-capable without a
    /// microphone usage description (an output category becoming an input one, or the
    /// description cleared); an input session already active without one stays as it was.
    public mutating func configure(
        app: String, ownerUID: UInt32, configuration: SessionConfiguration, micUsage: String?? = .none
    ) throws(SessionError) -> [PolicyEffect] {
        let isNew = sessions[app] == nil
        let processingBefore = processingOfSessions
        var session = sessions[app] ?? Session(app: app, ownerUID: ownerUID)
        let previous = session.configuration
        let previouslyEntitled = !(session.micUsage ?? "").isEmpty
        let categoryChanged = previous != configuration
        if case .some(let text) = micUsage { session.micUsage = text }
        let entitled = !(session.micUsage ?? "").isEmpty
        let rearbitrate = session.isActive && categoryChanged
        var victims: [(String, Interruption.Cause)] = []
        if session.isActive && configuration.category.hasInput && !entitled
            && (!previous.category.hasInput || previouslyEntitled)
        {
            throw Self.missingEntitlement(app, configuration.category)
        }
        if rearbitrate { victims = try arbitrate(session, as: configuration) }
        session.configuration = configuration
        // A route change ends the speaker override.
        if categoryChanged { session.overrideSpeaker = false }
        sessions[app] = session
        deleted.remove(app)
        var effects: [PolicyEffect] = [.sessionChanged(app: app)]
        if !isNew && previous.category.hasOutput && !configuration.category.hasOutput {
            effects.append(.stopPlayers(app: app, reason: .categoryChange))
        }
        if !isNew && previous.category.hasInput && !configuration.category.hasInput {
            effects.append(.stopRecorders(app: app, reason: .categoryChange))
        }
        if rearbitrate { effects += takeOver(app, interrupting: victims) }
        if categoryChanged || isNew { effects += reroute(reason: .categoryChange, only: app) }
        effects += updateDucking() + updateHints()
        return effects + processingChanges(since: processingBefore)
    }

    public mutating func setPreferences(app: String, _ preferences: HardwarePreferences) throws(SessionError)
        -> [PolicyEffect]
    {
        let session = try session(app)
        try HardwarePreferences.validate(preferences, category: session.configuration.category, ports: ports)
        let processingBefore = processingOfSessions
        sessions[app]!.preferences = preferences
        return [.sessionChanged(app: app)] + reroute(reason: .routeConfigurationChange, only: app)
            + processingChanges(since: processingBefore)
    }

    /// `overrideOutputAudioPort`: speaker (playAndRecord only) until the next route change.
    public mutating func overrideOutput(app: String, speaker: Bool) throws(SessionError) -> [PolicyEffect] {
        let session = try session(app)
        if speaker && session.configuration.category != .playAndRecord {
            throw SessionError(
                .incompatibleCategory,
                "the speaker override needs category playAndRecord (\(app) is \(session.configuration.category.rawValue)); set that category first"
            )
        }
        if speaker && !ports.contains(where: { $0.type == .builtInSpeaker && $0.available }) {
            throw SessionError(
                .resourceNotAvailable,
                "no builtInSpeaker port is available to override to; declare one in [port] config")
        }
        let processingBefore = processingOfSessions
        sessions[app]!.overrideSpeaker = speaker
        return reroute(reason: .override, only: app) + processingChanges(since: processingBefore)
    }

    public mutating func setPrefersInterruptionOnRouteDisconnect(app: String, _ value: Bool) throws(SessionError)
        -> [PolicyEffect]
    {
        _ = try session(app)
        sessions[app]!.prefersInterruptionOnRouteDisconnect = value
        return [.sessionChanged(app: app)]
    }

    /// prefersNoInterruptionsFromSystemAlerts: from now on, activations of system-alert-class
    /// sessions leave this one running (an interruption already under way stays).
    public mutating func setPrefersNoInterruptionsFromSystemAlerts(app: String, _ value: Bool) throws(SessionError)
        -> [PolicyEffect]
    {
        _ = try session(app)
        sessions[app]!.prefersNoInterruptionsFromSystemAlerts = value
        return [.sessionChanged(app: app)]
    }

    /// prefersEchoCancelledInput (session.prefer): only a category that plays and records may
    /// ask (incompatibleCategory otherwise, changing nothing); on a route without both
    /// directions the preference waits for one (`Session.captureProcessing`). Running recordings
    /// follow it too (`captureProcessingChange`).
    public mutating func setPrefersEchoCancelledInput(app: String, _ value: Bool) throws(SessionError)
        -> [PolicyEffect]
    {
        let current = try session(app)
        try CaptureProcessing.validatePreference(value, category: current.configuration.category)
        let processingBefore = processingOfSessions
        sessions[app]!.prefersEchoCancelledInput = value
        return [.sessionChanged(app: app)] + processingChanges(since: processingBefore)
    }

    /// Updates declaration fields (priority, background, auto_resume) from config.
    public mutating func updateDeclaration(app: String, _ update: (inout Session) -> Void) {
        guard var session = sessions[app] else { return }
        let arbiterFields = (session.activation, session.route)
        update(&session)
        (session.activation, session.route) = arbiterFields
        sessions[app] = session
    }

    public mutating func delete(app: String) throws(SessionError) -> [PolicyEffect] {
        let session = try session(app)
        var effects: [PolicyEffect] = []
        if session.streamsRunning { effects.append(.stopStreams(app: app, reason: .deleted)) }
        sessions[app]!.streams.running = false
        if session.state == .active {
            sessions[app]!.activation.state = .inactive
            effects += endInterruptions(causedBy: app, notify: true)
        }
        sessions[app] = nil
        lastUsed[app] = nil
        deleted.insert(app)
        effects += updateDucking() + updateHints()
        effects.append(.sessionDeleted(app: app))
        return effects
    }

    // MARK: - Expiry

    /// `app` was used at `time` (the daemon's wall clock, seconds): never moves back.
    public mutating func noteUse(of app: String, at time: Double) {
        guard sessions[app] != nil else { return }
        lastUsed[app] = max(lastUsed[app] ?? time, time)
    }

    /// The sessions that expire at `now`: never declared in the config (a declaration is the
    /// operator's; it stays), inactive with nothing running, and unused for `idle` seconds by
    /// `lastUsed` (a session with no use noted never expires). `idle` 0: none. By app name.
    public func expired(at now: Double, idle: Double) -> [String] {
        guard idle > 0 else { return [] }
        return sortedSessions.filter { session in
            guard !session.declaredInConfig, session.state == .inactive, !session.streamsRunning,
                !session.playersRunning, let used = lastUsed[session.app]
            else { return false }
            return now - used >= idle
        }.map(\.app)
    }

    // MARK: - Facts the daemon reports

    /// The one way facts of the world enter the policy: what the daemon's services and the
    /// system observed. The store decides what they mean and answers with effects; nothing else
    /// outside the store sets `streamsRunning`, `playersRunning`, the ports, hardware mutes or
    /// ends a holder's activations.
    public mutating func report(_ fact: PolicyFact) -> [PolicyEffect] {
        switch fact {
        case .streams(let running, let audible):
            setStreamsRunning(running)
            return setPlayersRunning(audible)
        case .ports(let ports):
            return updatePorts(ports)
        case .hardwareMute(let port, let muted):
            return setHardwareMuted(port: port, muted)
        case .holderEnded(let pid):
            return holderEnded(pid)
        }
    }

    /// The duck gain `app`'s audio plays at now, in dB: the configured duck level while another
    /// session ducks it, else 0. What players and attached applications are set to.
    public func duckGainDB(of app: String) -> Double {
        // Mode measurement promises its own playback as played: ducked or not, 0 dB.
        guard let session = sessions[app], session.duckedBy != nil, session.configuration.mode != .measurement
        else { return 0 }
        return duckLevelDB
    }

    /// Which sessions have players or recorders running (not paused, not stopped).
    mutating func setStreamsRunning(_ apps: Set<String>) {
        for app in sessions.keys where sessions[app]!.streamsRunning != apps.contains(app) {
            sessions[app]!.streams.running = apps.contains(app)
        }
    }

    /// Single-session form, for tests.
    mutating func setStreamsRunning(app: String, _ running: Bool) {
        sessions[app]?.streams.running = running
    }

    /// Which apps are heard (players playing, attached applications audible), after anything
    /// that starts, pauses, resumes, stops or finishes one. Returns the
    /// `silenceSecondaryAudioHint` changes this brings.
    mutating func setPlayersRunning(_ apps: Set<String>) -> [PolicyEffect] {
        for app in sessions.keys where sessions[app]!.playersRunning != apps.contains(app) {
            sessions[app]!.streams.playing = apps.contains(app)
        }
        return updateHints()
    }

    /// isOtherAudioPlaying: another session's players play.
    public func isOtherAudioPlaying(app: String) -> Bool {
        sessions.values.contains { $0.app != app && $0.playersRunning }
    }

    /// Recomputes secondaryAudioShouldBeSilencedHint: another session whose audio is primary
    /// (non-mixable) plays. Mixable sessions are told when theirs changes.
    mutating func updateHints() -> [PolicyEffect] {
        let primary = sessions.values.filter { $0.playersRunning && !$0.isMixable }.map(\.app)
        var effects: [PolicyEffect] = []
        for app in sessions.keys.sorted() {
            let hint = primary.contains { $0 != app }
            guard hint != sessions[app]!.secondaryAudioShouldBeSilencedHint else { continue }
            sessions[app]!.streams.secondaryAudioShouldBeSilencedHint = hint
            if sessions[app]!.isMixable { effects.append(.silenceSecondaryAudioHint(app: app, begin: hint)) }
        }
        return effects
    }
}

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
    public private(set) var sessions: [String: Session] = [:]
    public private(set) var permissions: [String: RecordPermission] = [:]
    public private(set) var ports: [PortState] = []
    public private(set) var mediaServicesAvailable = true
    /// Input ports whose hardware capture switch is off.
    public private(set) var mutedPorts: Set<String> = []
    public var duckLevelDB: Double
    public var region: String?
    /// When each session was last used, in seconds of the daemon's wall clock (`noteUse`): a
    /// request that named it, or its application seen by the daemon. What `expired` reads.
    public private(set) var lastUsed: [String: Double] = [:]
    private var deleted: Set<String> = []
    private var activationCounter = 0

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
    public mutating func insert(_ session: Session, configuration: SessionConfiguration, preferences: HardwarePreferences = .init(), inputMuted: Bool = false) {
        var session = session
        session.configuration = configuration
        session.preferences = preferences
        session.inputMuted = inputMuted
        session.state = .inactive
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

    public mutating func setPreferences(app: String, _ preferences: HardwarePreferences) throws(SessionError) -> [PolicyEffect] {
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
                "the speaker override needs category playAndRecord (\(app) is \(session.configuration.category.rawValue)); set that category first")
        }
        if speaker && !ports.contains(where: { $0.type == .builtInSpeaker && $0.available }) {
            throw SessionError(.resourceNotAvailable, "no builtInSpeaker port is available to override to; declare one in [port] config")
        }
        let processingBefore = processingOfSessions
        sessions[app]!.overrideSpeaker = speaker
        return reroute(reason: .override, only: app) + processingChanges(since: processingBefore)
    }

    public mutating func setPrefersInterruptionOnRouteDisconnect(app: String, _ value: Bool) throws(SessionError) -> [PolicyEffect] {
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
        let arbiterFields = (session.state, session.interruption, session.route)
        update(&session)
        (session.state, session.interruption, session.route) = arbiterFields
        sessions[app] = session
    }

    public mutating func delete(app: String) throws(SessionError) -> [PolicyEffect] {
        let session = try session(app)
        var effects: [PolicyEffect] = []
        if session.streamsRunning { effects.append(.stopStreams(app: app, reason: .deleted)) }
        sessions[app]!.streamsRunning = false
        if session.state == .active {
            sessions[app]!.state = .inactive
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

    // MARK: - Activation and interruption (SPEC §3)

    /// Activates a session. `forInput: false` is an activation only to play (a player starting
    /// implicitly): it needs no microphone usage description (SPEC §8: "activation for input").
    /// `holder`: the application process that holds the activation (`holderEnded` ends it), nil
    /// for one no process holds. An active session activated again by a holder passes to it
    /// (the latest live activator holds it: a restarted application may activate before recd
    /// hears that its predecessor ended).
    public mutating func activate(app: String, forInput: Bool = true, holder: Int32? = nil) throws(SessionError)
        -> [PolicyEffect]
    {
        let session = try session(app)
        guard mediaServicesAvailable else {
            throw SessionError(.mediaServicesFailed, "the JACK server is gone; wait for mediaServicesWereReset and activate again")
        }
        if session.isActive {
            if let holder { sessions[app]!.holder = holder }
            return []
        }
        let config = session.configuration
        if forInput && config.category.hasInput && (session.micUsage ?? "").isEmpty {
            throw Self.missingEntitlement(app, config.category)
        }
        let victims = try arbitrate(session, as: config)
        sessions[app]!.holder = holder
        return takeOver(app, interrupting: victims) + updateDucking() + updateHints()
    }

    /// The process `holder` ended (exit, crash, SIGKILL: its last connection to recd closed).
    /// Every session it held is deactivated as with notifyOthers, its streams stopped: those it
    /// interrupted get `ended` with shouldResume; one it held that was interrupted gives up (no
    /// resume later). Sessions no process holds are untouched.
    mutating func holderEnded(_ holder: Int32) -> [PolicyEffect] {
        var effects: [PolicyEffect] = []
        for app in sessions.keys.sorted() where sessions[app]!.holder == holder {
            sessions[app]!.holder = nil
            guard sessions[app]!.state != .inactive else { continue }
            // Cannot throw: the session exists and force ends its streams.
            effects += (try? deactivate(app: app, notifyOthers: true, force: true)) ?? []
        }
        return effects
    }

    private static func missingEntitlement(_ app: String, _ category: Category) -> SessionError {
        SessionError(
            .missingEntitlement,
            "\(app) uses the input (category \(category.rawValue)) but declares no microphone usage description",
            remedy: .declareMicUsage)
    }

    /// Activation arbitration (SPEC §3), shared by `activate` and `configure` of an active
    /// session: whom `session` active with `config` would interrupt, and why, or the error
    /// that forbids it. Changes nothing.
    private func arbitrate(
        _ session: Session, as config: SessionConfiguration
    ) throws(SessionError) -> [(String, Interruption.Cause)] {
        let app = session.app
        var victims: [(String, Interruption.Cause)] = []
        var activator = session
        activator.configuration = config
        if !config.isMixable {
            let others = sessions.values.filter {
                $0.app != app && $0.isActive && !$0.isMixable && !Self.sparesAlert($0, from: activator)
            }.sorted { $0.app < $1.app }
            if let higher = others.first(where: { !Self.mayInterrupt($0, by: activator) }) {
                throw SessionError(
                    .insufficientPriority,
                    "\(higher.app) (priority \(higher.priority.rawValue)) is active and cannot be interrupted by \(app) (priority \(session.priority.rawValue)); wait for it to deactivate or add mixWithOthers")
            }
            if session.background && !others.isEmpty {
                throw SessionError(
                    .cannotInterruptOthers,
                    "\(app) is a background session and may not interrupt \(others.map(\.app).joined(separator: ", ")); add mixWithOthers or wait until they deactivate")
            }
            victims += others.map { ($0.app, .nonMixable(by: app)) }
        }
        if config.effectiveOptions.contains(.interruptSpokenAudioAndMixWithOthers) {
            // An alert is non-mixable and this option implies mixWithOthers: no alert gets here.
            let spoken = sessions.values.filter {
                $0.app != app && $0.isActive && $0.configuration.mode == .spokenAudio
                    && Self.mayInterrupt($0, by: activator) && !victims.map(\.0).contains($0.app)
            }.sorted { $0.app < $1.app }
            victims += spoken.map { ($0.app, .spokenAudio(by: app)) }
        }
        return victims
    }

    /// Whether `activator`'s activation may interrupt the active `victim` by priority: a lower
    /// class never interrupts a higher one, and nothing interrupts a logger (SPEC §3).
    static func mayInterrupt(_ victim: Session, by activator: Session) -> Bool {
        victim.priority <= activator.priority && victim.priority != .logger
    }

    /// Whether `victim` is left alone by `activator`'s activation because it prefers no
    /// interruptions from system alerts and `activator` is one (`Session.isSystemAlert`). It
    /// then stays active beside the alert; a higher-priority activation still interrupts it.
    static func sparesAlert(_ victim: Session, from activator: Session) -> Bool {
        victim.prefersNoInterruptionsFromSystemAlerts && activator.isSystemAlert
    }

    /// Makes `app` the most recently activated session and interrupts `victims` (the verdict of
    /// `arbitrate`). Ducking is the caller's to update.
    private mutating func takeOver(
        _ app: String, interrupting victims: [(String, Interruption.Cause)]
    ) -> [PolicyEffect] {
        // Active before its victims are interrupted, so it inherits what they held interrupted.
        activationCounter += 1
        sessions[app]!.state = .active
        sessions[app]!.interruption = nil
        sessions[app]!.activatedAt = activationCounter
        var effects: [PolicyEffect] = []
        for (victim, cause) in victims {
            effects += interrupt(victim, cause: cause, reason: .default)
        }
        return effects
    }

    public mutating func deactivate(app: String, notifyOthers: Bool, force: Bool) throws(SessionError) -> [PolicyEffect] {
        let session = try session(app)
        if session.state != .active {
            // An interrupted session that gives up keeps its pending `ended`, but will not auto-resume.
            if session.state == .interrupted {
                sessions[app]!.state = .inactive
                sessions[app]!.interruption?.streamsWereRunning = false
            }
            return []
        }
        if session.streamsRunning && !force {
            throw SessionError(
                .isBusy,
                "\(app) still has running players or recorders", remedy: .stopStreamsOrForce(app: app))
        }
        var effects: [PolicyEffect] = []
        if session.streamsRunning { effects.append(.stopStreams(app: app, reason: .stop)) }
        sessions[app]!.streamsRunning = false
        sessions[app]!.playersRunning = false
        sessions[app]!.state = .inactive
        effects += endInterruptions(causedBy: app, notify: notifyOthers)
        effects += updateDucking() + updateHints()
        return effects
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
            sessions[app]!.streamsRunning = apps.contains(app)
        }
    }

    /// Single-session form, for tests.
    mutating func setStreamsRunning(app: String, _ running: Bool) {
        sessions[app]?.streamsRunning = running
    }

    /// Which apps are heard (players playing, attached applications audible), after anything
    /// that starts, pauses, resumes, stops or finishes one. Returns the
    /// `silenceSecondaryAudioHint` changes this brings.
    mutating func setPlayersRunning(_ apps: Set<String>) -> [PolicyEffect] {
        for app in sessions.keys where sessions[app]!.playersRunning != apps.contains(app) {
            sessions[app]!.playersRunning = apps.contains(app)
        }
        return updateHints()
    }

    /// isOtherAudioPlaying: another session's players play.
    public func isOtherAudioPlaying(app: String) -> Bool {
        sessions.values.contains { $0.app != app && $0.playersRunning }
    }

    /// Recomputes secondaryAudioShouldBeSilencedHint: another session whose audio is primary
    /// (non-mixable) plays. Mixable sessions are told when theirs changes.
    private mutating func updateHints() -> [PolicyEffect] {
        let primary = sessions.values.filter { $0.playersRunning && !$0.isMixable }.map(\.app)
        var effects: [PolicyEffect] = []
        for app in sessions.keys.sorted() {
            let hint = primary.contains { $0 != app }
            guard hint != sessions[app]!.secondaryAudioShouldBeSilencedHint else { continue }
            sessions[app]!.secondaryAudioShouldBeSilencedHint = hint
            if sessions[app]!.isMixable { effects.append(.silenceSecondaryAudioHint(app: app, begin: hint)) }
        }
        return effects
    }

    private mutating func interrupt(_ app: String, cause: Interruption.Cause, reason: InterruptionReason) -> [PolicyEffect] {
        guard let session = sessions[app] else { return [] }
        var effects: [PolicyEffect] = [.interruption(app: app, type: .began, reason: reason, shouldResume: false)]
        if session.streamsRunning { effects.append(.pauseStreams(app: app, reason: .interruption)) }
        sessions[app]!.state = .interrupted
        sessions[app]!.streamsRunning = false
        sessions[app]!.playersRunning = false
        sessions[app]!.interruption = Interruption(cause: cause, reason: reason, streamsWereRunning: session.streamsRunning)
        // What this session held interrupted stays interrupted, now by whoever took over.
        effects += endInterruptions(causedBy: app, notify: false)
        return effects
    }

    /// Ends (or hands over) the interruptions `app` caused, now that it is no longer active.
    private mutating func endInterruptions(causedBy app: String, notify: Bool) -> [PolicyEffect] {
        var effects: [PolicyEffect] = []
        let successor = sessions.values.filter { $0.app != app && $0.isActive && !$0.isMixable }.max { $0.activatedAt < $1.activatedAt }
        for victim in sessions.values.sorted(by: { $0.app < $1.app }) {
            guard let interruption = victim.interruption else { continue }
            let shouldResume: Bool
            switch interruption.cause {
            case .nonMixable(let by) where by == app:
                if let successor {
                    sessions[victim.app]!.interruption?.cause = .nonMixable(by: successor.app)
                    continue
                }
                shouldResume = notify
            case .spokenAudio(let by) where by == app:
                shouldResume = true
            default:
                continue
            }
            effects += endInterruption(of: victim.app, shouldResume: shouldResume)
        }
        return effects
    }

    private mutating func endInterruption(of app: String, shouldResume: Bool) -> [PolicyEffect] {
        guard let session = sessions[app], let interruption = session.interruption else { return [] }
        sessions[app]!.interruption = nil
        if sessions[app]!.state == .interrupted { sessions[app]!.state = .inactive }
        var effects: [PolicyEffect] = [
            .interruption(app: app, type: .ended, reason: interruption.reason, shouldResume: shouldResume)
        ]
        if shouldResume && session.autoResume && session.state == .interrupted {
            // Headless sessions come back by themselves, only on shouldResume, only what ran.
            if let resumed = try? activate(app: app, holder: session.holder) {
                effects += resumed
                if interruption.streamsWereRunning {
                    sessions[app]!.streamsRunning = true
                    effects.append(.resumeStreams(app: app))
                }
            }
        }
        return effects
    }

    /// Recomputes who is ducked: every active session but the most recent active ducker.
    private mutating func updateDucking() -> [PolicyEffect] {
        let duckers = sessions.values.filter { $0.isActive && $0.configuration.effectiveOptions.contains(.duckOthers) }
            .sorted { $0.activatedAt > $1.activatedAt }
        var effects: [PolicyEffect] = []
        for app in sessions.keys.sorted() {
            let session = sessions[app]!
            let by = session.isActive ? duckers.first(where: { $0.app != app })?.app : nil
            guard by != session.duckedBy else { continue }
            sessions[app]!.duckedBy = by
            if let by {
                effects.append(.ducked(app: app, by: by, levelDB: duckGainDB(of: app)))
            } else {
                effects.append(.unducked(app: app))
            }
        }
        return effects
    }

    // MARK: - Ports and routes (SPEC §4)

    /// New port states from the engine (JACK registration, ALSA jack sense).
    mutating func updatePorts(_ newPorts: [PortState]) -> [PolicyEffect] {
        let processingBefore = processingOfSessions
        let oldAvailable = Set(ports.filter(\.available).map(\.name))
        let newAvailable = Set(newPorts.filter(\.available).map(\.name))
        ports = newPorts
        let gone = oldAvailable.subtracting(newAvailable)
        let came = newAvailable.subtracting(oldAvailable)
        guard !gone.isEmpty || !came.isEmpty else {
            return reroute(reason: .routeConfigurationChange) + processingChanges(since: processingBefore)
        }
        for app in sessions.keys { sessions[app]!.overrideSpeaker = false }
        var effects: [PolicyEffect] = []
        // Privacy: a session whose output went away stops playing out loud.
        for session in sessions.values.sorted(by: { $0.app < $1.app }) where session.isActive {
            guard session.route.outputs.contains(where: gone.contains) else { continue }
            if session.prefersInterruptionOnRouteDisconnect {
                effects += interrupt(session.app, cause: .routeDisconnected, reason: .routeDisconnected)
            } else if session.streamsRunning {
                effects.append(.pausePlayers(app: session.app))
            }
        }
        effects += reroute(reason: gone.isEmpty ? .newDeviceAvailable : .oldDeviceUnavailable)
        return effects + updateDucking() + updateHints() + processingChanges(since: processingBefore)
    }

    /// Each session's capture processing now: what `processingChanges` compares against.
    private var processingOfSessions: [String: CaptureProcessing] { sessions.mapValues(\.captureProcessing) }

    /// `captureProcessingChange` for each session of `before` (sorted) whose processing is no
    /// longer what it was. A new session has nothing running to change: none for it.
    private func processingChanges(since before: [String: CaptureProcessing]) -> [PolicyEffect] {
        before.keys.sorted().compactMap { app in
            guard let previous = before[app], let current = sessions[app]?.captureProcessing, current != previous
            else { return nil }
            return .captureProcessingChange(app: app, previous: previous, current: current)
        }
    }

    /// The JACK server's configuration changed under the same ports (another client changed
    /// the buffer size, or the sample rate changed): every active session hears
    /// routeChange `routeConfigurationChange` with its route unchanged (previous == current),
    /// AVAudioSession's signal to read the actual values again. Nothing else changes.
    public func routeConfigurationChanged() -> [PolicyEffect] {
        sortedSessions.filter(\.isActive).map {
            .routeChange(app: $0.app, reason: .routeConfigurationChange, previous: $0.route, current: $0.route)
        }
    }

    /// Recomputes routes; sends routeChange for each session whose route changed.
    private mutating func reroute(reason: RouteChangeReason, only: String? = nil, quiet: Bool = false) -> [PolicyEffect] {
        var effects: [PolicyEffect] = []
        for app in sessions.keys.sorted() where only == nil || only == app {
            let session = sessions[app]!
            let route = RouteChooser.choose(ports: ports, for: routeRequest(session))
            let category = session.configuration.category
            let unsuitable = (category.hasOutput && route.outputs.isEmpty) || (category.hasInput && !category.hasOutput && route.inputs.isEmpty)
            let changed = route != session.route
            sessions[app]!.route = route
            guard !quiet, changed || (reason == .categoryChange && unsuitable) else { continue }
            effects.append(
                .routeChange(app: app, reason: unsuitable ? .noSuitableRouteForCategory : reason, previous: session.route, current: route))
        }
        return effects
    }

    /// What route choice knows of `session`: its configuration, preferences, override and
    /// declared recorder's input.
    private func routeRequest(_ session: Session) -> RouteRequest {
        RouteRequest(
            configuration: session.configuration, preferredInput: session.preferences.preferredInput,
            overrideSpeaker: session.overrideSpeaker, region: region, declaredInput: session.declaredInput)
    }

    /// The capture bandwidth of each input of a session's current route.
    public func bandwidths(app: String) -> [(port: String, bandwidth: CaptureBandwidth)] {
        guard let session = sessions[app] else { return [] }
        let request = routeRequest(session)
        return session.route.inputs.compactMap { name in
            ports.first { $0.name == name }.map { (name, RouteChooser.bandwidth(of: $0, for: request)) }
        }
    }

    /// The input ports a session may use now (AVAudioSession's availableInputs): available,
    /// eligible for its category and options (HFP inputs only with allowBluetoothHFP), for
    /// dualRoute only those of its route; none for categories without input.
    public func availableInputs(app: String) -> [PortState] {
        guard let session = sessions[app], session.configuration.category.hasInput else { return [] }
        let request = RouteRequest(configuration: session.configuration, region: region)
        return ports.filter { port in
            port.available && RouteChooser.isEligibleInput(port, request: request)
                && (session.configuration.mode != .dualRoute || session.route.inputs.contains(port.name))
        }
    }

    /// The most channels the ports of a session's route have, per direction (0: none): what
    /// preferred channel counts may use (maximumInputChannels, maximumOutputChannels).
    public func maximumChannels(app: String) -> (input: Int, output: Int) {
        guard let route = sessions[app]?.route else { return (0, 0) }
        func most(_ names: [String], asOutput: Bool) -> Int {
            names.compactMap { name in ports.first { $0.name == name }?.channels(asOutput: asOutput) }.max() ?? 0
        }
        return (most(route.inputs, asOutput: false), most(route.outputs, asOutput: true))
    }

    // MARK: - Input mute (SPEC §4, §8)

    /// App input mute: stored always, announced only to active input sessions.
    public mutating func setInputMuted(app: String, _ muted: Bool) throws(SessionError) -> [PolicyEffect] {
        let session = try session(app)
        guard session.inputMuted != muted else { return [] }
        sessions[app]!.inputMuted = muted
        var effects: [PolicyEffect] = [.sessionChanged(app: app)]
        if session.isActive && session.configuration.category.hasInput {
            effects.append(.inputMuteStateChange(app: app, muted: muted))
        }
        return effects
    }

    /// The hardware capture switch of an input port (ALSA): interrupts its active users
    /// (builtInMicMuted) unless they set overrideMutedMicrophoneInterruption.
    mutating func setHardwareMuted(port: String, _ muted: Bool) -> [PolicyEffect] {
        guard mutedPorts.contains(port) != muted else { return [] }
        var effects: [PolicyEffect] = []
        if muted {
            mutedPorts.insert(port)
            for session in sessions.values.sorted(by: { $0.app < $1.app })
            where session.isActive && session.route.inputs.contains(port)
                && !session.configuration.effectiveOptions.contains(.overrideMutedMicrophoneInterruption)
            {
                effects += interrupt(session.app, cause: .hardwareMute(port: port), reason: .builtInMicMuted)
            }
        } else {
            mutedPorts.remove(port)
            for session in sessions.values.sorted(by: { $0.app < $1.app })
            where session.interruption?.cause == .hardwareMute(port: port) {
                effects += endInterruption(of: session.app, shouldResume: true)
            }
        }
        return effects + updateDucking() + updateHints()
    }

    // MARK: - Record permission (SPEC §8)

    public mutating func setPermission(app: String, _ state: RecordPermission) -> [PolicyEffect] {
        guard permission(app) != state else { return [] }
        permissions[app] = state == .undetermined ? nil : state
        return [.recordPermission(app: app, state: state)]
    }

    /// An administrator's decision on `app`'s record permission. Denied stays denied: a grant
    /// after a denial is refused until the permission is reset (SPEC §8's "once denied").
    public mutating func decidePermission(app: String, _ state: RecordPermission) throws(SessionError) -> [PolicyEffect] {
        if state == .granted && permission(app) == .denied {
            throw SessionError(.badParam, "record permission for \(app) is denied; denied stays denied until reset: run `recctl permission reset \(app)` first")
        }
        return setPermission(app: app, state)
    }

    /// Whether `app`'s captures must carry silence instead of its inputs: its input is muted,
    /// or it lacks record permission. No sample of an input reaches a file of an app that is
    /// not granted (SPEC §8); an unknown app is silenced.
    public func capturesSilenced(app: String) -> Bool {
        (sessions[app]?.inputMuted ?? true) || permission(app) != .granted
    }

    // MARK: - Limits: what one user may make the daemon hold

    /// Who asks to create or grow a session. Whether they are an administrator (root, or a
    /// member of the configured admin group) is the daemon's to tell: the store sees no groups.
    public struct Requester: Equatable, Sendable {
        public var uid: UInt32
        public var isAdministrator: Bool

        public init(uid: UInt32, isAdministrator: Bool) {
            self.uid = uid
            self.isAdministrator = isAdministrator
        }
    }

    /// The most sessions non-administrators may make together; administrators may go past it,
    /// so that no user's flood ever locks root out.
    public static let maxSessions = 1024
    /// The most sessions one user (not an administrator) may own: 16 users fill `maxSessions`.
    public static let maxSessionsPerUser = 64
    /// The longest microphone usage description, in UTF-8 bytes (AVAudioSession's is a
    /// sentence in Info.plist).
    public static let maxMicUsageBytes = 1024
    /// The most bytes of client-given text (app names and microphone usage descriptions) the
    /// sessions of one user (not an administrator) may hold: what that user's part of
    /// state.json, `status` and `session.list` grows with.
    public static let maxStateBytesPerUser = 32 * 1024

    /// Bytes of client-given text a session holds.
    public static func stateBytes(app: String, micUsage: String?) -> Int {
        app.utf8.count + (micUsage?.utf8.count ?? 0)
    }

    /// Bytes of client-given text the sessions owned by `uid` hold.
    public func stateBytes(ownedBy uid: UInt32) -> Int {
        sessions.values.reduce(0) {
            $0 + ($1.ownerUID == uid ? Self.stateBytes(app: $1.app, micUsage: $1.micUsage) : 0)
        }
    }

    /// Sessions owned by `uid`.
    public func sessionCount(ownedBy uid: UInt32) -> Int {
        sessions.values.reduce(0) { $0 + ($1.ownerUID == uid ? 1 : 0) }
    }

    /// Checks, before `configure`, that `requester` may create `app` (or change it) with the
    /// microphone usage description `micUsage` (`.none`: unchanged; `.some(nil)`: cleared), in
    /// this order: the description's length (everyone: badParam); then, for anyone but an
    /// administrator, the sessions one user may own, all sessions together, and the bytes one
    /// user's sessions hold (resourceNotAvailable). An existing session stays within them
    /// whatever it had: reconfiguring it never needs room it already has.
    public func checkRoom(for app: String, micUsage: String?? = .none, by requester: Requester) throws(SessionError) {
        if case .some(.some(let text)) = micUsage, text.utf8.count > Self.maxMicUsageBytes {
            throw SessionError(
                .badParam,
                "the microphone usage description is \(text.utf8.count) bytes; write one of at most "
                    + "\(Self.maxMicUsageBytes) bytes (a sentence saying why the app records)")
        }
        if requester.isAdministrator { return }
        let existing = sessions[app]
        let owner = existing?.ownerUID ?? requester.uid
        let deleteHint = "delete unused ones with `recctl session delete APP`, or ask an administrator"
        if existing == nil {
            let owned = sessionCount(ownedBy: owner)
            if owned >= Self.maxSessionsPerUser {
                throw SessionError(
                    .resourceNotAvailable,
                    "uid \(owner) owns \(owned) sessions, the most one user may; \(deleteHint)")
            }
            if sessions.count >= Self.maxSessions {
                throw SessionError(
                    .resourceNotAvailable, "too many sessions (\(Self.maxSessions)); \(deleteHint)")
            }
        }
        let newText: String?
        switch micUsage {
        case .none: newText = existing?.micUsage
        case .some(let text): newText = text
        }
        let before = existing.map { Self.stateBytes(app: app, micUsage: $0.micUsage) } ?? 0
        let after = Self.stateBytes(app: app, micUsage: newText)
        let total = stateBytes(ownedBy: owner) - before + after
        if after > before && total > Self.maxStateBytesPerUser {
            throw SessionError(
                .resourceNotAvailable,
                "the sessions of uid \(owner) would hold \(total) bytes of names and microphone usage "
                    + "descriptions, more than the \(Self.maxStateBytesPerUser) one user may; shorten the "
                    + "descriptions or \(deleteHint)")
        }
    }

    /// The most players one session may have (one per stream), for everyone.
    public static let maxPlayersPerSession = 8
    /// The most players the sessions of one user (not an administrator) may have together.
    public static let maxPlayersPerUser = 16
    /// The most players of all non-administrators together.
    public static let maxPlayers = 128

    /// Checks that `app` may start a player on a stream that has none (`newStream`; a stream
    /// that plays may always take a new file: it replaces its player). `players` is how many
    /// players each app has now. Each is a feeder thread, a ring and a converter in the daemon,
    /// so a client's loop of `play --stream N` stops here, with resourceNotAvailable, rather
    /// than at the system's thread limit. Administrators are held only to the per-session limit.
    public func checkPlayerRoom(
        app: String, newStream: Bool, players: [String: Int], by requester: Requester
    ) throws(SessionError) {
        let session = try session(app)
        guard newStream else { return }
        let own = players[app] ?? 0
        let stopHint = "stop one with `recctl stop APP --stream NAME`, or play on a stream that plays"
        if own >= Self.maxPlayersPerSession {
            throw SessionError(
                .resourceNotAvailable, "\(app) has \(own) players, the most one session may; \(stopHint)")
        }
        if requester.isAdministrator { return }
        let owner = session.ownerUID
        let owned = players.reduce(0) { $0 + (sessions[$1.key]?.ownerUID == owner ? $1.value : 0) }
        if owned >= Self.maxPlayersPerUser {
            throw SessionError(
                .resourceNotAvailable,
                "the sessions of uid \(owner) have \(owned) players, the most one user may; \(stopHint)")
        }
        let all = players.values.reduce(0, +)
        if all >= Self.maxPlayers {
            throw SessionError(
                .resourceNotAvailable, "recd plays \(all) files already, the most it plays at once; \(stopHint)")
        }
    }

    /// Checks that `app` may record the input `port` given its mode: a dualRoute session records
    /// only the inputs of its route (its built-in microphone and one duplex secondary).
    public func checkRecordInput(app: String, port: String) throws(SessionError) {
        let session = try session(app)
        guard session.configuration.mode == .dualRoute, !session.route.inputs.contains(port) else { return }
        let duplex = ports.filter { $0.direction == .duplex && RouteChooser.dualRouteSecondaryTypes.contains($0.type) }
            .map(\.name)
        throw SessionError(
            .resourceNotAvailable,
            "dualRoute records its built-in microphone and one duplex secondary (\(session.route.inputs.joined(separator: ", "))); \(port) is not one of them. A secondary must be a duplex headsetMic, bluetoothHFP or bluetoothLE port\(duplex.isEmpty ? " (none is configured)" : ": \(duplex.joined(separator: ", "))")")
    }

    /// Checks that a session may start a recorder now (SPEC §8, §2).
    public func checkCanRecord(app: String) throws(SessionError) {
        let session = try session(app)
        guard mediaServicesAvailable else {
            throw SessionError(.mediaServicesFailed, "the JACK server is gone; wait for mediaServicesWereReset and start the recorder again")
        }
        let category = session.configuration.category
        guard category.hasInput else {
            throw SessionError(.incompatibleCategory, "category \(category.rawValue) cannot record; set record, playAndRecord or multiRoute")
        }
        if (session.micUsage ?? "").isEmpty {
            throw SessionError(
                .missingEntitlement, "\(app) declares no microphone usage description", remedy: .declareMicUsage)
        }
        switch permission(app) {
        case .granted: return
        case .denied:
            throw SessionError(.cannotStartRecording, "record permission for \(app) is denied; an administrator can reset it with `recctl permission reset \(app)` and grant it with `recctl permission grant \(app)`")
        case .undetermined:
            throw SessionError(.cannotStartRecording, "record permission for \(app) is undetermined; an administrator must grant it with `recctl permission grant \(app)`")
        }
    }

    // MARK: - Media services (SPEC §6)

    public mutating func mediaServicesLost() -> [PolicyEffect] {
        guard mediaServicesAvailable else { return [] }
        mediaServicesAvailable = false
        var effects: [PolicyEffect] = [.mediaServicesWereLost]
        for app in sessions.keys.sorted() {
            let session = sessions[app]!
            if session.streamsRunning { effects.append(.stopStreams(app: app, reason: .mediaServicesLost)) }
            sessions[app]!.resumeAfterReset = session.autoResume && session.streamsRunning
            sessions[app]!.streamsRunning = false
            sessions[app]!.playersRunning = false
            if session.state == .active { sessions[app]!.state = .inactive }
        }
        return effects + updateDucking() + updateHints()
    }

    public mutating func mediaServicesReset() -> [PolicyEffect] {
        guard !mediaServicesAvailable else { return [] }
        mediaServicesAvailable = true
        var effects: [PolicyEffect] = [.mediaServicesWereReset]
        for app in sessions.keys.sorted() where sessions[app]!.resumeAfterReset {
            sessions[app]!.resumeAfterReset = false
            if let activated = try? activate(app: app, holder: sessions[app]!.holder) {
                effects += activated
                sessions[app]!.streamsRunning = true
                effects.append(.resumeStreams(app: app))
            }
        }
        return effects
    }
}

// The arbiter's core (SPEC §3): activation, interruption and ducking, who may take the audio
// from whom and what each session is told. Pure like the rest of the store: effects out, no I/O.

extension SessionStore {
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
            throw SessionError(
                .mediaServicesFailed, "the JACK server is gone; wait for mediaServicesWereReset and activate again")
        }
        if session.isActive {
            if let holder { sessions[app]!.activation.holder = holder }
            return []
        }
        let config = session.configuration
        if forInput && config.category.hasInput && (session.micUsage ?? "").isEmpty {
            throw Self.missingEntitlement(app, config.category)
        }
        let victims = try arbitrate(session, as: config)
        sessions[app]!.activation.holder = holder
        return takeOver(app, interrupting: victims) + updateDucking() + updateHints()
    }

    /// The process `holder` ended (exit, crash, SIGKILL: its last connection to recd closed).
    /// Every session it held is deactivated as with notifyOthers, its streams stopped: those it
    /// interrupted get `ended` with shouldResume; one it held that was interrupted gives up (no
    /// resume later). Sessions no process holds are untouched.
    mutating func holderEnded(_ holder: Int32) -> [PolicyEffect] {
        var effects: [PolicyEffect] = []
        for app in sessions.keys.sorted() where sessions[app]!.holder == holder {
            sessions[app]!.activation.holder = nil
            guard sessions[app]!.state != .inactive else { continue }
            // Cannot throw: the session exists and force ends its streams.
            effects += (try? deactivate(app: app, notifyOthers: true, force: true)) ?? []
        }
        return effects
    }

    static func missingEntitlement(_ app: String, _ category: Category) -> SessionError {
        SessionError(
            .missingEntitlement,
            "\(app) uses the input (category \(category.rawValue)) but declares no microphone usage description",
            remedy: .declareMicUsage)
    }

    /// Activation arbitration (SPEC §3), shared by `activate` and `configure` of an active
    /// session: whom `session` active with `config` would interrupt, and why, or the error
    /// that forbids it. Changes nothing.
    func arbitrate(
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
                    "\(higher.app) (priority \(higher.priority.rawValue)) is active and cannot be interrupted by \(app) (priority \(session.priority.rawValue)); wait for it to deactivate or add mixWithOthers"
                )
            }
            if session.background && !others.isEmpty {
                throw SessionError(
                    .cannotInterruptOthers,
                    "\(app) is a background session and may not interrupt \(others.map(\.app).joined(separator: ", ")); add mixWithOthers or wait until they deactivate"
                )
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
    mutating func takeOver(
        _ app: String, interrupting victims: [(String, Interruption.Cause)]
    ) -> [PolicyEffect] {
        // Active before its victims are interrupted, so it inherits what they held interrupted.
        activationCounter += 1
        sessions[app]!.activation.state = .active
        sessions[app]!.activation.interruption = nil
        sessions[app]!.activation.activatedAt = activationCounter
        var effects: [PolicyEffect] = []
        for (victim, cause) in victims {
            effects += interrupt(victim, cause: cause, reason: .default)
        }
        return effects
    }

    public mutating func deactivate(app: String, notifyOthers: Bool, force: Bool) throws(SessionError) -> [PolicyEffect]
    {
        let session = try session(app)
        if session.state != .active {
            // An interrupted session that gives up keeps its pending `ended`, but will not auto-resume.
            if session.state == .interrupted {
                sessions[app]!.activation.state = .inactive
                sessions[app]!.activation.interruption?.streamsWereRunning = false
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
        sessions[app]!.streams.running = false
        sessions[app]!.streams.playing = false
        sessions[app]!.activation.state = .inactive
        effects += endInterruptions(causedBy: app, notify: notifyOthers)
        effects += updateDucking() + updateHints()
        return effects
    }

    mutating func interrupt(_ app: String, cause: Interruption.Cause, reason: InterruptionReason) -> [PolicyEffect] {
        guard let session = sessions[app] else { return [] }
        var effects: [PolicyEffect] = [.interruption(app: app, type: .began, reason: reason, shouldResume: false)]
        if session.streamsRunning { effects.append(.pauseStreams(app: app, reason: .interruption)) }
        sessions[app]!.activation.state = .interrupted
        sessions[app]!.streams.running = false
        sessions[app]!.streams.playing = false
        sessions[app]!.activation.interruption = Interruption(
            cause: cause, reason: reason, streamsWereRunning: session.streamsRunning)
        // What this session held interrupted stays interrupted, now by whoever took over.
        effects += endInterruptions(causedBy: app, notify: false)
        return effects
    }

    /// Ends (or hands over) the interruptions `app` caused, now that it is no longer active.
    mutating func endInterruptions(causedBy app: String, notify: Bool) -> [PolicyEffect] {
        var effects: [PolicyEffect] = []
        let successor = sessions.values.filter { $0.app != app && $0.isActive && !$0.isMixable }.max {
            $0.activation.activatedAt < $1.activation.activatedAt
        }
        for victim in sessions.values.sorted(by: { $0.app < $1.app }) {
            guard let interruption = victim.interruption else { continue }
            let shouldResume: Bool
            switch interruption.cause {
            case .nonMixable(let by) where by == app:
                if let successor {
                    sessions[victim.app]!.activation.interruption?.cause = .nonMixable(by: successor.app)
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

    mutating func endInterruption(of app: String, shouldResume: Bool) -> [PolicyEffect] {
        guard let session = sessions[app], let interruption = session.interruption else { return [] }
        sessions[app]!.activation.interruption = nil
        if sessions[app]!.state == .interrupted { sessions[app]!.activation.state = .inactive }
        var effects: [PolicyEffect] = [
            .interruption(app: app, type: .ended, reason: interruption.reason, shouldResume: shouldResume)
        ]
        if shouldResume && session.autoResume && session.state == .interrupted {
            // Headless sessions come back by themselves, only on shouldResume, only what ran.
            if let resumed = try? activate(app: app, holder: session.holder) {
                effects += resumed
                if interruption.streamsWereRunning {
                    sessions[app]!.streams.running = true
                    effects.append(.resumeStreams(app: app))
                }
            }
        }
        return effects
    }

    /// Recomputes who is ducked: every active session but the most recent active ducker.
    mutating func updateDucking() -> [PolicyEffect] {
        let duckers = sessions.values.filter { $0.isActive && $0.configuration.effectiveOptions.contains(.duckOthers) }
            .sorted { $0.activation.activatedAt > $1.activation.activatedAt }
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
}

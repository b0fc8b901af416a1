// Ports, routes and input mute (SPEC §4, §8): the store's picture of the ports, each session's
// route chosen from it, and the mutes (the session's own and the hardware capture switch).

extension SessionStore {
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
    var processingOfSessions: [String: CaptureProcessing] { sessions.mapValues(\.captureProcessing) }

    /// `captureProcessingChange` for each session of `before` (sorted) whose processing is no
    /// longer what it was. A new session has nothing running to change: none for it.
    func processingChanges(since before: [String: CaptureProcessing]) -> [PolicyEffect] {
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
    mutating func reroute(reason: RouteChangeReason, only: String? = nil, quiet: Bool = false) -> [PolicyEffect] {
        var effects: [PolicyEffect] = []
        for app in sessions.keys.sorted() where only == nil || only == app {
            let session = sessions[app]!
            let route = RouteChooser.choose(ports: ports, for: routeRequest(session))
            let category = session.configuration.category
            let unsuitable =
                (category.hasOutput && route.outputs.isEmpty)
                || (category.hasInput && !category.hasOutput && route.inputs.isEmpty)
            let changed = route != session.route
            sessions[app]!.route = route
            guard !quiet, changed || (reason == .categoryChange && unsuitable) else { continue }
            effects.append(
                .routeChange(
                    app: app, reason: unsuitable ? .noSuitableRouteForCategory : reason, previous: session.route,
                    current: route))
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
}

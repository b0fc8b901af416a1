// Players in the graph: added paused, played, paused, gained, moved between output groups
// (after the reconciler has connected the new group), removed. Control thread.
import Platform

#if canImport(Glibc)
    import Glibc  // pow
#endif

extension AudioEngine {
    // MARK: Players

    /// Adds a player to an output group, paused; returns its handle for the feeder.
    ///
    /// A player named as a monitoring source (`MonitoringSource.player(player.id)`) plays to
    /// the buses instead of its output group; see `setMonitoring`.
    ///
    /// - Parameters:
    ///   - channels: interleaved channels the feeder writes.
    ///   - routes: where each channel goes; default `PlayerRoute.defaultRoutes`.
    ///   - bufferFrames: ring size; default one second.
    ///   - gainDecibels: the gain `play` ramps to.
    public func addPlayer(
        channels: Int, outputGroup: String, routes: [PlayerRoute]? = nil, bufferFrames: Int? = nil,
        gainDecibels: Double = 0
    ) throws(AudioEngineError) -> PlayerHandle {
        guard let connection, let client = runningClient else { throw lostOrNotRunning }
        guard let group = connection.outputs.first(where: { $0.spec.name == outputGroup }) else {
            throw .unknownGroup(outputGroup)
        }
        guard channels > 0 else { throw .invalidArgument("a player needs at least one channel") }
        let routes = try Self.checkedRoutes(routes, playerChannels: channels, group: group)
        let player = PlayerHandle(
            outputGroup: outputGroup, channels: channels,
            capacityFrames: max(bufferFrames ?? client.sampleRate, 1), routes: routes,
            flatOutputBase: group.flatBase,
            initialCommand: PlayerCommand(
                gain: Self.linearGain(decibels: gainDecibels), rampFrames: 0, paused: true))
        connection.memory.publish(
            players: connection.memory.players + [player], taps: connection.memory.taps)
        return player
    }

    /// Moves a player to another output group without a gap: from the process thread's next
    /// period its samples crossfade over `rampMilliseconds` from the old group's channels to
    /// the new group's (the same samples, fading out there while they fade in here; 0: at
    /// once). A paused player simply plays to the new group when it resumes. A player that
    /// is a monitoring source keeps feeding the buses (the new routes' channels within the
    /// group are its bus channels).
    ///
    /// The move asks the connection reconciler for the new group's edges first and is published
    /// when it answers (a pass on the "jack connection" thread, a few milliseconds; the answer
    /// is taken up by `drainNotifications`, which the `wake` it causes brings): a device that
    /// has just arrived is connected before the player's first period there. Until then
    /// `player.outputGroup` names the old group, and the player's later `play`, `pause` and
    /// `setGain` wait behind the move, in order. `moved` runs on the control thread once the
    /// move is published; a move under way when the engine stops is dropped, with its `moved`.
    /// Checks throw at once.
    ///
    /// - Parameter routes: where each channel goes in the new group; default
    ///   `PlayerRoute.defaultRoutes`.
    public func movePlayer(
        _ player: PlayerHandle, toOutputGroup outputGroup: String, routes: [PlayerRoute]? = nil,
        rampMilliseconds: Double = AudioEngine.defaultRampMilliseconds, moved: (() -> Void)? = nil
    ) throws(AudioEngineError) {
        guard let connection, runningClient != nil else { throw lostOrNotRunning }
        guard let group = connection.outputs.first(where: { $0.spec.name == outputGroup }) else {
            throw .unknownGroup(outputGroup)
        }
        guard rampMilliseconds.isFinite, rampMilliseconds >= 0 else {
            throw .invalidArgument("a ramp takes 0 ms or more, not \(rampMilliseconds)")
        }
        let routes = try Self.checkedRoutes(routes, playerChannels: player.channels, group: group)
        let (base, frames) = (group.flatBase, rampFrames(rampMilliseconds))
        let request = connection.playerChanges.waitForAnswer(player) {
            player.move(toOutputGroup: outputGroup, routes: routes, flatOutputBase: base, crossfadeFrames: frames)
            moved?()
        }
        requestEdges(of: group, connection, request: request)
    }

    /// `routes`, or the default ones, checked against the player's and the group's channels.
    static func checkedRoutes(_ routes: [PlayerRoute]?, playerChannels channels: Int, group: Group)
        throws(AudioEngineError) -> [PlayerRoute]
    {
        let routes =
            routes
            ?? PlayerRoute.defaultRoutes(
                playerChannels: channels, groupChannels: group.spec.channels)
        for route in routes
        where !(0..<channels).contains(route.source)
            || !(0..<group.spec.channels).contains(route.destination)
        {
            throw .invalidArgument(
                "route \(route.source + 1) → \(route.destination + 1) is outside the player's \(channels) "
                    + "or group '\(group.spec.name)''s \(group.spec.channels) channels")
        }
        return routes
    }

    /// Starts or resumes a player, fading in over `rampMilliseconds` (0: at once, sample-exact).
    public func play(_ player: PlayerHandle, rampMilliseconds: Double = 0) {
        let frames = rampFrames(rampMilliseconds)
        update(player) {
            $0.paused = false
            $0.rampFrames = frames
        }
    }

    /// Fades a player out over `rampMilliseconds`, after which it stops reading its ring.
    public func pause(
        _ player: PlayerHandle, rampMilliseconds: Double = AudioEngine.defaultRampMilliseconds
    ) {
        let frames = rampFrames(rampMilliseconds)
        update(player) {
            $0.paused = true
            $0.rampFrames = frames
        }
    }

    /// Moves a player's gain linearly to `decibels` over `rampMilliseconds` (for ducking:
    /// -14 dB over 20 ms). A paused player takes the new gain when it next plays.
    public func setGain(
        _ player: PlayerHandle, decibels: Double,
        rampMilliseconds: Double = AudioEngine.defaultRampMilliseconds
    ) {
        let (gain, frames) = (Self.linearGain(decibels: decibels), rampFrames(rampMilliseconds))
        update(player) {
            $0.gain = gain
            $0.rampFrames = frames
        }
    }

    /// Takes a player out of the graph (it stops at once: pause first for a fade); a move of it
    /// still waiting for the reconciler is dropped.
    public func removePlayer(_ player: PlayerHandle) {
        player.detach()
        connection?.playerChanges.forget(player)
        guard let connection, connection.memory.players.contains(where: { $0 === player }) else {
            return
        }
        connection.memory.publish(
            players: connection.memory.players.filter { $0 !== player },
            taps: connection.memory.taps)
    }

    /// Changes the player's command now, or after its move that waits for the reconciler.
    func update(_ player: PlayerHandle, _ change: @escaping (inout PlayerCommand) -> Void) {
        let apply = {
            var command = PlayerCommand(packed: player.voice.pointee.command.load(ordering: .relaxed))
            change(&command)
            player.voice.pointee.command.store(command.packed, ordering: .releasing)
        }
        guard let connection else { return apply() }
        connection.playerChanges.apply(player, apply)
    }

    func rampFrames(_ milliseconds: Double) -> Int {
        let rate = Double(runningClient?.sampleRate ?? 48_000)
        return max(0, Int((milliseconds / 1000 * rate).rounded()))
    }

    /// 10^(dB/20); -infinity gives 0.
    public static func linearGain(decibels: Double) -> Float {
        decibels == -.infinity ? 0 : Float(pow(10, decibels / 20))
    }
}

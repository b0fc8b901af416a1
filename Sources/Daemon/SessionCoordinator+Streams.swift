// The coordinator's players and recorders: the policy's checks and orders before a service
// starts, pauses or stops a stream (permission, activation, the route, eligibility, channel
// choices, the duck gain: all the store's), and the recorders that follow the route or are
// declared in recd.conf. The services report what then runs (`ServiceFact.streams`); nothing
// here tells the store.
//
// Threads: the control thread.
import Archive
import AudioEngine
import Codec
import ControlProtocol
import Platform
import SessionPolicy
import SystemSupport

extension SessionCoordinator {
    /// A stream name a client gives (`play`, `record.start`): it is kept in the players and
    /// recorders, shown in every `status` and event, and part of segment file names, so it is
    /// bounded like an app name: 1-64 bytes, no control characters.
    static func checkStreamName(_ stream: String?) throws {
        guard let stream else { return }
        let printable = stream.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
        guard (1...64).contains(stream.utf8.count), printable else {
            throw SessionError(
                .badParam,
                "stream name \"\(stream.prefix(64))\(stream.utf8.count > 64 ? "..." : "")\" is not valid; use 1-64 "
                    + "bytes without control characters")
        }
    }

    // MARK: Players

    private func checkCanPlay(_ session: Session) throws {
        guard session.configuration.category.hasOutput else {
            throw SessionError(
                .incompatibleCategory,
                "category \(session.configuration.category.rawValue) cannot play; set playback, playAndRecord or "
                    + "multiRoute"
            )
        }
    }

    /// `play`: a new file on a stream (replacing what that stream played), or, without a file,
    /// resuming the session's paused players. Activates the session (arbitration applies).
    ///
    /// recd never opens the path a request names: the client opens the file with its own
    /// rights and passes the descriptor with the request line (`descriptors`, SCM_RIGHTS);
    /// `file` is only its display name. A `ReadOnlyFile` owns the descriptor from here on and
    /// closes it when the player (and the probe) are gone.
    ///
    /// The file's header is read on the player starter's thread first: a bad file changes
    /// nothing (no activation). Then, back here, `startPlayer`; the reply comes when the
    /// player plays. Meanwhile the control thread serves everyone else.
    func play(_ play: PlayRequest, from caller: Caller, descriptors: inout PassedDescriptors) throws -> Answer {
        let app = play.app
        try Self.checkStreamName(play.stream)
        let session = try store.session(app)
        try checkCanPlay(session)
        guard let path = play.file else {
            guard descriptors.isEmpty else {
                throw SessionError(
                    .badParam,
                    "a descriptor passed with play needs \"file\", the file's name for events and status "
                        + "(its absolute path)")
            }
            let paused = players.of(app).filter {
                $0.pausedBy != nil && (play.stream == nil || $0.stream == play.stream)
            }
            guard !paused.isEmpty else {
                throw SessionError(
                    .cannotStartPlaying, "\(app) has no paused player to resume; give a file: `recctl play \(app) FILE`"
                )
            }
            if !session.isActive { apply(try store.activate(app: app, forInput: false)) }
            let outputs = try store.session(app).route.outputs
            let limit = try store.session(app).preferences.outputChannels(ofPort:)
            for player in paused { try players.resume(player, routeOutputs: outputs, channelLimit: limit) }
            return .now([("players", .array(players.of(app).map(\.json)))])
        }
        guard let descriptor = descriptors.take() else {
            throw SessionError(
                .badParam,
                "recd does not open files named in requests; open \(path) yourself and pass the descriptor "
                    + "with the request line (SCM_RIGHTS), as `recctl play` does")
        }
        let file: ReadOnlyFile
        do {
            file = try ReadOnlyFile(adopting: descriptor, name: path)
        } catch {
            throw SessionError(.cannotStartPlaying, "cannot play \(path): \(error.message)")
        }
        let reply = caller.reply
        players.probe(file, for: caller.client) { [weak self] probed in
            guard let self else { return }
            let started: PlayerService.Started = { result in
                reply(result.map { [("player", $0)] })
            }
            do {
                try startPlayer(play, file: try probed.get(), caller: caller, started: started)
            } catch {
                started(.failure(RequestGate.replyError(error)))
            }
        }
        return .later
    }

    /// The policy part of starting a player, once its file's header is known to be good: the
    /// session may have changed meanwhile, so it is checked again (ownership included); then
    /// activation, the route and the port, and the player service starts the player.
    private func startPlayer(
        _ play: PlayRequest, file: ProbedFile, caller: Caller, started: @escaping PlayerService.Started
    ) throws {
        let app = play.app
        try caller.gate.authorizeChange(of: app, ownedBy: store.sessions[app]?.ownerUID, by: caller.peer)
        let session = try store.session(app)
        try checkCanPlay(session)
        let stream = play.stream ?? "main"
        try store.checkPlayerRoom(
            app: app, newStream: players.get(app, stream) == nil, players: players.countsByApp,
            by: caller.requester)
        // Without channels named in `to`: the port's first N, N the preferred output channels.
        func channels(on port: String) -> [Int]? {
            play.to?.channels ?? session.preferences.playChannels(ofPort: engine.output(port: port)?.channels ?? 0)
        }
        // The budget before the activation: a play refused for it interrupts nobody. Routes are
        // chosen for inactive sessions too, so the port is the one it will play to.
        if let port = play.to?.port ?? session.route.outputs.first,
            let load = players.load(of: file, port: port, channels: channels(on: port))
        {
            try store.checkPlayerLoad(
                app: app, adding: load, replacing: players.get(app, stream)?.load.samplesPerSecond ?? 0,
                loads: players.loadsByApp, budget: config.daemon.playerLoadPerUser, by: caller.requester)
        }
        guard engine.audio.isRunning else {
            throw SessionError(
                .mediaServicesFailed, "the JACK server is gone; wait for mediaServicesWereReset and play again")
        }
        if !session.isActive { apply(try store.activate(app: app, forInput: false)) }
        let route = try store.session(app).route
        guard let port = play.to?.port ?? route.outputs.first else {
            throw SessionError(
                .cannotStartPlaying,
                "\(app) has no output route (no available output port suits category "
                    + "\(session.configuration.category.rawValue)); see `recctl routes`"
            )
        }
        guard route.outputs.contains(port) else {
            throw SessionError(
                .cannotStartPlaying,
                "port \(port) is not in \(app)'s output route (\(route.outputs.joined(separator: ", "))); pick one "
                    + "of those with --to"
            )
        }
        try players.start(
            PlayOrder(
                app: app, stream: stream, file: file, port: port, channels: channels(on: port),
                followsRoute: play.to == nil, gainDB: store.duckGainDB(of: app)),
            started: started)
    }

    /// `pause`, `stop`: the session's players (one stream, or all).
    func pauseOrStop(app: String, stream: String?, stop: Bool) throws -> [(String, JSONValue)] {
        _ = try store.session(app)
        let targets = players.of(app).filter { stream == nil || $0.stream == stream }
        guard !targets.isEmpty else {
            throw SessionError(
                .badParam,
                "\(app) has no player\(stream.map { " named \($0)" } ?? ""); start one with `recctl play \(app) "
                    + "FILE`"
            )
        }
        for player in targets {
            if stop {
                players.stop(player, reason: "stop")
            } else {
                players.pause(player, cause: .user)
            }
        }
        return [("players", .array(players.of(app).map(\.json)))]
    }

    /// Preferred channel counts take effect at once on running streams (SPEC §5): players that
    /// follow the route re-route to the port's first N channels (crossfaded); an input
    /// recorder whose channel count changes goes on in a new segment with the new count
    /// (END_REASON=routeChange, continuous in time, as for an input switch).
    func applyChannelPreferences(of app: String, before: HardwarePreferences, after: HardwarePreferences) {
        if before.outputChannels != after.outputChannels {
            players.applyChannelLimit(of: app, channelLimit: after.outputChannels(ofPort:))
        }
        guard before.inputChannels != after.inputChannels else { return }
        for stream in recorders.of(app) where stream.spec.bus == nil {
            guard let port = config.port(named: stream.spec.port),
                after.inputChannels(ofPort: port.channels) != stream.tap.channels
            else { continue }
            do {
                try startRecorder(stream.spec, replacing: stream)
            } catch {
                Log.error("\(app): \(stream.spec.stream) keeps \(stream.tap.channels) channels: \(error)")
            }
        }
    }

    // MARK: Recorders

    /// `record.start`: permission-gated (SPEC §8), implicit activation, one tap + one recorder.
    func recordStart(_ start: RecordStartRequest) throws -> [(String, JSONValue)] {
        let app = start.app
        try Self.checkStreamName(start.stream)
        try store.checkCanRecord(app: app)
        if let triggerDB = start.triggerDB {
            return try triggers.arm(start, triggerDB: triggerDB) { apply(try store.activate(app: app)) }
        }
        if let busName = start.bus {
            // What the room heard (main) or the DJ's pre-listen (cue): both carry input samples,
            // so the same permission gate applies.
            guard let bus = Bus(rawValue: busName) else {
                throw SessionError(.badParam, "bus \(busName) is not main or cue")
            }
            guard monitoring.owner == app else {
                throw SessionError(
                    .incompatibleCategory,
                    "\(app) has no monitoring buses; set them up with `recctl cue \(app) outputs --main PORT --cue "
                        + "PORT`"
                )
            }
            let stream = start.stream ?? bus.rawValue
            if recorders.isRecording(app, stream: stream) {
                throw SessionError(
                    .badParam, "\(app) already records stream \(stream); stop it first or use --stream NAME")
            }
            let started = try startRecorder(RecorderSpec(app: app, stream: stream, port: "bus:" + bus.rawValue))
            return [("recorder", recorders.info(of: started).json)]
        }
        let session = try store.session(app)
        if !session.isActive { apply(try store.activate(app: app)) }
        let route = try store.session(app).route
        guard let portName = start.input ?? route.inputs.first else {
            throw SessionError(
                .resourceNotAvailable, "\(app) has no input route (no available input suits it); see `recctl routes`")
        }
        try store.checkRecordInput(app: app, port: portName)
        let stream = start.stream ?? portName
        if recorders.isRecording(app, stream: stream) {
            throw SessionError(.badParam, "\(app) already records stream \(stream); stop it first or use --stream NAME")
        }
        let started = try startRecorder(
            RecorderSpec(app: app, stream: stream, port: portName, followsRoute: start.input == nil))
        return [("recorder", recorders.info(of: started).json)]
    }

    /// `record.stop`: answered once the stopped recorders have finished their files. An armed
    /// recorder is disarmed (its take, if one runs, stops too).
    func recordStop(app: String, stream: String?, from caller: Caller) throws -> Answer {
        _ = try store.session(app)
        if triggers.disarm(app), !recorders.isRecording(app) {
            return .now([("recorders", .array([])), ("disarmed", true)])
        }
        let stopped = try recorders.stopRecording(app: app, stream: stream)
        pendingStops.append(
            PendingStop(
                client: caller.client, reply: caller.reply, waitingFor: stopped.map(\.id),
                recorders: stopped.map(\.json)))
        return .later
    }

    /// A level-triggered take's recorder, under the same checks (`TakeHost`).
    func startTake(_ spec: RecorderSpec) throws -> RecorderStream { try startRecorder(spec) }

    /// The policy part of starting a recorder (an input: it captures, is available now and
    /// may be used by the session; its bandwidth), then the recorder service starts it.
    ///
    /// A recorder that follows the route records the session's route input now (a suspended
    /// one may come back after the route changed); with `replacing`, it goes on from there in
    /// the stream of that recorder (`RecorderService.startInput`).
    @discardableResult
    func startRecorder(
        _ spec: RecorderSpec, replacing old: RecorderStream? = nil, endReason: EndReason = .routeChange
    ) throws -> RecorderStream {
        var spec = spec
        let session = try store.session(spec.app)
        if spec.followsRoute, spec.bus == nil {
            guard let input = session.route.inputs.first else {
                throw SessionError(
                    .resourceNotAvailable,
                    "\(spec.app) has no input route (no available input suits it); see `recctl routes`")
            }
            spec.port = input
        }
        let configuration = session.configuration
        let route = session.route
        let context = RecordingContext(
            category: configuration.category.rawValue, mode: configuration.mode.rawValue,
            silenced: store.capturesSilenced(app: spec.app),
            processing: session.captureProcessing, referencePort: route.outputs.first,
            echoSuppression: config.voice.echoSuppression)
        if spec.port.hasPrefix("bus:") { return try recorders.startBus(spec, context: context) }
        guard let port = config.port(named: spec.port), port.direction.canCapture else {
            throw SessionError(
                .resourceNotAvailable,
                "\(spec.port) is not an input port; inputs are: \(engine.inputPortNames.joined(separator: ", "))")
        }
        guard let state = engine.portState(named: spec.port), state.available else {
            throw SessionError(
                .resourceNotAvailable,
                "input \(spec.port) is not available now (its JACK ports are missing); see `recctl routes`")
        }
        let request = RouteRequest(
            configuration: session.configuration, preferredInput: spec.port, region: store.region)
        guard RouteChooser.isEligibleInput(state, request: request) else {
            throw SessionError(
                .resourceNotAvailable,
                "\(spec.app) may not use \(spec.port) (\(port.type.rawValue)); Bluetooth microphones need "
                    + "allowBluetoothHFP or bluetoothHighQualityRecording"
            )
        }
        // The first N channels of the port, N the session's preferred input channels (SPEC §5).
        return try recorders.startInput(
            spec, channels: session.preferences.inputChannels(ofPort: port.channels), type: port.type,
            bandwidth: RouteChooser.bandwidth(of: state, for: request),
            context: context, replacing: old, endReason: endReason)
    }

    /// The session's input route changed: each recorder that follows the route goes on from
    /// `input` in a new segment (the old one ends with END_REASON=routeChange); with no input
    /// left it stops (reason routeChange). Recorders with an explicit input are left to
    /// `stopUnavailable`.
    func followInputRoute(of app: String, input: String?, reason: RouteChangeReason) {
        for stream in recorders.of(app) where stream.spec.followsRoute && stream.spec.port != input {
            guard let input, engine.isAvailable(port: input) else {
                recorders.stopForLostInput(stream)
                continue
            }
            do {
                try startRecorder(stream.spec, replacing: stream)
            } catch {
                Log.error("\(app): \(stream.spec.stream) could not go on from \(input) (\(reason.name)): \(error)")
            }
        }
    }

    /// What the session's capture goes through changed (`captureProcessingChange`: its mode,
    /// `prefersEchoCancelledInput`, its route gaining or losing an output), or its route output
    /// moved (the far end of a processed capture): each input recorder of the session that
    /// records otherwise goes on at once in a new segment with the processing now, the old one
    /// ending with END_REASON=processingChange, continuous to the frame as for an input switch.
    /// Recorders that already record so (one a route change just started) are left alone, and
    /// so is a level-triggered take (its pre-roll tap is the trigger's: it ends as it began; the
    /// next take follows the session).
    func followCaptureProcessing(of app: String) {
        guard let session = store.sessions[app], !triggers.isArmed(app) else { return }
        let processing = session.captureProcessing
        let reference = processing == .none ? nil : session.route.outputs.first
        for stream in recorders.of(app)
        where stream.spec.bus == nil && (stream.processing != processing || stream.referencePort != reference) {
            do {
                try startRecorder(stream.spec, replacing: stream, endReason: .processingChange)
            } catch {
                Log.error(
                    "\(app): \(stream.spec.stream) could not go on with \(processing.rawValue) processing: \(error)")
            }
        }
    }

    /// Sessions declared with `record = ...` record whenever they can (the broadcast logger).
    func startDeclaredRecorders() {
        for (app, declaredPort) in recovery.declaredToStart(isRecording: { recorders.isRecording($0) }) {
            guard !recorders.isRecording(app), !recovery.hasSuspended(app) else { continue }
            do {
                _ = try startDeclared(app: app, port: declaredPort)
            } catch {
                recovery.declaredNotStarted(app: app, port: declaredPort, error: error)
            }
        }
    }

    /// Starts `app`'s declared recorder of `port` (nil: the session's input route), activating
    /// its session when inactive. False when it is armed for triggered takes instead (a
    /// `trigger_db`). Throws what kept it from starting.
    func startDeclared(app: String, port declaredPort: String?) throws -> Bool {
        let session = try store.session(app)
        if !session.isActive { apply(try store.activate(app: app)) }
        try store.checkCanRecord(app: app)
        guard let port = try declaredPort ?? store.session(app).route.inputs.first else {
            throw SessionError(
                .resourceNotAvailable, "\(app) has no input route (no available input suits it); see `recctl routes`")
        }
        if try triggers.armDeclared(app: app, input: declaredPort) { return false }
        try startRecorder(RecorderSpec(app: app, stream: port, port: port, followsRoute: declaredPort == nil))
        return true
    }
}

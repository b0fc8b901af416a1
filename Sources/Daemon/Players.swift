// Players (SPEC §3, §4, §11): files streamed into the engine through a session's output route.
// Control thread only; each player's file is read on its own feeder thread (FilePlayer).
import AudioEngine
import Codec
import ControlProtocol
import Platform
import SessionPolicy
import SystemSupport

/// Why a player is paused: the user, or something the policy did (which resumption may undo).
enum PauseCause: String {
    case user, interruption, routeDisconnected = "oldDeviceUnavailable", mediaServicesLost
}

/// One playing (or paused) file of a session.
final class PlayerStream {
    let app: String
    let stream: String
    let path: String
    let port: String
    let handle: PlayerHandle
    let feeder: FilePlayer
    var pausedBy: PauseCause?

    init(app: String, stream: String, path: String, port: String, handle: PlayerHandle, feeder: FilePlayer) {
        self.app = app
        self.stream = stream
        self.path = path
        self.port = port
        self.handle = handle
        self.feeder = feeder
    }

    var stateName: String { pausedBy == nil ? "playing" : "paused" }

    var json: JSONValue {
        [
            "app": .string(app), "stream": .string(stream), "file": .string(path), "port": .string(port),
            "state": .string(stateName), "paused_by": JSONValue(pausedBy?.rawValue), "channels": .number(Double(handle.channels)),
            "frames_played": .number(Double(handle.framesPlayed)), "underruns": .number(Double(handle.underruns)),
        ]
    }
}

/// All players, keyed by app and stream name.
final class PlayerTable {
    private(set) var players: [String: PlayerStream] = [:]

    static func key(_ app: String, _ stream: String) -> String { app + "\u{0}" + stream }

    func get(_ app: String, _ stream: String) -> PlayerStream? { players[Self.key(app, stream)] }
    func of(_ app: String) -> [PlayerStream] { players.values.filter { $0.app == app }.sorted { $0.stream < $1.stream } }
    var all: [PlayerStream] { players.values.sorted { ($0.app, $0.stream) < ($1.app, $1.stream) } }

    func insert(_ player: PlayerStream) { players[Self.key(player.app, player.stream)] = player }
    func remove(_ player: PlayerStream) { players[Self.key(player.app, player.stream)] = nil }

    /// Whether any of an app's players is playing (for the policy's isBusy).
    func anyPlaying(_ app: String) -> Bool { of(app).contains { $0.pausedBy == nil } }
}

extension ControlService {
    /// `play`: a new file on a stream (replacing what that stream played), or, without a file,
    /// resuming the session's paused players. Activates the session (arbitration applies).
    ///
    /// recd never opens the path a request names: the client opens the file with its own
    /// rights and passes the descriptor with the request line (`descriptors`, SCM_RIGHTS);
    /// `file` is only its display name. `play` takes that descriptor; a `ReadOnlyFile` owns it
    /// from then on and closes it when the player (and the probe) are gone.
    func play(
        _ request: Request, peer: PeerCredentials, descriptors: inout PassedDescriptors
    ) throws -> [(String, JSONValue)] {
        let app = try request.string("app")
        try authorizeChange(of: app, by: peer)
        let session = try store.session(app)
        guard session.configuration.category.hasOutput else {
            throw SessionError(.incompatibleCategory, "category \(session.configuration.category.rawValue) cannot play; set playback, playAndRecord or multiRoute")
        }
        let stream = try request.optionalString("stream")
        guard let path = try request.optionalString("file") else {
            guard descriptors.isEmpty else {
                throw SessionError(
                    .badParam,
                    "a descriptor passed with play needs \"file\", the file's name for events and status "
                        + "(its absolute path)")
            }
            let paused = players.of(app).filter { $0.pausedBy != nil && (stream == nil || $0.stream == stream) }
            guard !paused.isEmpty else {
                throw SessionError(.cannotStartPlaying, "\(app) has no paused player to resume; give a file: `recctl play \(app) FILE`")
            }
            if !session.isActive { apply(try store.activate(app: app, forInput: false)) }
            for player in paused { resumePlayer(player) }
            syncStreams(app)
            return [("players", .array(players.of(app).map(\.json)))]
        }
        let streamName = stream ?? "main"
        guard let descriptor = descriptors.take() else {
            throw SessionError(
                .badParam,
                "recd does not open files named in requests; open \(path) yourself and pass the descriptor "
                    + "with the request line (SCM_RIGHTS), as `recctl play` does")
        }
        // Check the file before anything changes: a bad file must not activate the session.
        let file: ReadOnlyFile
        let fileInfo: (rate: Int, channels: Int)
        do {
            file = try ReadOnlyFile(adopting: descriptor, name: path)
            let reader = try AudioFileReader(file: file)
            fileInfo = (reader.sampleRate, reader.channels)
        } catch {
            throw SessionError(.cannotStartPlaying, "cannot play \(path): \(error.message)")
        }
        guard engine.isRunning, let rate = engine.engine.sampleRate else {
            throw SessionError(.mediaServicesFailed, "the JACK server is gone; wait for mediaServicesWereReset and play again")
        }
        if !session.isActive { apply(try store.activate(app: app, forInput: false)) }
        let route = try store.session(app).route
        // `--to PORT` or `--to PORT:CH,CH...` (1-based channels of that port): the assignment.
        var requested = try request.optionalString("to")
        var assignedChannels: [Int]?
        if let text = requested, let colon = text.firstIndex(of: ":") {
            requested = String(text[..<colon])
            let list = text[text.index(after: colon)...].split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard !list.isEmpty, list.allSatisfy({ $0 != nil }) else {
                throw SessionError(.badParam, "--to \(text): channels must be a comma-separated list of numbers, e.g. --to pa:1,2")
            }
            assignedChannels = list.compactMap { $0 }
        }
        guard let portName = requested ?? route.outputs.first else {
            throw SessionError(.cannotStartPlaying, "\(app) has no output route (no available output port suits category \(session.configuration.category.rawValue)); see `recctl routes`")
        }
        guard route.outputs.contains(portName), let port = config.port(named: portName),
            let group = EngineController.outputGroup(port)
        else {
            throw SessionError(.cannotStartPlaying, "port \(portName) is not in \(app)'s output route (\(route.outputs.joined(separator: ", "))); pick one of those with --to")
        }
        if let old = players.get(app, streamName) { stopPlayer(old, reason: "replaced") }
        let duck = store.sessions[app]?.duckedBy != nil ? store.duckLevelDB : 0
        let portChannels = engine.outputChannels(of: port)
        var routes: [PlayerRoute]?
        var playerChannels = portChannels
        if let assignedChannels {
            guard assignedChannels.allSatisfy({ (1...portChannels).contains($0) }) else {
                throw SessionError(.resourceNotAvailable, "port \(portName) has channels 1...\(portChannels); --to \(portName):\(assignedChannels.map(String.init).joined(separator: ",")) is outside them")
            }
            playerChannels = assignedChannels.count
            routes = assignedChannels.enumerated().map { PlayerRoute(source: $0.offset, destination: $0.element - 1) }
        }
        let handle: PlayerHandle
        do {
            handle = try engine.engine.addPlayer(channels: playerChannels, outputGroup: group, routes: routes, gainDecibels: duck)
        } catch {
            throw SessionError(.cannotStartPlaying, "the engine refused a player on \(portName): \(error)")
        }
        let feeder = FilePlayer(file: file, player: handle, outputSampleRate: rate)
        let player = PlayerStream(app: app, stream: streamName, path: path, port: portName, handle: handle, feeder: feeder)
        players.insert(player)
        feeder.start { [weak server] _ in
            // The feeder thread ends; the control loop notices through the tick, wake it now.
            server?.post {}
        }
        // Let the feeder get ahead of the process thread so the file starts without a gap.
        let deadline = SystemClock.monotonicSeconds() + 0.5
        while handle.framesQueued < min(handle.capacityFrames / 4, rate / 4) && !feeder.isDone
            && SystemClock.monotonicSeconds() < deadline
        {
            SystemClock.sleep(seconds: 0.002)
        }
        monitoringPlayersChanged(app: app)
        engine.engine.play(handle, rampMilliseconds: 0)
        syncStreams(app)
        Log.info("\(app): playing \(path) (\(fileInfo.channels) ch at \(fileInfo.rate) Hz) on \(portName)")
        announcePlayer(player, state: "playing", reason: nil)
        return [("player", player.json)]
    }

    func pausePlayer(_ player: PlayerStream, cause: PauseCause, rampMilliseconds: Double = AudioEngine.defaultRampMilliseconds) {
        guard player.pausedBy == nil else { return }
        engine.engine.pause(player.handle, rampMilliseconds: rampMilliseconds)
        player.pausedBy = cause
        var extra: [(String, JSONValue)] = []
        if cause == .routeDisconnected, let now = engine.engine.frameTime, let lost = engine.engine.lastPortLossFrameTime {
            // How long after JACK announced the port's loss the pause was published: the
            // process thread applies it at its next period.
            let micros = engine.engine.lastPortLossMicros.map { AudioEngine.jackMicros &- $0 }
            extra = [("reaction_frames", .number(Double(now &- lost))), ("period_frames", JSONValue(engine.engine.bufferSize)),
                     ("reaction_us", JSONValue(micros.map { Int($0) }))]
        }
        announcePlayer(player, state: "paused", reason: cause.rawValue, extra: extra)
    }

    func resumePlayer(_ player: PlayerStream) {
        guard player.pausedBy != nil else { return }
        engine.engine.play(player.handle, rampMilliseconds: AudioEngine.defaultRampMilliseconds)
        player.pausedBy = nil
        announcePlayer(player, state: "playing", reason: nil)
    }

    func stopPlayer(_ player: PlayerStream, reason: String) {
        player.feeder.stop()
        engine.engine.removePlayer(player.handle)
        players.remove(player)
        monitoringPlayersChanged(app: player.app)
        announcePlayer(player, state: "stopped", reason: reason)
    }

    /// Removes players whose file has played out or failed (control thread, from the tick).
    func reapPlayers() {
        for player in players.all where player.feeder.isDone {
            if let error = player.feeder.error {
                stopPlayer(player, reason: "error: \(error.message)")
            } else if player.handle.state == .drained || !player.handle.isAttached {
                stopPlayer(player, reason: "finished")
            } else {
                continue
            }
            syncStreams(player.app)
        }
    }

    /// Tells the policy whether the app has running streams (for isBusy and interruptions).
    func syncStreams(_ app: String) {
        store.setStreamsRunning(app: app, players.anyPlaying(app) || !archive.of(app).isEmpty)
    }

    func announcePlayer(_ player: PlayerStream, state: String, reason: String?, extra: [(String, JSONValue)] = []) {
        broadcastEvent(app: player.app, .object([
            ("event", "player"), ("app", .string(player.app)), ("stream", .string(player.stream)), ("state", .string(state)),
            ("file", .string(player.path)), ("port", .string(player.port)), ("reason", JSONValue(reason)),
        ] + extra))
    }

    /// What the policy's stream effects mean for players.
    func applyStreamEffect(_ effect: PolicyEffect) {
        switch effect {
        case .pauseStreams(let app, _):
            for player in players.of(app) { pausePlayer(player, cause: .interruption) }
        case .stopStreams(let app, let reason):
            for player in players.of(app) { stopPlayer(player, reason: reason.rawValue) }
        case .pausePlayers(let app):
            // Privacy: the output a player was assigned to went away; stop its sound at once (a
            // 1 ms fade, well inside a period). Players on outputs still there play on.
            for player in players.of(app) where !(store.ports.first { $0.name == player.port }?.available ?? false) {
                pausePlayer(player, cause: .routeDisconnected, rampMilliseconds: 1)
            }
        case .resumeStreams(let app):
            for player in players.of(app) where player.pausedBy == .interruption { resumePlayer(player) }
        case .ducked(let app, _, let level):
            for player in players.of(app) { engine.engine.setGain(player.handle, decibels: level) }
        case .unducked(let app):
            for player in players.of(app) { engine.engine.setGain(player.handle, decibels: 0) }
        default:
            return
        }
    }
}

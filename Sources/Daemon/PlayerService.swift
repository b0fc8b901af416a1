// Players (SPEC §3, §4, §11): files streamed into the engine through a session's output route.
//
// Threads:
// - `PlayerService`: the control thread, every member.
// - "player starter" (a `SlowRequestWorker` of the service's own): reads a file's header before
//   anything changes (`probe`), and waits for a new player's pre-roll (`start`); its results
//   come back to the control thread. Its own thread, not the archive's "slow worker", so that
//   a play never waits behind a long verify.
// - Each player's file is decoded on its own "player feeder" thread (`FilePlayer`).
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
///
/// Control thread (`@unchecked Sendable`: the starter's completions carry it away and back;
/// its `handle` and `feeder` are thread-safe themselves).
final class PlayerStream: @unchecked Sendable {
    let app: String
    let stream: String
    let path: String
    /// The output port it plays to now (a player that follows the route moves with it).
    fileprivate(set) var port: String
    /// Started without an explicit port (`--to`): it plays to the session's route output and
    /// moves when that changes (streams follow the route); otherwise it stays on its port.
    let followsRoute: Bool
    let handle: PlayerHandle
    let feeder: FilePlayer
    /// What it moves each second (its owner's player budget counts it).
    let load: PlayerLoad
    var pausedBy: PauseCause?
    /// Added to the engine, waiting for its pre-roll: not yet told to play.
    fileprivate(set) var isStarting = true
    /// Why it stopped, once it has (a start that finds it stopped says why).
    fileprivate(set) var stoppedBy: String?

    init(
        app: String, stream: String, path: String, port: String, followsRoute: Bool, handle: PlayerHandle,
        feeder: FilePlayer, load: PlayerLoad
    ) {
        self.app = app
        self.stream = stream
        self.path = path
        self.port = port
        self.followsRoute = followsRoute
        self.handle = handle
        self.feeder = feeder
        self.load = load
    }

    var state: PlayerEvent.State { pausedBy == nil ? .playing : .paused }

    var info: PlayerInfo {
        PlayerInfo(
            app: app, stream: stream, file: path, port: port, state: state.rawValue, pausedBy: pausedBy?.rawValue,
            channels: handle.channels, framesPlayed: handle.framesPlayed, underruns: handle.underruns)
    }

    var json: JSONValue { info.json }
}

/// What a file's header said (the starter read it before anything changed).
struct ProbedFile: Sendable {
    let file: ReadOnlyFile
    let sampleRate: Int
    let channels: Int
}

/// What the router decided a new player plays, and where.
struct PlayOrder {
    var app: String
    var stream: String
    var file: ProbedFile
    /// An output port of the session's route.
    var port: String
    /// Channels of `port` (1-based) the file's channels go to, in order; nil: the default map.
    var channels: [Int]?
    /// `port` is the session's route output, not one the client named: the player follows
    /// the route.
    var followsRoute = false
    /// The session's duck level now (0 when not ducked).
    var gainDB: Double
}

/// The players of every session: their table, starting and stopping them, and what policy
/// effects do to them. Owns the player starter thread; asks the engine for availability.
///
/// Confined to the control thread (hence `@unchecked Sendable`: the starter's completions
/// that capture it run there too).
final class PlayerService: @unchecked Sendable {
    typealias Started = @Sendable (Result<JSONValue, SessionError>) -> Void
    /// For a port's channel count, how many of its first channels a session's players use.
    typealias ChannelLimit = (Int) -> Int

    /// Longest a new player waits for its feeder to get ahead of the process thread.
    static let prerollTimeout = 0.5

    private let engine: any PlayerEngine
    private let ports: any EnginePorts
    private let sink: any ServiceSink
    private let starter: SlowRequestWorker
    /// Wakes the control thread when a feeder ends (the tick's `reap` would find it anyway).
    private let feederEnded: @Sendable () -> Void
    private var players: [String: PlayerStream] = [:]
    /// A player of an app came or went (its handle changed): whoever feeds the buses follows.
    var playersChanged: (String) -> Void = { _ in }

    /// - Parameters:
    ///   - deliver: runs a closure on the control thread (`ControlServer.post`), for the
    ///     starter's results and the feeders' wake-ups.
    init(
        engine: any PlayerEngine, ports: any EnginePorts, sink: any ServiceSink,
        deliver: @escaping SlowRequestWorker.Deliver
    ) throws(SystemError) {
        self.engine = engine
        self.ports = ports
        self.sink = sink
        starter = try SlowRequestWorker(name: "player starter", deliver: deliver)
        feederEnded = { deliver {} }
    }

    private static func key(_ app: String, _ stream: String) -> String { app + "\u{0}" + stream }

    func get(_ app: String, _ stream: String) -> PlayerStream? { players[Self.key(app, stream)] }
    func of(_ app: String) -> [PlayerStream] {
        players.values.filter { $0.app == app }.sorted { $0.stream < $1.stream }
    }
    var all: [PlayerStream] { players.values.sorted { ($0.app, $0.stream) < ($1.app, $1.stream) } }

    /// Whether any of an app's players is playing.
    func isPlaying(_ app: String) -> Bool { of(app).contains { $0.pausedBy == nil } }

    /// How many players (playing or paused) each app has: the policy's player limits' input.
    var countsByApp: [String: Int] { players.values.reduce(into: [:]) { $0[$1.app, default: 0] += 1 } }

    /// What each app's players (playing or paused) move each second: the policy's player
    /// budget's input (`SessionStore.checkPlayerLoad`).
    var loadsByApp: [String: Int] {
        players.values.reduce(into: [:]) { $0[$1.app, default: 0] += $1.load.samplesPerSecond }
    }

    /// What a player of `file` would move each second on output `port`, playing `channels` of
    /// it (1-based) or, without them, all of the port's channels; nil when `port` is no output
    /// or the engine has no rate (starting says why).
    func load(of file: ProbedFile, port: String, channels: [Int]?) -> PlayerLoad? {
        guard let rate = engine.sampleRate, let output = ports.output(port: port) else { return nil }
        return Self.load(of: file, rate: rate, playerChannels: channels?.count ?? output.channels)
    }

    /// A player's load: the file as probed, played at `rate` into `playerChannels` channels.
    private static func load(of file: ProbedFile, rate: Int, playerChannels: Int) -> PlayerLoad {
        PlayerLoad(
            fileRate: file.sampleRate, fileChannels: file.channels, outputRate: rate, outputChannels: playerChannels)
    }

    /// The apps with a player playing (not paused): part of the policy's isBusy and
    /// isOtherAudioPlaying facts (`ServiceFact.streams`).
    var playingApps: Set<String> { Set(players.values.filter { $0.pausedBy == nil }.map(\.app)) }

    // MARK: Starting

    /// Reads the header of `file` on the starter thread. `completion` gets its format, or
    /// cannotStartPlaying, on the control thread; never when `client` has gone meanwhile
    /// (the file is closed then).
    func probe(
        _ file: ReadOnlyFile, for client: ClientID,
        completion: @escaping @Sendable (Result<ProbedFile, SessionError>) -> Void
    ) {
        starter.submit(
            for: client,
            { _ -> Result<ProbedFile, SessionError> in
                do throws(MediaError) {
                    let reader = try AudioFileReader(file: file)
                    try FilePlayer.checkPlayable(
                        sampleRate: reader.sampleRate, channels: reader.channels, name: file.name)
                    return .success(ProbedFile(file: file, sampleRate: reader.sampleRate, channels: reader.channels))
                } catch {
                    return .failure(SessionError(.cannotStartPlaying, "cannot play \(file.name): \(error.message)"))
                }
            }, completion: completion)
    }

    /// Starts a player: stops the stream's previous one ("replaced"), adds the engine player
    /// (paused, at `order.gainDB`) and starts its feeder, then returns; the starter waits for
    /// the pre-roll (at most `prerollTimeout`) and `started` follows on the control thread once
    /// the player plays (or is paused, when something paused it meanwhile), or with
    /// cannotStartPlaying when it was stopped before. Throws what prevents it from starting.
    func start(_ order: PlayOrder, started: @escaping Started) throws(SessionError) {
        guard engine.isRunning, let rate = engine.sampleRate else {
            throw SessionError(
                .mediaServicesFailed, "the JACK server is gone; wait for mediaServicesWereReset and play again")
        }
        guard let output = ports.output(port: order.port) else {
            throw SessionError(.cannotStartPlaying, "port \(order.port) is not an output port; see `recctl routes`")
        }
        if let old = get(order.app, order.stream) { stop(old, reason: "replaced") }
        var routes: [PlayerRoute]?
        var playerChannels = output.channels
        if let assigned = order.channels {
            guard assigned.allSatisfy({ (1...output.channels).contains($0) }) else {
                throw SessionError(
                    .resourceNotAvailable,
                    "port \(order.port) has channels 1...\(output.channels); --to "
                        + "\(order.port):\(assigned.map(String.init).joined(separator: ",")) is outside them"
                )
            }
            playerChannels = assigned.count
            routes = assigned.enumerated().map { PlayerRoute(source: $0.offset, destination: $0.element - 1) }
        }
        let handle: PlayerHandle
        do {
            handle = try engine.addPlayer(
                channels: playerChannels, outputGroup: output.group, routes: routes, bufferFrames: nil,
                gainDecibels: order.gainDB)
        } catch {
            throw SessionError(.cannotStartPlaying, "the engine refused a player on \(order.port): \(error)")
        }
        let feeder = FilePlayer(probed: order.file, player: handle, outputSampleRate: rate)
        let load = Self.load(of: order.file, rate: rate, playerChannels: playerChannels)
        let player = PlayerStream(
            app: order.app, stream: order.stream, path: order.file.file.name, port: order.port,
            followsRoute: order.followsRoute, handle: handle, feeder: feeder, load: load)
        players[Self.key(order.app, order.stream)] = player
        feeder.start { [feederEnded] _ in feederEnded() }
        playersChanged(order.app)
        sink.report(.streams)
        // Let the feeder get ahead of the process thread so the file starts without a gap.
        let queued = min(handle.capacityFrames / 4, rate / 4)
        let probed = order.file
        starter.submit(
            for: nil,
            { _ in Self.waitForPreroll(handle: handle, feeder: feeder, frames: queued, timeout: Self.prerollTimeout) }
        ) { [weak self] _ in
            self?.finishStart(player, file: probed, started: started)
        }
    }

    /// Starter thread: until `frames` are queued, the feeder has ended, or `timeout` seconds.
    private static func waitForPreroll(handle: PlayerHandle, feeder: FilePlayer, frames: Int, timeout: Double) {
        let deadline = SystemClock.monotonicSeconds() + timeout
        while handle.framesQueued < frames && !feeder.isDone && SystemClock.monotonicSeconds() < deadline {
            SystemClock.sleep(seconds: 0.002)
        }
    }

    private func finishStart(_ player: PlayerStream, file: ProbedFile, started: Started) {
        guard get(player.app, player.stream) === player else {
            started(
                .failure(
                    SessionError(
                        .cannotStartPlaying,
                        "the player of \(player.app)'s stream \(player.stream) stopped before it started "
                            + "(\(player.stoppedBy ?? "stop"))"
                    )))
            return
        }
        player.isStarting = false
        if player.pausedBy == nil {
            engine.play(player.handle, rampMilliseconds: 0)
            Log.info(
                "\(player.app): playing \(player.path) (\(file.channels) ch at \(file.sampleRate) Hz) on \(player.port)"
            )
            announce(player, state: .playing, reason: nil)
        }
        started(.success(player.json))
    }

    // MARK: Pausing, resuming, stopping

    func pause(
        _ player: PlayerStream, cause: PauseCause, rampMilliseconds: Double = AudioEngine.defaultRampMilliseconds
    ) {
        guard player.pausedBy == nil else { return }
        engine.pause(player.handle, rampMilliseconds: rampMilliseconds)
        player.pausedBy = cause
        sink.report(.streams)
        // How long after JACK announced the port's loss the pause was published: the process
        // thread applies it at its next period.
        let reaction = cause == .routeDisconnected ? ports.portLossReaction() : nil
        announce(player, state: .paused, reason: cause.rawValue, reaction: reaction)
    }

    /// Resumes a paused player; one that follows the route and whose port is no longer among
    /// `routeOutputs` (the session's route now) first moves to the first of them (its old port
    /// may be gone: resuming there would play into nothing, or report a device that is not
    /// there).
    func resume(
        _ player: PlayerStream, routeOutputs: [String], channelLimit: ChannelLimit = { $0 }
    ) throws(SessionError) {
        guard player.pausedBy != nil else { return }
        var previousPort: String?
        if player.followsRoute && !routeOutputs.contains(player.port) {
            guard let output = routeOutputs.first else {
                throw SessionError(
                    .cannotStartPlaying,
                    "\(player.app) has no output route now (\(player.port) is no longer in it and no other output "
                        + "suits the session); plug an output in, or start the stream again with --to PORT; see "
                        + "`recctl routes`")
            }
            previousPort = player.port
            try move(player, to: output, reason: nil, channelLimit: channelLimit)
        }
        engine.play(player.handle, rampMilliseconds: AudioEngine.defaultRampMilliseconds)
        player.pausedBy = nil
        sink.report(.streams)
        announce(player, state: .playing, reason: nil, previousPort: previousPort)
    }

    /// Moves a player that follows the route to `output`: once the connection reconciler has
    /// connected that output, it crossfades there over the default ramp from the next period
    /// (no gap). Announced then with `previousPort` and `reason` (the route change's), and how
    /// fast it followed the device's arrival; `port` names the new output at once.
    ///
    /// `channelLimit` gives, for the target port's channel count, how many of its first channels
    /// the session lets it use (its preferred output channels, SPEC §5).
    func move(
        _ player: PlayerStream, to output: String, reason: RouteChangeReason?, channelLimit: ChannelLimit
    ) throws(SessionError) {
        guard let target = ports.output(port: output) else {
            throw SessionError(.cannotStartPlaying, "port \(output) is not an output port; see `recctl routes`")
        }
        let routes = PlayerRoute.defaultRoutes(
            playerChannels: player.handle.channels, groupChannels: max(1, channelLimit(target.channels)))
        let previous = player.port
        // Named at once, before the engine is asked: its answer (and the announcement) may come
        // before `movePlayer` returns when the reconciler is quick.
        player.port = output
        do {
            // Published once the reconciler has connected the output (a device that has just
            // arrived hears the move from its first frame); announced then, with how long after
            // the device's arrival was heard of that was: the process thread takes it up at its
            // next period.
            try engine.movePlayer(
                player.handle, toOutputGroup: target.group, routes: routes,
                rampMilliseconds: AudioEngine.defaultRampMilliseconds
            ) { [weak self, weak player] in
                guard let self, let player, let reason else { return }
                let reaction = reason == .newDeviceAvailable ? ports.portArrivalReaction() : nil
                announce(player, state: player.state, reason: reason.name, previousPort: previous, reaction: reaction)
            }
        } catch {
            player.port = previous
            throw SessionError(
                .cannotStartPlaying,
                "the engine could not move \(player.app)'s stream \(player.stream) to \(output): \(error)")
        }
        if previous != output { Log.info("\(player.app): \(player.stream) moves from \(previous) to \(output)") }
    }

    func stop(_ player: PlayerStream, reason: String) {
        player.feeder.stop()
        engine.removePlayer(player.handle)
        player.stoppedBy = reason
        players[Self.key(player.app, player.stream)] = nil
        playersChanged(player.app)
        sink.report(.streams)
        announce(player, state: .stopped, reason: reason)
    }

    /// Stops every player (media services lost, shutdown).
    func stopAll(reason: String) {
        for player in all { stop(player, reason: reason) }
    }

    /// Removes players whose file has played out or failed; returns their apps. From the tick.
    /// A player still starting is left to its start.
    @discardableResult
    func reap() -> Set<String> {
        var apps: Set<String> = []
        for player in all where player.feeder.isDone && !player.isStarting {
            if let error = player.feeder.error {
                stop(player, reason: "error: \(error.message)")
            } else if player.handle.state == .drained || !player.handle.isAttached {
                stop(player, reason: "finished")
            } else {
                continue
            }
            apps.insert(player.app)
        }
        return apps
    }

    /// Whether the starter is still opening a file for `client` (its reply is still to come).
    func isStarting(for client: ClientID) -> Bool { starter.hasOutstanding(for: client) }

    /// Forgets what the starter was doing for `client` (it disconnected).
    func clientGone(_ client: ClientID) { starter.clientGone(client) }

    /// Stops every player and the starter thread (shutdown).
    func shutdown() {
        stopAll(reason: "stop")
        starter.stop()
    }

    // MARK: Policy effects

    /// An interruption: every player of `app` pauses.
    func pauseAll(of app: String, cause: PauseCause) {
        for player in of(app) { pause(player, cause: cause) }
    }

    func stopAll(of app: String, reason: String) {
        for player in of(app) { stop(player, reason: reason) }
    }

    /// Privacy: the output a player was assigned to went away; stop its sound at once (a 1 ms
    /// fade, well inside a period). Players on outputs still there play on.
    func pauseDisconnected(of app: String) {
        for player in of(app) where !ports.isAvailable(port: player.port) {
            pause(player, cause: .routeDisconnected, rampMilliseconds: 1)
        }
    }

    /// The interruption ended with shouldResume: what it paused plays again (a player that
    /// follows the route on `routeOutputs`; with none, it stays paused).
    func resumeInterrupted(of app: String, routeOutputs: [String], channelLimit: ChannelLimit = { $0 }) {
        for player in of(app) where player.pausedBy == .interruption {
            do { try resume(player, routeOutputs: routeOutputs, channelLimit: channelLimit) } catch {
                Log.warning("\(app): \(player.stream) stays paused: \(error.message)")
            }
        }
    }

    /// The session's route changed: every playing player of `app` that follows the route and
    /// whose port is no longer among `outputs` moves to the first of them (last in wins:
    /// headphones plugged in take the sound at once; a multiRoute stream stays while its port
    /// is still one of the route's). Paused players move when they resume; players on a port
    /// that went away were paused first (`pauseDisconnected`) and stay paused: nothing falls
    /// back to another output by itself. With no output left in the route, a following player
    /// pauses (`oldDeviceUnavailable`).
    func follow(
        of app: String, outputs: [String], reason: RouteChangeReason, channelLimit: ChannelLimit = { $0 }
    ) {
        for player in of(app) where player.followsRoute && player.pausedBy == nil && !outputs.contains(player.port) {
            guard let output = outputs.first, ports.isAvailable(port: output) else {
                // No output left to follow: silence, as when its device goes away.
                pause(player, cause: .routeDisconnected, rampMilliseconds: 1)
                continue
            }
            if !ports.isAvailable(port: player.port) {
                // Its device went away (the policy's pause did not reach a player still
                // starting): the privacy rule, not a fall back to another output.
                pause(player, cause: .routeDisconnected, rampMilliseconds: 1)
                continue
            }
            do { try move(player, to: output, reason: reason, channelLimit: channelLimit) } catch {
                Log.warning("\(app): \(player.stream) stays on \(player.port): \(error.message)")
            }
        }
    }

    /// The session's preferred output channels changed: every player of `app` that follows the
    /// route plays, from the next period (crossfaded), to the first `channelLimit(port
    /// channels)` channels of its port. Players given channels with `--to` keep them.
    func applyChannelLimit(of app: String, channelLimit: ChannelLimit) {
        for player in of(app) where player.followsRoute {
            do { try move(player, to: player.port, reason: nil, channelLimit: channelLimit) } catch {
                Log.warning("\(app): \(player.stream) keeps its channels: \(error.message)")
            }
        }
    }

    /// Ducking: every player of `app` ramps to `decibels` (0: not ducked).
    func setGain(of app: String, decibels: Double) {
        for player in of(app) {
            engine.setGain(player.handle, decibels: decibels, rampMilliseconds: AudioEngine.defaultRampMilliseconds)
        }
    }

    private func announce(
        _ player: PlayerStream, state: PlayerEvent.State, reason: String?, previousPort: String? = nil,
        reaction: PortReaction? = nil
    ) {
        sink.broadcast(
            .player(
                PlayerEvent(
                    app: player.app, stream: player.stream, state: state, file: player.path, port: player.port,
                    reason: reason, previousPort: previousPort, reaction: reaction)))
    }
}

import Synchronization

/// One player stream of the engine: the feeder's end of its ring, and its counters.
///
/// Made by `AudioEngine.addPlayer`; the control thread steers it through the engine
/// (`play`, `pause`, `setGain`, `movePlayer`, `removePlayer`). The handle owns the player's
/// real-time memory (the `PlayerVoice`, its ring and every route table it has had) and frees it
/// in `deinit`; the engine holds the handle until the process thread can no longer reach that
/// memory, so dropping a handle early is safe.
///
/// Threads: `write`, `availableToWrite` and `finish` belong to ONE feeder thread (the ring is
/// single-producer); the counters may be read from any thread.
public final class PlayerHandle: @unchecked Sendable {
    // @unchecked: the mutable state is the real-time memory, touched through atomics and the
    // single-producer/single-consumer ring discipline documented above, and `outputGroup` and
    // `tables`, which only the control thread touches.

    /// Stable for the life of the process: names this player as a monitoring source
    /// (`MonitoringSource.Kind.player`).
    public let id: PlayerHandleID
    /// Which output group it plays to now (directly, unless it is a monitoring source: then
    /// its routes feed the buses instead, see `AudioEngine.setMonitoring`). Changed by
    /// `AudioEngine.movePlayer`; control thread.
    public private(set) var outputGroup: String
    /// Interleaved channels per frame the feeder writes.
    public let channels: Int
    /// Ring size in frames.
    public let capacityFrames: Int

    let voice: UnsafeMutablePointer<PlayerVoice>
    /// Every route table this player has had, the current one last. All are kept until
    /// `deinit` (the process thread may still be crossfading from an old one; moves are rare).
    private var tables: [UnsafeMutablePointer<PlayerRouteTable>] = []
    private let attached = Atomic<Bool>(true)

    /// Control thread.
    init(
        outputGroup: String, channels: Int, capacityFrames: Int, routes: [PlayerRoute],
        flatOutputBase: Int, initialCommand: PlayerCommand
    ) {
        id = PlayerHandleID.next()
        self.outputGroup = outputGroup
        self.channels = channels
        self.capacityFrames = capacityFrames
        let table = Self.makeTable(routes, flatOutputBase: flatOutputBase, crossfadeFrames: 0)
        tables.append(table)
        voice = .allocate(capacity: 1)
        voice.initialize(
            to: PlayerVoice(
                ring: FloatRing.allocate(channels: channels, capacityFrames: capacityFrames),
                table: table, command: initialCommand))
    }

    deinit {
        voice.pointee.ring.deallocate()
        voice.deinitialize(count: 1)
        voice.deallocate()
        for table in tables { Self.freeTable(table) }
    }

    /// Control thread: from the process thread's next period the player plays to
    /// `outputGroup` through `routes` (destinations within that group, whose channel 0 is
    /// flat output channel `flatOutputBase`), crossfading over `crossfadeFrames`.
    func move(
        toOutputGroup outputGroup: String, routes: [PlayerRoute], flatOutputBase: Int,
        crossfadeFrames: Int
    ) {
        let table = Self.makeTable(
            routes, flatOutputBase: flatOutputBase, crossfadeFrames: crossfadeFrames)
        tables.append(table)
        self.outputGroup = outputGroup
        voice.pointee.table.store(UInt(bitPattern: table), ordering: .releasing)
    }

    /// Moves the process thread has taken up so far (any thread).
    public var movesApplied: Int { voice.pointee.movesApplied.load(ordering: .relaxed) }

    private static func makeTable(
        _ routes: [PlayerRoute], flatOutputBase: Int, crossfadeFrames: Int
    ) -> UnsafeMutablePointer<PlayerRouteTable> {
        let sources = UnsafeMutablePointer<Int>.allocate(capacity: max(routes.count, 1))
        let destinations = UnsafeMutablePointer<Int>.allocate(capacity: max(routes.count, 1))
        for (index, route) in routes.enumerated() {
            (sources + index).initialize(to: route.source)
            (destinations + index).initialize(to: flatOutputBase + route.destination)
        }
        let table = UnsafeMutablePointer<PlayerRouteTable>.allocate(capacity: 1)
        table.initialize(
            to: PlayerRouteTable(
                sources: sources, destinations: destinations, count: routes.count,
                flatOutputBase: flatOutputBase, crossfadeFrames: max(crossfadeFrames, 0)))
        return table
    }

    private static func freeTable(_ table: UnsafeMutablePointer<PlayerRouteTable>) {
        table.pointee.sources.deinitialize(count: table.pointee.count)
        table.pointee.sources.deallocate()
        table.pointee.destinations.deinitialize(count: table.pointee.count)
        table.pointee.destinations.deallocate()
        table.deinitialize(count: 1)
        table.deallocate()
    }

    /// Control thread: the engine no longer plays this player.
    func detach() { attached.store(false, ordering: .releasing) }

    // MARK: Feeder thread

    /// Frames that `write` would accept now.
    public var availableToWrite: Int { voice.pointee.ring.writableFrames() }

    /// Appends up to `frames` whole frames of interleaved samples; returns how many it took
    /// (fewer when the ring is full; the feeder retries with the rest later).
    public func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        guard let base = samples.baseAddress else { return 0 }
        return voice.pointee.ring.write(from: base, frames: samples.count / channels)
    }

    /// `write` for an array (interleaved).
    public func write(_ samples: [Float]) -> Int {
        samples.withUnsafeBufferPointer { write($0) }
    }

    /// Says no more frames will come: when the ring runs dry the player becomes `.drained`
    /// instead of counting underruns.
    public func finish() {
        voice.pointee.endOfStream.store(true, ordering: .releasing)
    }

    // MARK: Any thread

    /// Periods in which the ring ran dry while playing (zeros were played instead).
    public var underruns: Int { voice.pointee.underruns.load(ordering: .relaxed) }
    /// Frames of silence those underruns cost.
    public var underrunFrames: Int { voice.pointee.underrunFrames.load(ordering: .relaxed) }
    /// Frames played from the ring.
    public var framesPlayed: Int { voice.pointee.framesPlayed.load(ordering: .relaxed) }
    /// Frames written but not yet played.
    public var framesQueued: Int { voice.pointee.ring.readableFrames() }

    /// False once the engine stopped playing this player (removed, engine stopped, server
    /// lost): the feeder should stop.
    public var isAttached: Bool { attached.load(ordering: .acquiring) }

    /// What the process thread is doing with this player.
    public var state: PlayerState {
        switch PlayerActivity(rawValue: voice.pointee.activity.load(ordering: .acquiring)) {
        case .playing: .playing
        case .drained: .drained
        case .paused, nil: .paused
        }
    }
}

/// A player's identity, unique among all players made in this process (never reused), so a
/// monitoring setup can name a player without holding its handle.
public struct PlayerHandleID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public var description: String { "player-\(rawValue)" }

    private static let counter = Atomic<UInt64>(0)

    /// Any thread.
    static func next() -> PlayerHandleID {
        PlayerHandleID(rawValue: counter.add(1, ordering: .relaxed).newValue)
    }
}

/// A player's state as last seen by the process thread.
public enum PlayerState: String, Sendable {
    /// Not reading its ring: not started yet, or a pause has finished its fade.
    case paused
    /// Reading and mixing.
    case playing
    /// The feeder called `finish()` and everything written has been played.
    case drained
}

/// Where one channel of a player goes: player channel `source` (0-based) is added into
/// channel `destination` (0-based) of the player's output group.
public struct PlayerRoute: Equatable, Hashable, Sendable {
    public var source: Int
    public var destination: Int

    public init(source: Int, destination: Int) {
        self.source = source
        self.destination = destination
    }

    /// Mono to every group channel; otherwise channel n to channel n, as far as both go.
    public static func defaultRoutes(playerChannels: Int, groupChannels: Int) -> [PlayerRoute] {
        if playerChannels == 1 {
            return (0..<groupChannels).map { PlayerRoute(source: 0, destination: $0) }
        }
        return (0..<min(playerChannels, groupChannels)).map {
            PlayerRoute(source: $0, destination: $0)
        }
    }
}

import Platform

#if canImport(Glibc)
    import Glibc  // pow, log10
#endif

/// recd's audio engine: a JACK client with configured port groups, players mixed into output
/// groups with ramped gains, capture taps copying input groups into rings, and meters.
///
/// Threads (SPEC §10, STYLE 7): every method and property here belongs to the **control**
/// thread (the daemon's one control loop), unless it says otherwise. The JACK **process**
/// thread runs only the code in `RealTime/`, on memory this object allocates before
/// jack_activate and frees after the client is closed; the control thread changes what it does
/// by publishing immutable snapshots (read-copy-update), freeing old ones once the process
/// thread has passed them. JACK's **notification** threads only record news and call the
/// `wake` closure; the control thread then calls `drainNotifications()`. After ports or
/// clients come or go (or someone removes one of our connections), a short-lived **port
/// recheck** thread calls `wake` once more 40 ms later, so availability and connections are
/// checked again once JACK's graph has settled. JACK connections are read and changed on the
/// **jack connection** thread (`ConnectionWorker`): the control thread builds the rules
/// (`ConnectionReconciler.swift` decides between them) and hands them over.
///
/// Feeder threads write to `PlayerHandle`s and the archiver reads `CaptureTap`s; those handles
/// document their own threads.
///
/// Attached applications (`attach`): an application's own JACK client whose ports recd
/// connects to ports of its own registered for it; its play side is a player voice fed each
/// period from those ports, its capture side copies input channels (or zeros) to them.
///
/// Monitoring (`setMonitoring`): one DJ-style main/cue setup per engine, summing input groups
/// and players into a main and a cue bus that come out of two output groups, with live bus
/// meters and bus taps.
///
/// When the server goes away (`.serverLost`), processing stops; `reconnect(timeout:)` (or
/// `stop()` then `start`) opens a new client, registers the ports again and reconnects them.
/// Players and taps do not survive that: the daemon makes new ones (a new FLAC segment, SPEC §6).
/// The monitoring setup does: it is applied again (its player sources, naming players that are
/// gone, contribute nothing until the daemon sets it anew).
public final class AudioEngine {
    /// What `start` was given; `reconnect` uses it again.
    public struct Configuration: Equatable, Sendable {
        public var clientName: String
        /// nil: libjack's default server (honours JACK_DEFAULT_SERVER).
        public var serverName: String?
        public var inputs: [PortGroupSpec]
        public var outputs: [PortGroupSpec]

        public init(
            clientName: String, serverName: String? = nil, inputs: [PortGroupSpec],
            outputs: [PortGroupSpec]
        ) {
            self.clientName = clientName
            self.serverName = serverName
            self.inputs = inputs
            self.outputs = outputs
        }
    }

    /// Gain ramps used when a caller gives none: long enough not to click (SPEC §3 ducking).
    public static let defaultRampMilliseconds = 20.0

    private let wake: @Sendable () -> Void
    private var connection: Connection?
    public private(set) var configuration: Configuration?
    /// Xruns of earlier connections (the current one counts in its sink).
    private var earlierXruns = 0
    /// The monitoring setup last set, applied again on (re)start.
    private var monitoringSetup: MonitoringSetup?

    /// One open client with its ports and real-time memory.
    private final class Connection {
        let client: JackClient
        let memory: EngineMemory
        var inputs: [Group]
        var outputs: [Group]
        var lost = false
        /// Ports came or went since connections were last repaired.
        var needsRepair = false
        /// Monotonic seconds at which availability is computed once more after a change, to
        /// catch JACK's graph settling (a closing client's ports stay listed for a period or
        /// two after JACK announced them gone).
        var recheckAt: Double?
        /// When the timer thread armed for `recheckAt` wakes the control thread (nil: none).
        var timerFiresAt: Double?
        /// The period and rate last reported (JACK's callbacks repeat them at activation).
        var bufferSize: Int
        var sampleRate: Int
        /// Connections to one of our ports that JACK said were removed since the last repair.
        var removedConnections: Set<JackConnection> = []
        /// Ports that registered since the last pass (their left-alone edges are tried again).
        var registeredPorts: Set<String> = []
        /// Edges of ended attachments, to be cut by the next pass.
        var releasedConnections: Set<JackConnection> = []
        /// Applies the connection reconciler's plans off the control thread.
        let worker: ConnectionWorker
        /// Attachments whose ports the worker is registering (`beginAttach`), and what it
        /// made of them (the worker writes, the control thread takes).
        var pendingAttachments: [AttachmentTicket: PendingAttachment] = [:]
        let registrations = Registrations()

        init(
            client: JackClient, memory: EngineMemory, inputs: [Group], outputs: [Group], churnRetrySeconds: Double,
            wake: @escaping @Sendable () -> Void
        ) {
            self.client = client
            self.memory = memory
            self.inputs = inputs
            self.outputs = outputs
            bufferSize = client.bufferSize
            sampleRate = client.sampleRate
            worker = ConnectionWorker(client: client, retrySeconds: churnRetrySeconds, wake: wake)
        }
    }

    /// A registered port group.
    private struct Group {
        let spec: PortGroupSpec
        let direction: GroupDirection
        /// jack_port_t * of our ports, channel order.
        let ports: [OpaquePointer]
        /// Our ports' full names (`client:group_n`).
        let fullNames: [String]
        /// Flat channel index of channel 0 (inputs and outputs are numbered separately).
        let flatBase: Int
        var available: Bool
        /// The JACK ports behind it at the last availability check, in channel order (patterns
        /// resolved); nil where an exact name was missing.
        var targets: [String?] = []
    }

    /// `wake` is called on a JACK thread (or the port recheck thread) whenever there is news
    /// for `drainNotifications()`.
    /// It must be quick and must not block or call back into the engine: signal a semaphore,
    /// write an eventfd. It may even run on the dying process thread at server loss.
    public init(wake: @escaping @Sendable () -> Void = {}) {
        self.wake = wake
        JackMessages.install()
    }

    deinit { stop() }

    // MARK: Lifecycle

    /// Opens a JACK client (never starting a server), registers `<group>_<n>` ports for every
    /// group, activates, and connects the groups to the JACK ports behind them.
    public func start(
        clientName: String, serverName: String? = nil, inputs: [PortGroupSpec],
        outputs: [PortGroupSpec]
    ) throws(AudioEngineError) {
        try start(
            Configuration(
                clientName: clientName, serverName: serverName, inputs: inputs, outputs: outputs))
    }

    /// `start` with a configuration value.
    public func start(_ configuration: Configuration) throws(AudioEngineError) {
        guard connection == nil else {
            throw .invalidArgument("the audio engine is already running; stop it first")
        }
        try Self.validate(configuration)
        let sink = NotificationSink(wake: wake)
        let client: JackClient
        do {
            client = try JackClient(
                name: configuration.clientName, serverName: configuration.serverName, sink: sink)
        } catch {
            throw .jack(error.withLibjackMessage())
        }
        do throws(JackError) {
            let inputs = try Self.register(configuration.inputs, direction: .input, on: client)
            let outputs = try Self.register(configuration.outputs, direction: .output, on: client)
            let memory = EngineMemory(
                client: client.handle, inputPorts: inputs.flatMap(\.ports),
                outputPorts: outputs.flatMap(\.ports))
            let connection = Connection(
                client: client, memory: memory, inputs: inputs, outputs: outputs,
                churnRetrySeconds: churnRetrySeconds, wake: wake)
            do throws(JackError) {
                try client.setProcess(state: memory.state)
                try client.activate()
            } catch {
                connection.worker.stop()
                client.close()
                memory.freeAll()
                throw error
            }
            self.connection = connection
            self.configuration = configuration
            _ = updateAvailability(connection, report: false)
            // Connected when `start` returns: callers (and the daemon's first `routes`) see them.
            connection.worker.runNow(connectionRules(connection))
            if let setup = monitoringSetup {
                // Same groups as before unless the configuration changed; if it no longer
                // fits, monitoring is off until set again.
                do { try setMonitoring(setup) } catch { monitoringSetup = nil }
            }
        } catch {
            client.close()
            throw .jack(error)
        }
    }

    /// Deactivates and closes the client, frees the real-time memory, detaches every player
    /// and tap. What taps captured stays readable. Safe to call when stopped or after server
    /// loss.
    public func stop() {
        guard let connection else { return }
        earlierXruns += connection.client.sink.xruns.load(ordering: .relaxed)
        let mark = connection.memory.cycles.markNow()
        let graph = connection.memory.graph
        for tap in graph.taps + graph.busTaps + graph.referenceTaps { tap.detach(after: mark) }
        for player in connection.memory.players { player.detach() }
        // The worker's pass under way ends before the client goes.
        connection.worker.stop()
        if !connection.lost && !connection.client.sink.serverLost.load(ordering: .acquiring) {
            connection.client.deactivate()
        }
        // After close returns JACK runs none of our callbacks, so the memory can go.
        connection.client.close()
        connection.memory.freeAll()
        self.connection = nil
    }

    /// After a server loss: stops, then tries to start again with the last configuration
    /// until it succeeds or `timeout` has passed. Blocks the calling (control) thread between
    /// attempts; with `timeout: .zero` it makes exactly one attempt.
    public func reconnect(timeout: Duration, retryInterval: Duration = .milliseconds(250))
        throws(AudioEngineError)
    {
        guard let configuration else { throw .notRunning }
        stop()
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            do {
                try start(configuration)
                return
            } catch {
                guard case .jack(let jackError) = error, jackError.isServerUnavailable,
                    clock.now + retryInterval <= deadline
                else { throw error }
            }
            Self.sleep(retryInterval)
        }
    }

    /// Whether a client is open and the server has not been lost.
    public var isRunning: Bool {
        connection.map { !$0.lost && !$0.client.sink.serverLost.load(ordering: .acquiring) }
            ?? false
    }

    /// Whether the server went away under the open client (any thread may ask).
    public var isServerLost: Bool {
        connection?.client.sink.serverLost.load(ordering: .acquiring) ?? false
    }

    /// The name JACK gave the client (it may differ from the requested one).
    public var clientName: String? { connection?.client.name }

    // MARK: Server facts

    /// Frames per second, read from JACK; nil when not running.
    public var sampleRate: Int? { runningClient?.sampleRate }

    /// Frames per period, read from JACK; nil when not running.
    public var bufferSize: Int? { runningClient?.bufferSize }

    /// What a buffer-size request came to.
    public struct BufferSizeChange: Equatable, Sendable {
        /// The period asked for (a power of two).
        public var requested: Int
        /// The period in force once the server answered. A server may accept the request and
        /// keep its own period: PipeWire's JACK while its quantum is forced (clock.force-quantum).
        public var inForce: Int
        public var tookEffect: Bool { requested == inForce }
    }

    /// Asks JACK for the power of two nearest `frames` (16...8192) as its period and reports
    /// the period really in force afterwards (jackd2 changes it before answering; PipeWire's
    /// JACK answers success and keeps a forced quantum). A refusal throws.
    @discardableResult
    public func setBufferSize(nearest frames: Int) throws(AudioEngineError) -> BufferSizeChange {
        guard let client = runningClient else { throw lostOrNotRunning }
        let size = Self.nearestPowerOfTwo(frames)
        do { try client.setBufferSize(size) } catch { throw .jack(error) }
        return BufferSizeChange(requested: size, inForce: client.bufferSize)
    }

    /// The power of two nearest `frames`, within 16...8192 (ties go up).
    public static func nearestPowerOfTwo(_ frames: Int) -> Int {
        var best = 16
        var candidate = 16
        while candidate <= 8192 {
            if abs(candidate - frames) <= abs(best - frames) { best = candidate }
            candidate *= 2
        }
        return best
    }

    /// JACK's current frame time (an estimate of the frame being processed); nil when not running.
    public var frameTime: UInt32? { runningClient?.frameTime }

    /// The JACK frame time at which the latest port disappearance was heard of (notification
    /// thread), for measuring how fast recd reacts to a device going away.
    public var lastPortLossFrameTime: UInt32? { connection?.client.sink.lastPortLossFrameTime }

    /// JACK's microsecond clock (jack_get_time) when the latest port disappearance was heard of.
    public var lastPortLossMicros: UInt64? { connection?.client.sink.lastPortLossMicros }

    /// The JACK frame time and microsecond clock (jack_get_time) at which the latest port
    /// registration was heard of (notification thread), for measuring how fast recd reacts to
    /// a device arriving.
    public var lastPortArrival: (frameTime: UInt32, micros: UInt64)? {
        connection?.client.sink.lastPortArrival
    }

    /// A frame's time on the wall clock, and whether JACK's clocks placed it there.
    public struct FrameWallTime: Equatable, Sendable {
        /// UTC nanoseconds since the epoch.
        public var nanoseconds: Int64
        /// False when JACK's answer was implausible and the wall clock now stands in for it.
        public var fromJackClock: Bool

        public init(nanoseconds: Int64, fromJackClock: Bool) {
            self.nanoseconds = nanoseconds
            self.fromJackClock = fromJackClock
        }
    }

    /// The UTC time of a JACK frame time (e.g. a tap's first frame): JACK's microsecond clock
    /// of that frame, placed on the wall clock by the offset between the two clocks now.
    /// Control thread; nil when not running. Never traps: a server whose clocks disagree
    /// (PipeWire's JACK has answered with frame times far from its own clock) gets the wall
    /// clock now, marked `fromJackClock: false`, for the caller to log.
    public func utcNanoseconds(forFrameTime frameTime: UInt32) -> FrameWallTime? {
        guard let client = runningClient else { return nil }
        let wallNow = SystemClock.realtimeNanoseconds()
        guard let frameMicros = client.microseconds(forFrameTime: frameTime),
            let placed = Self.wallNanoseconds(wallNow: wallNow, jackNowMicros: JackClient.now(), frameMicros: frameMicros)
        else {
            return FrameWallTime(nanoseconds: wallNow, fromJackClock: false)
        }
        return FrameWallTime(nanoseconds: placed, fromJackClock: true)
    }

    /// How far from now a frame of a running stream may lie and still be believed.
    public static let plausibleFrameDistanceMicros: Int64 = 600_000_000

    /// `wallNow - (jackNow - frame)` in nanoseconds, or nil when the frame lies implausibly
    /// far from JACK's now (more than `plausibleFrameDistanceMicros`) or the arithmetic would
    /// overflow. Pure: any thread.
    public static func wallNanoseconds(wallNow: Int64, jackNowMicros: UInt64, frameMicros: UInt64) -> Int64? {
        guard let now = Int64(exactly: jackNowMicros), let frame = Int64(exactly: frameMicros) else { return nil }
        let (age, ageOverflow) = now.subtractingReportingOverflow(frame)
        guard !ageOverflow, abs(age) <= plausibleFrameDistanceMicros else { return nil }
        let (result, overflow) = wallNow.subtractingReportingOverflow(age * 1_000)
        return overflow ? nil : result
    }

    /// JACK's microsecond clock at `frame`, from the frame it is at now (`nowFrame` at
    /// `nowMicros`): frame times are 32-bit and wrap (every 24.9 hours at 48 kHz), so the
    /// distance is taken modulo 2^32 and read as signed (a frame up to 2^31 frames ahead or
    /// behind). nil for a rate of 0 or a time before JACK's clock began. Pure: any thread.
    public static func microseconds(ofFrame frame: UInt32, nowFrame: UInt32, nowMicros: UInt64, sampleRate: Int)
        -> UInt64?
    {
        guard sampleRate > 0, let now = Int64(exactly: nowMicros) else { return nil }
        let behind = Int64(Int32(bitPattern: nowFrame &- frame))
        let (micros, overflow) = now.subtractingReportingOverflow(behind * 1_000_000 / Int64(sampleRate))
        guard !overflow, micros >= 0 else { return nil }
        return UInt64(micros)
    }

    /// JACK's microsecond clock now (jack_get_time; any thread).
    public static var jackMicros: UInt64 { JackClient.now() }

    /// Xruns JACK reported since this engine was made (across reconnects).
    public var xruns: Int {
        earlierXruns + (connection?.client.sink.xruns.load(ordering: .relaxed) ?? 0)
    }

    /// How the process thread's cycles have run since the client connected (start delay,
    /// duration, late cycles); nil while not connected.
    public var cycleTimes: CycleTimeReport? { connection?.memory.cycleTimes.report }

    /// The latency JACK computed for each group: for an input group, from the outside world
    /// to recd (capture latency); for an output group, from recd to the outside world
    /// (playback latency). The largest over the group's channels.
    public func latencies() -> [GroupLatency] {
        guard let connection, let client = runningClient else { return [] }
        let rate = client.sampleRate
        return (connection.inputs + connection.outputs).map { group in
            let ranges = group.ports.map { client.latencyRange(of: $0, direction: group.direction) }
            let lower = ranges.map(\.lowerBound).max() ?? 0
            let upper = ranges.map(\.upperBound).max() ?? 0
            return GroupLatency(
                group: group.spec.name, direction: group.direction, frames: lower...upper,
                sampleRate: rate)
        }
    }

    // MARK: Groups and ports

    /// Whether every JACK port behind the group exists now (as of the last drain).
    public func isAvailable(group name: String) -> Bool {
        guard let connection else { return false }
        return (connection.inputs + connection.outputs).first { $0.spec.name == name }?.available
            ?? false
    }

    /// Availability of every group, by name.
    public var groupAvailability: [String: Bool] {
        guard let connection else { return [:] }
        return Dictionary(
            (connection.inputs + connection.outputs).map { ($0.spec.name, $0.available) },
            uniquingKeysWith: { first, _ in first })
    }

    /// recd's own full JACK port names for a group, in channel order.
    public func jackPortNames(ofGroup name: String) -> [String] {
        guard let connection else { return [] }
        return (connection.inputs + connection.outputs).first { $0.spec.name == name }?.fullNames
            ?? []
    }

    /// The JACK ports behind a group that existed at the last availability check (patterns
    /// resolved), in channel order, each with where its audio comes from (`PortOrigin`).
    public func origins(ofGroup name: String) -> [(jackPort: String, origin: PortOrigin)] {
        guard let connection else { return [] }
        let group = (connection.inputs + connection.outputs).first { $0.spec.name == name }
        return (group?.targets ?? []).compactMap { $0 }.map { ($0, PortOrigin(jackPort: $0)) }
    }

    /// Full names of the JACK ports matching a shell-style pattern (all ports when nil).
    public func ports(matching pattern: String? = nil) -> [String] {
        guard let client = runningClient else { return [] }
        return client.ports(matching: pattern.map(PortPattern.regularExpression(forGlob:)))
            .sorted(by: PortPattern.naturallyOrdered)
    }

    /// Full names of the ports connected to the port named `port`.
    public func connections(of port: String) -> [String] {
        runningClient?.connections(of: port) ?? []
    }

    /// Connects two ports by full name (an output, then an input).
    public func connect(source: String, destination: String) throws(AudioEngineError) {
        guard let client = runningClient else { throw lostOrNotRunning }
        do { try client.connect(source: source, destination: destination) } catch {
            throw .jack(error)
        }
    }

    /// Disconnects two ports by full name.
    public func disconnect(source: String, destination: String) throws(AudioEngineError) {
        guard let client = runningClient else { throw lostOrNotRunning }
        do { try client.disconnect(source: source, destination: destination) } catch {
            throw .jack(error)
        }
    }

    // MARK: Notifications

    /// Collects what JACK announced since the last call, and acts on it: when ports or clients
    /// come or go (registration, unregistration, a client's close or death, a rename), each
    /// group's availability is recomputed from the port list read here, without the ports
    /// JACK announced gone, and once more 40 ms later (reported as `.groupAvailabilityChanged`)
    /// and, with `repair`, groups are connected to ports that (re)appeared. Also frees retired
    /// snapshots. Call it whenever `wake` fires (and now and then anyway).
    ///
    /// Availability is cheap; connection checks are not (JACK makes them wait for a pending
    /// graph change, a period or two). A caller that must react fast to a device going away
    /// passes `repair: false`, reacts, then calls `repairConnections()`.
    ///
    /// `.bufferSize` and `.sampleRate` are reported only when they differ from what this
    /// connection last reported (JACK repeats them at activation). A connection of one of our
    /// ports that someone else removed (`jack_disconnect`) is made again by the repair, which
    /// returns it (`repairConnections`).
    public func drainNotifications(repair: Bool = true) -> [EngineNotification] {
        guard let connection else { return [] }
        var connectionsChanged = false
        var notifications = connection.client.sink.drain().filter { notification in
            switch notification {
            case .bufferSize(let frames):
                defer { connection.bufferSize = frames }
                return frames != connection.bufferSize
            case .sampleRate(let rate):
                defer { connection.sampleRate = rate }
                return rate != connection.sampleRate
            case .portConnectionChanged(let source, let destination, let connected):
                let ours = ownPortNames(connection)
                if !connected, ours.contains(source) || ours.contains(destination) {
                    connection.removedConnections.insert(JackConnection(source: source, destination: destination))
                    connection.needsRepair = true
                    connectionsChanged = true
                } else if !connection.memory.graph.attachments.isEmpty {
                    // A bypass made (or an attachment's own edge removed): the reconciler decides.
                    let held = ConnectionReconciler.heldPorts(connection.memory.graph.attachments)
                    if held.contains(source) || held.contains(destination) {
                        connection.needsRepair = true
                        connectionsChanged = true
                    }
                }
                return true
            case .portRegistered(let name):
                connection.registeredPorts.insert(name)
                return true
            default:
                return true
            }
        }
        let changed = connection.client.sink.takePortsChanged()
        let now = SystemClock.monotonicSeconds()
        if let fires = connection.timerFiresAt, now >= fires { connection.timerFiresAt = nil }
        if notifications.contains(where: { if case .serverLost = $0 { true } else { false } }) {
            connection.lost = true
        } else if !connection.lost {
            let recheckDue = connection.recheckAt.map { now >= $0 } ?? false
            if changed || connectionsChanged {
                // Once more when the graph has settled: a closing client's ports may still be
                // listed, and a connection made again may not have held (PipeWire answers
                // "already connected" while it still tears the removed link down).
                connection.recheckAt = now + Self.settleRecheckSeconds
            } else if recheckDue {
                connection.recheckAt = nil
                connection.needsRepair = true
            }
            if changed || recheckDue {
                let changes = updateAvailability(connection, report: true)
                notifications += changes
                if changed || !changes.isEmpty { connection.needsRepair = true }
            }
            if repair { repairConnections() }
            armRecheckTimer(connection, now: now)
        }
        connection.memory.collectDeadWood()
        return notifications
    }

    /// How long after a port or client change availability is computed once more.
    static let settleRecheckSeconds = 0.04

    /// Makes sure the control thread is woken for a pending recheck: one short-lived timer
    /// thread at a time sleeps until `recheckAt` and calls `wake` (if none can be made, the
    /// caller's periodic drain does the recheck).
    private func armRecheckTimer(_ connection: Connection, now: Double) {
        guard let recheckAt = connection.recheckAt, connection.timerFiresAt == nil else { return }
        let delay = max(0, recheckAt - now)
        let wake = self.wake
        let timer = try? NamedThread(name: "port recheck") {
            SystemClock.sleep(seconds: delay)
            wake()
        }
        if timer != nil { connection.timerFiresAt = recheckAt }
    }

    /// Has the connection reconciler bring JACK's graph in line with the rules (port keeping:
    /// every complete group connected to the JACK ports behind it; attachments: their edges,
    /// and no bypass) when something changed since the last pass. The pass runs on the
    /// engine's "jack connection" thread (`ConnectionReconciler.swift` states the rules and
    /// how conflicts are decided); this returns at once.
    ///
    /// Returns the connections passes made again, since the last call, after someone else
    /// removed them (a third party's `jack_disconnect`), for the caller to log; connections
    /// made because a device (re)appeared are not in it. A removal seen while the other port's
    /// client was leaving cannot be repaired (JACK refuses the connection) and is forgotten.
    @discardableResult
    public func repairConnections() -> [JackConnection] {
        guard let connection else { return [] }
        reconcileIfNeeded(connection)
        return connection.worker.takeRestored()
    }

    /// Hands the worker the rules now if something changed since the last pass.
    private func reconcileIfNeeded(_ connection: Connection) {
        if connection.worker.retryDue(now: SystemClock.monotonicSeconds()) { connection.needsRepair = true }
        guard !connection.lost, connection.needsRepair else { return }
        connection.needsRepair = false
        connection.worker.submit(connectionRules(connection))
    }

    /// What the two rules want now (control thread; only the JACK port list is read here):
    /// port keeping's edges for every complete group, each attachment's edges and the ports
    /// it holds, and the one-shot news since the last pass.
    private func connectionRules(_ connection: Connection) -> ConnectionRules {
        var rules = ConnectionRules()
        let excluded = excludedPorts(connection)
        for group in connection.inputs + connection.outputs {
            for name in group.fullNames { rules.watched[name] = group.direction == .input ? .input : .output }
            // Only complete devices: a device half gone is not worth a server round trip.
            guard group.available else { continue }
            let targets = resolveTargets(group, client: connection.client, excluding: excluded)
            for channel in 0..<min(group.spec.channels, targets.count) {
                guard let target = targets[channel] else { continue }
                let edge =
                    group.direction == .input
                    ? JackConnection(source: target, destination: group.fullNames[channel])
                    : JackConnection(source: group.fullNames[channel], destination: target)
                rules.wanted[edge] = .group(group.spec.name)
            }
        }
        let attachments = connection.memory.graph.attachments
        for handle in attachments {
            for (app, recd) in zip(handle.playPorts, handle.recdPlayPorts) {
                rules.wanted[JackConnection(source: app, destination: recd)] = .attachment(handle.clientName)
                rules.watched[app] = .output
                rules.watched[recd] = .input
            }
            for (app, recd) in zip(handle.capturePorts, handle.recdCapturePorts) {
                rules.wanted[JackConnection(source: recd, destination: app)] = .attachment(handle.clientName)
                rules.watched[recd] = .output
                rules.watched[app] = .input
            }
        }
        rules.guardedPorts = ConnectionReconciler.heldPorts(attachments)
        rules.forbidden = connection.releasedConnections
        rules.removedByOthers = connection.removedConnections
        rules.registered = connection.registeredPorts
        connection.releasedConnections = []
        connection.removedConnections = []
        connection.registeredPorts = []
        return rules
    }

    /// How long an edge recd left alone (it was changed back and forth more than twice within
    /// a second) stays alone unless its ports register again first. Set before `start`.
    var churnRetrySeconds = 30.0

    /// JACK connections recd leaves alone now because something kept undoing recd's changes to
    /// them (`ConnectionReconciler.swift`, rule 3); for `status`.
    public var churningConnections: [JackConnection] { connection?.worker.churning ?? [] }

    /// The connections passes newly left alone since the last call, for the caller to log once.
    public func takeChurnNews() -> [ChurningConnection] { connection?.worker.takeLeftAlone() ?? [] }

    /// Our own ports' full names.
    private func ownPortNames(_ connection: Connection) -> Set<String> {
        Set((connection.inputs + connection.outputs).flatMap(\.fullNames))
    }

    /// Connects an available group to the JACK ports behind it now, without first asking
    /// which connections exist (that question waits for JACK's pending graph change, a period
    /// or so; an existing connection is simply left as it is). For a group about to receive a
    /// player: the connections and the player's move take effect at the same period, so the
    /// device hears the move from its first frame.
    public func connectNow(group name: String) {
        guard let connection, !connection.lost,
            let group = (connection.inputs + connection.outputs).first(where: { $0.spec.name == name })
        else { return }
        // The one connection made on the control thread: a device that just arrived must be
        // connected in the same period as the player's move; the next pass checks it.
        for edge in outputGroupEdges(group, connection) {
            _ = try? connection.client.connect(source: edge.source, destination: edge.destination)
        }
    }

    /// The edges that connect an available group to the JACK ports behind it, without those
    /// the reconciler leaves alone (none for a group that is not available).
    private func outputGroupEdges(_ group: Group, _ connection: Connection) -> [JackConnection] {
        guard !connection.lost, group.available else { return [] }
        let targets = resolveTargets(group, client: connection.client, excluding: excludedPorts(connection))
        let leftAlone = Set(connection.worker.churning)
        return (0..<min(group.spec.channels, targets.count)).compactMap { channel -> JackConnection? in
            guard let target = targets[channel] else { return nil }
            let edge =
                group.direction == .input
                ? JackConnection(source: target, destination: group.fullNames[channel])
                : JackConnection(source: group.fullNames[channel], destination: target)
            return leftAlone.contains(edge) ? nil : edge
        }
    }

    /// Recomputes availability (all JACK ports behind a group exist). Returns the changes.
    /// Never trusts a port JACK announced gone, nor one of a client JACK announced closed,
    /// even while the port list (not yet settled) still holds it.
    private func updateAvailability(_ connection: Connection, report: Bool) -> [EngineNotification] {
        let excluded = excludedPorts(connection)
        var changes: [EngineNotification] = []
        func update(_ groups: inout [Group]) {
            for index in groups.indices {
                let group = groups[index]
                let targets = resolveTargets(group, client: connection.client, excluding: excluded)
                groups[index].targets = targets
                let available =
                    group.spec.connectTo.isEmpty
                    || (targets.count >= group.spec.channels
                        && targets.prefix(group.spec.channels).allSatisfy { $0 != nil })
                if available != group.available {
                    groups[index].available = available
                    if report {
                        changes.append(.groupAvailabilityChanged(group: group.spec.name, available: available))
                    }
                }
            }
        }
        update(&connection.inputs)
        update(&connection.outputs)
        return changes
    }

    /// The JACK ports behind a group in channel order; nil where an exact name is missing.
    private func resolveTargets(_ group: Group, client: JackClient, excluding excluded: Set<String>)
        -> [String?]
    {
        // Behind an input group are JACK outputs (capture ports), behind an output group inputs.
        let wanted = group.direction == .input ? Self.jackPortIsOutput : Self.jackPortIsInput
        var targets: [String?] = []
        for entry in group.spec.connectTo {
            if PortPattern.isPattern(entry) {
                targets += client.ports(
                    matching: PortPattern.regularExpression(forGlob: entry), flags: wanted
                )
                .filter { !excluded.contains($0) }
                .sorted(by: PortPattern.naturallyOrdered)
                .map { Optional($0) }
            } else {
                targets.append(client.portExists(entry) && !excluded.contains(entry) ? entry : nil)
            }
        }
        return targets
    }

    /// Ports no group may use: our own, those JACK announced gone and those of clients JACK
    /// announced closed (still listed until its graph settles), and the ports attachments hold
    /// (the connection reconciler's rule 2: an attachment beats a configured group, so a group
    /// naming an attached port is unavailable until the application detaches).
    private func excludedPorts(_ connection: Connection) -> Set<String> {
        let ownPorts = ownPortNames(connection)
        let listed = Set(connection.client.ports(matching: nil))
        let vanished = connection.client.sink.vanished(stillListed: listed)
        let attached = ConnectionReconciler.heldPorts(connection.memory.graph.attachments)
        return ownPorts.union(vanished.ports).union(attached)
            .union(listed.filter { vanished.clients.contains(NotificationSink.clientName(ofPort: $0)) })
    }

    /// The attachments changed: availability is computed again at the next drain (a configured
    /// group that names an attached port becomes unavailable, or available again), and the
    /// reconciler applies the attachment's edges now.
    private func recheckSoon(_ connection: Connection) {
        connection.needsRepair = true
        reconcileIfNeeded(connection)
        let now = SystemClock.monotonicSeconds()
        connection.recheckAt = now
        armRecheckTimer(connection, now: now)
    }

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
    /// group are its bus channels). `player.outputGroup` names the new group at once.
    ///
    /// - Parameter routes: where each channel goes in the new group; default
    ///   `PlayerRoute.defaultRoutes`.
    public func movePlayer(
        _ player: PlayerHandle, toOutputGroup outputGroup: String, routes: [PlayerRoute]? = nil,
        rampMilliseconds: Double = AudioEngine.defaultRampMilliseconds
    ) throws(AudioEngineError) {
        guard let connection, runningClient != nil else { throw lostOrNotRunning }
        guard let group = connection.outputs.first(where: { $0.spec.name == outputGroup }) else {
            throw .unknownGroup(outputGroup)
        }
        guard rampMilliseconds.isFinite, rampMilliseconds >= 0 else {
            throw .invalidArgument("a ramp takes 0 ms or more, not \(rampMilliseconds)")
        }
        let routes = try Self.checkedRoutes(routes, playerChannels: player.channels, group: group)
        player.move(
            toOutputGroup: outputGroup, routes: routes, flatOutputBase: group.flatBase,
            crossfadeFrames: rampFrames(rampMilliseconds))
    }

    /// `routes`, or the default ones, checked against the player's and the group's channels.
    private static func checkedRoutes(_ routes: [PlayerRoute]?, playerChannels channels: Int, group: Group)
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
        update(player) {
            $0.paused = false
            $0.rampFrames = rampFrames(rampMilliseconds)
        }
    }

    /// Fades a player out over `rampMilliseconds`, after which it stops reading its ring.
    public func pause(
        _ player: PlayerHandle, rampMilliseconds: Double = AudioEngine.defaultRampMilliseconds
    ) {
        update(player) {
            $0.paused = true
            $0.rampFrames = rampFrames(rampMilliseconds)
        }
    }

    /// Moves a player's gain linearly to `decibels` over `rampMilliseconds` (for ducking:
    /// -14 dB over 20 ms). A paused player takes the new gain when it next plays.
    public func setGain(
        _ player: PlayerHandle, decibels: Double,
        rampMilliseconds: Double = AudioEngine.defaultRampMilliseconds
    ) {
        update(player) {
            $0.gain = Self.linearGain(decibels: decibels)
            $0.rampFrames = rampFrames(rampMilliseconds)
        }
    }

    /// Takes a player out of the graph (it stops at once: pause first for a fade).
    public func removePlayer(_ player: PlayerHandle) {
        player.detach()
        guard let connection, connection.memory.players.contains(where: { $0 === player }) else {
            return
        }
        connection.memory.publish(
            players: connection.memory.players.filter { $0 !== player },
            taps: connection.memory.taps)
    }

    private func update(_ player: PlayerHandle, _ change: (inout PlayerCommand) -> Void) {
        var command = PlayerCommand(packed: player.voice.pointee.command.load(ordering: .relaxed))
        change(&command)
        player.voice.pointee.command.store(command.packed, ordering: .releasing)
    }

    private func rampFrames(_ milliseconds: Double) -> Int {
        let rate = Double(runningClient?.sampleRate ?? 48_000)
        return max(0, Int((milliseconds / 1000 * rate).rounded()))
    }

    /// 10^(dB/20); -infinity gives 0.
    public static func linearGain(decibels: Double) -> Float {
        decibels == -.infinity ? 0 : Float(pow(10, decibels / 20))
    }

    // MARK: Attached applications

    /// Frames in an attachment voice's ring: the longest period JACK allows (the ring holds
    /// one period at a time).
    static let attachmentRingFrames = 8192
    private var attachmentSerial = 0

    /// Starts putting an application's own JACK client under recd (`session.attach`): checks
    /// the ports here (the port list is read locally, no server request), then the connection
    /// thread registers one recd input port per play port (the app's outputs) and one recd
    /// output port per capture port (the app's inputs) — server requests, which wait behind the
    /// reconciler's, so the control thread never makes them — and wakes the control thread.
    /// `finishedAttachments()` then hands back the handle: in the graph, with a paused player
    /// voice that plays what the app's play ports carry into `outputGroup` (routes:
    /// `PlayerRoute.defaultRoutes` unless given; needed only with play ports); the reconciler
    /// connects the app's ports to recd's and removes every other connection of them (nothing
    /// may bypass recd). The capture ports carry zeros until `setCapture` opens them.
    ///
    /// Throws `.invalidArgument` when a port does not exist, is not `appClient`'s, has the
    /// wrong direction, or is named twice.
    public func beginAttach(
        client appClient: String, playPorts: [String], capturePorts: [String], outputGroup: String?,
        routes: [PlayerRoute]? = nil, gainDecibels: Double = 0
    ) throws(AudioEngineError) -> AttachmentTicket {
        guard let connection, let client = runningClient else { throw lostOrNotRunning }
        guard !playPorts.isEmpty || !capturePorts.isEmpty else {
            throw .invalidArgument(
                "attach names no ports: give playPorts (the app's outputs) or capturePorts (its inputs)")
        }
        guard Set(playPorts + capturePorts).count == playPorts.count + capturePorts.count else {
            throw .invalidArgument("a port is named twice among playPorts and capturePorts")
        }
        for (port, wanted, role) in playPorts.map({ ($0, Self.jackPortIsOutput, "play port (an output)") })
            + capturePorts.map({ ($0, Self.jackPortIsInput, "capture port (an input)") })
        {
            guard port.hasPrefix(appClient + ":") else {
                throw .invalidArgument("port \(port) is not client \(appClient)'s; name it as \(appClient):PORT")
            }
            guard let flags = client.portFlags(port) else {
                throw .invalidArgument("port \(port) does not exist; see `jack_lsp \(appClient)`")
            }
            guard flags & wanted != 0 else {
                throw .invalidArgument("port \(port) cannot be a \(role): JACK says it is the other direction")
            }
        }
        let group = connection.outputs.first { $0.spec.name == outputGroup }
        if !playPorts.isEmpty && group == nil { throw .unknownGroup(outputGroup ?? "(none)") }
        var player: PlayerHandle?
        if let group, !playPorts.isEmpty {
            let routes = try Self.checkedRoutes(routes, playerChannels: playPorts.count, group: group)
            player = PlayerHandle(
                outputGroup: group.spec.name, channels: playPorts.count, capacityFrames: Self.attachmentRingFrames,
                routes: routes, flatOutputBase: group.flatBase,
                initialCommand: PlayerCommand(
                    gain: Self.linearGain(decibels: gainDecibels), rampFrames: 0, paused: true))
        }
        attachmentSerial += 1
        let ticket = AttachmentTicket(serial: attachmentSerial)
        let base = "\(appClient.prefix(48))-\(attachmentSerial)"
        let names =
            (0..<playPorts.count).map { ("\(base)-play_\($0 + 1)", GroupDirection.input) }
            + (0..<capturePorts.count).map { ("\(base)-capture_\($0 + 1)", GroupDirection.output) }
        // The output group's own edges first (a device that just arrived hears the attachment
        // from its first frame), on the same thread, before the registrations.
        let groupEdges = group.map { outputGroupEdges($0, connection) } ?? []
        connection.pendingAttachments[ticket] = PendingAttachment(
            clientName: appClient, playPorts: playPorts, capturePorts: capturePorts, player: player)
        let registrations = connection.registrations
        let wake = self.wake
        connection.worker.perform { client in
            for edge in groupEdges { _ = try? client.connect(source: edge.source, destination: edge.destination) }
            var made: [RegisteredPort] = []
            var failure: JackError?
            for (name, direction) in names {
                do throws(JackError) {
                    let port = try client.registerPort(name: name, direction: direction)
                    made.append(RegisteredPort(port: port, name: client.fullName(of: port)))
                } catch {
                    failure = error
                    break
                }
            }
            if failure != nil {
                for port in made { client.unregisterPort(port.port) }
            }
            let result: Result<[RegisteredPort], JackError> = failure.map { .failure($0) } ?? .success(made)
            registrations.results.withLock { $0[ticket] = result }
            wake()
        }
        return ticket
    }

    /// The attachments whose ports the connection thread has registered (or failed to) since
    /// the last call, for the tickets `beginAttach` gave. A handle returned is in the graph:
    /// to undo it (its application went meanwhile), `detach` it. Attachments under way when
    /// the engine stops or loses its server are not returned (the caller fails them).
    public func finishedAttachments() -> [(AttachmentTicket, Result<AttachmentHandle, AudioEngineError>)] {
        guard let connection, !connection.pendingAttachments.isEmpty else { return [] }
        let done = connection.registrations.results.withLock { registrations in
            defer { registrations = [:] }
            return registrations
        }
        var finished: [(AttachmentTicket, Result<AttachmentHandle, AudioEngineError>)] = []
        var graph = connection.memory.graph
        for ticket in done.keys.sorted(by: { $0.serial < $1.serial }) {
            guard let pending = connection.pendingAttachments.removeValue(forKey: ticket), let result = done[ticket]
            else { continue }
            switch result {
            case .failure(let error):
                finished.append((ticket, .failure(.jack(error))))
            case .success(let ports):
                let play = ports.prefix(pending.playPorts.count).map { AttachmentHandle.OwnPort(port: $0.port, name: $0.name) }
                let capture = ports.dropFirst(pending.playPorts.count).map {
                    AttachmentHandle.OwnPort(port: $0.port, name: $0.name)
                }
                let worker = connection.worker
                let handle = AttachmentHandle(
                    clientName: pending.clientName, playPorts: pending.playPorts, recdPlayPorts: Array(play),
                    capturePorts: pending.capturePorts, recdCapturePorts: Array(capture), player: pending.player,
                    release: { ports in
                        // Once the process thread has left them (the handle's deinit): a server
                        // request, so on the connection thread too.
                        let ports = RegisteredPorts(ports)
                        worker.perform { client in for port in ports.ports { client.unregisterPort(port) } }
                    })
                if let player = pending.player { graph.players.append(player) }
                graph.attachments.append(handle)
                finished.append((ticket, .success(handle)))
            }
        }
        if finished.contains(where: { if case .success = $0.1 { true } else { false } }) {
            connection.memory.publish(graph)
            recheckSoon(connection)
        }
        return finished
    }

    /// Takes an attachment out of the graph and disconnects the app's ports from recd's; recd's
    /// ports for it are unregistered once the process thread has left them.
    public func detach(_ handle: AttachmentHandle) {
        handle.player?.detach()
        guard let connection else { return }
        var graph = connection.memory.graph
        guard graph.attachments.contains(where: { $0 === handle }) else { return }
        graph.attachments.removeAll { $0 === handle }
        graph.players.removeAll { $0 === handle.player }
        let processed = graph.processedCaptures.removeValue(forKey: ObjectIdentifier(handle))
        if let processed {
            graph.taps.removeAll { $0 === processed.tap }
            graph.referenceTaps.removeAll { $0 === processed.tap.reference }
        }
        connection.memory.publish(graph)
        if let processed { retire(processed, connection) }
        for (app, recd) in zip(handle.playPorts, handle.recdPlayPorts) {
            connection.releasedConnections.insert(JackConnection(source: app, destination: recd))
        }
        for (app, recd) in zip(handle.capturePorts, handle.recdCapturePorts) {
            connection.releasedConnections.insert(JackConnection(source: recd, destination: app))
        }
        recheckSoon(connection)
    }

    /// Attachments in the graph now.
    public var attachments: [AttachmentHandle] { connection?.memory.graph.attachments ?? [] }

    /// Capture port k of the attachment carries channel k of `inputGroup` (a mono group feeds
    /// every capture port; ports past the group's channels carry silence) while `open`, zeros
    /// otherwise (or without a group). From the process thread's next period.
    public func setCapture(_ handle: AttachmentHandle, inputGroup: String?, open: Bool) {
        let group = inputGroup.flatMap { name in connection?.inputs.first { $0.spec.name == name } }
        let sources = (0..<handle.capturePorts.count).map { index -> Int in
            guard let group else { return -1 }
            if group.spec.channels == 1 { return group.flatBase }
            return index < group.spec.channels ? group.flatBase + index : -1
        }
        handle.setCapture(sources: sources, open: open && group != nil)
        // A processed capture's tap records zeros while closed: the worker never sees a muted
        // or unpermitted input.
        if let processed = connection?.memory.graph.processedCaptures[ObjectIdentifier(handle)] {
            setZeroed(processed.tap, !(open && group != nil))
        }
    }

    /// The attachment's capture ports carry `inputGroup` processed from the next period: a
    /// capture tap over the group (the channels the ports carry: channel k to port k, a mono
    /// group's one channel to every port; at most 8) with its reference tap over
    /// `referenceOutputGroup` (the far end), and a ring that starts with `slackFrames` of
    /// silence, all in one snapshot — the ring's first read and the taps' first period are the
    /// same cycle. The caller runs the processing: it reads the taps and writes the processed
    /// frames into the returned `ProcessedCapture` a period at a time. A processed capture the
    /// attachment had is replaced in the same snapshot. `setCapture` still gates the ports.
    public func processCapture(
        _ handle: AttachmentHandle, inputGroup: String, referenceOutputGroup: String, slackFrames: Int
    ) throws(AudioEngineError) -> ProcessedCapture {
        guard let connection, let client = runningClient else { throw lostOrNotRunning }
        guard connection.memory.graph.attachments.contains(where: { $0 === handle }) else {
            throw .invalidArgument("\(handle.clientName) is not attached")
        }
        guard let group = connection.inputs.first(where: { $0.spec.name == inputGroup }) else {
            throw .unknownGroup(inputGroup)
        }
        guard (1...8_192).contains(slackFrames) else {
            throw .invalidArgument("a processed capture's slack is 1 to 8192 frames, not \(slackFrames)")
        }
        let ports = handle.capturePorts.count
        let channels = group.spec.channels == 1 ? 1 : min(group.spec.channels, max(ports, 1), 8)
        let portChannels = (0..<ports).map { $0 < channels ? $0 : (channels == 1 ? 0 : -1) }
        let tap = try makeCaptureTap(
            inputGroup: inputGroup, channels: Array(0..<channels), bufferFrames: client.sampleRate,
            zeroed: !handle.isCaptureOpen, referenceOutputGroup: referenceOutputGroup)
        let processed = ProcessedCapture(tap: tap, portChannels: portChannels, slackFrames: slackFrames)
        var graph = connection.memory.graph
        let old = graph.processedCaptures[ObjectIdentifier(handle)]
        if let old {
            graph.taps.removeAll { $0 === old.tap }
            graph.referenceTaps.removeAll { $0 === old.tap.reference }
        }
        graph.taps.append(tap)
        if let reference = tap.reference { graph.referenceTaps.append(reference) }
        graph.processedCaptures[ObjectIdentifier(handle)] = processed
        connection.memory.publish(graph)
        if let old { retire(old, connection) }
        return processed
    }

    /// The attachment's capture ports carry the raw input again from the next period; the
    /// processed capture's taps leave the graph (retired once no cycle can write them).
    public func unprocessCapture(_ handle: AttachmentHandle) {
        guard let connection else { return }
        var graph = connection.memory.graph
        guard let old = graph.processedCaptures.removeValue(forKey: ObjectIdentifier(handle)) else { return }
        graph.taps.removeAll { $0 === old.tap }
        graph.referenceTaps.removeAll { $0 === old.tap.reference }
        connection.memory.publish(graph)
        retire(old, connection)
    }

    /// The attachment's processed capture in the graph now (nil: raw).
    public func processedCapture(of handle: AttachmentHandle) -> ProcessedCapture? {
        connection?.memory.graph.processedCaptures[ObjectIdentifier(handle)]
    }

    private func retire(_ processed: ProcessedCapture, _ connection: Connection) {
        let lost = connection.lost || connection.client.sink.serverLost.load(ordering: .acquiring)
        let mark = lost ? nil : connection.memory.cycles.markNow()
        processed.tap.detach(after: mark)
        processed.tap.reference?.detach(after: mark)
    }

    /// Keeps every attachment's audio inside recd: a connection of an app's play or capture
    /// port to anything but recd's port for it (the app's own auto-connect, a patchbay) is
    /// removed, and a removed connection to recd's port is made again, by the connection
    /// reconciler's next pass (off the control thread; see `repairConnections`). Returns what
    /// passes removed since the last call, for the caller to log.
    @discardableResult
    public func enforceAttachments() -> [JackConnection] {
        guard let connection else { return [] }
        reconcileIfNeeded(connection)
        return connection.worker.takeCut()
    }

    /// Attachments whose app ports are gone (the app's client closed or died).
    public func attachmentsWithMissingPorts() -> [AttachmentHandle] {
        guard let connection, let client = runningClient else { return [] }
        return connection.memory.graph.attachments.filter { handle in
            !(handle.playPorts + handle.capturePorts).allSatisfy(client.portExists)
        }
    }

    /// The process id of the JACK client `name`, when the server tells (PipeWire's JACK does;
    /// jackd2's libjack answers 0, "not implemented on library side": nil).
    public func processID(ofClient name: String) -> Int32? {
        runningClient?.processID(ofClient: name)
    }

    // MARK: Capture taps

    /// Adds a capture tap on an input group; returns its handle for the consumer.
    ///
    /// - Parameters:
    ///   - channels: which of the group's channels (0-based), in order; default all.
    ///   - bufferFrames: ring size; default two seconds.
    ///   - zeroed: start writing zeros (muted, or not granted) instead of samples.
    ///   - referenceOutputGroup: for a capture that is echo-cancelled, the output group whose
    ///     samples are its far end: the tap gets a `reference` tap over that group's channels
    ///     (at most 8, the processor's limit), published in the same snapshot and removed with it.
    public func addCaptureTap(
        inputGroup: String, channels: [Int]? = nil, bufferFrames: Int? = nil, zeroed: Bool = false,
        referenceOutputGroup: String? = nil
    ) throws(AudioEngineError) -> CaptureTap {
        guard let connection else { throw lostOrNotRunning }
        let tap = try makeCaptureTap(
            inputGroup: inputGroup, channels: channels, bufferFrames: bufferFrames, zeroed: zeroed,
            referenceOutputGroup: referenceOutputGroup)
        var graph = connection.memory.graph
        graph.taps.append(tap)
        if let reference = tap.reference { graph.referenceTaps.append(reference) }
        connection.memory.publish(graph)
        return tap
    }

    /// Replaces an input tap by a new one on `inputGroup` in ONE graph snapshot: the old tap's
    /// last period and the new tap's first are adjacent (the new tap's `firstFrameTime` is the
    /// frame after the old tap's last), so a recording can go on from another input
    /// continuous in time. The old tap is detached (what it captured stays readable), its
    /// reference tap with it; a tap not in the graph is simply not removed. Parameters as
    /// `addCaptureTap`.
    public func replaceCaptureTap(
        _ old: CaptureTap, inputGroup: String, channels: [Int]? = nil, bufferFrames: Int? = nil,
        zeroed: Bool = false, referenceOutputGroup: String? = nil
    ) throws(AudioEngineError) -> CaptureTap {
        guard let connection else { throw lostOrNotRunning }
        let tap = try makeCaptureTap(
            inputGroup: inputGroup, channels: channels, bufferFrames: bufferFrames, zeroed: zeroed,
            referenceOutputGroup: referenceOutputGroup)
        var graph = connection.memory.graph
        graph.taps.removeAll { $0 === old }
        graph.referenceTaps.removeAll { $0 === old.reference }
        graph.taps.append(tap)
        if let reference = tap.reference { graph.referenceTaps.append(reference) }
        connection.memory.publish(graph)
        let mark = connection.memory.cycles.markNow()
        old.detach(after: mark)
        old.reference?.detach(after: mark)
        return tap
    }

    private func makeCaptureTap(
        inputGroup: String, channels: [Int]?, bufferFrames: Int?, zeroed: Bool, referenceOutputGroup: String? = nil
    ) throws(AudioEngineError) -> CaptureTap {
        guard let connection, let client = runningClient else { throw lostOrNotRunning }
        guard let group = connection.inputs.first(where: { $0.spec.name == inputGroup }) else {
            throw .unknownGroup(inputGroup)
        }
        let channels = channels ?? Array(0..<group.spec.channels)
        guard !channels.isEmpty, channels.allSatisfy({ (0..<group.spec.channels).contains($0) })
        else {
            throw .invalidArgument(
                "capture channels \(channels.map { $0 + 1 }) are not within group '\(inputGroup)''s "
                    + "\(group.spec.channels) channels")
        }
        let capacity = max(bufferFrames ?? 2 * client.sampleRate, 1)
        var reference: CaptureTap?
        if let referenceOutputGroup {
            guard let output = connection.outputs.first(where: { $0.spec.name == referenceOutputGroup }) else {
                throw .unknownGroup(referenceOutputGroup)
            }
            // Twice the capture's ring: read in step with the capture, it overruns only after the
            // capture has (whose gap its consumer then skips in both), not before.
            reference = CaptureTap(
                inputGroup: referenceOutputGroup,
                flatInputChannels: (0..<min(output.spec.channels, 8)).map { output.flatBase + $0 },
                capacityFrames: 2 * capacity, zeroed: false, sampleRate: client.sampleRate, isReference: true)
        }
        return CaptureTap(
            inputGroup: inputGroup, flatInputChannels: channels.map { group.flatBase + $0 },
            capacityFrames: capacity, zeroed: zeroed, sampleRate: client.sampleRate, reference: reference)
    }

    /// Makes a tap write zeros instead of samples (app input mute, permission not granted),
    /// from the next period on.
    public func setZeroed(_ tap: CaptureTap, _ zeroed: Bool) {
        tap.state.pointee.zeroed.store(zeroed, ordering: .releasing)
    }

    /// Takes a tap (input or bus) out of the graph, with its reference tap; what it captured
    /// stays readable.
    /// It is retired (`CaptureTap.isRetired`) once the process thread has finished a cycle
    /// begun after this.
    public func removeCaptureTap(_ tap: CaptureTap) {
        guard let connection else {
            tap.detach(after: nil)
            return
        }
        var graph = connection.memory.graph
        guard graph.taps.contains(where: { $0 === tap }) || graph.busTaps.contains(where: { $0 === tap })
        else {
            // Not in this graph (already removed, or the engine was restarted since): no cycle
            // of this client writes it.
            tap.detach(after: nil)
            tap.reference?.detach(after: nil)
            return
        }
        graph.taps.removeAll { $0 === tap }
        graph.busTaps.removeAll { $0 === tap }
        graph.referenceTaps.removeAll { $0 === tap.reference }
        connection.memory.publish(graph)
        // A lost server runs no cycle (libjack's process thread waits on the server that is
        // gone): the tap is retired now, not when the engine is stopped or reconnected.
        let lost = connection.lost || connection.client.sink.serverLost.load(ordering: .acquiring)
        let mark = lost ? nil : connection.memory.cycles.markNow()
        tap.detach(after: mark)
        tap.reference?.detach(after: mark)
    }

    // MARK: Monitoring

    /// The monitoring setup in force (nil: none set).
    public var monitoring: MonitoringSetup? { monitoringSetup }

    /// Sets the DJ-style main/cue monitoring (SPEC §4 multiRoute, §12 `recctl cue`): builds the
    /// setup's plan and publishes it in a new snapshot; the process thread picks it up at its
    /// next period. Gains (a source's gain, a source joining or leaving a bus) and the cue mix
    /// ramp linearly over `rampMilliseconds`, per sample, so changes do not click; switching
    /// `splitCue` crossfades over the same time. A source new to the buses fades in from
    /// silence; an input group dropped from `sources` fades out. Changing which output groups
    /// carry the buses, or `busChannels`, takes effect at once.
    ///
    /// A player that is a source is heard only through the buses: its direct route to its own
    /// output group is bypassed while it is in `sources` (see `MonitoringSource`).
    ///
    /// A rejected setup (unknown group, cue mix outside 0...1, ...) throws and changes nothing.
    public func setMonitoring(
        _ setup: MonitoringSetup, rampMilliseconds: Double = AudioEngine.defaultRampMilliseconds
    ) throws(AudioEngineError) {
        guard let connection, runningClient != nil else { throw lostOrNotRunning }
        guard rampMilliseconds.isFinite, rampMilliseconds >= 0 else {
            throw .invalidArgument("a ramp takes 0 ms or more, not \(rampMilliseconds)")
        }
        let plan = try connection.memory.makeMonitoringPlan(
            setup, rampFrames: rampFrames(rampMilliseconds),
            inputGroups: Self.layouts(connection.inputs), outputGroups: Self.layouts(connection.outputs))
        var graph = connection.memory.graph
        graph.monitoring = plan
        connection.memory.publish(graph)
        monitoringSetup = setup
    }

    /// Adds a tap on a monitoring bus: records what the room heard (`.main`) or the cue, after
    /// the source gains and before the outputs (the cue mix and split do not apply). Same
    /// `CaptureTap` API as an input tap: `read`, `drainGaps` (whole-period gaps on overflow;
    /// with a period longer than 2048 frames, whole 2048-frame chunks), `firstFrameTime`,
    /// `setZeroed`; remove it with `removeCaptureTap`.
    ///
    /// It has the bus's channels as they are now (`busChannels` of the setup, 2 without one);
    /// bus channels added later are not in it, channels removed later read as silence, and so
    /// does the whole bus while no setup is set.
    ///
    /// - Parameter bufferFrames: ring size; default two seconds.
    public func addBusTap(_ bus: Bus, bufferFrames: Int? = nil) throws(AudioEngineError) -> CaptureTap {
        guard let connection, let client = runningClient else { throw lostOrNotRunning }
        let channels = connection.memory.graph.monitoring?.setup.busChannels ?? MonitoringSetup.defaultBusChannels
        let tap = CaptureTap(
            inputGroup: bus.rawValue, bus: bus,
            flatInputChannels: (0..<channels).map { MonitorState.busIndex(cue: bus == .cue, channel: $0) },
            capacityFrames: max(bufferFrames ?? 2 * client.sampleRate, 1), zeroed: false,
            sampleRate: client.sampleRate)
        var graph = connection.memory.graph
        graph.busTaps.append(tap)
        connection.memory.publish(graph)
        return tap
    }

    private static func layouts(_ groups: [Group]) -> [String: GroupLayout] {
        Dictionary(
            groups.map { ($0.spec.name, GroupLayout(flatBase: $0.flatBase, channels: $0.spec.channels)) },
            uniquingKeysWith: { first, _ in first })
    }

    // MARK: Meters

    /// Whether the process thread measures the input and output meters (on when the engine
    /// starts). The control thread turns them off while no one reads `meters()`: per-period
    /// work only for what is in use. Bus meters run while monitoring is set.
    public var metersActive: Bool {
        get { connection?.memory.state.pointee.metersActive.load(ordering: .relaxed) ?? false }
        set { connection?.memory.state.pointee.metersActive.store(newValue, ordering: .relaxed) }
    }

    /// Peak and RMS of every input and output channel since the previous call (which resets
    /// them), inputs first, in group and channel order; then, while a monitoring setup is set,
    /// each channel of the main and the cue bus (group `main`/`cue`, direction `.bus`).
    public func meters() -> [MeterReading] {
        guard let connection else { return [] }
        var readings: [MeterReading] = []
        for group in connection.inputs + connection.outputs {
            for channel in 0..<group.spec.channels {
                let cell =
                    group.direction == .input
                    ? connection.memory.meter(input: group.flatBase + channel)
                    : connection.memory.meter(output: group.flatBase + channel)
                readings.append(
                    MeterReading(
                        group: group.spec.name, channel: channel, direction: group.direction,
                        taken: cell.pointee.take()))
            }
        }
        if let setup = connection.memory.graph.monitoring?.setup {
            for bus in Bus.allCases {
                for channel in 0..<setup.busChannels {
                    let cell = connection.memory.meter(bus: bus, channel: channel)
                    readings.append(
                        MeterReading(
                            group: bus.rawValue, channel: channel, direction: .bus,
                            taken: cell.pointee.take()))
                }
            }
        }
        return readings
    }

    // MARK: Internals

    /// jack_client_t * of the open client (tests use it to find JACK's process thread).
    var jackClientHandle: OpaquePointer? { connection?.client.handle }

    /// The client, when open and its server is there.
    private var runningClient: JackClient? {
        guard let connection, !connection.lost,
            !connection.client.sink.serverLost.load(ordering: .acquiring)
        else { return nil }
        return connection.client
    }

    private var lostOrNotRunning: AudioEngineError {
        if let reason = connection?.client.sink.lossReason() { return .serverLost(reason: reason) }
        return .notRunning
    }

    private static let jackPortIsInput: Int32 = 0x1
    private static let jackPortIsOutput: Int32 = 0x2

    private static func validate(_ configuration: Configuration) throws(AudioEngineError) {
        var names = Set<String>()
        for spec in configuration.inputs + configuration.outputs {
            guard !spec.name.isEmpty, !spec.name.contains(":") else {
                throw .invalidArgument(
                    "port group name '\(spec.name)' must be non-empty and without ':'")
            }
            guard spec.channels > 0 else {
                throw .invalidArgument("port group '\(spec.name)' needs at least one channel")
            }
            guard names.insert(spec.name).inserted else {
                throw .invalidArgument("port group name '\(spec.name)' is used twice")
            }
        }
    }

    private static func register(
        _ specs: [PortGroupSpec], direction: GroupDirection, on client: JackClient
    )
        throws(JackError) -> [Group]
    {
        var groups: [Group] = []
        var flatBase = 0
        for spec in specs {
            var ports: [OpaquePointer] = []
            for channel in 0..<spec.channels {
                ports.append(
                    try client.registerPort(
                        name: spec.portName(channel: channel), direction: direction))
            }
            groups.append(
                Group(
                    spec: spec, direction: direction, ports: ports,
                    fullNames: ports.map(client.fullName(of:)),
                    flatBase: flatBase, available: spec.connectTo.isEmpty))
            flatBase += spec.channels
        }
        return groups
    }

    private static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        SystemClock.sleep(seconds: Double(seconds) + Double(attoseconds) / 1e18)
    }
}

/// One channel's level over a metering interval. Linear values; `…Decibels` give dBFS.
public struct MeterReading: Equatable, Sendable {
    public var group: String
    /// 0-based channel within the group.
    public var channel: Int
    public var direction: GroupDirection
    /// Largest |sample|.
    public var peak: Float
    /// Root mean square.
    public var rms: Float
    /// Frames measured (0: no period ran since the last reading).
    public var frames: Int

    public init(
        group: String, channel: Int, direction: GroupDirection, peak: Float, rms: Float, frames: Int
    ) {
        self.group = group
        self.channel = channel
        self.direction = direction
        self.peak = peak
        self.rms = rms
        self.frames = frames
    }

    init(
        group: String, channel: Int, direction: GroupDirection,
        taken: (peak: Float, sumOfSquares: Double, frames: Int)
    ) {
        let rms =
            taken.frames > 0 ? Float((taken.sumOfSquares / Double(taken.frames)).squareRoot()) : 0
        self.init(
            group: group, channel: channel, direction: direction, peak: taken.peak, rms: rms,
            frames: taken.frames)
    }

    /// recd's port name for this channel, e.g. `mic_1`; for a bus `bus:main_1` (group names
    /// cannot hold a colon, so it never collides with a group's).
    public var name: String {
        direction == .bus ? "bus:\(group)_\(channel + 1)" : "\(group)_\(channel + 1)"
    }
    /// Peak in dBFS, floored at -120.
    public var peakDecibels: Double { Self.decibels(peak) }
    /// RMS in dBFS, floored at -120.
    public var rmsDecibels: Double { Self.decibels(rms) }

    static func decibels(_ linear: Float) -> Double {
        max(-120, 20 * log10(Double(max(linear, 1e-7))))
    }
}

/// A JACK connection by full port names: from an output port (`source`) to an input port.
public struct JackConnection: Hashable, Sendable, CustomStringConvertible {
    public var source: String
    public var destination: String

    public init(source: String, destination: String) {
        self.source = source
        self.destination = destination
    }

    public var description: String { "\(source) → \(destination)" }
}

/// The latency JACK reports between a group and the outside world.
public struct GroupLatency: Equatable, Sendable {
    public var group: String
    public var direction: GroupDirection
    public var frames: ClosedRange<Int>
    public var sampleRate: Int

    /// The larger bound in seconds (what AVAudioSession's input/outputLatency report).
    public var seconds: Double {
        sampleRate > 0 ? Double(frames.upperBound) / Double(sampleRate) : 0
    }
}

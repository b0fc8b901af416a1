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
/// `wake` closure; the control thread then calls `drainNotifications()`. JACK connections are
/// read and changed on the **jack connection** thread (`ConnectionWorker`, the one writer of
/// recd's connections): the control thread builds the rules (`ConnectionReconciler.swift`
/// decides between them) and hands them over; a player's move and an attach ask it for their
/// group's edges and go on when it answers. After ports or clients come or go (or someone
/// removes one of our connections), that thread also calls `wake` once more 40 ms later, so
/// availability and connections are checked again once JACK's graph has settled.
///
/// The engine's files follow what its users ask of it: lifecycle here; server facts
/// (+ServerFacts), groups and availability (+Ports), connections (+Connections), players
/// (+Players), attachments (+Attachments), capture taps (+CaptureTaps), monitoring and meters
/// (+Monitoring).
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

    let wake: @Sendable () -> Void
    var connection: Connection?
    public private(set) var configuration: Configuration?
    /// Xruns of earlier connections (the current one counts in its sink).
    var earlierXruns = 0
    /// The monitoring setup last set, applied again on (re)start.
    var monitoringSetup: MonitoringSetup?
    /// The latest attach's serial (`beginAttach`'s tickets).
    var attachmentSerial = 0
    /// How long an edge recd left alone (it was changed back and forth more than twice within
    /// a second) stays alone unless its ports register again first. Set before `start`.
    var churnRetrySeconds = 30.0

    /// One open client with its ports and real-time memory.
    final class Connection {
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
        /// When the connection worker, asked for `recheckAt`, wakes the control thread (nil: not asked).
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
        /// Player changes waiting for the reconciler's answer to a move.
        let playerChanges = DeferredPlayerChanges()

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
    struct Group {
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

    /// `wake` is called on a JACK thread (or the jack connection thread) whenever there is news
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
        // Moves the reconciler has not answered yet go with the players.
        connection.playerChanges.forgetAll()
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

    // MARK: Internals

    /// jack_client_t * of the open client (tests use it to find JACK's process thread).
    var jackClientHandle: OpaquePointer? { connection?.client.handle }

    /// The client, when open and its server is there.
    var runningClient: JackClient? {
        guard let connection, !connection.lost,
            !connection.client.sink.serverLost.load(ordering: .acquiring)
        else { return nil }
        return connection.client
    }

    var lostOrNotRunning: AudioEngineError {
        if let reason = connection?.client.sink.lossReason() { return .serverLost(reason: reason) }
        return .notRunning
    }

    static let jackPortIsInput: Int32 = 0x1
    static let jackPortIsOutput: Int32 = 0x2

    static func validate(_ configuration: Configuration) throws(AudioEngineError) {
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

    static func register(
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

    static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        SystemClock.sleep(seconds: Double(seconds) + Double(attoseconds) / 1e18)
    }
}

// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// The memory the process callback works on. The control thread allocates it before
// jack_activate and frees it after jack_deactivate (EngineMemory owns it); between the two,
// the control thread changes what the process thread does only by publishing a new
// `GraphSnapshot` through `graph`.

import Synchronization

/// Everything the process callback touches, in plain memory.
struct ProcessState: ~Copyable {
    /// The JACK client (jack_client_t *), for the frame time; nil when a test drives the cycle.
    let client: OpaquePointer?
    /// Our JACK input ports in flat channel order (jack_port_t *), nil in tests.
    let inputPorts: UnsafeMutablePointer<OpaquePointer?>
    let inputCount: Int
    /// Our JACK output ports in flat channel order.
    let outputPorts: UnsafeMutablePointer<OpaquePointer?>
    let outputCount: Int
    /// This period's port buffers; filled at the start of each cycle (tests fill them).
    let inputBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let outputBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// One per input channel, then one per output channel.
    let meters: UnsafeMutablePointer<MeterCell>
    /// Monitoring state that outlives snapshots: ramp positions, bus meters.
    let monitor: UnsafeMutablePointer<MonitorState>

    /// Address of the current immutable `GraphSnapshot` (read-copy-update: the control thread
    /// swaps in a new one, the process thread loads it once per cycle).
    let graph: Atomic<UInt>
    /// Cycles finished (`CycleCounter`'s memory: a removed tap keeps it). The control thread
    /// frees a retired snapshot once this has moved past the value it read right after the swap.
    let cyclesCompleted: UnsafeMutablePointer<Atomic<UInt64>>
    /// How late each cycle started and how long it ran (`recordCycleTime`; `CycleTimeCells`).
    let cycleTimes: UnsafeMutablePointer<Atomic<UInt64>>
    /// Control → process: measure the input and output meters. Off while no one reads them:
    /// at 64 ports they were the largest part of an idle recd's period.
    let metersActive = Atomic<Bool>(true)

    init(
        client: OpaquePointer?, inputPorts: UnsafeMutablePointer<OpaquePointer?>, inputCount: Int,
        outputPorts: UnsafeMutablePointer<OpaquePointer?>, outputCount: Int,
        inputBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>,
        outputBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>,
        meters: UnsafeMutablePointer<MeterCell>, monitor: UnsafeMutablePointer<MonitorState>,
        graph: UnsafeMutablePointer<GraphSnapshot>, cyclesCompleted: UnsafeMutablePointer<Atomic<UInt64>>,
        cycleTimes: UnsafeMutablePointer<Atomic<UInt64>>
    ) {
        self.cyclesCompleted = cyclesCompleted
        self.cycleTimes = cycleTimes
        self.client = client
        self.inputPorts = inputPorts
        self.inputCount = inputCount
        self.outputPorts = outputPorts
        self.outputCount = outputCount
        self.inputBuffers = inputBuffers
        self.outputBuffers = outputBuffers
        self.meters = meters
        self.monitor = monitor
        self.graph = Atomic(UInt(bitPattern: graph))
    }
}

/// What the process thread runs, as one immutable value: the players, taps and monitoring
/// in this version of the graph. Built and freed by the control thread; never changed once
/// published.
struct GraphSnapshot {
    let players: UnsafeMutablePointer<UnsafeMutablePointer<PlayerVoice>>
    let playerCount: Int
    /// For each player: true when it is a monitoring source, so it feeds the buses instead of
    /// its output group.
    let playerOnBus: UnsafeMutablePointer<Bool>
    /// Input taps.
    let taps: UnsafeMutablePointer<UnsafeMutablePointer<TapState>>
    let tapCount: Int
    /// Bus taps: their channels index `MonitorState.busPointers`.
    let busTaps: UnsafeMutablePointer<UnsafeMutablePointer<TapState>>
    let busTapCount: Int
    /// Reference taps: their channels index the output buffers, copied once the players and
    /// monitoring have written them (what the loudspeakers play this period).
    let referenceTaps: UnsafeMutablePointer<UnsafeMutablePointer<TapState>>
    let referenceTapCount: Int
    /// The monitoring plan; nil when none was set.
    let monitor: UnsafeMutablePointer<MonitorPlan>?
    /// For each of `monitor`'s sources: the voice of a player source that is in this graph;
    /// nil for inputs and for players no longer in the engine.
    let sourcePlayers: UnsafeMutablePointer<UnsafeMutablePointer<PlayerVoice>?>
    /// Attached applications' ports (`session.attach`); fed before the players render.
    let attachments: UnsafeMutablePointer<UnsafeMutablePointer<AttachmentFeed>>
    let attachmentCount: Int
    /// For each attachment: its processed capture while the session's capture is processed
    /// (its capture tap and reference tap are in `taps` and `referenceTaps` of the same
    /// snapshot, so the ring's first read and the taps' first period are the same cycle); nil:
    /// the raw input.
    let attachmentProcessing: UnsafeMutablePointer<UnsafeMutablePointer<ProcessedCaptureState>?>
}

// The control thread's side of the real-time memory: allocating the process state, publishing
// graph snapshots (read-copy-update) and freeing the ones the process thread has left behind.

import Synchronization

/// Owns one `ProcessState` and every `GraphSnapshot` made for it. Control thread only.
///
/// Allocate before jack_activate; call `freeAll()` (or let deinit run) only after
/// jack_deactivate or jack_client_close, when the process thread can no longer run.
final class EngineMemory {
    let state: UnsafeMutablePointer<ProcessState>
    /// The process thread's finished cycles; removed taps keep it (`RetirementMark`).
    let cycles: CycleCounter
    /// How the process thread's cycles ran (start delay, duration).
    let cycleTimes = CycleTimeCells()
    private let inputCount: Int
    private let outputCount: Int

    /// What a snapshot names; the handles and the plan are kept alive with it.
    struct Graph {
        var players: [PlayerHandle] = []
        /// Input taps.
        var taps: [CaptureTap] = []
        var busTaps: [CaptureTap] = []
        /// Reference taps of processed captures (each one's capture tap is in `taps`).
        var referenceTaps: [CaptureTap] = []
        var monitoring: MonitoringPlan?
        /// Attached applications (their voices are among `players`).
        var attachments: [AttachmentHandle] = []
        /// The processed captures of attachments, by handle (their taps are in `taps`).
        var processedCaptures: [ObjectIdentifier: ProcessedCapture] = [:]
    }

    /// What the current snapshot names.
    private(set) var graph = Graph()
    var players: [PlayerHandle] { graph.players }
    var taps: [CaptureTap] { graph.taps }
    /// Which monitoring ramp slot each source holds (see `makeMonitoringPlan`).
    private var monitoringSlots = MonitoringSlots()

    /// A snapshot the process thread may still be reading, with what it names.
    private struct DeadWood {
        let snapshot: UnsafeMutablePointer<GraphSnapshot>
        /// `cyclesCompleted` read right after the swap: once it has moved past this, no cycle
        /// can still hold the old pointer (cycles run one at a time on one thread).
        let retiredAt: UInt64
        let graph: Graph
    }
    private var deadWood: [DeadWood] = []
    private var freed = false

    /// EngineMemory objects not yet freed, process-wide (tests check reconnects do not leak).
    static let live = Atomic<Int>(0)

    /// A single sample for port-buffer slots before the first cycle fills them.
    private let placeholderBuffer: UnsafeMutablePointer<Float>

    /// `inputPorts`/`outputPorts` are jack_port_t * in flat channel order (nil in tests).
    init(client: OpaquePointer?, inputPorts: [OpaquePointer?], outputPorts: [OpaquePointer?]) {
        inputCount = inputPorts.count
        outputCount = outputPorts.count
        placeholderBuffer = .allocate(capacity: 1)
        placeholderBuffer.initialize(to: 0)
        Self.live.add(1, ordering: .relaxed)

        let inputPortList = UnsafeMutablePointer<OpaquePointer?>.allocate(
            capacity: max(inputCount, 1))
        inputPortList.initialize(from: inputPorts, count: inputCount)
        let outputPortList = UnsafeMutablePointer<OpaquePointer?>.allocate(
            capacity: max(outputCount, 1))
        outputPortList.initialize(from: outputPorts, count: outputCount)
        let inputBuffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(
            capacity: max(inputCount, 1))
        inputBuffers.initialize(repeating: placeholderBuffer, count: inputCount)
        let outputBuffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(
            capacity: max(outputCount, 1))
        outputBuffers.initialize(repeating: placeholderBuffer, count: outputCount)
        let meterCount = inputCount + outputCount
        let meters = UnsafeMutablePointer<MeterCell>.allocate(capacity: max(meterCount, 1))
        for index in 0..<meterCount { (meters + index).initialize(to: MeterCell()) }
        let monitor = MonitorState.allocate()

        let cycles = CycleCounter()
        self.cycles = cycles
        state = .allocate(capacity: 1)
        state.initialize(
            to: ProcessState(
                client: client, inputPorts: inputPortList, inputCount: inputCount,
                outputPorts: outputPortList, outputCount: outputCount,
                inputBuffers: inputBuffers, outputBuffers: outputBuffers, meters: meters,
                monitor: monitor, graph: Self.makeSnapshot(Graph()), cyclesCompleted: cycles.pointer,
                cycleTimes: cycleTimes.pointer))
    }

    deinit { freeAll() }

    // MARK: Snapshots

    /// Publishes a graph with these players and input taps (the rest unchanged), retiring the
    /// previous one.
    func publish(players: [PlayerHandle], taps: [CaptureTap]) {
        var graph = self.graph
        graph.players = players
        graph.taps = taps
        publish(graph)
    }

    /// Publishes `graph`, retiring the previous one.
    func publish(_ graph: Graph) {
        precondition(!freed, "publishing into freed engine memory")
        let snapshot = Self.makeSnapshot(graph)
        let oldBits = state.pointee.graph.exchange(
            UInt(bitPattern: snapshot), ordering: .sequentiallyConsistent)
        let retiredAt = cycles.value
        if let old = UnsafeMutablePointer<GraphSnapshot>(bitPattern: oldBits) {
            deadWood.append(DeadWood(snapshot: old, retiredAt: retiredAt, graph: self.graph))
        }
        self.graph = graph
        collectDeadWood()
    }

    /// Checks a monitoring setup against the groups and builds its plan, to be published with
    /// `publish`. Throws, changing nothing, when the setup does not fit.
    func makeMonitoringPlan(
        _ setup: MonitoringSetup, rampFrames: Int, inputGroups: [String: GroupLayout],
        outputGroups: [String: GroupLayout]
    ) throws(AudioEngineError) -> MonitoringPlan {
        try monitoringSlots.plan(
            for: setup, rampFrames: rampFrames, inputGroups: inputGroups,
            outputGroups: outputGroups)
    }

    /// Frees the retired snapshots the process thread has moved past. Returns how many remain.
    @discardableResult
    func collectDeadWood() -> Int {
        let completed = cycles.value
        deadWood.removeAll { wood in
            guard completed > wood.retiredAt else { return false }
            Self.freeSnapshot(wood.snapshot)
            return true
        }
        return deadWood.count
    }

    /// Number of retired snapshots not yet freed.
    var deadWoodCount: Int { deadWood.count }

    /// Frees everything. Only when the process thread cannot run any more.
    func freeAll() {
        guard !freed else { return }
        freed = true
        // Only after the client is closed (see the type): what was retired is past its mark.
        cycles.stop()
        Self.live.subtract(1, ordering: .relaxed)
        for wood in deadWood { Self.freeSnapshot(wood.snapshot) }
        deadWood.removeAll()
        let current = state.pointee.graph.exchange(0, ordering: .sequentiallyConsistent)
        if let snapshot = UnsafeMutablePointer<GraphSnapshot>(bitPattern: current) {
            Self.freeSnapshot(snapshot)
        }
        graph = Graph()

        state.pointee.inputPorts.deinitialize(count: inputCount)
        state.pointee.inputPorts.deallocate()
        state.pointee.outputPorts.deinitialize(count: outputCount)
        state.pointee.outputPorts.deallocate()
        state.pointee.inputBuffers.deinitialize(count: inputCount)
        state.pointee.inputBuffers.deallocate()
        state.pointee.outputBuffers.deinitialize(count: outputCount)
        state.pointee.outputBuffers.deallocate()
        state.pointee.meters.deinitialize(count: inputCount + outputCount)
        state.pointee.meters.deallocate()
        MonitorState.deallocate(state.pointee.monitor)
        state.deinitialize(count: 1)
        state.deallocate()
        placeholderBuffer.deallocate()
    }

    /// The meter of flat input channel `channel`, or of flat output channel `channel`.
    func meter(input channel: Int) -> UnsafeMutablePointer<MeterCell> {
        state.pointee.meters + channel
    }

    func meter(output channel: Int) -> UnsafeMutablePointer<MeterCell> {
        state.pointee.meters + inputCount + channel
    }

    /// The meter of channel `channel` of a monitoring bus.
    func meter(bus: Bus, channel: Int) -> UnsafeMutablePointer<MeterCell> {
        state.pointee.monitor.pointee.busMeters
            + MonitorState.busIndex(cue: bus == .cue, channel: channel)
    }

    /// Internal, not private: the allocation test swaps prebuilt snapshots in.
    static func makeSnapshot(_ graph: Graph) -> UnsafeMutablePointer<GraphSnapshot> {
        let players = graph.players
        let playerList = UnsafeMutablePointer<UnsafeMutablePointer<PlayerVoice>>.allocate(
            capacity: max(players.count, 1))
        playerList.initialize(from: players.map(\.voice), count: players.count)
        let sourceCount = graph.monitoring?.plan.pointee.sourceCount ?? 0
        let sourcePlayers = UnsafeMutablePointer<UnsafeMutablePointer<PlayerVoice>?>.allocate(
            capacity: max(sourceCount, 1))
        sourcePlayers.initialize(repeating: nil, count: sourceCount)
        let playerOnBus = UnsafeMutablePointer<Bool>.allocate(capacity: max(players.count, 1))
        for (index, player) in players.enumerated() {
            let source = graph.monitoring?.playerSources[player.id]
            (playerOnBus + index).initialize(to: source != nil)
            if let source { sourcePlayers[source] = player.voice }
        }
        let attachmentList = UnsafeMutablePointer<UnsafeMutablePointer<AttachmentFeed>>.allocate(
            capacity: max(graph.attachments.count, 1))
        attachmentList.initialize(from: graph.attachments.map(\.feed), count: graph.attachments.count)
        let processingList = UnsafeMutablePointer<UnsafeMutablePointer<ProcessedCaptureState>?>.allocate(
            capacity: max(graph.attachments.count, 1))
        processingList.initialize(
            from: graph.attachments.map { graph.processedCaptures[ObjectIdentifier($0)]?.state },
            count: graph.attachments.count)
        let snapshot = UnsafeMutablePointer<GraphSnapshot>.allocate(capacity: 1)
        snapshot.initialize(
            to: GraphSnapshot(
                players: playerList, playerCount: players.count, playerOnBus: playerOnBus,
                taps: tapList(graph.taps), tapCount: graph.taps.count,
                busTaps: tapList(graph.busTaps), busTapCount: graph.busTaps.count,
                referenceTaps: tapList(graph.referenceTaps), referenceTapCount: graph.referenceTaps.count,
                monitor: graph.monitoring?.plan, sourcePlayers: sourcePlayers,
                attachments: attachmentList, attachmentCount: graph.attachments.count,
                attachmentProcessing: processingList))
        return snapshot
    }

    private static func tapList(_ taps: [CaptureTap])
        -> UnsafeMutablePointer<UnsafeMutablePointer<TapState>>
    {
        let list = UnsafeMutablePointer<UnsafeMutablePointer<TapState>>.allocate(
            capacity: max(taps.count, 1))
        list.initialize(from: taps.map(\.state), count: taps.count)
        return list
    }

    static func freeSnapshot(_ snapshot: UnsafeMutablePointer<GraphSnapshot>) {
        snapshot.pointee.players.deallocate()
        snapshot.pointee.playerOnBus.deallocate()
        snapshot.pointee.taps.deallocate()
        snapshot.pointee.busTaps.deallocate()
        snapshot.pointee.referenceTaps.deallocate()
        snapshot.pointee.sourcePlayers.deallocate()
        snapshot.pointee.attachments.deallocate()
        snapshot.pointee.attachmentProcessing.deallocate()
        snapshot.deinitialize(count: 1)
        snapshot.deallocate()
    }
}

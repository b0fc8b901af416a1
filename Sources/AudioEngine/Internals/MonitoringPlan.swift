// The control thread's side of monitoring: checking a `MonitoringSetup`, giving each source a
// ramp slot, and building the immutable `MonitorPlan` the process thread runs
// (RealTime/MonitorMix.swift).

/// Where a port group sits in the engine's flat channel numbering (inputs and outputs are
/// numbered separately).
struct GroupLayout: Equatable {
    var flatBase: Int
    var channels: Int
}

/// Owns one `MonitorPlan` and its memory; frees it in deinit. The engine memory keeps it alive
/// while a snapshot that names it may still be read by the process thread. Control thread.
final class MonitoringPlan {
    let setup: MonitoringSetup
    let plan: UnsafeMutablePointer<MonitorPlan>
    /// Index in `plan.sources` of each player source.
    let playerSources: [PlayerHandleID: Int]

    /// One source as the builder describes it.
    struct Entry {
        var slot: Int
        var epoch: UInt64
        /// Flat input channels per bus channel; nil for a player.
        var inputChannels: [Int]?
        var player: PlayerHandleID?
        var mainGain: Float
        var cueGain: Float
    }

    private let inputChannelStorage: UnsafeMutablePointer<Int>
    private let inputChannelCount: Int
    private let work: UnsafeMutablePointer<Float>
    private let workCount: Int

    init(
        setup: MonitoringSetup, generation: UInt64, rampFrames: Int, entries: [Entry],
        mainOutputs: [Int], mainWeights: [Float], cueOutputs: [Int], cueWeights: [Float]
    ) {
        self.setup = setup
        let busChannels = setup.busChannels
        let chunk = MonitorState.chunkFrames

        inputChannelCount = entries.reduce(0) { $0 + ($1.inputChannels?.count ?? 0) }
        inputChannelStorage = .allocate(capacity: max(inputChannelCount, 1))
        let sources = UnsafeMutablePointer<MonitorSource>.allocate(capacity: max(entries.count, 1))
        var used = 0
        var players: [PlayerHandleID: Int] = [:]
        for (index, entry) in entries.enumerated() {
            var channels: UnsafeMutablePointer<Int>?
            if let inputChannels = entry.inputChannels {
                let start = inputChannelStorage + used
                start.initialize(from: inputChannels, count: inputChannels.count)
                used += inputChannels.count
                channels = start
            }
            if let player = entry.player { players[player] = index }
            (sources + index).initialize(
                to: MonitorSource(
                    slot: entry.slot, epoch: entry.epoch, inputChannels: channels,
                    mainGain: entry.mainGain, cueGain: entry.cueGain))
        }
        playerSources = players

        // Bus and scratch buffers (busChannels each), then four single-channel ones.
        workCount = (3 * busChannels + 4) * chunk
        work = .allocate(capacity: workCount)
        // Zero-filling also faults the pages in before the process thread touches them.
        work.initialize(repeating: 0, count: workCount)
        let mainBus = work
        let cueBus = work + busChannels * chunk
        let scratch = work + 2 * busChannels * chunk
        let singles = work + 3 * busChannels * chunk
        let scratchPointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(
            capacity: busChannels)
        for channel in 0..<busChannels {
            (scratchPointers + channel).initialize(to: scratch + channel * chunk)
        }

        plan = .allocate(capacity: 1)
        plan.initialize(
            to: MonitorPlan(
                generation: generation, busChannels: busChannels, rampFrames: rampFrames,
                cueMix: Float(setup.cueMix), split: setup.splitCue,
                sources: sources, sourceCount: entries.count,
                mainOutput: MonitorPlan.OutputGroup(
                    channels: Self.copy(mainOutputs), count: mainOutputs.count, weights: Self.copy(mainWeights)),
                cueOutput: MonitorPlan.OutputGroup(
                    channels: Self.copy(cueOutputs), count: cueOutputs.count, weights: Self.copy(cueWeights)),
                work: MonitorPlan.WorkBuffers(
                    mainBus: mainBus, cueBus: cueBus, scratch: scratch, scratchPointers: scratchPointers,
                    firstGains: singles, secondGains: singles + chunk, monoCue: singles + 2 * chunk,
                    monoMain: singles + 3 * chunk)))
    }

    deinit {
        let plan = plan.pointee
        plan.sources.deinitialize(count: plan.sourceCount)
        plan.sources.deallocate()
        inputChannelStorage.deinitialize(count: inputChannelCount)
        inputChannelStorage.deallocate()
        plan.mainOutput.channels.deallocate()
        plan.mainOutput.weights.deallocate()
        plan.cueOutput.channels.deallocate()
        plan.cueOutput.weights.deallocate()
        plan.work.scratchPointers.deinitialize(count: plan.busChannels)
        plan.work.scratchPointers.deallocate()
        work.deinitialize(count: workCount)
        work.deallocate()
        self.plan.deinitialize(count: 1)
        self.plan.deallocate()
    }

    private static func copy<T>(_ values: [T]) -> UnsafeMutablePointer<T> {
        let pointer = UnsafeMutablePointer<T>.allocate(capacity: max(values.count, 1))
        pointer.initialize(from: values, count: values.count)
        return pointer
    }

    /// The weights by which each of `outputChannels` output channels takes each of
    /// `busChannels` bus channels (row-major): bus channel n → output channel n; more outputs
    /// repeat the bus channels; fewer take the mean of the bus channels folded onto each.
    static func weights(outputChannels: Int, busChannels: Int) -> [Float] {
        var weights = [Float](repeating: 0, count: outputChannels * busChannels)
        if outputChannels >= busChannels {
            for output in 0..<outputChannels { weights[output * busChannels + output % busChannels] = 1 }
        } else {
            for output in 0..<outputChannels {
                let folded = (0..<busChannels).filter { $0 % outputChannels == output }
                for channel in folded {
                    weights[output * busChannels + channel] = 1 / Float(folded.count)
                }
            }
        }
        return weights
    }
}

/// Which ramp slot each monitoring source holds, and the counters that tell the process thread
/// what is new. Control thread; one per engine memory (slots are per `MonitorState`).
///
/// An input group keeps its slot for the life of the memory, and stays in every later plan
/// with zero gains once it leaves the setup, so that it fades out instead of being cut (an
/// idle silent input costs the process thread nothing). A player keeps its slot while it is
/// in the setup; its slot is freed when it leaves (it goes back to its own output group).
struct MonitoringSlots {
    private struct Assignment {
        let slot: Int
        let epoch: UInt64
    }

    private var inputs: [String: Assignment] = [:]
    private var players: [PlayerHandleID: Assignment] = [:]
    /// Free slots, the next one last.
    private var free = Array((0..<MonitorState.slotCapacity).reversed())
    private var nextEpoch: UInt64 = 1
    private var generation: UInt64 = 0

    /// Checks `setup` against the engine's groups and builds its plan. Throws (changing
    /// nothing) when the setup names unknown groups or is out of range.
    mutating func plan(
        for setup: MonitoringSetup, rampFrames: Int, inputGroups: [String: GroupLayout],
        outputGroups: [String: GroupLayout]
    ) throws(AudioEngineError) -> MonitoringPlan {
        let busChannels = setup.busChannels
        guard (1...MonitorState.maximumBusChannels).contains(busChannels) else {
            throw .invalidArgument(
                "monitoring buses have 1 to \(MonitorState.maximumBusChannels) channels, not \(busChannels)")
        }
        guard setup.cueMix.isFinite, (0...1).contains(setup.cueMix) else {
            throw .invalidArgument("the cue mix is between 0 (cue only) and 1 (main only), not \(setup.cueMix)")
        }
        var mainLayout: GroupLayout?
        var cueLayout: GroupLayout?
        if let name = setup.mainOutput {
            guard let layout = outputGroups[name] else { throw .unknownGroup(name) }
            mainLayout = layout
        }
        if let name = setup.cueOutput {
            guard let layout = outputGroups[name] else { throw .unknownGroup(name) }
            guard name != setup.mainOutput else {
                throw .invalidArgument("the main and cue buses need different output groups ('\(name)' twice)")
            }
            if setup.splitCue && layout.channels < 2 {
                throw .invalidArgument(
                    "a split cue needs at least two channels; output group '\(name)' has \(layout.channels)")
            }
            cueLayout = layout
        }
        var seen = Set<MonitoringSource.Kind>()
        var newSlots = 0
        for source in setup.sources {
            guard seen.insert(source.kind).inserted else {
                throw .invalidArgument("\(Self.describe(source.kind)) is a monitoring source twice")
            }
            guard !source.gainDecibels.isNaN, source.gainDecibels < .infinity else {
                throw .invalidArgument(
                    "the gain of \(Self.describe(source.kind)) must be finite dB or -infinity")
            }
            switch source.kind {
            case .input(let group):
                guard inputGroups[group] != nil else { throw .unknownGroup(group) }
                if inputs[group] == nil { newSlots += 1 }
            case .player(let id):
                if players[id] == nil { newSlots += 1 }
            }
        }
        let leaving = players.keys.filter { !seen.contains(.player($0)) }.count
        guard newSlots <= free.count + leaving else {
            throw .invalidArgument(
                "monitoring takes at most \(MonitorState.slotCapacity) sources (inputs ever used included)")
        }

        // Checked: now commit.
        for id in players.keys where !seen.contains(.player(id)) {
            if let assignment = players.removeValue(forKey: id) { free.append(assignment.slot) }
        }
        var entries: [MonitoringPlan.Entry] = []
        var inputsInSetup = Set<String>()
        for source in setup.sources {
            let gain = AudioEngine.linearGain(decibels: source.gainDecibels)
            let mainGain: Float = source.toMain ? gain : 0
            let cueGain: Float = source.toCue ? gain : 0
            switch source.kind {
            case .input(let group):
                inputsInSetup.insert(group)
                let assignment = inputs[group] ?? assign()
                inputs[group] = assignment
                entries.append(
                    MonitoringPlan.Entry(
                        slot: assignment.slot, epoch: assignment.epoch,
                        inputChannels: Self.inputChannels(inputGroups[group]!, busChannels: busChannels),
                        player: nil, mainGain: mainGain, cueGain: cueGain))
            case .player(let id):
                let assignment = players[id] ?? assign()
                players[id] = assignment
                entries.append(
                    MonitoringPlan.Entry(
                        slot: assignment.slot, epoch: assignment.epoch, inputChannels: nil,
                        player: id, mainGain: mainGain, cueGain: cueGain))
            }
        }
        // Inputs that left the setup fade out (and then cost nothing).
        for (group, assignment) in inputs.sorted(by: { $0.key < $1.key })
        where !inputsInSetup.contains(group) {
            guard let layout = inputGroups[group] else { continue }
            entries.append(
                MonitoringPlan.Entry(
                    slot: assignment.slot, epoch: assignment.epoch,
                    inputChannels: Self.inputChannels(layout, busChannels: busChannels),
                    player: nil, mainGain: 0, cueGain: 0))
        }

        generation += 1
        let mainChannels = mainLayout.map { Array($0.flatBase..<($0.flatBase + $0.channels)) } ?? []
        let cueChannels = cueLayout.map { Array($0.flatBase..<($0.flatBase + $0.channels)) } ?? []
        return MonitoringPlan(
            setup: setup, generation: generation, rampFrames: rampFrames, entries: entries,
            mainOutputs: mainChannels,
            mainWeights: MonitoringPlan.weights(
                outputChannels: mainChannels.count, busChannels: busChannels),
            cueOutputs: cueChannels,
            cueWeights: MonitoringPlan.weights(
                outputChannels: cueChannels.count, busChannels: busChannels))
    }

    private mutating func assign() -> Assignment {
        let assignment = Assignment(slot: free.removeLast(), epoch: nextEpoch)
        nextEpoch += 1
        return assignment
    }

    /// Flat input channel per bus channel: group channel n → bus channel n, repeated when the
    /// group has fewer channels than the bus.
    private static func inputChannels(_ layout: GroupLayout, busChannels: Int) -> [Int] {
        (0..<busChannels).map { layout.flatBase + $0 % layout.channels }
    }

    private static func describe(_ kind: MonitoringSource.Kind) -> String {
        switch kind {
        case .input(let group): "input group '\(group)'"
        case .player(let id): "\(id)"
        }
    }
}

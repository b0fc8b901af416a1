// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// DJ-style main/cue monitoring (SPEC §4 multiRoute, §12 `recctl cue`). Per period:
//
//     main bus = Σ sources with toMain × gain        cue bus = Σ sources with toCue × gain
//     main output group += main bus
//     cue output group  += split ? [mono(cue), mono(main)] : (1 − cueMix) × cue + cueMix × main
//
// where mono(bus) = (L + R) / 2 (the mean of the bus channels: −6 dB per channel, so a centred
// L = R signal keeps its level). Every gain, the cue mix and the split (a crossfade between the
// blend and the split signal) move along linear per-sample ramps. Inputs are read and outputs
// written in the same cycle, so monitoring adds no latency beyond the JACK period (SPEC §10).
//
// The control thread builds each `MonitorPlan` (Internals/MonitoringPlan.swift) and publishes
// it inside a `GraphSnapshot`; a plan never changes once published. What must outlive a plan —
// where each ramp stands, the bus meters — lives in `MonitorState`, which the control thread
// allocates with the rest of `ProcessState` and the process thread alone writes (the meters
// excepted: they are atomics that the control thread takes).

import Synchronization

/// A value that moves linearly from where it stands to a target over a number of frames, one
/// step per frame; the last step lands exactly on the target. Process thread only.
struct LinearRamp {
    private(set) var value: Float = 0
    private(set) var target: Float = 0
    /// Where the current ramp started; the value after k frames is `start + step * k`,
    /// computed afresh so that rounding does not accumulate.
    private var start: Float = 0
    private var step: Float = 0
    private var length = 0
    private var done = 0

    /// Not moving.
    var isIdle: Bool { done >= length }
    /// Not moving, at zero: whatever it scales contributes nothing.
    var isSilent: Bool { isIdle && value == 0 }

    /// Stands at `newValue` at once.
    @_noLocks
    mutating func jump(to newValue: Float) {
        value = newValue
        target = newValue
        step = 0
        length = 0
        done = 0
    }

    /// Heads for `newTarget`, reaching it after `frames` frames (at once for 0). A ramp already
    /// heading for `newTarget` carries on undisturbed.
    @_noLocks
    mutating func retarget(_ newTarget: Float, frames: Int) {
        if newTarget == target { return }
        if frames <= 0 || value == newTarget {
            jump(to: newTarget)
            return
        }
        target = newTarget
        start = value
        step = (newTarget - value) / Float(frames)
        length = frames
        done = 0
    }

    /// The value for the next frame.
    @_noLocks
    @inline(__always)
    mutating func next() -> Float {
        if done < length {
            done += 1
            value = done == length ? target : start + step * Float(done)
        }
        return value
    }

    /// The values for the next `count` frames.
    @_noLocks
    mutating func fill(_ destination: UnsafeMutablePointer<Float>, count: Int) {
        if isIdle {
            for index in 0..<count { destination[index] = value }
            return
        }
        for index in 0..<count { destination[index] = next() }
    }

    /// Moves on `count` frames.
    @_noLocks
    mutating func advance(_ count: Int) {
        if isIdle { return }
        for _ in 0..<count { _ = next() }
    }
}

/// Where one source's two gains stand. `epoch` tells the process thread whether the slot still
/// belongs to the source it ramped last (same epoch) or was given to a new one (fade in from 0).
struct MonitorSlot {
    var epoch: UInt64 = 0
    var main = LinearRamp()
    var cue = LinearRamp()
}

/// The monitoring state that outlives plans, in plain memory.
struct MonitorState: ~Copyable {
    /// Sources (inputs ever used plus players now on the buses) an engine can have at once.
    static var slotCapacity: Int { 64 }
    static var maximumBusChannels: Int { 8 }
    /// Monitoring runs in chunks of at most this many frames (a period longer than this is
    /// mixed in several chunks), so its work buffers need not follow the period size.
    static var chunkFrames: Int { 2048 }

    /// Index of bus channel `channel` of the main (false) or cue (true) bus in `busPointers`
    /// and `busMeters`: main 0..<8, cue 8..<16. Bus taps name their channels this way.
    @_noLocks
    static func busIndex(cue: Bool, channel: Int) -> Int {
        (cue ? maximumBusChannels : 0) + channel
    }

    let slots: UnsafeMutablePointer<MonitorSlot>
    /// One per bus channel, indexed by `busIndex`.
    let busMeters: UnsafeMutablePointer<MeterCell>
    /// This chunk's bus buffers, indexed by `busIndex` (channels past the bus: `silence`);
    /// what bus taps copy from.
    let busPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// `chunkFrames` zeros.
    let silence: UnsafeMutablePointer<Float>

    var mix = LinearRamp()
    /// 0: the cue output carries the blend; 1: the split signal; between: a crossfade.
    var split = LinearRamp()
    /// Generation of the last plan applied (0: none yet).
    var appliedGeneration: UInt64 = 0

    /// Control thread, before the process thread can see it.
    static func allocate() -> UnsafeMutablePointer<MonitorState> {
        let slots = UnsafeMutablePointer<MonitorSlot>.allocate(capacity: slotCapacity)
        slots.initialize(repeating: MonitorSlot(), count: slotCapacity)
        let meters = UnsafeMutablePointer<MeterCell>.allocate(capacity: 2 * maximumBusChannels)
        for index in 0..<(2 * maximumBusChannels) { (meters + index).initialize(to: MeterCell()) }
        let silence = UnsafeMutablePointer<Float>.allocate(capacity: chunkFrames)
        silence.initialize(repeating: 0, count: chunkFrames)
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(
            capacity: 2 * maximumBusChannels)
        pointers.initialize(repeating: silence, count: 2 * maximumBusChannels)
        let state = UnsafeMutablePointer<MonitorState>.allocate(capacity: 1)
        state.initialize(
            to: MonitorState(slots: slots, busMeters: meters, busPointers: pointers, silence: silence))
        return state
    }

    /// Control thread, once the process thread cannot run any more.
    static func deallocate(_ state: UnsafeMutablePointer<MonitorState>) {
        state.pointee.slots.deinitialize(count: slotCapacity)
        state.pointee.slots.deallocate()
        state.pointee.busMeters.deinitialize(count: 2 * maximumBusChannels)
        state.pointee.busMeters.deallocate()
        state.pointee.busPointers.deinitialize(count: 2 * maximumBusChannels)
        state.pointee.busPointers.deallocate()
        state.pointee.silence.deinitialize(count: chunkFrames)
        state.pointee.silence.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }
}

/// One source of a plan.
struct MonitorSource {
    /// Its ramp slot in `MonitorState.slots`, and the epoch it was given that slot in.
    let slot: Int
    let epoch: UInt64
    /// Flat input channel feeding each bus channel (`busChannels` of them); nil for a player,
    /// whose voice is in the snapshot's `sourcePlayers`.
    let inputChannels: UnsafeMutablePointer<Int>?
    /// Target gains (linear); 0 for a bus the source is not on.
    let mainGain: Float
    let cueGain: Float
}

/// One monitoring setup as the process thread runs it: immutable once published, except for
/// the work buffers, which only the process thread touches.
struct MonitorPlan {
    /// Increases with every plan an engine memory makes; a new value makes the process thread
    /// retarget the ramps.
    let generation: UInt64
    let busChannels: Int
    /// Length of the ramps this plan's changes take.
    let rampFrames: Int
    let cueMix: Float
    let split: Bool
    let sources: UnsafeMutablePointer<MonitorSource>
    let sourceCount: Int
    /// The main output group.
    let mainOutput: OutputGroup
    /// The cue output group (the weights apply to the blend; with split, even channels take
    /// mono(cue) and odd ones mono(main)).
    let cueOutput: OutputGroup
    let work: WorkBuffers

    /// An output group a bus feeds: its flat output channels, and the `count × busChannels`
    /// weights by which each takes each bus channel.
    struct OutputGroup {
        let channels: UnsafeMutablePointer<Int>
        let count: Int
        let weights: UnsafeMutablePointer<Float>
    }

    /// Work buffers, `MonitorState.chunkFrames` frames per channel; only the process thread
    /// touches what they point to.
    struct WorkBuffers {
        let mainBus: UnsafeMutablePointer<Float>
        let cueBus: UnsafeMutablePointer<Float>
        /// Where a player source renders before it is summed into the buses.
        let scratch: UnsafeMutablePointer<Float>
        /// `busChannels` pointers into `scratch`, for `PlayerVoice.render(toBus:)`.
        let scratchPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        /// Per-frame gains of the source being summed; then the cue mix and split of the chunk.
        let firstGains: UnsafeMutablePointer<Float>
        let secondGains: UnsafeMutablePointer<Float>
        let monoCue: UnsafeMutablePointer<Float>
        let monoMain: UnsafeMutablePointer<Float>
    }
}

/// Process thread: the monitoring part of one period (after the direct players have written
/// the outputs, before the output meters read them).
@_noLocks
func runMonitoring(
    _ state: UnsafeMutablePointer<ProcessState>, graph: UnsafeMutablePointer<GraphSnapshot>,
    frames: Int, frameTime: UInt32
) {
    let monitor = state.pointee.monitor
    let chunk = MonitorState.chunkFrames
    let tableSize = 2 * MonitorState.maximumBusChannels
    guard let plan = graph.pointee.monitor else {
        // No setup: the buses are silent, and bus taps record that silence.
        if graph.pointee.busTapCount == 0 { return }
        for index in 0..<tableSize { monitor.pointee.busPointers[index] = monitor.pointee.silence }
        var offset = 0
        while offset < frames {
            let count = min(frames - offset, chunk)
            captureBusTaps(
                graph, monitor: monitor, count: count,
                frameTime: frameTime &+ UInt32(truncatingIfNeeded: offset))
            offset += count
        }
        return
    }
    if plan.pointee.generation != monitor.pointee.appliedGeneration {
        apply(plan, to: monitor)
    }
    let busChannels = plan.pointee.busChannels
    for channel in 0..<MonitorState.maximumBusChannels {
        let inBus = channel < busChannels
        monitor.pointee.busPointers[MonitorState.busIndex(cue: false, channel: channel)] =
            inBus ? plan.pointee.work.mainBus + channel * chunk : monitor.pointee.silence
        monitor.pointee.busPointers[MonitorState.busIndex(cue: true, channel: channel)] =
            inBus ? plan.pointee.work.cueBus + channel * chunk : monitor.pointee.silence
    }
    var offset = 0
    while offset < frames {
        let count = min(frames - offset, chunk)
        mixChunk(
            state, graph: graph, plan: plan, offset: offset, count: count,
            frameTime: frameTime &+ UInt32(truncatingIfNeeded: offset))
        offset += count
    }
}

/// Retargets every ramp to a newly published plan.
@_noLocks
private func apply(
    _ plan: UnsafeMutablePointer<MonitorPlan>, to monitor: UnsafeMutablePointer<MonitorState>
) {
    let first = monitor.pointee.appliedGeneration == 0
    monitor.pointee.appliedGeneration = plan.pointee.generation
    let rampFrames = plan.pointee.rampFrames
    for index in 0..<plan.pointee.sourceCount {
        let source = plan.pointee.sources[index]
        let slot = monitor.pointee.slots + source.slot
        if slot.pointee.epoch != source.epoch {
            // The slot is new to this source: it fades in from silence.
            slot.pointee.epoch = source.epoch
            slot.pointee.main.jump(to: 0)
            slot.pointee.cue.jump(to: 0)
        }
        slot.pointee.main.retarget(source.mainGain, frames: rampFrames)
        slot.pointee.cue.retarget(source.cueGain, frames: rampFrames)
    }
    let split: Float = plan.pointee.split ? 1 : 0
    if first {
        // Nothing was heard through the cue output yet: no position to ramp from.
        monitor.pointee.mix.jump(to: plan.pointee.cueMix)
        monitor.pointee.split.jump(to: split)
    } else {
        monitor.pointee.mix.retarget(plan.pointee.cueMix, frames: rampFrames)
        monitor.pointee.split.retarget(split, frames: rampFrames)
    }
}

/// One chunk: sum the sources into the buses, meter and tap the buses, add them to the outputs.
@_noLocks
private func mixChunk(
    _ state: UnsafeMutablePointer<ProcessState>, graph: UnsafeMutablePointer<GraphSnapshot>,
    plan: UnsafeMutablePointer<MonitorPlan>, offset: Int, count: Int, frameTime: UInt32
) {
    let monitor = state.pointee.monitor
    let chunk = MonitorState.chunkFrames
    let busChannels = plan.pointee.busChannels
    let work = plan.pointee.work
    let mainBus = work.mainBus
    let cueBus = work.cueBus
    let mainGains = work.firstGains
    let cueGains = work.secondGains
    let inputs = state.pointee.inputBuffers
    for channel in 0..<busChannels {
        clearSamples(mainBus + channel * chunk, count: count)
        clearSamples(cueBus + channel * chunk, count: count)
    }

    // Sources → buses.
    for index in 0..<plan.pointee.sourceCount {
        let source = plan.pointee.sources[index]
        let slot = monitor.pointee.slots + source.slot
        if source.inputChannels == nil {
            // A player: render it (it keeps reading its ring even at zero gain, so it stays
            // in time), unless it is not in this graph (removed).
            guard let voice = graph.pointee.sourcePlayers[index] else {
                slot.pointee.main.advance(count)
                slot.pointee.cue.advance(count)
                continue
            }
            for channel in 0..<busChannels {
                clearSamples(work.scratch + channel * chunk, count: count)
            }
            voice.pointee.render(
                frames: count, toBus: work.scratchPointers, busChannels: busChannels)
        }
        let toMain = !slot.pointee.main.isSilent
        let toCue = !slot.pointee.cue.isSilent
        if toMain { slot.pointee.main.fill(mainGains, count: count) }
        if toCue { slot.pointee.cue.fill(cueGains, count: count) }
        if !toMain && !toCue { continue }
        for channel in 0..<busChannels {
            let signal: UnsafeMutablePointer<Float>
            if let inputChannels = source.inputChannels {
                signal = inputs[inputChannels[channel]] + offset
            } else {
                signal = work.scratch + channel * chunk
            }
            if toMain {
                let bus = mainBus + channel * chunk
                for frame in 0..<count { bus[frame] += signal[frame] * mainGains[frame] }
            }
            if toCue {
                let bus = cueBus + channel * chunk
                for frame in 0..<count { bus[frame] += signal[frame] * cueGains[frame] }
            }
        }
    }

    // The buses as they are (post-gain, pre-output): meters and taps.
    for channel in 0..<busChannels {
        monitor.pointee.busMeters[MonitorState.busIndex(cue: false, channel: channel)]
            .accumulate(mainBus + channel * chunk, count: count)
        monitor.pointee.busMeters[MonitorState.busIndex(cue: true, channel: channel)]
            .accumulate(cueBus + channel * chunk, count: count)
    }
    captureBusTaps(graph, monitor: monitor, count: count, frameTime: frameTime)

    // Main bus → main output group.
    let outputs = state.pointee.outputBuffers
    let mainOutput = plan.pointee.mainOutput
    for outputChannel in 0..<mainOutput.count {
        let output = outputs[mainOutput.channels[outputChannel]] + offset
        for channel in 0..<busChannels {
            let weight = mainOutput.weights[outputChannel * busChannels + channel]
            if weight == 0 { continue }
            let bus = mainBus + channel * chunk
            if weight == 1 {
                for frame in 0..<count { output[frame] += bus[frame] }
            } else {
                for frame in 0..<count { output[frame] += weight * bus[frame] }
            }
        }
    }

    // Cue output: the blend, the split, or a crossfade between them while split ramps.
    let mixes = work.firstGains
    let splits = work.secondGains
    monitor.pointee.mix.fill(mixes, count: count)
    monitor.pointee.split.fill(splits, count: count)
    let cueOutput = plan.pointee.cueOutput
    if cueOutput.count == 0 { return }
    let monoCue = work.monoCue
    let monoMain = work.monoMain
    let channelCount = Float(busChannels)
    for frame in 0..<count {
        var cueSum: Float = 0
        var mainSum: Float = 0
        for channel in 0..<busChannels {
            cueSum += cueBus[channel * chunk + frame]
            mainSum += mainBus[channel * chunk + frame]
        }
        monoCue[frame] = cueSum / channelCount
        monoMain[frame] = mainSum / channelCount
    }
    for outputChannel in 0..<cueOutput.count {
        let output = outputs[cueOutput.channels[outputChannel]] + offset
        let weights = cueOutput.weights + outputChannel * busChannels
        let mono = outputChannel % 2 == 0 ? monoCue : monoMain
        for frame in 0..<count {
            let mix = mixes[frame]
            var blend: Float = 0
            for channel in 0..<busChannels {
                let weight = weights[channel]
                if weight == 0 { continue }
                blend +=
                    weight
                    * ((1 - mix) * cueBus[channel * chunk + frame] + mix
                        * mainBus[channel * chunk + frame])
            }
            let split = splits[frame]
            output[frame] += split == 0 ? blend : (1 - split) * blend + split * mono[frame]
        }
    }
}

@_noLocks
private func captureBusTaps(
    _ graph: UnsafeMutablePointer<GraphSnapshot>, monitor: UnsafeMutablePointer<MonitorState>,
    count: Int, frameTime: UInt32
) {
    for index in 0..<graph.pointee.busTapCount {
        graph.pointee.busTaps[index].pointee.capture(
            frames: count, frameTime: frameTime, inputs: monitor.pointee.busPointers)
    }
}

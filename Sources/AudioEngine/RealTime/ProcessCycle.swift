// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// The process callback. JACK calls `recdProcess` once per period with the `ProcessState`
// that the control thread registered; everything it reaches is plain memory.
//
// The period may change between two cycles (any client may call jack_set_buffer_size; JACK
// allows up to 8192 frames): nothing here is sized by it. Rings are sized in seconds, monitoring
// works in chunks of `MonitorState.chunkFrames`, and each cycle uses the frame count it is given.

internal import CJack
import Synchronization

/// The JACK process callback (JackProcessCallback). `argument` is the engine's
/// `UnsafeMutablePointer<ProcessState>`.
@_noLocks
func recdProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let entered = jack_get_time()
    let state = argument.assumingMemoryBound(to: ProcessState.self)
    let graph = UnsafeMutablePointer<GraphSnapshot>(
        bitPattern: state.pointee.graph.load(ordering: .sequentiallyConsistent))
    let metering = state.pointee.metersActive.load(ordering: .relaxed)
    // The inputs' buffers only when something reads them this cycle: an idle recd with 64
    // ports registered asks JACK for none.
    var readsInputs = metering
    if let graph {
        readsInputs =
            readsInputs || graph.pointee.tapCount > 0 || graph.pointee.attachmentCount > 0
            || graph.pointee.monitor != nil
    }
    if readsInputs {
        for channel in 0..<state.pointee.inputCount {
            guard let port = state.pointee.inputPorts[channel],
                let buffer = jack_port_get_buffer(port, frameCount)
            else { return 0 }
            state.pointee.inputBuffers[channel] = buffer.assumingMemoryBound(to: Float.self)
        }
    }
    for channel in 0..<state.pointee.outputCount {
        guard let port = state.pointee.outputPorts[channel],
            let buffer = jack_port_get_buffer(port, frameCount)
        else { return 0 }
        state.pointee.outputBuffers[channel] = buffer.assumingMemoryBound(to: Float.self)
    }
    var frameTime: UInt32 = 0
    // This cycle's start and the next one's as JACK keeps them: the taps' clock check.
    var cycleStart: Int64 = 0
    var cycleNext: Int64 = 0
    if let client = state.pointee.client {
        frameTime = jack_last_frame_time(client)
        var cycleFrames: jack_nframes_t = 0
        var current: jack_time_t = 0
        var next: jack_time_t = 0
        var period: Float = 0
        if jack_get_cycle_times(client, &cycleFrames, &current, &next, &period) == 0 {
            cycleStart = Int64(truncatingIfNeeded: current)
            cycleNext = Int64(truncatingIfNeeded: next)
        }
    }
    runCycle(
        state, graph: graph, metering: metering, frames: Int(frameCount), frameTime: frameTime,
        nowMicros: entered, cycleStart: cycleStart, cycleNext: cycleNext)
    if cycleStart > 0 {
        let finished = jack_get_time()
        let start = UInt64(cycleStart)
        recordCycleTime(
            state.pointee.cycleTimes, startDelay: entered > start ? entered - start : 0,
            duration: finished > entered ? finished - entered : 0, late: cycleNext > 0 && finished > UInt64(cycleNext),
            overlong: cycleNext > cycleStart && finished - min(finished, entered) > UInt64(cycleNext - cycleStart))
    }
    return 0
}

/// `runCycle` with the current snapshot and meter switch (tests drive the cycle this way).
@_noLocks
func runCycle(
    _ state: UnsafeMutablePointer<ProcessState>, frames: Int, frameTime: UInt32, nowMicros: UInt64 = 0,
    cycleStart: Int64 = 0, cycleNext: Int64 = 0
) {
    runCycle(
        state,
        graph: UnsafeMutablePointer<GraphSnapshot>(
            bitPattern: state.pointee.graph.load(ordering: .sequentiallyConsistent)),
        metering: state.pointee.metersActive.load(ordering: .relaxed), frames: frames, frameTime: frameTime,
        nowMicros: nowMicros, cycleStart: cycleStart, cycleNext: cycleNext)
}

/// One period on buffers already in `state.inputBuffers`/`outputBuffers`: outputs are
/// cleared, attached applications' ports are fed (their play samples into their voices' rings,
/// their capture ports from the inputs, or from their processed ring at its fixed delay) and the players mixed into them, monitoring sums its
/// sources into the buses and adds those to the outputs (same cycle: no added latency), then
/// reference taps copy the outputs as written and input taps the inputs; meters measure
/// inputs, buses and outputs (inputs and outputs only while `metersActive`).
/// Separate from `recdProcess` so a test can drive it without a server. `graph` and `metering`
/// are read once a cycle (`recdProcess` decides from them whether to fetch the inputs).
/// `nowMicros` is JACK's monotonic microsecond clock this cycle, for the taps' clock check (0:
/// no check); `cycleStart`/`cycleNext` JACK's times of this cycle and the next
/// (`jack_get_cycle_times`; 0: unknown).
@_noLocks
func runCycle(
    _ state: UnsafeMutablePointer<ProcessState>, graph: UnsafeMutablePointer<GraphSnapshot>?, metering: Bool,
    frames: Int, frameTime: UInt32, nowMicros: UInt64, cycleStart: Int64 = 0, cycleNext: Int64 = 0
) {
    let inputs = state.pointee.inputBuffers
    let outputs = state.pointee.outputBuffers

    if metering {
        for channel in 0..<state.pointee.inputCount {
            state.pointee.meters[channel].accumulate(inputs[channel], count: frames)
        }
    }
    for channel in 0..<state.pointee.outputCount {
        clearSamples(outputs[channel], count: frames)
    }
    if let graph {
        for index in 0..<graph.pointee.tapCount {
            graph.pointee.taps[index].pointee.observeClock(
                frames: frames, frameTime: frameTime, nowMicros: nowMicros, cycleStart: cycleStart,
                cycleNext: cycleNext)
        }
        for index in 0..<graph.pointee.busTapCount {
            graph.pointee.busTaps[index].pointee.observeClock(
                frames: frames, frameTime: frameTime, nowMicros: nowMicros, cycleStart: cycleStart,
                cycleNext: cycleNext)
        }
        for index in 0..<graph.pointee.referenceTapCount {
            graph.pointee.referenceTaps[index].pointee.observeClock(
                frames: frames, frameTime: frameTime, nowMicros: nowMicros, cycleStart: cycleStart,
                cycleNext: cycleNext)
        }
        for index in 0..<graph.pointee.attachmentCount {
            let attachment = graph.pointee.attachments[index]
            if attachment.pointee.fetchBuffers(frames: frames) {
                attachment.pointee.feed(
                    frames: frames, inputs: inputs, inputCount: state.pointee.inputCount,
                    processed: graph.pointee.attachmentProcessing[index])
            }
        }
        for index in 0..<graph.pointee.playerCount where !graph.pointee.playerOnBus[index] {
            graph.pointee.players[index].pointee.render(frames: frames, outputs: outputs)
        }
        runMonitoring(state, graph: graph, frames: frames, frameTime: frameTime)
        // What the loudspeakers get this period, the mix complete: the far end of processed
        // captures. Before the input taps: once a consumer sees a capture period, its
        // reference's period is in that ring too (each ring's write count is released in turn).
        for index in 0..<graph.pointee.referenceTapCount {
            graph.pointee.referenceTaps[index].pointee.capture(
                frames: frames, frameTime: frameTime, inputs: outputs)
        }
        for index in 0..<graph.pointee.tapCount {
            graph.pointee.taps[index].pointee.capture(
                frames: frames, frameTime: frameTime, inputs: inputs)
        }
    }
    if metering {
        let outputMeters = state.pointee.meters + state.pointee.inputCount
        for channel in 0..<state.pointee.outputCount {
            outputMeters[channel].accumulate(outputs[channel], count: frames)
        }
    }
    // After this, the snapshot loaded above is no longer in use by this cycle.
    state.pointee.cyclesCompleted.pointee.add(1, ordering: .sequentiallyConsistent)
}

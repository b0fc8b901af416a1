// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// `echo`'s process callback: a room in the graph. What comes into the input port (a
// loudspeaker's feed) goes out of the output port (a microphone's) through a fixed sparse
// impulse response, with the near-end talker's samples added.

internal import CJack

/// Everything `echoProcess` touches. The main thread allocates it before jack_activate and
/// frees it after the client is closed (`EchoCommand`).
struct EchoState: ~Copyable {
    let client: OpaquePointer
    /// jack_port_t * of the input (the far end) and the output (what the microphone hears).
    let input: OpaquePointer
    let output: OpaquePointer
    /// The input's recent past: a ring of `mask + 1` samples (a power of two longer than the
    /// longest tap plus the longest period), `written` samples so far.
    let line: UnsafeMutablePointer<Float>
    let mask: Int
    var written = 0
    /// The impulse response: tap k takes the input `offsets[k]` samples ago times `gains[k]`.
    let offsets: UnsafeMutablePointer<Int>
    let gains: UnsafeMutablePointer<Float>
    let tapCount: Int
    /// The near end, added from the first frame whose input is not silent on (silence after
    /// its end): its schedule is then the far end's, whenever that begins.
    let near: UnsafeMutablePointer<Float>
    let nearCount: Int
    /// The frame (counted like `progress.frames`) the near end began at; -1: not yet.
    var nearStart = -1
    let frameLimit: Int
    let progress = CycleProgress()
}

/// JackProcessCallback for `echo`; `argument` is an `UnsafeMutablePointer<EchoState>`.
/// Outputs silence until armed and after the frame limit.
@_noLocks
func echoProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let state = argument.assumingMemoryBound(to: EchoState.self)
    let frames = Int(frameCount)
    guard let inputBuffer = jack_port_get_buffer(state.pointee.input, frameCount),
        let outputBuffer = jack_port_get_buffer(state.pointee.output, frameCount)
    else { return 0 }
    let input = inputBuffer.assumingMemoryBound(to: Float.self)
    let output = outputBuffer.assumingMemoryBound(to: Float.self)
    var played = 0
    if state.pointee.progress.armed.load(ordering: .acquiring) {
        let limit = state.pointee.frameLimit
        played = state.pointee.progress.claim(
            frames: frames, limit: limit, cycleStart: jack_last_frame_time(state.pointee.client))
        let line = state.pointee.line
        let mask = state.pointee.mask
        let start = state.pointee.written
        for frame in 0..<frames { line[(start &+ frame) & mask] = input[frame] }
        let first = state.pointee.progress.frames.load(ordering: .relaxed)
        for frame in 0..<played {
            let now = start &+ frame
            var sum: Float = 0
            for tap in 0..<state.pointee.tapCount {
                // Before the first sample the line holds zeros: a negative index wraps into them.
                sum += state.pointee.gains[tap] * line[(now &- state.pointee.offsets[tap]) & mask]
            }
            let position = first &+ frame
            if state.pointee.nearStart < 0 && input[frame] != 0 { state.pointee.nearStart = position }
            let near = position &- state.pointee.nearStart
            if state.pointee.nearStart >= 0 && near < state.pointee.nearCount { sum += state.pointee.near[near] }
            output[frame] = sum
        }
        state.pointee.written = start &+ frames
        if played > 0 { state.pointee.progress.advance(by: played, limit: limit) }
    }
    var frame = played
    while frame < frames {
        output[frame] = 0
        frame += 1
    }
    return 0
}

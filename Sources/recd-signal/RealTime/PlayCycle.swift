// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// `play`'s process callback: generate into the output ports' buffers.

internal import CJack

/// Everything `playProcess` touches. The main thread allocates it before jack_activate and
/// frees it after jack_deactivate (`PlayCommand`).
struct PlayState: ~Copyable {
    /// jack_client_t *, for the cycle's frame time.
    let client: OpaquePointer
    /// Our output ports (jack_port_t *), in channel order.
    let ports: UnsafeMutablePointer<OpaquePointer>
    /// This cycle's port buffers.
    let buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let channelCount: Int
    /// Frames to play; Int.max: until stopped.
    let frameLimit: Int
    /// Frames `silentFrom ..< silentUntil` (counted like `frameLimit`) are played as zeros
    /// (`--silent-from`, `--silent-for`); empty when not asked.
    let silentFrom: Int
    let silentUntil: Int
    var generator: Generator
    /// `--envelope`, applied after the generator; nil: none.
    var envelope: Envelope?
    let progress = CycleProgress()
}

/// JackProcessCallback for `play`; `argument` is an `UnsafeMutablePointer<PlayState>`.
/// Outputs silence until armed and after the frame limit.
@_noLocks
func playProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let state = argument.assumingMemoryBound(to: PlayState.self)
    let frames = Int(frameCount)
    let channels = state.pointee.channelCount
    let buffers = state.pointee.buffers
    for channel in 0..<channels {
        guard let buffer = jack_port_get_buffer(state.pointee.ports[channel], frameCount) else {
            return 0
        }
        buffers[channel] = buffer.assumingMemoryBound(to: Float.self)
    }
    var played = 0
    if state.pointee.progress.armed.load(ordering: .acquiring) {
        let limit = state.pointee.frameLimit
        played = state.pointee.progress.claim(
            frames: frames, limit: limit, cycleStart: jack_last_frame_time(state.pointee.client))
        if played > 0 {
            state.pointee.generator.render(into: buffers, count: played)
            state.pointee.envelope?.apply(to: buffers, channels: channels, count: played)
            // The generator ran on: after the silence the signal is where it would have been.
            let first = state.pointee.progress.frames.load(ordering: .relaxed)
            let from = max(state.pointee.silentFrom - first, 0)
            let until = min(state.pointee.silentUntil - first, played)
            if from < until {
                for channel in 0..<channels { clear(buffers[channel], from: from, to: until) }
            }
            state.pointee.progress.advance(by: played, limit: limit)
        }
    }
    for channel in 0..<channels { clear(buffers[channel], from: played, to: frames) }
    return 0
}

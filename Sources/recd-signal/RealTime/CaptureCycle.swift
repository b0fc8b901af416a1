// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// `capture`'s process callback: interleave the input ports into a jack_ringbuffer that the
// writer thread drains. A period that does not fit whole is dropped whole and counted: the
// ring never holds part of a frame.

internal import CJack
import Synchronization

/// Everything `captureProcess` touches. The main thread allocates it before jack_activate
/// and frees it after jack_deactivate and after the writer thread has finished
/// (`CaptureCommand`).
struct CaptureState: ~Copyable {
    /// jack_client_t *, for the cycle's frame time.
    let client: OpaquePointer
    /// Our input ports (jack_port_t *), in channel order; registered (not nil) before `armed`.
    let ports: UnsafeMutablePointer<OpaquePointer?>
    /// This cycle's port buffers.
    let buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let channelCount: Int
    /// Single producer: this callback; single consumer: the writer thread.
    let ring: UnsafeMutablePointer<jack_ringbuffer_t>
    /// Interleaving space: `scratchFrames * channelCount` samples.
    let scratch: UnsafeMutablePointer<Float>
    let scratchFrames: Int
    /// Frames to capture; Int.max: until stopped.
    let frameLimit: Int
    let progress = CycleProgress()
    /// Periods dropped because the ring was full, and their frames.
    let overruns = Atomic<Int>(0)
    let droppedFrames = Atomic<Int>(0)
}

/// JackProcessCallback for `capture`; `argument` is an `UnsafeMutablePointer<CaptureState>`.
@_noLocks
func captureProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let state = argument.assumingMemoryBound(to: CaptureState.self)
    guard state.pointee.progress.armed.load(ordering: .acquiring) else { return 0 }
    let limit = state.pointee.frameLimit
    let count = state.pointee.progress.claim(
        frames: Int(frameCount), limit: limit,
        cycleStart: jack_last_frame_time(state.pointee.client))
    guard count > 0 else { return 0 }

    let channels = state.pointee.channelCount
    let buffers = state.pointee.buffers
    for channel in 0..<channels {
        guard let port = state.pointee.ports[channel], let buffer = jack_port_get_buffer(port, frameCount) else {
            return 0
        }
        buffers[channel] = buffer.assumingMemoryBound(to: Float.self)
    }

    let ring = state.pointee.ring
    let frameBytes = channels * MemoryLayout<Float>.size
    if jack_ringbuffer_write_space(ring) < count * frameBytes {
        state.pointee.overruns.add(1, ordering: .relaxed)
        state.pointee.droppedFrames.add(count, ordering: .relaxed)
    } else {
        let scratch = state.pointee.scratch
        let bytes = UnsafeRawPointer(scratch).assumingMemoryBound(to: CChar.self)
        var start = 0
        while start < count {
            let chunk = min(state.pointee.scratchFrames, count - start)
            for channel in 0..<channels {
                let input = buffers[channel] + start
                var index = 0
                while index < chunk {
                    scratch[index &* channels &+ channel] = input[index]
                    index += 1
                }
            }
            _ = jack_ringbuffer_write(ring, bytes, chunk * frameBytes)
            start += chunk
        }
    }
    state.pointee.progress.advance(by: count, limit: limit)
    return 0
}

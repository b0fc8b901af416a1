// The processor's output ring: processed frames not yet given back to the caller.
//
// Threads: the processor's (one at a time). Allocated once in `init`: `append` and `take`
// allocate nothing.

/// Processed frames not yet given back, interleaved: a ring of `capacity` frames of
/// `channels` channels. Owns its memory (freed in `deinit`).
final class ProcessedFrames {
    let channels: Int
    let capacity: Int
    private let samples: UnsafeMutablePointer<Float>
    private var read = 0
    /// Frames held.
    private(set) var count = 0

    init(channels: Int, capacity: Int) {
        self.channels = channels
        self.capacity = capacity
        samples = .allocate(capacity: capacity * channels)
        samples.initialize(repeating: 0, count: capacity * channels)
    }

    deinit {
        samples.deallocate()
    }

    /// Empties the ring but for `silentFrames` of silence, given back first.
    func reset(silentFrames: Int) {
        read = 0
        count = silentFrames
        samples.update(repeating: 0, count: capacity * channels)
    }

    /// Appends `frames` frames of a deinterleaved chunk (channel `c`'s frame `f` at
    /// `chunk[c * stride + f]`).
    func append(deinterleaved chunk: UnsafePointer<Float>, stride: Int, frames: Int) {
        var slot = (read + count) % capacity
        for frame in 0..<frames {
            for channel in 0..<channels {
                samples[slot * channels + channel] = chunk[channel * stride + frame]
            }
            slot = slot + 1 == capacity ? 0 : slot + 1
        }
        count += frames
    }

    /// Moves the oldest `frames` frames into `destination` (interleaved).
    func take(into destination: UnsafeMutablePointer<Float>, frames: Int) {
        precondition(frames <= count, "the output ring ran dry: a block not a multiple of the granularity")
        for frame in 0..<frames {
            for channel in 0..<channels {
                destination[frame * channels + channel] = samples[read * channels + channel]
            }
            read = read + 1 == capacity ? 0 : read + 1
        }
        count -= frames
    }
}

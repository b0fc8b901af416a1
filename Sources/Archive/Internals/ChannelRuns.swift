// Planar scratch memory for the archiver: one run of samples per channel.

/// Planar scratch: `frames` samples for each of `channels` channels, channel `c` from
/// `starts[c]`. Archiver thread only; freed with its owner.
final class ChannelRuns {
    let channels: Int
    let frames: Int
    private let samples: UnsafeMutablePointer<Float>
    /// Channel `c`'s run at `starts[c]`.
    let starts: UnsafeMutablePointer<UnsafePointer<Float>>

    init(channels: Int, frames: Int) {
        self.channels = channels
        self.frames = frames
        samples = .allocate(capacity: max(channels * frames, 1))
        starts = .allocate(capacity: max(channels, 1))
        for channel in 0..<channels { starts[channel] = UnsafePointer(samples + channel * frames) }
    }

    deinit {
        samples.deallocate()
        starts.deallocate()
    }

    /// Takes `count` (≤ `frames`) interleaved frames of `channels` channels apart.
    func fill(from interleaved: UnsafePointer<Float>, frames count: Int) {
        precondition(count <= frames, "more frames than the runs hold")
        for channel in 0..<channels {
            let run = samples + channel * frames
            var from = interleaved + channel
            for frame in 0..<count {
                run[frame] = from.pointee
                from += channels
            }
        }
    }
}

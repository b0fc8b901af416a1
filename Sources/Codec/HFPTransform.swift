// SPEC §7's HFP capture: the band limit and rate of a Bluetooth hands-free link, applied to a
// recorder's samples before they are encoded.

/// Band-limits and resamples interleaved audio from the JACK rate to an HFP link's rate
/// (8000 Hz for cvsd, 16000 Hz for msbc) with libsoxr: what the archive records for an HFP
/// input is what the link could have carried.
///
/// Owns its `Resampler`. Used on one thread: a recorder's archiver (the archive's
/// `SampleTransform`).
public final class HFPTransform {
    public let resampler: Resampler
    /// The link's rate: what `process` produces.
    public let outputSampleRate: Int
    private var scratch: [Float] = []

    public init(jackRate: Int, linkRate: Int, channels: Int) throws(MediaError) {
        resampler = try Resampler.forHFPCapture(jackRate: jackRate, linkRate: linkRate, channels: channels)
        outputSampleRate = linkRate
    }

    /// Converts `frames` interleaved input frames and appends what comes out to `output`
    /// (soxr holds a filter's worth back until `flush`). A libsoxr failure drops the rest of
    /// this input.
    public func process(_ input: UnsafeBufferPointer<Float>, frames: Int, into output: inout [Float]) {
        let capacity = resampler.maximumOutputFrames(forInputFrames: frames) * resampler.channels
        if scratch.count < capacity { scratch = [Float](repeating: 0, count: capacity) }
        var offset = 0
        while offset < frames {
            let result = scratch.withUnsafeMutableBufferPointer { out in
                try? resampler.process(
                    input: UnsafeBufferPointer(rebasing: input[(offset * resampler.channels)...]),
                    frames: frames - offset, output: out)
            }
            guard let (consumed, produced) = result else { return }
            output.append(contentsOf: scratch[..<(produced * resampler.channels)])
            if consumed == 0 { break }
            offset += consumed
        }
    }

    /// The end of a continuous stretch: appends what soxr still holds and starts afresh.
    public func flush(into output: inout [Float]) {
        if let rest = try? resampler.flush() { output.append(contentsOf: rest) }
        resampler.reset()
    }
}

// HFP capture (SPEC §7): band-limits and resamples to the link's rate with libsoxr.
import Archive
import MediaFiles
import SessionPolicy

/// A recorder's transform for a Bluetooth HFP input. Archiver thread only.
final class HFPTransform: SampleTransform {
    let resampler: Resampler
    let outputSampleRate: Int
    private var scratch: [Float] = []

    init(jackRate: Int, codec: HFPCodec, channels: Int) throws {
        resampler = try Resampler.forHFPCapture(jackRate: jackRate, linkRate: codec.sampleRate, channels: channels)
        outputSampleRate = codec.sampleRate
    }

    func process(_ input: UnsafeBufferPointer<Float>, frames: Int, into output: inout [Float]) {
        let capacity = resampler.maximumOutputFrames(forInputFrames: frames) * resampler.channels
        if scratch.count < capacity { scratch = [Float](repeating: 0, count: capacity) }
        var offset = 0
        while offset < frames {
            let result = scratch.withUnsafeMutableBufferPointer { out in
                try? resampler.process(
                    input: UnsafeBufferPointer(rebasing: input[(offset * resampler.channels)...]), frames: frames - offset, output: out)
            }
            guard let (consumed, produced) = result else { return }
            output.append(contentsOf: scratch[..<(produced * resampler.channels)])
            if consumed == 0 { break }
            offset += consumed
        }
    }

    func flush(into output: inout [Float]) {
        if let rest = try? resampler.flush() { output.append(contentsOf: rest) }
        resampler.reset()
    }
}

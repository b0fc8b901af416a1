// A recorder's `SampleTransform` (the HFP band limit and rate change) between the source's
// frames and the segments: it takes interleaved frames, so they are put together for it, and its
// output taken apart again, a chunk at a time. Archiver thread only.

final class OutputTransform {
    private let transform: any SampleTransform
    private let channels: Int
    private let inputRate: Int
    let outputRate: Int
    /// The transform's input (interleaved), its output, and that taken apart.
    private var input: [Float] = []
    private var transformed: [Float] = []
    private let outputRuns: ChannelRuns
    /// Remainder when converting gap lengths to the output rate (units of 1/inputRate frames).
    private var gapRemainder = 0

    typealias Write = (UnsafePointer<UnsafePointer<Float>>, Int) throws(ArchiveError) -> Void

    init(_ transform: any SampleTransform, channels: Int, inputRate: Int, chunkFrames: Int) {
        self.transform = transform
        self.channels = channels
        self.inputRate = inputRate
        outputRate = transform.outputSampleRate
        outputRuns = ChannelRuns(channels: channels, frames: chunkFrames)
    }

    /// Transforms `frames` frames (one run per channel) and writes what comes out.
    func process(
        _ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int, write: Write
    ) throws(ArchiveError) {
        input.removeAll(keepingCapacity: true)
        input.reserveCapacity(frames * channels)
        for frame in 0..<frames {
            for channel in 0..<channels { input.append(channelStarts[channel][frame]) }
        }
        transformed.removeAll(keepingCapacity: true)
        input.withUnsafeBufferPointer { transform.process($0, frames: frames, into: &transformed) }
        try writeTransformed(write)
    }

    /// Writes what the transform still holds (before a gap, at the end).
    func flush(write: Write) throws(ArchiveError) {
        transformed.removeAll(keepingCapacity: true)
        transform.flush(into: &transformed)
        try writeTransformed(write)
    }

    /// The output frames `frames` input frames (a gap's) stand for.
    func outputLength(ofInputFrames frames: Int) -> Int {
        guard outputRate != inputRate else { return frames }
        let scaled = frames * outputRate + gapRemainder
        gapRemainder = scaled % inputRate
        return scaled / inputRate
    }

    /// Writes `transformed` (interleaved), taken apart into `outputRuns` a chunk at a time.
    private func writeTransformed(_ write: Write) throws(ArchiveError) {
        precondition(transformed.count % channels == 0, "a transform must produce whole frames")
        let frames = transformed.count / channels
        var done = 0
        while done < frames {
            let count = min(outputRuns.frames, frames - done)
            transformed.withUnsafeBufferPointer {
                outputRuns.fill(from: $0.baseAddress! + done * channels, frames: count)
            }
            try write(outputRuns.starts, count)
            done += count
        }
    }
}

/// Writes a FLAC file from interleaved Float32 samples, 16 or 24 bits, with MD5 and total
/// samples in STREAMINFO.
///
/// Floats are clamped to [-1, 1 - 2^-(bits-1)] before they become integers (NaN becomes 0):
/// an out-of-range sample never reaches libFLAC, which would otherwise produce a broken stream
/// (SPEC §9). Built on `FLACEncoder`, which it owns. Not thread-safe: one thread writes and
/// finishes it. A writer dropped without `finish()` still completes the file, but any error
/// in doing so is lost.
public final class FLACWriter {
    public let path: String
    public let sampleRate: Int
    public let channels: Int
    public let bitsPerSample: Int
    private let encoder: FLACEncoder
    /// Reused conversion buffer.
    private var scratch: [Int32] = []

    /// Creates `path` (it must not exist).
    ///
    /// - Parameters:
    ///   - channels: 1...8.
    ///   - bitsPerSample: 16 or 24.
    ///   - compressionLevel: 0...8.
    ///   - vorbisComments: NAME=value pairs, in order.
    public init(
        path: String, sampleRate: Int, channels: Int, bitsPerSample: Int,
        compressionLevel: Int = 5, vorbisComments: [(String, String)] = []
    ) throws(MediaError) {
        guard bitsPerSample == 16 || bitsPerSample == 24 else {
            throw MediaError(
                .invalidArgument, path: path,
                message: "FLACWriter writes 16 or 24 bits, not \(bitsPerSample)")
        }
        self.path = path
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = bitsPerSample
        encoder = try FLACEncoder(
            path: path,
            settings: FLACEncoder.Settings(
                sampleRate: sampleRate, channels: channels, bitsPerSample: bitsPerSample,
                compressionLevel: compressionLevel, vorbisComments: vorbisComments))
    }

    /// Frames written so far.
    public var framesWritten: Int { encoder.samplesEncoded }

    /// Writes `frames` interleaved frames from `samples` (which holds at least
    /// `frames * channels` samples).
    public func write(_ samples: UnsafeBufferPointer<Float>, frames: Int) throws(MediaError) {
        precondition(frames >= 0 && samples.count >= frames * channels, "not enough samples")
        let count = frames * channels
        guard count > 0 else { return }
        if scratch.count < count { scratch = [Int32](repeating: 0, count: count) }
        let quantizer = SampleQuantizer(bitsPerSample: bitsPerSample)
        scratch.withUnsafeMutableBufferPointer { integers in
            quantizer.quantize(
                samples.baseAddress!, stride: channels, firstChannel: 0, channels: channels, frames: frames,
                into: integers.baseAddress!)
        }
        try scratch.withUnsafeBufferPointer { integers throws(MediaError) in
            try encoder.encode(UnsafeBufferPointer(rebasing: integers[..<count]))
        }
    }

    /// `write` for an array of whole frames.
    public func write(_ samples: [Float]) throws(MediaError) {
        precondition(samples.count % channels == 0, "an array of whole frames")
        try samples.withUnsafeBufferPointer { buffer throws(MediaError) in
            try write(buffer, frames: buffer.count / channels)
        }
    }

    /// Completes the file: last block, STREAMINFO (total samples, MD5), close.
    public func finish() throws(MediaError) {
        try encoder.finish()
    }
}

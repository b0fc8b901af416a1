/// Reads a FLAC or WAV file as interleaved Float32 frames.
///
/// The container is told by the file's first bytes (`fLaC`, `RIFF…WAVE`, `RF64…WAVE`), never
/// by its extension: FLAC goes through libFLAC's stream decoder (4 to 32 bits, 1 to 8
/// channels, MD5 and length checked at the end), WAV through libsndfile. Integer samples are
/// scaled by 2^(bits-1) into [-1, 1); float WAV samples pass through unchanged.
///
/// The reader owns its decoder and holds its `ReadOnlyFile` (whose last holder closes the
/// descriptor). It reads with `pread` from a position of its own, so several readers of one
/// file, or of `dup`ed descriptors of it, do not disturb one another. It is not thread-safe:
/// one thread at a time (a feeder thread, typically) opens and reads it. Opening reads the
/// file's header from disk.
public final class AudioFileReader {
    /// The file's name in messages: its path, or the name given with a passed descriptor.
    public let path: String
    /// Frames per second.
    public let sampleRate: Int
    /// Interleaved channels per frame.
    public let channels: Int
    /// Bits per sample as stored (8, 16, 24, 32; 64 for double WAV; 0 for compressed WAV).
    public let bitsPerSample: Int
    /// Frames in the file, when its header says (a FLAC written by a streaming encoder may not).
    public let totalFrames: Int?
    /// Which container the first bytes said.
    public let format: Format

    /// A container recd reads.
    public enum Format: String, Sendable {
        case flac
        case wav
    }

    private enum Backend {
        case flac(FLACDecoder)
        case wav(SndfileDecoder)
    }

    private let backend: Backend
    /// FLAC's integers before they are scaled into the caller's floats.
    private var integers: [Int32] = []

    /// Opens `path` with this process's rights and reads its header.
    public convenience init(path: String) throws(MediaError) {
        try self.init(file: ReadOnlyFile(path: path))
    }

    /// Reads the header of an open file (a descriptor a client passed, adopted by
    /// `ReadOnlyFile(adopting:name:)`). The reader holds `file` until it goes away.
    public init(file: ReadOnlyFile) throws(MediaError) {
        self.path = file.name
        switch try FileProbe.container(of: file) {
        case .flac:
            let decoder = try FLACDecoder(file: file, mode: .strict)
            // A strict decoder that opened has read STREAMINFO; say so if it ever has not.
            guard let info = decoder.streamInfo else {
                throw MediaError(
                    .corrupt, path: file.name, message: "its FLAC header has no STREAMINFO; " + MediaError.convertAdvice
                )
            }
            backend = .flac(decoder)
            format = .flac
            sampleRate = info.sampleRate
            channels = info.channels
            bitsPerSample = info.bitsPerSample
            totalFrames = info.totalSamples > 0 ? info.totalSamples : nil
        case .wav:
            let decoder = try SndfileDecoder(file: file)
            backend = .wav(decoder)
            format = .wav
            sampleRate = decoder.sampleRate
            channels = decoder.channels
            bitsPerSample = decoder.bitsPerSample
            totalFrames = decoder.totalFrames
        }
    }

    /// Reads up to `maxFrames` frames (interleaved, `channels` samples each) into `buffer`;
    /// returns the frames read, 0 at the end of the file. Throws `.corrupt` when the file turns
    /// out to be damaged or cut short (FLAC: bad frames, fewer frames than STREAMINFO says, or
    /// an MD5 mismatch, found when the end is reached).
    public func read(into buffer: UnsafeMutableBufferPointer<Float>, maxFrames: Int)
        throws(MediaError) -> Int
    {
        let frames = min(maxFrames, buffer.count / channels)
        guard frames > 0, let base = buffer.baseAddress else { return 0 }
        switch backend {
        case .flac(let decoder): return try readFLAC(decoder, into: base, maxFrames: frames)
        case .wav(let decoder): return try decoder.read(into: base, maxFrames: frames)
        }
    }

    /// FLAC's integers scaled by 2^(bits-1) into [-1, 1).
    private func readFLAC(_ decoder: FLACDecoder, into destination: UnsafeMutablePointer<Float>, maxFrames: Int)
        throws(MediaError) -> Int
    {
        let count = maxFrames * channels
        if integers.count < count { integers = [Int32](repeating: 0, count: count) }
        let scale = 1 / Float(sign: .plus, exponent: bitsPerSample - 1, significand: 1)
        return try integers.withUnsafeMutableBufferPointer { buffer throws(MediaError) in
            let frames = try decoder.read(into: buffer.baseAddress!, maxFrames: maxFrames)
            for index in 0..<(frames * channels) { destination[index] = Float(buffer[index]) * scale }
            return frames
        }
    }

    /// Reads the rest of the file (for tests and short files; a player streams with `read`).
    public func readAll() throws(MediaError) -> [Float] {
        var result: [Float] = []
        // What the header promises is reserved only up to a bound: a header can claim anything.
        if let totalFrames {
            let (samples, overflow) = totalFrames.multipliedReportingOverflow(by: channels)
            result.reserveCapacity(overflow ? 1 << 20 : min(samples, 1 << 20))
        }
        var chunk = [Float](repeating: 0, count: 4096 * channels)
        while true {
            let frames = try chunk.withUnsafeMutableBufferPointer { buffer throws(MediaError) in
                try read(into: buffer, maxFrames: 4096)
            }
            if frames == 0 { return result }
            result.append(contentsOf: chunk[..<(frames * channels)])
        }
    }

    /// Duration in seconds, when the length is known.
    public var duration: Double? {
        totalFrames.map { Double($0) / Double(sampleRate) }
    }
}

// Reference WAV files for tests and tools, through libsndfile.

internal import CSndfile

/// Writes PCM WAV files with libsndfile: what tests and tools need to make reference files.
///
/// Owns the `SNDFILE *` (closed by `close()` or `deinit`). One thread at a time.
public final class WAVWriter {
    public let path: String
    public let channels: Int
    public let bitsPerSample: Int
    private var file: OpaquePointer?

    /// `bitsPerSample`: 16, 24 or 32 (integer PCM).
    public init(path: String, sampleRate: Int, channels: Int, bitsPerSample: Int) throws(MediaError) {
        let subtype: Int32
        switch bitsPerSample {
        case 16: subtype = Int32(SF_FORMAT_PCM_16)
        case 24: subtype = Int32(SF_FORMAT_PCM_24)
        case 32: subtype = Int32(SF_FORMAT_PCM_32)
        default:
            throw MediaError(
                .invalidArgument, path: path,
                message: "WAV files are written with 16, 24 or 32 bits, not \(bitsPerSample)")
        }
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = Int32(channels)
        info.format = Int32(SF_FORMAT_WAV) | subtype
        guard let file = sf_open(path, Int32(SFM_WRITE), &info) else {
            throw MediaError(
                .io, path: path,
                message: "libsndfile cannot create it: \(String(cString: sf_strerror(nil)))")
        }
        self.path = path
        self.channels = channels
        self.bitsPerSample = bitsPerSample
        self.file = file
    }

    /// Writes into `descriptor` (a regular file open for writing, empty; libsndfile seeks back
    /// to complete the header at `close()`). `name` is for messages. The descriptor stays the
    /// caller's: `close()` does not close it.
    public init(descriptor: Int32, name: String, sampleRate: Int, channels: Int, bitsPerSample: Int) throws(MediaError) {
        guard let subtype = Self.subtype(bitsPerSample) else {
            throw MediaError(
                .invalidArgument, path: name,
                message: "WAV files are written with 16, 24 or 32 bits, not \(bitsPerSample)")
        }
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = Int32(channels)
        // WAVE_FORMAT_EXTENSIBLE beyond 2 channels or 16 bits: what readers (the flac CLI
        // among them) require to assign channels and trust the width.
        let container = channels > 2 || bitsPerSample > 16 ? Int32(SF_FORMAT_WAVEX) : Int32(SF_FORMAT_WAV)
        info.format = container | subtype
        guard let file = sf_open_fd(descriptor, Int32(SFM_WRITE), &info, 0) else {
            throw MediaError(
                .io, path: name,
                message: "libsndfile cannot write WAV to it: \(String(cString: sf_strerror(nil)))")
        }
        self.path = name
        self.channels = channels
        self.bitsPerSample = bitsPerSample
        self.file = file
    }

    private static func subtype(_ bitsPerSample: Int) -> Int32? {
        switch bitsPerSample {
        case 16: Int32(SF_FORMAT_PCM_16)
        case 24: Int32(SF_FORMAT_PCM_24)
        case 32: Int32(SF_FORMAT_PCM_32)
        default: nil
        }
    }

    deinit { close() }

    /// Writes interleaved integer samples of `bitsPerSample` bits (e.g. -32768...32767).
    public func write(samples: [Int32]) throws(MediaError) {
        guard let file else { preconditionFailure("write after close") }
        let shift = Int32(32 - bitsPerSample)
        // libsndfile's int interface is 32-bit full scale.
        let scaled = samples.map { $0 << shift }
        let frames = scaled.count / channels
        let written = scaled.withUnsafeBufferPointer {
            sf_writef_int(file, $0.baseAddress, sf_count_t(frames))
        }
        guard written == frames else {
            throw MediaError(
                .io, path: path, message: "writing failed: \(String(cString: sf_strerror(file)))")
        }
    }

    public func close() {
        if let file { sf_close(file) }
        file = nil
    }
}

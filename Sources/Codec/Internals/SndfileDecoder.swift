// libsndfile behind the same pull interface as the FLAC decoder; used for WAV (RIFF, RF64).
// libsndfile reads through virtual I/O callbacks served by a FileCursor (pread), never through
// the descriptor's shared offset.

internal import CSndfile

/// Decodes one WAV file with libsndfile, which scales integer PCM by 2^(bits-1) to floats
/// (its default normalisation) and passes float PCM through unchanged.
///
/// Owns the `SNDFILE *` (closed in `deinit`) and its cursor; holds the `ReadOnlyFile`, which
/// owns the descriptor. One thread at a time.
final class SndfileDecoder {
    let path: String
    let sampleRate: Int
    let channels: Int
    let bitsPerSample: Int
    let totalFrames: Int?

    private let file: OpaquePointer
    /// libsndfile's `user_data`, retained here for as long as `file` is open.
    private let cursor: FileCursor

    init(file source: ReadOnlyFile) throws(MediaError) {
        self.path = source.name
        let cursor = FileCursor(file: source)
        self.cursor = cursor
        var info = SF_INFO()
        // libsndfile copies the callback table; the cursor must outlive the SNDFILE.
        var callbacks = SF_VIRTUAL_IO(
            get_filelen: sndfileLength, seek: sndfileSeek, read: sndfileRead, write: nil, tell: sndfileTell)
        let opened = sf_open_virtual(
            &callbacks, Int32(SFM_READ), &info, Unmanaged.passUnretained(cursor).toOpaque())
        if let failure = cursor.failure {
            if let opened { sf_close(opened) }
            throw failure
        }
        guard let file = opened else {
            let code = sf_error(nil)
            let text = String(cString: sf_strerror(nil))
            switch Int(code) {
            case SF_ERR_UNRECOGNISED_FORMAT, SF_ERR_UNSUPPORTED_ENCODING:
                throw MediaError(
                    .unsupportedFormat, path: path,
                    message: "libsndfile cannot read this WAV variant (\(text)); "
                        + MediaError.convertAdvice)
            case SF_ERR_SYSTEM:
                throw MediaError(.io, path: path, message: "libsndfile cannot open it: \(text)")
            default:
                throw MediaError(
                    .corrupt, path: path,
                    message: "its WAV header is damaged (\(text)); re-create it, or "
                        + MediaError.convertAdvice)
            }
        }
        self.file = file
        sampleRate = Int(info.samplerate)
        channels = Int(info.channels)
        bitsPerSample = Self.bits(subtype: Int(info.format) & SF_FORMAT_SUBMASK)
        totalFrames = info.frames >= 0 && info.seekable != 0 ? Int(info.frames) : nil
        guard sampleRate > 0, channels > 0 else {
            sf_close(file)
            throw MediaError(
                .corrupt, path: path,
                message: "its WAV header says \(channels) channels at \(sampleRate) Hz; "
                    + "re-create it, or " + MediaError.convertAdvice)
        }
    }

    deinit {
        sf_close(file)
    }

    /// Up to `maxFrames` interleaved frames into `destination`; 0 at the end of the file.
    func read(into destination: UnsafeMutablePointer<Float>, maxFrames: Int) throws(MediaError)
        -> Int
    {
        let got = sf_readf_float(file, destination, sf_count_t(maxFrames))
        if let failure = cursor.failure { throw failure }
        if got < maxFrames {
            let code = sf_error(file)
            if code != 0 {
                throw MediaError(
                    .corrupt, path: path,
                    message: "reading failed: \(String(cString: sf_strerror(file))); "
                        + "re-create it, or " + MediaError.convertAdvice)
            }
        }
        return Int(got)
    }

    /// Bits per sample of a libsndfile subtype (0 when it has no fixed width, e.g. ADPCM).
    private static func bits(subtype: Int) -> Int {
        switch subtype {
        case SF_FORMAT_PCM_S8, SF_FORMAT_PCM_U8: 8
        case SF_FORMAT_PCM_16: 16
        case SF_FORMAT_PCM_24: 24
        case SF_FORMAT_PCM_32, SF_FORMAT_FLOAT: 32
        case SF_FORMAT_DOUBLE: 64
        case SF_FORMAT_ULAW, SF_FORMAT_ALAW: 8
        default: 0
        }
    }
}

// The virtual I/O callbacks: user data is the unretained FileCursor the decoder holds.

private func sndfileLength(_ context: UnsafeMutableRawPointer?) -> sf_count_t {
    let cursor = Unmanaged<FileCursor>.fromOpaque(context!).takeUnretainedValue()
    return cursor.length.map { sf_count_t($0) } ?? -1
}

private func sndfileSeek(_ offset: sf_count_t, _ whence: Int32, _ context: UnsafeMutableRawPointer?) -> sf_count_t {
    let cursor = Unmanaged<FileCursor>.fromOpaque(context!).takeUnretainedValue()
    let base: Int64?
    switch whence {
    case SEEK_SET: base = 0
    case SEEK_CUR: base = cursor.position
    case SEEK_END: base = cursor.length
    default: base = nil
    }
    // The offset comes from chunk sizes in the file: a sum past Int64 is a failed seek, not a trap.
    guard let base, case (let target, false) = base.addingReportingOverflow(Int64(offset)), cursor.seek(to: target)
    else { return -1 }
    return sf_count_t(cursor.position)
}

private func sndfileRead(
    _ buffer: UnsafeMutableRawPointer?, _ count: sf_count_t, _ context: UnsafeMutableRawPointer?
) -> sf_count_t {
    let cursor = Unmanaged<FileCursor>.fromOpaque(context!).takeUnretainedValue()
    return sf_count_t(cursor.read(into: buffer!, count: Int(count)))
}

private func sndfileTell(_ context: UnsafeMutableRawPointer?) -> sf_count_t {
    let cursor = Unmanaged<FileCursor>.fromOpaque(context!).takeUnretainedValue()
    return sf_count_t(cursor.position)
}

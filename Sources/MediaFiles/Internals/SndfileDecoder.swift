// libsndfile behind the same pull interface as the FLAC decoder; used for WAV (RIFF, RF64).

internal import CSndfile

/// Decodes one WAV file with libsndfile, which scales integer PCM by 2^(bits-1) to floats
/// (its default normalisation) and passes float PCM through unchanged.
///
/// Owns the `SNDFILE *` (closed in `deinit`). One thread at a time.
final class SndfileDecoder {
    let path: String
    let sampleRate: Int
    let channels: Int
    let bitsPerSample: Int
    let totalFrames: Int?

    private let file: OpaquePointer

    init(path: String) throws(MediaError) {
        self.path = path
        var info = SF_INFO()
        guard let file = sf_open(path, Int32(SFM_READ), &info) else {
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

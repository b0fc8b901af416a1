// The one error type of this module.

/// Why an audio file could not be read, written or converted: the kind, the file, and a message
/// for a person that says what to do about it.
///
/// Environment failures (a missing file, a file that is not FLAC or WAV, a damaged file, a full
/// disk) are thrown as this. Programmer errors (writing to a finished encoder, a buffer that is
/// not a whole number of frames) trap instead.
public struct MediaError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, in the terms a caller acts on.
    public enum Kind: String, Equatable, Hashable, Sendable {
        /// The file does not exist (`ENOENT`, `ENOTDIR`).
        case notFound
        /// A file that must be new already exists (`EEXIST`): recd never overwrites one.
        case alreadyExists
        /// Not a FLAC or WAV file (by its first bytes), or a variant the libraries cannot read.
        case unsupportedFormat
        /// A FLAC or WAV file whose contents are damaged or cut short.
        case corrupt
        /// A setting outside what the format allows (channels, bits, sample rate, level).
        case invalidArgument
        /// The operating system failed a read or write (permissions, full disk, I/O error);
        /// `errno` says which when it is known.
        case io
        /// libFLAC's encoder stopped for a reason of its own; `encoderState` says which.
        case encoderFailed
    }

    public var kind: Kind
    /// The file involved; empty for a stream that is not a file.
    public var path: String
    /// What happened and what to do, e.g. "… convert it to FLAC or WAV with `flac` or `sox`
    /// (e.g. `sox IN out.flac`)".
    public var message: String
    /// The C `errno` captured by the call that failed, when the failure came from the OS.
    public var errno: Int32?
    /// libFLAC's encoder state after the failure, for encoder errors.
    public var encoderState: FLACEncoderState?

    public init(
        _ kind: Kind, path: String, message: String, errno: Int32? = nil,
        encoderState: FLACEncoderState? = nil
    ) {
        self.kind = kind
        self.path = path
        self.message = message
        self.errno = errno
        self.encoderState = encoderState
    }

    /// `"corrupt: /srv/jingles/a.flac: …"`.
    public var description: String {
        path.isEmpty ? "\(kind.rawValue): \(message)" : "\(kind.rawValue): \(path): \(message)"
    }

    /// The advice every "cannot read this" message ends with.
    static let convertAdvice =
        "convert it to FLAC or WAV with `flac` or `sox` (e.g. `sox IN out.flac`)"
}

/// libFLAC's stream encoder states (`FLAC__StreamEncoderState` in FLAC/stream_encoder.h),
/// under Swift names.
public enum FLACEncoderState: String, Equatable, Hashable, Sendable {
    /// FLAC__STREAM_ENCODER_OK (0): ready for audio.
    case ok
    /// FLAC__STREAM_ENCODER_UNINITIALIZED (1): not initialised, or finished.
    case uninitialized
    /// FLAC__STREAM_ENCODER_OGG_ERROR (2): the Ogg layer failed (recd writes native FLAC).
    case oggError
    /// FLAC__STREAM_ENCODER_VERIFY_DECODER_ERROR (3): the verify decoder failed.
    case verifyDecoderError
    /// FLAC__STREAM_ENCODER_VERIFY_MISMATCH_IN_AUDIO_DATA (4): verification found a mismatch.
    case verifyMismatchInAudioData
    /// FLAC__STREAM_ENCODER_CLIENT_ERROR (5): a write/seek/tell callback reported failure.
    case clientError
    /// FLAC__STREAM_ENCODER_IO_ERROR (6): libFLAC's own file I/O failed (full disk…).
    case ioError
    /// FLAC__STREAM_ENCODER_FRAMING_ERROR (7): a frame could not be built.
    case framingError
    /// FLAC__STREAM_ENCODER_MEMORY_ALLOCATION_ERROR (8): out of memory.
    case memoryAllocationError

    init(cValue: UInt32) {
        switch cValue {
        case 0: self = .ok
        case 1: self = .uninitialized
        case 2: self = .oggError
        case 3: self = .verifyDecoderError
        case 4: self = .verifyMismatchInAudioData
        case 5: self = .clientError
        case 6: self = .ioError
        case 7: self = .framingError
        default: self = .memoryAllocationError
        }
    }
}

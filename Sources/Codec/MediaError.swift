// The one error type of this module.

import Platform

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
    /// The failed system call behind it, when the failure came from the OS (its `errno`
    /// says which).
    public var cause: SystemError?
    /// libFLAC's encoder state after the failure, for encoder errors.
    public var encoderState: FLACEncoderState?
    /// libFLAC's init status, when the encoder refused its settings.
    public var encoderInitStatus: FLACEncoderInitStatus?

    public init(
        _ kind: Kind, path: String, message: String, cause: SystemError? = nil,
        encoderState: FLACEncoderState? = nil, encoderInitStatus: FLACEncoderInitStatus? = nil
    ) {
        self.kind = kind
        self.path = path
        self.message = message
        self.cause = cause
        self.encoderState = encoderState
        self.encoderInitStatus = encoderInitStatus
    }

    /// `"corrupt: /srv/jingles/a.flac: …"`.
    public var description: String {
        path.isEmpty ? "\(kind.rawValue): \(message)" : "\(kind.rawValue): \(path): \(message)"
    }

    /// `strerror` text and the number, for messages: `No space left on device (errno 28)`.
    static func describe(_ error: SystemError) -> String {
        "\(error.message) (errno \(error.errno.rawValue))"
    }

    /// The advice every "cannot read this" message ends with.
    static let convertAdvice =
        "convert it to FLAC or WAV with `flac` or `sox` (e.g. `sox IN out.flac`)"
}

/// libFLAC's stream encoder state (`FLAC__StreamEncoderState` in FLAC/stream_encoder.h) under
/// Swift names; raw values are the C values. A plain value: any thread.
public enum FLACEncoderState: UInt32, Hashable, Sendable, CaseIterable {
    /// FLAC__STREAM_ENCODER_OK (0): ready for audio.
    case ok = 0
    /// FLAC__STREAM_ENCODER_UNINITIALIZED (1): not initialised, or finished.
    case uninitialized = 1
    /// FLAC__STREAM_ENCODER_OGG_ERROR (2): the Ogg layer failed (recd writes native FLAC).
    case oggError = 2
    /// FLAC__STREAM_ENCODER_VERIFY_DECODER_ERROR (3): the verify decoder failed.
    case verifyDecoderError = 3
    /// FLAC__STREAM_ENCODER_VERIFY_MISMATCH_IN_AUDIO_DATA (4): verification found a mismatch.
    case verifyMismatchInAudioData = 4
    /// FLAC__STREAM_ENCODER_CLIENT_ERROR (5): a write, seek or tell callback reported failure.
    case clientError = 5
    /// FLAC__STREAM_ENCODER_IO_ERROR (6): libFLAC's own file I/O failed (full disk…).
    case ioError = 6
    /// FLAC__STREAM_ENCODER_FRAMING_ERROR (7): a frame could not be built.
    case framingError = 7
    /// FLAC__STREAM_ENCODER_MEMORY_ALLOCATION_ERROR (8): out of memory.
    case memoryAllocationError = 8
    /// A value this version of recd does not know.
    case unknown = 0xFFFF_FFFF

    init(cValue: UInt32) { self = FLACEncoderState(rawValue: cValue) ?? .unknown }

    /// The Swift name, e.g. `clientError`.
    public var name: String { "\(self)" }
}

/// libFLAC's stream encoder init status (`FLAC__StreamEncoderInitStatus`) under Swift names;
/// raw values are the C values. A plain value: any thread.
public enum FLACEncoderInitStatus: UInt32, Hashable, Sendable, CaseIterable {
    case ok = 0
    case encoderError = 1
    case unsupportedContainer = 2
    case invalidCallbacks = 3
    case invalidNumberOfChannels = 4
    case invalidBitsPerSample = 5
    case invalidSampleRate = 6
    case invalidBlockSize = 7
    case invalidMaxLPCOrder = 8
    case invalidQLPCoeffPrecision = 9
    case blockSizeTooSmallForLPCOrder = 10
    case notStreamable = 11
    case invalidMetadata = 12
    case alreadyInitialized = 13
    /// A value this version of recd does not know.
    case unknown = 0xFFFF_FFFF

    init(cValue: UInt32) { self = FLACEncoderInitStatus(rawValue: cValue) ?? .unknown }

    /// The Swift name, e.g. `invalidSampleRate`.
    public var name: String { "\(self)" }
}

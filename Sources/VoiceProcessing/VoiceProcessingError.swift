// The voice processing library's failures as a typed error that says what to do.

/// Why voice processing could not be set up or could not process a chunk. `code` mirrors
/// `webrtc::AudioProcessing::Error`, the library's negative return codes; the daemon maps
/// these to SessionError at its edge (`badParam` for a configuration the library refuses,
/// `resourceNotAvailable` otherwise).
public struct VoiceProcessingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The library's error codes (audio_processing.h, `AudioProcessing::Error`).
    public enum Code: Int32, Sendable {
        /// kUnspecifiedError (-1).
        case unspecified = -1
        /// kCreationFailedError (-2): the module could not be created (memory).
        case creationFailed = -2
        /// kUnsupportedComponentError (-3).
        case unsupportedComponent = -3
        /// kUnsupportedFunctionError (-4).
        case unsupportedFunction = -4
        /// kNullPointerError (-5).
        case nullPointer = -5
        /// kBadParameterError (-6): a value out of the library's range.
        case badParameter = -6
        /// kBadSampleRateError (-7): a rate the library cannot process.
        case badSampleRate = -7
        /// kBadDataLengthError (-8).
        case badDataLength = -8
        /// kBadNumberChannelsError (-9): a channel count the library cannot process.
        case badNumberOfChannels = -9
        /// kFileError (-10).
        case file = -10
        /// kStreamParameterNotSetError (-11): the echo path delay was not given.
        case streamParameterNotSet = -11
        /// kNotEnabledError (-12).
        case notEnabled = -12
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// The error for a negative library status (an unknown one counts as unspecified).
    init(status: Int32, doing what: String) {
        let code = Code(rawValue: status) ?? .unspecified
        self.init(code, message: "voice processing could not \(what): the library said \(code) (\(status))")
    }

    public var description: String { message }
}

// Error codes of SPEC §2: AVAudioSession's FourCC values, a symbolic name, and a message
// that says what was wrong and what to do.

/// A failure code with its upstream numeric value (AVAudioSession.ErrorCode).
public enum ErrorCode: Int32, CaseIterable, Sendable, Codable {
    /// Invalid category, mode, option, policy or preference value or combination.
    case badParam = -50
    /// '!act': deactivation while the session's streams run.
    case isBusy = 560_030_580
    /// '!cat': an operation the category cannot do.
    case incompatibleCategory = 560_161_140
    /// '!int': a non-mixable activation that policy forbids from interrupting.
    case cannotInterruptOthers = 560_557_684
    /// '!pla': a player cannot start.
    case cannotStartPlaying = 561_015_905
    /// '!rec': a recorder cannot start.
    case cannotStartRecording = 561_145_187
    /// '!pri': a higher-priority non-mixable session is active.
    case insufficientPriority = 561_017_449
    /// '!res': no suitable port, or too many channels.
    case resourceNotAvailable = 561_145_203
    /// 'inac': the operation needs an active session.
    case sessionNotActive = 1_768_841_571
    /// '!ses': the session was deleted.
    case expiredSession = 561_210_739
    /// 'ent?': an input-capable session without a microphone usage description.
    case missingEntitlement = 1_701_737_535
    /// 'msrv': the JACK server is gone.
    case mediaServicesFailed = 1_836_282_486
    /// '!own' (recd's own, not AVAudioSession's): a change to a session by a caller who is
    /// neither the session's owner nor an administrator.
    case notSessionOwner = 560_953_198
    /// '!adm' (recd's own): an administrators-only request from someone who is not one.
    case notAdministrator = 560_030_829
    /// 'what': anything else.
    case unspecified = 2_003_329_396

    /// The wire and CLI name, e.g. `badParam`.
    public var name: String { "\(self)" }

    public init?(name: String) {
        guard let code = ErrorCode.allCases.first(where: { $0.name == name }) else { return nil }
        self = code
    }

    /// The four characters behind the code, e.g. `!act`; nil for badParam (-50).
    public var fourCC: String? {
        guard rawValue > 0 else { return nil }
        let value = UInt32(bitPattern: rawValue)
        let bytes = [24, 16, 8, 0].map { UInt8((value >> UInt32($0)) & 0xFF) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A failed request: a code and a message for a person. Rejections change nothing.
public struct SessionError: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `NAME (CODE): MESSAGE`, the form recctl prints after `error: `.
    public var description: String { "\(code.name) (\(code.rawValue)): \(message)" }
}

extension SessionError {
    static func badParam(_ message: String) -> SessionError { SessionError(.badParam, message) }
}

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
///
/// What to do about it is said in the terms of the interface the caller used: a `remedy`,
/// when there is one, is worded when recd replies (`message(for:)`), so that a C program reads
/// "as_session_new's mic_usage" where recctl's user reads "--mic-usage". `message` is the
/// operator's wording (recctl's), for logs and recctl.
public struct SessionError: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: ErrorCode
    /// What was wrong, and what to do when that is the same for every interface.
    public var detail: String
    /// What the caller does about it, worded for its interface; nil when `detail` says it.
    public var remedy: Remedy?

    public init(_ code: ErrorCode, _ message: String, remedy: Remedy? = nil) {
        self.code = code
        self.detail = message
        self.remedy = remedy
    }

    /// The message for recctl and the log.
    public var message: String { message(for: .recctl) }

    /// The message for a caller of `interface`: the detail, then the remedy in its terms.
    public func message(for interface: CallerInterface) -> String {
        guard let remedy else { return detail }
        return detail + "; " + remedy.words(for: interface)
    }

    /// `NAME (CODE): MESSAGE`, the form recctl prints after `error: `.
    public var description: String { "\(code.name) (\(code.rawValue)): \(message)" }
}

extension SessionError {
    static func badParam(_ message: String, remedy: Remedy? = nil) -> SessionError {
        SessionError(.badParam, message, remedy: remedy)
    }
}

/// The interface a request came through (its `"interface"` on the wire): whose words an error's
/// remedy is said in.
public enum CallerInterface: String, Sendable, CaseIterable {
    /// A program that speaks the JSON protocol itself (a request without `"interface"`): the
    /// protocol's ops and keys.
    case `protocol`
    /// recctl: its commands and flags.
    case recctl
    /// The Swift AudioSession library: its initializer and methods.
    case swift = "AudioSession"
    /// libaudiosession: its C functions and arguments.
    case c = "libaudiosession"
}

/// What a caller does about an error, as a value; `words(for:)` says it in the terms of the
/// caller's interface. The one place where a fix names a recctl flag, a C function, a Swift
/// method or a protocol key.
public enum Remedy: Equatable, Sendable {
    /// Give the session a microphone usage description (input categories need one).
    case declareMicUsage
    /// Configure the session: create it, or (`again`) configure it again after a delete.
    case configure(app: String, again: Bool)
    /// Stop the session's players and recorders, or deactivate it anyway.
    case stopStreamsOrForce(app: String)
    /// Add this mode, or drop the option that needs it.
    case addModeOrDropOption(Mode)
    /// Add this option in the same call.
    case addOption(CategoryOption)

    public func words(for interface: CallerInterface) -> String {
        switch (self, interface) {
        case (.declareMicUsage, .recctl): "set one with --mic-usage TEXT"
        case (.declareMicUsage, .c):
            "pass one as as_session_new's mic_usage argument (a new session), then call as_set_category again"
        case (.declareMicUsage, .swift):
            "pass one as AudioSession(app:microphoneUsageDescription:) (a new session), then call setCategory again"
        case (.declareMicUsage, .protocol): "send one as \"micUsage\" with session.set"
        case (.configure(let app, let again), _):
            (again ? "configure it again with " : "create it with ") + Self.configuring(app, interface)
        case (.stopStreamsOrForce(let app), .recctl):
            "stop them first (`recctl stop \(app)`) or deactivate with --force"
        case (.stopStreamsOrForce, .protocol): "stop them first or send \"force\": true with session.deactivate"
        case (.stopStreamsOrForce(let app), .c), (.stopStreamsOrForce(let app), .swift):
            "stop them first (`recctl stop \(app)`)"
        case (.addModeOrDropOption(let mode), _): "add " + Self.mode(mode, interface) + " or drop the option"
        case (.addOption(let option), _): "add " + Self.option(option, interface)
        }
    }

    private static func configuring(_ app: String, _ interface: CallerInterface) -> String {
        switch interface {
        case .recctl: "`recctl session set \(app) --category ...`"
        case .c: "as_set_category"
        case .swift: "setCategory(_:mode:options:policy:)"
        case .protocol: "session.set"
        }
    }

    private static func mode(_ mode: Mode, _ interface: CallerInterface) -> String {
        switch interface {
        case .recctl: "--mode \(mode.rawValue)"
        case .c: "mode \"\(mode.rawValue)\" (as_set_category's mode)"
        case .swift: "mode: .\(mode.rawValue)"
        case .protocol: "\"mode\": \"\(mode.rawValue)\""
        }
    }

    private static func option(_ option: CategoryOption, _ interface: CallerInterface) -> String {
        switch interface {
        case .recctl: "--options \(option.rawValue)"
        case .c: "\(option.cName) to as_set_category's options"
        case .swift: "options: [.\(option.rawValue)]"
        case .protocol: "\"\(option.rawValue)\" to \"options\""
        }
    }
}

extension CategoryOption {
    /// The option's macro in libaudiosession's header (`AS_OPTION_ALLOW_BLUETOOTH_HFP`).
    public var cName: String {
        switch self {
        case .mixWithOthers: "AS_OPTION_MIX_WITH_OTHERS"
        case .duckOthers: "AS_OPTION_DUCK_OTHERS"
        case .allowBluetoothHFP: "AS_OPTION_ALLOW_BLUETOOTH_HFP"
        case .defaultToSpeaker: "AS_OPTION_DEFAULT_TO_SPEAKER"
        case .interruptSpokenAudioAndMixWithOthers: "AS_OPTION_INTERRUPT_SPOKEN_AUDIO_AND_MIX_WITH_OTHERS"
        case .allowBluetoothA2DP: "AS_OPTION_ALLOW_BLUETOOTH_A2DP"
        case .allowAirPlay: "AS_OPTION_ALLOW_AIRPLAY"
        case .overrideMutedMicrophoneInterruption: "AS_OPTION_OVERRIDE_MUTED_MICROPHONE_INTERRUPTION"
        case .bluetoothHighQualityRecording: "AS_OPTION_BLUETOOTH_HIGH_QUALITY_RECORDING"
        }
    }
}

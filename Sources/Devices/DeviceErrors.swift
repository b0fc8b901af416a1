// Errors of the Devices module: a failed libasound call, and a bad control declaration.

import Platform

/// A failed libasound call: its return code (a negative errno, as libasound returns them),
/// what recd was doing, and a message for a person.
///
/// Thrown for environment failures (a card that cannot be opened, one that vanished mid-call);
/// the daemon reports them as SPEC §2 `unspecified` with this message.
public struct ALSAError: Error, Equatable, Sendable, CustomStringConvertible {
    /// libasound's return code, e.g. -13 (-EACCES) or -19 (-ENODEV: the card is gone).
    public var code: Int32
    /// What recd was doing, e.g. `open the control interface of hw:0`.
    public var operation: String
    /// What went wrong and what to do about it.
    public var message: String

    public init(code: Int32, operation: String, message: String) {
        self.code = code
        self.operation = operation
        self.message = message
    }

    /// The error for `code`, with snd_strerror's text and advice where there is some.
    init(code: Int32, operation: String) {
        var message = alsaErrorText(code)
        switch Errno(rawValue: -code) {
        case .permissionDenied, .notPermitted:
            message += "; run recd as a user in the group that owns /dev/snd (usually audio)"
        case .noSuchDevice, .noSuchFileOrDirectory, .noSuchDeviceOrAddress:
            message += "; the card was removed"
        case .resourceBusy:
            message += "; another program holds the device exclusively"
        default:
            break
        }
        self.init(code: code, operation: operation, message: message)
    }

    /// True when the card went away under the call.
    public var isDeviceGone: Bool {
        Errno(rawValue: -code) == .noSuchDevice || Errno(rawValue: -code) == .noSuchDeviceOrAddress
    }

    public var description: String { "\(operation): \(message) [ALSA error \(code)]" }
}

/// A control declaration that cannot be understood: the port it belongs to (when known),
/// which declaration (`sense` or `muteSwitch`), the text, and why it is wrong.
public struct DeviceBindingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The port whose declaration is wrong; nil when parsing a bare value.
    public var port: String?
    /// The config key or field: `sense`, `muteSwitch` or `port`.
    public var key: String
    /// The text as written.
    public var text: String
    /// What is wrong with it and how to write it.
    public var reason: String

    public init(port: String? = nil, key: String, text: String, reason: String) {
        self.port = port
        self.key = key
        self.text = text
        self.reason = reason
    }

    public var description: String {
        if key == "port" { return "port '\(text)': \(reason)" }
        let prefix = port.map { "port '\($0)': " } ?? ""
        return "\(prefix)\(key) '\(text)': \(reason)"
    }
}

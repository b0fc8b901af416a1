// libjack's own error and info messages. By default libjack prints them to stderr; recd keeps
// the latest error to put in the JackError it throws, and leaves logging to the daemon.

internal import CJack
import Synchronization

enum JackMessages {
    private static let lastError = Mutex<String>("")
    private static let installed: Bool = {
        jack_set_error_function(recdJackError)
        jack_set_info_function(recdJackInfo)
        return true
    }()

    /// Installs the handlers (process-wide, once).
    static func install() { _ = installed }

    static func record(_ message: String) { lastError.withLock { $0 = message } }

    /// The latest libjack error message, cleared.
    static func takeLastError() -> String {
        lastError.withLock { message in
            defer { message = "" }
            return message
        }
    }
}

private func recdJackError(_ message: UnsafePointer<CChar>?) {
    if let message { JackMessages.record(String(cString: message)) }
}

private func recdJackInfo(_ message: UnsafePointer<CChar>?) {}

extension JackError {
    /// This error with libjack's last message appended (if it printed one).
    func withLibjackMessage() -> JackError {
        let said = JackMessages.takeLastError()
        guard !said.isEmpty else { return self }
        var error = self
        error.message += " (libjack: \(said))"
        return error
    }
}

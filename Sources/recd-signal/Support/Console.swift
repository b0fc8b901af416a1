// Lines to stdout and stderr with write(2): unbuffered, so the ready line is never stuck in a
// stdio buffer when stdout is a pipe, and no shared FILE * (a global var Swift 6 rejects).
// Main thread only.

import Platform

enum Console {
    /// One line to stdout (for the `ready` line only: stdout carries nothing else).
    static func out(_ line: String) { writeAll(Descriptor.standardOutput, line + "\n") }

    /// One line to stderr, prefixed `recd-signal: `.
    static func error(_ line: String) { writeAll(Descriptor.standardError, "recd-signal: " + line + "\n") }

    /// Text as is to stderr (the help after a usage error).
    static func errorRaw(_ text: String) { writeAll(Descriptor.standardError, text) }

    /// Text as is to stdout.
    static func outRaw(_ text: String) { writeAll(Descriptor.standardOutput, text) }

    private static func writeAll(_ descriptor: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bytes in
            // A failure is stdout closed (EPIPE: SIGPIPE is ignored): nobody is listening.
            try? Descriptor.writeAll(descriptor, UnsafeRawBufferPointer(bytes), path: nil)
        }
    }
}

/// recd-signal's exit statuses (the help lists them).
enum ExitStatus: Int32 {
    case ok = 0
    /// A JACK or I/O failure.
    case failure = 1
    case usage = 2
}

/// Why a command could not finish: a message for a person and the exit status.
struct Failure: Error {
    var status: ExitStatus
    var message: String

    static func jack(_ message: String) -> Failure { Failure(status: .failure, message: message) }
    static func usage(_ message: String) -> Failure { Failure(status: .usage, message: message) }
}

/// The description of the C errno value `code`.
func errnoDescription(_ code: Int32) -> String { Errno(rawValue: code).text }

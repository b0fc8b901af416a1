// Logging for a daemon under systemd: one line per message on stderr, priority in front.
import Platform
import Synchronization

/// Writes log lines to stderr with the `sd-daemon.h` priority prefixes (`<3>` = `SD_ERR` …
/// `<7>` = `SD_DEBUG`), which journald turns into the entry's priority.
///
/// Any thread: each message is formatted first and written with a single `write(2)`, so
/// lines from different threads do not interleave (pipes guarantee this up to `PIPE_BUF`,
/// 4096 bytes; journald's stream socket keeps whole writes together). A message with
/// embedded newlines becomes several lines, each with the prefix, in that one write.
/// Not for the JACK process thread: it allocates.
public enum Log {
    /// Syslog priorities, as `sd-daemon.h` defines them.
    public enum Level: Int32, Sendable, Comparable, CaseIterable, CustomStringConvertible {
        /// `SD_ERR`, `<3>`.
        case error = 3
        /// `SD_WARNING`, `<4>`.
        case warning = 4
        /// `SD_NOTICE`, `<5>`.
        case notice = 5
        /// `SD_INFO`, `<6>`.
        case info = 6
        /// `SD_DEBUG`, `<7>`.
        case debug = 7

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String {
            switch self {
            case .error: "error"
            case .warning: "warning"
            case .notice: "notice"
            case .info: "info"
            case .debug: "debug"
            }
        }
    }

    private static let thresholdStorage = Atomic<Int32>(Level.info.rawValue)

    /// The least severe level that is written; `.info` by default. Any thread.
    public static var threshold: Level {
        get { Level(rawValue: thresholdStorage.load(ordering: .relaxed)) ?? .info }
        set { thresholdStorage.store(newValue.rawValue, ordering: .relaxed) }
    }

    public static func error(_ message: @autoclosure () -> String) { log(.error, message) }
    public static func warning(_ message: @autoclosure () -> String) { log(.warning, message) }
    public static func notice(_ message: @autoclosure () -> String) { log(.notice, message) }
    public static func info(_ message: @autoclosure () -> String) { log(.info, message) }
    public static func debug(_ message: @autoclosure () -> String) { log(.debug, message) }

    /// Writes `message` at `level` if the threshold lets it through.
    public static func log(_ level: Level, _ message: () -> String) {
        guard level <= threshold else { return }
        let bytes = format(level, message())
        bytes.withUnsafeBytes { buffer in
            // Nowhere to report a failing stderr; drop the line.
            try? Descriptor.writeAll(Descriptor.standardError, buffer, path: nil)
        }
    }

    /// `"<3>first line\n<3>second line\n"`: every line of `message` with the prefix.
    static func format(_ level: Level, _ message: String) -> [UInt8] {
        let prefix = Array("<\(level.rawValue)>".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(message.utf8.count + prefix.count + 1)
        for line in message.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            bytes.append(contentsOf: prefix)
            bytes.append(contentsOf: line)
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }
}

// The error every POSIX call in this module throws.
import Glibc

/// A failed system call: which call, on which path, and the `errno` it left.
///
/// Thrown by the `Internals/Posix` wrappers, which capture `errno` in the same function that
/// made the call (nothing may run in between and overwrite it). Environment failures (a full
/// disk, a missing directory, a dead peer) arrive as this error; programmer errors (a bad
/// file descriptor we own) trap instead.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The C `errno` value, e.g. `ENOENT` (2) or `EACCES` (13).
    public var errno: Int32
    /// The call or step that failed, e.g. `"rename"` or `"open directory"`.
    public var operation: String
    /// The file or socket path involved, when there is one.
    public var path: String?

    public init(errno: Int32, operation: String, path: String? = nil) {
        self.errno = errno
        self.operation = operation
        self.path = path
    }

    /// `strerror` text for `errno` (glibc's `strerror` is thread-safe since 2.32).
    public var message: String {
        guard let text = strerror(errno) else { return "errno \(errno)" }
        return String(cString: text)
    }

    /// `"rename /var/lib/recd/state.json: No such file or directory (errno 2)"`.
    public var description: String {
        if let path {
            return "\(operation) \(path): \(message) (errno \(errno))"
        }
        return "\(operation): \(message) (errno \(errno))"
    }
}

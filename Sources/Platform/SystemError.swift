// The errors of every system call in the package: the C `errno` under Swift names, and the
// failed call that carries one.

/// A POSIX `errno` value. Each member mirrors the C constant its documentation names; a value
/// without a member is still carried (`Errno(rawValue:)`) and shown as `errno N`.
///
/// A plain value: any thread.
public struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    /// The C value (e.g. 28 for `ENOSPC`).
    public var rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `EPERM` (1): the operation is not permitted.
    public static let notPermitted = Errno(rawValue: _EPERM)

    /// `ENOENT` (2): no such file or directory.
    public static let noSuchFileOrDirectory = Errno(rawValue: _ENOENT)

    /// `EINTR` (4): a signal interrupted the call (the wrappers here retry it).
    public static let interrupted = Errno(rawValue: _EINTR)

    /// `EIO` (5): the storage or device reported an I/O error.
    public static let ioError = Errno(rawValue: _EIO)

    /// `ENXIO` (6): the device or address does not exist.
    public static let noSuchDeviceOrAddress = Errno(rawValue: _ENXIO)

    /// `EBADF` (9): not an open descriptor (or not open for this kind of access).
    public static let badFileDescriptor = Errno(rawValue: _EBADF)

    /// `EAGAIN` / `EWOULDBLOCK` (11): a non-blocking call would have to wait.
    public static let wouldBlock = Errno(rawValue: _EAGAIN)

    /// `ENOMEM` (12): out of memory.
    public static let noMemory = Errno(rawValue: _ENOMEM)

    /// `EACCES` (13): permission denied.
    public static let permissionDenied = Errno(rawValue: _EACCES)

    /// `EBUSY` (16): the resource is busy.
    public static let resourceBusy = Errno(rawValue: _EBUSY)

    /// `EEXIST` (17): the file exists.
    public static let fileExists = Errno(rawValue: _EEXIST)

    /// `EXDEV` (18): a link or rename across file systems.
    public static let crossDeviceLink = Errno(rawValue: _EXDEV)

    /// `ENODEV` (19): no such device (it was removed).
    public static let noSuchDevice = Errno(rawValue: _ENODEV)

    /// `ENOTDIR` (20): a path component is not a directory.
    public static let notDirectory = Errno(rawValue: _ENOTDIR)

    /// `EISDIR` (21): the path is a directory.
    public static let isDirectory = Errno(rawValue: _EISDIR)

    /// `EINVAL` (22): an argument is invalid (or the file system cannot do this).
    public static let invalidArgument = Errno(rawValue: _EINVAL)

    /// `ENFILE` (23): the system has too many open files.
    public static let tooManyOpenFilesInSystem = Errno(rawValue: _ENFILE)

    /// `EMFILE` (24): this process has too many open files.
    public static let tooManyOpenFiles = Errno(rawValue: _EMFILE)

    /// `EFBIG` (27): the file would grow past its limit.
    public static let fileTooLarge = Errno(rawValue: _EFBIG)

    /// `ENOSPC` (28): no space left on the device.
    public static let noSpace = Errno(rawValue: _ENOSPC)

    /// `ESPIPE` (29): the descriptor cannot seek (a pipe, a socket).
    public static let illegalSeek = Errno(rawValue: _ESPIPE)

    /// `EROFS` (30): the file system is mounted read-only.
    public static let readOnlyFileSystem = Errno(rawValue: _EROFS)

    /// `EPIPE` (32): the other end of a pipe or socket is gone.
    public static let brokenPipe = Errno(rawValue: _EPIPE)

    /// `ERANGE` (34): a result does not fit the buffer given.
    public static let outOfRange = Errno(rawValue: _ERANGE)

    /// `ENAMETOOLONG` (36): a path or name is too long.
    public static let nameTooLong = Errno(rawValue: _ENAMETOOLONG)

    /// `ENOSYS` (38): the kernel does not implement the call.
    public static let notImplemented = Errno(rawValue: _ENOSYS)

    /// `ENOTEMPTY` (39): the directory is not empty.
    public static let directoryNotEmpty = Errno(rawValue: _ENOTEMPTY)

    /// `ELOOP` (40): too many symbolic links, or one where none may be.
    public static let tooManySymbolicLinks = Errno(rawValue: _ELOOP)

    /// `EPROTO` (71): a protocol error (a connection failed while being accepted).
    public static let protocolError = Errno(rawValue: _EPROTO)

    /// `ENOTSOCK` (88): the descriptor is not a socket.
    public static let notSocket = Errno(rawValue: _ENOTSOCK)

    /// `EOPNOTSUPP` (95): the operation is not supported (here: by the file system).
    public static let notSupported = Errno(rawValue: _EOPNOTSUPP)

    /// `ECONNABORTED` (103): a connection was aborted before it was accepted.
    public static let connectionAborted = Errno(rawValue: _ECONNABORTED)

    /// `ECONNRESET` (104): the peer reset the connection.
    public static let connectionReset = Errno(rawValue: _ECONNRESET)

    /// `ENOBUFS` (105): the kernel has no buffer space left.
    public static let noBufferSpace = Errno(rawValue: _ENOBUFS)

    /// `ECONNREFUSED` (111): nothing listens at the address.
    public static let connectionRefused = Errno(rawValue: _ECONNREFUSED)

    /// `EINPROGRESS` (115): a non-blocking connect is under way.
    public static let nowInProgress = Errno(rawValue: _EINPROGRESS)

    /// `EDQUOT` (122): the user's disk quota is spent.
    public static let diskQuotaExceeded = Errno(rawValue: _EDQUOT)

    /// The C name, `ENOSPC`, `EACCES`, ...; `errno N` for a value without a member.
    public var name: String { Errno.names[rawValue] ?? "errno \(rawValue)" }

    /// The C library's text for it (`strerror`, thread-safe in glibc since 2.32).
    public var text: String { Syscall.errorText(rawValue) }

    /// `ENOSPC (No space left on device)`.
    public var description: String { "\(name) (\(text))" }

    private static let names: [Int32: String] = [
        _EPERM: "EPERM", _ENOENT: "ENOENT", _EINTR: "EINTR", _EIO: "EIO", _EBADF: "EBADF", _EAGAIN: "EAGAIN",
        _ENOMEM: "ENOMEM", _EACCES: "EACCES", _EBUSY: "EBUSY", _EEXIST: "EEXIST", _EXDEV: "EXDEV",
        _ENOTDIR: "ENOTDIR", _EISDIR: "EISDIR", _EINVAL: "EINVAL", _ENFILE: "ENFILE", _EMFILE: "EMFILE",
        _EFBIG: "EFBIG", _ENOSPC: "ENOSPC", _ESPIPE: "ESPIPE", _EROFS: "EROFS", _EPIPE: "EPIPE", _ERANGE: "ERANGE",
        _ENAMETOOLONG: "ENAMETOOLONG", _ENOSYS: "ENOSYS", _ENOTEMPTY: "ENOTEMPTY", _ENOTSOCK: "ENOTSOCK",
        _EOPNOTSUPP: "EOPNOTSUPP", _ECONNRESET: "ECONNRESET", _ECONNREFUSED: "ECONNREFUSED",
        _EINPROGRESS: "EINPROGRESS", _EDQUOT: "EDQUOT", _ENXIO: "ENXIO", _ENODEV: "ENODEV", _ELOOP: "ELOOP",
        _EPROTO: "EPROTO", _ENOBUFS: "ENOBUFS", _ECONNABORTED: "ECONNABORTED",
    ]
}

/// A failed system call: which call (or step), on which path, and the `errno` it left.
///
/// Thrown by everything in this module. The `Internals/Syscall` wrappers capture `errno` in
/// the same function that made the call (nothing may run in between and overwrite it).
/// Environment failures (a full disk, a missing directory, a dead peer) arrive as this error;
/// programmer errors (a bad descriptor we own) trap instead. Modules wrap it in their own
/// errors (`ArchiveError.system`, `MediaError`) with advice of their own. A plain value: any
/// thread.
public struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What the call left in `errno`.
    public var errno: Errno
    /// The call or step that failed, e.g. `"rename"` or `"open directory"`.
    public var operation: String
    /// The file or socket path involved, when there is one.
    public var path: String?

    public init(_ errno: Errno, operation: String, path: String? = nil) {
        self.errno = errno
        self.operation = operation
        self.path = path
    }

    /// For C APIs that return the error number instead of setting `errno` (pthreads, and
    /// libsystemd's negated codes once negated back).
    public init(errno code: Int32, operation: String, path: String? = nil) {
        self.init(Errno(rawValue: code), operation: operation, path: path)
    }

    /// `strerror` text for `errno`.
    public var message: String { errno.text }

    /// `"rename /var/lib/recd/state.json: No such file or directory (errno 2)"`.
    public var description: String {
        if let path {
            return "\(operation) \(path): \(message) (errno \(errno.rawValue))"
        }
        return "\(operation): \(message) (errno \(errno.rawValue))"
    }
}

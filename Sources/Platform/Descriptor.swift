// Calls on raw descriptors that someone else owns (a server's sockets, stderr, a pipe): I/O
// with non-blocking outcomes, flags, polling.

/// Outcome of one non-blocking read or write.
public enum IOOutcome: Equatable, Sendable {
    /// This many bytes moved (always > 0).
    case transferred(Int)
    /// `EAGAIN`/`EWOULDBLOCK`: try again after poll says so.
    case wouldBlock
    /// `read` returned 0: the peer shut down its sending side.
    case endOfFile
}

/// `poll(2)` event bits.
public struct PollEvents: OptionSet, Hashable, Sendable {
    public var rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }

    /// `POLLIN`: there is something to read (or an end of file).
    public static let readable = PollEvents(rawValue: _POLLIN)
    /// `POLLOUT`: a write would not block.
    public static let writable = PollEvents(rawValue: _POLLOUT)
    /// `POLLERR` (returned only): an error condition.
    public static let error = PollEvents(rawValue: _POLLERR)
    /// `POLLHUP` (returned only): the peer hung up.
    public static let hangUp = PollEvents(rawValue: _POLLHUP)
    /// `POLLNVAL` (returned only): the descriptor is not open.
    public static let invalid = PollEvents(rawValue: _POLLNVAL)
}

/// One descriptor to poll: what to wait for, and what `poll` returned.
public struct PollEntry: Hashable, Sendable {
    public var descriptor: Int32
    public var events: PollEvents
    public var returned: PollEvents

    public init(descriptor: Int32, events: PollEvents) {
        self.descriptor = descriptor
        self.events = events
        returned = []
    }
}

/// Calls on a descriptor the caller owns (this namespace owns nothing). Any thread.
public enum Descriptor {
    /// Standard input (0), output (1) and error (2).
    public static let standardInput: Int32 = 0
    public static let standardOutput: Int32 = 1
    public static let standardError: Int32 = 2

    /// `close(2)`. Errors are ignored on purpose: on Linux the descriptor is released even
    /// when `close` reports `EINTR` or `EIO`, and retrying could close someone else's.
    public static func close(_ fd: Int32) {
        _ = Syscall.close(fd)
    }

    /// `close(2)` where a failure matters (a file we wrote: NFS and quota errors show here);
    /// `EINTR` is not a failure.
    public static func closeChecked(_ fd: Int32, path: String) throws(SystemError) {
        if case .failure(let errno) = Syscall.close(fd), errno != .interrupted {
            throw SystemError(errno, operation: "close", path: path)
        }
    }

    /// `fcntl(F_SETFL, | O_NONBLOCK)`.
    public static func setNonBlocking(_ fd: Int32) throws(SystemError) {
        let flags = try Syscall.getStatusFlags(fd).orThrow("fcntl(F_GETFL)")
        if flags & _O_NONBLOCK != 0 { return }
        try Syscall.setStatusFlags(fd, flags | _O_NONBLOCK).orThrow("fcntl(F_SETFL)")
    }

    /// `fcntl(F_SETFD, FD_CLOEXEC)`.
    public static func setCloseOnExec(_ fd: Int32) throws(SystemError) {
        try Syscall.setCloseOnExec(fd).orThrow("fcntl(F_SETFD)")
    }

    /// The `open(2)` flags of `fd` (`fcntl(F_GETFL)`), reduced to what readers ask.
    public static func accessMode(_ fd: Int32, path: String) throws(SystemError) -> AccessMode {
        let flags = try Syscall.getStatusFlags(fd).orThrow("fcntl(F_GETFL)", path: path)
        if flags & _O_PATH != 0 { return .pathOnly }
        switch flags & _O_ACCMODE {
        case _O_RDONLY: return .readOnly
        case _O_WRONLY: return .writeOnly
        default: return .readWrite
        }
    }

    /// How a descriptor was opened.
    public enum AccessMode: Sendable {
        case readOnly, writeOnly, readWrite
        /// `O_PATH`: good for naming the file only, not for reading it.
        case pathOnly
    }

    /// `read(2)` once into `buffer`, with non-blocking outcomes.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOOutcome {
        switch Syscall.read(fd, buffer.baseAddress, buffer.count) {
        case .success(0): return .endOfFile
        case .success(let count): return .transferred(count)
        case .failure(.wouldBlock): return .wouldBlock
        case .failure(let errno): throw SystemError(errno, operation: "read")
        }
    }

    /// `write(2)` once, with non-blocking outcomes.
    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOOutcome {
        switch Syscall.write(fd, bytes.baseAddress, bytes.count) {
        case .success(0): return .wouldBlock
        case .success(let count): return .transferred(count)
        case .failure(.wouldBlock): return .wouldBlock
        case .failure(let errno): throw SystemError(errno, operation: "write")
        }
    }

    /// `write(2)` until every byte is written, for blocking descriptors (files, stderr).
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String?) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            offset += try Syscall.write(fd, bytes.baseAddress! + offset, bytes.count - offset).orThrow(
                "write", path: path)
        }
    }

    /// Reads a blocking descriptor to its end.
    public static func readAll(_ fd: Int32, path: String) throws(SystemError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try chunk.withUnsafeMutableBytes { buffer in
                Syscall.read(fd, buffer.baseAddress, buffer.count)
            }.orThrow("read", path: path)
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// `poll(2)`; fills each entry's `returned`. Returns the number of ready descriptors;
    /// `EINTR` counts as 0 ready. `timeoutMilliseconds` -1 waits without limit.
    public static func poll(_ entries: inout [PollEntry], timeoutMilliseconds: Int32) throws(SystemError) -> Int {
        switch Syscall.poll(&entries, timeoutMilliseconds) {
        case .success(let ready): return ready
        case .failure(.interrupted): return 0
        case .failure(let errno): throw SystemError(errno, operation: "poll")
        }
    }
}

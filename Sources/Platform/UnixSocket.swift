// Unix-domain sockets: making, binding, listening, connecting, accepting, sending, receiving
// with passed descriptors (SCM_RIGHTS), and asking the kernel who the peer is.

/// Outcome of a non-blocking `connect` to a Unix socket path.
public enum ConnectOutcome: Equatable, Sendable {
    /// Something accepted (or queued) the connection: a live listener.
    case connected
    /// Nothing listens on the path (`ECONNREFUSED`): a stale socket file.
    case refused
    /// The path does not exist (any more).
    case missing
}

/// What one `recvmsg` brought in: bytes, and the descriptors that came with them.
public struct Reception: Sendable {
    public var outcome: IOOutcome
    /// Descriptors passed with these bytes (SCM_RIGHTS), already close-on-exec. The caller
    /// owns them, whatever the outcome.
    public var descriptors: [Int32] = []
    /// The kernel could not deliver all the control data (`MSG_CTRUNC`): the sender passed
    /// more than `UnixSocket.descriptorSlots`, or this process is out of descriptors. Those
    /// that did arrive are in `descriptors`.
    public var truncated = false
}

/// What `SO_PEERCRED` says about the process at the other end, as of its `connect`.
public struct PeerIdentity: Hashable, Sendable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
}

/// Unix-domain socket calls on descriptors the caller owns. Any thread.
public enum UnixSocket {
    /// Longest socket path accepted (`sun_path` less its terminating NUL): 107 bytes.
    public static let maxPathBytes = Syscall.maxUnixPathBytes

    /// `SOCK_STREAM`, for C libraries that ask about a socket's type (`sd_is_socket_unix`).
    public static let streamType = Syscall.streamSocketType

    /// Most descriptors one `receive` takes in, and one `send(_:passing:)` may pass.
    public static let descriptorSlots = Syscall.descriptorSlots

    /// A new close-on-exec Unix stream (or datagram) socket. The caller owns it.
    public static func make(datagram: Bool = false, nonBlocking: Bool = false) throws(SystemError) -> Int32 {
        try Syscall.unixSocket(datagram: datagram, nonBlocking: nonBlocking).orThrow("socket")
    }

    /// `bind(2)` to a file system path (`ENAMETOOLONG` past `maxPathBytes`).
    public static func bind(_ fd: Int32, path: String) throws(SystemError) {
        try Syscall.bind(fd, path).orThrow("bind", path: path)
    }

    /// `listen(2)`.
    public static func listen(_ fd: Int32, backlog: Int32, path: String?) throws(SystemError) {
        try Syscall.listen(fd, backlog).orThrow("listen", path: path)
    }

    /// `connect(2)` on a blocking socket: returns once connected.
    public static func connect(_ fd: Int32, path: String) throws(SystemError) {
        try Syscall.connect(fd, path).orThrow("connect", path: path)
    }

    /// `connect(2)` on a non-blocking socket, to probe whether a listener is alive.
    public static func probeConnect(_ fd: Int32, path: String) throws(SystemError) -> ConnectOutcome {
        switch Syscall.connect(fd, path) {
        case .success: return .connected
        // A full backlog still means a live listener.
        case .failure(.wouldBlock), .failure(.nowInProgress): return .connected
        case .failure(.connectionRefused): return .refused
        case .failure(.noSuchFileOrDirectory): return .missing
        case .failure(let errno): throw SystemError(errno, operation: "connect", path: path)
        }
    }

    /// `accept(2)`, then `O_NONBLOCK` and `FD_CLOEXEC` on the new descriptor (`accept4` is
    /// not exported by the toolchain's Glibc module). Nil when no connection waits. The caller
    /// owns the returned descriptor.
    public static func accept(_ fd: Int32) throws(SystemError) -> Int32? {
        let client: Int32
        switch Syscall.accept(fd) {
        case .success(let accepted): client = accepted
        case .failure(.wouldBlock): return nil
        case .failure(let errno): throw SystemError(errno, operation: "accept")
        }
        do throws(SystemError) {
            try Descriptor.setCloseOnExec(client)
            try Descriptor.setNonBlocking(client)
        } catch {
            Descriptor.close(client)
            throw error
        }
        return client
    }

    /// `send(2)` with `MSG_NOSIGNAL | MSG_DONTWAIT`: a vanished peer yields `EPIPE` instead
    /// of a process-killing `SIGPIPE`.
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOOutcome {
        switch Syscall.send(fd, bytes, Syscall.sendFlagsNonBlocking) {
        case .success(0): return .wouldBlock
        case .success(let count): return .transferred(count)
        case .failure(.wouldBlock): return .wouldBlock
        case .failure(let errno): throw SystemError(errno, operation: "send")
        }
    }

    /// `recvmsg(2)` once into `buffer` with `MSG_CMSG_CLOEXEC | MSG_DONTWAIT`, collecting the
    /// descriptors of SCM_RIGHTS control messages. The caller owns the returned descriptors.
    ///
    /// On a stream socket, passed descriptors arrive with the `recvmsg` that reads the first
    /// byte of the `sendmsg` that carried them, and that `recvmsg` ends within (or at the end
    /// of) that `sendmsg`'s bytes: earlier bytes may come with it, later ones never.
    public static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError)
        -> Reception
    {
        try withUnsafeTemporaryAllocation(of: Int32.self, capacity: descriptorSlots) {
            slots throws(SystemError) -> Reception in
            var received: Int32 = 0
            var truncated: Int32 = 0
            let result = Syscall.receiveWithDescriptors(fd, buffer, slots.baseAddress!, &received, &truncated)
            var reception = Reception(outcome: .wouldBlock, truncated: truncated != 0)
            reception.descriptors = Array(slots.prefix(Int(received)))
            switch result {
            case .success(0): reception.outcome = .endOfFile
            case .success(let count): reception.outcome = .transferred(count)
            case .failure(.wouldBlock): break
            case .failure(let errno): throw SystemError(errno, operation: "recvmsg")
            }
            return reception
        }
    }

    /// `sendmsg(2)` of `bytes` with `descriptors` (at most `descriptorSlots`) as one SCM_RIGHTS
    /// message, `MSG_NOSIGNAL`, blocking. Returns the bytes sent (the descriptors went with the
    /// first). The caller keeps its descriptors: the receiver gets duplicates.
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, passing descriptors: [Int32])
        throws(SystemError) -> Int
    {
        try Syscall.sendWithDescriptors(fd, bytes, descriptors).orThrow("sendmsg")
    }

    /// `getsockopt(SO_PEERCRED)`: the peer's pid, uid and gid at connect time.
    public static func peerIdentity(_ fd: Int32) throws(SystemError) -> PeerIdentity {
        let (pid, uid, gid) = try Syscall.peerCredentials(fd).orThrow("getsockopt(SO_PEERCRED)")
        return PeerIdentity(pid: pid, uid: uid, gid: gid)
    }

    /// `getsockopt(SO_PEERGROUPS)` (Linux 4.13+): the peer's supplementary groups.
    public static func peerGroups(_ fd: Int32) throws(SystemError) -> [UInt32] {
        var capacity = 64
        while true {
            var groups = [UInt32](repeating: 0, count: capacity)
            var length = UInt32(capacity * MemoryLayout<UInt32>.size)
            switch Syscall.peerGroups(fd, &groups, &length) {
            case .success:
                return Array(groups.prefix(Int(length) / MemoryLayout<UInt32>.size))
            case .failure(let errno):
                // ERANGE reports the size needed in `length`.
                let needed = Int(length) / MemoryLayout<UInt32>.size
                if errno == .outOfRange && needed > capacity && needed <= 1 << 16 {
                    capacity = needed
                    continue
                }
                throw SystemError(errno, operation: "getsockopt(SO_PEERGROUPS)")
            }
        }
    }
}

/// Sends a line with open descriptors over a Unix stream socket, the way a server that reads
/// with `UnixSocket.receive` can tell which line they came with: the whole line, newline
/// included, in the `sendmsg` that carries them, so that they arrive with its first byte.
public enum DescriptorPassing {
    /// Most descriptors one line may carry past the kernel; a server may allow fewer.
    public static let maxDescriptorsPerMessage = UnixSocket.descriptorSlots

    /// Writes `line` and a newline to `socket`, a connected, blocking Unix stream socket,
    /// passing `descriptors` with its first byte. Blocks until every byte is written.
    ///
    /// The caller keeps its descriptors (the receiver gets its own duplicates of the open
    /// files) and closes them when it likes. `line` must not contain a newline, and
    /// `descriptors` may hold at most `maxDescriptorsPerMessage`.
    public static func sendLine(_ line: String, passing descriptors: [Int32], over socket: Int32)
        throws(SystemError)
    {
        precondition(!line.utf8.contains(UInt8(ascii: "\n")), "a control line must not contain a newline")
        precondition(descriptors.count <= maxDescriptorsPerMessage, "too many descriptors for one line")
        let bytes = Array(line.utf8) + [UInt8(ascii: "\n")]
        var offset = 0
        var passing = descriptors
        while offset < bytes.count {
            // A signal can cut a blocking sendmsg short; the descriptors went with the first
            // part, so the rest follows without them.
            let sent = bytes.withUnsafeBytes { all in
                Result { () throws(SystemError) in
                    try UnixSocket.send(socket, UnsafeRawBufferPointer(rebasing: all[offset...]), passing: passing)
                }
            }
            offset += try sent.get()
            passing = []
        }
    }
}

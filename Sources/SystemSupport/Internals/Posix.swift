// The C contact of SystemSupport: one Swift function per libc call, nothing else.
//
// Rules for this file:
// - `errno` is read on the line right after the call that set it, inside the same function,
//   and turned into a `SystemError` before anything else can run.
// - `EINTR` is retried here, so callers never see it.
// - Every function documents who owns the descriptors it returns.
// - Callers above this folder never touch `Glibc` pointers or `sockaddr` layouts.
internal import CLinux
import Glibc

/// Outcome of one non-blocking read or write.
enum IOOutcome: Equatable {
    /// This many bytes moved (always > 0).
    case transferred(Int)
    /// `EAGAIN`/`EWOULDBLOCK`: try again after poll says so.
    case wouldBlock
    /// `read` returned 0: the peer shut down its sending side.
    case endOfFile
}

/// What one `recvmsg` brought in: bytes, and the descriptors that came with them.
struct Reception {
    var outcome: IOOutcome
    /// Descriptors passed with these bytes (SCM_RIGHTS), already close-on-exec. The caller
    /// owns them, whatever the outcome.
    var descriptors: [Int32] = []
    /// The kernel could not deliver all the control data (`MSG_CTRUNC`): the sender passed
    /// more than `Posix.descriptorSlots`, or this process is out of descriptors. Those that
    /// did arrive are in `descriptors`.
    var truncated = false
}

/// Outcome of a non-blocking `connect` to a Unix socket path.
enum ConnectOutcome: Equatable {
    /// Something accepted (or queued) the connection: a live listener.
    case connected
    /// Nothing listens on the path (`ECONNREFUSED`): a stale socket file.
    case refused
    /// The path does not exist (any more).
    case missing
}

/// What a path names, from `lstat`.
enum FileKind: Equatable {
    case missing, socket, directory, other
}

/// The `struct ucred` that `SO_PEERCRED` fills. Declared here because the toolchain's Glibc
/// module only exposes it under `_GNU_SOURCE`; its layout (`pid_t`, `uid_t`, `gid_t`) is
/// Linux ABI and does not change.
struct LinuxPeerCredentials {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

enum Posix {
    // MARK: Time

    /// `CLOCK_MONOTONIC` in seconds. Any thread.
    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1_000_000_000
    }

    // MARK: Descriptors

    /// `close(2)`. Errors are ignored on purpose: on Linux the descriptor is released even
    /// when `close` reports `EINTR` or `EIO`, and retrying could close someone else's fd.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// `fcntl(F_SETFL, | O_NONBLOCK)`.
    static func setNonBlocking(_ fd: Int32) throws(SystemError) {
        let flags = fcntl(fd, F_GETFL)
        if flags < 0 { throw SystemError(errno: Glibc.errno, operation: "fcntl(F_GETFL)") }
        if flags & O_NONBLOCK != 0 { return }
        if fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 {
            throw SystemError(errno: Glibc.errno, operation: "fcntl(F_SETFL)")
        }
    }

    /// `fcntl(F_SETFD, FD_CLOEXEC)`.
    static func setCloseOnExec(_ fd: Int32) throws(SystemError) {
        if fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 {
            throw SystemError(errno: Glibc.errno, operation: "fcntl(F_SETFD)")
        }
    }

    /// `read(2)` once into `buffer`, non-blocking semantics.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOOutcome
    {
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count > 0 { return .transferred(count) }
            if count == 0 { return .endOfFile }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(errno: code, operation: "read")
        }
    }

    /// `write(2)` once, non-blocking semantics.
    static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOOutcome {
        while true {
            let count = Glibc.write(fd, bytes.baseAddress, bytes.count)
            if count >= 0 { return count == 0 ? .wouldBlock : .transferred(count) }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(errno: code, operation: "write")
        }
    }

    /// `write(2)` until every byte is written, for blocking descriptors (files, stderr).
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String?) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let count = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if count < 0 {
                let code = Glibc.errno
                if code == EINTR { continue }
                throw SystemError(errno: code, operation: "write", path: path)
            }
            offset += count
        }
    }

    /// `poll(2)`. Returns the number of ready descriptors; `EINTR` counts as 0 ready.
    static func poll(_ fds: inout [pollfd], timeoutMilliseconds: Int32) throws(SystemError) -> Int {
        let ready = fds.withUnsafeMutableBufferPointer { buffer in
            Glibc.poll(buffer.baseAddress, nfds_t(buffer.count), timeoutMilliseconds)
        }
        if ready >= 0 { return Int(ready) }
        let code = Glibc.errno
        if code == EINTR { return 0 }
        throw SystemError(errno: code, operation: "poll")
    }

    // MARK: Sockets

    /// `socket(AF_UNIX, type | SOCK_CLOEXEC, 0)`. The caller owns the returned descriptor.
    static func unixSocket(type: Int32) throws(SystemError) -> Int32 {
        let fd = Glibc.socket(AF_UNIX, type | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd < 0 { throw SystemError(errno: Glibc.errno, operation: "socket") }
        return fd
    }

    /// Longest `sun_path` we accept, leaving room for the terminating NUL.
    static let maxUnixPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Runs `body` with a `sockaddr_un` for `path`; throws `ENAMETOOLONG` for long paths.
    private static func withUnixAddress<R>(
        _ path: String, operation: String,
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
    ) throws(SystemError) -> R {
        let bytes = Array(path.utf8)
        if bytes.count > maxUnixPathBytes || bytes.isEmpty || bytes.contains(0) {
            throw SystemError(errno: ENAMETOOLONG, operation: operation, path: path)
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { sunPath in
            sunPath.copyBytes(from: bytes)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    /// `bind(2)` to a filesystem path.
    static func bind(_ fd: Int32, path: String) throws(SystemError) {
        let (result, code) = try withUnixAddress(path, operation: "bind") { address, length in
            let result = Glibc.bind(fd, address, length)
            return (result, result < 0 ? Glibc.errno : 0)
        }
        if result < 0 { throw SystemError(errno: code, operation: "bind", path: path) }
    }

    /// `listen(2)`.
    static func listen(_ fd: Int32, backlog: Int32, path: String?) throws(SystemError) {
        if Glibc.listen(fd, backlog) < 0 {
            throw SystemError(errno: Glibc.errno, operation: "listen", path: path)
        }
    }

    /// `connect(2)` on a non-blocking socket, to probe whether a listener is alive.
    static func probeConnect(_ fd: Int32, path: String) throws(SystemError) -> ConnectOutcome {
        let (result, code) = try withUnixAddress(path, operation: "connect") { address, length in
            while true {
                let result = Glibc.connect(fd, address, length)
                let code = result < 0 ? Glibc.errno : 0
                if code != EINTR { return (result, code) }
            }
        }
        if result == 0 { return .connected }
        switch code {
        // A full backlog still means a live listener.
        case EAGAIN, EINPROGRESS: return .connected
        case ECONNREFUSED: return .refused
        case ENOENT: return .missing
        default: throw SystemError(errno: code, operation: "connect", path: path)
        }
    }

    /// `accept(2)`, then `O_NONBLOCK` and `FD_CLOEXEC` on the new descriptor (`accept4` is
    /// not exported by the toolchain's Glibc module). Returns nil when no connection waits.
    /// The caller owns the returned descriptor.
    static func accept(_ fd: Int32) throws(SystemError) -> Int32? {
        while true {
            let client = Glibc.accept(fd, nil, nil)
            if client >= 0 {
                do throws(SystemError) {
                    try setCloseOnExec(client)
                    try setNonBlocking(client)
                } catch {
                    close(client)
                    throw error
                }
                return client
            }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return nil }
            throw SystemError(errno: code, operation: "accept")
        }
    }

    /// `send(2)` with `MSG_NOSIGNAL | MSG_DONTWAIT`: a vanished peer yields `EPIPE` instead
    /// of a process-killing `SIGPIPE`.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOOutcome {
        let flags = Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)
        while true {
            let count = Glibc.send(fd, bytes.baseAddress, bytes.count, flags)
            if count >= 0 { return count == 0 ? .wouldBlock : .transferred(count) }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(errno: code, operation: "send")
        }
    }

    /// Most descriptors one `receive` takes in (the CLinux shim's control buffer).
    static let descriptorSlots = Int(RECD_DESCRIPTOR_SLOTS)

    /// `recvmsg(2)` once into `buffer` with `MSG_CMSG_CLOEXEC | MSG_DONTWAIT`, collecting the
    /// descriptors of SCM_RIGHTS control messages. The caller owns the returned descriptors.
    ///
    /// On a Unix stream socket, passed descriptors arrive with the `recvmsg` that reads the
    /// first byte of the `sendmsg` that carried them, and that `recvmsg` ends within (or at
    /// the end of) that `sendmsg`'s bytes: earlier bytes may come with it, later ones never.
    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Reception {
        try withUnsafeTemporaryAllocation(of: Int32.self, capacity: descriptorSlots) {
            slots throws(SystemError) -> Reception in
            var received: Int32 = 0
            var truncated: Int32 = 0
            while true {
                let count = recd_receive_with_descriptors(
                    fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), slots.baseAddress,
                    &received, &truncated)
                let code = count < 0 ? Glibc.errno : 0
                var reception = Reception(outcome: .wouldBlock, truncated: truncated != 0)
                reception.descriptors = Array(slots.prefix(Int(received)))
                if count > 0 {
                    reception.outcome = .transferred(count)
                    return reception
                }
                if count == 0 {
                    reception.outcome = .endOfFile
                    return reception
                }
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK { return reception }
                throw SystemError(errno: code, operation: "recvmsg")
            }
        }
    }

    /// `sendmsg(2)` of `bytes` with `descriptors` (at most `descriptorSlots`) as one SCM_RIGHTS
    /// message, `MSG_NOSIGNAL`, blocking. Returns the bytes sent (the descriptors went with
    /// the first). The caller keeps its descriptors: the receiver gets duplicates.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, passing descriptors: [Int32]) throws(SystemError)
        -> Int
    {
        while true {
            let count = descriptors.withUnsafeBufferPointer { passed in
                recd_send_with_descriptors(
                    fd, bytes.baseAddress, bytes.count, passed.baseAddress, Int32(passed.count),
                    Int32(MSG_NOSIGNAL))
            }
            if count >= 0 { return count }
            let code = Glibc.errno
            if code == EINTR { continue }
            throw SystemError(errno: code, operation: "sendmsg")
        }
    }

    /// `getsockopt(SO_PEERCRED)`: the peer's pid, uid and gid at connect time.
    static func peerCredentials(_ fd: Int32) throws(SystemError) -> LinuxPeerCredentials {
        var credentials = LinuxPeerCredentials()
        var length = socklen_t(MemoryLayout<LinuxPeerCredentials>.size)
        if getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) < 0 {
            throw SystemError(errno: Glibc.errno, operation: "getsockopt(SO_PEERCRED)")
        }
        return credentials
    }

    /// `getsockopt(SO_PEERGROUPS)` (Linux 4.13+): the peer's supplementary groups.
    static func peerGroups(_ fd: Int32) throws(SystemError) -> [UInt32] {
        var capacity = 64
        while true {
            var groups = [UInt32](repeating: 0, count: capacity)
            var length = socklen_t(capacity * MemoryLayout<UInt32>.size)
            let (result, code) = groups.withUnsafeMutableBytes { buffer in
                let result = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, buffer.baseAddress, &length)
                return (result, result < 0 ? Glibc.errno : 0)
            }
            if result == 0 {
                return Array(groups.prefix(Int(length) / MemoryLayout<UInt32>.size))
            }
            // ERANGE reports the size needed in `length`.
            let needed = Int(length) / MemoryLayout<UInt32>.size
            if code == ERANGE && needed > capacity && needed <= 1 << 16 {
                capacity = needed
                continue
            }
            throw SystemError(errno: code, operation: "getsockopt(SO_PEERGROUPS)")
        }
    }

    /// `getpwuid_r` + `getgrouplist`: the groups the user database gives `uid`, including
    /// `gid`. Empty when the uid has no passwd entry.
    static func groupList(uid: UInt32, gid: UInt32) -> [UInt32] {
        var record = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var scratch = [CChar](repeating: 0, count: 16 * 1024)
        let found = scratch.withUnsafeMutableBufferPointer { buffer -> String? in
            let status = getpwuid_r(uid, &record, buffer.baseAddress!, buffer.count, &result)
            guard status == 0, result != nil, let name = record.pw_name else { return nil }
            return String(cString: name)
        }
        guard let name = found else { return [] }
        var count: Int32 = 32
        while true {
            var groups = [gid_t](repeating: 0, count: Int(count))
            var wanted = count
            let status = getgrouplist(name, gid, &groups, &wanted)
            if status >= 0 { return Array(groups.prefix(Int(wanted))) }
            // -1 means the list was too small; `wanted` now holds the size needed.
            if wanted <= count || wanted > 1 << 16 { return [] }
            count = wanted
        }
    }

    // MARK: Files

    /// `lstat(2)`, reduced to what the path names.
    static func fileKind(_ path: String) throws(SystemError) -> FileKind {
        var status = stat()
        if lstat(path, &status) < 0 {
            let code = Glibc.errno
            if code == ENOENT { return .missing }
            throw SystemError(errno: code, operation: "lstat", path: path)
        }
        switch status.st_mode & S_IFMT {
        case S_IFSOCK: return .socket
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    /// `mkdir(2)`; an existing directory is not an error.
    static func makeDirectory(_ path: String, mode: mode_t) throws(SystemError) {
        if mkdir(path, mode) < 0 {
            let code = Glibc.errno
            if code == EEXIST, (try? fileKind(path)) == .directory { return }
            throw SystemError(errno: code, operation: "mkdir", path: path)
        }
    }

    /// `chmod(2)`.
    static func changeMode(_ path: String, mode: mode_t) throws(SystemError) {
        if chmod(path, mode) < 0 { throw SystemError(errno: Glibc.errno, operation: "chmod", path: path) }
    }

    /// `fchmod(2)`.
    static func changeMode(_ fd: Int32, mode: mode_t, path: String) throws(SystemError) {
        if fchmod(fd, mode) < 0 { throw SystemError(errno: Glibc.errno, operation: "fchmod", path: path) }
    }

    /// `unlink(2)`; a missing file is not an error.
    static func unlink(_ path: String) throws(SystemError) {
        if Glibc.unlink(path) < 0 {
            let code = Glibc.errno
            if code == ENOENT { return }
            throw SystemError(errno: code, operation: "unlink", path: path)
        }
    }

    /// `open(2)` with `O_CLOEXEC` added. Returns nil for `ENOENT` when `missingIsNil`.
    /// The caller owns the returned descriptor.
    static func open(
        _ path: String, flags: Int32, mode: mode_t = 0, missingIsNil: Bool = false
    ) throws(SystemError) -> Int32? {
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
            if fd >= 0 { return fd }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == ENOENT && missingIsNil { return nil }
            throw SystemError(errno: code, operation: "open", path: path)
        }
    }

    /// `fsync(2)`.
    static func fsync(_ fd: Int32, path: String) throws(SystemError) {
        if Glibc.fsync(fd) < 0 { throw SystemError(errno: Glibc.errno, operation: "fsync", path: path) }
    }

    /// `close(2)` where a failure matters (a file we wrote: NFS and quota errors show here).
    static func closeChecked(_ fd: Int32, path: String) throws(SystemError) {
        if Glibc.close(fd) < 0 {
            let code = Glibc.errno
            if code != EINTR { throw SystemError(errno: code, operation: "close", path: path) }
        }
    }

    /// `rename(2)`.
    static func rename(_ from: String, to: String) throws(SystemError) {
        if Glibc.rename(from, to) < 0 {
            throw SystemError(errno: Glibc.errno, operation: "rename \(from) to", path: to)
        }
    }

    /// Reads a blocking descriptor to its end.
    static func readAll(_ fd: Int32, path: String) throws(SystemError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let (count, code) = chunk.withUnsafeMutableBytes { buffer in
                let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
                return (count, count < 0 ? Glibc.errno : 0)
            }
            if count == 0 { return bytes }
            if count < 0 {
                if code == EINTR { continue }
                throw SystemError(errno: code, operation: "read", path: path)
            }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    // MARK: Signals

    /// `pthread_sigmask(how, set)` for the calling thread.
    static func changeSignalMask(block: Bool, _ signals: [Int32]) throws(SystemError) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        // pthread_sigmask returns the error number instead of setting errno.
        let code = pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, nil)
        if code != 0 { throw SystemError(errno: code, operation: "pthread_sigmask") }
    }

    /// `signal(SIGPIPE, SIG_IGN)`.
    static func ignoreSignal(_ signo: Int32) {
        _ = Glibc.signal(signo, SIG_IGN)
    }
}

// The C contact of the package: one Swift function per C call, nothing else.
//
// Rules for this folder (swift-system's):
// - `errno` is read right after the call that set it, in the same function (`valueOrErrno`),
//   and returned as an `Errno` before anything else can run and overwrite it.
// - `EINTR` is retried here where a retry is safe (never for `close`), so callers never see it.
// - Every function that returns a descriptor says who owns it.
// - Nothing above this folder touches `Glibc` pointers, `stat` layouts or C constants.

internal import CLinux
import Glibc

/// `result`, or the `errno` the call that returned it left. Call it on the call's result
/// directly: nothing may run in between.
@inline(__always)
func valueOrErrno<T: FixedWidthInteger>(_ result: T) -> Result<T, Errno> {
    result < 0 ? .failure(Errno(rawValue: Glibc.errno)) : .success(result)
}

/// For calls that return 0 or -1.
@inline(__always)
func nothingOrErrno(_ result: Int32) -> Result<Void, Errno> {
    valueOrErrno(result).map { _ in () }
}

/// Repeats `call` while it fails with `EINTR`.
@inline(__always)
func retryingOnInterrupt<T>(_ call: () -> Result<T, Errno>) -> Result<T, Errno> {
    while true {
        let result = call()
        if case .failure(.interrupted) = result { continue }
        return result
    }
}

extension Result where Failure == Errno {
    /// The value, or a `SystemError` naming `operation` and `path`.
    func orThrow(_ operation: String, path: String? = nil) throws(SystemError) -> Success {
        switch self {
        case .success(let value): return value
        case .failure(let errno): throw SystemError(errno, operation: operation, path: path)
        }
    }
}

// File scope, where the C names are not shadowed by `Syscall`'s.
private func statPath(_ path: String, _ info: inout stat) -> Int32 { stat(path, &info) }
private func statFileSystem(_ path: String, _ info: inout statvfs) -> Int32 { statvfs(path, &info) }

enum Syscall {
    // MARK: errno

    /// `strerror(3)`.
    static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return String(cString: text)
    }

    // MARK: Descriptors

    /// `open(2)` with `O_CLOEXEC` added. The caller owns the returned descriptor.
    static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Result<Int32, Errno> {
        retryingOnInterrupt { valueOrErrno(Glibc.open(path, flags | O_CLOEXEC, mode)) }
    }

    /// `close(2)`. Never retried: Linux releases the descriptor even when `close` reports
    /// `EINTR` or `EIO`, and a retry could close a descriptor someone else just got.
    static func close(_ fd: Int32) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.close(fd))
    }

    /// `read(2)` once.
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Result<Int, Errno> {
        retryingOnInterrupt { valueOrErrno(Glibc.read(fd, buffer, count)) }
    }

    /// `write(2)` once.
    static func write(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Result<Int, Errno> {
        retryingOnInterrupt { valueOrErrno(Glibc.write(fd, bytes, count)) }
    }

    /// `pread(2)` once: at `offset`, leaving the descriptor's file offset alone.
    static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ offset: Int64)
        -> Result<Int, Errno>
    {
        retryingOnInterrupt { valueOrErrno(Glibc.pread(fd, buffer, count, off_t(offset))) }
    }

    /// `pwrite(2)` once.
    static func pwrite(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ offset: Int64)
        -> Result<Int, Errno>
    {
        retryingOnInterrupt { valueOrErrno(Glibc.pwrite(fd, bytes, count, off_t(offset))) }
    }

    /// `lseek(2)`; `fromStart` false: relative to the current offset.
    static func lseek(_ fd: Int32, _ offset: Int64, fromStart: Bool) -> Result<Int64, Errno> {
        valueOrErrno(Int64(Glibc.lseek(fd, off_t(offset), fromStart ? SEEK_SET : SEEK_CUR)))
    }

    /// `fstat(2)`.
    static func fstat(_ fd: Int32) -> Result<FileStatus, Errno> {
        var info = Glibc.stat()
        return nothingOrErrno(Glibc.fstat(fd, &info)).map { FileStatus(info) }
    }

    /// `fsync(2)`.
    static func fsync(_ fd: Int32) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.fsync(fd))
    }

    /// `fdatasync(2)`.
    static func fdatasync(_ fd: Int32) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.fdatasync(fd))
    }

    /// `ftruncate(2)`.
    static func ftruncate(_ fd: Int32, _ length: Int64) -> Result<Void, Errno> {
        retryingOnInterrupt { nothingOrErrno(Glibc.ftruncate(fd, off_t(length))) }
    }

    /// `fallocate(FALLOC_FL_KEEP_SIZE)`: blocks for [offset, offset+length), size unchanged.
    static func reserveSpace(_ fd: Int32, _ offset: Int64, _ length: Int64) -> Result<Void, Errno> {
        nothingOrErrno(recd_reserve_space(fd, offset, length))
    }

    /// `fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`.
    static func releaseSpace(_ fd: Int32, _ offset: Int64, _ length: Int64) -> Result<Void, Errno> {
        nothingOrErrno(recd_release_space(fd, offset, length))
    }

    /// `flock(LOCK_EX | LOCK_NB)`.
    static func lockExclusiveWithoutWaiting(_ fd: Int32) -> Result<Void, Errno> {
        nothingOrErrno(flock(fd, LOCK_EX | LOCK_NB))
    }

    /// `flock(LOCK_EX)`: waits for the lock (retried on `EINTR`).
    static func lockExclusive(_ fd: Int32) -> Result<Void, Errno> {
        retryingOnInterrupt { nothingOrErrno(flock(fd, LOCK_EX)) }
    }

    /// `fchmod(2)`.
    static func fchmod(_ fd: Int32, _ mode: UInt32) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.fchmod(fd, mode_t(mode)))
    }

    /// `fcntl(F_GETFL)`.
    static func getStatusFlags(_ fd: Int32) -> Result<Int32, Errno> {
        valueOrErrno(fcntl(fd, F_GETFL))
    }

    /// `fcntl(F_SETFL)`.
    static func setStatusFlags(_ fd: Int32, _ flags: Int32) -> Result<Void, Errno> {
        nothingOrErrno(fcntl(fd, F_SETFL, flags))
    }

    /// `fcntl(F_SETFD, FD_CLOEXEC)`.
    static func setCloseOnExec(_ fd: Int32) -> Result<Void, Errno> {
        nothingOrErrno(fcntl(fd, F_SETFD, FD_CLOEXEC))
    }

    /// `poll(2)` once (`EINTR` is the caller's to judge: usually "nothing ready yet").
    static func poll(_ entries: inout [PollEntry], _ timeoutMilliseconds: Int32) -> Result<Int, Errno> {
        var set = entries.map { pollfd(fd: $0.descriptor, events: $0.events.rawValue, revents: 0) }
        let ready = set.withUnsafeMutableBufferPointer {
            valueOrErrno(Glibc.poll($0.baseAddress, nfds_t($0.count), timeoutMilliseconds))
        }
        for index in entries.indices { entries[index].returned = PollEvents(rawValue: set[index].revents) }
        return ready.map(Int.init)
    }

    // MARK: Sockets

    /// `socket(AF_UNIX, SOCK_STREAM or SOCK_DGRAM | SOCK_CLOEXEC [| SOCK_NONBLOCK], 0)`. The
    /// caller owns the returned descriptor.
    static func unixSocket(datagram: Bool, nonBlocking: Bool) -> Result<Int32, Errno> {
        var type = Int32(datagram ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        return valueOrErrno(Glibc.socket(AF_UNIX, type, 0))
    }

    /// A UDP socket joined to the multicast `group` on `port` beside other receivers
    /// (`recd_multicast_socket`: SO_REUSEADDR/SO_REUSEPORT, bound to the group, SO_TIMESTAMPNS,
    /// non-blocking, close-on-exec). The caller owns the returned descriptor.
    static func multicastSocket(_ group: String, _ port: UInt16, _ interface: String?) -> Result<Int32, Errno> {
        valueOrErrno(recd_multicast_socket(group, port, interface))
    }

    /// One datagram's first `buffer.count` bytes (`recd_receive_datagram`, MSG_DONTWAIT): its
    /// full size, the kernel's receive time (CLOCK_REALTIME ns, 0: none) and its sender's address
    /// as two big-endian words of IPv6 (IPv4 mapped; zeros: none).
    static func receiveDatagram(
        _ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer
    ) -> Result<(Int, Int64, (UInt64, UInt64)), Errno> {
        var stamp: Int64 = 0
        var source = [UInt8](repeating: 0, count: 16)
        return retryingOnInterrupt {
            valueOrErrno(recd_receive_datagram(fd, buffer.baseAddress, buffer.count, &stamp, &source)).map {
                (Int($0), stamp, addressWords(source))
            }
        }
    }

    /// 16 bytes of an IPv6 address (`source[0..<16]`) as two big-endian words.
    private static func addressWords(_ bytes: [UInt8]) -> (UInt64, UInt64) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<8 { high = high << 8 | UInt64(bytes[index]) }
        for index in 8..<16 { low = low << 8 | UInt64(bytes[index]) }
        return (high, low)
    }

    /// `inet_pton(3)` of an IPv4 dotted quad, else an IPv6 literal, as two big-endian words of
    /// IPv6 (IPv4 mapped); nil for text that is neither (or longer than an address can be, or
    /// holding a NUL).
    static func parseAddress(_ text: String) -> (UInt64, UInt64)? {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty, utf8.count < Int(INET6_ADDRSTRLEN), !utf8.contains(0) else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return (0, 0xFFFF_0000_0000 | UInt64(UInt32(bigEndian: v4.s_addr)))
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        return addressWords(withUnsafeBytes(of: &v6) { Array($0) })
    }

    /// `inet_ntop(3)`: an IPv4-mapped address as a dotted quad, another as IPv6 text.
    static func formatAddress(_ high: UInt64, _ low: UInt64) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if high == 0, low >> 32 == 0xFFFF {
            var v4 = in_addr(s_addr: UInt32(truncatingIfNeeded: low).bigEndian)
            _ = inet_ntop(AF_INET, &v4, &text, socklen_t(text.count))
        } else {
            var bytes = [UInt8](repeating: 0, count: 16)
            for index in 0..<8 {
                bytes[index] = UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * index))
                bytes[8 + index] = UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * index))
            }
            var v6 = in6_addr()
            withUnsafeMutableBytes(of: &v6) { $0.copyBytes(from: bytes) }
            _ = inet_ntop(AF_INET6, &v6, &text, socklen_t(text.count))
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `SOCK_STREAM`.
    static let streamSocketType = Int32(SOCK_STREAM.rawValue)

    /// Longest `sun_path` accepted, leaving room for the terminating NUL.
    static let maxUnixPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Runs `body` with a `sockaddr_un` for `path`; `ENAMETOOLONG` for a path that does not fit
    /// (or is empty, or holds a NUL).
    private static func withUnixAddress<R>(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result<R, Errno>
    ) -> Result<R, Errno> {
        let bytes = Array(path.utf8)
        if bytes.count > maxUnixPathBytes || bytes.isEmpty || bytes.contains(0) { return .failure(.nameTooLong) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    /// `bind(2)` to a file system path.
    static func bind(_ fd: Int32, _ path: String) -> Result<Void, Errno> {
        withUnixAddress(path) { nothingOrErrno(Glibc.bind(fd, $0, $1)) }
    }

    /// `connect(2)` to a file system path.
    static func connect(_ fd: Int32, _ path: String) -> Result<Void, Errno> {
        withUnixAddress(path) { address, length in
            retryingOnInterrupt { nothingOrErrno(Glibc.connect(fd, address, length)) }
        }
    }

    /// `listen(2)`.
    static func listen(_ fd: Int32, _ backlog: Int32) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.listen(fd, backlog))
    }

    /// `accept(2)`. The caller owns the returned descriptor.
    static func accept(_ fd: Int32) -> Result<Int32, Errno> {
        retryingOnInterrupt { valueOrErrno(Glibc.accept(fd, nil, nil)) }
    }

    /// `send(2)`.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, _ flags: Int32) -> Result<Int, Errno> {
        retryingOnInterrupt { valueOrErrno(Glibc.send(fd, bytes.baseAddress, bytes.count, flags)) }
    }

    /// `MSG_NOSIGNAL | MSG_DONTWAIT`.
    static let sendFlagsNonBlocking = Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)
    /// `MSG_NOSIGNAL`.
    static let sendFlagsBlocking = Int32(MSG_NOSIGNAL)

    /// Most descriptors one `receiveWithDescriptors` takes in (the CLinux shim's buffer).
    static let descriptorSlots = Int(RECD_DESCRIPTOR_SLOTS)

    /// `recvmsg(2)` with `MSG_CMSG_CLOEXEC | MSG_DONTWAIT`: bytes into `buffer`, the descriptors
    /// of SCM_RIGHTS messages into `slots` (`descriptorSlots` of them; their number in
    /// `received`), `truncated` set for `MSG_CTRUNC`. The caller owns the received descriptors.
    static func receiveWithDescriptors(
        _ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ slots: UnsafeMutablePointer<Int32>,
        _ received: inout Int32, _ truncated: inout Int32
    ) -> Result<Int, Errno> {
        retryingOnInterrupt {
            valueOrErrno(
                recd_receive_with_descriptors(
                    fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), slots, &received, &truncated))
        }
    }

    /// `sendmsg(2)` of `bytes` with `descriptors` as one SCM_RIGHTS message, `MSG_NOSIGNAL`,
    /// blocking. The caller keeps its descriptors.
    static func sendWithDescriptors(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, _ descriptors: [Int32])
        -> Result<Int, Errno>
    {
        retryingOnInterrupt {
            descriptors.withUnsafeBufferPointer { passed in
                valueOrErrno(
                    recd_send_with_descriptors(
                        fd, bytes.baseAddress, bytes.count, passed.baseAddress, Int32(passed.count),
                        Int32(MSG_NOSIGNAL)))
            }
        }
    }

    /// `getsockopt(SO_PEERCRED)`: pid, uid, gid.
    static func peerCredentials(_ fd: Int32) -> Result<(pid: Int32, uid: UInt32, gid: UInt32), Errno> {
        // `struct ucred`, which the toolchain's Glibc exposes only under _GNU_SOURCE; its layout
        // (pid_t, uid_t, gid_t) is Linux ABI.
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        return nothingOrErrno(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length)).map { credentials }
    }

    /// `getsockopt(SO_PEERGROUPS)` into `groups`; `length` in bytes, in and out (`ERANGE`
    /// reports the size needed there).
    static func peerGroups(_ fd: Int32, _ groups: inout [UInt32], _ length: inout socklen_t) -> Result<Void, Errno> {
        groups.withUnsafeMutableBytes {
            nothingOrErrno(getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, $0.baseAddress, &length))
        }
    }

    // MARK: Users and the process

    /// `getpid(2)`.
    static func processID() -> Int32 { getpid() }

    /// `getuid(2)`.
    static func userID() -> UInt32 { getuid() }

    /// `getpwuid_r(3)`: the user name of `uid`, nil without a passwd entry.
    static func userName(_ uid: UInt32) -> String? {
        var record = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var scratch = [CChar](repeating: 0, count: 16 * 1024)
        return scratch.withUnsafeMutableBufferPointer { buffer -> String? in
            let status = getpwuid_r(uid, &record, buffer.baseAddress!, buffer.count, &result)
            guard status == 0, result != nil, let name = record.pw_name else { return nil }
            return String(cString: name)
        }
    }

    /// `getpwuid_r(3)` or `getpwnam_r(3)`: a user's name, uid and primary gid, nil without a
    /// passwd entry.
    static func userEntry(uid: UInt32?, name: String?) -> (name: String, uid: UInt32, gid: UInt32)? {
        var record = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var scratch = [CChar](repeating: 0, count: 16 * 1024)
        return scratch.withUnsafeMutableBufferPointer { buffer -> (String, UInt32, UInt32)? in
            let status: Int32
            if let uid {
                status = getpwuid_r(uid, &record, buffer.baseAddress!, buffer.count, &result)
            } else if let name {
                status = getpwnam_r(name, &record, buffer.baseAddress!, buffer.count, &result)
            } else {
                return nil
            }
            guard status == 0, result != nil, let found = record.pw_name else { return nil }
            return (String(cString: found), record.pw_uid, record.pw_gid)
        }
    }

    /// `memchr(3)`: the offset of the first `byte` in `bytes`, nil when there is none.
    static func firstOffset(of byte: UInt8, in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress, let found = memchr(base, Int32(byte), bytes.count) else { return nil }
        return UnsafeRawPointer(found) - base
    }

    /// `getgrouplist(3)`: nil when `capacity` is too small (then `wanted` holds the size needed).
    static func groupList(_ user: String, _ gid: UInt32, capacity: Int32, wanted: inout Int32) -> [UInt32]? {
        var groups = [gid_t](repeating: 0, count: Int(capacity))
        wanted = capacity
        guard getgrouplist(user, gid, &groups, &wanted) >= 0 else { return nil }
        return Array(groups.prefix(Int(wanted)))
    }

    /// `getgrnam(3)`: the gid of group `name`, nil when there is none.
    static func groupID(_ name: String) -> UInt32? {
        getgrnam(name).map { $0.pointee.gr_gid }
    }

    // MARK: Signals and wake-ups

    /// `pthread_sigmask(SIG_BLOCK or SIG_UNBLOCK, signals)` for the calling thread.
    static func changeSignalMask(block: Bool, _ signals: [Int32]) -> Result<Void, Errno> {
        var set = signalSet(signals)
        // pthread_sigmask returns the error number instead of setting errno.
        let code = pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, nil)
        return code == 0 ? .success(()) : .failure(Errno(rawValue: code))
    }

    /// `signal(signo, SIG_IGN)`.
    static func ignoreSignal(_ signo: Int32) {
        _ = Glibc.signal(signo, SIG_IGN)
    }

    /// `sigtimedwait(2)`: the first of `signals` pending within `seconds`, nil on timeout.
    static func waitForSignal(_ signals: [Int32], seconds: Double) -> Int32? {
        var set = signalSet(signals)
        var timeout = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        let received = sigtimedwait(&set, nil, &timeout)
        return received > 0 ? received : nil
    }

    private static func signalSet(_ signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        return set
    }

    /// `eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)`. The caller owns the returned descriptor.
    static func eventfd() -> Result<Int32, Errno> {
        valueOrErrno(recd_eventfd_nonblocking())
    }

    /// `signalfd(-1, signals, SFD_NONBLOCK | SFD_CLOEXEC)`. The caller owns the descriptor.
    static func signalfd(_ signals: [Int32]) -> Result<Int32, Errno> {
        var set = signalSet(signals)
        return valueOrErrno(recd_signalfd_nonblocking(&set))
    }

    /// `sizeof(struct signalfd_siginfo)`; `ssi_signo` (uint32) is its first field.
    static let signalInfoSize = Int(recd_signalfd_siginfo_size())

    // MARK: Paths

    /// `stat(2)` (follows symbolic links).
    static func stat(_ path: String) -> Result<FileStatus, Errno> {
        var info = Glibc.stat()
        return nothingOrErrno(statPath(path, &info)).map { FileStatus(info) }
    }

    /// `lstat(2)` (the link itself).
    static func lstat(_ path: String) -> Result<FileStatus, Errno> {
        var info = Glibc.stat()
        return nothingOrErrno(Glibc.lstat(path, &info)).map { FileStatus(info) }
    }

    /// `mkdir(2)`.
    static func mkdir(_ path: String, _ mode: UInt32) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.mkdir(path, mode_t(mode)))
    }

    /// `rmdir(2)`.
    static func rmdir(_ path: String) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.rmdir(path))
    }

    /// `unlink(2)`.
    static func unlink(_ path: String) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.unlink(path))
    }

    /// `link(2)`.
    static func link(_ from: String, _ to: String) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.link(from, to))
    }

    /// `rename(2)`.
    static func rename(_ from: String, _ to: String) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.rename(from, to))
    }

    /// `renameat2(RENAME_NOREPLACE)`: `EEXIST` instead of replacing `to`; `EINVAL` or
    /// `ENOSYS` where the file system or kernel cannot do it.
    static func renameNoReplace(_ from: String, _ to: String) -> Result<Void, Errno> {
        nothingOrErrno(recd_rename_noreplace(from, to))
    }

    /// `chmod(2)`.
    static func chmod(_ path: String, _ mode: UInt32) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.chmod(path, mode_t(mode)))
    }

    /// `statvfs(3)`: (bytes available to unprivileged users, total bytes), from the block
    /// counts times the fragment size.
    static func statvfs(_ path: String) -> Result<(available: UInt64, total: UInt64), Errno> {
        var info = Glibc.statvfs()
        return nothingOrErrno(statFileSystem(path, &info)).map {
            let size = UInt64(info.f_frsize)
            return (UInt64(info.f_bavail) &* size, UInt64(info.f_blocks) &* size)
        }
    }

    /// `realpath(3)`: the canonical absolute path (symlinks and `..` resolved).
    static func realpath(_ path: String) -> Result<String, Errno> {
        guard let resolved = Glibc.realpath(path, nil) else { return .failure(Errno(rawValue: Glibc.errno)) }
        defer { free(resolved) }
        return .success(String(cString: resolved))
    }

    /// `opendir(3)`. The caller owns the stream (`closedir`).
    static func opendir(_ path: String) -> Result<OpaquePointer, Errno> {
        guard let stream = Glibc.opendir(path) else { return .failure(Errno(rawValue: Glibc.errno)) }
        return .success(stream)
    }

    /// `readdir(3)`: the next entry's name, nil at the end.
    static func readdir(_ stream: OpaquePointer) -> String? {
        guard let entry = Glibc.readdir(stream) else { return nil }
        return withUnsafePointer(to: entry.pointee.d_name) {
            $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
        }
    }

    /// `closedir(3)`.
    static func closedir(_ stream: OpaquePointer) {
        _ = Glibc.closedir(stream)
    }

    // MARK: Clocks

    /// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds.
    static func monotonicNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// `clock_gettime(CLOCK_REALTIME)` in nanoseconds since the epoch.
    static func realtimeNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// `adjtimex(2)` reading only (`modes = 0`, allowed to any user): whether the kernel marks
    /// the clock unsynchronised (`STA_UNSYNC` in `status`, or the call's `TIME_ERROR` state),
    /// and its estimated and maximum error in microseconds (`esterror`, `maxerror`).
    static func adjtimexRead() -> Result<(unsynchronized: Bool, esterror: Int, maxerror: Int), Errno> {
        var buffer = timex()
        buffer.modes = 0
        let state = adjtimex(&buffer)
        guard state >= 0 else { return .failure(Errno(rawValue: Glibc.errno)) }
        let unsynchronized = buffer.status & Int32(STA_UNSYNC) != 0 || state == TIME_ERROR
        return .success((unsynchronized, Int(buffer.esterror), Int(buffer.maxerror)))
    }

    /// `nanosleep(2)`, continued after signals until the whole time has passed.
    static func nanosleep(seconds: Int, nanoseconds: Int) {
        var request = timespec(tv_sec: seconds, tv_nsec: nanoseconds)
        var remaining = timespec()
        while Glibc.nanosleep(&request, &remaining) != 0 && Glibc.errno == EINTR { request = remaining }
    }

    /// `gmtime_r(3)`: (year, month 1...12, day, hour, minute, second) in UTC.
    static func gmtime(_ secondsSinceEpoch: Int64) -> CalendarParts {
        var seconds = time_t(secondsSinceEpoch)
        var broken = tm()
        gmtime_r(&seconds, &broken)
        return CalendarParts(
            year: Int(broken.tm_year) + 1900, month: Int(broken.tm_mon) + 1, day: Int(broken.tm_mday),
            hour: Int(broken.tm_hour), minute: Int(broken.tm_min), second: Int(broken.tm_sec))
    }

    /// `timegm(3)`: seconds since the epoch of a UTC calendar time (out-of-range fields roll
    /// over, as C does).
    static func timegm(_ parts: CalendarParts) -> Int64 {
        var broken = tm()
        broken.tm_year = Int32(parts.year - 1900)
        broken.tm_mon = Int32(parts.month - 1)
        broken.tm_mday = Int32(parts.day)
        broken.tm_hour = Int32(parts.hour)
        broken.tm_min = Int32(parts.minute)
        broken.tm_sec = Int32(parts.second)
        return Int64(Glibc.timegm(&broken))
    }

    // MARK: Processes

    /// `posix_spawn(3)` through `recd_spawn`: the child's pid, or the error number. `output`: the
    /// descriptor the child's stdout goes to (-1: onto its stderr).
    static func spawn(
        _ path: String, arguments: [String], environment: [String], output: Int32 = -1
    ) -> Result<Int32, Errno> {
        func cStrings(_ strings: [String]) -> [UnsafeMutablePointer<CChar>?] { strings.map { strdup($0) } + [nil] }
        let argv = cStrings([path] + arguments)
        let envp = cStrings(environment)
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let result = recd_spawn(&pid, path, argv, envp, output)
        return result == 0 ? .success(pid) : .failure(Errno(rawValue: result))
    }

    /// `memfd_create(2)` (close-on-exec): a new descriptor, or errno.
    static func memoryFile(_ name: String) -> Result<Int32, Errno> {
        let descriptor = recd_memfd(name)
        return descriptor >= 0 ? .success(descriptor) : .failure(Errno(rawValue: Glibc.errno))
    }

    /// `waitpid(2)`: nil while the child runs (`nohang`), else how it ended (`exited`: its
    /// exit status; else the signal that ended it).
    static func waitChild(_ pid: Int32, nohang: Bool) -> Result<(exited: Bool, code: Int32)?, Errno> {
        var exited: Int32 = 0
        var code: Int32 = 0
        let result = recd_wait_child(pid, nohang ? 1 : 0, &exited, &code)
        if result < 0 { return .failure(Errno(rawValue: Glibc.errno)) }
        return .success(result == 0 ? nil : (exited != 0, code))
    }

    /// `kill(-group, signal)`.
    static func killGroup(_ group: Int32, _ signal: Int32) -> Result<Void, Errno> {
        nothingOrErrno(recd_kill_group(group, signal))
    }

    // MARK: Threads

    /// `pthread_create(3)` running `start(context)`. Returns the error number (pthreads do not
    /// set `errno`).
    static func pthreadCreate(
        _ start: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?,
        _ context: UnsafeMutableRawPointer
    ) -> Result<ThreadHandle, Errno> {
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, start, context)
        return result == 0 ? .success(ThreadHandle(thread: thread)) : .failure(Errno(rawValue: result))
    }

    /// `pthread_join(3)`.
    static func pthreadJoin(_ handle: ThreadHandle) {
        _ = pthread_join(handle.thread, nil)
    }

    /// `pthread_detach(3)`.
    static func pthreadDetach(_ handle: ThreadHandle) {
        _ = pthread_detach(handle.thread)
    }

    /// `pthread_equal(thread, pthread_self())`.
    static func isCurrentThread(_ handle: ThreadHandle) -> Bool {
        pthread_equal(handle.thread, pthread_self()) != 0
    }

    /// `pthread_self(3)`.
    static func currentThread() -> ThreadHandle { ThreadHandle(thread: pthread_self()) }

    /// `pthread_equal(3)`.
    static func sameThread(_ a: ThreadHandle, _ b: ThreadHandle) -> Bool {
        pthread_equal(a.thread, b.thread) != 0
    }

    /// `pthread_setname_np(pthread_self())`: at most 15 bytes are kept.
    static func nameCurrentThread(_ name: String) {
        _ = recd_name_current_thread(String(decoding: name.utf8.prefix(15), as: UTF8.self))
    }

    /// `setpriority(PRIO_PROCESS, gettid())`: the calling thread `increment` steps nicer.
    static func reniceCurrentThread(_ increment: Int32) -> Result<Void, Errno> {
        nothingOrErrno(recd_renice_current_thread(increment))
    }
}

/// A `pthread_t`, for the files above this folder.
struct ThreadHandle: Sendable {
    let thread: pthread_t
}

extension FileStatus {
    init(_ info: stat) {
        let type = info.st_mode & S_IFMT
        let kind: FileKind
        switch type {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symbolicLink
        case S_IFSOCK: kind = .socket
        default: kind = .other
        }
        self.init(
            kind: kind, permissions: UInt32(info.st_mode & 0o7777), size: Int64(info.st_size),
            identity: FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)),
            ownerID: UInt32(info.st_uid), groupID: UInt32(info.st_gid))
    }
}

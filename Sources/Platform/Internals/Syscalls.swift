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

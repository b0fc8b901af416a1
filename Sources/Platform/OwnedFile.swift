// An open file and the calls made on it: positional and sequential I/O, syncing, sizes,
// space reservation and an advisory lock.

/// An open file descriptor and the path it was opened as (for errors), owned: closed in
/// `deinit` unless `close()` was called first.
///
/// Used by one thread at a time: whoever owns the object holding it (a segment writer on the
/// archiver thread, recovery on the control thread). Every failure throws a `SystemError`
/// naming the call, or is returned where the caller decides what a failure means.
public final class OwnedFile {
    /// The descriptor, -1 once closed. Owned by this object: do not close it yourself.
    public private(set) var descriptor: Int32
    /// The path it was opened as; errors name it.
    public let path: String

    /// Takes ownership of `descriptor` (open, and not owned by anything else).
    public init(adopting descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { if descriptor >= 0 { _ = Syscall.close(descriptor) } }

    /// Gives the descriptor to a new owner (who closes it), leaving this object closed: e.g. a
    /// served file handed to the HTTP listener.
    public func relinquish() -> Int32 {
        let handed = descriptor
        descriptor = -1
        return handed
    }

    /// How to open a file.
    public enum Access: Sendable {
        case readOnly
        /// Read-only with `O_NONBLOCK`, so that a FIFO cannot hang the caller (it means
        /// nothing for regular files).
        case readOnlyNonBlocking
        /// Read-only, non-blocking, and never through a symbolic link in the last component
        /// (`O_NOFOLLOW`: `ELOOP`): for files served to others (the HTTP `/archive/` route).
        case readOnlyNoFollow
        case readWrite
        /// Read-write, non-blocking, never through a symbolic link in the last component
        /// (`ELOOP`) and never creating: for files others can write that recd appends to (the
        /// archive's hash chains), which must be checked (`status`) before they are trusted.
        case readWriteNoFollow
        /// Creates the file, read-write, with `permissions` (less the umask): never an existing
        /// one (`O_EXCL`, which also refuses a symbolic link in its place).
        case createExclusive(permissions: UInt32)
        /// Creates the file write-only with `permissions`, or empties an existing one.
        case createOrTruncate(permissions: UInt32)
        /// Opens the file read-write, creating it with `permissions` when there is none (an
        /// append-only log that several writers take turns at under `lockExclusive`).
        case createOrOpen(permissions: UInt32)
    }

    /// Opens `path` (always close-on-exec). The operation in errors is `open`, or `create` for
    /// `.createExclusive`.
    public convenience init(_ path: String, _ access: Access) throws(SystemError) {
        let descriptor: Int32
        switch access {
        case .readOnly:
            descriptor = try Syscall.open(path, _O_RDONLY).orThrow("open", path: path)
        case .readOnlyNonBlocking:
            descriptor = try Syscall.open(path, _O_RDONLY | _O_NONBLOCK).orThrow("open", path: path)
        case .readOnlyNoFollow:
            descriptor = try Syscall.open(path, _O_RDONLY | _O_NONBLOCK | _O_NOFOLLOW).orThrow("open", path: path)
        case .readWrite:
            descriptor = try Syscall.open(path, _O_RDWR).orThrow("open", path: path)
        case .readWriteNoFollow:
            descriptor = try Syscall.open(path, _O_RDWR | _O_NONBLOCK | _O_NOFOLLOW).orThrow("open", path: path)
        case .createExclusive(let permissions):
            descriptor = try Syscall.open(path, _O_RDWR | _O_CREAT | _O_EXCL, permissions).orThrow(
                "create", path: path)
        case .createOrTruncate(let permissions):
            descriptor = try Syscall.open(path, _O_WRONLY | _O_CREAT | _O_TRUNC, permissions).orThrow(
                "create", path: path)
        case .createOrOpen(let permissions):
            descriptor = try Syscall.open(path, _O_RDWR | _O_CREAT, permissions).orThrow("open", path: path)
        }
        self.init(adopting: descriptor, path: path)
    }

    /// Closes the descriptor; errors the kernel reports only at close (delayed write-back,
    /// NFS) throw, except `EINTR` (the descriptor is released anyway). Closing twice does
    /// nothing.
    public func close() throws(SystemError) {
        guard descriptor >= 0 else { return }
        let result = Syscall.close(descriptor)
        descriptor = -1
        if case .failure(let errno) = result, errno != .interrupted {
            throw SystemError(errno, operation: "close", path: path)
        }
    }

    /// Reads up to `count` bytes at the current position with one `read`; 0 at the end.
    public func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(SystemError) -> Int {
        try Syscall.read(descriptor, buffer, count).orThrow("read", path: path)
    }

    /// Reads from the current position to the end of the file.
    public func readToEnd() throws(SystemError) -> [UInt8] {
        try Descriptor.readAll(descriptor, path: path)
    }

    /// Writes all of `bytes` at the current position, one `write(2)` after another.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        try Descriptor.writeAll(descriptor, bytes, path: path)
    }

    /// Writes all of `bytes` at `offset` without moving the file position (one `pwrite` for up
    /// to 2 GiB: a process crash sees all of it or none of it).
    public func writeAll(_ bytes: [UInt8], at offset: Int64) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let result = bytes.withUnsafeBytes {
                Syscall.pwrite(descriptor, $0.baseAddress! + done, $0.count - done, offset + Int64(done))
            }
            done += try result.orThrow("pwrite", path: path)
        }
    }

    /// Reads up to `count` bytes at `offset` into `buffer` with one `pread`, never moving the
    /// file position; 0 at the end of the file.
    public func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws(SystemError) -> Int {
        try Syscall.pread(descriptor, buffer, count, offset).orThrow("pread", path: path)
    }

    /// Reads up to `count` bytes at `offset`; fewer at the end of the file.
    public func read(count: Int, at offset: Int64) throws(SystemError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let result = bytes.withUnsafeMutableBytes {
                Syscall.pread(descriptor, $0.baseAddress! + done, count - done, offset + Int64(done))
            }
            let got = try result.orThrow("pread", path: path)
            if got == 0 { break }
            done += got
        }
        bytes.removeLast(count - done)
        return bytes
    }

    /// Moves the file position to `offset` from the start (`lseek`); returns it.
    @discardableResult
    public func seek(to offset: Int64) throws(SystemError) -> Int64 {
        try Syscall.lseek(descriptor, offset, fromStart: true).orThrow("lseek", path: path)
    }

    /// The file position (`lseek(0, SEEK_CUR)`).
    public func currentOffset() throws(SystemError) -> Int64 {
        try Syscall.lseek(descriptor, 0, fromStart: false).orThrow("lseek", path: path)
    }

    /// `fstat`: what the descriptor is now.
    public func status() throws(SystemError) -> FileStatus {
        try Syscall.fstat(descriptor).orThrow("fstat", path: path)
    }

    /// The file's size now.
    public func size() throws(SystemError) -> Int64 { try status().size }

    /// Which file this is (device and inode), nil when `fstat` fails.
    public func identity() -> FileIdentity? { try? status().identity }

    /// `fdatasync`: the data (and the size) reach the disk.
    public func syncData() throws(SystemError) {
        try Syscall.fdatasync(descriptor).orThrow("fdatasync", path: path)
    }

    /// `fsync`: data and all metadata reach the disk.
    public func sync() throws(SystemError) {
        try Syscall.fsync(descriptor).orThrow("fsync", path: path)
    }

    public func truncate(to length: Int64) throws(SystemError) {
        try Syscall.ftruncate(descriptor, length).orThrow("ftruncate", path: path)
    }

    /// `fchmod`.
    public func changeMode(_ mode: UInt32) throws(SystemError) {
        try Syscall.fchmod(descriptor, mode).orThrow("fchmod", path: path)
    }

    /// Allocates blocks for [offset, offset+length) without changing the size (`fallocate`
    /// KEEP_SIZE). `ENOSPC`/`EDQUOT`: not that much space; `EOPNOTSUPP`: the file system
    /// cannot.
    public func reserve(offset: Int64, length: Int64) throws(SystemError) {
        try Syscall.reserveSpace(descriptor, offset, length).orThrow("fallocate", path: path)
    }

    /// Frees the blocks of [offset, offset+length) (punch hole); errors ignored (it only
    /// gives space back).
    public func release(offset: Int64, length: Int64) {
        _ = Syscall.releaseSpace(descriptor, offset, length)
    }

    /// An exclusive advisory lock (`flock`), waiting while another open file holds it; it goes
    /// with the descriptor (close). Between threads of one process too: each open is its own.
    public func lockExclusive() throws(SystemError) {
        try Syscall.lockExclusive(descriptor).orThrow("flock", path: path)
    }

    /// An exclusive advisory lock (`flock`) without waiting: true when taken, false when
    /// another open file holds it.
    public func tryLockExclusive() -> Bool {
        if case .success = Syscall.lockExclusiveWithoutWaiting(descriptor) { return true }
        return false
    }
}

/// Which file a path or descriptor is (`st_dev`, `st_ino`). A plain value: any thread.
public struct FileIdentity: Hashable, Sendable {
    public var device: UInt64
    public var inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// What a path or descriptor names.
public enum FileKind: Hashable, Sendable {
    case regular, directory, symbolicLink, socket
    /// A device, FIFO or anything else.
    case other
}

/// What `stat` says about a file. A plain value: any thread.
public struct FileStatus: Hashable, Sendable {
    public var kind: FileKind
    /// The permission bits (`st_mode & 07777`).
    public var permissions: UInt32
    public var size: Int64
    public var identity: FileIdentity
    public var ownerID: UInt32
    public var groupID: UInt32
}

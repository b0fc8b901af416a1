// Every POSIX call the archive makes, one small function each, errno captured in the same
// function that made the call (it would be gone by the next call).

internal import CLinux

#if canImport(Glibc)
    import Glibc
#endif

/// An open file descriptor, owned: closed in `deinit` unless `close()` was called.
/// Used by one thread at a time (whoever owns the object holding it).
final class OwnedFile {
    private(set) var fd: Int32
    let path: String

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Creates `path` exclusively (O_EXCL: never an existing file), read-write, mode 0644.
    static func createExclusive(_ path: String) throws(ArchiveError) -> OwnedFile {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ArchiveError.fromErrno(errno, operation: "create", path: path) }
        return OwnedFile(fd: fd, path: path)
    }

    static func openReadOnly(_ path: String) throws(ArchiveError) -> OwnedFile {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ArchiveError.fromErrno(errno, operation: "open", path: path) }
        return OwnedFile(fd: fd, path: path)
    }

    static func openReadWrite(_ path: String) throws(ArchiveError) -> OwnedFile {
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw ArchiveError.fromErrno(errno, operation: "open", path: path) }
        return OwnedFile(fd: fd, path: path)
    }

    func close() throws(ArchiveError) {
        guard fd >= 0 else { return }
        let result = Glibc.close(fd)
        let code = errno
        fd = -1
        if result != 0 && code != EINTR { throw ArchiveError.fromErrno(code, operation: "close", path: path) }
    }

    /// Writes all of `bytes` at the current position; returns errno on failure, 0 on success.
    func writeAll(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        var done = 0
        while done < bytes.count {
            let result = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if result < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += result
        }
        return 0
    }

    /// Writes all of `bytes` at `offset` without moving the file position (one pwrite for up
    /// to 2 GiB: a process crash sees all of it or none of it).
    func writeAll(_ bytes: [UInt8], at offset: Int64) throws(ArchiveError) {
        var done = 0
        while done < bytes.count {
            let result = bytes.withUnsafeBytes {
                Glibc.pwrite(fd, $0.baseAddress! + done, $0.count - done, off_t(offset) + off_t(done))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw ArchiveError.fromErrno(errno, operation: "pwrite", path: path)
            }
            done += result
        }
    }

    /// Reads up to `count` bytes at `offset`; fewer at the end of the file.
    func read(count: Int, at offset: Int64) throws(ArchiveError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let result = bytes.withUnsafeMutableBytes {
                Glibc.pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw ArchiveError.fromErrno(errno, operation: "pread", path: path)
            }
            if result == 0 { break }
            done += result
        }
        bytes.removeLast(count - done)
        return bytes
    }

    /// lseek; returns the new offset or -1 with the errno returned alongside.
    func seek(to offset: Int64) -> (Int64, Int32) {
        let result = lseek(fd, off_t(offset), SEEK_SET)
        return (Int64(result), result < 0 ? errno : 0)
    }

    func currentOffset() -> (Int64, Int32) {
        let result = lseek(fd, 0, SEEK_CUR)
        return (Int64(result), result < 0 ? errno : 0)
    }

    func size() throws(ArchiveError) -> Int64 {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ArchiveError.fromErrno(errno, operation: "fstat", path: path) }
        return Int64(info.st_size)
    }

    func identity() -> FileIdentity? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// fdatasync: the data (and the size) reach the disk.
    func syncData() throws(ArchiveError) {
        guard fdatasync(fd) == 0 else { throw ArchiveError.fromErrno(errno, operation: "fdatasync", path: path) }
    }

    /// fsync: data and all metadata reach the disk.
    func sync() throws(ArchiveError) {
        guard fsync(fd) == 0 else { throw ArchiveError.fromErrno(errno, operation: "fsync", path: path) }
    }

    func truncate(to length: Int64) throws(ArchiveError) {
        guard ftruncate(fd, off_t(length)) == 0 else {
            throw ArchiveError.fromErrno(errno, operation: "ftruncate", path: path)
        }
    }

    /// Allocates blocks for [offset, offset+length) without changing the size. Returns 0 or
    /// the errno (ENOSPC: not that much space; EOPNOTSUPP: the file system cannot).
    func reserve(offset: Int64, length: Int64) -> Int32 {
        recd_reserve_space(fd, offset, length) == 0 ? 0 : errno
    }

    /// Frees the blocks of [offset, offset+length); errors ignored (it only returns space).
    func release(offset: Int64, length: Int64) {
        _ = recd_release_space(fd, offset, length)
    }

    /// An exclusive advisory lock (flock) without waiting: true when taken, false when another
    /// open file holds it (a recorder still writing).
    func tryLockExclusive() -> Bool {
        flock(fd, LOCK_EX | LOCK_NB) == 0
    }
}

/// Which file a path or descriptor is (st_dev, st_ino).
struct FileIdentity: Hashable {
    var device: UInt64
    var inode: UInt64
}

enum FileSystem {
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    static func identity(of path: String) -> FileIdentity? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    static func size(of path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// mkdir -p with mode 0755.
    static func makeDirectories(_ path: String) throws(ArchiveError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o755) != 0 {
                let code = errno
                var info = stat()
                guard code == EEXIST, stat(prefix, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
                    throw ArchiveError.fromErrno(code == EEXIST ? ENOTDIR : code, operation: "mkdir", path: prefix)
                }
            }
            prefix += "/"
        }
    }

    /// Renames without ever replacing `to`: EEXIST when it exists. Uses renameat2
    /// RENAME_NOREPLACE, or link + unlink where the file system cannot do that.
    static func renameNoReplace(_ from: String, _ to: String) -> Int32 {
        if recd_rename_noreplace(from, to) == 0 { return 0 }
        let code = errno
        guard code == EINVAL || code == ENOSYS || code == EOPNOTSUPP else { return code }
        if link(from, to) != 0 { return errno }
        // Both names now point at the file; recovery recognizes that state (same inode).
        if unlink(from) != 0 { return errno }
        return 0
    }

    static func remove(_ path: String) -> Int32 { unlink(path) == 0 ? 0 : errno }

    static func removeEmptyDirectory(_ path: String) -> Bool { rmdir(path) == 0 }

    /// fsync on the directory, so a rename or unlink in it survives a power cut.
    static func syncDirectory(_ path: String) throws(ArchiveError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw ArchiveError.fromErrno(errno, operation: "open directory", path: path) }
        defer { close(fd) }
        if fsync(fd) != 0 && errno != EINVAL {
            throw ArchiveError.fromErrno(errno, operation: "fsync directory", path: path)
        }
    }

    /// Percentage of the file system's space available to recd (statvfs f_bavail / f_blocks).
    static func freePercent(at path: String) -> Double? {
        var info = statvfs()
        guard statvfs(path, &info) == 0, info.f_blocks > 0 else { return nil }
        return Double(info.f_bavail) / Double(info.f_blocks) * 100
    }

    /// Regular files under `root` (recursively, not following symbolic links) whose names end
    /// with `suffix`, sorted.
    static func files(under root: String, withSuffix suffix: String) -> [String] {
        var found: [String] = []
        var pending = [root]
        while let directory = pending.popLast() {
            guard let handle = opendir(directory) else { continue }
            defer { closedir(handle) }
            while let entry = readdir(handle) {
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                if name == "." || name == ".." { continue }
                let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                switch info.st_mode & S_IFMT {
                case S_IFDIR: pending.append(path)
                case S_IFREG: if name.hasSuffix(suffix) { found.append(path) }
                default: break
                }
            }
        }
        return found.sorted()
    }

    static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func fileName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// CLOCK_MONOTONIC in seconds, for flush intervals.
    static func monotonicSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}

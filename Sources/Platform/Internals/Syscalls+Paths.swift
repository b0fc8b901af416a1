// Syscall: calls on paths (stat, directories, links, renames, free space). The folder's rules
// are at the top of Syscalls.swift.
internal import CLinux
import Glibc

// File scope, where the C names are not shadowed by `Syscall`'s.
private func statPath(_ path: String, _ info: inout stat) -> Int32 { stat(path, &info) }
private func statFileSystem(_ path: String, _ info: inout statvfs) -> Int32 { statvfs(path, &info) }

extension Syscall {
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
}

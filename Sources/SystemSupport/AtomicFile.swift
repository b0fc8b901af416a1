// Whole-file writes that survive a crash: readers see the old file or the new one, never a mix.
import Glibc

/// Reads and atomically replaces small state files (session settings, permissions).
///
/// `write` puts the bytes in a temporary file in the same directory (`.NAME.tmp-…`), fsyncs
/// it, renames it over `path`, then fsyncs the directory so the rename itself is durable. On
/// failure the temporary file is removed and `path` is untouched. Any thread, but two writers
/// of the same path must be serialised by the caller (the last rename wins).
public enum AtomicFile {
    /// Replaces `path` with `bytes`; the file gets exactly `mode` (the umask is not applied).
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o640) throws(SystemError) {
        let directory = directoryName(of: path)
        let (temporaryPath, fd) = try createTemporaryFile(near: path)
        do throws(SystemError) {
            try Posix.changeMode(fd, mode: mode, path: temporaryPath)
            let written = bytes.withUnsafeBytes { buffer in
                Result { () throws(SystemError) in try Posix.writeAll(fd, buffer, path: temporaryPath) }
            }
            try written.get()
            try Posix.fsync(fd, path: temporaryPath)
        } catch {
            Posix.close(fd)
            try? Posix.unlink(temporaryPath)
            throw error
        }
        do throws(SystemError) {
            try Posix.closeChecked(fd, path: temporaryPath)
            try Posix.rename(temporaryPath, to: path)
        } catch {
            try? Posix.unlink(temporaryPath)
            throw error
        }
        try syncDirectory(directory)
    }

    /// Replaces `path` with the UTF-8 bytes of `text`.
    public static func write(_ text: String, to path: String, mode: mode_t = 0o640) throws(SystemError) {
        try write(Array(text.utf8), to: path, mode: mode)
    }

    /// The contents of `path`, or nil if it does not exist.
    public static func read(_ path: String) throws(SystemError) -> [UInt8]? {
        guard let fd = try Posix.open(path, flags: O_RDONLY, missingIsNil: true) else { return nil }
        defer { Posix.close(fd) }
        return try Posix.readAll(fd, path: path)
    }

    static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }

    /// Prefix of every temporary file next to `path`; tests look for leftovers with it.
    static func temporaryPrefix(for path: String) -> String {
        let directory = directoryName(of: path)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return "\(directory)/.\(name).tmp-"
    }

    /// Creates a fresh, exclusive temporary file; the caller owns the descriptor.
    private static func createTemporaryFile(near path: String) throws(SystemError) -> (String, Int32) {
        let prefix = temporaryPrefix(for: path)
        var attempts = 0
        while true {
            let candidate = prefix + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            do throws(SystemError) {
                let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
                if let fd = try Posix.open(candidate, flags: flags, mode: 0o600) {
                    return (candidate, fd)
                }
            } catch {
                attempts += 1
                if error.errno != EEXIST || attempts >= 8 { throw error }
            }
        }
    }

    private static func syncDirectory(_ directory: String) throws(SystemError) {
        guard let fd = try Posix.open(directory, flags: O_RDONLY | O_DIRECTORY) else { return }
        defer { Posix.close(fd) }
        try Posix.fsync(fd, path: directory)
    }
}

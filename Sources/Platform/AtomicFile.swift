// Whole-file writes that survive a crash: readers see the old file or the new one, never a mix.

/// Reads and atomically replaces small files: recd's state (session settings, permissions),
/// the archive proof's chain signatures and public key.
///
/// `write` puts the bytes in a temporary file in the same directory (`.NAME.tmp-…`), fsyncs
/// it, renames it over `path`, then fsyncs the directory so the rename itself is durable. On
/// failure the temporary file is removed and `path` is untouched. Any thread, but two writers
/// of the same path must be serialised by the caller (the last rename wins).
public enum AtomicFile {
    /// Replaces `path` with `bytes`; the file gets exactly `mode` (the umask is not applied).
    public static func write(_ bytes: [UInt8], to path: String, mode: UInt32 = 0o640) throws(SystemError) {
        let directory = FileSystem.directoryName(of: path)
        let (temporaryPath, file) = try createTemporaryFile(near: path)
        do throws(SystemError) {
            try file.changeMode(mode)
            let written = bytes.withUnsafeBytes { buffer in
                Result { () throws(SystemError) in try file.writeAll(buffer) }
            }
            try written.get()
            try file.sync()
        } catch {
            try? file.close()
            try? FileSystem.removeIfPresent(temporaryPath)
            throw error
        }
        do throws(SystemError) {
            try file.close()
            try FileSystem.rename(temporaryPath, to: path)
        } catch {
            try? FileSystem.removeIfPresent(temporaryPath)
            throw error
        }
        try FileSystem.syncDirectory(directory)
    }

    /// Replaces `path` with the UTF-8 bytes of `text`.
    public static func write(_ text: String, to path: String, mode: UInt32 = 0o640) throws(SystemError) {
        try write(Array(text.utf8), to: path, mode: mode)
    }

    /// The contents of `path`, or nil if it does not exist.
    public static func read(_ path: String) throws(SystemError) -> [UInt8]? {
        let file: OwnedFile
        do {
            file = try OwnedFile(path, .readOnly)
        } catch {
            if error.errno == .noSuchFileOrDirectory { return nil }
            throw error
        }
        return try file.readToEnd()
    }

    /// Prefix of every temporary file next to `path`; tests look for leftovers with it.
    public static func temporaryPrefix(for path: String) -> String {
        let directory = FileSystem.directoryName(of: path)
        let name = FileSystem.fileName(of: path)
        return "\(directory)/.\(name).tmp-"
    }

    /// Creates a fresh, exclusive temporary file (mode 0600 until `write` sets the final one).
    private static func createTemporaryFile(near path: String) throws(SystemError) -> (String, OwnedFile) {
        let prefix = temporaryPrefix(for: path)
        var attempts = 0
        while true {
            let candidate = prefix + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            do throws(SystemError) {
                return (candidate, try OwnedFile(candidate, .createExclusive(permissions: 0o600)))
            } catch {
                attempts += 1
                if error.errno != .fileExists || attempts >= 8 { throw error }
            }
        }
    }
}

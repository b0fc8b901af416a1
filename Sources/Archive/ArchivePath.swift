// Paths that clients name in archive requests: accepted only inside the archive.
import Glibc

/// Confines a client-named path to the archive directory. recd reads archive files with its
/// own rights, so a path that leads anywhere else (`..`, a symlink out, an absolute path
/// elsewhere) must never reach a decoder. Resolves with realpath(3): any thread.
public enum ArchivePath {
    /// The canonical path of `path` when it names an existing file inside
    /// `archiveDirectory` (after resolving symlinks and `..`), else nil. A relative `path` is
    /// taken relative to the archive directory.
    public static func resolve(_ path: String, inside archiveDirectory: String) -> String? {
        guard let root = canonical(archiveDirectory) else { return nil }
        let absolute = path.hasPrefix("/") ? path : root + "/" + path
        guard let resolved = canonical(absolute) else { return nil }
        let prefix = root.hasSuffix("/") ? root : root + "/"
        return resolved.hasPrefix(prefix) ? resolved : nil
    }

    /// Whether a caller with `uid` and `groups` (its gid included) could open the canonical
    /// `path` for reading by itself: search permission on every directory from `/` down and
    /// read permission on the file, by the mode bits (uid 0 may always). recd answers for files
    /// only a caller could read, so a verify never tells anyone more than they could learn.
    public static func isReadable(_ path: String, uid: UInt32, groups: Set<UInt32>) -> Bool {
        if uid == 0 { return true }
        func allows(_ path: String, _ bits: mode_t) -> Bool {
            var info = stat()
            guard stat(path, &info) == 0 else { return false }
            let shift: mode_t = info.st_uid == uid ? 6 : groups.contains(info.st_gid) ? 3 : 0
            return (info.st_mode >> shift) & bits == bits
        }
        var directory = ""
        for component in path.split(separator: "/").dropLast() {
            directory += "/" + component
            if !allows(directory.isEmpty ? "/" : directory, 0o1) { return false }
        }
        return allows("/", 0o1) && allows(path, 0o4)
    }

    private static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

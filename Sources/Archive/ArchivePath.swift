// Paths that clients name in archive requests: accepted only inside the archive.
import Platform

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
        func allows(_ path: String, _ bits: UInt32) -> Bool {
            guard let info = FileSystem.status(of: path) else { return false }
            let shift: UInt32 = info.ownerID == uid ? 6 : groups.contains(info.groupID) ? 3 : 0
            return (info.permissions >> shift) & bits == bits
        }
        var directory = ""
        for component in path.split(separator: "/").dropLast() {
            directory += "/" + component
            if !allows(directory.isEmpty ? "/" : directory, 0o1) { return false }
        }
        return allows("/", 0o1) && allows(path, 0o4)
    }

    private static func canonical(_ path: String) -> String? {
        FileSystem.canonicalPath(path)
    }
}

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

/// A finished segment opened to be served to someone outside recd (the HTTP `/archive/`
/// route): the open descriptor and its size. Owns `file`; a plain value otherwise.
public struct ServedSegment {
    public let file: OwnedFile
    public let size: Int64
    /// The segment's row in the index.
    public let record: SegmentRecord
    /// The canonical path of the file opened: what a caller's rights are checked against
    /// (`ArchivePath.isReadable`).
    public let path: String
}

extension ArchivePath {
    /// Opens the finished segment at `relative` (a path below `archiveDirectory`, as the index
    /// records it) for serving, only when every rule holds: a plain relative path (no `..`,
    /// `.`, empty or hidden components, no NUL), ending in `.flac` (never a `.partial`), a file
    /// the index knows, no symbolic link anywhere below the archive directory (the canonical
    /// path is the path asked for), opened with `O_NOFOLLOW`, a regular file, and the file
    /// opened is the one checked. Throws `.invalidArgument` saying which rule failed (the
    /// HTTP route answers 404 whatever the reason) or the open's error. Any thread that owns
    /// `index`.
    public static func openFinishedSegment(
        _ relative: String, archiveDirectory: String, index: ArchiveIndex
    ) throws(ArchiveError) -> ServedSegment {
        let components = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard !relative.isEmpty, relative.utf8.count <= 1024, !relative.utf8.contains(0),
            components.allSatisfy({ !$0.isEmpty && !$0.hasPrefix(".") })
        else {
            throw .invalidArgument("\(relative) is not a plain relative path below the archive")
        }
        guard relative.hasSuffix(".flac") else {
            throw .invalidArgument("\(relative) is not a finished segment (only .flac files are served)")
        }
        guard let root = FileSystem.canonicalPath(archiveDirectory) else {
            throw .invalidArgument("the archive directory \(archiveDirectory) does not exist")
        }
        let configured = archiveDirectory.hasSuffix("/") ? archiveDirectory : archiveDirectory + "/"
        let canonical = root + "/" + relative
        var known = try index.record(path: configured + relative)
        if known == nil { known = try index.record(path: canonical) }
        guard let record = known else {
            throw .invalidArgument("the archive index knows no segment \(relative)")
        }
        guard FileSystem.canonicalPath(canonical) == canonical else {
            throw .invalidArgument("\(relative) leads through a symbolic link or no longer exists")
        }
        let file = try archiveCall { () throws(SystemError) in try OwnedFile(canonical, .readOnlyNoFollow) }
        let status = try archiveCall { () throws(SystemError) in try file.status() }
        guard status.kind == .regular, status.identity == FileSystem.linkStatus(of: canonical)?.identity else {
            throw .invalidArgument("\(relative) is not a regular file, or changed while it was opened")
        }
        return ServedSegment(file: file, size: status.size, record: record, path: canonical)
    }
}

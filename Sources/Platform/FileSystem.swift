// Paths: what they name, directories made, walked and synced, renames that never replace,
// removals, free space.

/// Calls on paths. Stateless: any thread (each call blocks on the file system).
public enum FileSystem {
    /// `stat` (following symbolic links), or nil when it fails.
    public static func status(of path: String) -> FileStatus? {
        try? Syscall.stat(path).get()
    }

    /// `lstat` (the link itself, not its target), or nil when it fails.
    public static func linkStatus(of path: String) -> FileStatus? {
        try? Syscall.lstat(path).get()
    }

    /// What `path` names (`lstat`), nil when nothing does (`ENOENT`).
    public static func kind(of path: String) throws(SystemError) -> FileKind? {
        switch Syscall.lstat(path) {
        case .success(let status): return status.kind
        case .failure(.noSuchFileOrDirectory): return nil
        case .failure(let errno): throw SystemError(errno, operation: "lstat", path: path)
        }
    }

    /// Whether `path` names (following links) a regular file with an execute bit set: a
    /// program recd could run. Says nothing of whether this user may run it.
    public static func isExecutableFile(_ path: String) -> Bool {
        guard let status = status(of: path) else { return false }
        return status.kind == .regular && status.permissions & 0o111 != 0
    }

    /// Whether anything is at `path` (`lstat`: a dangling symbolic link exists).
    public static func exists(_ path: String) -> Bool { linkStatus(of: path) != nil }

    /// Which file `path` names (`lstat`).
    public static func identity(of path: String) -> FileIdentity? { linkStatus(of: path)?.identity }

    /// The size of the file `path` leads to (`stat`).
    public static func size(of path: String) -> Int64? { status(of: path)?.size }

    /// The canonical absolute path (`realpath`: symbolic links and `..` resolved), nil when
    /// `path` does not lead to anything.
    public static func canonicalPath(_ path: String) -> String? {
        try? Syscall.realpath(path).get()
    }

    /// `mkdir -p`: every missing directory of `path`, each created with `mode`. An existing
    /// directory is fine; an existing non-directory fails with `ENOTDIR` (operation `mkdir`,
    /// path the component that failed).
    public static func makeDirectories(_ path: String, mode: UInt32 = 0o755) throws(SystemError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            try makeDirectory(prefix, mode: mode)
            prefix += "/"
        }
    }

    /// `mkdir(2)`; an existing directory is not an error, an existing non-directory is
    /// `ENOTDIR`.
    public static func makeDirectory(_ path: String, mode: UInt32) throws(SystemError) {
        guard case .failure(let errno) = Syscall.mkdir(path, mode) else { return }
        if errno == .fileExists {
            if status(of: path)?.kind == .directory { return }
            throw SystemError(.notDirectory, operation: "mkdir", path: path)
        }
        throw SystemError(errno, operation: "mkdir", path: path)
    }

    /// Renames without ever replacing `to`: `EEXIST` when it exists (operation `rename`, path
    /// `from`). Uses renameat2 RENAME_NOREPLACE, or link + unlink where the file system cannot
    /// do that (then, for a moment, both names lead to the file).
    public static func renameNoReplace(_ from: String, _ to: String) throws(SystemError) {
        switch Syscall.renameNoReplace(from, to) {
        case .success:
            return
        case .failure(let errno) where errno == .invalidArgument || errno == .notImplemented || errno == .notSupported:
            try Syscall.link(from, to).orThrow("rename", path: from)
            try Syscall.unlink(from).orThrow("rename", path: from)
        case .failure(let errno):
            throw SystemError(errno, operation: "rename", path: from)
        }
    }

    /// `rename(2)`, replacing `to` (operation `rename FROM to`, path `to`).
    public static func rename(_ from: String, to: String) throws(SystemError) {
        try Syscall.rename(from, to).orThrow("rename \(from) to", path: to)
    }

    /// `unlink(2)` (operation `unlink`).
    public static func remove(_ path: String) throws(SystemError) {
        try Syscall.unlink(path).orThrow("unlink", path: path)
    }

    /// `unlink(2)`; a missing file is not an error.
    public static func removeIfPresent(_ path: String) throws(SystemError) {
        switch Syscall.unlink(path) {
        case .success, .failure(.noSuchFileOrDirectory): return
        case .failure(let errno): throw SystemError(errno, operation: "unlink", path: path)
        }
    }

    /// `rmdir(2)`: true when the directory was empty and is gone.
    public static func removeEmptyDirectory(_ path: String) -> Bool {
        if case .success = Syscall.rmdir(path) { return true }
        return false
    }

    /// `chmod(2)`.
    public static func changeMode(_ path: String, mode: UInt32) throws(SystemError) {
        try Syscall.chmod(path, mode).orThrow("chmod", path: path)
    }

    /// fsync on the directory, so a rename or unlink in it survives a power cut. `EINVAL`
    /// (a file system that cannot sync directories) is not an error.
    public static func syncDirectory(_ path: String) throws(SystemError) {
        let descriptor = try Syscall.open(path, _O_RDONLY | _O_DIRECTORY).orThrow("open directory", path: path)
        defer { _ = Syscall.close(descriptor) }
        switch Syscall.fsync(descriptor) {
        case .success, .failure(.invalidArgument): return
        case .failure(let errno): throw SystemError(errno, operation: "fsync directory", path: path)
        }
    }

    /// Percentage of the file system's space available to unprivileged users (`statvfs`
    /// f_bavail / f_blocks); nil when it cannot be asked.
    public static func freePercent(at path: String) -> Double? {
        guard let space = space(at: path), space.totalBytes > 0 else { return nil }
        return Double(space.availableBytes) / Double(space.totalBytes) * 100
    }

    /// The file system's bytes available to unprivileged users and its size (`statvfs`); nil
    /// when it cannot be asked. One system call, no I/O: cheap enough for the control thread.
    public static func space(at path: String) -> (availableBytes: Int64, totalBytes: Int64)? {
        guard let (available, total) = try? Syscall.statvfs(path).get() else { return nil }
        return (Int64(clamping: available), Int64(clamping: total))
    }

    /// Whether `path` is a directory this process may list (`opendir` succeeds).
    public static func isListableDirectory(_ path: String) -> Bool {
        guard let stream = try? Syscall.opendir(path).get() else { return false }
        Syscall.closedir(stream)
        return true
    }

    /// Regular files under `root` (recursively, not following symbolic links) whose names end
    /// with `suffix`, sorted. Directories that cannot be read are passed over.
    public static func files(under root: String, withSuffix suffix: String) -> [String] {
        var found: [String] = []
        var pending = [root]
        while let directory = pending.popLast() {
            guard let stream = try? Syscall.opendir(directory).get() else { continue }
            defer { Syscall.closedir(stream) }
            while let name = Syscall.readdir(stream) {
                if name == "." || name == ".." { continue }
                let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
                switch linkStatus(of: path)?.kind {
                case .directory: pending.append(path)
                case .regular: if name.hasSuffix(suffix) { found.append(path) }
                default: break
                }
            }
        }
        return found.sorted()
    }

    /// The directory part of `path` (`.` without a slash, `/` for a file in the root).
    public static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The last component of `path`.
    public static func fileName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

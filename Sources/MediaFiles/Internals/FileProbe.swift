// POSIX contact of the module: opening, examining and reading files, and mapping errno. Each
// function captures errno in the same function that made the call.

import Glibc

/// The container an audio file really is, told by its first bytes (never by its extension).
enum AudioContainer: Equatable {
    /// Native FLAC: "fLaC".
    case flac
    /// RIFF/WAVE or RF64/WAVE.
    case wav
}

enum FileProbe {
    /// Reads the first bytes of `file` and says which container it is.
    static func container(of file: ReadOnlyFile) throws(MediaError) -> AudioContainer {
        var head = [UInt8](repeating: 0, count: 12)
        var filled = 0
        while filled < head.count {
            let got = try head.withUnsafeMutableBytes { buffer in
                Result { () throws(MediaError) in
                    try read(
                        file.descriptor, into: buffer.baseAddress! + filled, count: buffer.count - filled,
                        at: Int64(filled), name: file.name)
                }
            }.get()
            if got == 0 { break }
            filled += got
        }
        return try container(head: Array(head[..<filled]), name: file.name)
    }

    /// Opens `path` with this process's rights and says which container it is.
    static func container(of path: String) throws(MediaError) -> AudioContainer {
        try container(of: ReadOnlyFile(path: path))
    }

    private static func container(head: [UInt8], name: String) throws(MediaError) -> AudioContainer {
        if head.starts(with: Array("fLaC".utf8)) { return .flac }
        let riff = head.starts(with: Array("RIFF".utf8)) || head.starts(with: Array("RF64".utf8))
        if riff && head.count >= 12 && Array(head[8..<12]) == Array("WAVE".utf8) { return .wav }
        if riff && head.count < 12 {
            throw MediaError(
                .corrupt, path: name,
                message: "the WAV header is cut short (\(head.count) bytes); "
                    + MediaError.convertAdvice)
        }
        throw MediaError(
            .unsupportedFormat, path: name,
            message: "not a FLAC or WAV file (it does not start with `fLaC`, `RIFF` or `RF64`); "
                + MediaError.convertAdvice)
    }

    // MARK: Descriptors (for ReadOnlyFile and FileCursor)

    /// `open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)`: O_NONBLOCK so that a FIFO cannot hang
    /// the caller (it means nothing for regular files). The caller owns the descriptor.
    static func openForReading(_ path: String) throws(MediaError) -> Int32 {
        while true {
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            if fd >= 0 { return fd }
            let code = errno
            if code == EINTR { continue }
            throw error(errno: code, opening: path)
        }
    }

    /// O_PATH from <fcntl.h>, which declares it only under _GNU_SOURCE (Linux ABI: 010000000).
    private static let openPathOnly: Int32 = 0o10_000_000

    /// Throws unless `fd` is a regular file open for reading (`fstat`, `fcntl(F_GETFL)`).
    static func checkReadableRegularFile(_ fd: Int32, name: String) throws(MediaError) {
        switch try status(of: fd, name: name).st_mode & S_IFMT {
        case S_IFREG:
            break
        case S_IFDIR:
            throw error(errno: EISDIR, opening: name)
        default:
            throw MediaError(
                .io, path: name,
                message: "it is not a regular file (a device, FIFO or socket); give an audio file")
        }
        let flags = fcntl(fd, F_GETFL)
        if flags < 0 {
            let code = errno
            throw MediaError(
                .io, path: name, message: "cannot examine it: \(describe(errno: code))", errno: code)
        }
        let access = flags & O_ACCMODE
        guard flags & openPathOnly == 0, access == O_RDONLY || access == O_RDWR else {
            throw MediaError(
                .io, path: name,
                message: "its descriptor is not open for reading; open it with O_RDONLY", errno: EBADF)
        }
    }

    /// `pread(2)`: up to `count` bytes at `offset`, never touching the descriptor's shared
    /// file offset. Returns the bytes read, 0 at the end of the file.
    static func read(
        _ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64, name: String
    ) throws(MediaError) -> Int {
        while true {
            let got = pread(fd, buffer, count, off_t(offset))
            if got >= 0 { return got }
            let code = errno
            if code == EINTR { continue }
            throw MediaError(
                .io, path: name, message: "cannot read it: \(describe(errno: code))", errno: code)
        }
    }

    /// The file's size now.
    static func size(of fd: Int32, name: String) throws(MediaError) -> Int64 {
        Int64(try status(of: fd, name: name).st_size)
    }

    /// `fstat(2)`.
    private static func status(of fd: Int32, name: String) throws(MediaError) -> stat {
        var status = stat()
        if fstat(fd, &status) < 0 {
            let code = errno
            throw MediaError(
                .io, path: name, message: "cannot examine it: \(describe(errno: code))", errno: code)
        }
        return status
    }

    /// `close(2)`; errors are ignored: Linux releases the descriptor even when close fails.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Creates `path` for writing; fails if it exists (an existing file is never overwritten,
    /// SPEC §9). Returns a file descriptor the caller owns.
    static func createExclusive(_ path: String) throws(MediaError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd < 0 { throw error(errno: errno, opening: path) }
        return fd
    }

    /// The error for a failed `open`.
    static func error(errno code: Int32, opening path: String) -> MediaError {
        switch code {
        case ENOENT, ENOTDIR:
            return MediaError(
                .notFound, path: path, message: "no such file; check the path", errno: code)
        case EEXIST:
            return MediaError(
                .alreadyExists, path: path,
                message: "the file already exists and is never overwritten; choose a new name",
                errno: code)
        case EISDIR:
            return MediaError(
                .io, path: path, message: "it is a directory; give the path of an audio file",
                errno: code)
        default:
            return MediaError(
                .io, path: path,
                message: "cannot open it: \(describe(errno: code)); check its permissions",
                errno: code)
        }
    }

    /// `strerror` text (glibc's `strerror` is thread-safe since 2.32).
    static func describe(errno code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return "\(String(cString: text)) (errno \(code))"
    }
}

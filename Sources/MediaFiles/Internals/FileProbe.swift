// POSIX contact of the module: opening files and mapping errno. Each function captures errno
// in the same function that made the call.

import Glibc

/// The container an audio file really is, told by its first bytes (never by its extension).
enum AudioContainer: Equatable {
    /// Native FLAC: "fLaC".
    case flac
    /// RIFF/WAVE or RF64/WAVE.
    case wav
}

enum FileProbe {
    /// Reads the first bytes of `path` and says which container it is.
    static func container(of path: String) throws(MediaError) -> AudioContainer {
        let head = try firstBytes(of: path, count: 12)
        if head.starts(with: Array("fLaC".utf8)) { return .flac }
        let riff = head.starts(with: Array("RIFF".utf8)) || head.starts(with: Array("RF64".utf8))
        if riff && head.count >= 12 && Array(head[8..<12]) == Array("WAVE".utf8) { return .wav }
        if riff && head.count < 12 {
            throw MediaError(
                .corrupt, path: path,
                message: "the WAV header is cut short (\(head.count) bytes); "
                    + MediaError.convertAdvice)
        }
        throw MediaError(
            .unsupportedFormat, path: path,
            message: "not a FLAC or WAV file (it does not start with `fLaC`, `RIFF` or `RF64`); "
                + MediaError.convertAdvice)
    }

    /// Up to `count` bytes from the start of the file.
    static func firstBytes(of path: String, count: Int) throws(MediaError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw error(errno: errno, opening: path) }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                read(fd, buffer.baseAddress! + filled, count - filled)
            }
            if got < 0 {
                let code = errno
                if code == EINTR { continue }
                throw MediaError(
                    .io, path: path, message: "cannot read it: \(describe(errno: code))",
                    errno: code)
            }
            if got == 0 { break }
            filled += got
        }
        return Array(bytes[..<filled])
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

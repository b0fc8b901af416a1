// What a file is, told by its first bytes, and what a failed open means for a person.

import Platform

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
                    try file.read(into: buffer.baseAddress! + filled, count: buffer.count - filled, at: Int64(filled))
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

    /// The error for a failed `open` (or a path that names a directory).
    static func error(opening path: String, _ error: SystemError) -> MediaError {
        switch error.errno {
        case .noSuchFileOrDirectory, .notDirectory:
            return MediaError(.notFound, path: path, message: "no such file; check the path", cause: error)
        case .fileExists:
            return MediaError(
                .alreadyExists, path: path,
                message: "the file already exists and is never overwritten; choose a new name", cause: error)
        case .isDirectory:
            return MediaError(
                .io, path: path, message: "it is a directory; give the path of an audio file", cause: error)
        default:
            return MediaError(
                .io, path: path,
                message: "cannot open it: \(MediaError.describe(error)); check its permissions", cause: error)
        }
    }
}

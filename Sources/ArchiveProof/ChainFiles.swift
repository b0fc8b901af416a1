// Opening and reading the proof's files. Chains and signatures live in the archive directory,
// which people and programs other than recd may write (docs/security.md, "The archive
// directory"): whatever is at a chain's path is opened without following a symbolic link and
// without blocking (a FIFO), must be a regular file of bounded size, and is read a chunk at a
// time, never whole. A chain is only ever created exclusively (`O_EXCL`), never through a link.
//
// Pure functions over files: any thread.

import Platform

/// How large the proof's files may be. A plain namespace: any thread.
public enum ChainLimits {
    /// The longest line recd writes is about 470 bytes: app and stream names are at most 64
    /// bytes each, so a segment's path is under 200, and the other fields are fixed width or
    /// short. A longer line is not an entry.
    public static let maximumLineBytes = 1024
    /// A day's chain at the shortest rotation (`segment_seconds = 1`) holds 86,400 segment
    /// entries and as many `removed` entries; recording stopped and started again adds segments
    /// beside the rotations. 2^18 lines leave room for that and no more.
    public static let maximumEntries = 1 << 18
    /// So a chain file is at most 2^18 lines of at most 1 KiB: 256 MiB. Larger is not one recd
    /// wrote, and is not read at all.
    public static let maximumChainBytes = Int64(maximumEntries) * Int64(maximumLineBytes)
    /// A signature file, a head record and a public key are one short line.
    public static let maximumSmallFileBytes = 4096
}

/// Opens and reads the proof's files with the rules above. Any thread.
enum ChainFiles {
    /// Opens `path` to read: nil when there is none. Throws `.unsafeFile` for a symbolic link
    /// (unless `followingLinks`: a path the caller named), anything but a regular file, or one
    /// over `maximumBytes`.
    static func openForReading(_ path: String, maximumBytes: Int64, followingLinks: Bool = false) throws(ProofError)
        -> OwnedFile?
    {
        let file: OwnedFile
        do throws(SystemError) {
            file = try OwnedFile(path, followingLinks ? .readOnlyNonBlocking : .readOnlyNoFollow)
        } catch {
            if error.errno == .noSuchFileOrDirectory { return nil }
            throw unsafe(error, path: path)
        }
        try checkRegular(file, maximumBytes: maximumBytes)
        return file
    }

    /// Opens the chain at `path` to append, creating it (exclusively: never through a link)
    /// when there is none; `created` says which.
    static func openForAppending(_ path: String) throws(ProofError) -> (file: OwnedFile, created: Bool) {
        // Two appenders may both find none: the one whose create fails opens the other's.
        for _ in 0..<2 {
            var existing: OwnedFile?
            do throws(SystemError) {
                existing = try OwnedFile(path, .readWriteNoFollow)
            } catch {
                guard error.errno == .noSuchFileOrDirectory else { throw unsafe(error, path: path) }
            }
            if let existing {
                try checkRegular(existing, maximumBytes: ChainLimits.maximumChainBytes)
                return (existing, false)
            }
            do throws(SystemError) {
                return (try OwnedFile(path, .createExclusive(permissions: 0o644)), true)
            } catch {
                guard error.errno == .fileExists else { throw .system(error) }
            }
        }
        throw .unsafeFile(path: path, reason: "it appears and disappears while recd opens it")
    }

    /// The whole of a small file (a signature, a head record), or nil when there is none.
    static func readSmall(_ path: String, followingLinks: Bool = false) throws(ProofError) -> [UInt8]? {
        guard
            let file = try openForReading(
                path, maximumBytes: Int64(ChainLimits.maximumSmallFileBytes), followingLinks: followingLinks)
        else { return nil }
        return try proofCall { () throws(SystemError) in try file.read(count: ChainLimits.maximumSmallFileBytes, at: 0)
        }
    }

    /// Replaces `path` with `bytes` (mode exactly `mode`): a reader sees the old file or the
    /// new one, never half. The rename replaces whatever is at `path` (a link is replaced, not
    /// followed).
    static func replace(_ path: String, with bytes: [UInt8], mode: UInt32) throws(ProofError) {
        try proofCall { () throws(SystemError) in try AtomicFile.write(bytes, to: path, mode: mode) }
    }

    private static func checkRegular(_ file: OwnedFile, maximumBytes: Int64) throws(ProofError) {
        let status = try proofCall { () throws(SystemError) in try file.status() }
        guard status.kind == .regular else {
            throw .unsafeFile(path: file.path, reason: "a \(describe(status.kind)), not a regular file")
        }
        guard status.size <= maximumBytes else {
            throw .unsafeFile(
                path: file.path,
                reason: "\(status.size) bytes, more than the \(maximumBytes) a file of its kind can hold")
        }
    }

    private static func unsafe(_ error: SystemError, path: String) -> ProofError {
        error.errno == .tooManySymbolicLinks
            ? .unsafeFile(path: path, reason: "a symbolic link (recd never follows one in the archive)")
            : .system(error)
    }

    private static func describe(_ kind: FileKind) -> String {
        switch kind {
        case .regular: return "regular file"
        case .directory: return "directory"
        case .symbolicLink: return "symbolic link"
        case .socket: return "socket"
        case .other: return "FIFO or device"
        }
    }
}

/// One line of a chain file as `ChainLineReader` gives it. A plain value.
struct ChainLine {
    /// The line's bytes without its newline; empty when it is longer than the limit.
    var bytes: [UInt8]
    /// Longer than `ChainLimits.maximumLineBytes` (its bytes were not kept).
    var tooLong: Bool
    /// The file offset of its first byte, and of the byte after its newline (or after the
    /// file's last byte, for a last line without one).
    var start: Int64
    var end: Int64
    /// False for a last line without a newline: a crash cut it short, or it is not one recd wrote.
    var terminated: Bool
}

/// Reads a file line by line through a fixed chunk with `pread` (the file's position does not
/// move): memory is one chunk and one line, whatever the file holds. One owner at a time.
struct ChainLineReader {
    private let file: OwnedFile
    private var chunk: [UInt8] = []
    /// The file offset of `chunk[0]`, and the next byte of `chunk` to look at.
    private var chunkStart: Int64 = 0
    private var position = 0
    private var atEnd = false

    static let chunkBytes = 64 << 10

    init(_ file: OwnedFile) { self.file = file }

    /// The next line; nil at the end of the file.
    mutating func next() throws(ProofError) -> ChainLine? {
        var bytes: [UInt8] = []
        var tooLong = false
        var start: Int64?
        var length: Int64 = 0
        while true {
            if position == chunk.count {
                guard !atEnd else { break }
                chunkStart += Int64(chunk.count)
                let offset = chunkStart
                chunk = try proofCall { () throws(SystemError) in try file.read(count: Self.chunkBytes, at: offset) }
                position = 0
                if chunk.count < Self.chunkBytes { atEnd = true }
                if chunk.isEmpty { break }
            }
            if start == nil { start = chunkStart + Int64(position) }
            let newline = chunk[position...].firstIndex(of: UInt8(ascii: "\n"))
            let stop = newline ?? chunk.count
            let piece = chunk[position..<stop]
            length += Int64(piece.count)
            if !tooLong {
                if bytes.count + piece.count > ChainLimits.maximumLineBytes {
                    tooLong = true
                    bytes = []
                } else {
                    bytes += piece
                }
            }
            position = stop
            if newline != nil {
                position += 1
                let first = start ?? 0
                return ChainLine(
                    bytes: bytes, tooLong: tooLong, start: first, end: first + length + 1, terminated: true)
            }
        }
        guard let start else { return nil }
        return ChainLine(bytes: bytes, tooLong: tooLong, start: start, end: start + length, terminated: false)
    }
}

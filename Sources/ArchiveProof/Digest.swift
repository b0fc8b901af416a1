// SHA-256 of byte strings and of whole files (libsodium's crypto_hash_sha256).

import Platform

/// A SHA-256 digest: 32 bytes, written as 64 lower-case hex digits. A plain value: any thread.
public struct SHA256Digest: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// The digest a chain's first entry names as its predecessor: 64 zeros.
    public static let zero = SHA256Digest(validated: [UInt8](repeating: 0, count: 32))

    private init(validated bytes: [UInt8]) { self.bytes = bytes }

    /// 64 hex digits; nil for anything else.
    public init?(hex: some StringProtocol) {
        guard let bytes = Hex.decode(hex), bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    public var hex: String { Hex.encode(bytes) }
    public var description: String { hex }

    /// The SHA-256 of `bytes`.
    public static func of(_ bytes: [UInt8]) -> SHA256Digest {
        precondition(Sodium.ready, "libsodium did not initialise")
        let state = Sodium.SHA256State()
        bytes.withUnsafeBytes { state.update($0) }
        return SHA256Digest(validated: state.final())
    }

    /// Bytes read per `read` while hashing a file: large enough that the hash, not the calls,
    /// costs the time.
    static let fileChunk = 1 << 20

    /// The SHA-256 of the file at `path` as it is now, read from its start to its end.
    ///
    /// Threads: the caller's; it blocks while it reads (about 1 s for 500 MB, bench/proof).
    /// A path the caller named may be a link; anything but a regular file is refused, not
    /// waited on (a FIFO).
    public static func ofFile(_ path: String) throws(ProofError) -> SHA256Digest {
        guard let file = try ChainFiles.openForReading(path, maximumBytes: .max, followingLinks: true) else {
            throw .system(SystemError(.noSuchFileOrDirectory, operation: "open", path: path))
        }
        return try of(file: file)
    }

    /// The SHA-256 of a file in the archive (a segment), where others may write: never through
    /// a symbolic link, and only a regular file.
    public static func ofArchiveFile(_ path: String) throws(ProofError) -> SHA256Digest {
        guard let file = try ChainFiles.openForReading(path, maximumBytes: .max) else {
            throw .system(SystemError(.noSuchFileOrDirectory, operation: "open", path: path))
        }
        return try of(file: file)
    }

    /// The SHA-256 of an open file's bytes from its start to its end (read with `pread`: its
    /// position does not move), e.g. a clip recd has just written into a client's descriptor.
    public static func of(file: OwnedFile) throws(ProofError) -> SHA256Digest { try of(file: file, upTo: .max) }

    /// The SHA-256 of an open file's first `end` bytes (all of it when shorter): a clip without
    /// the Content Credentials that follow its audio, which its data hash leaves out.
    public static func of(file: OwnedFile, upTo end: Int64) throws(ProofError) -> SHA256Digest {
        guard Sodium.ready else { throw .libraryUnavailable }
        let state = Sodium.SHA256State()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: fileChunk, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < end {
            let count = Int(min(Int64(fileChunk), end - offset))
            let got = try proofCall { () throws(SystemError) in
                try file.read(into: buffer.baseAddress!, count: count, at: offset)
            }
            if got == 0 { break }
            state.update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            offset += Int64(got)
        }
        return SHA256Digest(validated: state.final())
    }
}

/// Lower-case hexadecimal. Pure: any thread.
enum Hex {
    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Even-length hex (either case); nil for anything else.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var bytes = [UInt8]()
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}

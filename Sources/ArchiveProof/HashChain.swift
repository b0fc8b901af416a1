// The archive's hash chains (docs/archive-proof.md): per stream per day, a text file beside the
// day's segments, `YYYY/MM/DD/<app>-<stream>.chain`, one entry a line. Each entry holds the
// SHA-256 of the previous line, so removing, editing or reordering a line breaks the chain at
// a named place; the day's head (the last line's hash) is signed in `<chain>.sig`.
//
// An entry is appended, never rewritten: a segment's entry when it is finished (or recovered);
// a `removed` entry when retention deletes it (the segment's entry stays, and the day still
// proves). `ChainKeeper` (ChainKeeper.swift) appends; `ArchiveProver` checks.

import Platform

/// One line of a chain. A plain value: any thread.
public struct ChainEntry: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable {
        /// A finished (or recovered) segment.
        case segment
        /// A segment that retention deleted: `path` and `sha256` repeat the segment's, `removedAt`
        /// says when.
        case removed
    }

    /// 1, 2, ... within the chain file.
    public var sequence: Int
    public var kind: Kind
    /// The SHA-256 of the previous line (`SHA256Digest.zero` for the first).
    public var previous: SHA256Digest
    /// The segment file's SHA-256, of its final bytes.
    public var sha256: SHA256Digest
    /// The segment's START_TIME, ISO 8601 UTC with microseconds.
    public var start: String
    /// Frames in the segment.
    public var frames: Int
    /// END_REASON (`rotation`, `stop`, ..., `crash` for a recovered one); for `removed`: why.
    public var endReason: String
    /// The segment's path under the archive root (`2026/12/02/app-main-20261202T100000.000Z.flac`).
    public var path: String
    /// `removed` only: when (ISO 8601 UTC).
    public var removedAt: String?

    public init(
        sequence: Int, kind: Kind, previous: SHA256Digest, sha256: SHA256Digest, start: String, frames: Int,
        endReason: String, path: String, removedAt: String? = nil
    ) {
        self.sequence = sequence
        self.kind = kind
        self.previous = previous
        self.sha256 = sha256
        self.start = start
        self.frames = frames
        self.endReason = endReason
        self.path = path
        self.removedAt = removedAt
    }

    /// The format's version, the first field of every line.
    static let version = "1"

    /// The line, without its newline: fields separated by tabs (no field holds a tab or a line
    /// break: they are replaced by `_`).
    public var line: String {
        func clean(_ text: String) -> String {
            String(text.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? "_" : $0 })
        }
        var fields = [
            ChainEntry.version, String(sequence), kind.rawValue, previous.hex, sha256.hex, clean(start),
            String(frames), clean(endReason), clean(path),
        ]
        if let removedAt { fields.append(clean(removedAt)) }
        return fields.joined(separator: "\t")
    }

    /// The SHA-256 of `line`: what the next entry names as its previous.
    public var hash: SHA256Digest { SHA256Digest.of(Array(line.utf8)) }

    /// Parses a line written by `line`; nil when it is not one.
    public init?(line: some StringProtocol) {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard fields.count == 9 || fields.count == 10, fields[0] == ChainEntry.version,
            let sequence = Int(fields[1]), let kind = Kind(rawValue: String(fields[2])),
            let previous = SHA256Digest(hex: fields[3]), let sha256 = SHA256Digest(hex: fields[4]),
            let frames = Int(fields[6]), (kind == .removed) == (fields.count == 10)
        else { return nil }
        self.init(
            sequence: sequence, kind: kind, previous: previous, sha256: sha256, start: String(fields[5]),
            frames: frames,
            endReason: String(fields[7]), path: String(fields[8]),
            removedAt: fields.count == 10 ? String(fields[9]) : nil)
    }
}

/// Where chains and signatures live. Pure functions: any thread.
public enum ChainLayout {
    /// A chain file's suffix, and its signature's.
    public static let chainSuffix = ".chain"
    public static let signatureSuffix = ".sig"
    /// The archive's public key, at its root.
    public static let publicKeyFileName = "archive-key.pub"
    /// Beside it, from recd's start: a PKCS#10 request for the key (`recctl archive key --csr`),
    /// and the box CA that issued the certificate clips' Content Credentials are signed with.
    public static let certificateRequestFileName = "archive-key.csr"
    public static let boxAuthorityFileName = "archive-box-ca.pem"

    /// A name made safe for one path component: `/` and control characters become `_`, and a
    /// leading `.` too (no hidden files, no `..`). The segments' file names use it as well.
    public static func fileNameComponent(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            scalars.append(scalar == "/" || scalar.value < 0x20 || scalar.value == 0x7F ? "_" : scalar)
        }
        var result = String(scalars)
        if result.hasPrefix(".") { result = "_" + result.dropFirst() }
        return result.isEmpty ? "_" : result
    }

    /// `<app>-<stream>.chain`: the chain's file name in a day folder.
    public static func chainFileName(app: String, stream: String) -> String {
        "\(fileNameComponent(app))-\(fileNameComponent(stream))\(chainSuffix)"
    }

    /// The chain of the segment at `relativePath` (`YYYY/MM/DD/name.flac`) of `app`'s `stream`:
    /// beside it, relative to the root too.
    public static func chainPath(ofSegment relativePath: String, app: String, stream: String) -> String {
        let day = FileSystem.directoryName(of: relativePath)
        return (day == "." ? "" : day + "/") + chainFileName(app: app, stream: stream)
    }

    /// `path` relative to `root` (nil when it is not under it).
    public static func relative(_ path: String, to root: String) -> String? {
        let base = root.hasSuffix("/") ? root : root + "/"
        guard path.hasPrefix(base) else { return nil }
        return String(path.dropFirst(base.count))
    }

    static func join(_ root: String, _ relative: String) -> String {
        root.hasSuffix("/") ? root + relative : root + "/" + relative
    }
}

/// What a chain's signature file says. A plain value: any thread.
public struct ChainSignature: Hashable, Sendable {
    /// How many entries (lines) it covers, and the last one's hash.
    public var entries: Int
    public var head: SHA256Digest
    public var publicKey: ArchivePublicKey
    public var signature: [UInt8]

    static let header = "recd-chain-signature-1"

    /// What is signed: the chain's place (so a signature cannot be moved to another day or
    /// stream), the count, the head.
    public static func message(chain relativePath: String, entries: Int, head: SHA256Digest) -> [UInt8] {
        Array("recd-chain-head-1\n\(relativePath)\n\(entries)\n\(head.hex)\n".utf8)
    }

    var line: String {
        [ChainSignature.header, String(entries), head.hex, publicKey.text, Hex.encode(signature)].joined(
            separator: "\t") + "\n"
    }

    init(entries: Int, head: SHA256Digest, publicKey: ArchivePublicKey, signature: [UInt8]) {
        self.entries = entries
        self.head = head
        self.publicKey = publicKey
        self.signature = signature
    }

    /// Parses a signature file's text; nil when it is not one.
    init?(text: String) {
        let fields = text.split(separator: "\n").first?.split(separator: "\t", omittingEmptySubsequences: false) ?? []
        guard fields.count == 5, fields[0] == ChainSignature.header, let entries = Int(fields[1]),
            let head = SHA256Digest(hex: fields[2]), let key = ArchivePublicKey(text: String(fields[3])),
            let signature = Hex.decode(fields[4])
        else { return nil }
        self.init(entries: entries, head: head, publicKey: key, signature: signature)
    }

    /// True when the signature is `key`'s over this chain place, count and head.
    public func isValid(chain relativePath: String, key: ArchivePublicKey) -> Bool {
        key == publicKey
            && key.verifies(signature, over: ChainSignature.message(chain: relativePath, entries: entries, head: head))
    }
}

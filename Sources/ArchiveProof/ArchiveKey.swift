// The box's own Ed25519 key: the private half under the state directory (0600, recd's only),
// the public half beside the archive (so a copy of the archive carries it, and any reader of
// the archive can print it) and wherever a verifier keeps it.

import Platform

/// An Ed25519 public key, written `ed25519:<64 hex digits>`. A plain value: any thread.
public struct ArchivePublicKey: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    static let prefix = "ed25519:"

    init(validated bytes: [UInt8]) { self.bytes = bytes }

    /// `ed25519:<64 hex digits>` (surrounding white space ignored); nil for anything else.
    public init?(text: String) {
        let trimmed = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" })
        guard trimmed.count == 1, trimmed[0].hasPrefix(ArchivePublicKey.prefix),
            let bytes = Hex.decode(trimmed[0].dropFirst(ArchivePublicKey.prefix.count)),
            bytes.count == Sodium.publicKeyBytes
        else { return nil }
        self.bytes = bytes
    }

    /// The text form, `ed25519:<hex>`.
    public var text: String { ArchivePublicKey.prefix + Hex.encode(bytes) }
    public var description: String { text }

    /// The key in `argument`: the text form itself, or a file holding it.
    public static func load(_ argument: String) throws(ProofError) -> ArchivePublicKey {
        if let key = ArchivePublicKey(text: argument) { return key }
        // A public key file is one short line; more is not one. A path the caller names may be
        // a link; a FIFO or a device is refused, not waited on.
        guard let bytes = try ChainFiles.readSmall(argument, followingLinks: true) else {
            throw .system(SystemError(.noSuchFileOrDirectory, operation: "open", path: argument))
        }
        guard let key = ArchivePublicKey(text: String(decoding: bytes, as: UTF8.self)) else {
            throw .invalidKey(path: argument, reason: "no line ed25519:<64 hex digits>")
        }
        return key
    }

    /// True when `signature` is this key's over `message`.
    public func verifies(_ signature: [UInt8], over message: [UInt8]) -> Bool {
        guard Sodium.ready else { return false }
        return Sodium.verifyDetached(signature, message: message, publicKey: bytes)
    }
}

/// The box's private signing key. Immutable after loading: any thread may sign with it.
///
/// Owned by the daemon (`Startup` loads it once and hands it to the archive's chain keeper);
/// the secret never leaves this object except into the key file.
public final class ArchiveSigningKey: Sendable {
    public let publicKey: ArchivePublicKey
    /// When the key was made (microseconds since 1970, UTC): segments that start before it were
    /// recorded before the archive proved itself, and are not chained after a crash.
    public let createdMicroseconds: Int64
    private let secret: [UInt8]

    /// The key file's first word: what it is and its format's version.
    static let header = "recd-archive-key-1"

    private init(secret: [UInt8], created: Int64) throws(ProofError) {
        guard let publicBytes = Sodium.publicKey(ofSecretKey: secret) else {
            throw .invalidKey(path: "(secret key)", reason: "not an Ed25519 secret key")
        }
        self.secret = secret
        publicKey = ArchivePublicKey(validated: publicBytes)
        createdMicroseconds = created
    }

    /// The key at `path`, or a new one made there (0600, created exclusively: of two starts at
    /// once, one makes it and the other reads it) with `now` as its creation time.
    public static func loadOrCreate(path: String, now microseconds: Int64) throws(ProofError) -> ArchiveSigningKey {
        guard Sodium.ready else { throw .libraryUnavailable }
        if FileSystem.exists(path) { return try load(path: path) }
        guard let pair = Sodium.signKeypair() else { throw .libraryUnavailable }
        let line = "\(header) ed25519-secret \(Hex.encode(pair.secretKey)) \(microseconds)\n"
        do throws(SystemError) {
            let file = try OwnedFile(path, .createExclusive(permissions: 0o600))
            try file.writeAll(Array(line.utf8), at: 0)
            try file.sync()
            try file.close()
            try FileSystem.syncDirectory(FileSystem.directoryName(of: path))
        } catch {
            if error.errno == .fileExists { return try load(path: path) }
            throw .system(error)
        }
        return try ArchiveSigningKey(secret: pair.secretKey, created: microseconds)
    }

    /// Reads the key file recd wrote.
    public static func load(path: String) throws(ProofError) -> ArchiveSigningKey {
        let file = try proofCall { () throws(SystemError) in try OwnedFile(path, .readOnly) }
        let bytes = try proofCall { () throws(SystemError) in try file.read(count: 4096, at: 0) }
        let words = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard words.count == 4, words[0] == header, words[1] == "ed25519-secret",
            let secret = Hex.decode(words[2]), secret.count == Sodium.secretKeyBytes, let created = Int64(words[3])
        else {
            throw .invalidKey(
                path: path,
                reason: "not the key file recd writes; move it aside and recd makes a new key at its next start")
        }
        return try ArchiveSigningKey(secret: secret, created: created)
    }

    /// The detached Ed25519 signature of `message`.
    public func sign(_ message: [UInt8]) -> [UInt8] { Sodium.signDetached(message, secretKey: secret) }

    /// Writes `publicKey` to `path` (0644) when the file does not already hold it: beside the
    /// archive, where readers and copies of the archive find it.
    public func publish(to path: String) throws(ProofError) {
        // Beside the archive, where others may write: never through a link, never a FIFO's wait.
        let existing = (try? ChainFiles.readSmall(path)).flatMap {
            ArchivePublicKey(text: String(decoding: $0, as: UTF8.self))
        }
        if existing == publicKey { return }
        try ChainFiles.replace(path, with: Array((publicKey.text + "\n").utf8), mode: 0o644)
    }
}

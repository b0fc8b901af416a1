// recd's own record of what it signed (docs/archive-proof.md, "What recd remembers"): per chain,
// the entry count and head of its last signature, and the entry it is about to append, kept in
// the state directory, where a writer of the archive cannot reach. A chain and its signature
// prove what recd signed only as far as the archive still holds them: an older chain with its
// older signature proves too. The record is what says the chain was longer.
//
// `state_dir/chain-heads/YYYY/MM/DD/<app>-<stream>.chain.head`, one line:
//   recd-chain-head-1  SIGNED_ENTRIES  SIGNED_HEAD  PENDING_ENTRIES  PENDING_HEAD
// (tab-separated; `0` and `-` for none), replaced whole (write, fsync, rename) at each change.

import Platform

/// A chain's head: how many entries, and the last one's hash. A plain value: any thread.
public struct ChainHead: Hashable, Sendable, CustomStringConvertible {
    public var entries: Int
    public var head: SHA256Digest

    public init(entries: Int, head: SHA256Digest) {
        self.entries = entries
        self.head = head
    }

    /// `24 entries (head 3f2a…9c01)`.
    public var description: String {
        let hex = head.hex
        return "\(entries) \(entries == 1 ? "entry" : "entries") (head \(hex.prefix(8))…\(hex.suffix(4)))"
    }
}

/// What recd last signed of one chain, and what it was appending. A plain value: any thread.
public struct ChainHeadRecord: Hashable, Sendable {
    /// The head of the last signature recd wrote; nil before its first.
    public var signed: ChainHead?
    /// The entry being appended: recorded before its line reaches the chain, cleared once it is
    /// signed. After a crash in between, the chain may hold this one line past `signed`.
    public var pending: ChainHead?

    public init(signed: ChainHead?, pending: ChainHead? = nil) {
        self.signed = signed
        self.pending = pending
    }

    static let header = "recd-chain-head-1"

    /// The file's text.
    public var text: String {
        func fields(_ head: ChainHead?) -> [String] { head.map { [String($0.entries), $0.head.hex] } ?? ["0", "-"] }
        return ([ChainHeadRecord.header] + fields(signed) + fields(pending)).joined(separator: "\t") + "\n"
    }

    /// Parses a record's text; nil when it is not one `text` writes.
    public init?(text: String) {
        guard let line = text.split(separator: "\n", omittingEmptySubsequences: false).first else { return nil }
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard fields.count == 5, fields[0] == ChainHeadRecord.header,
            case .some(let signed) = Self.head(fields[1], fields[2]),
            case .some(let pending) = Self.head(fields[3], fields[4])
        else { return nil }
        // A pending entry follows the signed head directly.
        if let pending, pending.entries != (signed?.entries ?? 0) + 1 { return nil }
        self.init(signed: signed, pending: pending)
    }

    /// `(entries, hex)`: `.some(nil)` for `0 -`, nil for anything malformed.
    private static func head(_ count: Substring, _ hex: Substring) -> ChainHead?? {
        if count == "0" && hex == "-" { return .some(nil) }
        guard count.utf8.count <= 9, let entries = Int(count), entries >= 1,
            entries <= ChainLimits.maximumEntries, let digest = SHA256Digest(hex: hex)
        else { return nil }
        return .some(ChainHead(entries: entries, head: digest))
    }
}

/// The records of one recd, in a directory of its state directory. Immutable: any thread (a
/// chain's record is written under its chain's lock).
public struct ChainHeads: Sendable {
    public let directory: String

    /// `state_dir/chain-heads`.
    public static let directoryName = "chain-heads"
    static let suffix = ".head"

    public init(directory: String) { self.directory = directory }

    /// The record of `chain` (its path under the archive root); nil when there is none.
    public func record(of chain: String) throws(ProofError) -> ChainHeadRecord? {
        let path = try recordPath(of: chain)
        guard let bytes = try ChainFiles.readSmall(path) else { return nil }
        guard let record = ChainHeadRecord(text: String(decoding: bytes, as: UTF8.self)) else {
            throw .invalidRecord(path: path)
        }
        return record
    }

    /// Replaces the record of `chain` (0640; directories made 0750).
    func write(_ record: ChainHeadRecord, of chain: String) throws(ProofError) {
        let path = try recordPath(of: chain)
        try proofCall { () throws(SystemError) in
            try FileSystem.makeDirectories(FileSystem.directoryName(of: path), mode: 0o750)
        }
        try ChainFiles.replace(path, with: Array(record.text.utf8), mode: 0o640)
    }

    /// The chains with a record (paths under the archive root), sorted; none when the
    /// directory cannot be read.
    public func chains() -> [String] {
        FileSystem.files(under: directory, withSuffix: ChainLayout.chainSuffix + Self.suffix).compactMap {
            ChainLayout.relative($0, to: directory).map { String($0.dropLast(Self.suffix.count)) }
        }
    }

    /// Whether the directory can be listed by whoever asks (recctl as its caller).
    public var isReadable: Bool { FileSystem.isListableDirectory(directory) }

    private func recordPath(of chain: String) throws(ProofError) -> String {
        let components = chain.split(separator: "/", omittingEmptySubsequences: false)
        guard !chain.hasPrefix("/"), components.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }),
            chain.hasSuffix(ChainLayout.chainSuffix)
        else {
            throw .unsafeFile(path: chain, reason: "not a chain's path under the archive root")
        }
        return ChainLayout.join(directory, chain) + Self.suffix
    }
}

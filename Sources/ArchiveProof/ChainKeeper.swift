// Appending to the archive's hash chains (docs/archive-proof.md). Appenders take turns under the
// chain file's `flock` (recd's prover thread and its retention on the worker, or two
// processes). Under the lock, before anything is written, the chain is checked against what
// recd signed (`ChainCheck`): a chain that does not hold it gets nothing more, and its head is
// never signed again. Each append is noted in recd's record (`ChainHeads`, in the state
// directory) before its line is written and again once it is signed, so that after a crash
// recd can tell its own unsigned line from anyone else's, and `prove` can tell a chain that was
// cut short or put back from the one recd signed.

import Platform

/// Appends to chains and signs their heads. Immutable: any thread (appends to one chain take
/// turns under its file lock). Owned by the daemon's archive (recorder service), which hands it
/// to the jobs that finish or delete segments.
public final class ChainKeeper: Sendable {
    public let archiveDirectory: String
    public let key: ArchiveSigningKey
    /// recd's record of what it signed, outside the archive.
    public let heads: ChainHeads

    public init(archiveDirectory: String, key: ArchiveSigningKey, heads: ChainHeads) {
        self.archiveDirectory = archiveDirectory
        self.key = key
        self.heads = heads
    }

    /// What a new entry says (the sequence and previous hash are the chain's to give).
    public struct Facts: Hashable, Sendable {
        public var kind: ChainEntry.Kind
        public var sha256: SHA256Digest
        public var start: String
        public var frames: Int
        public var endReason: String
        /// Relative to the archive root.
        public var path: String
        public var removedAt: String?

        public init(
            kind: ChainEntry.Kind, sha256: SHA256Digest, start: String, frames: Int, endReason: String, path: String,
            removedAt: String? = nil
        ) {
            self.kind = kind
            self.sha256 = sha256
            self.start = start
            self.frames = frames
            self.endReason = endReason
            self.path = path
            self.removedAt = removedAt
        }
    }

    /// Appends an entry to the chain at `chain` (relative to the root), durably, and signs the
    /// new head. A line a crash cut short (no newline) is dropped first: it was never signed. A
    /// segment the chain already names with these bytes is not added again: its entry returns.
    ///
    /// Throws `.tampered` when the chain does not hold what recd signed of it, or its path or its
    /// signature's holds a link, a FIFO or an oversized file (nothing is written then).
    ///
    /// Threads: any; blocks on the file lock, the chain's fsync and three atomic replacements
    /// (the record twice, the signature once).
    @discardableResult
    public func append(_ facts: Facts, chain: String) throws(ProofError) -> ChainEntry {
        let path = ChainLayout.join(archiveDirectory, chain)
        let (file, created) = try unsafeIsTampered(chain) { () throws(ProofError) in
            try ChainFiles.openForAppending(path)
        }
        try proofCall { () throws(SystemError) in try file.lockExclusive() }
        // Read under the lock: the other appender may have moved them on meanwhile.
        let record = try heads.record(of: chain)
        let signatureBytes = try unsafeIsTampered(chain) { () throws(ProofError) in
            try ChainFiles.readSmall(path + ChainLayout.signatureSuffix)
        }
        var existing: ChainEntry?
        let verified = try ChainCheck.verify(
            file: file, chain: chain, signatureBytes: signatureBytes, record: record, key: key.publicKey
        ) { entry in
            if existing == nil, facts.kind == .segment, entry.kind == .segment, entry.path == facts.path,
                entry.sha256 == facts.sha256
            {
                existing = entry
            }
        }
        let signed = verified.head
        if verified.pendingUnsigned, let head = verified.head {
            try sign(head, chain: chain, path: path)
            try heads.write(ChainHeadRecord(signed: head), of: chain)
        }
        // A segment chained already (a crash after its entry, before the index noted it) keeps
        // its one entry.
        if let existing { return existing }
        guard (signed?.entries ?? 0) < ChainLimits.maximumEntries else {
            throw .unsafeFile(path: path, reason: "full: \(ChainLimits.maximumEntries) entries, the most a day holds")
        }
        let entry = ChainEntry(
            sequence: (signed?.entries ?? 0) + 1, kind: facts.kind, previous: signed?.head ?? .zero,
            sha256: facts.sha256, start: facts.start, frames: facts.frames, endReason: facts.endReason,
            path: facts.path, removedAt: facts.removedAt)
        let line = entry.line
        let head = ChainHead(entries: entry.sequence, head: SHA256Digest.of(Array(line.utf8)))
        // Noted before the line lands: after a crash, this line is recd's and no one else's.
        try heads.write(ChainHeadRecord(signed: signed, pending: head), of: chain)
        try proofCall { () throws(SystemError) in
            // Whatever follows the last whole line (a line a crash cut short) goes first.
            try file.truncate(to: verified.endOffset)
            try file.writeAll(Array((line + "\n").utf8), at: verified.endOffset)
            try file.sync()
            if created { try FileSystem.syncDirectory(FileSystem.directoryName(of: path)) }
        }
        // Signed while the lock is held: the signature on disk is always of a head that was.
        try sign(head, chain: chain, path: path)
        try heads.write(ChainHeadRecord(signed: head), of: chain)
        return entry
    }

    /// The segment entries of the chain at `chain` by path (their SHA-256), after checking that
    /// the chain holds what recd signed (`.tampered` when not; an empty map when there is no
    /// chain). Removed segments are left out. Reads only, under the chain's lock.
    ///
    /// Threads: any (`archive verify` on the worker); blocks on the lock and reads the chain.
    public func segments(inChain chain: String) throws(ProofError) -> [String: SHA256Digest] {
        let path = ChainLayout.join(archiveDirectory, chain)
        let record = try heads.record(of: chain)
        guard let file = try ChainFiles.openForReading(path, maximumBytes: ChainLimits.maximumChainBytes) else {
            if let signed = record?.signed {
                throw .tampered(
                    ChainBreak(chain: chain, entry: nil, reason: "the chain file is gone; recd signed \(signed)"))
            }
            return [:]
        }
        try proofCall { () throws(SystemError) in try file.lockExclusive() }
        let signatureBytes = try ChainFiles.readSmall(path + ChainLayout.signatureSuffix)
        var segments: [String: SHA256Digest] = [:]
        _ = try ChainCheck.verify(
            file: file, chain: chain, signatureBytes: signatureBytes, record: try heads.record(of: chain),
            key: key.publicKey
        ) { entry in
            switch entry.kind {
            case .segment: segments[entry.path] = entry.sha256
            case .removed: segments[entry.path] = nil
            }
        }
        return segments
    }

    /// One line of a chain as it is now: its number (from 1), its entry (nil: not one), its hash.
    public struct Line: Sendable {
        public var number: Int
        public var entry: ChainEntry?
        public var hash: SHA256Digest
    }

    /// Every line of the chain at `chain` as it is now (none when there is no chain file), at
    /// most `ChainLimits.maximumEntries`: for naming what changed in a chain found not to hold.
    ///
    /// Threads: any; reads the chain (no lock: a diagnosis, not a verdict).
    public func lines(ofChain chain: String) throws(ProofError) -> [Line] {
        let path = ChainLayout.join(archiveDirectory, chain)
        guard let file = try ChainFiles.openForReading(path, maximumBytes: ChainLimits.maximumChainBytes) else {
            return []
        }
        var reader = ChainLineReader(file)
        var lines: [Line] = []
        while lines.count < ChainLimits.maximumEntries, let line = try reader.next() {
            let text = String(decoding: line.bytes, as: UTF8.self)
            let entry =
                line.tooLong ? nil : ChainEntry(line: text).flatMap { Array($0.line.utf8) == line.bytes ? $0 : nil }
            lines.append(Line(number: lines.count + 1, entry: entry, hash: SHA256Digest.of(line.bytes)))
        }
        return lines
    }

    /// A link, a FIFO or an oversized file where the chain or its signature belongs is not what
    /// recd left there: the chain does not hold what it signed.
    private func unsafeIsTampered<T>(_ chain: String, _ body: () throws(ProofError) -> T) throws(ProofError) -> T {
        do throws(ProofError) {
            return try body()
        } catch {
            guard case .unsafeFile(let path, let reason) = error else { throw error }
            throw .tampered(ChainBreak(chain: chain, entry: nil, reason: "\(path) is \(reason)"))
        }
    }

    private func sign(_ head: ChainHead, chain: String, path: String) throws(ProofError) {
        let signature = ChainSignature(
            entries: head.entries, head: head.head, publicKey: key.publicKey,
            signature: key.sign(ChainSignature.message(chain: chain, entries: head.entries, head: head.head)))
        try ChainFiles.replace(path + ChainLayout.signatureSuffix, with: Array(signature.line.utf8), mode: 0o644)
    }
}

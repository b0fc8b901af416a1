// One chain's proof, a line at a time (`ArchiveProver`): each line's form, sequence and link to
// the one before as it is read; then the signature against the line it counts, and recd's
// record of what it signed against the line it names. Only the entries and two lines' hashes
// are kept, never the chain's text. What does not hold is named: the first breaks one by one,
// the rest of a chain that is nothing but breaks in one line.

/// The proof of one chain in progress. A value owned by the caller while it reads the chain.
struct ChainProof {
    let chain: String
    /// The signature file's bytes (nil: none) and recd's record (nil: none given, or none kept).
    let signatureBytes: [UInt8]?
    let signature: ChainSignature?
    let record: ChainHeadRecord?

    private(set) var entries: [ChainEntry] = []
    private(set) var lineCount = 0
    private var previous = SHA256Digest.zero
    private var broken = false
    /// The hashes of the lines the signature and the record count (the others are not kept).
    private var wanted: Set<Int> = []
    private var hashes: [Int: SHA256Digest] = [:]
    /// Breaks named one by one, then counted: a chain of junk lines is one finding more, not
    /// millions.
    private var breaksNamed = 0
    private var breaksCounted = 0
    private var firstCounted = 0
    private var readStopped = false

    static let namedBreaks = 16

    init(chain: String, signature: [UInt8]?, record: ChainHeadRecord?) {
        self.chain = chain
        signatureBytes = signature
        self.signature = signature.flatMap { ChainSignature(text: String(decoding: $0, as: UTF8.self)) }
        self.record = record
        for head in [self.signature.map(\.entries), record?.signed?.entries, record?.pending?.entries] {
            if let head { wanted.insert(head) }
        }
    }

    /// The next line (without its newline); `tooLong`: longer than any entry (its bytes were
    /// not kept).
    mutating func add(_ raw: [UInt8], tooLong: Bool, report: inout ProofReport) {
        let number = lineCount + 1
        lineCount = number
        let text = String(decoding: raw, as: UTF8.self)
        let hash = SHA256Digest.of(raw)
        if wanted.contains(number) { hashes[number] = hash }
        defer { previous = hash }
        guard !tooLong, let entry = ChainEntry(line: text), Array(entry.line.utf8) == raw else {
            breakAt(number, "not a chain entry", report: &report)
            return
        }
        if entry.previous != previous || entry.sequence != number {
            let reason =
                entry.sequence != number
                ? "it says it is entry \(entry.sequence): entries removed, inserted or reordered"
                : "the previous entry's hash differs: the entry before it was edited, removed or reordered"
            breakAt(number, reason, report: &report)
        }
        entries.append(entry)
    }

    /// The chain has more lines than any chain recd writes: the rest is not read.
    mutating func tooMany(report: inout ProofReport) {
        readStopped = true
        broken = true
        report.findings.append(
            .chainBroken(
                chain: chain, entry: lineCount + 1,
                reason: "more than \(ChainLimits.maximumEntries) lines, more than recd writes in a day; "
                    + "the rest was not read"))
    }

    private mutating func breakAt(_ number: Int, _ reason: String, report: inout ProofReport) {
        broken = true
        if breaksNamed < Self.namedBreaks {
            breaksNamed += 1
            report.findings.append(.chainBroken(chain: chain, entry: number, reason: reason))
        } else {
            if breaksCounted == 0 { firstCounted = number }
            breaksCounted += 1
        }
    }

    /// The signature and the record against what was read; the entries read.
    mutating func finish(key: ArchivePublicKey, report: inout ProofReport) -> [ChainEntry] {
        report.chains += 1
        if breaksCounted > 0 {
            report.findings.append(
                .chainBroken(
                    chain: chain, entry: firstCounted,
                    reason: "and \(breaksCounted) more lines after it that are not entries or do not follow"))
        }
        checkRecord(report: &report)
        guard lineCount > 0 else { return entries }
        guard signatureBytes != nil else {
            report.findings.append(.unsigned(chain: chain, entries: 1...lineCount))
            return entries
        }
        guard let signature else {
            report.findings.append(.badSignature(chain: chain, reason: "not a signature file recd writes"))
            return entries
        }
        guard signature.publicKey == key else {
            report.findings.append(
                .badSignature(chain: chain, reason: "signed by \(signature.publicKey.text), not by the key given"))
            return entries
        }
        guard signature.isValid(chain: chain, key: key) else {
            report.findings.append(
                .badSignature(chain: chain, reason: "the signature does not verify (replaced, edited, or moved here)"))
            return entries
        }
        // The signed head must be the hash of the line it counts.
        guard signature.entries >= 1, signature.entries <= lineCount, hashes[signature.entries] == signature.head
        else {
            report.findings.append(
                .badSignature(chain: chain, reason: "it signs entry \(signature.entries) with another content"))
            return entries
        }
        if signature.entries < lineCount && !readStopped {
            report.findings.append(.unsigned(chain: chain, entries: (signature.entries + 1)...lineCount))
        } else if !broken && signature.head == previous {
            report.signedChains += 1
        }
        return entries
    }

    /// Against recd's record: the chain must reach the head recd signed (or the one it was
    /// signing when it stopped, when the signature file is of that one), and hold it there.
    private func checkRecord(report: inout ProofReport) {
        guard let record else { return }
        let signatureHead = signature.map { ChainHead(entries: $0.entries, head: $0.head) }
        let signed = record.pending.flatMap { $0 == signatureHead ? $0 : nil } ?? record.signed
        guard let signed else { return }
        if lineCount < signed.entries {
            report.findings.append(
                .rolledBack(
                    chain: chain,
                    reason: "recd signed \(signed), the chain holds \(lineCount): entries \(lineCount + 1)-"
                        + "\(signed.entries) are gone (cut short, or an older chain put back)"))
        } else if hashes[signed.entries] != signed.head {
            report.findings.append(
                .rolledBack(
                    chain: chain,
                    reason: "entry \(signed.entries) is not the one recd signed (\(signed)): the chain up to it "
                        + "was rewritten"))
        } else if let signatureHead, signatureHead.entries < signed.entries {
            report.findings.append(
                .rolledBack(
                    chain: chain,
                    reason: "its signature is an older one: it covers \(signatureHead), recd signed \(signed)"))
        }
    }
}

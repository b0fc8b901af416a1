// Before recd appends to a chain it checks that the chain is still what it signed: the
// signature file is its own over this chain, the same one its record in the state directory
// names (not an older one put back), every line up to that head is an entry linked to the one
// before, and the line at the head hashes to it. Lines past the head are adopted only when they
// are the one entry recd itself noted as being appended (a crash before its signature); any
// other line there was not written by recd. The first thing that does not hold is named, with
// what was expected and what was found, and recd appends and signs nothing.
//
// Pure functions over an open file: any thread.

import Platform

/// What does not hold of a chain against what recd signed: where it shows, and what was
/// expected and found there. A plain value: any thread.
public struct ChainBreak: Hashable, Sendable, CustomStringConvertible {
    /// The chain's path under the archive root.
    public var chain: String
    /// The entry (line, from 1) where it shows; nil for the signature file or the chain whole.
    public var entry: Int?
    /// What was expected and what was found, in words.
    public var reason: String

    public init(chain: String, entry: Int?, reason: String) {
        self.chain = chain
        self.entry = entry
        self.reason = reason
    }

    public var description: String {
        "chain \(chain)\(entry.map { " at entry \($0)" } ?? "") does not hold what recd signed: \(reason)"
    }
}

/// A chain as far as it holds what recd signed: what `ChainCheck.verify` found.
struct VerifiedChain {
    /// Its last entry's number and hash; nil for an empty chain.
    var head: ChainHead?
    /// Where the next line goes (after the last whole line).
    var endOffset: Int64
    /// The last line is the entry recd noted as pending and never signed (a crash between the
    /// two): recd signs it before anything else.
    var pendingUnsigned: Bool
}

enum ChainCheck {
    /// Checks the chain open in `file` (at `chain` under the root) against its signature file's
    /// bytes (nil: none) and recd's record (nil: none, a chain recd has not signed yet, or one
    /// from before records were kept: its signature is trusted then). `visit` sees each entry
    /// that holds, in order. Throws `.tampered` naming the first thing that does not hold.
    static func verify(
        file: OwnedFile, chain: String, signatureBytes: [UInt8]?, record: ChainHeadRecord?, key: ArchivePublicKey,
        visit: (ChainEntry) -> Void = { _ in }
    ) throws(ProofError) -> VerifiedChain {
        func broken(_ entry: Int?, _ reason: String) -> ProofError {
            .tampered(ChainBreak(chain: chain, entry: entry, reason: reason))
        }
        var signature: ChainHead?
        if let signatureBytes {
            guard let parsed = ChainSignature(text: String(decoding: signatureBytes, as: UTF8.self)),
                parsed.isValid(chain: chain, key: key)
            else {
                throw broken(
                    nil,
                    "its signature file is not recd's signature of this chain (replaced, edited, another key's, "
                        + "or moved here from another chain)")
            }
            signature = ChainHead(entries: parsed.entries, head: parsed.head)
        }
        // What the chain must reproduce, and the one line past it recd may have written unsigned.
        let trusted: ChainHead?
        var adoptable: ChainHead?
        if let record {
            if signature == record.signed {
                trusted = record.signed
                adoptable = record.pending
            } else if let pending = record.pending, signature == pending {
                // Signed, and stopped before noting it.
                trusted = pending
            } else {
                throw broken(nil, signatureMismatch(signature, signed: record.signed))
            }
        } else {
            trusted = signature
        }
        let trustedEntries = trusted?.entries ?? 0

        var reader = ChainLineReader(file)
        var previous = SHA256Digest.zero
        var count = 0
        var end: Int64 = 0
        var pendingUnsigned = false
        while let line = try reader.next() {
            let number = count + 1
            guard line.terminated else {
                // recd writes a line with its newline in one pwrite: a line without one was cut
                // by a crash, or is not recd's; past the signed head it was never signed.
                guard number > trustedEntries else {
                    throw broken(number, "entry \(number) is cut short (no newline); recd signed \(trusted.text)")
                }
                break
            }
            let adopting = number == trustedEntries + 1 && adoptable?.entries == number
            guard number <= trustedEntries || adopting else {
                throw broken(
                    number,
                    "entries from \(number) on lie past the head recd signed (\(trusted.text)): recd did not write them"
                )
            }
            let text = String(decoding: line.bytes, as: UTF8.self)
            guard !line.tooLong, let entry = ChainEntry(line: text), Array(entry.line.utf8) == line.bytes else {
                throw broken(number, "line \(number) is not a chain entry")
            }
            guard entry.sequence == number else {
                throw broken(number, "line \(number) says it is entry \(entry.sequence)")
            }
            guard entry.previous == previous else {
                throw broken(
                    number,
                    "it names \(short(entry.previous)) as the previous entry's hash, but entry \(number - 1) hashes "
                        + "to \(short(previous)) (an entry before it was edited, removed, inserted or reordered)")
            }
            let hash = SHA256Digest.of(line.bytes)
            if let trusted, number == trusted.entries, hash != trusted.head {
                throw broken(
                    number,
                    "it hashes to \(short(hash)), recd signed \(short(trusted.head)) here: an entry up to \(number) "
                        + "was edited or replaced and the links after it recomputed")
            }
            if adopting, let adoptable {
                guard hash == adoptable.head else {
                    throw broken(
                        number,
                        "it hashes to \(short(hash)), not to the entry recd was appending (\(short(adoptable.head))): "
                            + "recd did not write it")
                }
                pendingUnsigned = true
            }
            visit(entry)
            previous = hash
            count = number
            end = line.end
        }
        guard count >= trustedEntries else {
            let gone =
                count + 1 == trustedEntries
                ? "entry \(trustedEntries) was" : "entries \(count + 1)-\(trustedEntries) were"
            throw broken(
                nil,
                "it holds \(count) \(count == 1 ? "entry" : "entries"), recd signed \(trusted.text): \(gone) "
                    + "removed (cut short, or an older chain put back)")
        }
        return VerifiedChain(
            head: count > 0 ? ChainHead(entries: count, head: previous) : nil, endOffset: end,
            pendingUnsigned: pendingUnsigned)
    }

    /// Why a chain's signature is not the one recd's record names.
    static func signatureMismatch(_ signature: ChainHead?, signed: ChainHead?) -> String {
        guard let signature else { return "its signature file is gone; recd signed \(signed.text)" }
        guard let signed else { return "its signature covers \(signature), but recd has signed none of this chain" }
        if signature.entries < signed.entries {
            return "its signature is an older one: it covers \(signature), recd signed \(signed) (rolled back)"
        }
        return "its signature covers \(signature), recd last signed \(signed)"
    }

    /// The first 8 hex digits and the last 4: enough to tell two heads apart in a message.
    static func short(_ digest: SHA256Digest) -> String {
        let hex = digest.hex
        return "\(hex.prefix(8))…\(hex.suffix(4))"
    }
}

extension Optional where Wrapped == ChainHead {
    /// `24 entries (head …)`, or `none` for a chain recd has not signed.
    var text: String { map(\.description) ?? "none of it" }
}

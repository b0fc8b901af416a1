// A clip's proof (`recctl archive export --proof`): a text file beside the clip that lets anyone
// with the box's public key check, on any machine and without the archive, that the clip is
// what recd exported and which chained segments it was cut from. It holds the clip's SHA-256,
// its SOURCE_SEGMENT values (segment@first frame+frames), and for each source's chain its
// entries up to the signed head with that signature; the whole is signed with the box's key.
//
//   recd-clip-proof-1
//   clip      <sha256>  <file name>
//   source    2026/12/02/app-main-20261202T100000.000Z.flac@48000+96000
//   chain     2026/12/02/app-main.chain
//   entry     <chain line>            (as many as the signature covers)
//   signature <the .chain.sig line>
//   box       <Ed25519 signature of every line above, each ending in a newline>
//
// (fields separated by one tab). Pure functions over files: any thread.

import Platform

public enum ClipProof {
    static let header = "recd-clip-proof-1"

    /// The proof for a clip whose bytes hash to `clip`, cut from `sources` (SOURCE_SEGMENT
    /// values, paths under `archiveDirectory`). Throws `.notChained` when a source is in no
    /// signed chain yet.
    public static func make(
        clip: SHA256Digest, clipName: String, sources: [String], archiveDirectory: String, key: ArchiveSigningKey
    ) throws(ProofError) -> String {
        var lines = [header, "clip\t\(clip.hex)\t\(clean(FileSystem.fileName(of: clipName)))"]
        lines += sources.map { "source\t\(clean($0))" }
        for found in try sourceChains(sources: sources, archiveDirectory: archiveDirectory) {
            lines.append("chain\t\(found.chain)")
            lines += found.lines.map { "entry\t\($0)" }
            lines.append("signature\t\(found.signature)")
        }
        let body = lines.map { $0 + "\n" }.joined()
        return body + "box\t\(Hex.encode(key.sign(Array(body.utf8))))\n"
    }

    /// One day's chain that names a clip's sources: its entries up to the signed head, the
    /// signature line, and which of those entries (1-based) are the sources'. A plain value.
    public struct SourceChain: Sendable, Equatable {
        /// Relative to the archive's root (`2026/12/02/app-main.chain`).
        public var chain: String
        public var lines: [String]
        public var signature: String
        public var sourceEntries: [Int]
    }

    /// The signed chains that name `sources` (SOURCE_SEGMENT values), each chain once, in the
    /// order of the sources. Throws `.notChained` when a source is in no signed chain yet.
    public static func sourceChains(sources: [String], archiveDirectory: String) throws(ProofError) -> [SourceChain] {
        var chains: [SourceChain] = []
        for source in sources {
            let path = segmentPath(ofSource: source)
            let day = FileSystem.directoryName(of: path)
            if let index = chains.firstIndex(where: { chain in
                chain.lines.contains { ChainEntry(line: $0).map { $0.kind == .segment && $0.path == path } ?? false }
            }) {
                if let entry = chains[index].lines.firstIndex(where: { ChainEntry(line: $0)?.path == path }) {
                    chains[index].sourceEntries.append(entry + 1)
                }
                continue
            }
            var found: SourceChain?
            for chainFile in FileSystem.files(under: ChainLayout.join(archiveDirectory, day), withSuffix: ".chain") {
                guard let chain = ChainLayout.relative(chainFile, to: archiveDirectory),
                    FileSystem.directoryName(of: chain) == day,
                    let signatureBytes = try ChainFiles.readSmall(chainFile + ChainLayout.signatureSuffix),
                    let signature = ChainSignature(text: String(decoding: signatureBytes, as: UTF8.self)),
                    let file = try ChainFiles.openForReading(chainFile, maximumBytes: ChainLimits.maximumChainBytes)
                else { continue }
                // The lines the signature covers, read a line at a time (at most its count).
                var reader = ChainLineReader(file)
                var signed: [String] = []
                var entry: Int?
                while signed.count < min(signature.entries, ChainLimits.maximumEntries), let line = try reader.next(),
                    line.terminated, !line.tooLong
                {
                    let text = String(decoding: line.bytes, as: UTF8.self)
                    signed.append(text)
                    if let parsed = ChainEntry(line: text), parsed.kind == .segment, parsed.path == path {
                        entry = signed.count
                    }
                }
                if let entry {
                    found = SourceChain(
                        chain: chain, lines: signed,
                        signature: signature.line.split(separator: "\n").first.map(String.init) ?? "",
                        sourceEntries: [entry])
                    break
                }
            }
            guard let found else { throw .notChained(path: path) }
            chains.append(found)
        }
        return chains
    }

    /// What does not hold of the clip at `clipPath` and its proof (`proofText`, read from
    /// `proofPath`) under `key`; empty when the clip is the one exported from those segments.
    public static func verify(clipPath: String, proofPath: String, proofText: String, key: ArchivePublicKey)
        -> [ProofFinding]
    {
        let lines = proofText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.first == header, let boxIndex = lines.firstIndex(where: { $0.hasPrefix("box\t") }),
            let signature = Hex.decode(lines[boxIndex].dropFirst(4))
        else {
            return [.badProof(path: proofPath, reason: "not a clip proof recd writes")]
        }
        let body = lines[..<boxIndex].map { $0 + "\n" }.joined()
        guard key.verifies(signature, over: Array(body.utf8)) else {
            return [
                .badProof(
                    path: proofPath, reason: "its signature does not verify with \(key.text) (edited, or another key's)"
                )
            ]
        }
        var findings: [ProofFinding] = []
        var clip: SHA256Digest?
        var sources: [String] = []
        var chains: [(name: String, lines: [[UInt8]], signature: [UInt8]?)] = []
        for line in lines[1..<boxIndex] {
            guard let tab = line.firstIndex(of: "\t") else { continue }
            let value = String(line[line.index(after: tab)...])
            switch line[..<tab] {
            case "clip": clip = value.split(separator: "\t").first.flatMap { SHA256Digest(hex: $0) }
            case "source": sources.append(value)
            case "chain": chains.append((value, [], nil))
            case "entry" where !chains.isEmpty: chains[chains.count - 1].lines.append(Array(value.utf8))
            case "signature" where !chains.isEmpty: chains[chains.count - 1].signature = Array((value + "\n").utf8)
            default: break
            }
        }
        do throws(ProofError) {
            if try clip != SHA256Digest.ofFile(clipPath) { findings.append(.clipAltered(path: clipPath)) }
        } catch {
            findings.append(.unreadable(path: clipPath, reason: error.message))
        }
        var report = ProofReport(findings: [], segmentsProven: 0, segmentsRemoved: 0, chains: 0, signedChains: 0)
        var named: Set<String> = []
        for chain in chains {
            let entries = ArchiveProver.checkChain(
                chain: chain.name, lines: chain.lines, signature: chain.signature, key: key, report: &report)
            for entry in entries where entry.kind == .segment { named.insert(entry.path) }
        }
        findings += report.findings
        for source in sources where !named.contains(segmentPath(ofSource: source)) {
            findings.append(.badProof(path: proofPath, reason: "its source \(source) is in none of its chains"))
        }
        return findings
    }

    /// `path@frame+frames` → `path`.
    static func segmentPath(ofSource source: String) -> String {
        guard let at = source.lastIndex(of: "@") else { return source }
        return String(source[..<at])
    }

    private static func clean(_ text: String) -> String {
        String(text.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? "_" : $0 })
    }
}

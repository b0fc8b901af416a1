// Proving an archive (`recctl archive prove`): every segment in a range against its chain, every
// chain against its signature, every segment file against the chains, and, given recd's record
// of what it signed (the state directory's `chain-heads`), every chain against that record: a
// chain cut short or put back from an older copy proves alone, not against the record. Reads
// files only: it runs as whoever calls it, on any machine holding a copy of the archive and
// the public key. Chains are read a line at a time, never whole, never through a link.

import Platform

/// One thing that does not hold, named. A plain value: any thread.
public enum ProofFinding: Hashable, Sendable, CustomStringConvertible {
    /// A chain names the segment and nothing says it was removed, but the file is not there.
    case missing(path: String, chain: String, entry: Int)
    /// The file's SHA-256 is not the one its chain entry holds.
    case altered(path: String, chain: String, entry: Int)
    /// A file no chain names, whose bytes are those of a segment another chain names (moved or
    /// renamed, e.g. into another day).
    case renamed(path: String, from: String)
    /// A segment file no chain names (recorded before the archive proved itself, finished after
    /// recd last chained, or put there by hand).
    case unchained(path: String)
    /// A line is not a chain entry, or does not follow the one before it (a line removed,
    /// edited, inserted or reordered).
    case chainBroken(chain: String, entry: Int, reason: String)
    /// Entries past what the signature covers (or a chain without any signature).
    case unsigned(chain: String, entries: ClosedRange<Int>)
    /// The signature is not the key's over this chain's head (replaced, moved, or another key).
    case badSignature(chain: String, reason: String)
    /// A file could not be read (permissions): it proves nothing either way.
    case unreadable(path: String, reason: String)
    /// A clip's bytes are not those its proof file was signed for (edited after the export).
    case clipAltered(path: String)
    /// A clip's proof file does not hold: not one recd wrote, or its signature does not verify.
    case badProof(path: String, reason: String)
    /// The chain is shorter than, or differs from, what recd's record says it signed (entries
    /// removed with an older signature put back, or the chain deleted).
    case rolledBack(chain: String, reason: String)
    /// A `.partial` no recorder is writing: a crash left it and its recovery has not succeeded.
    /// Nothing proves it.
    case unproven(path: String, reason: String)
    /// A time-stamp token beside a chain that does not hold (forged, edited, for another head,
    /// or its TSA not trusted): it proves no time.
    case badTimeStamp(path: String, reason: String)

    /// The file or chain it names.
    public var name: String {
        switch self {
        case .missing(let path, _, _), .altered(let path, _, _), .renamed(let path, _), .unchained(let path),
            .unreadable(let path, _), .clipAltered(let path), .badProof(let path, _), .unproven(let path, _),
            .badTimeStamp(let path, _):
            return path
        case .chainBroken(let chain, _, _), .unsigned(let chain, _), .badSignature(let chain, _),
            .rolledBack(let chain, _):
            return chain
        }
    }

    /// One word for scripts: `missing`, `altered`, ...
    public var kind: String {
        switch self {
        case .missing: return "missing"
        case .altered: return "altered"
        case .renamed: return "renamed"
        case .unchained: return "unchained"
        case .chainBroken: return "chainBroken"
        case .unsigned: return "unsigned"
        case .badSignature: return "badSignature"
        case .unreadable: return "unreadable"
        case .clipAltered: return "clipAltered"
        case .badProof: return "badProof"
        case .rolledBack: return "rolledBack"
        case .unproven: return "unproven"
        case .badTimeStamp: return "badTimeStamp"
        }
    }

    public var description: String {
        switch self {
        case .missing(let path, let chain, let entry):
            return "missing: \(path) (entry \(entry) of \(chain); not removed by retention)"
        case .altered(let path, let chain, let entry):
            return "altered: \(path) (its SHA-256 differs from entry \(entry) of \(chain))"
        case .renamed(let path, let from):
            return "renamed: \(path) holds the bytes of \(from), which its chain names"
        case .unchained(let path):
            return "unchained: \(path) (no chain names it)"
        case .chainBroken(let chain, let entry, let reason):
            return "chain broken: \(chain) at entry \(entry): \(reason)"
        case .unsigned(let chain, let entries):
            let which =
                entries.count == 1
                ? "entry \(entries.lowerBound)" : "entries \(entries.lowerBound)-\(entries.upperBound)"
            return "unsigned: \(chain) \(which)"
        case .badSignature(let chain, let reason):
            return "bad signature: \(chain).sig: \(reason)"
        case .unreadable(let path, let reason):
            return "unreadable: \(path): \(reason)"
        case .clipAltered(let path):
            return "altered: \(path) is not the clip its proof was signed for (edited after the export)"
        case .badProof(let path, let reason):
            return "bad proof: \(path): \(reason)"
        case .rolledBack(let chain, let reason):
            return "rolled back: \(chain): \(reason)"
        case .unproven(let path, let reason):
            return "unproven: \(path) (\(reason))"
        case .badTimeStamp(let path, let reason):
            return "bad time-stamp: \(path): \(reason)"
        }
    }
}

/// Which part of the archive to prove. A plain value: any thread.
public struct ProofScope: Hashable, Sendable {
    /// Only this app's (and stream's) chains and segments; nil: all.
    public var app: String?
    public var stream: String?
    /// Segments that start in [from, to), ISO 8601 UTC with microseconds
    /// (`2026-12-02T10:00:00.000000Z`, as chains hold START); nil: unbounded.
    public var from: String?
    public var to: String?

    public init(app: String? = nil, stream: String? = nil, from: String? = nil, to: String? = nil) {
        self.app = app
        self.stream = stream
        self.from = from
        self.to = to
    }

    func contains(start: String) -> Bool {
        if let from, start < from { return false }
        if let to, start >= to { return false }
        return true
    }

    /// Whether a day folder (`YYYY/MM/DD`) can hold segments in the range.
    func contains(day: String) -> Bool {
        let iso = day.replacingSlashes()
        if let from, iso < String(from.prefix(10)) { return false }
        if let to, iso > String(to.prefix(10)) { return false }
        return true
    }

    /// Whether a chain or segment file name belongs to the app (and stream).
    func matches(fileName: String, suffix: String) -> Bool {
        guard let app else { return true }
        let prefix = ChainLayout.fileNameComponent(app) + "-"
        guard let stream else { return fileName.hasPrefix(prefix) }
        let full = prefix + ChainLayout.fileNameComponent(stream)
        return suffix == ChainLayout.chainSuffix ? fileName == full + suffix : fileName.hasPrefix(full + "-")
    }
}

extension String {
    fileprivate func replacingSlashes() -> String { String(map { $0 == "/" ? "-" : $0 }) }
}

/// What `ArchiveProver.prove` found. A plain value: any thread.
public struct ProofReport: Hashable, Sendable {
    /// Empty when every segment, chain and signature in the scope holds.
    public var findings: [ProofFinding]
    /// Segments whose file matched their entry.
    public var segmentsProven: Int
    /// Segment entries marked removed by retention (their files are gone, as they should be).
    public var segmentsRemoved: Int
    /// Chains read, and how many of them carried a valid signature of all their entries.
    public var chains: Int
    public var signedChains: Int
    /// `.partial` files a recorder holds locked: being recorded, proven once finished and
    /// chained. Not findings.
    public var beingRecorded: [String] = []
    /// Whether the chains were checked against recd's record of what it signed (rollback).
    public var againstRecord = false
    /// Each chain's entries as read (by its path under the root): what time-stamps are checked
    /// against. Segment entries in the scope are `inScope`.
    public var entriesByChain: [String: [ChainEntry]] = [:]
    /// The segment entries in the scope, by chain.
    public var inScope: [String: [ChainEntry]] = [:]

    public init(findings: [ProofFinding], segmentsProven: Int, segmentsRemoved: Int, chains: Int, signedChains: Int) {
        self.findings = findings
        self.segmentsProven = segmentsProven
        self.segmentsRemoved = segmentsRemoved
        self.chains = chains
        self.signedChains = signedChains
    }

    public var holds: Bool { findings.isEmpty }
}

/// Checks an archive (or a copy of one) with the public key. Threads: the caller's; it reads
/// and hashes every segment in the scope.
public enum ArchiveProver {
    /// `heads`: recd's record of what it signed (`state_dir/chain-heads`, or a copy of it); each
    /// chain in the scope is checked against it too, and a chain it names that is gone is
    /// reported. Nil: the archive proves only itself (an older chain with its older signature
    /// holds).
    public static func prove(
        archiveDirectory root: String, key: ArchivePublicKey, scope: ProofScope, heads: ChainHeads? = nil
    ) -> ProofReport {
        var report = ProofReport(findings: [], segmentsProven: 0, segmentsRemoved: 0, chains: 0, signedChains: 0)
        report.againstRecord = heads != nil
        // Every chain of the app and stream, whatever the range: a file renamed into a day in the
        // range may come from one outside it.
        let chainPaths = FileSystem.files(under: root, withSuffix: ChainLayout.chainSuffix).filter {
            scope.matches(fileName: FileSystem.fileName(of: $0), suffix: ChainLayout.chainSuffix)
        }
        /// Every segment entry, by the path it names, and by its bytes.
        var named: [String: ChainEntry] = [:]
        var byDigest: [SHA256Digest: String] = [:]
        var removed: Set<String> = []
        var inScope: [(chain: String, entry: ChainEntry)] = []
        var chainsRead: Set<String> = []
        for chainPath in chainPaths {
            guard let chain = ChainLayout.relative(chainPath, to: root) else { continue }
            chainsRead.insert(chain)
            let day = FileSystem.directoryName(of: chain)
            let entries = readChain(root: root, chain: chain, key: key, heads: heads, report: &report)
            report.entriesByChain[chain] = entries
            for entry in entries {
                switch entry.kind {
                case .segment:
                    named[entry.path] = entry
                    byDigest[entry.sha256] = entry.path
                    if scope.contains(day: day) && scope.contains(start: entry.start) {
                        inScope.append((chain, entry))
                        report.inScope[chain, default: []].append(entry)
                    }
                case .removed:
                    removed.insert(entry.path)
                }
            }
        }
        // Chains recd signed that are not there at all (a whole day deleted).
        for chain in heads?.chains() ?? [] where !chainsRead.contains(chain) {
            guard scope.matches(fileName: FileSystem.fileName(of: chain), suffix: ChainLayout.chainSuffix),
                scope.contains(day: FileSystem.directoryName(of: chain)),
                let signed = (try? heads?.record(of: chain))??.signed
            else { continue }
            report.findings.append(.rolledBack(chain: chain, reason: "recd signed \(signed); the chain file is gone"))
        }
        // Files in the scope's days that no chain names: renamed (their bytes are a named
        // segment's) or unchained.
        var renamedFrom: Set<String> = []
        let files = FileSystem.files(under: root, withSuffix: ".flac").filter {
            scope.matches(fileName: FileSystem.fileName(of: $0), suffix: ".flac")
        }
        for file in files {
            guard let relative = ChainLayout.relative(file, to: root), named[relative] == nil else { continue }
            guard scope.contains(day: FileSystem.directoryName(of: relative)) else { continue }
            if let digest = try? SHA256Digest.ofArchiveFile(file), let original = byDigest[digest] {
                report.findings.append(.renamed(path: relative, from: original))
                renamedFrom.insert(original)
            } else {
                report.findings.append(.unchained(path: relative))
            }
        }
        checkPartials(root: root, scope: scope, report: &report)
        for (chain, entry) in inScope {
            let file = ChainLayout.join(root, entry.path)
            guard FileSystem.exists(file) else {
                if removed.contains(entry.path) {
                    report.segmentsRemoved += 1
                } else if !renamedFrom.contains(entry.path) {
                    report.findings.append(.missing(path: entry.path, chain: chain, entry: entry.sequence))
                }
                continue
            }
            do throws(ProofError) {
                if try SHA256Digest.ofArchiveFile(file) == entry.sha256 {
                    report.segmentsProven += 1
                } else {
                    report.findings.append(.altered(path: entry.path, chain: chain, entry: entry.sequence))
                }
            } catch {
                report.findings.append(.unreadable(path: entry.path, reason: error.message))
            }
        }
        return report
    }

    /// The suffix of a segment being written (or left by a crash): `SegmentWriter.partialSuffix`
    /// after `.flac`.
    static let partialSuffix = ".flac.partial"

    /// `.partial` files in the scope's days: those a recorder holds locked are being recorded;
    /// any other is a segment a crash left whose recovery has not succeeded: unproven.
    static func checkPartials(root: String, scope: ProofScope, report: inout ProofReport) {
        for file in FileSystem.files(under: root, withSuffix: partialSuffix) {
            guard let relative = ChainLayout.relative(file, to: root),
                scope.matches(fileName: FileSystem.fileName(of: relative), suffix: ".flac"),
                scope.contains(day: FileSystem.directoryName(of: relative))
            else { continue }
            let opened: OwnedFile?
            do throws(ProofError) {
                opened = try ChainFiles.openForReading(file, maximumBytes: .max)
            } catch {
                let reason = "a .partial; whether recd writes it cannot be told: \(error.message)"
                report.findings.append(.unproven(path: relative, reason: reason))
                continue
            }
            guard let opened else { continue }
            if opened.tryLockExclusive() {
                report.findings.append(
                    .unproven(
                        path: relative,
                        reason: "a .partial no recorder is writing: a crash left it and its recovery has not "
                            + "succeeded; `recctl status` says why, and recd tries again"))
            } else {
                report.beingRecorded.append(relative)
            }
        }
    }

    /// The chain's entries as far as they are well-formed and linked, with what does not hold
    /// (broken links, signature, the record) added to `report`. Entries past a break are still
    /// returned: their segments are checked against what they say.
    static func readChain(
        root: String, chain: String, key: ArchivePublicKey, heads: ChainHeads?, report: inout ProofReport
    ) -> [ChainEntry] {
        let path = ChainLayout.join(root, chain)
        var signature: [UInt8]?
        var record: ChainHeadRecord?
        do throws(ProofError) {
            signature = try ChainFiles.readSmall(path + ChainLayout.signatureSuffix)
        } catch {
            report.findings.append(.badSignature(chain: chain, reason: error.message))
        }
        do throws(ProofError) {
            record = try heads?.record(of: chain)
        } catch {
            report.findings.append(.unreadable(path: chain + ".head", reason: error.message))
        }
        var check = ChainProof(chain: chain, signature: signature, record: record)
        do throws(ProofError) {
            guard let file = try ChainFiles.openForReading(path, maximumBytes: ChainLimits.maximumChainBytes) else {
                report.chains += 1
                return []
            }
            var reader = ChainLineReader(file)
            while let line = try reader.next() {
                guard check.lineCount < ChainLimits.maximumEntries else {
                    check.tooMany(report: &report)
                    break
                }
                check.add(line.bytes, tooLong: line.tooLong, report: &report)
            }
        } catch {
            report.chains += 1
            report.findings.append(.unreadable(path: chain, reason: error.message))
            return []
        }
        return check.finish(key: key, report: &report)
    }

    /// `lines` of the chain at `chain` (its path under the root) against `signature` (the
    /// signature file's bytes; nil: none): see `readChain`. For chains held in memory (a
    /// clip's proof).
    static func checkChain(
        chain: String, lines: [[UInt8]], signature: [UInt8]?, key: ArchivePublicKey, report: inout ProofReport
    ) -> [ChainEntry] {
        var check = ChainProof(chain: chain, signature: signature, record: nil)
        for raw in lines {
            guard check.lineCount < ChainLimits.maximumEntries else {
                check.tooMany(report: &report)
                break
            }
            check.add(raw, tooLong: raw.count > ChainLimits.maximumLineBytes, report: &report)
        }
        return check.finish(key: key, report: &report)
    }
}

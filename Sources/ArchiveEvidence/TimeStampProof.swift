// `recctl archive prove`'s time-stamps (docs/archive-proof.md, "Trusted time-stamps"): every
// `<chain>.<entries>.tsr` token beside a chain the proof read, checked with OpenSSL's TS API
// (PKI) — the TSA's signature, its certificate's chain to the roots given, the imprint equal to
// the hash of the chain's line `<entries>` — and, for each segment in the range, the earliest
// trusted time of a token that covers its entry: the segment provably existed before it. A token
// that does not hold is named and proves nothing. Tokens are read as the caller, through no link,
// regular files of at most 64 KiB.
import ArchiveProof
import Foundation
import Glibc
import PKI
import Platform

/// What the archive's time-stamp tokens prove. A plain value.
public struct TimeStampProofReport {
    /// A segment, and the earliest trusted time before which it existed.
    public struct Covered {
        public var path: String
        public var chain: String
        public var entry: Int
        public var before: Int64
        public var token: String
        public var signer: String
    }

    /// A token that holds: the chain head it stamps, when, by which TSA.
    public struct Trusted {
        public var token: String
        public var chain: String
        var entries: Int
        var time: Int64
        public var signer: String
        var signerFingerprint: String
    }

    public var findings: [ProofFinding] = []
    public var covered: [Covered] = []
    /// Every token that holds, by chain and entry count.
    public var trustedTokens: [Trusted] = []
    /// Token files read, and those that hold.
    public var tokens = 0
    public var trusted = 0
    /// Segments in the range no trusted token covers yet.
    public var uncovered: [String] = []

    public init() {}

}

public enum TimeStampProof {
    static let tokenSuffix = ".tsr"

    /// The tokens beside the chains of `report` (the proof just made of the archive at `root`),
    /// against the roots in `caFile` (nil: the system's).
    public static func check(root: String, report: ProofReport, caFile: String?) -> TimeStampProofReport {
        var result = TimeStampProofReport()
        for chain in report.entriesByChain.keys.sorted() {
            let entries = report.entriesByChain[chain] ?? []
            let bySequence = Dictionary(entries.map { ($0.sequence, $0) }, uniquingKeysWith: { first, _ in first })
            let day = FileSystem.directoryName(of: chain)
            let dayPath = day == "." ? root : root + "/" + day
            let prefix = FileSystem.fileName(of: chain) + "."
            // The earliest trusted time per entry count a token covers.
            var trusted: [(entries: Int, time: Int64, token: String, signer: String)] = []
            // Every name, links and FIFOs too: what is not a regular file is named, not passed over.
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dayPath)) ?? []
            for name in names.sorted() where name.hasPrefix(prefix) && name.hasSuffix(tokenSuffix) {
                let file = dayPath + "/" + name
                let relative = ChainLayout.relative(file, to: root) ?? name
                result.tokens += 1
                let middle = name.dropFirst(prefix.count).dropLast(tokenSuffix.count)
                guard let count = Int(middle), String(count) == middle, count >= 1 else {
                    result.findings.append(
                        .badTimeStamp(
                            path: relative, reason: "not named \(FileSystem.fileName(of: chain)).ENTRIES\(tokenSuffix)")
                    )
                    continue
                }
                guard let entry = bySequence[count] else {
                    result.findings.append(
                        .badTimeStamp(
                            path: relative, reason: "it names entry \(count); \(chain) has \(entries.count) entries"))
                    continue
                }
                let bytes: [UInt8]
                do throws(PKIError) {
                    bytes = try TimeStampToken.readFile(file)
                } catch {
                    result.findings.append(.badTimeStamp(path: relative, reason: error.message))
                    continue
                }
                switch TimeStampToken.check(bytes, digest: entry.hash.bytes, caFile: caFile) {
                case .failure(let error):
                    result.findings.append(
                        .badTimeStamp(
                            path: relative,
                            reason: "does not stamp entry \(count) of \(chain) by a trusted TSA: \(error.message)"))
                case .success(let stamp):
                    result.trusted += 1
                    trusted.append((count, stamp.time, relative, stamp.signer))
                    result.trustedTokens.append(
                        TimeStampProofReport.Trusted(
                            token: relative, chain: chain, entries: count, time: stamp.time, signer: stamp.signer,
                            signerFingerprint: stamp.signerFingerprint))
                }
            }
            for entry in report.inScope[chain] ?? [] {
                let covering = trusted.filter { $0.entries >= entry.sequence }.min { $0.time < $1.time }
                if let covering {
                    result.covered.append(
                        TimeStampProofReport.Covered(
                            path: entry.path, chain: chain, entry: entry.sequence, before: covering.time,
                            token: covering.token, signer: covering.signer))
                } else {
                    result.uncovered.append(entry.path)
                }
            }
        }
        return result
    }

    /// A token's time as a person reads it: UTC, to the second.
    public static func utc(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "\(seconds) s since 1970" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}

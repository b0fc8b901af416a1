// What the printed report of `recctl archive prove --report FILE.html` and the console's
// `/api/report` says (docs/archive-proof.md,
// "A report to print and sign"), made from a proof just done: what was checked, when, by whom and
// with which key and TSAs; for each stream's day the stretches of recorded time that hold and
// those that do not, each failure named as prove names it; the chain heads and their trusted
// times. `ProofReportPage` renders it. Built from values only, except each chain's sample rate,
// read from the first 22 bytes of one of its segments (no link followed, a regular file).
import ArchiveProof
import Foundation
import Glibc
import Platform

/// A proof's report for people. A plain value, made and rendered on one thread (recctl's, or the
/// daemon's slow worker).
public struct ProofCertificate {
    /// Stretches of a stream's recorded time: its segments follow each other without a pause and
    /// all hold, or all do not.
    struct Stretch {
        var holds: Bool
        var from: String
        var to: String
        var length: String
        var segments: Int
        var entries: ClosedRange<Int>
        /// What does not hold, as prove names it (empty when it holds).
        var failures: [String]
        /// Its segments a trusted time-stamp covers, and the time before which all of them existed.
        var stamped: Int
        var existedBefore: String?
    }

    /// One stream's day: its chain and its stretches.
    struct Stream {
        var name: String
        var chain: String
        var stretches: [Stretch]
    }

    /// A chain's last entry as read, and its trusted time-stamps.
    struct Head {
        var chain: String
        var entries: Int
        var hash: String
        var tokens: Int
        /// The latest trusted token: the entry it stamps, its time, the TSA.
        var latest: String?
    }

    /// A TSA whose tokens hold.
    struct Authority {
        var subject: String
        var fingerprint: String
        var tokens: Int
    }

    var title: String
    /// What was checked, when, by whom, with what: label and value.
    var checked: [(label: String, value: String)]
    var holds: Bool
    /// prove's last line.
    var summary: String
    var streams: [Stream] = []
    var heads: [Head] = []
    var authorities: [Authority] = []
    /// A clip's sources (`segment@first frame+frames`).
    var sources: [String] = []
    /// Every finding, as prove prints it.
    var findings: [String]
    /// Who checked (`checker(program:)`): the page's generator.
    var generator = ""
}

extension ProofCertificate {
    /// The report of `ArchiveProver.prove` (and the time-stamps' check) over `directory`.
    /// `checkedBy`: `checker(program:)`, or who the console proved it for; `keyNote`: where the
    /// key came from, when neither recctl's `--key` nor the archive's own copy.
    public static func archive(
        directory: String, scope: ProofScope, key: ArchivePublicKey, keyGiven: Bool, keyNote: String? = nil,
        record: String, roots: String, report: ProofReport, stamps: TimeStampProofReport, summary: String,
        checkedBy: String, now: Date = Date()
    ) -> ProofCertificate {
        var certificate = ProofCertificate(
            title: "Archive proof",
            checked: [
                ("Archive", directory), ("Range", describe(scope)), ("Checked at", readable(now.timeIntervalSince1970)),
                ("Checked by", checkedBy),
                (
                    "Archive key",
                    key.text
                        + (keyNote.map { " (\($0))" }
                            ?? (keyGiven
                                ? " (given to recctl with --key)"
                                : " (the archive's own copy, archive-key.pub: it proves nothing against someone who "
                                    + "could write the archive; compare it with the key recorded when the box was set "
                                    + "up)"))
                ),
                ("Signed heads", record), ("TSA roots", roots),
            ], holds: report.holds, summary: summary, findings: report.findings.map(\.description), generator: checkedBy
        )
        for chain in report.inScope.keys.sorted() {
            let entries = (report.inScope[chain] ?? []).sorted { $0.sequence < $1.sequence }
            let name = String(FileSystem.fileName(of: chain).dropLast(ChainLayout.chainSuffix.count))
            certificate.streams.append(
                Stream(
                    name: name, chain: chain,
                    stretches: stretches(
                        chain: chain, entries: entries, report: report, stamps: stamps,
                        rate: entries.lazy.compactMap { sampleRate(of: directory + "/" + $0.path) }.first)
                ))
            guard let last = report.entriesByChain[chain]?.last else { continue }
            let tokens = stamps.trustedTokens.filter { $0.chain == chain }
            let latest = tokens.max { ($0.entries, $0.time) < ($1.entries, $1.time) }.map {
                "entry \($0.entries) existed before \(readable(Double($0.time))) (\($0.signer))"
            }
            certificate.heads.append(
                Head(chain: chain, entries: last.sequence, hash: last.hash.hex, tokens: tokens.count, latest: latest))
        }
        var byFingerprint: [String: Authority] = [:]
        for token in stamps.trustedTokens {
            byFingerprint[
                token.signerFingerprint,
                default: Authority(
                    subject: token.signer, fingerprint: token.signerFingerprint, tokens: 0)
            ].tokens += 1
        }
        certificate.authorities = byFingerprint.values.sorted { $0.fingerprint < $1.fingerprint }
        return certificate
    }

    /// The report of a clip checked against its proof file.
    public static func clip(
        path: String, proofPath: String, proofText: String, key: ArchivePublicKey, findings: [ProofFinding],
        summary: String, checkedBy: String, now: Date = Date()
    ) -> ProofCertificate {
        var certificate = ProofCertificate(
            title: "Clip proof",
            checked: [
                ("Clip", path), ("Proof file", proofPath), ("Checked at", readable(now.timeIntervalSince1970)),
                ("Checked by", checkedBy), ("Box key", key.text + " (given to recctl with --key)"),
            ], holds: findings.isEmpty, summary: summary, findings: findings.map(\.description), generator: checkedBy)
        // The sources as the proof names them (its signature is part of what was checked).
        let lines = proofText.split(separator: "\n").prefix(100_000)
        certificate.sources = lines.filter { $0.hasPrefix("source\t") }.prefix(1000).map { String($0.dropFirst(7)) }
        return certificate
    }

    /// The segments of one chain in the scope (by sequence), as stretches; `rate`: the stream's
    /// sample rate (nil: unknown, then a stretch ends at its last segment's start and only a
    /// change of verdict ends one).
    static func stretches(
        chain: String, entries: [ChainEntry], report: ProofReport, stamps: TimeStampProofReport, rate: Int?
    ) -> [Stretch] {
        // A chain that does not hold proves none of its segments; unsigned entries are not proven.
        var chainWide: [String] = []
        var unsigned: [(entries: ClosedRange<Int>, finding: String)] = []
        var byPath: [String: [String]] = [:]
        for finding in report.findings {
            switch finding {
            case .chainBroken(let name, _, _), .badSignature(let name, _), .rolledBack(let name, _):
                if name == chain { chainWide.append(finding.description) }
            case .unsigned(let name, let range):
                if name == chain { unsigned.append((range, finding.description)) }
            case .altered(let path, _, _), .missing(let path, _, _), .unreadable(let path, _):
                byPath[path, default: []].append(finding.description)
            case .renamed(_, let from):
                byPath[from, default: []].append(finding.description)
            default:
                break
            }
        }
        let covered = Dictionary(
            stamps.covered.filter { $0.chain == chain }.map { ($0.path, $0.before) }, uniquingKeysWith: { min($0, $1) })
        var result: [Stretch] = []
        var lastEnd: Double?
        var stretchStart: Double?
        var stampedBefore: Int64?
        for entry in entries {
            var failures = chainWide + unsigned.filter { $0.entries.contains(entry.sequence) }.map(\.finding)
            failures += byPath[entry.path] ?? []
            let start = seconds(ofChainTime: entry.start)
            let end = start.flatMap { start in rate.map { start + Double(entry.frames) / Double($0) } }
            let follows = lastEnd.flatMap { last in start.map { abs($0 - last) < 0.5 } } ?? true
            let before = covered[entry.path]
            if var stretch = result.last, stretch.holds == failures.isEmpty, follows,
                stretch.entries.upperBound < entry.sequence
            {
                stretch.entries = stretch.entries.lowerBound...entry.sequence
                stretch.segments += 1
                for failure in failures where !stretch.failures.contains(failure) { stretch.failures.append(failure) }
                if let before {
                    stretch.stamped += 1
                    stampedBefore = max(stampedBefore ?? before, before)
                }
                result[result.count - 1] = stretch
            } else {
                stampedBefore = before
                stretchStart = start
                result.append(
                    Stretch(
                        holds: failures.isEmpty, from: readable(start, or: entry.start), to: "", length: "",
                        segments: 1, entries: entry.sequence...entry.sequence, failures: failures,
                        stamped: before == nil ? 0 : 1, existedBefore: nil))
            }
            result[result.count - 1].to =
                end.map { readable($0) } ?? "the start of its last segment, \(readable(start, or: entry.start))"
            result[result.count - 1].length =
                end.flatMap { end in stretchStart.map { Readable.duration(end - $0) } } ?? "unknown"
            result[result.count - 1].existedBefore = stampedBefore.map { readable(Double($0)) }
            lastEnd = end
        }
        return result
    }

    /// The sample rate in a FLAC file's STREAMINFO (bytes 18-20), or nil when the file is not
    /// one, cannot be read, is a link or not a regular file.
    static func sampleRate(of path: String) -> Int? {
        guard let file = try? OwnedFile(path, .readOnlyNoFollow), (try? file.status())?.kind == .regular,
            let bytes = try? file.read(count: 22, at: 0), bytes.count == 22, bytes.prefix(4).elementsEqual("fLaC".utf8),
            bytes[4] & 0x7f == 0
        else { return nil }
        let rate = Int(bytes[18]) << 12 | Int(bytes[19]) << 4 | Int(bytes[20]) >> 4
        return rate > 0 ? rate : nil
    }

    /// A chain's START (`2026-12-07T02:40:08.000000Z`) as seconds since 1970.
    static func seconds(ofChainTime text: String) -> Double? {
        guard text.hasSuffix("Z"), text.count <= 40 else { return nil }
        let parts = text.dropLast().split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = parts.first, let date = ISO8601DateFormatter().date(from: whole + "Z")
        else { return nil }
        var fraction = 0.0
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber),
                let value = Double("0." + parts[1])
            else { return nil }
            fraction = value
        }
        return date.timeIntervalSince1970 + fraction
    }

    /// A time as a person reads it: `2026-12-07 02:40:08 UTC`.
    static func readable(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e12 else { return "unknown" }
        var time = time_t(seconds.rounded(.down))
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "\(Int64(seconds)) s since 1970" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec)) UTC"
    }

    private static func readable(_ seconds: Double?, or text: String) -> String {
        seconds.map { readable($0) } ?? text
    }

    /// The scope in words.
    static func describe(_ scope: ProofScope) -> String {
        var words =
            scope.app.map { "app \($0)" + (scope.stream.map { ", stream \($0)" } ?? ", every stream") }
            ?? "every app and stream"
        switch (scope.from.flatMap { seconds(ofChainTime: $0) }, scope.to.flatMap { seconds(ofChainTime: $0) }) {
        case (let from?, let to?): words += "; segments that start from \(readable(from)) to \(readable(to))"
        case (let from?, nil): words += "; segments that start from \(readable(from)) on"
        case (nil, let to?): words += "; segments that start before \(readable(to))"
        case (nil, nil): words += "; every day"
        }
        return words
    }

    /// `recctl 0.1.0, as NAME (uid N) on HOST` for `program` `recctl 0.1.0`: this process's user.
    public static func checker(program: String) -> String {
        let uid = getuid()
        var name = "uid \(uid)"
        if let entry = getpwuid(uid), let login = entry.pointee.pw_name {
            name = "\(String(cString: login)) (uid \(uid))"
        }
        return "\(program), as \(name) on \(hostName())"
    }

    /// This machine's name, as the report says who checked where.
    public static func hostName() -> String {
        var host = [CChar](repeating: 0, count: 256)
        return gethostname(&host, host.count - 1) == 0 ? String(cString: host) : "this machine"
    }

    /// prove's verdict up to the key: `holds: 3 segments proven in 1 chain (1 signed throughout);
    /// key ed25519:…`; recctl adds what it was not checked against.
    public static func summary(of report: ProofReport, key: ArchivePublicKey) -> String {
        let removed = report.segmentsRemoved > 0 ? ", \(report.segmentsRemoved) removed by retention" : ""
        let recording =
            report.beingRecorded.isEmpty ? "" : ", \(report.beingRecorded.count) being recorded (not yet proven)"
        return "\(report.holds ? "holds" : "DOES NOT HOLD"): \(Readable.count(report.segmentsProven, "segment")) "
            + "proven in \(Readable.count(report.chains, "chain")) (\(report.signedChains) signed throughout)"
            + "\(removed)\(recording); key \(key.text)"
    }
}

// The printed proof's rules from tables (`recctl archive prove --report`, ArchiveEvidence's ProofCertificate and
// ProofReportPage): which segments make one stretch and which verdict it has for each finding
// prove names, how times read, and that every value is escaped. The end-to-end test
// (ProofReportEndToEndTests) runs the real recctl on a real archive.
import ArchiveProof
import Foundation
import Testing

@testable import ArchiveEvidence

@Suite("recctl archive prove --report: stretches, times and escaping from tables")
struct ProofCertificateTests {
    static let chain = "2026/12/07/logger-mic.chain"

    /// Five 1 s segments at 48 kHz from 10:00:00, the fourth `pause` seconds after the third ends.
    static func entries(pause: Double = 0) -> [ChainEntry] {
        (1...5).map { number in
            let offset = Double(number - 1) + (number >= 4 ? pause : 0)
            let start = String(
                format: "2026-12-07T10:00:%02d.%06dZ", Int(offset),
                Int((offset * 1e6).truncatingRemainder(dividingBy: 1e6)))
            return ChainEntry(
                sequence: number, kind: .segment, previous: .zero, sha256: .zero, start: start, frames: 48_000,
                endReason: "rotation", path: "2026/12/07/logger-mic-\(number).flac")
        }
    }

    static func report(_ findings: [ProofFinding]) -> ProofReport {
        ProofReport(findings: findings, segmentsProven: 5, segmentsRemoved: 0, chains: 1, signedChains: 1)
    }

    /// (what, findings, pause, the stretches as `entries:verdict`).
    static let cases: [(String, [ProofFinding], Double, [String])] = [
        ("all holds", [], 0, ["1-5:holds"]),
        (
            "one altered", [.altered(path: "2026/12/07/logger-mic-3.flac", chain: chain, entry: 3)], 0,
            ["1-2:holds", "3-3:fails", "4-5:holds"]
        ),
        (
            "one missing, one renamed away",
            [
                .missing(path: "2026/12/07/logger-mic-1.flac", chain: chain, entry: 1),
                .renamed(path: "2026/12/08/x.flac", from: "2026/12/07/logger-mic-2.flac"),
            ], 0, ["1-2:fails", "3-5:holds"]
        ),
        ("unsigned tail", [.unsigned(chain: chain, entries: 4...5)], 0, ["1-3:holds", "4-5:fails"]),
        ("a chain broken proves none of it", [.chainBroken(chain: chain, entry: 4, reason: "x")], 0, ["1-5:fails"]),
        ("a bad signature", [.badSignature(chain: chain, reason: "x")], 0, ["1-5:fails"]),
        ("rolled back", [.rolledBack(chain: chain, reason: "x")], 0, ["1-5:fails"]),
        (
            "another chain's break is not this one's",
            [.chainBroken(chain: "2026/12/07/other.chain", entry: 1, reason: "x")],
            0, ["1-5:holds"]
        ),
        ("a pause of 10 s ends a stretch", [], 10, ["1-3:holds", "4-5:holds"]),
        ("a pause under half a second does not", [], 0.2, ["1-5:holds"]),
        (
            "unchained and bad tokens are not a stretch's",
            [
                .unchained(path: "2026/12/07/stray.flac"), .badTimeStamp(path: chain + ".3.tsr", reason: "x"),
            ], 0, ["1-5:holds"]
        ),
    ]

    @Test("which segments make a stretch, and its verdict, for each finding", arguments: cases.indices)
    func stretches(_ index: Int) {
        let (what, findings, pause, expected) = Self.cases[index]
        let stretches = ProofCertificate.stretches(
            chain: Self.chain, entries: Self.entries(pause: pause), report: Self.report(findings),
            stamps: TimeStampProofReport(), rate: 48_000)
        let seen = stretches.map {
            "\($0.entries.lowerBound)-\($0.entries.upperBound):\($0.holds ? "holds" : "fails")"
        }
        #expect(seen == expected, "\(what)")
        for stretch in stretches {
            #expect(stretch.holds == stretch.failures.isEmpty, "\(what)")
            #expect(stretch.segments == stretch.entries.count, "\(what)")
        }
        // Each failure named as prove names it.
        let named = Set(stretches.flatMap(\.failures))
        for finding in findings where named.contains(finding.description) == false {
            if case .unchained = finding { continue }
            if case .badTimeStamp = finding { continue }
            if case .chainBroken(let chain, _, _) = finding, chain != Self.chain { continue }
            Issue.record("\(what): \(finding) is not named in a stretch")
        }
    }

    @Test("a stretch reads from its first START to its last segment's end, and says how long")
    func stretchTimes() throws {
        let stretch = try #require(
            ProofCertificate.stretches(
                chain: Self.chain, entries: Self.entries(), report: Self.report([]), stamps: TimeStampProofReport(),
                rate: 48_000
            ).first)
        #expect(stretch.from == "2026-12-07 10:00:00 UTC" && stretch.to == "2026-12-07 10:00:05 UTC")
        #expect(stretch.length == "5 s" && stretch.existedBefore == nil && stretch.stamped == 0)
        // Without a rate: the last segment's start, and the length unknown.
        let unknown = try #require(
            ProofCertificate.stretches(
                chain: Self.chain, entries: Self.entries(), report: Self.report([]), stamps: TimeStampProofReport(),
                rate: nil
            ).first)
        #expect(unknown.to == "the start of its last segment, 2026-12-07 10:00:04 UTC" && unknown.length == "unknown")
    }

    @Test("chain times: total on any text")
    func chainTimes() {
        #expect(ProofCertificate.seconds(ofChainTime: "2026-12-07T10:00:00.500000Z") == 1_796_637_600.5)
        #expect(ProofCertificate.seconds(ofChainTime: "2026-12-07T10:00:00Z") == 1_796_637_600)
        for junk in [
            "", "Z", ".Z", "2026-12-07T10:00:00.Z", "2026-12-07T10:00:00.5x0Z", "2026-13-40T10:00:00Z",
            "2026-12-07T10:00:00.1.2Z", String(repeating: "9", count: 10_000) + "Z", "2026-12-07T10:00:00.٣Z",
        ] {
            #expect(ProofCertificate.seconds(ofChainTime: junk) == nil, "\(junk.prefix(40))")
        }
        #expect(ProofCertificate.readable(1_796_637_600.9) == "2026-12-07 10:00:00 UTC")
        #expect(ProofCertificate.readable(.nan) == "unknown" && ProofCertificate.readable(1e300) == "unknown")
    }

    @Test("every value is escaped: markup, quotes and control characters")
    func escaping() {
        #expect(
            ProofReportPage.escape("<script>alert(\"x\")</script> & 'y'")
                == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;")
        #expect(ProofReportPage.escape("a\u{0}b\u{1b}c\u{85}d\te\nf") == "a\u{FFFD}b\u{FFFD}c\u{FFFD}d\te\nf")
        #expect(ProofReportPage.escape("ünïcödé ✓") == "ünïcödé ✓")
        var certificate = ProofCertificate(
            title: "Archive proof", checked: [("Archive <b>", "/x/<img src=x onerror=alert(1)>")], holds: false,
            summary: "DOES NOT HOLD: <i>", findings: ["unchained: <script>alert(1)</script>.flac"])
        certificate.streams = [
            ProofCertificate.Stream(
                name: "<u>app</u>", chain: "<chain>",
                stretches: [
                    ProofCertificate.Stretch(
                        holds: false, from: "<from>", to: "<to>", length: "<len>", segments: 1, entries: 1...1,
                        failures: ["altered: <x>"], stamped: 0, existedBefore: nil)
                ])
        ]
        certificate.heads = [ProofCertificate.Head(chain: "<c>", entries: 1, hash: "<h>", tokens: 1, latest: "<l>")]
        certificate.authorities = [ProofCertificate.Authority(subject: "/CN=<tsa>", fingerprint: "<f>", tokens: 1)]
        let page = ProofReportPage.html(certificate)
        // The page's own tags only: none that a value carried.
        for tag in ["<b>", "<img", "<i>", "<script", "<u>", "<chain>", "<from>", "<x>", "<h>", "<l>", "<tsa>", "<f>"] {
            #expect(!page.contains(tag), "\(tag) unescaped")
        }
        #expect(page.contains("&lt;img src=x onerror=alert(1)&gt;") && page.contains("/CN=&lt;tsa&gt;"))
    }
}

// `recctl archive prove --report FILE.html` end to end (docs/archive-proof.md, "A report to print
// and sign"): the real recd recording on a real jackd, its chain heads stamped by the test's real
// TSA (TimeStampEndToEndTests' TestTSA), proven by the real recctl, and its report read by
// python3's html.parser (Tests/Browser/proof_report.py) — and by a real headless Chromium when
// Selenium is there, as the status page's test has it. The report must name the key, the TSA,
// the stretches and their verdicts; after one flipped byte it names that segment as not holding;
// names an attacker chose come out as text, never as markup; a link at FILE is not followed.
import ArchiveProof
import ControlProtocol
import Foundation
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What Tests/Browser/proof_report.py read of a report (also ProofReportRouteTests').
struct ReadReport {
    let json: JSONValue
    var text: String { json["text"]?.stringValue ?? "" }
    var verdict: String { json["verdict"]?.stringValue ?? "" }
    var forbidden: [String] { (json["forbidden"]?.arrayValue ?? []).compactMap(\.stringValue) }
    var findings: [String] { (json["findings"]?.arrayValue ?? []).compactMap(\.stringValue) }

    /// A table's rows (after its header, when it has one), each its cells' texts.
    func rows(_ table: String, header: Bool = true) -> [[String]] {
        (json["tables"]?[table]?.arrayValue ?? []).dropFirst(header ? 1 : 0).map {
            ($0.arrayValue ?? []).compactMap(\.stringValue)
        }
    }

    /// `url`: where the browser opens the page (recd's `/api/report`) instead of the file.
    static func read(_ path: String, browser: Bool = false, url: String? = nil) throws -> ReadReport {
        var arguments = [ExternalTools.packageRoot + "/Tests/Browser/proof_report.py", path]
        if browser { arguments.append("--browser") }
        if let url { arguments += ["--url", url] }
        let result = try runTool(
            "python3", arguments, environment: ["RECD_SELENIUM_VENV": StatusPageTests.seleniumVenv], timeout: 90)
        try #require(result.status == 0, "proof_report.py \(path): \(result.stdout) \(result.stderr)")
        return ReadReport(json: try #require(result.json, "\(result.stdout)"))
    }

    /// The page at `path` (or `url`) as Chromium renders it, when Selenium is here (the status
    /// page's test's): it holds, runs no script, logs no error, prints on one A4 page.
    static func expectInChromium(
        _ path: String, url: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        guard FileManager.default.fileExists(atPath: StatusPageTests.seleniumVenv + "/bin/python3") else {
            print("no Selenium at \(StatusPageTests.seleniumVenv): the report is not opened in Chromium")
            return
        }
        let seen = try read(path, browser: true, url: url).json["browser"]
        print("Chromium saw \(url ?? path): \(String(describing: seen))")
        #expect(
            seen?["verdict"]?.stringValue == "HOLDS" && seen?["scripts"]?.intValue == 0,
            "\(String(describing: seen))", sourceLocation: sourceLocation)
        #expect(
            seen?["errors"]?.arrayValue?.isEmpty == true, "\(String(describing: seen))", sourceLocation: sourceLocation)
        #expect(
            seen?["pages"]?.intValue == 1, "printed on one A4 page: \(String(describing: seen))",
            sourceLocation: sourceLocation)
    }
}

/// Flips bits (`mask`) of the byte in the middle of the file at `path`, in place.
func flipMiddleByte(of path: String, mask: UInt8 = 0x01) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    let middle = try handle.seekToEnd() / 2
    try handle.seek(toOffset: middle)
    let byte = try #require(try handle.read(upToCount: 1)?.first)
    try handle.seek(toOffset: middle)
    try handle.write(contentsOf: Data([byte ^ mask]))
}

@Suite("recctl archive prove --report: a page to print and sign", .serialized)
struct ProofReportEndToEndTests {
    @Test(
        "the report of a stamped recording holds the key, the TSA, the stretches and verdicts, the heads; one flipped byte is named as not holding; hostile names come out escaped; a clip's report names its sources; a link at FILE is refused"
    )
    func reportOfARealArchive() throws {
        let tsa = try TestTSA()
        let logger = try StampedLogger(tsa: tsa, interval: 2)
        let chain = try logger.chain()
        #expect(eventually(timeout: 30) { logger.stamped(chain).count >= 2 && logger.signedEntries(chain) >= 4 })
        #expect(try logger.daemon.recctl("record", "stop", "logger").status == 0)
        let day = logger.archive + "/" + FileSystem.directoryName(of: chain)
        // Every segment chained and the last head stamped.
        #expect(
            eventually(timeout: 15) {
                let segments = FileSystem.files(under: day, withSuffix: ".flac").count
                return segments == logger.signedEntries(chain) && logger.stamped(chain).last == segments
            })
        let entries = try logger.entries(chain).filter { $0.kind == .segment }
        try #require(entries.count >= 4)
        let key = logger.logger.key
        let keyFile = logger.daemon.directory + "/given.pub"
        try key.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let fingerprint = try #require(
            try runTool("openssl", ["x509", "-noout", "-fingerprint", "-sha256", "-in", tsa.directory + "/tsa.pem"])
                .stdout.split(separator: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines))
        let reports = try makeTemporaryDirectory("recd-report")
        defer { try? FileManager.default.removeItem(atPath: reports) }
        func prove(_ directory: String, report: String) throws -> CommandResult {
            try logger.daemon.recctl(
                "archive", "prove", "--dir", directory, "--key", keyFile, "--tsa-ca", tsa.roots, "--report", report)
        }

        // All holds.
        let good = reports + "/good.html"
        let proved = try prove(logger.archive, report: good)
        #expect(proved.status == 0, "\(proved.stdout) \(proved.stderr)")
        #expect(proved.stderr.contains("report written to \(good)"), "\(proved.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: good)[.posixPermissions] as? Int
        #expect(mode == 0o644)
        let read = try ReadReport.read(good)
        print("the report of \(logger.archive), as text:\n\(read.text)")
        #expect(read.json["doctype"]?.boolValue == true)
        #expect(read.forbidden.isEmpty, "not self-contained: \(read.forbidden)")
        #expect(read.verdict == "HOLDS")
        #expect(read.text.contains(key), "the key: \(read.text)")
        #expect(read.text.contains("recctl \(recdVersion)"))
        let checked = Dictionary(
            read.rows("checked", header: false).map { ($0.first ?? "", $0.last ?? "") }, uniquingKeysWith: { a, _ in a }
        )
        #expect(checked["Archive"] == logger.archive && checked["TSA roots"] == tsa.roots, "\(checked)")
        #expect(checked["Archive key"]?.contains("given to recctl with --key") == true, "\(checked)")
        let tsas = read.rows("tsas")
        #expect(tsas.count == 1 && tsas.first?[0].contains("recd test TSA") == true, "\(tsas)")
        #expect(tsas.first?[1] == fingerprint, "the TSA's certificate fingerprint \(fingerprint): \(tsas)")
        let ranges = read.rows("ranges")
        // One stretch: the recording, without a pause, every segment holding and stamped.
        try #require(ranges.count == 1, "\(ranges)")
        let stretch = ranges[0]
        #expect(stretch[0] == "logger-mic\n" + FileSystem.directoryName(of: chain), "\(stretch)")
        #expect(stretch[2].contains("\(entries.count) segments") && stretch[3] == "holds", "\(stretch)")
        #expect(stretch[4].hasPrefix("all existed before 20"), "\(stretch)")
        // From the first segment's START, as a person reads it.
        let first = entries[0].start
        let readableStart = first.prefix(10) + "\n" + first.dropFirst(11).prefix(8) + " – "
        #expect(stretch[1].hasPrefix(readableStart), "\(stretch[1]) vs START \(first)")
        let heads = read.rows("heads")
        #expect(
            heads.count == 1 && heads.first?[1] == String(entries.count)
                && heads.first?[2] == entries[entries.count - 1].hash.hex, "\(heads)")
        #expect(heads.first?[3].contains("latest: entry \(entries.count) existed before") == true, "\(heads)")
        #expect(read.text.contains("Signature") && read.text.contains("Date"))
        #expect(read.rows("findings").isEmpty && read.findings.isEmpty)

        // The page as the browser the status page's test uses renders it, when it is here.
        try ReadReport.expectInChromium(good)

        // One byte flipped in the middle of a middle segment: prove fails, the report is still
        // written and names that segment as not holding; the stretches around it hold.
        let victim = entries[entries.count / 2]
        try flipMiddleByte(of: logger.archive + "/" + victim.path)
        let flipped = reports + "/flipped.html"
        let failed = try prove(logger.archive, report: flipped)
        #expect(failed.status == 1, "\(failed.stdout)")
        let bad = try ReadReport.read(flipped)
        #expect(bad.verdict == "DOES NOT HOLD" && bad.forbidden.isEmpty)
        let badRanges = bad.rows("ranges")
        let failing = badRanges.filter { $0[3].hasPrefix("does not hold") }
        try #require(failing.count == 1, "\(badRanges)")
        #expect(failing[0][2].contains("1 segment\nentry \(victim.sequence)"), "\(failing)")
        #expect(failing[0][3].contains("altered: \(victim.path)"), "named as prove names it: \(failing)")
        #expect(failing[0][4].hasPrefix("all of their chain entries stamped before"), "not 'existed': \(failing)")
        #expect(badRanges.filter { $0[3] == "holds" }.count == 2, "before and after it: \(badRanges)")
        #expect(bad.findings.contains { $0.hasPrefix("altered: \(victim.path)") }, "\(bad.findings)")
        try flipMiddleByte(of: logger.archive + "/" + victim.path)  // flipped back: the segment as it was

        // Names an attacker chose: the archive copied to a folder named like markup, a file put in
        // its day named like markup; both shown as text, never as elements.
        let root = reports + "/x<script>alert(\"dir\")<b x='1'>&amp;"
        let copied = try runTool("cp", ["-a", logger.archive, root])
        try #require(copied.status == 0, "\(copied.stderr)")
        let hostileName = "logger-mic-<img src=x onerror=alert(1)><script>alert(2)<.flac"
        let hostileFile = root + "/" + FileSystem.directoryName(of: chain) + "/" + hostileName
        try Data("fLaC".utf8).write(to: URL(fileURLWithPath: hostileFile))
        let hostileReport = reports + "/hostile.html"
        let hostile = try prove(root, report: hostileReport)
        #expect(hostile.status == 1, "\(hostile.stdout)")
        let page = try String(contentsOfFile: hostileReport, encoding: .utf8)
        let escaped = try ReadReport.read(hostileReport)
        #expect(escaped.forbidden.isEmpty, "markup from names: \(escaped.forbidden)")
        #expect(!(escaped.json["tags"]?.arrayValue ?? []).contains { $0.stringValue == "b" })
        #expect(escaped.text.contains(root), "the folder's name as text")
        #expect(escaped.findings.contains { $0.contains(hostileName) }, "\(escaped.findings)")
        #expect(page.contains("&lt;script&gt;alert(&quot;dir&quot;)&lt;b x=&#39;1&#39;&gt;&amp;amp;"), "escaped")
        #expect(!page.contains("<script") && !page.contains("<img"))

        // A clip with its proof: its report names the clip, the proof, the key and the segments
        // it was cut from; edited after the export, the clip's report does not hold.
        let clip = reports + "/clip.flac"
        let exported = try logger.daemon.recctl(
            "archive", "export", "--app", "logger", "--from", entries[1].start, "--to", entries[3].start, "-o", clip,
            "--proof")
        try #require(exported.status == 0, "\(exported.stderr)")
        let clipReport = reports + "/clip.html"
        let clipProven = try logger.daemon.recctl(
            "archive", "prove", "--clip", clip, "--key", keyFile, "--report", clipReport)
        #expect(clipProven.status == 0, "\(clipProven.stdout) \(clipProven.stderr)")
        let clipRead = try ReadReport.read(clipReport)
        #expect(clipRead.verdict == "HOLDS" && clipRead.forbidden.isEmpty)
        let clipFacts = Dictionary(
            clipRead.rows("checked", header: false).map { ($0.first ?? "", $0.last ?? "") },
            uniquingKeysWith: { a, _ in a })
        #expect(clipFacts["Clip"] == clip && clipFacts["Proof file"] == clip + ".proof", "\(clipFacts)")
        #expect(clipFacts["Box key"]?.hasPrefix(key) == true)
        let sources = clipRead.rows("sources").map { $0.first ?? "" }
        #expect(sources.count == 2 && sources.first?.hasPrefix(entries[1].path + "@") == true, "\(sources)")
        let clipHandle = try FileHandle(forUpdating: URL(fileURLWithPath: clip))
        try clipHandle.seekToEnd()
        try clipHandle.write(contentsOf: Data([0]))
        try clipHandle.close()
        #expect(
            try logger.daemon.recctl("archive", "prove", "--clip", clip, "--key", keyFile, "--report", clipReport)
                .status == 1)
        let editedClip = try ReadReport.read(clipReport)
        #expect(
            editedClip.verdict == "DOES NOT HOLD" && editedClip.findings.contains { $0.hasPrefix("altered: \(clip)") })

        // A link at FILE: refused, its target untouched (a proof that holds with its report
        // refused is an error too: exit 1, no report).
        let target = reports + "/target.txt"
        try "keep me\n".write(toFile: target, atomically: true, encoding: .utf8)
        let link = reports + "/link.html"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let refused = try prove(logger.archive, report: link)
        #expect(refused.status == 1 && refused.stderr.contains("symbolic link"), "\(refused.stderr)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep me\n")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
    }
}

// The console's printed proof, `/api/report?feed=APP/STREAM&date=YYYY-MM-DD` (docs/status-page.md,
// docs/security.md "Content Credentials and the printed report"), end to end: the real recd
// recording on a real jackd, the route fetched with curl as root and as `nobody` (setpriv), the
// page read by python3's html.parser (Tests/Browser/proof_report.py) and, when Selenium is there,
// by a real headless Chromium from recd itself. The page holds recd's key and the day's stretch;
// after one flipped byte that segment does not hold; a caller who may not read the feed gets the
// 403 the other archive routes give it, and a 403 for a chain the page would read out to it;
// hostile feed and date parameters get a 400 in plain text.
import ArchiveProof
import ControlProtocol
import Foundation
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("/api/report: the console's printed proof of a feed's day", .serialized)
struct ProofReportRouteTests {
    /// curl's answer with its headers (lower-cased names).
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: String
        var file: String
    }

    /// GET `url` with curl (as `prefix`'s user when given), body into `directory`.
    static func get(_ url: String, prefix: [String] = [], into directory: String) throws -> Answer {
        let name = "report-\(UUID().uuidString.prefix(8))"
        let (output, headerFile) = (directory + "/" + name + ".html", directory + "/" + name + ".headers")
        let arguments = ["-s", "-g", "-o", output, "-D", headerFile, "-w", "%{http_code}", "-m", "120", url]
        let result =
            try prefix.first.map {
                try ExternalTools.run(
                    $0, Array(prefix.dropFirst()) + [try ExternalTools.path("curl")] + arguments, timeout: 130)
            } ?? ExternalTools.run("curl", arguments, timeout: 130)
        var headers: [String: String] = [:]
        let head = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
        for line in head.split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                .trimmingCharacters(in: .whitespaces)
        }
        return Answer(
            status: Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1, headers: headers,
            body: (try? String(contentsOfFile: output, encoding: .utf8)) ?? "", file: output)
    }

    @Test(
        "the day's report holds recd's key and the stretch, as one script-free HTML page (CSP, a filename); one flipped byte: that segment does not hold; nobody gets the 403 /api/range gives for a segment it may not read; hostile feed and date: 400 as plain text, recd still answers",
        .timeLimit(.minutes(4)))
    func reportOfADay() throws {
        try #require(getuid() == 0, "recd runs as root and curl drops to nobody: run the tests as root")
        let port = try HTTPTestClient.freePort()
        let (daemon, source, _) = try HTTPCallerRightsTests.recordingDaemon(
            extraConfig: "\n[http]\nlisten = 127.0.0.1:\(port)\n")
        defer { source.stop() }
        let out = try HTTPCallerRightsTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let archive = daemon.directory + "/archive"
        // Three finished segments, then the recording stopped and every one chained.
        #expect(
            eventually(timeout: 20) {
                ((try? daemon.recctl("--json", "archive", "list").json?.arrayValue) ?? [])
                    .filter { $0["state"] == "finished" }.count >= 3
            })
        #expect(try daemon.recctl("record", "stop", "logger").status == 0)
        let list = try #require(try daemon.recctl("--json", "archive", "list").json?.arrayValue)
        let first = try #require(list.first)
        let feed = "\(first["app"]?.stringValue ?? "")/\(first["stream"]?.stringValue ?? "")"
        let segments = list.compactMap { $0["path"]?.stringValue }.filter { $0.hasSuffix(".flac") }.sorted()
        let date = String(try #require(first["start"]?.stringValue).prefix(10))
        let key = try daemon.recctl("archive", "key").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(key.hasPrefix("ed25519:"), "recctl archive key: \(key)")
        let url = "http://127.0.0.1:\(port)/api/report?feed=\(feed)&date=\(date)"

        // All holds: every segment of the day in one stretch, recd's own key named.
        var good = try Self.get(url, into: out)
        #expect(
            eventually(timeout: 20) {
                good = (try? Self.get(url, into: out)) ?? good
                return good.headers["x-recd-proof"] == "holds"
                    && good.body.contains("\(segments.count) segments")
            }, "\(good.status) \(good.headers) \(good.body.prefix(3000))")
        #expect(good.status == 200 && good.headers["content-type"] == "text/html; charset=utf-8", "\(good.headers)")
        let policy = good.headers["content-security-policy"] ?? ""
        #expect(policy.contains("default-src 'none'") && !policy.contains("script-src"), "\(policy)")
        let disposition = "inline; filename=\"proof_\(feed.replacingOccurrences(of: "/", with: "_"))_\(date).html\""
        #expect(good.headers["content-disposition"] == disposition, "\(good.headers)")
        let read = try ReadReport.read(good.file)
        print("the console's report of \(feed) on \(date), as text:\n\(read.text)")
        #expect(read.verdict == "HOLDS" && read.forbidden.isEmpty, "\(read.forbidden)")
        let checked = Dictionary(
            read.rows("checked", header: false).map { ($0.first ?? "", $0.last ?? "") }, uniquingKeysWith: { a, _ in a }
        )
        #expect(checked["Archive key"]?.hasPrefix(key + " (the key recd signs with") == true, "\(checked)")
        #expect(checked["Checked by"]?.contains("for uid 0 (root), through the web console") == true, "\(checked)")
        #expect(checked["Signed heads"]?.hasPrefix("checked against recd's record") == true, "\(checked)")
        let ranges = read.rows("ranges")
        try #require(ranges.count == 1, "\(ranges)")
        #expect(ranges[0][2].hasPrefix("\(segments.count) segments") && ranges[0][3] == "holds", "\(ranges)")

        // The page as Chromium renders it from recd, its CSP in force, when Selenium is here: no
        // script, no console error, one A4 page.
        try ReadReport.expectInChromium(good.file, url: url)

        // One byte flipped in the middle of the middle segment: that stretch does not hold.
        let victim = segments[segments.count / 2]
        try flipMiddleByte(of: victim)
        let flipped = try Self.get(url, into: out)
        #expect(flipped.status == 200 && flipped.headers["x-recd-proof"] == "does-not-hold", "\(flipped.headers)")
        let bad = try ReadReport.read(flipped.file)
        let failing = bad.rows("ranges").filter { $0[3].hasPrefix("does not hold") }
        let relative = String(victim.dropFirst(archive.count + 1))
        try #require(failing.count == 1, "\(bad.rows("ranges"))")
        #expect(failing[0][2].hasPrefix("1 segment\n") && failing[0][3].contains("altered: \(relative)"), "\(failing)")
        #expect(bad.verdict == "DOES NOT HOLD" && bad.forbidden.isEmpty)

        // nobody may not read a segment of the day: the refusal /api/export gives, and no page.
        let nobody = try HTTPCallerRightsTests.asUser("nobody")
        chown(victim, 0, 0)
        chmod(victim, 0o600)
        let refused = try Self.get(url, prefix: nobody, into: out)
        let range = try Self.get(
            "http://127.0.0.1:\(port)/api/range?feed=\(feed)&date=\(date)", prefix: nobody, into: out)
        #expect(refused.status == 403 && range.status == 403, "\(refused.status) \(range.status)")
        #expect(refused.body == range.body, "report: \(refused.body)\n/api/range: \(range.body)")
        #expect(refused.body.contains("uid 65534 (nobody) may not read"), "\(refused.body)")
        #expect(!refused.body.contains("<html") && !refused.body.contains(key), "\(refused.body)")
        // Every segment readable again but the day's chain, which the page reads out: still 403.
        chmod(victim, 0o644)
        let chain = try #require(
            FileSystem.files(under: archive, withSuffix: ".chain").first, "no chain under \(archive)")
        chmod(chain, 0o600)
        let chainRefused = try Self.get(url, prefix: nobody, into: out)
        #expect(chainRefused.status == 403, "\(chainRefused.status) \(chainRefused.body.prefix(300))")
        #expect(
            chainRefused.body.contains("uid 65534 (nobody) may not read logger-mic.chain"), "\(chainRefused.body)")
        #expect(!chainRefused.body.contains(key))
        chmod(chain, 0o644)
        // A file in the day that no chain names, which nobody may not read: the page would say what
        // its bytes hash to (renamed or unchained), so nobody gets 403; root's page names it.
        let stray = FileSystem.directoryName(of: chain) + "/logger-mic-20000101T000000.000Z.flac"
        try Data("fLaC stray".utf8).write(to: URL(fileURLWithPath: stray))
        chmod(stray, 0o600)
        let strayRefused = try Self.get(url, prefix: nobody, into: out)
        #expect(strayRefused.status == 403, "\(strayRefused.status) \(strayRefused.body.prefix(300))")
        #expect(strayRefused.body.contains("may not read logger-mic-20000101T000000.000Z.flac"), "\(strayRefused.body)")
        let strayShown = try Self.get(url, into: out)
        #expect(strayShown.status == 200 && strayShown.body.contains("unchained: "), "\(strayShown.status)")
        try FileManager.default.removeItem(atPath: stray)
        // Readable to nobody again, nobody gets the page, proved for nobody.
        let nobodys = try Self.get(url, prefix: nobody, into: out)
        #expect(nobodys.status == 200 && nobodys.body.contains("for uid 65534 (nobody)"), "\(nobodys.status)")

        // Hostile parameters: 400 as plain text the browser may not sniff; recd answers after them.
        let base = "http://127.0.0.1:\(port)/api/report?"
        let hostile = [
            "feed=../../etc/passwd&date=\(date)", "feed=\(feed)/..&date=\(date)",
            "feed=%3Cscript%3Ealert(1)%3C/script%3E/x&date=\(date)", "feed=logger&date=\(date)",
            "feed=\(feed)&date=2026-13-45", "feed=\(feed)&date=..%2F..%2Fetc", "feed=\(feed)&date=now-1d%3Cb%3E",
            "feed=\(feed)&date=\(date)T00:00:00Z", "feed=\(feed)", "date=\(date)",
            "feed=\(String(repeating: "a", count: 300))/x&date=\(date)", "feed=\(feed)&date=%E2%80%AE2026-1-1",
            "feed=\(feed)&date=9999-12-31",
        ]
        for query in hostile {
            let answer = try Self.get(base + query, into: out)
            #expect(answer.status == 400, "\(query.prefix(80)): \(answer.status) \(answer.body.prefix(300))")
            #expect(answer.headers["content-type"]?.hasPrefix("text/plain") == true, "\(answer.headers)")
            #expect(answer.headers["x-content-type-options"] == "nosniff", "\(answer.headers)")
        }
        let after = try Self.get(url, into: out)
        #expect(after.status == 200, "recd after the hostile queries: \(after.status)")
    }

    @Test(
        "a day stamped by the test's TSA: the console's page names the TSA by its certificate's fingerprint, the roots of tsa_ca_file and the stretch's trusted time; a token nobody may not read is a 403",
        .timeLimit(.minutes(3)))
    func stampedDay() throws {
        try #require(getuid() == 0, "recd runs as root and curl drops to nobody: run the tests as root")
        let tsa = try TestTSA()
        let logger = try StampedLogger(tsa: tsa, interval: 2)
        let chain = try logger.chain()
        #expect(eventually(timeout: 30) { logger.stamped(chain).count >= 2 && logger.signedEntries(chain) >= 3 })
        #expect(try logger.daemon.recctl("record", "stop", "logger").status == 0)
        let day = logger.archive + "/" + FileSystem.directoryName(of: chain)
        #expect(
            eventually(timeout: 15) {
                let segments = FileSystem.files(under: day, withSuffix: ".flac").count
                return segments == logger.signedEntries(chain) && logger.stamped(chain).last == segments
            })
        let fingerprint = try #require(
            try runTool("openssl", ["x509", "-noout", "-fingerprint", "-sha256", "-in", tsa.directory + "/tsa.pem"])
                .stdout.split(separator: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines))
        let port = try HTTPEndToEndTests.httpPort(logger.daemon)
        let date = FileSystem.directoryName(of: chain).replacingOccurrences(of: "/", with: "-")
        let url = "http://127.0.0.1:\(port)/api/report?feed=logger/mic&date=\(date)"
        let out = try HTTPCallerRightsTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }

        let page = try Self.get(url, into: out)
        #expect(page.status == 200 && page.headers["x-recd-proof"] == "holds", "\(page.status) \(page.headers)")
        let read = try ReadReport.read(page.file)
        let tsas = read.rows("tsas")
        #expect(tsas.count == 1 && tsas.first?[0].contains("recd test TSA") == true, "\(tsas)")
        #expect(tsas.first?[1] == fingerprint, "the TSA's certificate fingerprint \(fingerprint): \(tsas)")
        let checked = Dictionary(
            read.rows("checked", header: false).map { ($0.first ?? "", $0.last ?? "") }, uniquingKeysWith: { a, _ in a }
        )
        #expect(checked["TSA roots"] == tsa.roots, "\(checked)")
        let ranges = read.rows("ranges")
        try #require(ranges.count == 1, "\(ranges)")
        #expect(ranges[0][3] == "holds" && ranges[0][4].hasPrefix("all existed before 20"), "\(ranges)")

        // A token nobody may not read: the page would tell what it stamps, so nobody gets 403.
        var directory = day
        while directory.hasPrefix(logger.daemon.directory) {
            chmod(directory, 0o755)
            directory = (directory as NSString).deletingLastPathComponent
        }
        let entries = try #require(logger.stamped(chain).last)
        let token = day + "/" + FileSystem.fileName(of: chain) + ".\(entries).tsr"
        try #require(FileManager.default.fileExists(atPath: token), "no \(token)")
        chown(token, 0, 0)
        chmod(token, 0o600)
        let nobody = try HTTPCallerRightsTests.asUser("nobody")
        let refused = try Self.get(url, prefix: nobody, into: out)
        #expect(refused.status == 403, "\(refused.status) \(refused.body.prefix(300))")
        #expect(
            refused.body.contains("may not read \(FileSystem.fileName(of: token))"), "\(refused.body.prefix(300))")
        chmod(token, 0o644)
        let allowed = try Self.get(url, prefix: nobody, into: out)
        #expect(allowed.status == 200 && allowed.headers["x-recd-proof"] == "holds", "\(allowed.status)")
    }
}

// The archive browser and the loudness report end to end (docs/status-page.md "The archive in
// the browser"): a real recd records recd-signal's pink noise into 2 s segments; Chromium
// (Selenium, Tests/Browser/archive_browser.py) picks a range on /browse, downloads it with its
// proof, listens to the segment being written, and reads /loudness; the downloaded clip equals
// `recctl archive export` of the same range sample for sample and proves with `recctl archive
// prove --clip`; /api/loudness, its CSV and `recctl archive loudness` agree, and agree with
// libebur128 (the `ebur128` oracle run on the same clip's samples) within 0.1 LU. Hostile
// requests are real curl processes: a range of a year, malformed times, a feed the caller may
// not read (curl as `nobody`), another caller's job.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("archive browser and loudness report", .serialized)
struct ArchiveBrowserTests {
    static func decodedSamples(_ file: String, into directory: String) throws -> [UInt8] {
        let raw = directory + "/" + UUID().uuidString + ".raw"
        let result = try ExternalTools.run(
            "flac", ["-d", "-s", "-f", "--force-raw-format", "--endian=little", "--sign=signed", "-o", raw, file],
            timeout: 60)
        try #require(result.status == 0, "flac -d \(file): \(result.stderr)")
        defer { try? FileManager.default.removeItem(atPath: raw) }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
    }

    @Test(
        "a range picked and downloaded in Chromium equals recctl's export sample for sample and proves; the open segment plays; the export shows its progress; /loudness, its CSV and recctl archive loudness agree with each other and with libebur128 within 0.1 LU; hostile requests get 400/403 with what to do"
    )
    func browseDownloadListenMeasure() throws {
        try #require(getuid() == 0, "curl drops to nobody for the 403: run the tests as root")
        let deck = uniqueName("deck")
        let port = try HTTPTestClient.freePort()
        let daemon = try Daemon(
            extraConfig: """

                [http]
                listen = 127.0.0.1:\(port)

                [session logger]
                category = record
                mic_usage = Keeps the log
                permission = granted

                """,
            // The harness writes the ports right after its [archive] keys: these two join them.
            ports: "loudness_target = -24\nloudness_tolerance = 2\n" + ArchiveEndToEndTests.deckPorts(deck),
            archiveSegmentSeconds: 2)
        let source = try SignalClient([
            "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "pink", "--level", "-20",
        ])
        defer { source.stop() }
        try #require(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        try #require(try daemon.recctl("record", "start", "logger").status == 0)
        // Six finished segments: a range of 8 s across four boundaries, in chained segments (a proof).
        var listed: [JSONValue] = []
        try #require(
            try eventually(timeout: 30) {
                listed = (try daemon.recctl("--json", "archive", "list").json?.arrayValue ?? []).filter {
                    $0["state"] == "finished"
                }
                return listed.count >= 6
            }, "no six finished segments; recd's log:\n\(daemon.log)")
        let stream = try #require(listed[1]["stream"]?.stringValue)
        let feed = "logger/" + stream
        let start = try #require(listed[1]["start"]?.stringValue)
        let startDate = try #require(
            ISO8601DateFormatter.fractional.date(from: start) ?? ISO8601DateFormatter().date(from: start))
        let from = ISO8601DateFormatter().string(from: startDate.addingTimeInterval(1))
        let to = ISO8601DateFormatter().string(from: startDate.addingTimeInterval(9))
        let scratch = try HTTPCallerRightsTests.scratch()
        let reference = scratch + "/recctl.flac"
        let key = try daemon.recctl("archive", "key").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // The segments are chained on recd's prover thread, just after their rotation.
        var exported = try daemon.recctl(
            "archive", "export", "--app", "logger", "--from", from, "--to", to,
            "-o", reference, "--proof")
        try #require(
            try eventually(timeout: 10) {
                if exported.status == 0 { return true }
                try? FileManager.default.removeItem(atPath: reference)
                exported = try daemon.recctl(
                    "archive", "export", "--app", "logger", "--from", from, "--to", to, "-o", reference, "--proof")
                return exported.status == 0
            }, "recctl archive export --proof: \(exported.stderr)")

        let downloads = scratch + "/downloads"
        try FileManager.default.createDirectory(atPath: downloads, withIntermediateDirectories: true)
        let shots =
            ProcessInfo.processInfo.environment["RECD_SCREENSHOTS"] ?? ExternalTools.packageRoot + "/.build/screenshots"
        try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)
        let browser = try ExternalTools.run(
            "python3",
            [
                ExternalTools.packageRoot + "/Tests/Browser/archive_browser.py", "--url", "http://127.0.0.1:\(port)/",
                "--feed", feed, "--from", from, "--to", to, "--downloads", downloads, "--screenshots", shots,
            ], environment: ["RECD_SELENIUM_VENV": StatusPageTests.seleniumVenv], timeout: 150)
        print(browser.stdout)
        try #require(
            browser.status == 0, "archive_browser.py: \(browser.stdout)\n\(browser.stderr)\nrecd's log:\n\(daemon.log)")

        // The download equals recctl's export, sample for sample, and proves with the key alone.
        // The clip is the one the script says it downloaded with its proof: the folder may hold
        // another (a range ending "now" asked again just after a rotation is a finished clip too,
        // downloaded without a proof), and a folder lists its files in no set order.
        let files = try FileManager.default.contentsOfDirectory(atPath: downloads)
        let said = "ok: downloaded "
        let clipName = try #require(
            browser.stdout.split(separator: "\n").first { $0.hasPrefix(said) }.map {
                String($0.dropFirst(said.count).prefix { $0 != " " })
            }, "archive_browser.py named no download: \(browser.stdout)")
        let clip = downloads + "/" + clipName
        #expect(files.contains(clipName) && files.contains(clipName + ".proof"), "\(clipName): downloaded \(files)")
        let browserSamples = try Self.decodedSamples(clip, into: scratch)
        let recctlSamples = try Self.decodedSamples(reference, into: scratch)
        // 8 s of 48 kHz stereo, 24-bit (the clip's end at the range's, not clamped).
        #expect(browserSamples.count == 8 * 48_000 * 2 * 3, "\(browserSamples.count) bytes of samples")
        // Compared first, then expected: an #expect of the two arrays would, on a failure, have
        // Swift Testing diff millions of bytes (seen: a test run stuck in it for a quarter hour).
        let same = browserSamples == recctlSamples
        #expect(same, "\(browserSamples.count) vs \(recctlSamples.count) bytes of samples")
        let proven = try daemon.recctl("archive", "prove", "--clip", clip, "--key", key)
        #expect(proven.status == 0, "prove --clip: \(proven.stdout)\(proven.stderr)")

        // Loudness: the page's figures (printed by the script), the JSON, the CSV and recctl agree.
        let base = "http://127.0.0.1:\(port)/api/loudness?feed=\(feed)&from=\(from)&to=\(to)"
        let json = try HTTPCallerRightsTests.curl(base, into: scratch)
        try #require(json.status == 200, "\(json.text)")
        let api = try JSONValue.parse(String(decoding: json.body, as: UTF8.self))
        let csv = try HTTPCallerRightsTests.curl(base + "&format=csv", into: scratch)
        #expect(csv.status == 200)
        let csvLine = String(decoding: csv.body, as: UTF8.self).split(separator: "\n")[1].split(
            separator: ",", omittingEmptySubsequences: false)
        let cli = try daemon.recctl(
            "--json", "archive", "loudness", feed, "--from", from, "--to", to,
            "--target", "-24", "--tolerance", "2")
        try #require(cli.status == 0, "\(cli.stderr)")
        let recctlJSON = try #require(cli.json)
        let integrated = try #require(api["integratedLUFS"]?.doubleValue)
        #expect(recctlJSON["integratedLUFS"]?.doubleValue == integrated)
        #expect(recctlJSON["rangeLU"] == api["rangeLU"])
        #expect(recctlJSON["truePeakDBTP"] == api["truePeakDBTP"])
        #expect(recctlJSON["secondsAbove"] == api["secondsAbove"])
        #expect(api["targetLUFS"]?.doubleValue == -24 && api["toleranceLU"]?.doubleValue == 2)
        #expect(Double(csvLine[3]) == integrated, "CSV: \(csvLine)")
        #expect(browser.stdout.contains("page integrated \(String(format: "%.1f", integrated))"), "\(browser.stdout)")
        // The day so far (UTC): the page's date= and recctl's --date give the same report.
        let today = String(ISO8601DateFormatter().string(from: Date()).prefix(10))
        let day = try HTTPCallerRightsTests.curl(
            "http://127.0.0.1:\(port)/api/loudness?feed=\(feed)&date=\(today)", into: scratch)
        #expect(day.status == 200, "\(day.text)")
        let dayJSON = try JSONValue.parse(String(decoding: day.body, as: UTF8.self))
        #expect((dayJSON["seconds"]?.doubleValue ?? 0) >= 10, "\(day.text)")
        let cliDay = try daemon.recctl("archive", "loudness", feed, "--date", today)
        #expect(cliDay.status == 0 && cliDay.stdout.contains("integrated loudness"), "\(cliDay.stdout)\(cliDay.stderr)")
        // The oracle: libebur128 on the clip's samples (Tests/Browser/ebur128_oracle.py loads the
        // library with ctypes), integrated loudness and true peak within 0.1 LU / 0.1 dB.
        let oracle = try ExternalTools.run(
            "python3", [ExternalTools.packageRoot + "/Tests/Browser/ebur128_oracle.py", reference], timeout: 60)
        try #require(oracle.status == 0, "\(oracle.stderr)")
        let oracleJSON = try JSONValue.parse(oracle.stdout)
        let oracleIntegrated = try #require(oracleJSON["integrated"]?.doubleValue)
        #expect(abs(oracleIntegrated - integrated) < 0.1, "libebur128 \(oracleIntegrated), recd \(integrated)")
        if let peak = api["truePeakDBTP"]?.doubleValue, let oraclePeak = oracleJSON["truePeak"]?.doubleValue {
            #expect(abs(peak - oraclePeak) < 0.1, "libebur128 true peak \(oraclePeak), recd \(peak)")
        }
        if let range = api["rangeLU"]?.doubleValue, let oracleRange = oracleJSON["range"]?.doubleValue {
            #expect(abs(range - oracleRange) < 0.1, "libebur128 range \(oracleRange), recd \(range)")
        }
    }

    @Test(
        "hostile requests as real curl processes: a range of a year and malformed times get 400 saying what to write, a feed nobody may not read 403, another caller's job 404, a bad format 400; a long export (30 min of WAV) shows progress between 0 and 1 before it is done"
    )
    func hostileRequests() throws {
        try #require(getuid() == 0, "curl drops to nobody for the 403: run the tests as root")
        let port = try HTTPTestClient.freePort()
        let (daemon, source, segment) = try HTTPCallerRightsTests.recordingDaemon(
            extraConfig: "\n[http]\nlisten = 127.0.0.1:\(port)\n")
        defer { source.stop() }
        chmod(segment, 0o640)
        let list = try #require(try daemon.recctl("--json", "archive", "list").json?.arrayValue)
        let stream = try #require(list.first?["stream"]?.stringValue)
        let start = try #require(list.first?["start"]?.stringValue)
        let scratch = try HTTPCallerRightsTests.scratch()
        let api = "http://127.0.0.1:\(port)/api/"
        let feed = "feed=logger/\(stream)"
        func expect(_ path: String, _ status: Int, saying words: String, as user: String? = nil) throws {
            let answer = try HTTPCallerRightsTests.curl(
                api + path, prefix: try user.map { try HTTPCallerRightsTests.asUser($0) } ?? [], into: scratch)
            #expect(answer.status == status, "\(path): \(answer.status) \(answer.text)")
            #expect(answer.text.contains(words), "\(path): \(answer.text)")
        }
        try expect("export?\(feed)&from=-1y&to=now", 400, saying: "is not a time")
        try expect(
            "export?\(feed)&from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", 400, saying: "ask for it in parts")
        try expect("loudness?\(feed)&from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", 400, saying: "in parts")
        try expect("listen?\(feed)&from=yesterday%2099:99", 400, saying: "write one of (UTC)")
        try expect("export?\(feed)&from=banana&to=now", 400, saying: "now, -30s, -5m")
        try expect("export?\(feed)&from=-5m&to=-10m", 400, saying: "must end after it begins")
        try expect("export?feed=../../etc&from=-5m&to=now", 400, saying: "no feed name")
        try expect("export?\(feed)&from=-5m&to=now&format=mp3", 400, saying: "format=flac or format=wav")
        try expect("loudness?\(feed)&date=2026-13-45", 400, saying: "YYYY-MM-DD")
        try expect("export/progress?job=../x", 400, saying: "job=ID")
        // The first segment is 0640 root's: nobody may not read it, so not clip it either.
        try expect("export?\(feed)&from=\(start)&to=now", 403, saying: "may not read", as: "nobody")
        try expect("listen?\(feed)&from=\(start)", 403, saying: "may not read", as: "nobody")
        try expect("loudness?\(feed)&from=\(start)&to=now", 403, saying: "may not read", as: "nobody")
        // Root's job with a proof is root's: nobody gets neither its progress nor its proof.
        let job = "hostile\(UInt32.random(in: 0...UInt32.max))"
        let root = try HTTPCallerRightsTests.curl(api + "export?\(feed)&from=\(start)&to=now&job=\(job)", into: scratch)
        #expect(root.status == 200, "\(root.text)")
        try expect("export/progress?job=\(job)", 404, saying: "no export job", as: "nobody")
        try expect("export/proof?job=\(job)", 404, saying: "no proof", as: "nobody")
        try expect("export/progress?job=\(job)", 200, saying: "\"done\"")

        // A long export shows progress: 30 min of WAV (mostly the silence before the recording,
        // 518 MB) while its progress is read, until a reading between 0 and 1 has been seen.
        let long = "long\(UInt32.random(in: 0...UInt32.max))"
        let startDate = try #require(
            ISO8601DateFormatter.fractional.date(from: start) ?? ISO8601DateFormatter().date(from: start))
        let longFrom = ISO8601DateFormatter().string(from: startDate.addingTimeInterval(-1798))
        let longTo = ISO8601DateFormatter().string(from: startDate.addingTimeInterval(2))
        let exported = Locked<HTTPCallerRightsTests.CurlAnswer?>(nil)
        let thread = Thread {
            let answer = try? ExternalTools.run(
                "curl",
                [
                    "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "300",
                    api + "export?\(feed)&from=\(longFrom)&to=\(longTo)&format=wav&job=\(long)",
                ], timeout: 320)
            exported.withLock {
                $0 = HTTPCallerRightsTests.CurlAnswer(status: Int(answer?.stdout ?? "") ?? -1, body: [])
            }
        }
        thread.start()
        var seen: [Double] = []
        #expect(
            try eventually(timeout: 300) {
                let answer = try HTTPCallerRightsTests.curl(api + "export/progress?job=\(long)", into: scratch)
                guard answer.status == 200, let json = try? JSONValue.parse(answer.text),
                    let fraction = json["fraction"]?.doubleValue
                else { return false }
                if json["state"] == "running" && fraction > 0 && fraction < 1 { seen.append(fraction) }
                return json["state"] == "done"
            }, "the long export never finished")
        #expect(!seen.isEmpty, "no progress reading between 0 and 1 while 30 min of WAV were written")
        #expect(try eventually(timeout: 60) { exported.withLock { $0 != nil } })
        #expect(exported.withLock { $0?.status } == 200)
        print("progress readings of the long export: \(seen.map { String(format: "%.2f", $0) })")
    }
}

extension ISO8601DateFormatter {
    static var fractional: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}

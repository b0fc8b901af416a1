// The day of a feed end to end: the real recd recording a recd-signal tone that stops (a real
// silence, journaled), a day of another feed written into its index at speed, the day view in a
// real headless Chromium (Tests/Browser/day_view.py), and curl, a real HTTP client, against
// /api/day and /api/events with hostile parameters.
import ControlProtocol
import Foundation
import TestSupport
import Testing

@Suite("day view in a browser", .serialized)
struct DayViewTests {
    /// Where the screenshots go: $RECD_SCREENSHOTS, else .build/screenshots.
    static var screenshots: String {
        ProcessInfo.processInfo.environment["RECD_SCREENSHOTS"] ?? ExternalTools.packageRoot + "/.build/screenshots"
    }

    static func daemon(port: UInt16, deck: String) throws -> Daemon {
        try Daemon(
            extraConfig: """

                [http]
                listen = 127.0.0.1:\(port)

                [session logger]
                category = record
                mic_usage = Keeps the log
                permission = granted
                silence_seconds = 1

                """, ports: ArchiveEndToEndTests.deckPorts(deck), archiveSegmentSeconds: 5)
    }

    static func curl(_ port: UInt16, _ path: String) throws -> (status: Int, body: String) {
        let result = try runTool(
            "curl", ["-sS", "--max-time", "10", "-w", "\n%{http_code}", "http://127.0.0.1:\(port)\(path)"])
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    @Test(
        "a day of a feed renders in under 1 s at under 50 ms of recd's CPU; its silence and gap at their times; zoom; a picked range navigates to /browse; the live feed's silence at the time the tone stopped"
    )
    func dayInBrowser() throws {
        let deck = uniqueName("deck")
        let port = try HTTPTestClient.freePort()
        let daemon = try Self.daemon(port: port, deck: deck)
        let toneStart = Date()
        let source = try SignalClient([
            "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:1000", "--level", "-12",
            "--silent-from", "6", "--silent-for", "600",
        ])
        defer { source.stop() }
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        let start = try daemon.recctl("record", "start", "logger")
        try #require(start.status == 0, "\(start.stderr)")
        // The silence recd journals once the tone stops (silence_seconds = 1).
        var liveFeed = ""
        #expect(
            try eventually(timeout: 20) {
                let answer = try Self.curl(port, "/api/events?kind=silence")
                guard let event = (try? JSONValue.parse(answer.body))?["events"]?.arrayValue?.first,
                    let feed = event["feed"]?.stringValue
                else { return false }
                liveFeed = feed
                return true
            }, "no silence journaled; recd's log:\n\(daemon.log)")
        try #require(!liveFeed.isEmpty)
        let date = Self.day(Date().addingTimeInterval(-2 * 86_400))
        let result = try ExternalTools.run(
            "python3",
            [
                ExternalTools.packageRoot + "/Tests/Browser/day_view.py", "--base", "http://127.0.0.1:\(port)",
                "--index", daemon.directory + "/archive/index.sqlite", "--feed", "studio/main", "--date", date,
                "--live-feed", liveFeed, "--silent-at", String(toneStart.timeIntervalSince1970 + 6),
                "--pid", String(daemon.pid ?? 0), "--screenshots", Self.screenshots,
            ], environment: ["RECD_SELENIUM_VENV": StatusPageTests.seleniumVenv], timeout: 180)
        print(result.stdout)
        #expect(result.status == 0, "day_view.py: \(result.stdout)\n\(result.stderr)\nrecd's log:\n\(daemon.log)")
    }

    @Test("hostile parameters of /api/day and /api/events get 400 with what to send; recd keeps serving")
    func hostileParameters() throws {
        let deck = uniqueName("deck")
        let port = try HTTPTestClient.freePort()
        let daemon = try Self.daemon(port: port, deck: deck)
        let long = String(repeating: "a", count: 300) + "/b"
        let refused: [(String, String)] = [
            ("/api/day?feed=nostream", "feed must be app/stream"),
            ("/api/day?feed=\(long)", "feed must be app/stream"),
            ("/api/day?feed=a/b&date=2026-13-45", "date must be a day"),
            ("/api/day?feed=a/b&date=99999-01-01", "date must be a day"),
            ("/api/day?feed=a/b&date=1969-12-31", "date must be a day"),
            ("/api/day?feed=a/b&date=2026-12-06%00", "NUL byte"),
            ("/api/day?feed=a/b&date=2026-12-06%01", "date must be a day"),
            ("/api/day?feed=a/b&last=8760h", "last must be hours or minutes"),
            ("/api/day?feed=a/b&last=-5h", "last must be hours or minutes"),
            ("/api/day?feed=a/b&last=99999999999999999999h", "last must be hours or minutes"),
            ("/api/day?feed=a/b&date=2026-12-06&last=24h", "give date or last"),
            ("/api/events?from=2025-01-01&to=2026-01-01", "longer than 31 days"),
            ("/api/events?from=-292277022657-01-27T08:29:52Z", "from must be a time"),
            ("/api/events?to=2026-01-01&from=2026-02-01", "from must be before to"),
            ("/api/events?kind=silence;DROP%20TABLE%20journal", "kind must be"),
            ("/api/events?kind=" + Array(repeating: "a", count: 17).joined(separator: ","), "kind must be"),
            ("/api/events?limit=0", "limit must be"),
            ("/api/events?limit=1000000", "limit must be"),
            ("/api/events?limit=1e3", "limit must be"),
            ("/api/events?feed=a%0Ab/c", "feed must be app/stream"),
        ]
        for (path, words) in refused {
            let answer = try Self.curl(port, path)
            #expect(answer.status == 400, "\(path): \(answer.status) \(answer.body)")
            #expect(answer.body.contains(words), "\(path): \(answer.body)")
        }
        // What is allowed is answered, and bounded.
        let day = try Self.curl(port, "/api/day?feed=a/b&last=48h")
        #expect(day.status == 200, "\(day.body)")
        let events = try Self.curl(
            port, "/api/events?from=2026-01-01&to=2026-01-31T23:59:59Z&kind=silence,gap&limit=1000")
        #expect(events.status == 200, "\(events.body)")
        #expect(try daemon.recctl("status").status == 0, "recd stopped serving; its log:\n\(daemon.log)")
    }

    static func day(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.string(from: date)
    }
}

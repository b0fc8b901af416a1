// The status page end to end: the status page in a real headless Chromium (Selenium,
// Tests/Browser/status_page.py) against the real recd recording a recd-signal tone that stops.
import Foundation
import TestSupport
import Testing

@Suite("status page in a browser", .serialized)
struct StatusPageTests {
    /// Where scripts/test put Selenium (scripts/lib.sh ensure_selenium).
    static var seleniumVenv: String {
        ProcessInfo.processInfo.environment["RECD_SELENIUM_VENV"] ?? ExternalTools.packageRoot + "/.build/selenium-venv"
    }

    @Test(
        "the page loads without console errors, its meters move with a tone and rest after it, the recorder shows silent, a segment plays past 1 s, /archive/ serves ranges and refuses what is outside the rules"
    )
    func pageInBrowser() throws {
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
                silence_seconds = 1

                """, ports: ArchiveEndToEndTests.deckPorts(deck), archiveSegmentSeconds: 2)
        // A tone for 25 s, then silence: the browser sees the meters move, then rest. The tone
        // outlasts the wait for a finished segment and Chromium's start (9 s was once gone
        // before the page loaded, on a machine busy starting the browser).
        let source = try SignalClient([
            "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:1000", "--level", "-12",
            "--silent-from", "25", "--silent-for", "600",
        ])
        defer { source.stop() }
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        let start = try daemon.recctl("record", "start", "logger")
        try #require(start.status == 0, "\(start.stderr)")

        // An indexed segment replaced by a symbolic link to a file outside the archive: the
        // page must not serve it, though the index knows its path.
        let archive = daemon.directory + "/archive"
        var symlinked = ""
        #expect(
            try eventually(timeout: 8) {
                let list = try daemon.recctl("--json", "archive", "list").json?.arrayValue ?? []
                // A finished one: the list ends with the segment being written (its `.partial`).
                guard let path = list.first(where: { $0["state"] == "finished" })?["path"]?.stringValue else {
                    return false
                }
                let outside = daemon.directory + "/outside.flac"
                try FileManager.default.moveItem(atPath: path, toPath: outside)
                try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: outside)
                symlinked = String(path.dropFirst(archive.count + 1))
                return true
            })

        let result = try ExternalTools.run(
            "python3",
            [
                ExternalTools.packageRoot + "/Tests/Browser/status_page.py", "--url", "http://127.0.0.1:\(port)/",
                "--symlinked", symlinked,
            ], environment: ["RECD_SELENIUM_VENV": Self.seleniumVenv], timeout: 90)
        print(result.stdout)
        #expect(result.status == 0, "status_page.py: \(result.stdout)\n\(result.stderr)\nrecd's log:\n\(daemon.log)")
    }
}

// A session's route shows what it uses: four declared loggers, each recording its own feed
// (`[session logN] record = feedN`), the real recd, recctl and curl on the status page's API.
// Every logger's route in `recctl status`, `recctl --json session show`, `recctl --json status`
// and the status page's /api/status is the feed its recorder records, not the feed connected
// last.
import ControlProtocol
import Foundation
import TestSupport
import Testing

@Suite("declared recorders' routes end to end", .serialized)
struct DeclaredRouteEndToEndTests {
    @Test(
        "four loggers recording feed1 to feed4 show in [feedN] each: recctl status, session JSON, status JSON, the status page"
    )
    func fourLoggersFourRoutes() throws {
        let decks = (1...4).map { uniqueName("feed\($0)") }
        var ports = ""
        var sessions = ""
        for (index, deck) in decks.enumerated() {
            ports += """
                [port feed\(index + 1)]
                type = lineIn
                direction = input
                jack = \(deck):out_1, \(deck):out_2


                """
            sessions += """

                [session log\(index + 1)]
                category = record
                options = mixWithOthers
                priority = logger
                mic_usage = Keeps the legal record of feed \(index + 1)
                record = feed\(index + 1)
                permission = granted

                """
        }
        let httpPort = try HTTPTestClient.freePort()
        // The feeds come one after another, feed4 last: the most recent input, which every
        // logger's route showed.
        var sources: [SignalClient] = []
        defer { for source in sources { source.stop() } }
        for deck in decks {
            sources.append(
                try SignalClient([
                    "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:440", "--level", "-20",
                ]))
        }
        let daemon = try Daemon(
            extraConfig: "\n[http]\nlisten = 127.0.0.1:\(httpPort)\n" + sessions, ports: ports)
        #expect(
            try eventually(timeout: 10) {
                (try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue?.count) == 4
            }, "the four loggers should record: \(daemon.log)")
        let status = try #require(daemon.recctl("--json", "status").json)
        let recorded = Dictionary(
            uniqueKeysWithValues: (status["recorders"]?.arrayValue ?? []).compactMap { recorder in
                recorder["app"]?.stringValue.map { ($0, recorder["port"]?.stringValue ?? "") }
            })
        let human = try daemon.recctl("status").stdout
        let page = try runTool("curl", ["-sS", "--max-time", "5", "http://127.0.0.1:\(httpPort)/api/status"])
        let pageStatus = try #require(
            try? JSONValue.parse(page.stdout)["status"], "curl: \(page.stderr) \(page.stdout)")
        for number in 1...4 {
            let app = "log\(number)"
            let feed = JSONValue.array([.string("feed\(number)")])
            #expect(recorded[app] == "feed\(number)", "\(status.jsonText)")
            let shown = try daemon.recctl("--json", "session", "show", app).json
            #expect(shown?["route"]?["inputs"] == feed, "session show \(app): \(shown?.jsonText ?? "")")
            let inStatus = status["sessions"]?.arrayValue?.first { $0["app"]?.stringValue == app }
            #expect(inStatus?["route"]?["inputs"] == feed, "status \(app): \(inStatus?.jsonText ?? "")")
            let onPage = pageStatus["sessions"]?.arrayValue?.first { $0["app"]?.stringValue == app }
            #expect(onPage?["route"]?["inputs"] == feed, "the status page's \(app): \(onPage?.jsonText ?? "")")
            let line = human.split(separator: "\n").first { $0.contains(app) && $0.contains("in [") }
            #expect(line?.contains("in [feed\(number)]") == true, "recctl status for \(app):\n\(human)")
        }
    }
}

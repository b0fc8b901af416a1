// The health state and the wall screen end to end: a private jackd (SIGSTOPped, then
// SIGCONTed), the real recd recording two recd-signal decks, recctl, curl-like HTTP and the
// pages in a real headless Chromium (Tests/Browser/wall.py): the same health in `recctl
// status`, `/api/health`, `/api/status` and `/metrics`; a frozen server named on every face and
// healed by itself; a silent feed in words; recd SIGKILLed turns both pages into an alarm.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("health state and wall screen", .serialized)
struct WallTests {
    static let serverName = "recd-test-wall"

    /// Two feeds on a private server: `logger/mic` (a tone at -12 dBFS on deck A) and
    /// `studio/desk` (a tone at -20 dBFS on deck B), both recording, HTTP on a free port.
    /// `toneSeconds`: deck A's tone stops after that much of the server's time (then an hour
    /// of digital silence), so that the logger's feed goes silent by itself.
    static func twoFeeds(
        on jack: PrivateJack, toneSeconds: Int? = nil
    ) throws -> (daemon: Daemon, decks: [SignalClient], port: UInt16) {
        let a = uniqueName("decka")
        let b = uniqueName("deckb")
        var decks: [SignalClient] = []
        for (deck, frequency, level) in [(a, 1000, -12), (b, 440, -20)] {
            let envelope = deck == a ? toneSeconds.map { ["--envelope", "\($0):0,3600:off"] } ?? [] : []
            decks.append(
                try SignalClient(
                    [
                        "--server", jack.name, "--name", deck, "play", "--ports", "out_1,out_2", "--signal",
                        "sine:\(frequency)", "--level", "\(level)",
                    ] + envelope))
        }
        let daemon = try Daemon(
            extraConfig: """

                [port desk]
                type = lineIn
                direction = input
                jack = \(b):out_1, \(b):out_2

                [http]
                listen = 127.0.0.1:0

                [session logger]
                category = record
                options = mixWithOthers
                mic_usage = Keeps the log
                permission = granted
                silence_seconds = 1

                [session studio]
                category = record
                options = mixWithOthers
                mic_usage = Keeps the desk
                permission = granted

                """, ports: ReliabilityTests.deckPorts(a), jackServer: jack.name)
        #expect(
            try eventually {
                let ports = try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue ?? []
                return ports.count == 2 && ports.allSatisfy { $0["available"] == true }
            })
        try #require(daemon.recctl("record", "start", "logger", "--stream", "mic", "--input", "mic").status == 0)
        try #require(daemon.recctl("record", "start", "studio", "--stream", "desk", "--input", "desk").status == 0)
        return (daemon, decks, try HTTPEndToEndTests.httpPort(daemon))
    }

    /// The health as each face shows it: `recctl status`'s first line, `recctl --json
    /// status`'s `health`, `/api/health`, `/api/status`'s `status.health`, and `/metrics`.
    struct Faces {
        var line: String
        var human: String
        var json: JSONValue?
        var api: JSONValue?
        var apiStatus: JSONValue?
        var metrics: String

        init(_ daemon: Daemon, port: UInt16) throws {
            human = try daemon.recctl("status").stdout
            line = String(human.split(separator: "\n").first ?? "")
            json = try daemon.recctl("--json", "status").json?["health"]
            api = try? JSONValue.parse(try HTTPTestClient.get(port: port, path: "/api/health").text)
            apiStatus =
                (try? JSONValue.parse(try HTTPTestClient.get(port: port, path: "/api/status").text))?["status"]?[
                    "health"]
            metrics = try HTTPTestClient.get(port: port, path: "/metrics").text
        }

        static func codes(_ health: JSONValue?) -> [String] {
            (health?["reasons"]?.arrayValue ?? []).compactMap { $0["reason"]?.stringValue }
        }

        /// The state and the reasons' codes every face agrees on, or nil with what differs.
        func agreed() -> (state: String, codes: [String])? {
            let all = [json, api, apiStatus]
            guard let state = api?["state"]?.stringValue, all.allSatisfy({ $0?["state"]?.stringValue == state })
            else { return nil }
            let codes = Self.codes(api)
            guard all.allSatisfy({ Self.codes($0) == codes }) else { return nil }
            guard line.hasPrefix(state.uppercased()) else { return nil }
            let level = ["ok": 0, "warning": 1, "alarm": 2][state] ?? -1
            guard metrics.contains("\nrecd_health_state \(level)\n") else { return nil }
            let series = metrics.split(separator: "\n").filter { $0.hasPrefix("recd_health{") }
            guard series.count == codes.count,
                codes.allSatisfy({ code in
                    series.contains { $0.contains("reason=\"\(code)\"") && $0.hasSuffix(" 1") }
                })
            else { return nil }
            // Each reason's words are in the line, durations aside (they grow between the asks).
            let texts = (api?["reasons"]?.arrayValue ?? []).compactMap { $0["text"]?.stringValue }
            guard texts.allSatisfy({ line.contains($0.prefix { !$0.isNumber }) }) else { return nil }
            return (state, codes)
        }
    }

    @Test(
        "the same health in recctl status's first line, recctl --json status, /api/health, /api/status and /metrics: ok; jackd SIGSTOPped: alarm jack-stalled on every face and a health event; SIGCONT: healed by itself, another event"
    )
    func facesAgree() throws {
        let jack = try PrivateJack(period: 1024, name: Self.serverName)
        defer { jack.stop() }
        let (daemon, decks, port) = try Self.twoFeeds(on: jack)
        defer { decks.forEach { $0.stop() } }
        let watcher = try daemon.watch()
        var before: (state: String, codes: [String])?
        #expect(
            try eventually(timeout: 8) {
                before = try Faces(daemon, port: port).agreed()
                return before.map { $0.state != "alarm" } ?? false
            }, "the faces agree on a state that is not an alarm while both feeds sound")
        let server = try #require(jack.process?.processIdentifier)
        kill(server, SIGSTOP)
        var stalled: Faces?
        let stallSeen = try eventually(timeout: 8) {
            let faces = try Faces(daemon, port: port)
            stalled = faces
            return faces.agreed()?.codes.first == "jack-stalled" && faces.agreed()?.state == "alarm"
        }
        kill(server, SIGCONT)
        #expect(stallSeen, "every face names the stall: \(String(describing: stalled))")
        if let stalled {
            #expect(stalled.line.hasPrefix("ALARM: JACK server '\(Self.serverName)' stalled: no process cycle for "))
            #expect(stalled.metrics.contains("recd_health{scope=\"box\",reason=\"jack-stalled\",state=\"alarm\"} 1"))
            #expect(stalled.metrics.contains("\nrecd_jack_stalled 1\n"))
            #expect(stalled.human.contains("STALLED: no process cycle since"), "\(stalled.human)")
        }
        #expect(
            try eventually(timeout: 8) { try Faces(daemon, port: port).agreed()?.state == before?.state },
            "healed by itself after SIGCONT")
        let events = watcher.waitFor(count: 2, timeout: 5) { $0["event"] == "health" }.filter {
            $0["event"] == "health"
        }
        #expect(events.contains { Faces.codes($0).first == "jack-stalled" }, "\(events)")
        #expect(events.last.map { Faces.codes($0).contains("jack-stalled") } == false, "\(events)")
    }

    @Test(
        "the wall screen and the status page in Chromium: meters with dB scale, peak hold and LUFS; jackd SIGSTOPped names the stall, SIGCONT heals; a feed whose tone stops is 'silent for'; recd SIGKILLed turns both pages into an alarm within 3 s; screenshots at 1920x1080 and 1280x720"
    )
    func wallInBrowser() throws {
        let jack = try PrivateJack(period: 1024, name: Self.serverName)
        defer { jack.stop() }
        // The logger's tone lasts 45 s of the server's time: the checks before the silence take
        // about 15 (the 3 s the server is stopped do not count).
        let (daemon, decks, port) = try Self.twoFeeds(on: jack, toneSeconds: 45)
        defer { decks.forEach { $0.stop() } }
        let screenshots =
            ProcessInfo.processInfo.environment["RECD_SCREENSHOTS"] ?? ExternalTools.packageRoot + "/.build/screenshots"
        try FileManager.default.createDirectory(atPath: screenshots, withIntermediateDirectories: true)
        let result = try ExternalTools.run(
            "python3",
            [
                ExternalTools.packageRoot + "/Tests/Browser/wall.py", "--url", "http://127.0.0.1:\(port)/",
                "--jackd-pid", "\(try #require(jack.process?.processIdentifier))",
                "--recd-pid", "\(try #require(daemon.pid))", "--server", Self.serverName, "--screenshots", screenshots,
            ], environment: ["RECD_SELENIUM_VENV": StatusPageTests.seleniumVenv], timeout: 150)
        print(result.stdout)
        // The script SIGCONTs the server itself; again here in case it failed in between.
        if let server = jack.process?.processIdentifier { kill(server, SIGCONT) }
        #expect(result.status == 0, "wall.py: \(result.stdout)\n\(result.stderr)\nrecd's log:\n\(daemon.log)")
    }
}

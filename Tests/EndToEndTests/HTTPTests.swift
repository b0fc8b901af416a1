// HTTP and metrics end to end: the real recd's HTTP listener over real TCP sockets (its
// limits, the token, `listen = no`), `GET /metrics` checked by promtool, a real Prometheus
// server scraping recd while a recd-signal tone records, and the shipped alerting rules.
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("HTTP listener and Prometheus metrics end to end", .serialized)
struct HTTPEndToEndTests {
    /// The port recd's log says its listener bound (the config asks for port 0).
    static func httpPort(_ daemon: Daemon) throws -> UInt16 {
        let log = daemon.log
        guard let range = log.range(of: #"HTTP listener on \S+:(\d+)"#, options: .regularExpression),
            let port = UInt16(log[range].split(separator: ":").last ?? "")
        else { throw DaemonFailure(message: "recd logged no HTTP listener:\n\(log)") }
        return port
    }

    /// The TCP ports on which process `pid` has a listening socket (from /proc: its socket
    /// descriptors' inodes against the kernel's tables).
    static func listeningTCPPorts(pid: Int32) -> Set<UInt16> {
        let fdDirectory = "/proc/\(pid)/fd"
        var inodes = Set<String>()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: fdDirectory)) ?? [] {
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: fdDirectory + "/" + name),
                target.hasPrefix("socket:[")
            {
                inodes.insert(String(target.dropFirst(8).dropLast()))
            }
        }
        var ports = Set<UInt16>()
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9, fields[3] == "0A", inodes.contains(String(fields[9])),
                    let port = fields[1].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) })
                else { continue }
                ports.insert(port)
            }
        }
        return ports
    }

    /// The value of the sample `series` (name and labels as rendered) in a metrics text.
    static func sample(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap {
            Double($0.split(separator: " ").last ?? "")
        }
    }

    /// `promtool check metrics` on `text` (it reads standard input): its status and output.
    static func promtoolCheckMetrics(_ text: String) throws -> (Int32, String) {
        let directory = try makeTemporaryDirectory("recd-promtool")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try text.write(toFile: directory + "/metrics", atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: directory + "/out", contents: nil)
        let process = try ExternalTools.process("promtool", ["check", "metrics"])
        process.standardInput = FileHandle(forReadingAtPath: directory + "/metrics")
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/out"))
        process.standardOutput = out
        process.standardError = out
        try process.run()
        process.waitUntilExit()
        try out.close()
        return (process.terminationStatus, (try? String(contentsOfFile: directory + "/out", encoding: .utf8)) ?? "")
    }

    @Test(
        "GET /metrics: Prometheus text that promtool accepts; HEAD without a body; 404; POST, PUT, DELETE get 405 with Allow; a 20 KiB header gets 431; only the configured port listens; a port already taken leaves recd running without HTTP"
    )
    func listenerBasics() throws {
        let daemon = try Daemon(extraConfig: "\n[http]\nlisten = 127.0.0.1:0\n")
        let port = try Self.httpPort(daemon)
        #expect(Self.listeningTCPPorts(pid: try #require(daemon.pid)) == [port])
        let metrics = try HTTPTestClient.get(port: port, path: "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        // Every series in the first scrape too: the input peaks wait for the meters' first window.
        for series in [
            #"recd_input_peak_dbfs{port="mic",channel="1"}"#, #"recd_input_peak_dbfs{port="mic",channel="2"}"#,
        ] {
            #expect(Self.sample(metrics.text, series) != nil, "\(series) in the first scrape:\n\(metrics.text)")
        }
        for line in ["recd_up 1", "recd_jack_connected 1", "recd_sessions_active 0", "# TYPE recd_xruns_total counter"]
        {
            #expect(metrics.text.contains(line + "\n"), "\(line) in:\n\(metrics.text)")
        }
        let (status, output) = try Self.promtoolCheckMetrics(metrics.text)
        #expect(status == 0, "promtool check metrics: \(output)")
        let head = try HTTPTestClient.get(port: port, path: "/metrics", method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(try HTTPTestClient.get(port: port, path: "/nothing").status == 404)
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            let refused = try HTTPTestClient.get(port: port, path: "/metrics", method: method)
            #expect(refused.status == 405 && refused.headers["allow"] == "GET, HEAD", "\(method): \(refused.status)")
        }
        let big = try HTTPTestClient.get(
            port: port, path: "/metrics", headers: ["X-Big": String(repeating: "a", count: 20_000)])
        #expect(big.status == 431)
        #expect(try HTTPTestClient.get(port: port, path: "/metrics").status == 200, "still serving")

        // A port already taken does not stop a second recd: it records without HTTP and says so.
        let second = try Daemon(extraConfig: "\n[http]\nlisten = 127.0.0.1:\(port)\n")
        #expect(try second.recctl("status").status == 0)
        #expect(second.log.contains("HTTP listener off: cannot listen on 127.0.0.1:\(port)"), "\(second.log)")
    }

    @Test(
        "64 connections trickling request heads (a byte every 5.5 s) from 127.0.0.2-5 hold every slot: a new client from 127.0.0.1, and one from a full address, are served at once; the trickling ones get 408 at the 5 s head deadline"
    )
    func trickledHeads() throws {
        let daemon = try Daemon(extraConfig: "\n[http]\nlisten = 127.0.0.1:0\n")
        let port = try Self.httpPort(daemon)
        /// Whether a new connection from `source` gets an answer.
        func served(from source: String) -> Bool {
            guard let connection = try? HTTPTestConnection(host: "127.0.0.1", port: port, source: source) else {
                return false
            }
            connection.send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return HTTPTestConnection.parse(connection.readAll(timeout: 3))?.status == 200
        }
        let tricklers = try HTTPTricklers(
            port: port, sources: ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"], each: 16, interval: 5.5)
        defer { tricklers.stop() }
        usleep(300_000)
        #expect(tricklers.outcomes.allSatisfy { $0.endedAt == nil }, "all 64 are held before the newcomers")
        let asked = Date()
        #expect(served(from: "127.0.0.1"), "a new client from 127.0.0.1")
        #expect(served(from: "127.0.0.4"), "a new client from an address holding 16")
        #expect(Date().timeIntervalSince(asked) < 5 + 1, "within the head deadline + 1 s")
        #expect(try eventually(timeout: 7) { tricklers.outcomes.allSatisfy { $0.endedAt != nil } })
        let outcomes = tricklers.outcomes
        let last = outcomes.compactMap(\.endedAt).max() ?? 0
        #expect(last > 4.5 && last < 5 + 1, "the last trickler ended \(last) s in")
        let timedOut = outcomes.filter { $0.received.hasPrefix("HTTP/1.1 408") }.count
        #expect(timedOut >= 60, "\(timedOut) of 64 got 408 (2 made room for the newcomers)")
        #expect(served(from: "127.0.0.2"))
    }

    @Test(
        "16 /events clients that never read (small receive buffers) are cut off once recd could write them nothing for 5 s: a 17th gets its stream within the bound"
    )
    func stalledEventStreams() throws {
        let daemon = try Daemon(extraConfig: "\n[http]\nlisten = 127.0.0.1:0\n")
        let port = try Self.httpPort(daemon)
        var sleepers: [HTTPTestConnection] = []
        for _ in 0..<16 {
            let connection = try HTTPTestConnection(host: "127.0.0.1", port: port, receiveBuffer: 2048)
            connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            sleepers.append(connection)
        }
        usleep(300_000)
        // From another address: the 16 hold 127.0.0.1's share of connections.
        let refused = try HTTPTestClient.get(port: port, path: "/events", source: "127.0.0.2", timeout: 2)
        #expect(refused.status == 503, "a 17th while 16 are open: \(refused.status)")
        let asked = Date()
        var head = ""
        #expect(
            try eventually(timeout: 20) {
                let connection = try HTTPTestConnection(host: "127.0.0.1", port: port, source: "127.0.0.2")
                connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                head = connection.read(until: "\r\n\r\n", timeout: 2)
                return head.hasPrefix("HTTP/1.1 200")
            }, "\(head)")
        // The meters come at about 4.5 kB/s: the sleepers' small receive buffers and recd's
        // small send buffer fill within a few seconds, then 5 s pass with nothing taken. (A
        // client with Linux's default buffers takes megabytes first: the 60 s stream lifetime
        // bounds that one, HTTPServerLimitTests.stalledStreams.)
        let waited = Date().timeIntervalSince(asked)
        #expect(waited < 15, "a 17th /events stream after \(waited) s")
        _ = sleepers
    }

    @Test(
        "the token: a token file group or others may read stops recd (EX_CONFIG) with what to do; with one, loopback peers need none, other peers get 401 without it or with a wrong one, 200 with it"
    )
    func token() throws {
        // Without a token the listener beyond loopback speaks HTTPS and waits for accounts
        // (WebSecurityTests); with a token file others may read, recd refuses to start.
        let directory = try makeTemporaryDirectory("recd-token")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let token = "s3cret-" + UUID().uuidString
        try (token + "\n").write(toFile: directory + "/token", atomically: true, encoding: .utf8)
        // A token file others may read: refused with what to run.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: directory + "/token")
        let open = try Daemon.expectingFailure(
            extraConfig: "\n[http]\nlisten = 0.0.0.0:0\ntoken_file = \(directory)/token\n")
        #expect(open.status == 78, "exit \(open.status)")
        #expect(open.log.contains("chmod 600 \(directory)/token"), "\(open.log)")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory + "/token")
        let daemon = try Daemon(extraConfig: "\n[http]\nlisten = 0.0.0.0:0\ntoken_file = \(directory)/token\n")
        let port = try Self.httpPort(daemon)
        // Not loopback: HTTPS, with the certificate recd made at its first start.
        let certificate = daemon.directory + "/state/http-certificate.pem"
        let scratch = try HTTPCallerRightsTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        func get(_ host: String, _ headers: [String] = []) throws -> WebSecurityTests.Answer {
            try WebSecurityTests.curl(
                "https://\(host):\(port)/metrics", certificate: certificate, headers: headers, into: scratch)
        }
        #expect(try get("127.0.0.1").status == 200, "loopback needs no token")
        let addresses = HTTPTestClient.nonLoopbackIPv4()
        try #require(!addresses.isEmpty, "this machine has no non-loopback IPv4 address to test the token from")
        let outside = addresses[0]
        let none = try get(outside)
        #expect(none.status == 401 && none.headers.lowercased().contains("www-authenticate: bearer"), "\(none.status)")
        let wrong = try get(outside, ["Authorization: Bearer s3cret-wrong"])
        #expect(wrong.status == 401)
        let almost = try get(outside, ["Authorization: Bearer " + token.dropLast()])
        #expect(almost.status == 401)
        let right = try get(outside, ["Authorization: Bearer " + token])
        #expect(right.status == 200 && right.text.contains("recd_up 1"))
    }

    @Test("listen = no: recd runs with no TCP listening socket at all")
    func listenNo() throws {
        let daemon = try Daemon(extraConfig: "\n[http]\nlisten = no\n")
        #expect(try daemon.recctl("status").status == 0)
        #expect(Self.listeningTCPPorts(pid: try #require(daemon.pid)).isEmpty)
        #expect(!daemon.log.contains("HTTP listener on"))
    }

    @Test(
        "a real Prometheus scrapes recd (bearer token, every 1 s) while a tone records: its API returns up == 1, recd_recording 1, recorded seconds, the tone's peak, and recd_silence 1 once the tone stops; recd's own text passes promtool"
    )
    func prometheusScrapes() throws {
        let directory = try makeTemporaryDirectory("recd-prometheus")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let token = "token-" + UUID().uuidString
        try token.write(toFile: directory + "/token", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory + "/token")
        let deck = uniqueName("deck")
        let daemon = try Daemon(
            extraConfig: """

                [session logger]
                category = record
                mic_usage = Keeps the log
                permission = granted
                silence_seconds = 1
                silence_threshold_db = -40

                [http]
                listen = 0.0.0.0:0
                token_file = \(directory)/token

                """, ports: ArchiveEndToEndTests.deckPorts(deck))
        let port = try Self.httpPort(daemon)
        // Listening beyond loopback: HTTPS, with the certificate recd made at its first start.
        let scratch = try HTTPCallerRightsTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        func metricsText() throws -> String {
            try WebSecurityTests.curl(
                "https://127.0.0.1:\(port)/metrics", certificate: daemon.directory + "/state/http-certificate.pem",
                into: scratch
            ).text(limit: 1 << 20)
        }
        // A real Prometheus: its own config and storage, a free port, the shipped rules. Started,
        // and scraping, before the tone: the tone lasts 6 s, and a first start of Prometheus
        // (its storage made afresh) can take longer than that.
        let target = HTTPTestClient.nonLoopbackIPv4().first ?? "127.0.0.1"
        let webPort = try HTTPTestClient.freePort()
        try """
        global:
          scrape_interval: 1s
          evaluation_interval: 1s
        rule_files:
          - \(ExternalTools.packageRoot)/config/prometheus/recd-rules.yml
        scrape_configs:
          - job_name: recd
            scheme: https
            tls_config:
              ca_file: \(daemon.directory)/state/http-certificate.pem
            authorization:
              type: Bearer
              credentials_file: \(directory)/token
            static_configs:
              - targets: ["\(target):\(port)"]
        """.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        let prometheus = try ExternalTools.process(
            "prometheus",
            [
                "--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/data",
                "--web.listen-address=127.0.0.1:\(webPort)", "--log.level=warn",
            ])
        let log = try FileHandle(
            forWritingTo: URL(fileURLWithPath: directory + "/prometheus.log", isDirectory: false).creatingFile())
        prometheus.standardOutput = log
        prometheus.standardError = log
        prometheus.standardInput = FileHandle.nullDevice
        try prometheus.run()
        defer {
            prometheus.terminate()
            prometheus.waitUntilExit()
        }

        /// The value of `query`'s first sample, from Prometheus's HTTP API.
        func query(_ query: String) -> Double? {
            let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? query
            guard let answer = try? HTTPTestClient.get(port: webPort, path: "/api/v1/query?query=\(encoded)"),
                answer.status == 200,
                let json = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any],
                let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]],
                let value = result.first?["value"] as? [Any], let number = value.last as? String
            else { return nil }
            return Double(number)
        }
        var up: Double?
        #expect(
            try eventually(timeout: 20) {
                up = query("up{job=\"recd\"}"); return up == 1
            },
            "up = \(String(describing: up)); Prometheus log:\n\((try? String(contentsOfFile: directory + "/prometheus.log", encoding: .utf8)) ?? "")"
        )
        let source = try SignalClient([
            "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:1000", "--level", "-12",
            "--silent-from", "6", "--silent-for", "60",
        ])
        defer { _ = source }
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        let start = try daemon.recctl("record", "start", "logger")
        try #require(start.status == 0, "\(start.stderr)")

        // recd's own text while recording.
        var text = ""
        #expect(
            try eventually(timeout: 5) {
                text = try metricsText()
                let peak = Self.sample(text, "recd_input_peak_dbfs{port=\"mic\",channel=\"1\"}")
                return text.contains("recd_recording{app=\"logger\"") && peak.map { abs($0 + 12) < 0.5 } == true
                    && Self.sample(text, "recd_silence{app=\"logger\",stream=\"mic\"}") == 0
            }, "\(text)")
        let (status, output) = try Self.promtoolCheckMetrics(text)
        #expect(status == 0, "promtool check metrics: \(output)")

        #expect(try eventually(timeout: 5) { query("recd_recording{app=\"logger\"}") == 1 })
        var seconds: Double?
        #expect(
            try eventually(timeout: 10) {
                seconds = query("recd_recorded_seconds_total{app=\"logger\"}")
                return (seconds ?? 0) >= 2
            }, "recorded seconds \(String(describing: seconds))")
        #expect(query("recd_jack_connected") == 1)
        // Peaks are per tick: the scrapes so far may all have met -120 between the tone's periods
        // on a loaded machine, so wait for one that saw the tone.
        var loudest: Double?
        #expect(
            try eventually(timeout: 5) {
                loudest = query("max_over_time(recd_input_peak_dbfs{port=\"mic\",channel=\"2\"}[1m])")
                return loudest.map { abs($0 + 12) < 0.5 } == true
            }, "peak \(String(describing: loudest))")
        // The tone stops 6 s in: silence detection (1 s) marks the stream, in recd's text and in Prometheus.
        #expect(
            try eventually(timeout: 12) {
                Self.sample(
                    try metricsText(),
                    "recd_silence{app=\"logger\",stream=\"mic\"}") == 1
            })
        #expect(try eventually(timeout: 5) { query("recd_silence{app=\"logger\"}") == 1 })
    }
}

@Suite("Prometheus alerting rules (config/prometheus)")
struct PrometheusRulesTests {
    @Test("recd-rules.yml passes promtool check rules, and recd-rules.test.yml's cases pass promtool test rules")
    func rules() throws {
        let directory = ExternalTools.packageRoot + "/config/prometheus"
        let check = try ExternalTools.run("promtool", ["check", "rules", directory + "/recd-rules.yml"])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("SUCCESS: 7 rules found"), "\(check.stdout)")
        let test = try ExternalTools.run("promtool", ["test", "rules", directory + "/recd-rules.test.yml"])
        #expect(test.status == 0, "\(test.stdout)\(test.stderr)")
    }
}

extension URL {
    /// Creates an empty file here (for a FileHandle to write to).
    fileprivate func creatingFile() -> URL {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        return self
    }
}

extension Daemon {
    /// Runs recd with `extraConfig` expecting it to stop by itself: its exit status and log.
    static func expectingFailure(extraConfig: String) throws -> (status: Int32, log: String) {
        let directory = try makeTemporaryDirectory("recd-fail")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = """
            [daemon]
            socket = \(directory)/control.sock
            state_dir = \(directory)/state

            """ + extraConfig
        try config.write(toFile: directory + "/recd.conf", atomically: true, encoding: .utf8)
        let recd = productsDirectory.appendingPathComponent("recd").path
        let result = try ExternalTools.runExecutable(recd, ["--config", directory + "/recd.conf"], timeout: 20)
        return (result.status, result.stdout + result.stderr)
    }
}

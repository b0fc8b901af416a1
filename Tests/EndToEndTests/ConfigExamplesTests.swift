// The annotated examples in config/ are real configs: recd accepts them, and the broadcast
// logger records by itself with no client.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

let repositoryRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
        url = url.deletingLastPathComponent()
    }
    return url.path
}()

@Suite("config examples and --check-config")
struct ConfigExamplesTests {
    /// A config's sections as written: the header and its `key = value` lines (comments and
    /// continuation lines left out; the keys this test reads take one line).
    static func sections(_ text: String) -> [(header: String, fields: [String: String])] {
        var found: [(header: String, fields: [String: String])] = []
        for raw in text.split(separator: "\n") {
            var line = String(raw)
            for marker in [" ;", " #"] {
                if let cut = line.range(of: marker) { line = String(line[..<cut.lowerBound]) }
            }
            line = line.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                found.append((String(line.dropFirst().dropLast()), [:]))
            } else if let equals = line.firstIndex(of: "="), !found.isEmpty {
                let key = line[..<equals].trimmingCharacters(in: .whitespaces)
                let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                found[found.count - 1].fields[key] = value
            }
        }
        return found
    }

    /// Whether an ini block is recd's config (not rclone's or a systemd unit's): every section is one of recd's.
    static func isRecdConfig(_ text: String) -> Bool {
        let sections = Self.sections(text)
        let fixed: Set = ["daemon", "jack", "archive", "policy", "http", "replicate"]
        return !sections.isEmpty
            && sections.allSatisfy {
                fixed.contains($0.header) || $0.header.hasPrefix("port ") || $0.header.hasPrefix("session ")
            }
    }

    /// The shipped configs: config/*.conf (jackd.conf is jackd's, not recd's) and the annotated example.
    static func shippedConfigs() throws -> [(name: String, text: String)] {
        try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/config")
            .filter { ($0.hasSuffix(".conf") || $0.hasSuffix(".example")) && $0 != "jackd.conf" }.sorted()
            .map { ("config/" + $0, try String(contentsOfFile: repositoryRoot + "/config/" + $0, encoding: .utf8)) }
    }

    @Test(
        "every shipped config and every whole config in README.md and docs/ passes --check-config; every logger in them uses the README's recommended values"
    )
    func shippedConfigsFollowTheDocs() throws {
        let recd = productsDirectory.appendingPathComponent("recd").path
        let directory = try makeTemporaryDirectory("recd-conf")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The README's logger: the one documented [session] that records at start (`record = PORT`).
        let readme = try String(contentsOfFile: repositoryRoot + "/README.md", encoding: .utf8)
        let documented = DocumentCode.blocks("ini", in: readme).flatMap(Self.sections)
            .filter { $0.header.hasPrefix("session ") && $0.fields["record"] != nil }
        try #require(documented.count == 1, "README.md should show one logger declaration: \(documented)")
        let recommended = documented[0].fields.filter { ["category", "priority", "permission"].contains($0.key) }
        #expect(recommended["priority"] == "logger" && recommended.count == 3, "\(recommended)")

        var configs = try Self.shippedConfigs().map { (name: $0.name, text: $0.text, whole: true) }
        for document in try DocumentCode.documents() {
            let blocks = DocumentCode.blocks("ini", in: document.text).enumerated()
            for (index, block) in blocks where Self.isRecdConfig(block) {
                // A whole config begins where a file does, with [daemon]; the rest are excerpts.
                let whole = Self.sections(block).first?.header == "daemon"
                configs.append(("\(document.path) ini block \(index + 1)", block, whole))
            }
        }
        #expect(configs.filter(\.whole).count >= 4, "\(configs.map(\.name))")
        var loggers = 0
        for config in configs {
            if config.whole {
                let path = directory + "/" + config.name.replacingOccurrences(of: "/", with: "_")
                try config.text.write(toFile: path, atomically: true, encoding: .utf8)
                let checked = try runProgram(recd, ["--check-config", path])
                #expect(checked.status == 0 && checked.stdout.contains("OK"), "\(config.name): \(checked.stderr)")
            }
            // A logger: a declared session that records a port at start.
            for section in Self.sections(config.text) where section.header.hasPrefix("session ") {
                guard let record = section.fields["record"], record != "no", record != "route" else { continue }
                loggers += 1
                for (key, value) in recommended {
                    #expect(
                        section.fields[key] == value,
                        """
                        \(config.name) [\(section.header)]: \(key) = \(section.fields[key] ?? "(unset)"), \
                        the README recommends \(key) = \(value)
                        """)
                }
                #expect(section.fields["mic_usage"] != nil, "\(config.name) [\(section.header)] needs mic_usage")
            }
        }
        #expect(loggers >= 3, "the README's, the broadcast logger's and recd.conf.example's")
    }

    @Test("a bad config is refused with FILE:LINE and a non-zero exit; the embedded default is valid")
    func badConfig() throws {
        let recd = productsDirectory.appendingPathComponent("recd").path
        let directory = try makeTemporaryDirectory("recd-conf")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/bad.conf"
        try "[daemon]\nsocket = /tmp/x.sock\n\n[session radio]\ncategory = playback\noptions = defaultToSpeaker\n".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runProgram(recd, ["--check-config", path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(path):4:") && result.stderr.contains("defaultToSpeaker"), "\(result.stderr)")
        let typo = directory + "/typo.conf"
        try "[archive]\nsegment_secnds = 60\n".write(toFile: typo, atomically: true, encoding: .utf8)
        let unknown = try runProgram(recd, ["--check-config", typo])
        #expect(unknown.status == 1 && unknown.stderr.contains("\(typo):2:") && unknown.stderr.contains("segment_secnds"))
        let defaultText = try runProgram(recd, ["--print-default-config"])
        let written = directory + "/default.conf"
        try defaultText.stdout.write(toFile: written, atomically: true, encoding: .utf8)
        #expect(try runProgram(recd, ["--check-config", written]).status == 0)
    }

    @Test("--check-config prints each port's JACK ports with ranges and continuation lines resolved")
    func checkConfigShowsResolvedPorts() throws {
        let recd = productsDirectory.appendingPathComponent("recd").path
        let directory = try makeTemporaryDirectory("recd-conf")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/stage.conf"
        try """
            [port stage]
            type = usbAudio
            direction = input
            jack = system:capture_{1..16},   ; the first desk
                   system:capture_17, system:capture_18
                   system:capture_{19..32}

            [port phones]
            type = headphones
            direction = output
            jack = box:out_{02..01}

            [port wild]
            type = lineIn
            direction = input
            jack = usb:capture_*
            channels = 4

            """.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runProgram(recd, ["--check-config", path])
        #expect(result.status == 0, "\(result.stderr)")
        let all = (1...32).map { "system:capture_\($0)" }.joined(separator: ", ")
        #expect(
            result.stdout == """
                \(path): OK (3 ports, 0 sessions)
                port stage: \(all) (32)
                port phones: box:out_02, box:out_01 (2)
                port wild: usb:capture_* (pattern, 4 channels)
                http: listen 127.0.0.1:9720

                """)

        // [http] listen is checked by the listener's own parser, with its line.
        let badListen = directory + "/listen.conf"
        try "[http]\n\nlisten = localhost:80\n".write(toFile: badListen, atomically: true, encoding: .utf8)
        let noName = try runProgram(recd, ["--check-config", badListen])
        #expect(noName.status == 1 && noName.stderr.contains("listen.conf:3:") && noName.stderr.contains("listen = 127.0.0.1:9720"), "\(noName.stderr)")

        let bad = directory + "/bad.conf"
        try "[port stage]\ntype = usbAudio\ndirection = input\njack = a:1,\n       a:in_{1..}\n"
            .write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = try runProgram(recd, ["--check-config", bad])
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains("\(bad):5:") && refused.stderr.contains("\"{1..}\""),
            "\(refused.stderr)")
    }

    @Test("the broadcast logger example records by itself, with nobody logged in")
    func loggerRecordsUnattended() throws {
        let deck = uniqueName("air")
        var text = try String(contentsOfFile: repositoryRoot + "/config/broadcast-logger.conf", encoding: .utf8)
        text = text.replacingOccurrences(of: "system:capture_1, system:capture_2", with: "\(deck):out_1, \(deck):out_2")
        // Keep the daemon's paths private to the test; everything else is the example as shipped.
        let kept = text.split(separator: "\n", omittingEmptySubsequences: false).filter {
            !$0.hasPrefix("dir = ") && !$0.hasPrefix("client_name") && !$0.hasPrefix("[daemon]") && !$0.hasPrefix("admin_group") && !$0.hasPrefix("[jack]")
                && !$0.hasPrefix("server = ") && !$0.hasPrefix("allow_buffer_size_changes")
        }.joined(separator: "\n").replacingOccurrences(of: "[archive]\n", with: "")
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:1000", "--level", "-20"])
        // What remains continues the harness's own [archive] section: segment length, retention, port, session.
        let daemon = try Daemon(ports: kept)
        #expect(try eventually(timeout: 10) {
            try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue?.first?["app"] == "logger"
        }, "the declared session should be recording: \(daemon.log)")
        let status = try #require(daemon.recctl("--json", "status").json)
        #expect(status["recorders"]?.arrayValue?.first?["port"] == "air")
        #expect(try daemon.recctl("--json", "session", "show", "logger").json?["priority"] == "logger")
        source.stop()
    }
}

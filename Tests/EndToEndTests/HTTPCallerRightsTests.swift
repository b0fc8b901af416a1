// HTTP acts with its caller's rights (docs/security.md, "HTTP"): the real recd running as root
// records segments; curl, run as `nobody` (setpriv) on loopback, gets 403 for a segment nobody
// may not read and the exact bytes for one it may, while root's curl gets every one; over a
// veth pair between two network namespaces the bearer token is the only identity, with the
// rights of `[http] token_user`.
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("HTTP serves recordings with the caller's rights", .serialized)
struct HTTPCallerRightsTests {
    /// curl's answer: the status, and the body (written to a file curl's user may write).
    struct CurlAnswer {
        var status: Int
        var body: [UInt8]
        /// The body as text, its first 400 bytes (for messages: a segment's body is not text).
        var text: String { String(decoding: body.prefix(400), as: UTF8.self) }
    }

    /// A directory any user may write curl's output into.
    static func scratch() throws -> String {
        let directory = try makeTemporaryDirectory("recd-http-rights")
        chmod(directory, 0o1777)
        return directory
    }

    /// Runs curl for `url`, through `prefix` when given (a declared program and its arguments,
    /// which run curl: `setpriv` as another user, `ip netns exec`).
    static func curl(
        _ url: String, prefix: [String] = [], headers: [String] = [], method: String = "GET",
        certificate: String? = nil,
        into directory: String
    ) throws -> CurlAnswer {
        let output = directory + "/body-\(UUID().uuidString.prefix(8))"
        var arguments = ["-s", "-g", "-o", output, "-w", "%{http_code}", "-m", "10"]
        if let certificate { arguments += ["--cacert", certificate] }
        if method == "HEAD" { arguments.append("-I") }
        for header in headers { arguments += ["-H", header] }
        arguments.append(url)
        let result =
            try prefix.first.map {
                try ExternalTools.run(
                    $0, Array(prefix.dropFirst()) + [try ExternalTools.path("curl")] + arguments, timeout: 20)
            } ?? ExternalTools.run("curl", arguments, timeout: 20)
        let body = FileManager.default.contents(atPath: output).map { [UInt8]($0) } ?? []
        try? FileManager.default.removeItem(atPath: output)
        return CurlAnswer(status: Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1, body: body)
    }

    /// How to run a program as `user`: setpriv to its uid and gid, no supplementary groups (as
    /// the harness runs recctl as another user).
    static func asUser(_ user: String) throws -> [String] {
        let ids = try userIDs(user)
        return ["setpriv", "--reuid=\(ids.uid)", "--regid=\(ids.gid)", "--clear-groups"]
    }

    /// A recd recording a recd-signal tone into 2 s segments, and the first finished segment's
    /// path (absolute) once there is one. `extraConfig` holds its `[http]`.
    static func recordingDaemon(extraConfig: String, networkNamespace: String? = nil) throws -> (
        Daemon, SignalClient, String
    ) {
        let deck = uniqueName("deck")
        let daemon = try Daemon(
            extraConfig: """

                [session logger]
                category = record
                mic_usage = Keeps the log
                permission = granted

                """ + extraConfig, ports: ArchiveEndToEndTests.deckPorts(deck), archiveSegmentSeconds: 2,
            networkNamespace: networkNamespace)
        let source = try SignalClient([
            "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:1000", "--level", "-12",
        ])
        try #require(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        let start = try daemon.recctl("record", "start", "logger")
        try #require(start.status == 0, "\(start.stderr)")
        var segment = ""
        try #require(
            try eventually(timeout: 10) {
                let list = try daemon.recctl("--json", "archive", "list").json?.arrayValue ?? []
                segment = list.first(where: { $0["state"] == "finished" })?["path"]?.stringValue ?? ""
                return !segment.isEmpty
            }, "no finished segment; recd's log:\n\(daemon.log)")
        // Every directory down to the segment searchable by others: the file's own mode decides.
        var directory = (segment as NSString).deletingLastPathComponent
        while directory.hasPrefix(daemon.directory) {
            chmod(directory, 0o755)
            directory = (directory as NSString).deletingLastPathComponent
        }
        return (daemon, source, segment)
    }

    @Test(
        "loopback: curl as nobody gets 403 (GET, HEAD, a range) for a segment nobody cannot read (cat gets EACCES), root's curl the exact bytes; nobody gets the bytes once the segment is 0644 or 0640 in nobody's group, 403 again at 0640 in root's; /metrics, /api/* and / stay 200 for nobody"
    )
    func loopbackUsers() throws {
        try #require(getuid() == 0, "recd runs as root and curl drops to nobody: run the tests as root")
        let port = try HTTPTestClient.freePort()
        let (daemon, source, segment) = try Self.recordingDaemon(extraConfig: "\n[http]\nlisten = 127.0.0.1:\(port)\n")
        defer { source.stop() }
        let out = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let relative = String(segment.dropFirst(daemon.directory.count + "/archive/".count))
        let url = "http://127.0.0.1:\(port)/archive/\(relative)"
        let bytes = try #require(FileManager.default.contents(atPath: segment).map { [UInt8]($0) })
        let nobody = try Self.asUser("nobody")

        // The attack: nobody may not read the file itself, and must not get it over HTTP.
        chown(segment, 0, 0)
        chmod(segment, 0o600)
        let cat = try ExternalTools.run(
            nobody[0], Array(nobody.dropFirst()) + [try ExternalTools.path("cat"), segment])
        #expect(cat.status != 0 && cat.stderr.contains("Permission denied"), "nobody's cat: \(cat.stderr)")
        let denied = try Self.curl(url, prefix: nobody, into: out)
        #expect(denied.status == 403, "nobody's GET of a 0600 segment: \(denied.status), \(denied.body.count) bytes")
        #expect(denied.text.contains("uid 65534 (nobody) may not read \(relative)"), "\(denied.text)")
        let leaked = denied.body.starts(with: Array("fLaC".utf8))
        #expect(!leaked, "nobody got FLAC bytes")
        let head = try Self.curl(url, prefix: nobody, method: "HEAD", into: out)
        #expect(head.status == 403, "nobody's HEAD: \(head.status)")
        let range = try Self.curl(url, prefix: nobody, headers: ["Range: bytes=0-3"], into: out)
        #expect(range.status == 403, "nobody's range: \(range.status)")
        let root = try Self.curl(url, into: out)
        let rootExact = root.body == bytes
        #expect(root.status == 200 && rootExact, "root's GET: \(root.status), \(root.body.count) bytes")
        let rootRange = try Self.curl(url, headers: ["Range: bytes=0-3"], into: out)
        #expect(rootRange.status == 206 && rootRange.text == "fLaC")

        // What nobody may read, it gets: others may read it, or its group is nobody's.
        chmod(segment, 0o644)
        let open = try Self.curl(url, prefix: nobody, into: out)
        let openExact = open.body == bytes
        #expect(open.status == 200 && openExact, "nobody's GET of a 0644 segment: \(open.status)")
        let nogroup = try userIDs("nobody").gid
        chmod(segment, 0o640)
        chown(segment, 0, nogroup)
        let inGroup = try Self.curl(url, prefix: nobody, into: out)
        let inGroupExact = inGroup.body == bytes
        #expect(inGroup.status == 200 && inGroupExact, "0640 root:\(nogroup): \(inGroup.status)")
        chown(segment, 0, 0)
        let outOfGroup = try Self.curl(url, prefix: nobody, into: out)
        #expect(outOfGroup.status == 403, "0640 root:root: \(outOfGroup.status)")

        // What is not audio stays open on loopback.
        for path in ["/metrics", "/api/status", "/api/segments", "/"] {
            let answer = try Self.curl("http://127.0.0.1:\(port)\(path)", prefix: nobody, into: out)
            #expect(answer.status == 200, "nobody's \(path): \(answer.status)")
        }
    }

    @Test(
        "token_user that names no account, or without token_file: recd --check-config and recd itself refuse (exit 78) saying what to write",
        .timeLimit(.minutes(1)))
    func tokenUserChecked() throws {
        let directory = try makeTemporaryDirectory("recd-token-user")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let recd = productsDirectory.appendingPathComponent("recd").path
        let token = directory + "/token"
        try "token-\(UUID().uuidString)\n".write(toFile: token, atomically: true, encoding: .utf8)
        try #require(chmod(token, 0o600) == 0)
        let base = "[daemon]\nsocket = \(directory)/control.sock\nstate_dir = \(directory)/state\n[http]\n"
        let cases: [(name: String, text: String, says: String)] = [
            (
                "no such user", base + "listen = 127.0.0.1:0\ntoken_file = \(token)\ntoken_user = recd-no-such-user\n",
                "token_user = recd-no-such-user: no such user"
            ),
            ("no token_file", base + "listen = 127.0.0.1:0\ntoken_user = nobody\n", "no token_file is set"),
        ]
        for item in cases {
            let path = directory + "/recd.conf"
            try item.text.write(toFile: path, atomically: true, encoding: .utf8)
            let check = try runProgram(recd, ["--check-config", path], timeout: 10)
            #expect(
                check.status != 0 && check.stderr.contains(item.says), "\(item.name): \(check.stdout)\(check.stderr)")
            let run = try runProgram(recd, ["--config", path], timeout: 10)
            #expect(run.status == 78 && run.stderr.contains(item.says), "\(item.name): \(run.status) \(run.stderr)")
        }
    }

    @Test(
        "off the box (recd in one network namespace on its veth address, curl in the other): 401 without the token for /archive/ and /metrics; with it, /metrics 200 and /archive/ as token_user = nobody: 403 for a 0600 segment, its exact bytes at 0644"
    )
    func tokenOverVeth() throws {
        try #require(getuid() == 0, "network namespaces need root")
        let pair = try NamespacePair("httprd", "httpcl")
        defer { pair.remove() }
        let directory = try makeTemporaryDirectory("recd-http-token")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let token = "token-" + UUID().uuidString
        try token.write(toFile: directory + "/token", atomically: true, encoding: .utf8)
        chmod(directory + "/token", 0o600)
        let port: UInt16 = 9720
        let (daemon, source, segment) = try Self.recordingDaemon(
            extraConfig: """

                [http]
                listen = \(pair.addresses[0]):\(port)
                token_file = \(directory)/token
                token_user = nobody

                """, networkNamespace: pair.name(.first))
        defer { source.stop() }
        let out = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let relative = String(segment.dropFirst(daemon.directory.count + "/archive/".count))
        // Off the box recd speaks HTTPS only, with the certificate it made at its first start.
        let base = "https://\(pair.addresses[0]):\(port)"
        let certificate = daemon.directory + "/state/http-certificate.pem"
        let bytes = try #require(FileManager.default.contents(atPath: segment).map { [UInt8]($0) })
        let peer = ["ip", "netns", "exec", pair.name(.second)]
        let bearer = "Authorization: Bearer \(token)"

        chown(segment, 0, 0)
        chmod(segment, 0o600)
        for path in ["/archive/\(relative)", "/metrics"] {
            let none = try Self.curl(base + path, prefix: peer, certificate: certificate, into: out)
            #expect(none.status == 401, "\(path) without the token: \(none.status)")
        }
        let metrics = try Self.curl(
            base + "/metrics", prefix: peer, headers: [bearer], certificate: certificate, into: out)
        let up = String(decoding: metrics.body, as: UTF8.self).contains("recd_up 1")
        #expect(metrics.status == 200 && up, "/metrics with the token: \(metrics.status)")
        let denied = try Self.curl(
            base + "/archive/\(relative)", prefix: peer, headers: [bearer], certificate: certificate, into: out)
        #expect(denied.status == 403, "a 0600 segment as token_user nobody: \(denied.status)")
        #expect(denied.text.contains("token_user nobody"), "\(denied.text)")
        chmod(segment, 0o644)
        let served = try Self.curl(
            base + "/archive/\(relative)", prefix: peer, headers: [bearer], certificate: certificate, into: out)
        let servedExact = served.body == bytes
        #expect(served.status == 200 && servedExact, "a 0644 segment with the token: \(served.status)")
    }
}

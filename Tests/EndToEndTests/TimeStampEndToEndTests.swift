// RFC 3161 time-stamps of the chains, end to end (docs/archive-proof.md, "Trusted time-stamps"):
// a real TSA run by the test — `openssl ts -reply` behind a small HTTP responder
// (Tests/TSA/tsa_server.py) with the test's own CA made by openssl — stamps the chain heads of
// the real recd recording on a real jackd. `openssl ts -verify`, not recd, is the oracle that
// the tokens hold; `recctl archive prove` must report each segment's trusted time and name every
// token that does not hold: one for another hash, an edited one, one from an untrusted TSA, one
// signed with an expired TSA certificate. With the TSA gone the recording goes on without a gap
// or a delay, the backlog shows, and it is stamped within an interval of the TSA's return.
import ArchiveProof
import ControlProtocol
import Foundation
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A test PKI and a TSA on it: a root, a time-stamping certificate (extendedKeyUsage critical
/// timeStamping) and the responder on a loopback port; `stop` and `start` take it away and
/// bring it back on the same port.
final class TestTSA: @unchecked Sendable {
    let directory: String
    /// tsa_server.py's `--mode`: `good`, or a hostile TSA's `huge`, `slow`, `garbage`.
    let mode: String
    /// HTTPS with a server certificate for 127.0.0.1 under the test's root.
    let tls: Bool
    private(set) var port = 0
    private var process: Process?
    var roots: String { directory + "/ca.pem" }
    var url: String { "\(tls ? "https" : "http")://127.0.0.1:\(port)/tsr" }
    /// The server's log lines: one per query answered (`answered N bytes`, `hostile MODE`), and
    /// `hostile MODE: client went away` when recd hung up on a hostile answer.
    var log: [String] {
        ((try? String(contentsOfFile: directory + "/queries", encoding: .utf8)) ?? "").split(separator: "\n").map(
            String.init)
    }
    var queries: Int { log.count }

    init(mode: String = "good", tls: Bool = false, name: String = "recd test TSA") throws {
        directory = try makeTemporaryDirectory("recd-tsa")
        self.mode = mode
        self.tls = tls
        try Self.makeAuthority(in: directory, name: name)
        if tls { try Self.makeServerCertificate(in: directory) }
        try start()
    }

    /// An HTTPS server certificate for 127.0.0.1 (`server.pem`, `server.key`) under the root.
    static func makeServerCertificate(in directory: String) throws {
        let ext = directory + "/server-ext.cnf"
        try """
        basicConstraints = critical,CA:FALSE
        keyUsage = critical,digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = IP:127.0.0.1

        """.write(toFile: ext, atomically: true, encoding: .utf8)
        try openssl([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            directory + "/server.key", "-out", directory + "/server.csr", "-subj", "/CN=127.0.0.1",
        ])
        try openssl([
            "x509", "-req", "-in", directory + "/server.csr", "-CA", directory + "/ca.pem", "-CAkey",
            directory + "/ca.key", "-CAcreateserial", "-out", directory + "/server.pem", "-days", "30", "-extfile", ext,
        ])
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// openssl, failing the test with its words.
    @discardableResult
    static func openssl(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
        let result = try runTool("openssl", arguments, environment: environment)
        try #require(result.status == 0, "openssl \(arguments.joined(separator: " ")): \(result.stderr)")
        return result
    }

    /// A root (`ca.pem`, `ca.key`), a TSA key and certificate under it (`tsa.key`, `tsa.pem`;
    /// `days` of validity from now, or from `validFrom` days ago through libfaketime), and
    /// `openssl ts`'s config for it (`tsa.cnf`).
    static func makeAuthority(in directory: String, name: String) throws {
        let ext = directory + "/ext.cnf"
        try """
        basicConstraints = critical,CA:FALSE
        keyUsage = critical,digitalSignature
        extendedKeyUsage = critical,timeStamping

        """.write(toFile: ext, atomically: true, encoding: .utf8)
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            directory + "/ca.key", "-out", directory + "/ca.pem", "-days", "30", "-subj", "/CN=\(name) root",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        try openssl([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            directory + "/tsa.key", "-out", directory + "/tsa.csr", "-subj", "/CN=\(name)",
        ])
        try signTSA(in: directory, output: directory + "/tsa.pem")
        try FileManager.default.copyItem(atPath: directory + "/ca.pem", toPath: directory + "/chain.pem")
        try "01\n".write(toFile: directory + "/tsaserial", atomically: true, encoding: .utf8)
        try """
        [ tsa ]
        default_tsa = tsa_config1
        [ tsa_config1 ]
        dir = \(directory)
        serial = $dir/tsaserial
        crypto_device = builtin
        signer_cert = $dir/tsa.pem
        certs = $dir/chain.pem
        signer_key = $dir/tsa.key
        signer_digest = sha256
        default_policy = 1.2.3.4.1
        digests = sha256
        accuracy = secs:1
        ordering = yes
        tsa_name = yes
        ess_cert_id_chain = no
        ess_cert_id_alg = sha256

        """.write(toFile: directory + "/tsa.cnf", atomically: true, encoding: .utf8)
    }

    /// The TSA's key certified by the root; `daysAgo`: made that many days in the past (so that
    /// 30 days of validity are over), with libfaketime's clock.
    static func signTSA(in directory: String, output: String, daysAgo: Int? = nil) throws {
        var environment: [String: String] = [:]
        if let daysAgo {
            let library = ["x86_64-linux-gnu", "aarch64-linux-gnu"].map {
                "/usr/lib/\($0)/faketime/libfaketime.so.1"
            }.first { FileManager.default.fileExists(atPath: $0) }
            environment = ["LD_PRELOAD": try #require(library, "libfaketime"), "FAKETIME": "-\(daysAgo)d"]
        }
        try openssl(
            [
                "x509", "-req", "-in", directory + "/tsa.csr", "-CA", directory + "/ca.pem", "-CAkey",
                directory + "/ca.key", "-CAcreateserial", "-out", output, "-days", "30", "-extfile",
                directory + "/ext.cnf",
            ], environment: environment)
    }

    /// A token straight from `openssl ts` (no HTTP) for the SHA-256 `digest`, signed with
    /// `signer` (default: the TSA's own certificate).
    static func token(in directory: String, digest: String, signer: String? = nil) throws -> Data {
        let query = directory + "/query-\(UUID().uuidString.prefix(6)).tsq"
        let reply = query + ".tsr"
        try openssl(["ts", "-query", "-digest", digest, "-sha256", "-cert", "-out", query])
        try openssl(
            [
                "ts", "-reply", "-config", directory + "/tsa.cnf", "-queryfile", query, "-signer",
                signer ?? directory + "/tsa.pem", "-out", reply,
            ])
        return try Data(contentsOf: URL(fileURLWithPath: reply))
    }

    func start() throws {
        let ready = directory + "/port"
        try? FileManager.default.removeItem(atPath: ready)
        let process = try ExternalTools.process(
            "python3",
            [
                ExternalTools.packageRoot + "/Tests/TSA/tsa_server.py", "--dir", directory, "--port", String(port),
                "--ready", ready, "--log", directory + "/queries", "--mode", mode,
            ] + (tls ? ["--tls-cert", directory + "/server.pem", "--tls-key", directory + "/server.key"] : []))
        let log = directory + "/server.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try handle.close()
        self.process = process
        var answered = 0
        _ = eventually(timeout: 15) {
            answered = Int(((try? String(contentsOfFile: ready, encoding: .utf8)) ?? "").trimmed) ?? 0
            return answered > 0
        }
        try #require(
            answered > 0, "the TSA did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        port = answered
    }

    /// SIGKILL: the TSA is gone at once; its port refuses connections.
    func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// recd recording a deck with 1 s segments (ChainTamperEndToEndTests' `Rotating`), stamped by
/// `tsa` every `interval` seconds.
final class StampedLogger {
    let logger: Rotating
    var daemon: Daemon { logger.daemon }
    var watcher: Watcher { logger.watcher }
    var archive: String { logger.archive }

    /// `urls` (default: `tsa`'s) and `roots` (default: `tsa`'s root) as `tsa_url` and
    /// `tsa_ca_file`; `evidence`: more `[evidence]` lines.
    init(
        tsa: TestTSA, interval: Int, urls: [String]? = nil, roots: String? = nil, evidence: String = "",
        environment: [String: String] = [:]
    ) throws {
        logger = try Rotating(
            extraConfig: """

                [evidence]
                tsa_url = \((urls ?? [tsa.url]).joined(separator: ", "))
                tsa_ca_file = \(roots ?? tsa.roots)
                tsa_interval_seconds = \(interval)
                tsa_alarm_minutes = 1
                \(evidence)

                [http]
                listen = 127.0.0.1:0

                """, environment: environment)
    }

    /// The one chain (relative to the archive) once it exists.
    func chain() throws -> String { try logger.chain(timeout: 15) }

    /// The chain's lines as entries.
    func entries(_ chain: String) throws -> [ChainEntry] {
        try String(contentsOfFile: archive + "/" + chain, encoding: .utf8).split(separator: "\n").compactMap {
            ChainEntry(line: $0)
        }
    }

    /// The entry counts of the tokens beside `chain`, ascending.
    func stamped(_ chain: String) -> [Int] {
        let prefix = FileSystem.fileName(of: chain) + "."
        let day = archive + "/" + FileSystem.directoryName(of: chain)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: day)) ?? []
        return names.filter { $0.hasPrefix(prefix) && $0.hasSuffix(".tsr") }.compactMap {
            Int($0.dropFirst(prefix.count).dropLast(4))
        }.sorted()
    }

    /// What the signature covers now.
    func signedEntries(_ chain: String) -> Int { logger.signatureEntries(chain) }

    func timeStamps() throws -> JSONValue? { try daemon.recctl("--json", "status").json?["timeStamps"] }
}

/// A chain's START (`2026-12-07T01:02:03.123456Z`) as seconds since 1970.
private func chainSeconds(_ text: String) -> Double? {
    let parts = text.dropLast().split(separator: ".")
    guard text.hasSuffix("Z"), let head = parts.first, let whole = ISO8601DateFormatter().date(from: head + "Z")
    else { return nil }
    let fraction = parts.count > 1 ? Double("0." + parts[1]) ?? 0 : 0
    return whole.timeIntervalSince1970 + fraction
}

/// `openssl ts -verify` of `token` against the chain line it stamps: the independent oracle.
private func opensslVerifies(token: String, entry: ChainEntry, roots: String) throws -> CommandResult {
    try runTool("openssl", ["ts", "-verify", "-digest", entry.hash.hex, "-in", token, "-CAfile", roots])
}

@Suite("RFC 3161 time-stamps of the chains, against a real TSA", .serialized)
struct TimeStampEndToEndTests {
    @Test(
        "each chain head is stamped by the TSA as it advances; openssl ts -verify accepts every token; prove reports each segment's trusted time and names a token for another hash, an edited one, an untrusted TSA's and an expired TSA certificate's"
    )
    func stampsHoldAndForgeriesAreNamed() throws {
        let tsa = try TestTSA()
        let logger = try StampedLogger(tsa: tsa, interval: 2)
        let chain = try logger.chain()
        #expect(eventually(timeout: 30) { logger.stamped(chain).count >= 3 }, "tokens: \(logger.stamped(chain))")
        #expect(try logger.daemon.recctl("record", "stop", "logger").status == 0)
        // The last head is stamped too once the interval allows (recording has stopped).
        // Once the last segment is chained (the prover finishes it after the stop), its head is
        // stamped too, an interval after the one before.
        let day = logger.archive + "/" + FileSystem.directoryName(of: chain)
        #expect(
            eventually(timeout: 15) {
                let segments = FileSystem.files(under: day, withSuffix: ".flac").count
                return segments == logger.signedEntries(chain) && logger.stamped(chain).last == segments
            })
        let entries = try logger.entries(chain)
        let tokens = logger.stamped(chain)
        // Several stamps of one day coexist, at most one per interval (1 s segments, 2 s interval).
        try #require(tokens.count >= 3 && tokens.count < entries.count, "tokens \(tokens), entries \(entries.count)")
        for count in tokens {
            let path = logger.archive + "/" + chain + ".\(count).tsr"
            let verified = try opensslVerifies(token: path, entry: entries[count - 1], roots: tsa.roots)
            #expect(
                verified.status == 0 && verified.stdout.contains("Verification: OK"),
                "openssl ts -verify \(path): \(verified.stdout) \(verified.stderr)")
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o644)
        }
        // The oracle's words, for the record (docs/archive-proof.md shows them).
        let shown = logger.archive + "/" + chain + ".\(tokens[0]).tsr"
        let text = try runTool("openssl", ["ts", "-reply", "-in", shown, "-text"])
        print("openssl ts -verify -digest \(entries[tokens[0] - 1].hash.hex) -in \(shown) -CAfile \(tsa.roots)")
        print(try opensslVerifies(token: shown, entry: entries[tokens[0] - 1], roots: tsa.roots).stdout)
        print("openssl ts -reply -in \(shown) -text\n\(text.stdout)")
        print("chain line \(tokens[0]): \(entries[tokens[0] - 1].line)")

        // prove, as recctl asks recd for its archive and its tsa_ca_file.
        let proved = try logger.daemon.recctl("--json", "archive", "prove")
        let report = try #require(proved.json, "\(proved.stdout) \(proved.stderr)")
        #expect(proved.status == 0, "\(proved.stdout)")
        let stamps = try #require(report["timeStamps"])
        #expect(stamps["tokens"]?.intValue == tokens.count && stamps["trusted"]?.intValue == tokens.count)
        let segments = stamps["segments"]?.arrayValue ?? []
        #expect(segments.count == entries.count, "every segment is covered once the last head is stamped")
        let first = try #require(segments.first { $0["path"]?.stringValue == entries[0].path })
        #expect(first["token"]?.stringValue == chain + ".\(tokens[0]).tsr", "the earliest token covering entry 1")
        let before = try #require(first["existedBeforeUnix"]?.doubleValue)
        let start = try #require(chainSeconds(entries[0].start))
        #expect(before >= start.rounded(.down) && before <= Date().timeIntervalSince1970, "\(before) vs START \(start)")
        let words = try logger.daemon.recctl("archive", "prove", "--dir", logger.archive, "--tsa-ca", tsa.roots)
        #expect(words.status == 0)
        print(words.stdout)
        #expect(words.stdout.contains("time-stamped: \(entries[0].path) existed before "), "\(words.stdout)")

        // Forgeries, each put in place of a good token in turn and named by prove.
        let victim = logger.archive + "/" + chain + ".\(tokens[1]).tsr"
        let good = try Data(contentsOf: URL(fileURLWithPath: victim))
        let entry = entries[tokens[1] - 1]
        var edited = good
        edited[edited.count - 1] ^= 1  // the last byte of the TSA's ECDSA signature
        let other = try TestTSA.token(in: tsa.directory, digest: entries[0].hash.hex)
        let stranger = try makeTemporaryDirectory("recd-tsa-stranger")
        defer { try? FileManager.default.removeItem(atPath: stranger) }
        try TestTSA.makeAuthority(in: stranger, name: "stranger TSA")
        let untrusted = try TestTSA.token(in: stranger, digest: entry.hash.hex)
        try TestTSA.signTSA(in: tsa.directory, output: tsa.directory + "/expired.pem", daysAgo: 400)
        let expired = try TestTSA.token(
            in: tsa.directory, digest: entry.hash.hex, signer: tsa.directory + "/expired.pem")
        let forgeries: [(String, Data, String)] = [
            ("a token for another hash", other, "imprint mismatch"),
            ("an edited token", edited, "signature failure"),
            ("an untrusted TSA's token", untrusted, "certificate verify error"),
            ("an expired TSA certificate's token", expired, "certificate has expired"),
        ]
        for (what, bytes, reason) in forgeries {
            try bytes.write(to: URL(fileURLWithPath: victim))
            // The oracle agrees that it does not hold.
            #expect(try opensslVerifies(token: victim, entry: entry, roots: tsa.roots).status != 0, "\(what)")
            let result = try logger.daemon.recctl(
                "--json", "archive", "prove", "--dir", logger.archive, "--tsa-ca", tsa.roots)
            #expect(result.status == 1, "\(what): prove exits 1")
            let findings = result.json?["findings"]?.arrayValue ?? []
            let named = findings.first {
                $0["kind"]?.stringValue == "badTimeStamp" && $0["name"]?.stringValue == chain + ".\(tokens[1]).tsr"
            }
            #expect(named != nil, "\(what) is named: \(findings)")
            #expect(named?["message"]?.stringValue?.contains(reason) == true, "\(what): \(String(describing: named))")
            // Never trusted: the segments it alone would cover take the next token's time.
            let covered = result.json?["timeStamps"]?["segments"]?.arrayValue ?? []
            #expect(!covered.contains { $0["token"]?.stringValue == chain + ".\(tokens[1]).tsr" }, "\(what)")
        }
        try good.write(to: URL(fileURLWithPath: victim))
        // A link at a token's name is not followed: named, not read through.
        try FileManager.default.removeItem(atPath: victim)
        try FileManager.default.createSymbolicLink(atPath: victim, withDestinationPath: tsa.directory + "/ca.pem")
        let linked = try logger.daemon.recctl(
            "--json", "archive", "prove", "--dir", logger.archive, "--tsa-ca", tsa.roots)
        #expect(linked.status == 1)
        #expect(
            (linked.json?["findings"]?.arrayValue ?? []).contains {
                $0["kind"]?.stringValue == "badTimeStamp" && $0["name"]?.stringValue == chain + ".\(tokens[1]).tsr"
            }, "\(linked.stdout)")
    }

    @Test(
        "the TSA gone while recording: no gap and no delay in the segments, the backlog in status, /metrics and health; stamped within an interval of its return"
    )
    func outageNeverTouchesTheRecording() throws {
        // A gap the JACK server made (an xrun of its own: a starved dummy driver) is not the
        // TSA's doing: measured again, as the other gapless tests do, when JACK reported any.
        let gaps = try withoutXruns { () throws -> (result: [String], xruns: Int) in try outage() }
        #expect(gaps.isEmpty, "\(gaps.joined(separator: "\n"))")
    }

    /// One recording with the TSA gone for a while; the gaps found in its segments.
    private func outage() throws -> (result: [String], xruns: Int) {
        let interval = 2.0
        let tsa = try TestTSA()
        let logger = try StampedLogger(tsa: tsa, interval: Int(interval))
        let chain = try logger.chain()
        #expect(eventually(timeout: 30) { !logger.stamped(chain).isEmpty })
        tsa.stop()
        let stoppedAt = Date()
        let entriesAtStop = logger.signedEntries(chain)
        // Five intervals and more without a TSA: the backlog shows and grows old.
        var backlog: JSONValue?
        #expect(
            try eventually(timeout: 30) {
                backlog = try logger.timeStamps()
                return (backlog?["backlog"]?.intValue ?? 0) >= 1
                    && (backlog?["oldestUnstampedSeconds"]?.doubleValue ?? 0) >= 5 * interval
            }, "\(String(describing: backlog))")
        #expect(backlog?["lastError"]?.stringValue?.contains(tsa.url) == true, "\(String(describing: backlog))")
        let status = try #require(logger.daemon.recctl("--json", "status").json)
        let reasons = status["health"]?["reasons"]?.arrayValue ?? []
        #expect(reasons.contains { $0["reason"]?.stringValue == "tsa-behind" }, "\(reasons)")
        let words = try logger.daemon.recctl("status")
        #expect(words.stdout.contains("time-stamps: \(tsa.url)"), "\(words.stdout)")
        let port = try HTTPEndToEndTests.httpPort(logger.daemon)
        let metrics = String(decoding: try HTTPTestClient.get(port: port, path: "/metrics").body, as: UTF8.self)
        let backlogLine = metrics.split(separator: "\n").first { $0.hasPrefix("recd_tsa_backlog ") }
        #expect(backlogLine.map { $0 != "recd_tsa_backlog 0" } == true, "\(metrics)")
        #expect(metrics.contains("recd_tsa_oldest_unstamped_seconds "))
        // The recording went on meanwhile: a segment a second, chained (the prover is not held up).
        let outage = Date().timeIntervalSince(stoppedAt)
        let chained = logger.signedEntries(chain) - entriesAtStop
        #expect(Double(chained) >= outage - 3, "\(chained) segments chained in \(outage) s of outage")

        // The TSA returns on its port: the backlog is stamped within an interval (and the time
        // of one exchange).
        try tsa.start()
        let returned = Date()
        let waiting = logger.signedEntries(chain)
        #expect(eventually(timeout: 30) { logger.stamped(chain).contains { $0 >= waiting } })
        let took = Date().timeIntervalSince(returned)
        // The backoff never waits longer than an interval; an exchange with a local TSA is
        // well under a second (openssl ts -reply included).
        #expect(took <= interval + 1.5, "stamped \(took) s after the TSA returned; the interval is \(interval) s")

        #expect(try logger.daemon.recctl("record", "stop", "logger").status == 0)
        // No gap and no delay: every segment is whole (no GAPS), and they follow each other
        // frame for frame.
        let entries = try logger.entries(chain)
        var previousEnd: Double?
        var gaps: [String] = []
        for entry in entries where entry.kind == .segment {
            let start = try #require(chainSeconds(entry.start), "\(entry.start)")
            let path = logger.archive + "/" + entry.path
            let rate = try #require(Double(try runTool("metaflac", ["--show-sample-rate", path]).stdout.trimmed))
            // START is the recording's start plus the frames written: sample-exact when gapless.
            if let previousEnd, abs(start - previousEnd) >= 0.001 {
                gaps.append("\(entry.path) starts \(start - previousEnd) s off")
            }
            previousEnd = start + Double(entry.frames) / rate
            let tags = try runTool("metaflac", ["--export-tags-to=-", path])
            if let line = tags.stdout.split(separator: "\n").first(where: { $0.hasPrefix("GAPS=") }) {
                gaps.append("\(entry.path): \(line)")
            }
        }
        return (gaps, try logger.daemon.xruns())
    }
}

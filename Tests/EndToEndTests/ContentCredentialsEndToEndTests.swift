// Content Credentials on exported clips, end to end (docs/archive-proof.md, "Content
// Credentials"): the real recd records a recd-signal tone into chained segments, `recctl archive
// export --credentials` writes a WAV clip (and a FLAC clip with its FILE.c2pa sidecar), and c2pa-python (PyPI: c2pa-rs, the C2PA reference
// implementation, none of recd's code; Tests/C2PA/verify_clip.py) reads it with the box CA as its
// only trust anchor. Then the clip is attacked: one audio byte changed, the manifest edited, the
// certificate swapped for another box's, the manifest checked against another CA.
import ArchiveProof
import Foundation
import Platform
import TestSupport
import Testing

@Suite("Content Credentials on exported clips, checked by c2pa-python", .serialized)
struct ContentCredentialsEndToEndTests {
    /// Where scripts/test put c2pa-python (scripts/lib.sh ensure_c2pa).
    static var venv: String {
        ProcessInfo.processInfo.environment["RECD_C2PA_VENV"] ?? ExternalTools.packageRoot + "/.build/c2pa-venv"
    }
    /// c2pa-python is in the environment: when PyPI was out of reach it is not, and the test
    /// says so rather than passing.
    static let available: Bool = {
        let lib = venv + "/lib"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []
        return versions.contains {
            FileManager.default.fileExists(atPath: "\(lib)/\($0)/site-packages/c2pa/__init__.py")
        }
    }()

    struct Verdict {
        let state: String?
        let failures: [String]
        /// The time-stamp tokens recd.chain carries: their chain, the entries they stamp, where
        /// verify_clip.py wrote each.
        let tokens: [(chain: String, entries: Int, path: String)]
        let raw: String
    }

    static func verify(_ clip: String, anchors: String, sidecar: String? = nil) throws -> Verdict {
        let script = ExternalTools.packageRoot + "/Tests/C2PA/verify_clip.py"
        let result = try runTool(
            "python3", [script, clip, anchors] + (sidecar.map { [$0] } ?? []), environment: ["RECD_C2PA_VENV": venv],
            timeout: 60)
        let line = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let json = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
        print("c2pa-python on \((clip as NSString).lastPathComponent): \(line)")
        return Verdict(
            state: json["state"] as? String, failures: json["failures"] as? [String] ?? [],
            tokens: (json["tokens"] as? [[String: Any]] ?? []).compactMap { token in
                guard let chain = token["chain"] as? String, let entries = token["entries"] as? Int,
                    let path = token["path"] as? String
                else { return nil }
                return (chain, entries, path)
            }, raw: line + result.stderr)
    }

    /// A copy of `clip` with `edit` applied to its bytes.
    static func tampered(_ clip: String, _ name: String, _ edit: (inout [UInt8]) throws -> Void) throws -> String {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: clip)))
        try edit(&bytes)
        let path = FileManager.default.temporaryDirectory.path + "/\(uniqueName(name)).wav"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func range(of needle: [UInt8], in bytes: [UInt8]) -> Range<Int>? {
        guard needle.count <= bytes.count else { return nil }
        for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
            if Array(bytes[start..<start + needle.count]) == needle { return start..<start + needle.count }
        }
        return nil
    }

    /// The certificate of a PEM file as DER.
    static func der(ofPEM path: String) throws -> [UInt8] {
        let result = try runTool("openssl", ["x509", "-in", path, "-outform", "DER", "-out", path + ".der"])
        guard result.status == 0 else { throw DaemonFailure(message: "openssl x509: \(result.stderr)") }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + ".der")))
    }

    /// A recd that recorded three 1 s segments of a counter, all chained; the first two's range.
    static func recorded(extraConfig: String = "") throws -> (Daemon, SignalClient, String, String) {
        let deck = uniqueName("deck")
        let daemon = try Daemon(
            extraConfig: extraConfig, ports: ArchiveEndToEndTests.deckPorts(deck), archiveSegmentSeconds: 1)
        let (source, watcher) = try startLoggerRecording(daemon, deck: deck, signal: ["--signal", "counter"])
        watcher.waitFor(count: 3, timeout: 10) { $0["event"] == "recording" && $0["state"] == "finished" }
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        let key = try daemon.recctl("archive", "key").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // Chained on the prover thread just after the stop.
        #expect(try eventually { try daemon.recctl("archive", "prove", "--app", "logger", "--key", key).status == 0 })
        let listed = try #require(daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue)
        try #require(listed.count >= 3, "\(listed)")
        return (
            daemon, source, try #require(listed[0]["start"]?.stringValue), try #require(listed[2]["start"]?.stringValue)
        )
    }

    @Test(
        "a WAV clip exported with --credentials (and a FLAC clip with its .c2pa sidecar) is valid and trusted for c2pa-python with the box CA; one audio byte, an edited manifest, another box's certificate and another CA are each refused; a certificate the operator's CA issued for archive key --csr, once installed, signs the next clips",
        .enabled(
            if: available,
            "c2pa-python is not installed (scripts/lib.sh ensure_c2pa: PyPI was out of reach); the clip is not checked")
    )
    func clipVerifiedByC2PAPython() throws {
        let port = try HTTPTestClient.freePort()
        let (daemon, source, from, to) = try Self.recorded(extraConfig: "\n[http]\nlisten = 127.0.0.1:\(port)\n")
        defer { source.stop() }
        let listed = try #require(daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue)

        let clip = daemon.directory + "/clip.wav"
        let exported = try daemon.recctl(
            "archive", "export", "--app", "logger", "--from", from, "--to", to, "-o", clip, "--credentials")
        try #require(exported.status == 0, "\(exported.stderr) | \(daemon.logEnd())")
        print("recctl archive export --credentials: \(exported.stdout)")
        let anchors = daemon.directory + "/archive/archive-box-ca.pem"
        #expect(FileManager.default.fileExists(atPath: anchors), "recd publishes its box CA beside the archive")
        // The clip is still a WAV every tool reads: sox sees its samples, the C2PA chunk skipped.
        let soxi = try runTool("sox", ["--i", "-s", clip])
        #expect(soxi.status == 0, "\(soxi.stderr)")

        let valid = try Self.verify(clip, anchors: anchors)
        #expect(valid.state == "Trusted" && valid.failures.isEmpty, "\(valid.raw)")
        #expect(valid.raw.contains("recd.source") && valid.raw.contains("recd.chain"), "\(valid.raw)")
        #expect(valid.raw.contains("\"name\": \"recd\""), "\(valid.raw)")

        // The console's download: the same credentials, over HTTP; FLAC is refused saying why.
        let stream = try #require(listed[0]["stream"]?.stringValue)
        let query = "feed=logger/\(stream)&from=\(from)&to=\(to)"
        let download = try HTTPTestClient.get(
            port: port, path: "/api/export?\(query)&format=wav&credentials=yes", timeout: 30)
        try #require(download.status == 200, "\(download.status) \(String(decoding: download.body, as: UTF8.self))")
        let downloaded = daemon.directory + "/download.wav"
        try Data(download.body).write(to: URL(fileURLWithPath: downloaded))
        let viaHTTP = try Self.verify(downloaded, anchors: anchors)
        #expect(viaHTTP.state == "Trusted" && viaHTTP.failures.isEmpty, "\(viaHTTP.raw)")
        let flac = try HTTPTestClient.get(port: port, path: "/api/export?\(query)&format=flac&credentials=yes")
        #expect(
            flac.status == 400 && String(decoding: flac.body, as: UTF8.self).contains("needs format=wav"),
            "\(flac.status) \(String(decoding: flac.body, as: UTF8.self))")

        // A FLAC clip: its manifest store beside it (FILE.c2pa), the hash over the whole file.
        let flacClip = daemon.directory + "/clip.flac"
        let flacExport = try daemon.recctl(
            "archive", "export", "--app", "logger", "--from", from, "--to", to, "-o", flacClip, "--credentials")
        try #require(flacExport.status == 0, "\(flacExport.stderr) | \(daemon.logEnd())")
        let sidecar = flacClip + ".c2pa"
        let flacValid = try Self.verify(flacClip, anchors: anchors, sidecar: sidecar)
        #expect(flacValid.state == "Trusted" && flacValid.failures.isEmpty, "\(flacValid.raw)")
        #expect(try flacTest(flacClip), "the FLAC clip is untouched: flac -t")
        let flacAltered = try Self.tampered(flacClip, "flac") { bytes in bytes[bytes.count - 100] ^= 0x01 }
        try FileManager.default.moveItem(atPath: flacAltered, toPath: flacAltered + ".flac")
        let flacAlteredVerdict = try Self.verify(flacAltered + ".flac", anchors: anchors, sidecar: sidecar)
        #expect(
            flacAlteredVerdict.state == "Invalid"
                && flacAlteredVerdict.failures.contains("assertion.dataHash.mismatch"),
            "\(flacAlteredVerdict.raw)")

        // One audio byte changed (in the data chunk, far from any header): the data hash fails.
        let audioByte = try Self.tampered(clip, "audio") { bytes in
            let data = try #require(Self.range(of: Array("data".utf8), in: bytes))
            bytes[data.upperBound + 4 + 1000] ^= 0x01
        }
        let altered = try Self.verify(audioByte, anchors: anchors)
        #expect(
            altered.state == "Invalid" && altered.failures.contains("assertion.dataHash.mismatch"), "\(altered.raw)")

        // The manifest edited: one letter of the claim's title changed, the signature no longer covers it.
        let editedManifest = try Self.tampered(clip, "manifest") { bytes in
            let iid = try #require(Self.range(of: Array("xmp:iid:".utf8), in: bytes))
            bytes[iid.upperBound] = bytes[iid.upperBound] == UInt8(ascii: "a") ? UInt8(ascii: "b") : UInt8(ascii: "a")
        }
        let edited = try Self.verify(editedManifest, anchors: anchors)
        #expect(edited.state == "Invalid" && edited.failures.contains("claimSignature.mismatch"), "\(edited.raw)")

        // Another CA as the only anchor: the box's certificate does not chain to it.
        let otherCA = daemon.directory + "/other-ca.pem"
        let made = try runTool(
            "openssl",
            [
                "req", "-x509", "-newkey", "ed25519", "-nodes", "-keyout", daemon.directory + "/other-ca.key", "-out",
                otherCA, "-subj", "/CN=another CA", "-days", "30",
            ])
        try #require(made.status == 0, "\(made.stderr)")
        let untrusted = try Self.verify(clip, anchors: otherCA)
        #expect(
            untrusted.state != "Trusted" && untrusted.failures.contains("signingCredential.untrusted"),
            "\(untrusted.raw)")

        // Another box's certificate (same layout, another key) put in place of this box's in the
        // signature's x5chain: with that box's CA trusted, the signature is not that key's.
        let other = try Daemon(ports: ArchiveEndToEndTests.deckPorts(uniqueName("deck")))
        let otherLeafPath = other.directory + "/state/archive-key.box.pem"
        #expect(try eventually { FileManager.default.fileExists(atPath: otherLeafPath) })
        let ownLeaf = try Self.der(ofPEM: daemon.directory + "/state/archive-key.box.pem")
        let otherLeaf = try Self.der(ofPEM: otherLeafPath)
        try #require(ownLeaf.count == otherLeaf.count, "the two boxes' certificates differ in length")
        let swapped = try Self.tampered(clip, "swapped") { bytes in
            let leaf = try #require(Self.range(of: ownLeaf, in: bytes))
            bytes.replaceSubrange(leaf, with: otherLeaf)
        }
        let wrongKey = try Self.verify(swapped, anchors: other.directory + "/archive/archive-box-ca.pem")
        #expect(wrongKey.state == "Invalid" && wrongKey.failures.contains("claimSignature.mismatch"), "\(wrongKey.raw)")

        // The operator's own CA: `archive key --csr` prints a request for the archive key, their
        // CA issues it (openssl, copying the extensions asked for), installed as
        // STATE_DIR/archive-key.pem it signs the next clips, which chain to that CA alone.
        let csr = try daemon.recctl("archive", "key", "--csr")
        try #require(csr.status == 0 && csr.stdout.hasPrefix("-----BEGIN CERTIFICATE REQUEST-----"), "\(csr.stderr)")
        let requestPath = daemon.directory + "/archive-key.csr"
        try csr.stdout.write(toFile: requestPath, atomically: true, encoding: .utf8)
        let request = try runTool("openssl", ["req", "-in", requestPath, "-verify", "-noout", "-subject"])
        #expect(request.status == 0 && request.stdout.contains("archive key"), "\(request.stdout)\(request.stderr)")
        let extensions = daemon.directory + "/issue.cnf"
        try "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid:always\n".write(
            toFile: extensions, atomically: true, encoding: .utf8)
        let installed = daemon.directory + "/state/archive-key.pem"
        // First one for another key (the other box's): not used, said in the log; the box's own signs.
        try FileManager.default.copyItem(atPath: otherLeafPath, toPath: installed)
        let boxCA = try Data(contentsOf: URL(fileURLWithPath: anchors))
        try daemon.restart()
        // The box's certificates are made once: a restart keeps the same CA.
        #expect(try Data(contentsOf: URL(fileURLWithPath: anchors)) == boxCA, "a restart made a new box CA")
        #expect(daemon.log.contains("archive-key.pem is not used"), "\(daemon.logEnd())")
        let fallback = daemon.directory + "/fallback.wav"
        try #require(
            daemon.recctl(
                "archive", "export", "--app", "logger", "--from", from, "--to", to, "-o", fallback, "--credentials"
            ).status == 0)
        #expect(try Self.verify(fallback, anchors: anchors).state == "Trusted")
        try FileManager.default.removeItem(atPath: installed)
        let issued = try runTool(
            "openssl",
            [
                "x509", "-req", "-in", requestPath, "-CA", otherCA, "-CAkey", daemon.directory + "/other-ca.key",
                "-copy_extensions", "copy", "-extfile", extensions, "-days", "30", "-out", installed,
            ])
        try #require(issued.status == 0, "\(issued.stderr)")
        try daemon.restart()
        let operatorClip = daemon.directory + "/operator.wav"
        let operatorExport = try daemon.recctl(
            "archive", "export", "--app", "logger", "--from", from, "--to", to, "-o", operatorClip, "--credentials")
        try #require(operatorExport.status == 0, "\(operatorExport.stderr) | \(daemon.logEnd())")
        let operatorTrusted = try Self.verify(operatorClip, anchors: otherCA)
        #expect(operatorTrusted.state == "Trusted" && operatorTrusted.failures.isEmpty, "\(operatorTrusted.raw)")
        let notTheBox = try Self.verify(operatorClip, anchors: anchors)
        #expect(notTheBox.failures.contains("signingCredential.untrusted"), "\(notTheBox.raw)")
    }

    @Test(
        "a caller who rewrites the clip's audio through their own descriptor while recd exports it gets neither credentials nor a proof for the forged audio",
        .enabled(
            if: available,
            "c2pa-python is not installed (scripts/lib.sh ensure_c2pa: PyPI was out of reach); the clip is not checked")
    )
    func forgedAudio() throws {
        let (daemon, source, from, to) = try Self.recorded()
        defer { source.stop() }
        let anchors = daemon.directory + "/archive/archive-box-ca.pem"
        let key = try daemon.recctl("archive", "key").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let clip = daemon.directory + "/forged.wav"
        let stop = daemon.directory + "/attacker.stop"
        let forgedAt = 2000
        let attacker = try ExternalTools.process(
            "python3", [ExternalTools.packageRoot + "/Tests/C2PA/overwrite_clip.py", clip, "\(forgedAt)", stop])
        try attacker.run()
        let exported = try daemon.recctl(
            "archive", "export", "--app", "logger", "--from", from, "--to", to, "-o", clip, "--credentials", "--proof")
        FileManager.default.createFile(atPath: stop, contents: Data())
        attacker.waitUntilExit()
        try #require(exported.status == 0, "\(exported.stderr) | \(daemon.logEnd())")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: clip)))
        try #require(
            bytes[forgedAt..<forgedAt + 64].allSatisfy { $0 == 0x55 }, "the attacker's bytes are in the clip")
        // The forged audio is what the caller holds: neither C2PA nor the clip's proof may vouch for it.
        let verdict = try Self.verify(clip, anchors: anchors)
        #expect(
            verdict.state == "Invalid" && verdict.failures.contains("assertion.dataHash.mismatch"), "\(verdict.raw)")
        let proven = try daemon.recctl("archive", "prove", "--clip", clip, "--key", key)
        #expect(proven.status == 1 && proven.stdout.contains("altered: \(clip)"), "\(proven.stdout)\(proven.stderr)")
    }

    @Test(
        "the RFC 3161 tokens that stamp a clip's source segments travel in its Content Credentials; openssl ts -verify accepts each against the chain entry it stamps",
        .enabled(
            if: available,
            "c2pa-python is not installed (scripts/lib.sh ensure_c2pa: PyPI was out of reach); the clip is not checked")
    )
    func timeStampsInCredentials() throws {
        let tsa = try TestTSA()
        let (daemon, source, from, to) = try Self.recorded(
            extraConfig: """

                [evidence]
                tsa_url = \(tsa.url)
                tsa_ca_file = \(tsa.roots)
                tsa_interval_seconds = 1

                """)
        defer { source.stop() }
        let archive = daemon.directory + "/archive"
        let chains = FileSystem.files(under: archive, withSuffix: ".chain")
        try #require(chains.count == 1, "one stream, one day: \(chains)")
        let chain = chains[0]
        func lines() -> [ChainEntry] {
            ((try? String(contentsOfFile: chain, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                ChainEntry(line: $0)
            }
        }
        // Recording has stopped: the last head is stamped an interval after the one before.
        #expect(
            eventually(timeout: 20) {
                FileManager.default.fileExists(atPath: chain + ".\(lines().count).tsr")
            }, "tokens beside \(chain)")
        let clip = daemon.directory + "/stamped.wav"
        let exported = try daemon.recctl(
            "archive", "export", "--app", "logger", "--from", from, "--to", to, "-o", clip, "--credentials")
        try #require(exported.status == 0, "\(exported.stderr) | \(daemon.logEnd())")
        let verdict = try Self.verify(clip, anchors: archive + "/archive-box-ca.pem")
        #expect(verdict.state == "Trusted" && verdict.failures.isEmpty, "\(verdict.raw)")
        try #require(!verdict.tokens.isEmpty, "no time-stamp token in recd.chain: \(verdict.raw)")
        let entries = lines()
        for token in verdict.tokens {
            #expect(chain.hasSuffix(token.chain), "\(token.chain)")
            try #require(token.entries >= 1 && token.entries <= entries.count)
            let checked = try runTool(
                "openssl",
                [
                    "ts", "-verify", "-digest", entries[token.entries - 1].hash.hex, "-in", token.path, "-CAfile",
                    tsa.roots,
                ])
            #expect(
                checked.status == 0 && checked.stdout.contains("Verification: OK"),
                "token for entry \(token.entries): \(checked.stdout)\(checked.stderr)")
        }
    }
}

// bench/credentials: what a clip's Content Credentials cost recd beyond hashing the clip
// (docs/archive-proof.md, "Content Credentials"), with ContentCredentials' and ArchiveProof's own
// code (compiled in with Platform by bench/credentials): for a one-hour WAV clip (stereo, 48 kHz,
// 24-bit: 1.04 GB) cut from one day's chain of 24 one-hour segments with a time-stamp token, the
// store's layout fitted to the file (`RIFFEmbedding.plan`), its assertions, claim and COSE
// signature made (`C2PAManifest.store`, Ed25519 by libsodium). The SHA-256 of the clip's bytes
// is not in it: bench/proof measures that (200 MB/s here: about 5 s for the hour).
import Glibc

@main
struct CredentialsBench {
    static func main() {
        let rounds = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 50 : 50
        var template = Array("/tmp/recd-credentials-bench-XXXXXX".utf8CString)
        let directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { _ = system("rm -rf '\(directory)'") }
        let key = try! ArchiveSigningKey.loadOrCreate(path: directory + "/archive-signing.key", now: 0)
        // A leaf certificate's size (recd's box leaf is about 420 bytes of DER).
        let certificate = [UInt8](repeating: 0x30, count: 420)
        let signer = ManifestSigner(
            certificates: [certificate], sign: { key.sign($0) }, sha256: { SHA256Digest.of($0).bytes })
        let entries = (0..<24).map { hour in
            "segment\t2026/12/07/radio-main-20261207T\(hour < 10 ? "0" : "")\(hour)0000.000Z.flac\t"
                + String(repeating: "ab", count: 32) + "\t" + String(repeating: "cd", count: 32)
        }
        let chain = CBOR.textMap([
            ("publicKey", .text(key.publicKey.text)),
            (
                "chains",
                .array([
                    .textMap([
                        ("chain", .text("2026/12/07/radio-main.chain")), ("entries", .array(entries.map(CBOR.text))),
                        ("signature", .text("ed25519 24 " + String(repeating: "ef", count: 64))),
                        ("sourceEntries", .array([.unsigned(11), .unsigned(12)])),
                        (
                            "timeStamps",
                            .array([
                                .textMap([
                                    ("entries", .unsigned(12)), ("token", .bytes([UInt8](repeating: 7, count: 5000))),
                                ])
                            ])
                        ),
                    ])
                ])
            ),
        ])
        let source = CBOR.textMap([
            ("app", .text("radio")), ("stream", .text("main")), ("from", .text("2026-12-07T10:30:00Z")),
            ("to", .text("2026-12-07T11:30:00Z")), ("frames", .unsigned(172_800_000)),
            ("segments", .array([.text("a@0+86400000"), .text("b@0+86400000")])),
        ])
        let manifest = C2PAManifest(
            id: "6a0e4f0c-3b7a-4d2e-9a55-0c1f2e3d4b5a", generatorName: "recd", generatorVersion: "bench",
            title: "hour.wav", created: "2026-12-07T10:30:00Z", createdDescription: "recorded by recd",
            assertions: [("recd.source", source), ("recd.chain", chain)], exclusions: [])
        let bytes: UInt64 = 3600 * 48_000 * 2 * 3 + 44
        let header = Array("RIFF".utf8) + RIFFEmbedding.littleEndian(UInt32(bytes - 8)) + Array("WAVE".utf8)
        var times: [Double] = []
        var size = 0
        for _ in 0..<rounds {
            let started = cpuSeconds()
            let plan = try! RIFFEmbedding.plan(header: header, fileSize: bytes, manifest: manifest, signer: signer)
            let store = plan.manifest.store(
                assetHash: [UInt8](repeating: 1, count: 32), padding: plan.padding, signer: signer)
            times.append(cpuSeconds() - started)
            size = store.count
        }
        let sorted = times.sorted()
        print("| a one-hour WAV clip's Content Credentials, beyond hashing it (median of \(rounds)) | CPU |")
        print("|---|---:|")
        print(
            "| the store fitted, its assertions, claim and Ed25519 signature (\(size) bytes) "
                + "| \(fixed(sorted[sorted.count / 2] * 1e3, 3)) ms |")
        print("| the slowest round | \(fixed(sorted[sorted.count - 1] * 1e3, 3)) ms |")
    }
}

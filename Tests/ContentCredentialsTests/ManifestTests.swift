// A manifest store in a WAV, read back by our own JUMBF and COSE readers: the layout C2PA
// gives (store, manifest, assertion store, claim, signature), each assertion's hash in the
// claim equal to its box's, the data hash equal to the SHA-256 of the file outside its
// exclusion, which is exactly the C2PA chunk, and the signature over the claim with the
// leaf's key. (c2pa-python checks the same clips independently: ContentCredentialsEndToEndTests.)

import ArchiveProof
import Foundation
import PKI
import TestSupport
import Testing

@testable import ContentCredentials

/// A small 16-bit mono WAV: RIFF header, fmt, data (odd when `frames` makes it so).
func smallWAV(bytesOfData: Int) -> [UInt8] {
    var fmt: [UInt8] = [1, 0, 1, 0]  // PCM, mono
    fmt += RIFFEmbedding.littleEndian(8000) + RIFFEmbedding.littleEndian(16000) + [2, 0, 16, 0]
    var body = Array("WAVE".utf8) + Array("fmt ".utf8) + RIFFEmbedding.littleEndian(16) + fmt
    body += Array("data".utf8) + RIFFEmbedding.littleEndian(UInt32(bytesOfData))
    body += (0..<bytesOfData).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    if bytesOfData % 2 == 1 { body.append(0) }
    return Array("RIFF".utf8) + RIFFEmbedding.littleEndian(UInt32(body.count)) + body
}

func sha256(_ bytes: [UInt8]) -> [UInt8] { SHA256Digest.of(bytes).bytes }

/// The manifest put into `wav` as recd does it: plan, lay out, hash, sign, write.
func embed(_ manifest: C2PAManifest, in wav: [UInt8], signer: ManifestSigner) throws -> [UInt8] {
    let plan = try RIFFEmbedding.plan(
        header: Array(wav.prefix(12)), fileSize: UInt64(wav.count), manifest: manifest, signer: signer)
    var file = wav
    if plan.padByte { file.append(0) }
    file.replaceSubrange(4..<8, with: RIFFEmbedding.littleEndian(plan.riffSize))
    let hash = sha256(Array(file[0..<Int(plan.chunkOffset)]))
    let store = plan.manifest.store(assetHash: hash, padding: plan.padding, signer: signer)
    #expect(store.count == plan.storeLength)
    return file + plan.chunkHeader + store
}

struct ManifestTests {
    static func signer() throws -> (ArchiveSigningKey, ManifestSigner, String) {
        let key = try knownKey(seed: COSETests.seed, publicKey: COSETests.publicKey)
        let made = try ArchiveCertificate.makeBoxCertificates(publicKey: key.publicKey.bytes, name: "test")
        let chain = try ArchiveCertificate.chain(pem: Array(made.leaf.utf8))
        #expect(chain.leafKey == key.publicKey.bytes)
        let signer = ManifestSigner(certificates: chain.der, sign: { key.sign($0) }, sha256: { sha256($0) })
        return (key, signer, made.authority)
    }

    static func manifest() -> C2PAManifest {
        C2PAManifest(
            id: "6a0e4f0c-3b7a-4d2e-9a55-0c1f2e3d4b5a", generatorName: "recd", generatorVersion: "test",
            title: "clip.wav", created: "2026-12-07T10:00:00Z", createdDescription: "recorded by recd",
            assertions: [("recd.source", .textMap([("app", .text("radio")), ("frames", .unsigned(48000))]))],
            exclusions: [])
    }

    @Test(arguments: [1000, 1001, 4])
    func wavManifestHolds(dataBytes: Int) throws {
        let (key, signer, _) = try Self.signer()
        let wav = smallWAV(bytesOfData: dataBytes)
        let file = try embed(Self.manifest(), in: wav, signer: signer)
        // The RIFF size is the file's length less 8; the chunk is the last one.
        let riffSize = Int(file[4]) | Int(file[5]) << 8 | Int(file[6]) << 16 | Int(file[7]) << 24
        #expect(riffSize + 8 == file.count)
        let storeBytes = try #require(RIFFEmbedding.manifestStore(in: file))
        let store = try #require(JUMBF.parse(storeBytes)?.first)
        #expect(store.label == "c2pa")
        let manifest = try #require(store.child(Self.manifest().label))
        let assertions = try #require(manifest.child("c2pa.assertions"))
        #expect(assertions.children.compactMap(\.label) == ["c2pa.actions.v2", "c2pa.hash.data", "recd.source"])
        guard case .content("cbor", let claimBytes)? = manifest.child("c2pa.claim.v2")?.children.first,
            case .content("cbor", let signatureBytes)? = manifest.child("c2pa.signature")?.children.first
        else {
            Issue.record("no claim or signature content box")
            return
        }
        let claim = try #require(CBOR.decode(claimBytes))
        guard case .array(let references)? = claim["created_assertions"] else {
            Issue.record("no created_assertions")
            return
        }
        for (reference, box) in zip(references, assertions.children) {
            #expect(
                reference["url"] == .text("self#jumbf=/c2pa/\(Self.manifest().label)/c2pa.assertions/\(box.label!)"))
            #expect(reference["hash"] == .bytes(sha256(box.payload)))
        }
        // The data hash: the whole file but the C2PA chunk, header included.
        guard case .content("cbor", let hashBytes)? = assertions.child("c2pa.hash.data")?.children.first else {
            Issue.record("no data hash")
            return
        }
        let dataHash = try #require(CBOR.decode(hashBytes))
        guard case .array(let exclusions)? = dataHash["exclusions"], exclusions.count == 1,
            case .unsigned(let start)? = exclusions[0]["start"], case .unsigned(let length)? = exclusions[0]["length"]
        else {
            Issue.record("no single exclusion")
            return
        }
        #expect(Int(start) + Int(length) == file.count)
        #expect(Int(length) == storeBytes.count + 8)
        #expect(Array(file[Int(start)..<Int(start) + 4]) == Array("C2PA".utf8))
        #expect(dataHash["hash"] == .bytes(sha256(Array(file[0..<Int(start)]))))
        // The signature: over the claim, by the leaf's key, the leaf in x5chain.
        let cose = try #require(COSESign1.parse(signatureBytes))
        #expect(cose.payload == nil)
        #expect(cose.certificates == signer.certificates)
        #expect(key.publicKey.verifies(cose.signature, over: try #require(cose.toBeSigned(payload: claimBytes))))
    }

    @Test func notWAVRefused() throws {
        let (_, signer, _) = try Self.signer()
        let wav = smallWAV(bytesOfData: 10)
        #expect(throws: RIFFEmbedding.Refusal.notWAV) {
            try RIFFEmbedding.plan(
                header: Array("fLaC".utf8) + wav[4..<12], fileSize: 58, manifest: Self.manifest(),
                signer: signer)
        }
        #expect(throws: RIFFEmbedding.Refusal.sizeMismatch) {
            try RIFFEmbedding.plan(
                header: Array(wav.prefix(12)), fileSize: UInt64(wav.count + 3),
                manifest: Self.manifest(), signer: signer)
        }
    }

    /// The box's certificates as OpenSSL sees them: the leaf verifies against the box CA, is no
    /// CA, signs digitally for e-mail protection and document signing; the request verifies.
    @Test func boxCertificatesAndRequest() throws {
        let key = try knownKey(seed: COSETests.seed, publicKey: COSETests.publicKey)
        let made = try ArchiveCertificate.makeBoxCertificates(publicKey: key.publicKey.bytes, name: "test")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("certs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let leaf = directory.appendingPathComponent("leaf.pem").path
        let authority = directory.appendingPathComponent("ca.pem").path
        try made.leaf.write(toFile: leaf, atomically: true, encoding: .utf8)
        try made.authority.write(toFile: authority, atomically: true, encoding: .utf8)
        let verified = try ExternalTools.run("openssl", ["verify", "-CAfile", authority, leaf])
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
        let text = try ExternalTools.run("openssl", ["x509", "-in", leaf, "-noout", "-text"]).stdout
        for fact in [
            "CA:FALSE", "Digital Signature", "E-mail Protection", "1.3.6.1.5.5.7.3.36", "ED25519",
            "Authority Key Identifier",
        ] {
            #expect(text.contains(fact), "leaf lacks \(fact)")
        }
        let request = try ArchiveCertificate.signingRequest(
            publicKey: key.publicKey.bytes, name: "test", sign: key.sign)
        let requestPath = directory.appendingPathComponent("req.pem").path
        try request.write(toFile: requestPath, atomically: true, encoding: .utf8)
        let checked = try ExternalTools.run("openssl", ["req", "-in", requestPath, "-verify", "-noout", "-pubkey"])
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(checked.stderr.contains("verify OK") || checked.stdout.contains("verify OK"))
        // Its key is the archive key: the same 32 bytes at the end of the SubjectPublicKeyInfo.
        let leafKey = try ArchiveCertificate.chain(pem: Array(made.leaf.utf8)).leafKey
        #expect(leafKey == key.publicKey.bytes)
        #expect(throws: PKIError.self) {
            try ArchiveCertificate.chain(pem: Array(made.authority.utf8).dropLast(40) + [])
        }
    }
}

/// The readers are total: a real store in a real WAV, mutated at random (bytes flipped, cut,
/// lengths rewritten), gives a value or nil, never a trap; the store itself reads back whole.
struct ReaderTotalityTests {
    @Test(arguments: randomSeeds(count: 4, base: 0xC2BA))
    func mutatedStoresNeverTrap(seed: UInt64) throws {
        let (_, signer, _) = try ManifestTests.signer()
        let wav = try embed(ManifestTests.manifest(), in: smallWAV(bytesOfData: 500), signer: signer)
        let store = try #require(RIFFEmbedding.manifestStore(in: wav))
        #expect(JUMBF.parse(store)?.first?.label == "c2pa")
        var random = SplitMix64(seed: seed)
        for _ in 0..<500 {
            var bytes = random.chance(50) ? wav : store
            for _ in 0..<(1 + random.below(8)) {
                switch random.below(4) {
                case 0: bytes[random.below(bytes.count)] ^= UInt8(truncatingIfNeeded: random.next() | 1)
                case 1: bytes = Array(bytes.prefix(random.below(bytes.count)))
                case 2: bytes[random.below(bytes.count)] = random.pick([0x00, 0x7f, 0x9f, 0xbf, 0xff])
                default: bytes += (0..<random.below(16)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                }
                if bytes.isEmpty { bytes = [0] }
            }
            _ = RIFFEmbedding.manifestStore(in: bytes)
            _ = JUMBF.parse(bytes)
            _ = CBOR.decode(bytes)
            _ = CBOR.decodePrefix(bytes)
            _ = COSESign1.parse(bytes)
            if let boxes = JUMBF.parse(bytes) {
                for box in boxes { _ = box.encoded }
            }
        }
    }
}

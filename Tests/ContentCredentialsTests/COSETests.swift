// COSE_Sign1 against the COSE working group's own example with a known Ed25519 key
// (cose-wg/Examples eddsa-examples/eddsa-sig-01.json, "EdDSA-01: EdDSA - 25519 - sign0"; the
// key is RFC 8032's test 1): the same ToBeSigned, and — Ed25519 being deterministic — the same
// signature and message byte for byte, signed here with libsodium through the archive key.

import ArchiveProof
import Foundation
import Testing

@testable import ContentCredentials

/// An archive key made from a known Ed25519 secret (seed || public key), through its key file.
func knownKey(seed: String, publicKey: String) throws -> ArchiveSigningKey {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cose-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.appendingPathComponent("archive-signing.key").path
    try "recd-archive-key-1 ed25519-secret \(seed)\(publicKey) 0\n".write(
        toFile: path, atomically: true, encoding: .utf8)
    return try ArchiveSigningKey.load(path: path)
}

struct COSETests {
    static let seed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
    static let publicKey = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    static let toBeSigned = "846A5369676E61747572653145A2012703004054546869732069732074686520636F6E74656E742E"
    static let message =
        "D28445A201270300A10442313154546869732069732074686520636F6E74656E742E58407142FD2FF96D56DB85BEE905A76BA1D0B7"
        + "321A95C8C4D3607C5781932B7AFB8711497DFA751BF40B58B3BCC32300B1487F3DB34085EEF013BF08F4A44D6FEF0D"

    @Test func coseExampleEdDSASign0() throws {
        let key = try knownKey(seed: Self.seed, publicKey: Self.publicKey)
        #expect(key.publicKey.bytes == hex(Self.publicKey))
        let payload = Array("This is the content.".utf8)
        let protected = CBOR.map([.init(.int(1), .int(COSESign1.edDSA)), .init(.int(3), .unsigned(0))])
        #expect(COSESign1.toBeSigned(protected: protected.encoded, payload: payload) == hex(Self.toBeSigned))
        let signed = COSESign1.sign(
            payload: payload, detached: false, protected: protected,
            unprotected: .map([.init(.int(COSESign1.keyIDLabel), .bytes(Array("11".utf8)))]), sign: key.sign)
        #expect(signed == hex(Self.message))
        // Read back: its parts, and a signature that verifies over what it covers.
        let parsed = try #require(COSESign1.parse(hex(Self.message)))
        #expect(parsed.payload == payload)
        #expect(parsed.protected == protected)
        let covered = try #require(parsed.toBeSigned())
        #expect(key.publicKey.verifies(parsed.signature, over: covered))
    }

    /// Detached, as C2PA signs a claim: nil in the message, the same signature over the payload
    /// the verifier brings; x5chain in the protected header (one certificate: a byte string).
    @Test func detachedWithX5Chain() throws {
        let key = try knownKey(seed: Self.seed, publicKey: Self.publicKey)
        let claim = CBOR.textMap([("instanceID", .text("xmp:iid:1"))]).encoded
        let certificate: [UInt8] = [0x30, 0x03, 0x02, 0x01, 0x01]
        let protected = COSESign1.protectedHeader(algorithm: COSESign1.edDSA, x5chain: [certificate])
        #expect(hexString(protected.encoded) == "a2012718214530030201" + "01")
        let signed = COSESign1.sign(payload: claim, detached: true, protected: protected, sign: key.sign)
        let parsed = try #require(COSESign1.parse(signed))
        #expect(parsed.payload == nil)
        #expect(parsed.certificates == [certificate])
        #expect(parsed.toBeSigned() == nil)
        let covered = try #require(parsed.toBeSigned(payload: claim))
        #expect(key.publicKey.verifies(parsed.signature, over: covered))
        var edited = claim
        edited[edited.count - 1] ^= 1
        #expect(!key.publicKey.verifies(parsed.signature, over: try #require(parsed.toBeSigned(payload: edited))))
        // Two certificates: an array of byte strings.
        let two = COSESign1.protectedHeader(algorithm: COSESign1.edDSA, x5chain: [certificate, certificate])
        #expect(hexString(two.encoded) == "a201271821824530030201014530030201" + "01")
    }
}

// Certificates for the archive's Ed25519 key, which signs the Content Credentials (C2PA) of
// exported clips. C2PA verifiers refuse a self-signed signer, so the box makes two at its first
// start: a CA of its own (a fresh Ed25519 key, dropped as soon as it has signed) and a leaf for
// the archive key issued by it. An operator who wants clips to chain to their own CA gets a
// PKCS#10 request for the same key (`recctl archive key --csr`) and installs what their CA issues.
//
// The secret key never comes here: the request's to-be-signed bytes go out to a `sign` closure
// (libsodium, in ArchiveProof) and the signature comes back.
internal import COpenSSL
import Glibc
import Platform

/// A certificate chain for the archive key, leaf first, as DER (what COSE's x5chain carries).
/// A plain value: any thread.
public struct ArchiveCertificateChain: Sendable, Equatable {
    /// Leaf first; then any intermediates; never needed: the root a verifier trusts.
    public var der: [[UInt8]]
    /// The leaf's Ed25519 public key (32 bytes).
    public var leafKey: [UInt8]
}

public enum ArchiveCertificate {
    /// How long the box's leaf is valid (its CA one day longer).
    public static let boxValidityDays = 3650
    /// The most certificates a chain file may hold.
    static let maxChainLength = 8

    /// A box CA and a leaf for the Ed25519 `publicKey` (32 bytes) issued by it, both PEM.
    /// `name`: what the certificates call the box (their common names say "box CA" and
    /// "archive key" after it).
    public static func makeBoxCertificates(publicKey: [UInt8], name: String) throws(PKIError) -> (
        leaf: String, authority: String
    ) {
        guard publicKey.count == 32 else { throw PKIError("an Ed25519 public key is 32 bytes") }
        var leaf: UnsafeMutablePointer<CChar>?
        var authority: UnsafeMutablePointer<CChar>?
        let made = recd_make_box_certificates(
            publicKey, "\(name) box CA", "\(name) archive key", Int32(boxValidityDays), &leaf, &authority)
        defer {
            free(leaf)
            free(authority)
        }
        guard made == 1, let leaf, let authority else {
            throw PKIError("OpenSSL could not make the archive key's certificates (libcrypto without Ed25519?)")
        }
        return (String(cString: leaf), String(cString: authority))
    }

    /// A PKCS#10 request (PEM) for the Ed25519 `publicKey`, subject O=recd, CN=`name` archive key,
    /// asking for a signer's extensions (not a CA, digitalSignature, emailProtection and
    /// documentSigning). `sign` makes the Ed25519 signature of the bytes it is given.
    public static func signingRequest(publicKey: [UInt8], name: String, sign: ([UInt8]) -> [UInt8]) throws(PKIError)
        -> String
    {
        guard publicKey.count == 32 else { throw PKIError("an Ed25519 public key is 32 bytes") }
        let commonName = "\(name) archive key"
        var tbs: UnsafeMutablePointer<UInt8>?
        var length: Int32 = 0
        guard recd_ed25519_request(publicKey, commonName, nil, &tbs, &length) == 1, let tbs, length > 0 else {
            throw PKIError("OpenSSL could not make a certificate request for the archive key")
        }
        let toBeSigned = Array(UnsafeBufferPointer(start: tbs, count: Int(length)))
        free(tbs)
        let signature = sign(toBeSigned)
        guard signature.count == 64 else { throw PKIError("the archive key gave no Ed25519 signature") }
        var pem: UnsafeMutablePointer<UInt8>?
        guard recd_ed25519_request(publicKey, commonName, signature, &pem, &length) == 1, let pem, length > 0 else {
            throw PKIError("the certificate request does not verify with the archive key")
        }
        defer { free(pem) }
        return String(decoding: UnsafeBufferPointer(start: pem, count: Int(length)), as: UTF8.self)
    }

    /// The certificates of `pem` as DER, leaf first, with the leaf's Ed25519 key. Throws when
    /// `pem` holds no certificate, more than 8, or a leaf whose key is not Ed25519.
    public static func chain(pem: [UInt8]) throws(PKIError) -> ArchiveCertificateChain {
        guard pem.count <= Certificate.maxFileBytes else { throw PKIError("over 256 KiB: not a certificate chain") }
        var der: UnsafeMutablePointer<UInt8>?
        var lengths = [Int32](repeating: 0, count: maxChainLength)
        var count: Int32 = 0
        var key = [UInt8](repeating: 0, count: 32)
        var isEd25519: Int32 = 0
        let ok = pem.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                recd_certificate_chain(
                    $0.baseAddress, $0.count, &der, &lengths, Int32(maxChainLength), &count, &key, &isEd25519)
            }
        }
        defer { free(der) }
        guard ok == 1, let der else {
            throw PKIError("no PEM certificates (or more than \(maxChainLength)) in the certificate file")
        }
        guard isEd25519 == 1 else {
            throw PKIError("the first certificate is not for an Ed25519 key; it must be the archive key's")
        }
        var certificates: [[UInt8]] = []
        var offset = 0
        for length in lengths.prefix(Int(count)) {
            certificates.append(Array(UnsafeBufferPointer(start: der + offset, count: Int(length))))
            offset += Int(length)
        }
        return ArchiveCertificateChain(der: certificates, leafKey: key)
    }
}

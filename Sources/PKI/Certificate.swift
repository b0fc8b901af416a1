// X.509 certificates (OpenSSL's libcrypto through COpenSSL, imported here only): the HTTP
// listener's self-signed certificate, made at recd's first start when the config names none, and
// a certificate's SHA-256 fingerprint as `openssl x509 -fingerprint -sha256` prints it (what
// recd logs and `recctl web certificate` shows, for a browser's user to compare).
internal import COpenSSL
import Glibc
import Platform

/// Why a certificate could not be made or read; the message says what to do.
public struct PKIError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

public enum Certificate {
    /// The largest certificate or key file read (a chain of a few certificates fits many times).
    public static let maxFileBytes = 256 * 1024

    /// A new self-signed certificate and its P-256 key, both PEM. `names`: DNS names and IP
    /// literals the certificate is for (its subjectAltName), the first also its common name.
    public static func makeSelfSigned(names: [String], days: Int = 3650) throws(PKIError) -> (
        certificate: String, key: String
    ) {
        let alternatives = names.filter { !$0.isEmpty && !$0.contains(",") }.map { name in
            isIPAddress(name) ? "IP:\(name)" : "DNS:\(name)"
        }
        var certificate: UnsafeMutablePointer<CChar>?
        var key: UnsafeMutablePointer<CChar>?
        let made = recd_make_self_signed(
            "recd " + (names.first ?? "localhost"), alternatives.joined(separator: ","), Int32(days), &certificate,
            &key)
        defer {
            if let key {
                memset(key, 0, strlen(key))
                free(key)
            }
            free(certificate)
        }
        guard made == 1, let certificate, let key else {
            throw PKIError("OpenSSL could not make a self-signed certificate; give [http] tls_certificate and tls_key")
        }
        return (String(cString: certificate), String(cString: key))
    }

    /// The SHA-256 fingerprint of the first certificate in `pem`: 32 bytes as upper-case hex
    /// pairs joined by colons; nil when `pem` holds no certificate.
    public static func fingerprint(pem: [UInt8]) -> String? {
        guard pem.count <= maxFileBytes else { return nil }
        var digest = [UInt8](repeating: 0, count: 32)
        let ok = pem.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { recd_certificate_sha256($0.baseAddress, $0.count, &digest) }
        }
        guard ok == 1 else { return nil }
        let digits = Array("0123456789ABCDEF")
        return digest.map { String([digits[Int($0 >> 4)], digits[Int($0 & 15)]]) }.joined(separator: ":")
    }

    /// Whether `pem` holds a private key OpenSSL (and so, for the formats recd makes, GnuTLS) reads.
    public static func holdsPrivateKey(_ pem: [UInt8]) -> Bool {
        guard pem.count <= maxFileBytes else { return false }
        return pem.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { recd_private_key_readable($0.baseAddress, $0.count) }
        } == 1
    }

    /// A certificate or key file: regular, not a symbolic link, at most `maxFileBytes`.
    public static func readFile(_ path: String) throws(PKIError) -> [UInt8] {
        try BoundedFile.read(path, limit: maxFileBytes, what: "one certificate or key")
    }

    private static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}

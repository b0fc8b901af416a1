// RFC 3161 time-stamps of the archive's chain heads (OpenSSL's TS API through COpenSSL; the
// HTTP exchange through CCurl, both imported here only). No ASN.1 of our own: a query is built,
// and a response parsed and checked, by libcrypto, the code `openssl ts` runs.
//
// A token is kept as the whole TimeStampResp the TSA answered (what `openssl ts -reply` writes
// and `openssl ts -verify -in FILE` reads), so anyone can check it without recd.
internal import CCurl
internal import COpenSSL
import Glibc
import Platform

/// What a time-stamp that holds says. A plain value: any thread.
public struct TimeStamp: Sendable, Equatable {
    /// The TSA's time (genTime), seconds since 1970 (UTC): the stamped digest existed before it.
    public var time: Int64
    /// The signing certificate's subject, as `openssl x509 -subject` prints it (one line).
    public var signer: String
    /// Its SHA-256 fingerprint (`Certificate.fingerprint`'s form: upper-case hex pairs and colons).
    public var signerFingerprint: String
    /// The token's serial number (hex).
    public var serial: String

    public init(time: Int64, signer: String, signerFingerprint: String, serial: String) {
        self.time = time
        self.signer = signer
        self.signerFingerprint = signerFingerprint
        self.serial = serial
    }
}

public enum TimeStampToken {
    /// The largest token recd accepts from a TSA or reads back from the archive: a response
    /// with its signer's chain of a few certificates is a few KiB.
    public static let maxBytes = 64 * 1024

    /// A DER TimeStampReq for the SHA-256 `digest` (32 bytes), asking for the signer's
    /// certificate, with a fresh 128-bit nonce (returned: the answer must carry it).
    public static func query(digest: [UInt8]) throws(PKIError) -> (query: [UInt8], nonce: [UInt8]) {
        guard digest.count == 32 else { throw PKIError("a time-stamp is asked for a SHA-256 (32 bytes)") }
        var nonce = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&nonce, 16) == 1 else { throw PKIError("OpenSSL has no random bytes for a nonce") }
        nonce[0] = (nonce[0] & 0x7f) | 0x40  // positive and of full length
        var der: UnsafeMutablePointer<UInt8>?
        var length: Int32 = 0
        let made = recd_ts_request(digest, nonce, Int32(nonce.count), &der, &length)
        defer { recd_openssl_free(der) }
        guard made == 1, let der, length > 0 else { throw PKIError("OpenSSL could not make a time-stamp query") }
        return (Array(UnsafeBufferPointer(start: der, count: Int(length))), nonce)
    }

    /// Checks `response` (a DER TimeStampResp) as `openssl ts -verify -digest HEX -CAfile FILE`
    /// does: granted, the TSA's signature, its certificate chain to the roots in `caFile` (nil:
    /// the system's) for time-stamping as it stood at the token's time, the imprint a SHA-256
    /// equal to `digest`, and `nonce` when given. Total: any bytes give a value or a reason.
    public static func check(
        _ response: [UInt8], digest: [UInt8], nonce: [UInt8] = [], caFile: String?
    ) -> Result<TimeStamp, PKIError> {
        guard !response.isEmpty, response.count <= maxBytes else {
            return .failure(PKIError("a time-stamp of \(response.count) bytes: not one token (at most 64 KiB)"))
        }
        guard digest.count == 32 else { return .failure(PKIError("the stamped digest is not a SHA-256")) }
        var facts = recd_ts_facts()
        var error = [CChar](repeating: 0, count: 512)
        let ok = recd_ts_check(response, response.count, digest, nonce, Int32(nonce.count), caFile, &facts, &error)
        guard ok == 1 else {
            error[511] = 0
            return .failure(PKIError(String(cString: error)))
        }
        let signer = withUnsafeBytes(of: facts.signer) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let serial = withUnsafeBytes(of: facts.serial) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let fingerprint = withUnsafeBytes(of: facts.signer_sha256) { raw in
            raw.map { byte in
                let digits = Array("0123456789ABCDEF")
                return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
            }.joined(separator: ":")
        }
        return .success(TimeStamp(time: facts.seconds, signer: signer, signerFingerprint: fingerprint, serial: serial))
    }

    /// A token file read back from the archive: not through a link, a regular file, at most
    /// `maxBytes`, read in pieces.
    public static func readFile(_ path: String) throws(PKIError) -> [UInt8] {
        try BoundedFile.read(path, limit: maxBytes, what: "one time-stamp token")
    }

    /// A SHA-256 fingerprint written by hand: 64 hex digits, with or without colons, any case;
    /// in `Certificate.fingerprint`'s form, or nil.
    public static func normalizedFingerprint(_ text: String) -> String? {
        let digits = text.filter { $0 != ":" }.uppercased()
        guard digits.count == 64, digits.allSatisfy(\.isHexDigit) else { return nil }
        var pairs: [String] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            pairs.append(String(digits[index..<next]))
            index = next
        }
        return pairs.joined(separator: ":")
    }
}

/// Asks time-stamping authorities for tokens over HTTP or HTTPS (libcurl), in the order given,
/// until one answers with a token that holds. A value: made on the control thread, used on the
/// time-stamper's; each exchange blocks that thread for at most `totalTimeout` per URL.
public struct TimeStampClient: Sendable {
    public var urls: [String]
    /// Roots for the TSA's certificate and an HTTPS server's (nil: the system's).
    public var caFile: String?
    /// When set, only a token signed by the certificate with this SHA-256 fingerprint is taken.
    public var pinnedFingerprint: String?
    public var connectTimeoutSeconds: Double
    public var totalTimeoutSeconds: Double

    public init(
        urls: [String], caFile: String?, pinnedFingerprint: String?, connectTimeoutSeconds: Double = 5,
        totalTimeoutSeconds: Double = 15
    ) {
        self.urls = urls
        self.caFile = caFile
        self.pinnedFingerprint = pinnedFingerprint
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.totalTimeoutSeconds = totalTimeoutSeconds
    }

    /// A token for `digest`: the TSA's response bytes and what they say, from the first URL that
    /// gives one that holds; else every URL's reason. Blocks (the time-stamper's thread).
    public func stamp(digest: [UInt8]) -> Result<(response: [UInt8], stamp: TimeStamp, url: String), PKIError> {
        let query: [UInt8]
        let nonce: [UInt8]
        do throws(PKIError) {
            (query, nonce) = try TimeStampToken.query(digest: digest)
        } catch {
            return .failure(error)
        }
        var reasons: [String] = []
        for url in urls {
            switch post(query, to: url) {
            case .failure(let error):
                reasons.append("\(url): \(error.message)")
            case .success(let response):
                switch TimeStampToken.check(response, digest: digest, nonce: nonce, caFile: caFile) {
                case .failure(let error):
                    reasons.append("\(url) answered a token that does not hold: \(error.message)")
                case .success(let stamp):
                    if let pinnedFingerprint, stamp.signerFingerprint != pinnedFingerprint {
                        reasons.append(
                            "\(url) signed with \(stamp.signerFingerprint) (\(stamp.signer)), not the pinned "
                                + "tsa_certificate \(pinnedFingerprint)")
                        continue
                    }
                    return .success((response, stamp, url))
                }
            }
        }
        return .failure(PKIError(reasons.joined(separator: "; ")))
    }

    /// One POST of `query`; the answer's body when the TSA answered 200 within the limits.
    func post(_ query: [UInt8], to url: String) -> Result<[UInt8], PKIError> {
        var answer = [UInt8](repeating: 0, count: TimeStampToken.maxBytes)
        var length = 0
        var status = 0
        var overflow: Int32 = 0
        var error = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code = answer.withUnsafeMutableBufferPointer { buffer in
            recd_curl_post(
                url, query, query.count, "application/timestamp-query", "application/timestamp-reply", caFile,
                Int(connectTimeoutSeconds * 1000), Int(totalTimeoutSeconds * 1000), buffer.baseAddress, buffer.count,
                &length, &status, &overflow, &error)
        }
        if overflow != 0 {
            return .failure(PKIError("the answer is over \(TimeStampToken.maxBytes / 1024) KiB: not a time-stamp"))
        }
        guard code == 0 else {
            error[error.count - 1] = 0
            let words = String(cString: error)
            let text = words.isEmpty ? String(cString: curl_easy_strerror(CURLcode(UInt32(code)))) : words
            if code > 0, UInt32(code) == CURLE_PEER_FAILED_VERIFICATION.rawValue {
                let roots = caFile.map { "tsa_ca_file \($0)" } ?? "the system's roots"
                return .failure(
                    PKIError(
                        "its HTTPS certificate is not one \(roots) vouches for (\(text)); give tsa_ca_file the CA "
                            + "that issued the TSA's server certificate"))
            }
            return .failure(PKIError("no answer (\(text))"))
        }
        guard status == 200 else { return .failure(PKIError("HTTP status \(status)")) }
        return .success(Array(answer.prefix(min(length, answer.count))))
    }
}

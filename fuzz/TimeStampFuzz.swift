// libFuzzer target: RFC 3161 time-stamp tokens as recd and `recctl archive prove` read them
// (Sources/PKI/TimeStamp.swift over OpenSSL's TS API): bytes → TimeStampToken.check against a
// fixed digest (the seeds' imprint, SHA-256 of "hello"), with and without a nonce, against the
// seeds' own test root (so a token that parses goes on to the signature and the chain); the
// same bytes as a token file read back bounded (TimeStampToken.readFile), and as a pinned
// fingerprint written by hand. Any bytes give a stamp or a reason, never a trap; a stamp is
// only ever given for the seeds' digest.
// Built and run by fuzz/run (swiftc -sanitize=fuzzer,address); not part of the package.
import Glibc
import PKI

/// The root of the seeds' test TSA (made with openssl as Tests/EndToEndTests/TimeStampEndToEndTests
/// makes its own; its tokens are in fuzz/corpus/timestamp).
private let root = """
-----BEGIN CERTIFICATE-----
MIIBnjCCAUWgAwIBAgIUWeejd3V4dQ5SAL2/I9ADfTixTtswCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwScmVjZCB0ZXN0IFRTQSByb290MB4XDTI2MTIwNzAxNDMyMloX
DTI3MDEwNjAxNDMyMlowHTEbMBkGA1UEAwwScmVjZCB0ZXN0IFRTQSByb290MFkw
EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEjUJ0nbgx75TYshjw+CQMZ/l+hJWmQ92v
OMUVu322HOjx9oeRORQtYedorfSI3HgxnhIC2yOFDzt8kQweXvjeGqNjMGEwHQYD
VR0OBBYEFG8g98hv7vY51AV36KWxiMtBmsGvMB8GA1UdIwQYMBaAFG8g98hv7vY5
1AV36KWxiMtBmsGvMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoG
CCqGSM49BAMCA0cAMEQCIANk7bo2jqR3EpoIebfcmdiMpKjeV1wC0agBoCkoLuPM
AiBzDzeC44hORwpEEZN13oW3wCv9UvShN+iSzWwZ9RuwCg==
-----END CERTIFICATE-----

"""

private let digest: [UInt8] = [
    0x2c, 0xf2, 0x4d, 0xba, 0x5f, 0xb0, 0xa3, 0x0e, 0x26, 0xe8, 0x3b, 0x2a, 0xc5, 0xb9, 0xe2, 0x9e,
    0x1b, 0x16, 0x1e, 0x5c, 0x1f, 0xa7, 0x42, 0x5e, 0x73, 0x04, 0x33, 0x62, 0x93, 0x8b, 0x98, 0x24,
]

private let scratch: String = {
    var template = Array("/tmp/recd-timestamp-fuzz-XXXXXX".utf8CString)
    let directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    let path = directory + "/ca.pem"
    let file = fopen(path, "w")
    fputs(root, file)
    fclose(file)
    return directory
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func timeStampFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let roots = scratch + "/ca.pem"
    if case .success(let stamp) = TimeStampToken.check(bytes, digest: digest, caFile: roots) {
        precondition(!stamp.signerFingerprint.isEmpty && stamp.time > 0)
    }
    // Another digest never verifies.
    var other = digest
    other[0] ^= 1
    if case .success = TimeStampToken.check(bytes, digest: other, caFile: roots) { preconditionFailure("other digest") }
    // A nonce the seeds do not carry never verifies either.
    if case .success = TimeStampToken.check(bytes, digest: digest, nonce: [0x41, 1, 2, 3], caFile: roots) {
        preconditionFailure("nonce")
    }
    // As a file read back from the archive.
    let path = scratch + "/token.tsr"
    if let file = fopen(path, "w") {
        _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
        if let read = try? TimeStampToken.readFile(path) {
            precondition(read == Array(bytes.prefix(TimeStampToken.maxBytes)) && read.count <= TimeStampToken.maxBytes)
        }
    }
    _ = TimeStampToken.normalizedFingerprint(String(decoding: bytes.prefix(256), as: UTF8.self))
    return 0
}

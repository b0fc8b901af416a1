// COSE_Sign1 (RFC 9052 §4.2): one signer's signature over a payload, the algorithm and the
// signer's certificates (x5chain, RFC 9360) in the integrity-protected header. C2PA signs a
// claim this way with the payload detached (nil in the message: the claim is in its own box)
// and x5chain protected (C2PA 2.x §14.5, the end-entity certificate first).
//
// The signature itself comes from a closure: this module holds no key and does no arithmetic
// of its own. Pure: any thread.

public enum COSESign1 {
    /// CBOR tag of a COSE_Sign1 message.
    public static let tag: UInt64 = 18
    /// Header labels (RFC 9052 §3.1, RFC 9360 §2).
    public static let algorithmLabel: Int64 = 1
    public static let contentTypeLabel: Int64 = 3
    public static let keyIDLabel: Int64 = 4
    public static let x5chainLabel: Int64 = 33
    /// EdDSA (RFC 9053 §2.2); with an Ed25519 key, plain Ed25519 over ToBeSigned.
    public static let edDSA: Int64 = -8

    /// The protected header of a C2PA claim signature: the algorithm and the certificate chain
    /// (one certificate as a byte string, several as an array of them, as RFC 9360 says).
    public static func protectedHeader(algorithm: Int64, x5chain: [[UInt8]]) -> CBOR {
        let chain: CBOR = x5chain.count == 1 ? .bytes(x5chain[0]) : .array(x5chain.map(CBOR.bytes))
        return .map([CBOR.Pair(.int(algorithmLabel), .int(algorithm)), CBOR.Pair(.int(x5chainLabel), chain)])
    }

    /// Sig_structure for a COSE_Sign1 (RFC 9052 §4.4), encoded: what the signer signs.
    public static func toBeSigned(protected: [UInt8], externalAAD: [UInt8] = [], payload: [UInt8]) -> [UInt8] {
        CBOR.array([.text("Signature1"), .bytes(protected), .bytes(externalAAD), .bytes(payload)]).encoded
    }

    /// The tagged COSE_Sign1 message signed by `sign` over `payload`: with `detached` the
    /// message carries nil where the payload goes, and a verifier brings the payload itself.
    /// An empty `protected` map is encoded as a zero-length byte string (RFC 9052 §3).
    public static func sign(
        payload: [UInt8], detached: Bool, protected: CBOR, unprotected: CBOR = .map([]),
        sign: ([UInt8]) -> [UInt8]
    ) -> [UInt8] {
        let protectedBytes = protected == .map([]) ? [] : protected.encoded
        let signature = sign(toBeSigned(protected: protectedBytes, payload: payload))
        return CBOR.tagged(
            tag,
            .array([.bytes(protectedBytes), unprotected, detached ? .null : .bytes(payload), .bytes(signature)])
        ).encoded
    }

    /// A COSE_Sign1 message's parts. A plain value.
    public struct Message: Sendable, Equatable {
        /// The protected header as signed (its bytes) and as read.
        public var protectedBytes: [UInt8]
        public var protected: CBOR
        public var unprotected: CBOR
        /// nil when detached.
        public var payload: [UInt8]?
        public var signature: [UInt8]

        /// The x5chain of the protected header, leaf first; empty when it has none.
        public var certificates: [[UInt8]] {
            guard case .map(let pairs) = protected,
                let chain = pairs.first(where: { $0.key == .int(COSESign1.x5chainLabel) })?.value
            else { return [] }
            switch chain {
            case .bytes(let one): return [one]
            case .array(let items):
                return items.compactMap {
                    if case .bytes(let certificate) = $0 { return certificate }
                    return nil
                }
            default: return []
            }
        }

        /// What the signature must cover: with a detached payload, `payload` supplies it.
        public func toBeSigned(payload detached: [UInt8]? = nil) -> [UInt8]? {
            guard let content = payload ?? detached else { return nil }
            return COSESign1.toBeSigned(protected: protectedBytes, payload: content)
        }
    }

    /// The parts of `bytes`, a COSE_Sign1 tagged or untagged; nil for anything else.
    public static func parse(_ bytes: [UInt8]) -> Message? {
        guard var item = CBOR.decode(bytes) else { return nil }
        if case .tagged(tag, let inner) = item { item = inner }
        guard case .array(let parts) = item, parts.count == 4, case .bytes(let protectedBytes) = parts[0],
            case .map = parts[1], case .bytes(let signature) = parts[3]
        else { return nil }
        let protected: CBOR
        if protectedBytes.isEmpty {
            protected = .map([])
        } else {
            guard let header = CBOR.decode(protectedBytes), case .map = header else { return nil }
            protected = header
        }
        let payload: [UInt8]?
        switch parts[2] {
        case .bytes(let content): payload = content
        case .null: payload = nil
        default: return nil
        }
        return Message(
            protectedBytes: protectedBytes, protected: protected, unprotected: parts[1], payload: payload,
            signature: signature)
    }
}

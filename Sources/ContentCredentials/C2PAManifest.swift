// A C2PA manifest store (C2PA 2.x) with one manifest: its assertions, a v2 claim that lists
// each by a hashed JUMBF URI, and the claim's COSE_Sign1 signature (detached payload, x5chain
// protected). The store's layout:
//
//   jumb c2pa "c2pa"                      the manifest store
//     jumb c2ma "urn:c2pa:UUID"           the manifest
//       jumb c2as "c2pa.assertions"
//         jumb cbor "c2pa.actions.v2"     cbor box, and the caller's assertions likewise
//         jumb cbor "c2pa.hash.data"      the hard binding: SHA-256 of the asset but its exclusions
//       jumb c2cl "c2pa.claim.v2"         cbor box: the claim
//       jumb c2cs "c2pa.signature"        cbor box: COSE_Sign1 over the claim's bytes
//
// An asset's hash cannot hold the bytes of the store it sits in, so the store's size is fixed
// before the asset is hashed: the hash and the signature have fixed lengths, and `size(of:)`
// gives the length the store will have, for the caller to place its exclusion.
//
// Pure: the signature and SHA-256 come from the `ManifestSigner`. Any thread.

/// What signs a manifest: the signer's certificate chain (leaf first, DER), an Ed25519
/// signature, SHA-256. Supplied by the caller, who holds the key.
public struct ManifestSigner: Sendable {
    public var certificates: [[UInt8]]
    public var sign: @Sendable ([UInt8]) -> [UInt8]
    public var sha256: @Sendable ([UInt8]) -> [UInt8]
    /// The length of `sign`'s signatures (64 for Ed25519).
    public var signatureLength: Int

    public init(
        certificates: [[UInt8]], signatureLength: Int = 64, sign: @escaping @Sendable ([UInt8]) -> [UInt8],
        sha256: @escaping @Sendable ([UInt8]) -> [UInt8]
    ) {
        self.certificates = certificates
        self.signatureLength = signatureLength
        self.sign = sign
        self.sha256 = sha256
    }
}

/// One manifest's content before it is signed. A plain value.
public struct C2PAManifest: Sendable {
    /// The manifest's UUID (lower-case, hyphenated): its label is `urn:c2pa:UUID`.
    public var id: String
    /// The claim generator (`claim_generator_info`): e.g. recd and its version.
    public var generatorName: String
    public var generatorVersion: String
    /// `dc:title`: the asset's name.
    public var title: String?
    /// The first action, `c2pa.created`: when, and what it was.
    public var created: String
    public var createdDescription: String
    /// The caller's own assertions (label, CBOR), after the actions and the data hash.
    public var assertions: [(label: String, value: CBOR)]
    /// The asset's byte ranges its hash leaves out (where the store goes), start and length.
    public var exclusions: [(start: UInt64, length: UInt64)]

    /// IPTC's digital source type of a recording made by a device.
    public static let digitalCapture = "http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture"

    public init(
        id: String, generatorName: String, generatorVersion: String, title: String?, created: String,
        createdDescription: String, assertions: [(label: String, value: CBOR)],
        exclusions: [(start: UInt64, length: UInt64)]
    ) {
        self.id = id
        self.generatorName = generatorName
        self.generatorVersion = generatorVersion
        self.title = title
        self.created = created
        self.createdDescription = createdDescription
        self.assertions = assertions
        self.exclusions = exclusions
    }

    public var label: String { "urn:c2pa:\(id)" }

    /// The manifest store's bytes: `assetHash` the SHA-256 of the asset outside `exclusions`,
    /// `padding` zero bytes in the data hash's `pad` (to reach a length the container needs).
    public func store(assetHash: [UInt8], padding: Int = 0, signer: ManifestSigner) -> [UInt8] {
        let boxes = assertionBoxes(assetHash: assetHash, padding: padding)
        let claim = claimBytes(assertionBoxes: boxes, sha256: signer.sha256)
        let signature = COSESign1.sign(
            payload: claim, detached: true,
            protected: COSESign1.protectedHeader(algorithm: COSESign1.edDSA, x5chain: signer.certificates),
            sign: signer.sign)
        return layout(boxes, claim: claim, signature: signature).encoded
    }

    /// The length `store` gives with these arguments, without signing (a zero hash and a
    /// zero signature of the same lengths stand in).
    public func size(padding: Int = 0, signer: ManifestSigner) -> Int {
        let boxes = assertionBoxes(assetHash: [UInt8](repeating: 0, count: 32), padding: padding)
        let claim = claimBytes(assertionBoxes: boxes, sha256: { _ in [UInt8](repeating: 0, count: 32) })
        let protected = COSESign1.protectedHeader(algorithm: COSESign1.edDSA, x5chain: signer.certificates)
        let signature = COSESign1.sign(
            payload: claim, detached: true, protected: protected,
            sign: { _ in [UInt8](repeating: 0, count: signer.signatureLength) })
        return layout(boxes, claim: claim, signature: signature).encoded.count
    }

    func assertionBoxes(assetHash: [UInt8], padding: Int) -> [JUMBFBox] {
        let actions = CBOR.textMap([
            (
                "actions",
                .array([
                    .textMap([
                        ("action", .text("c2pa.created")), ("digitalSourceType", .text(C2PAManifest.digitalCapture)),
                        ("when", .text(created)), ("description", .text(createdDescription)),
                        (
                            "softwareAgent",
                            .textMap([("name", .text(generatorName)), ("version", .text(generatorVersion))])
                        ),
                    ])
                ])
            )
        ])
        let exclusionItems = exclusions.map {
            CBOR.textMap([("start", .unsigned($0.start)), ("length", .unsigned($0.length))])
        }
        // A sidecar's hash covers the whole asset: no exclusions at all.
        let dataHash = CBOR.textMap(
            (exclusions.isEmpty ? [] : [("exclusions", CBOR.array(exclusionItems))]) + [
                ("name", .text("jumbf manifest")), ("alg", .text("sha256")), ("hash", .bytes(assetHash)),
                ("pad", .bytes([UInt8](repeating: 0, count: padding))),
            ])
        let all =
            [("c2pa.actions.v2", actions), ("c2pa.hash.data", dataHash)] + assertions.map { ($0.label, $0.value) }
        return all.map { label, value in
            .superbox(JUMBF.c2paType("cbor"), label, [.content(type: "cbor", payload: value.encoded)])
        }
    }

    func claimBytes(assertionBoxes: [JUMBFBox], sha256: ([UInt8]) -> [UInt8]) -> [UInt8] {
        let manifest = "self#jumbf=/c2pa/\(label)"
        let references = assertionBoxes.map { box in
            CBOR.textMap([
                ("url", .text("\(manifest)/c2pa.assertions/\(box.label ?? "")")), ("hash", .bytes(sha256(box.payload))),
            ])
        }
        var fields: [(String, CBOR)] = [
            ("instanceID", .text("xmp:iid:\(id)")),
            ("claim_generator_info", .textMap([("name", .text(generatorName)), ("version", .text(generatorVersion))])),
            ("signature", .text("\(manifest)/c2pa.signature")), ("created_assertions", .array(references)),
            ("alg", .text("sha256")),
        ]
        if let title { fields.append(("dc:title", .text(title))) }
        return CBOR.textMap(fields).encoded
    }

    func layout(_ assertionBoxes: [JUMBFBox], claim: [UInt8], signature: [UInt8]) -> JUMBFBox {
        .superbox(
            JUMBF.c2paType("c2pa"), "c2pa",
            [
                .superbox(
                    JUMBF.c2paType("c2ma"), label,
                    [
                        .superbox(JUMBF.c2paType("c2as"), "c2pa.assertions", assertionBoxes),
                        .superbox(JUMBF.c2paType("c2cl"), "c2pa.claim.v2", [.content(type: "cbor", payload: claim)]),
                        .superbox(
                            JUMBF.c2paType("c2cs"), "c2pa.signature", [.content(type: "cbor", payload: signature)]),
                    ])
            ])
    }
}

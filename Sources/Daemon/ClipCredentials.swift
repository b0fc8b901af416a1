// Content Credentials (C2PA) on exported clips (docs/archive-proof.md, "Content Credentials"):
// the archive key's certificate, and the manifest written into a WAV clip.
//
// The certificate: at the first start recd makes a box CA of its own and a leaf for the archive
// key issued by it (C2PA verifiers refuse a self-signed signer), kept in the state directory
// beside the key; the CA's certificate is published at the archive's root for verifiers to
// trust, with a PKCS#10 request for the key (`recctl archive key --csr`) that an operator's CA
// can answer. A certificate the operator installs (STATE_DIR/archive-key.pem, leaf first, for the
// same key) is used instead.
//
// Threads: `make` runs once at start (the composition root); `embed` on the slow worker, in
// the export's job. The value is immutable.
import Archive
import ArchiveProof
import ContentCredentials
import ControlProtocol
import Foundation
import PKI
import Platform
import SessionPolicy
import SystemSupport

final class ClipCredentials: Sendable {
    /// In the state directory: the box's own leaf and CA (made once), and the operator's.
    static let boxCertificateFileName = "archive-key.box.pem"
    static let boxAuthorityFileName = ChainLayout.boxAuthorityFileName
    static let installedCertificateFileName = "archive-key.pem"
    /// At the archive's root: the box CA (what a verifier trusts) and the request for the key.
    static let requestFileName = ChainLayout.certificateRequestFileName

    let key: ArchiveSigningKey
    /// The chain clips carry in their signature (x5chain): the leaf, then intermediates.
    let chain: ArchiveCertificateChain
    /// Where `chain` comes from: the box's own certificate or the operator's file.
    let origin: String

    private init(key: ArchiveSigningKey, chain: ArchiveCertificateChain, origin: String) {
        self.key = key
        self.chain = chain
        self.origin = origin
    }

    /// The certificates for `key`: the operator's when installed and for this key, else the
    /// box's (made now if there are none). Nil, with the reason logged, when neither can be had:
    /// exports then refuse `--credentials` and say so.
    static func make(key: ArchiveSigningKey, stateDir: String, archiveDir: String) -> ClipCredentials? {
        let name = "recd " + String(key.publicKey.text.dropFirst("ed25519:".count).prefix(16))
        do throws(PKIError) {
            let request = try ArchiveCertificate.signingRequest(
                publicKey: key.publicKey.bytes, name: name, sign: key.sign)
            try publish(Array(request.utf8), to: archiveDir + "/" + requestFileName)
        } catch {
            Log.warning("no certificate request for the archive key: \(error)")
        }
        let installed = stateDir + "/" + installedCertificateFileName
        if FileSystem.exists(installed) {
            do throws(PKIError) {
                let chain = try ArchiveCertificate.chain(pem: Certificate.readFile(installed))
                guard chain.leafKey == key.publicKey.bytes else {
                    throw PKIError(
                        "its first certificate is for another key, not \(key.publicKey.text); have the request "
                            + "`recctl archive key --csr` prints signed")
                }
                Log.info("clips' Content Credentials are signed with the installed certificate \(installed)")
                return ClipCredentials(key: key, chain: chain, origin: installed)
            } catch {
                Log.error("\(installed) is not used: \(error); the box's own certificate signs clips instead")
            }
        }
        do throws(PKIError) {
            let leafPath = stateDir + "/" + boxCertificateFileName
            let authorityPath = stateDir + "/" + boxAuthorityFileName
            var chain: ArchiveCertificateChain?
            if FileSystem.exists(leafPath) {
                chain = try? ArchiveCertificate.chain(pem: Certificate.readFile(leafPath))
            }
            if chain?.leafKey != key.publicKey.bytes || !FileSystem.exists(authorityPath) {
                // First start, or a new key: a new box CA and leaf.
                let made = try ArchiveCertificate.makeBoxCertificates(publicKey: key.publicKey.bytes, name: name)
                try write(Array(made.authority.utf8), to: authorityPath)
                try write(Array(made.leaf.utf8), to: leafPath)
                chain = try ArchiveCertificate.chain(pem: Array(made.leaf.utf8))
                Log.info("made the box CA and the archive key's certificate (\(leafPath))")
            }
            guard let chain else { throw PKIError("the box certificate is unreadable") }
            try publish(Certificate.readFile(authorityPath), to: archiveDir + "/" + boxAuthorityFileName)
            return ClipCredentials(key: key, chain: chain, origin: leafPath)
        } catch {
            Log.error("clips cannot carry Content Credentials: \(error); fix the state directory and restart")
            return nil
        }
    }

    private static func write(_ bytes: [UInt8], to path: String) throws(PKIError) {
        do throws(SystemError) { try AtomicFile.write(bytes, to: path, mode: 0o644) } catch {
            throw PKIError("cannot write \(path): \(error.message)")
        }
    }

    /// Beside the archive, only when it differs (a reader sees the old file or the new one).
    private static func publish(_ bytes: [UInt8], to path: String) throws(PKIError) {
        if (try? Certificate.readFile(path)) == bytes { return }
        try write(bytes, to: path)
    }

    var signer: ManifestSigner {
        let key = key
        return ManifestSigner(
            certificates: chain.der, sign: { key.sign($0) }, sha256: { SHA256Digest.of($0).bytes })
    }

    /// What a clip's manifest says of it, besides the data hash. A plain value.
    struct ClipFacts {
        var name: String
        var app: String
        var stream: String
        var plan: ClipPlan
        /// SOURCE_SEGMENT values: path@first frame+frames.
        var sources: [String]
        var archiveDirectory: String
    }

    /// Writes the manifest into `output`, a WAV clip recd has just written (a regular file open
    /// for reading and writing): a `C2PA` chunk at its end, the RIFF size grown, the data hash
    /// over everything but that chunk, signed with the archive key. Worker thread.
    func embed(in output: OwnedFile, facts: ClipFacts) throws {
        let manifest = try self.manifest(facts)
        do {
            let size = try output.status().size
            let header = try output.read(count: 12, at: 0)
            let plan = try RIFFEmbedding.plan(
                header: header, fileSize: UInt64(size), manifest: manifest, signer: signer)
            if plan.padByte { try output.writeAll([0], at: size) }
            try output.writeAll(RIFFEmbedding.littleEndian(plan.riffSize), at: 4)
            try output.writeAll(plan.chunkHeader, at: Int64(plan.chunkOffset))
            let hash = try SHA256Digest.of(file: output, upTo: Int64(plan.chunkOffset))
            let credentials = plan.manifest.store(assetHash: hash.bytes, padding: plan.padding, signer: signer)
            try output.writeAll(credentials, at: Int64(plan.chunkOffset) + 8)
            try output.sync()
        } catch let refusal as RIFFEmbedding.Refusal {
            throw SessionError(
                .badParam,
                refusal == .tooLarge
                    ? "a WAV clip over 4 GiB carries no Content Credentials; export shorter parts"
                    : "the clip is not the WAV recd wrote (\(refusal)); export it again")
        } catch let error as ProofError {
            throw SessionError(.resourceNotAvailable, error.message)
        } catch let error as SystemError {
            throw SessionError(.resourceNotAvailable, "cannot add Content Credentials to \(facts.name): \(error)")
        }
    }

    /// The manifest store for `output`, a FLAC clip recd has just written, as a sidecar: its
    /// data hash covers the whole file (the C2PA specification gives FLAC no place of its own;
    /// docs/archive-proof.md says why recd does not put an ID3 tag before `fLaC`). Worker thread.
    func sidecar(for output: OwnedFile, facts: ClipFacts) throws -> [UInt8] {
        let manifest = try self.manifest(facts)
        do throws(ProofError) {
            let hash = try SHA256Digest.of(file: output)
            return manifest.store(assetHash: hash.bytes, signer: signer)
        } catch {
            throw SessionError(.resourceNotAvailable, error.message)
        }
    }

    /// The manifest: the clip's source (feed, range, segments) and its proof (the chains'
    /// signed entries naming the segments, and the TSA tokens that stamp them).
    func manifest(_ facts: ClipFacts) throws -> C2PAManifest {
        let chains: [ClipProof.SourceChain]
        do throws(ProofError) {
            chains = try ClipProof.sourceChains(sources: facts.sources, archiveDirectory: facts.archiveDirectory)
        } catch {
            throw SessionError(
                .resourceNotAvailable, "\(error.message); export without --credentials, or once it is chained")
        }
        let plan = facts.plan
        let source = CBOR.textMap([
            ("app", .text(facts.app)), ("stream", .text(facts.stream)), ("from", .text(plan.from.iso8601)),
            ("to", .text(plan.to.iso8601)), ("frames", .unsigned(UInt64(plan.frames))),
            ("sampleRate", .unsigned(UInt64(plan.sampleRate))), ("channels", .unsigned(UInt64(plan.channels))),
            ("gaps", .text(SegmentGap.commentValue(plan.gaps) ?? "")),
            ("segments", .array(facts.sources.map(CBOR.text))),
        ])
        let proof = CBOR.textMap([
            ("publicKey", .text(key.publicKey.text)),
            ("chains", .array(chains.map { chainItem($0, archiveDirectory: facts.archiveDirectory) })),
        ])
        return C2PAManifest(
            id: UUID().uuidString.lowercased(), generatorName: "recd", generatorVersion: recdVersion,
            title: FileSystem.fileName(of: facts.name), created: plan.from.iso8601,
            createdDescription: "recorded by recd from \(facts.app)/\(facts.stream); this clip is \(plan.from.iso8601) "
                + "to \(plan.to.iso8601) of it, cut from the archive",
            assertions: [("recd.source", source), ("recd.chain", proof)], exclusions: [])
    }

    /// One chain: its signed entries, the signature line, the sources' entries, and the
    /// earliest time-stamp token whose head covers them all (`CHAIN.N.tsr`, N at or past the
    /// last source entry and within the signed entries).
    private func chainItem(_ chain: ClipProof.SourceChain, archiveDirectory: String) -> CBOR {
        var fields: [(String, CBOR)] = [
            ("chain", .text(chain.chain)), ("entries", .array(chain.lines.map(CBOR.text))),
            ("signature", .text(chain.signature)),
            ("sourceEntries", .array(chain.sourceEntries.map { .unsigned(UInt64($0)) })),
        ]
        let path = archiveDirectory + "/" + chain.chain
        let last = chain.sourceEntries.max() ?? 0
        let stamped = FileSystem.files(under: FileSystem.directoryName(of: path), withSuffix: ".tsr").compactMap {
            file -> Int? in
            let name = FileSystem.fileName(of: file)
            let prefix = FileSystem.fileName(of: path) + "."
            guard name.hasPrefix(prefix), let entries = Int(name.dropFirst(prefix.count).dropLast(4)) else {
                return nil
            }
            return entries >= last && entries <= chain.lines.count ? entries : nil
        }
        if let entries = stamped.min(), let token = try? TimeStampToken.readFile("\(path).\(entries).tsr") {
            fields.append(
                ("timeStamps", .array([.textMap([("entries", .unsigned(UInt64(entries))), ("token", .bytes(token))])])))
        }
        return .textMap(fields)
    }
}

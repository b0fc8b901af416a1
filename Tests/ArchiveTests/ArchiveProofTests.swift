// The archive proves itself (docs/archive-proof.md): real FLAC segments from a real recorder,
// chained with a real Ed25519 key (libsodium), then tampered with on disk the ways a person
// could — a byte altered, a segment deleted, one renamed into another day, the signature
// replaced, chain lines swapped — and each named by the prover; retention keeps it proving.

import ArchiveProof
import Foundation
import Platform
import Testing

@testable import Archive

/// Four 1 s segments of one stream across midnight (two in each day), chained and indexed.
private struct ChainedArchive {
    let directory = TemporaryDirectory("proof")
    var root: String { directory.path + "/archive" }
    let keeper: ChainKeeper
    let index: ArchiveIndex
    let records: [SegmentRecord]

    init(app: String = "app", stream: String = "main") throws {
        let key = try ArchiveSigningKey.loadOrCreate(path: directory.path + "/archive-signing.key", now: 0)
        keeper = ChainKeeper(
            archiveDirectory: directory.path + "/archive", key: key,
            heads: ChainHeads(directory: directory.path + "/state/chain-heads"))
        index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path + "/archive", app: app, stream: stream, channels: 1, sampleRate: 8000,
            bitsPerSample: 16, segmentSeconds: 1)
        let source = MemorySource(
            channels: 1, startTime: iso("2026-12-01T23:59:58.000000Z"), totalFrames: 8000 * 4, signal: noiseSample)
        records = finishedRecords(try record(configuration, source: source))
        for record in records {
            try index.add(record)
            try index.setProof(path: record.path, SegmentChaining.chain(record, keeper: keeper))
        }
    }

    func prove(_ scope: ProofScope = ProofScope(), key: ArchivePublicKey? = nil, heads: Bool = false) -> ProofReport {
        ArchiveProver.prove(
            archiveDirectory: root, key: key ?? keeper.key.publicKey, scope: scope,
            heads: heads ? keeper.heads : nil)
    }

    func relative(_ record: SegmentRecord) -> String { ChainLayout.relative(record.path, to: root)! }
    var chains: [String] { ["2026/12/01/app-main.chain", "2026/12/02/app-main.chain"] }
}

@Suite("Archive proof")
struct ArchiveProofTests {
    @Test("an untouched archive proves: every segment chained in its day, both days signed, the index holds the hashes")
    func untouched() throws {
        let archive = try ChainedArchive()
        try #require(archive.records.count == 4)
        let report = archive.prove()
        #expect(report.findings == [])
        #expect(report.holds && report.segmentsProven == 4 && report.chains == 2 && report.signedChains == 2)
        // The chain beside the day's segments: sha256, previous, START, frames, END_REASON, path.
        let text = try String(contentsOfFile: archive.root + "/" + archive.chains[0], encoding: .utf8)
        let entries = text.split(separator: "\n").compactMap { ChainEntry(line: $0) }
        #expect(entries.map(\.path) == archive.records.prefix(2).map(archive.relative))
        #expect(entries.map(\.start) == archive.records.prefix(2).map(\.startTime.iso8601))
        #expect(entries.map(\.frames) == [8000, 8000] && entries.map(\.endReason) == ["rotation", "rotation"])
        #expect(entries[0].previous == .zero && entries[1].previous == entries[0].hash)
        let first = try #require(try archive.index.proof(path: archive.records[0].path))
        #expect(first.sha256 == (try SHA256Digest.ofFile(archive.records[0].path)))
        #expect(first.chainEntry == entries[0].hash && first.chainPrevious == .zero)
        // A second start does not chain a segment twice.
        _ = try SegmentChaining.chain(archive.records[1], keeper: archive.keeper)
        #expect(try String(contentsOfFile: archive.root + "/" + archive.chains[0], encoding: .utf8) == text)
        // In a range: only the second day's segments.
        let range = archive.prove(ProofScope(app: "app", stream: "main", from: "2026-12-02T00:00:00.000000Z"))
        #expect(range.holds && range.segmentsProven == 2)
    }

    @Test("one byte altered in a finished segment is reported as altered, by name")
    func alteredByte() throws {
        let archive = try ChainedArchive()
        let victim = archive.records[1].path
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: victim))
        let middle = UInt64(try file.seekToEnd() / 2)
        try file.seek(toOffset: middle)
        let byte = try #require(try file.read(upToCount: 1)?.first)
        try file.seek(toOffset: middle)
        try file.write(contentsOf: Data([byte ^ 0x01]))
        try file.close()
        let report = archive.prove()
        #expect(
            report.findings == [
                .altered(path: archive.relative(archive.records[1]), chain: archive.chains[0], entry: 2)
            ])
        #expect(!report.holds)
    }

    @Test("a deleted segment is reported missing; retention's deletions are not")
    func deleted() throws {
        let archive = try ChainedArchive()
        try FileManager.default.removeItem(atPath: archive.records[2].path)
        #expect(
            archive.prove().findings == [
                .missing(path: archive.relative(archive.records[2]), chain: archive.chains[1], entry: 1)
            ])
    }

    @Test("a segment renamed into another day is reported as renamed from its place, not as missing")
    func renamedIntoAnotherDay() throws {
        let archive = try ChainedArchive()
        let moved = archive.records[1]
        let target = archive.root + "/2026/12/02/app-main-20261202T000002.000Z.flac"
        try FileManager.default.moveItem(atPath: moved.path, toPath: target)
        #expect(
            archive.prove().findings == [
                .renamed(path: "2026/12/02/app-main-20261202T000002.000Z.flac", from: archive.relative(moved))
            ])
    }

    @Test("a replaced or missing signature, another key, and swapped chain lines are each named")
    func signatures() throws {
        let archive = try ChainedArchive()
        let chain = archive.root + "/" + archive.chains[0]
        let signature = chain + ChainLayout.signatureSuffix
        let original = try Data(contentsOf: URL(fileURLWithPath: signature))
        // Signed by another key over the same chain: a forger's.
        let other = try ArchiveSigningKey.loadOrCreate(path: archive.directory.path + "/other.key", now: 0)
        let forged = ChainKeeper(
            archiveDirectory: archive.directory.path + "/forged", key: other,
            heads: ChainHeads(directory: archive.directory.path + "/forged-state"))
        try FileManager.default.createDirectory(
            atPath: archive.directory.path + "/forged/2026/12/01", withIntermediateDirectories: true)
        let lines = try String(contentsOfFile: chain, encoding: .utf8).split(separator: "\n")
        // The forger appends the same entries: the same chain, signed with the other key.
        for line in lines {
            let entry = try #require(ChainEntry(line: line))
            _ = try forged.append(
                ChainKeeper.Facts(
                    kind: .segment, sha256: entry.sha256, start: entry.start, frames: entry.frames,
                    endReason: entry.endReason, path: entry.path), chain: archive.chains[0])
        }
        let forgedChain = archive.directory.path + "/forged/" + archive.chains[0]
        #expect(try String(contentsOfFile: forgedChain, encoding: .utf8) == lines.map { $0 + "\n" }.joined())
        try FileManager.default.removeItem(atPath: signature)
        try FileManager.default.copyItem(
            atPath: archive.directory.path + "/forged/" + archive.chains[0] + ChainLayout.signatureSuffix,
            toPath: signature)
        let replaced = archive.prove().findings
        #expect(replaced.count == 1)
        if case .badSignature(let name, let reason) = replaced.first {
            #expect(name == archive.chains[0] && reason.contains(other.publicKey.text))
        } else {
            Issue.record("expected badSignature, got \(replaced)")
        }
        // Proven with the forger's key instead: the signature holds, but the box's other day does not.
        #expect(
            archive.prove(key: other.publicKey).findings.contains {
                $0.kind == "badSignature" && $0.name == archive.chains[1]
            })
        // The signature's bytes edited: it does not verify.
        var edited = original
        edited[edited.count - 3] ^= 0x01
        try edited.write(to: URL(fileURLWithPath: signature))
        #expect(archive.prove().findings.map(\.kind) == ["badSignature"])
        // No signature at all: every entry unsigned.
        try FileManager.default.removeItem(atPath: signature)
        #expect(archive.prove().findings == [.unsigned(chain: archive.chains[0], entries: 1...2)])
        // Back, then two chain lines swapped: the chain breaks at the first of them.
        try original.write(to: URL(fileURLWithPath: signature))
        #expect(archive.prove().holds)
        try (lines.reversed().joined(separator: "\n") + "\n").write(toFile: chain, atomically: true, encoding: .utf8)
        let swapped = archive.prove().findings
        #expect(
            swapped.contains { if case .chainBroken(let name, 1, _) = $0 { name == archive.chains[0] } else { false } })
        #expect(swapped.contains { $0.kind == "badSignature" })
    }

    @Test("retention: deleted segments keep their entries, marked removed with the time; the archive still proves")
    func retention() throws {
        let archive = try ChainedArchive()
        let report = try RetentionPolicy(maxAgeDays: 1).enforce(
            archiveDirectory: archive.root, index: archive.index, openPaths: [],
            now: iso("2026-12-03T00:00:01.500000Z"), chains: archive.keeper)
        // Ends before 2026-12-02T00:00:01.5: the first day's two and the second day's first.
        #expect(report.deleted == archive.records.prefix(3).map(\.path))
        let proof = archive.prove()
        #expect(proof.findings == [])
        #expect(proof.segmentsRemoved == 3 && proof.segmentsProven == 1 && proof.signedChains == 2)
        let lines = try String(contentsOfFile: archive.root + "/" + archive.chains[0], encoding: .utf8)
            .split(separator: "\n").compactMap { ChainEntry(line: $0) }
        #expect(lines.map(\.kind) == [.segment, .segment, .removed, .removed])
        #expect(lines[2].path == lines[0].path && lines[2].removedAt == "2026-12-03T00:00:01.500000Z")
        // The emptied day folder stays: its chain is what proves the day.
        #expect(FileManager.default.fileExists(atPath: archive.root + "/" + archive.chains[0]))
    }

    @Test("a clip's proof holds alone, without the archive; an edited clip, an edited proof, another key are named")
    func clipProof() throws {
        let archive = try ChainedArchive()
        let clip = archive.directory.path + "/clip.flac"
        let clipURL = URL(fileURLWithPath: clip)
        var bytes = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: clipURL)
        let sources = [
            archive.relative(archive.records[1]) + "@4000+4000", archive.relative(archive.records[2]) + "@0+4000",
        ]
        let text = try ClipProof.make(
            clip: SHA256Digest.ofFile(clip), clipName: clip, sources: sources, archiveDirectory: archive.root,
            key: archive.keeper.key)
        let key = archive.keeper.key.publicKey
        func verify(_ proof: String, key: ArchivePublicKey = key) -> [ProofFinding] {
            ClipProof.verify(clipPath: clip, proofPath: clip + ".proof", proofText: proof, key: key)
        }
        // Both days' chains ride in it, with their signatures: the archive is not needed.
        #expect(text.components(separatedBy: "\nchain\t").count == 3)
        try FileManager.default.removeItem(atPath: archive.root)
        #expect(verify(text) == [])
        bytes[2500] ^= 0x10
        try bytes.write(to: clipURL)
        #expect(verify(text) == [.clipAltered(path: clip)])
        bytes[2500] ^= 0x10
        try bytes.write(to: clipURL)
        #expect(verify(text.replacingOccurrences(of: "@4000+4000", with: "@0+8000")).map(\.kind) == ["badProof"])
        let other = try ArchiveSigningKey.loadOrCreate(path: archive.directory.path + "/other.key", now: 0)
        #expect(verify(text, key: other.publicKey).map(\.kind) == ["badProof"])
        // A segment in no chain: no proof is made for it.
        #expect(throws: ProofError.notChained(path: "2026/12/02/none.flac")) {
            try ClipProof.make(
                clip: .zero, clipName: clip, sources: ["2026/12/02/none.flac@0+1"], archiveDirectory: archive.root,
                key: archive.keeper.key)
        }
    }

    @Test("trusted time: each segment holds the kernel's clock state at its start and end, in tags and the index")
    func clockState() throws {
        let archive = try ChainedArchive()
        let now = try #require(ClockSynchronization.current(), "adjtimex reads on Linux")
        for record in archive.records {
            let start = try #require(record.clockAtStart)
            let end = try #require(record.clockAtEnd)
            #expect(start.synchronized == now.synchronized && end.synchronized == now.synchronized)
            #expect(start.maximumErrorMicroseconds >= 0 && end.estimatedErrorMicroseconds >= 0)
            // The file says the same (what `reindex` reads), and so does the index.
            let read = try SegmentRecord.read(path: record.path)
            #expect(read.clockAtStart == start && read.clockAtEnd == end)
            #expect(try archive.index.record(path: record.path)?.clockAtStart == start)
            #expect(try archive.index.record(path: record.path)?.clockAtEnd == end)
        }
    }

    @Test("the key: made once at 0600 and read back the same; public keys parse only in their own form")
    func key() throws {
        let directory = TemporaryDirectory("proof-key")
        let path = directory.path + "/archive-signing.key"
        let made = try ArchiveSigningKey.loadOrCreate(path: path, now: 1_234)
        let again = try ArchiveSigningKey.loadOrCreate(path: path, now: 9_999)
        #expect(made.publicKey == again.publicKey && again.createdMicroseconds == 1_234)
        #expect(FileSystem.status(of: path)?.permissions == 0o600)
        #expect(ArchivePublicKey(text: made.publicKey.text + "\n") == made.publicKey)
        #expect(
            ArchivePublicKey(text: "ed25519:00") == nil
                && ArchivePublicKey(text: "rsa:" + String(repeating: "0", count: 64)) == nil)
        try "ed25519-secret nothing\n".write(toFile: directory.path + "/bad.key", atomically: true, encoding: .utf8)
        #expect(throws: ProofError.self) { try ArchiveSigningKey.load(path: directory.path + "/bad.key") }
    }
}

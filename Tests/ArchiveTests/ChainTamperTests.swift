// A chain that cannot be extended past a forgery, and rollback that shows (docs/archive-proof.md,
// docs/security.md "The archive directory"): real FLAC segments from a real recorder in one
// day's chain, signed with a real key, recd's record in a state directory; then the archive is
// changed as a writer of it could — a segment replaced and the unkeyed links recomputed, an
// older chain and signature put back, lines added past the head, links, FIFOs and junk where a
// chain belongs — and the keeper signs nothing it did not write while `prove` names it.

import ArchiveProof
import Foundation
import Platform
import Testing

@testable import Archive
@testable import ArchiveProof

/// Six 1 s segments of one stream in one day; the first `chained` of them chained and indexed.
private struct DayArchive {
    let directory = TemporaryDirectory("tamper")
    var root: String { directory.path + "/archive" }
    let keeper: ChainKeeper
    let records: [SegmentRecord]
    let chain = "2026/12/02/app-main.chain"
    var chainPath: String { root + "/" + chain }
    var signaturePath: String { chainPath + ChainLayout.signatureSuffix }

    init(chained: Int = 5) throws {
        let root = directory.path + "/archive"
        try FileManager.default.createDirectory(atPath: directory.path + "/state", withIntermediateDirectories: true)
        let key = try ArchiveSigningKey.loadOrCreate(path: directory.path + "/state/archive-signing.key", now: 0)
        keeper = ChainKeeper(
            archiveDirectory: root, key: key, heads: ChainHeads(directory: directory.path + "/state/chain-heads"))
        let configuration = RecorderConfiguration(
            archiveDirectory: root, app: "app", stream: "main", channels: 1, sampleRate: 8000, bitsPerSample: 16,
            segmentSeconds: 1)
        let source = MemorySource(
            channels: 1, startTime: iso("2026-12-02T10:00:00.000000Z"), totalFrames: 8000 * 6, signal: noiseSample)
        records = finishedRecords(try record(configuration, source: source))
        for record in records.prefix(chained) { _ = try SegmentChaining.chain(record, keeper: keeper) }
    }

    /// The proof, less the segment files not chained yet (`unchained`, as they should be).
    func prove(heads: Bool) -> ProofReport {
        var report = ArchiveProver.prove(
            archiveDirectory: root, key: keeper.key.publicKey, scope: ProofScope(), heads: heads ? keeper.heads : nil)
        report.findings.removeAll { $0.kind == "unchained" }
        return report
    }

    func relative(_ index: Int) -> String { ChainLayout.relative(records[index].path, to: root)! }

    func entries() throws -> [ChainEntry] {
        try String(contentsOfFile: chainPath, encoding: .utf8).split(separator: "\n").map {
            try #require(ChainEntry(line: $0))
        }
    }

    /// Writes `entries` as the chain, numbered and linked again with plain SHA-256: what anyone
    /// who can write the archive can compute.
    func writeRelinked(_ entries: [ChainEntry]) throws {
        var previous = SHA256Digest.zero
        var text = ""
        for (index, entry) in entries.enumerated() {
            var entry = entry
            entry.sequence = index + 1
            entry.previous = previous
            text += entry.line + "\n"
            previous = entry.hash
        }
        try text.write(toFile: chainPath, atomically: true, encoding: .utf8)
    }

    /// Chains the next segment; the error it threw, if any.
    func chainNext(_ index: Int) -> ArchiveError? {
        do throws(ArchiveError) {
            _ = try SegmentChaining.chain(records[index], keeper: keeper)
            return nil
        } catch {
            return error
        }
    }
}

private func tampered(_ error: ArchiveError?) -> ChainBreak? {
    if case .proof(.tampered(let chainBreak)) = error { return chainBreak }
    return nil
}

private func bytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

@Suite("Chains against forgery and rollback")
struct ChainTamperTests {
    @Test(
        "a segment replaced, the next deleted and the links recomputed: the next append signs nothing, names what changed; prove does not hold"
    )
    func forgedChainIsNotSigned() throws {
        let archive = try DayArchive()
        try #require(archive.records.count == 6)
        #expect(archive.prove(heads: true).holds)
        let signature = try #require(bytes(archive.signaturePath))
        // Segment 2 replaced by other bytes (a re-encoding), segment 3 deleted, the chain rewritten.
        let victim = archive.records[1].path
        var replaced = try #require(bytes(victim))
        replaced[replaced.count / 2] ^= 0x5A
        try replaced.write(to: URL(fileURLWithPath: victim))
        try FileManager.default.removeItem(atPath: archive.records[2].path)
        var entries = try archive.entries()
        entries[1].sha256 = try SHA256Digest.ofFile(victim)
        entries.remove(at: 2)
        try archive.writeRelinked(entries)
        let forged = try String(contentsOfFile: archive.chainPath, encoding: .utf8)

        let refused = try #require(tampered(archive.chainNext(5)), "the append must refuse")
        #expect(refused.chain == archive.chain)
        #expect(
            refused.description.contains("4 entries") && refused.description.contains("recd signed 5"), "\(refused)")
        // Nothing written, nothing signed.
        #expect(try String(contentsOfFile: archive.chainPath, encoding: .utf8) == forged)
        #expect(bytes(archive.signaturePath) == signature)
        #expect(try archive.keeper.heads.record(of: archive.chain)?.signed?.entries == 5)
        // The archive alone does not hold (the signature counts 5 entries), and against the record
        // it is rolled back.
        let alone = archive.prove(heads: false)
        #expect(!alone.holds && alone.findings.contains { $0.kind == "badSignature" }, "\(alone.findings)")
        let recorded = archive.prove(heads: true)
        #expect(recorded.findings.contains { $0.kind == "rolledBack" && $0.name == archive.chain }, "\(recorded)")

        // The same count kept (nothing deleted, one segment replaced): the head itself differs.
        let again = try DayArchive()
        var same = try again.entries()
        same[1].sha256 = .zero
        try again.writeRelinked(same)
        let differs = try #require(tampered(again.chainNext(5)))
        #expect(differs.entry == 5 && differs.reason.contains("recd signed"), "\(differs)")
    }

    @Test(
        "an older chain and its signature put back, later segments deleted: prove alone holds, against recd's record it is rolled back; recd appends nothing"
    )
    func rollback() throws {
        let archive = try DayArchive(chained: 3)
        let oldChain = try #require(bytes(archive.chainPath))
        let oldSignature = try #require(bytes(archive.signaturePath))
        #expect(archive.chainNext(3) == nil && archive.chainNext(4) == nil)
        try oldChain.write(to: URL(fileURLWithPath: archive.chainPath))
        try oldSignature.write(to: URL(fileURLWithPath: archive.signaturePath))
        for index in 3..<5 { try FileManager.default.removeItem(atPath: archive.records[index].path) }
        // The archive alone is consistent: nothing in it says it was longer.
        let alone = archive.prove(heads: false)
        #expect(alone.holds && alone.segmentsProven == 3, "\(alone.findings)")
        let recorded = archive.prove(heads: true)
        #expect(
            recorded.findings == [
                .rolledBack(
                    chain: archive.chain,
                    reason: "recd signed \(try #require(archive.keeper.heads.record(of: archive.chain)?.signed)), "
                        + "the chain holds 3: entries 4-5 are gone (cut short, or an older chain put back)")
            ], "\(recorded.findings)")
        let refused = try #require(tampered(archive.chainNext(5)))
        #expect(refused.reason.contains("older one") && refused.reason.contains("rolled back"), "\(refused)")
        #expect(bytes(archive.signaturePath) == oldSignature)
        // A whole day deleted, chain and all: the record names it.
        try FileManager.default.removeItem(atPath: archive.root + "/2026")
        let gone = archive.prove(heads: true).findings
        #expect(
            gone.contains { $0.kind == "rolledBack" && $0.name == archive.chain && $0.description.contains("is gone") },
            "\(gone)")
    }

    @Test(
        "lines past the signed head: recd's own noted entry (a crash before its signature) is signed; anyone else's is refused; a cut line is dropped"
    )
    func linesPastTheHead() throws {
        // recd's own: noted pending, written, not signed.
        let crashed = try DayArchive(chained: 2)
        let record = try #require(try crashed.keeper.heads.record(of: crashed.chain))
        let third = ChainEntry(
            sequence: 3, kind: .segment, previous: try #require(record.signed?.head),
            sha256: try SHA256Digest.ofFile(crashed.records[2].path), start: crashed.records[2].startTime.iso8601,
            frames: crashed.records[2].frames, endReason: "rotation", path: crashed.relative(2))
        try crashed.keeper.heads.write(
            ChainHeadRecord(signed: record.signed, pending: ChainHead(entries: 3, head: third.hash)), of: crashed.chain)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: crashed.chainPath))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data((third.line + "\n").utf8))
        try handle.close()
        #expect(crashed.chainNext(2) == nil)
        #expect(try crashed.entries().count == 3)
        #expect(crashed.prove(heads: true).holds)
        #expect(
            try crashed.keeper.heads.record(of: crashed.chain)
                == ChainHeadRecord(signed: ChainHead(entries: 3, head: third.hash)))

        // Someone else's line, well formed and linked: refused.
        let foreign = try DayArchive(chained: 2)
        let last = try #require(try foreign.entries().last)
        var added = last
        added.sequence = 3
        added.previous = last.hash
        added.path = foreign.relative(2)
        let appended = try #require(bytes(foreign.chainPath)) + Data((added.line + "\n").utf8)
        try appended.write(to: URL(fileURLWithPath: foreign.chainPath))
        let refused = try #require(tampered(foreign.chainNext(2)))
        #expect(refused.entry == 3 && refused.reason.contains("recd did not write them"), "\(refused)")

        // A line cut short (no newline) past the head is dropped, then the append goes on.
        let cut = try DayArchive(chained: 2)
        let partial = try #require(bytes(cut.chainPath)) + Data("1\t3\tsegment\tdeadbeef".utf8)
        try partial.write(to: URL(fileURLWithPath: cut.chainPath))
        #expect(cut.chainNext(2) == nil)
        #expect(try cut.entries().map(\.sequence) == [1, 2, 3] && cut.prove(heads: true).holds)
    }

    @Test(
        "the chain path a symbolic link (to a file outside the archive, to the signing key), a FIFO, 20 MB of newlines: nothing followed, nothing waited on, nothing read whole"
    )
    func unsafeChainPaths() throws {
        let archive = try DayArchive(chained: 0)
        try FileManager.default.createDirectory(
            atPath: FileSystem.directoryName(of: archive.chainPath), withIntermediateDirectories: true)
        // The chain does not hold what recd signed: the path holds what recd never leaves there.
        func unsafe(_ error: ArchiveError?) -> Bool {
            guard let reason = tampered(error)?.reason else { return false }
            return reason.contains("a symbolic link") || reason.contains("not a regular file")
                || reason.contains("more than")
        }
        // A link to a file outside the archive: refused, the file untouched.
        let outside = archive.directory.path + "/outside"
        try "root's\nlast line".write(toFile: outside, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: archive.chainPath, withDestinationPath: outside)
        #expect(unsafe(archive.chainNext(0)))
        #expect(try String(contentsOfFile: outside, encoding: .utf8) == "root's\nlast line")
        // A link to the signing key: the key untouched and still loads.
        let keyPath = archive.directory.path + "/state/archive-signing.key"
        let key = try #require(bytes(keyPath))
        try FileManager.default.removeItem(atPath: archive.chainPath)
        try FileManager.default.createSymbolicLink(atPath: archive.chainPath, withDestinationPath: keyPath)
        #expect(unsafe(archive.chainNext(0)))
        #expect(bytes(keyPath) == key)
        #expect(try ArchiveSigningKey.load(path: keyPath).publicKey == archive.keeper.key.publicKey)
        // A dangling link is not created through either.
        try FileManager.default.removeItem(atPath: archive.chainPath)
        try FileManager.default.createSymbolicLink(
            atPath: archive.chainPath, withDestinationPath: archive.directory.path + "/made-through-a-link")
        #expect(unsafe(archive.chainNext(0)))
        #expect(!FileManager.default.fileExists(atPath: archive.directory.path + "/made-through-a-link"))
        // A FIFO: refused at once (no writer ever comes).
        try FileManager.default.removeItem(atPath: archive.chainPath)
        #expect(mkfifo(archive.chainPath, 0o644) == 0)
        let started = Date()
        #expect(unsafe(archive.chainNext(0)))
        #expect(Date().timeIntervalSince(started) < 2)
        // The signature and the public key as FIFOs: nothing waits either.
        try FileManager.default.removeItem(atPath: archive.chainPath)
        #expect(mkfifo(archive.signaturePath, 0o644) == 0)
        #expect(unsafe(archive.chainNext(0)))
        #expect(mkfifo(archive.root + "/" + ChainLayout.publicKeyFileName, 0o644) == 0)
        try archive.keeper.key.publish(to: archive.root + "/" + ChainLayout.publicKeyFileName)
        #expect(FileSystem.linkStatus(of: archive.root + "/" + ChainLayout.publicKeyFileName)?.kind == .regular)
        try FileManager.default.removeItem(atPath: archive.signaturePath)
        // 20 MB of newlines: refused at its first line; prove names a bounded number of breaks.
        try Data(repeating: 0x0A, count: 20 << 20).write(to: URL(fileURLWithPath: archive.chainPath))
        let refused = try #require(tampered(archive.chainNext(0)))
        #expect(refused.entry == 1, "\(refused)")
        let report = archive.prove(heads: true)
        let breaks = report.findings.filter { $0.kind == "chainBroken" }
        // The first 16 by name, the rest counted in one, and the lines past the most a chain holds unread.
        #expect(breaks.count == ChainProof.namedBreaks + 2, "\(breaks.count) findings")
        #expect(breaks.contains { $0.description.contains("more lines after it") })
        #expect(breaks.contains { $0.description.contains("the rest was not read") })
        // Larger than any chain: not opened for reading at all.
        try FileManager.default.removeItem(atPath: archive.chainPath)
        #expect(FileManager.default.createFile(atPath: archive.chainPath, contents: nil))
        let huge = try FileHandle(forWritingTo: URL(fileURLWithPath: archive.chainPath, isDirectory: false))
        try huge.truncate(atOffset: UInt64(ChainLimits.maximumChainBytes) + 1)
        try huge.close()
        #expect(unsafe(archive.chainNext(0)))
    }

    @Test("prove: a .partial no recorder holds is unproven; one a recorder holds locked is being recorded")
    func partials() throws {
        let archive = try DayArchive(chained: 6)
        #expect(archive.prove(heads: true).holds)
        let left = archive.root + "/2026/12/02/app-main-20261202T100006.000Z.flac.partial"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: left))
        let report = archive.prove(heads: true)
        #expect(
            report.findings.map(\.kind) == ["unproven"]
                && report.findings.first?.name == ChainLayout.relative(left, to: archive.root))
        let held = try OwnedFile(left, .readOnly)
        #expect(held.tryLockExclusive())
        let recording = archive.prove(heads: true)
        #expect(recording.holds && recording.beingRecorded == [ChainLayout.relative(left, to: archive.root)!])
    }

    @Test("head records and signature files parse only in their own form; lines are read in bounded pieces")
    func parsers() throws {
        let head = ChainHead(entries: 3, head: SHA256Digest.of([1]))
        let records = [
            ChainHeadRecord(signed: head), ChainHeadRecord(signed: head, pending: ChainHead(entries: 4, head: .zero)),
            ChainHeadRecord(signed: nil, pending: ChainHead(entries: 1, head: .zero)),
        ]
        for record in records { #expect(ChainHeadRecord(text: record.text) == record) }
        for bad in [
            "", "recd-chain-head-1", "recd-chain-head-1\t3\t\(head.head.hex)\t5\t\(head.head.hex)",
            "recd-chain-head-1\t-3\t\(head.head.hex)\t0\t-", "recd-chain-head-1\t0\t-\t0\t-x",
            "recd-chain-head-1\t99999999999999999999\t\(head.head.hex)\t0\t-",
        ] {
            #expect(ChainHeadRecord(text: bad) == nil, "\(bad)")
        }
        // Lines across chunk borders, a line too long, a last line without a newline.
        let directory = TemporaryDirectory("lines")
        let path = directory.path + "/lines"
        let long = String(repeating: "x", count: ChainLimits.maximumLineBytes + 1)
        let text = String(repeating: "a", count: ChainLineReader.chunkBytes - 1) + "\nb\n" + long + "\nend"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        var reader = ChainLineReader(try OwnedFile(path, .readOnly))
        var lines: [ChainLine] = []
        while let line = try reader.next() { lines.append(line) }
        #expect(lines.map(\.bytes.count) == [0, 1, 0, 3] && lines.map(\.tooLong) == [true, false, true, false])
        #expect(lines.map(\.terminated) == [true, true, true, false])
        #expect(lines.last?.end == Int64(text.utf8.count) && lines[1].start == Int64(ChainLineReader.chunkBytes))
    }
}

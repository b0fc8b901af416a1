// The SQLite index (list, since, reindex from the files alone) and verification.

import Foundation
import Testing

@testable import Archive

@Suite("Index and verify")
struct IndexTests {
    /// Records two apps into one archive and returns the records the recorders reported.
    private func makeArchive(_ root: String) throws -> [SegmentRecord] {
        var records: [SegmentRecord] = []
        for (app, start, frames) in [
            ("alpha", "2026-06-01T10:00:00.500000Z", 20000), ("beta", "2026-06-01T10:00:01.250000Z", 12000),
            ("alpha", "2026-06-02T00:00:00.000000Z", 8000),
        ] {
            let configuration = RecorderConfiguration(
                archiveDirectory: root, app: app, stream: "s", channels: 1, sampleRate: 8000, bitsPerSample: 16,
                segmentSeconds: 1)
            let gaps = app == "beta" ? [SourceGap(position: 100, length: 50)] : []
            records += finishedRecords(
                try record(
                    configuration,
                    source: MemorySource(channels: 1, startTime: iso(start), totalFrames: frames, gaps: gaps)))
        }
        return records
    }

    @Test("list by app and since; reindex from the files gives the same records")
    func listAndReindex() throws {
        let directory = TemporaryDirectory("index")
        let records = try makeArchive(directory.path + "/archive")
        #expect(records.count == 3 + 2 + 1)
        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        for record in records { try index.add(record) }
        #expect(try index.count() == 6)

        let alpha = try index.list(app: "alpha")
        #expect(alpha.map(\.app) == Array(repeating: "alpha", count: 4))
        #expect(alpha.map(\.startTime) == alpha.map(\.startTime).sorted())
        #expect(try index.list(app: "beta").map(\.frames) == [5950, 6000])
        #expect(try index.list(app: "beta").first?.gaps == [SegmentGap(position: 100, length: 50)])
        // Segments holding audio after 10:00:01.5: alpha's 10:00:01 and 10:00:02 and the next day's.
        let since = try index.list(app: "alpha", since: iso("2026-06-01T10:00:01.500000Z"))
        #expect(
            since.map(\.startTime) == [
                iso("2026-06-01T10:00:01.000000Z"), iso("2026-06-01T10:00:02.000000Z"),
                iso("2026-06-02T00:00:00.000000Z"),
            ])
        #expect(try index.list(since: iso("2026-06-01T23:00:00.000000Z")).count == 1)
        #expect(try index.list(until: iso("2026-06-01T10:00:01.000000Z")).count == 1)
        #expect(try index.record(path: records[0].path) == records[0])

        // Pages of the same order: offset and limit cut it, and join back to the whole.
        let all = try index.list()
        #expect(try index.list(offset: 0, limit: 4) == Array(all[0..<4]))
        #expect(try index.list(offset: 4, limit: 4) == Array(all[4...]))
        #expect(try index.list(offset: 6, limit: 4).isEmpty)
        #expect(try index.list(app: "alpha", offset: 1, limit: 2) == Array(alpha[1..<3]))

        let before = try index.list()
        let summary = try index.reindex(from: directory.path + "/archive")
        #expect(summary.indexed == 6 && summary.skipped.isEmpty)
        let after = try index.list()
        #expect(after == before, "reindexing from the files changed the records")
        #expect(after == records.sorted { ($0.startTime, $0.path) < ($1.startTime, $1.path) })

        // A second connection sees the same rows (WAL).
        #expect(try ArchiveIndex(path: directory.path + "/index.sqlite").count() == 6)

        #expect(try index.remove(path: records[0].path))
        #expect(try !index.remove(path: records[0].path))
        #expect(try index.record(path: records[0].path) == nil)
        var changed = records[1]
        changed.endReason = .interruption
        try index.update(changed)
        #expect(try index.record(path: changed.path)?.endReason == .interruption)
        #expect(throws: ArchiveError.self) { try index.update(records[0]) }
    }

    @Test("reindex skips files that are not FLAC and says why")
    func reindexSkipsJunk() throws {
        let directory = TemporaryDirectory("junk")
        let records = try makeArchive(directory.path)
        try Data("not flac".utf8).write(to: URL(fileURLWithPath: directory.path + "/2026/06/01/bogus.flac"))
        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        let summary = try index.reindex(from: directory.path)
        #expect(summary.indexed == records.count)
        #expect(Array(summary.skipped.keys) == [directory.path + "/2026/06/01/bogus.flac"])
    }

    @Test("verify passes a good file and catches a flipped byte in the middle")
    func verify() throws {
        let directory = TemporaryDirectory("verify")
        let writer = try SegmentWriter(
            path: directory.path + "/v.flac", format: SegmentFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24),
            comments: [])
        let samples = (0..<(48000 * 2 * 2)).map { noiseSample($0 / 2, $0 % 2) * 0.5 }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        let finished = try writer.finish(reason: .stop)

        let good = ArchiveVerifier.verify(path: finished.path)
        #expect(good.outcome == .ok && good.frames == 96000 && good.expectedFrames == 96000 && good.md5Checked)

        var bytes = try Data(contentsOf: URL(fileURLWithPath: finished.path))
        bytes[bytes.count / 2] ^= 0x10
        let corrupt = directory.path + "/corrupt.flac"
        try bytes.write(to: URL(fileURLWithPath: corrupt))
        let bad = ArchiveVerifier.verify(path: corrupt)
        #expect(!bad.isOK)
        switch bad.outcome {
        case .md5Mismatch, .decodeError: break
        default: Issue.record("a flipped byte was not detected: \(bad)")
        }
        #expect(try !flacTestPasses(corrupt))

        // Truncated at a frame boundary decodes cleanly, but not to the promised length.
        let missing = ArchiveVerifier.verify(path: directory.path + "/missing.flac")
        if case .unreadable = missing.outcome {} else { Issue.record("missing file: \(missing)") }
    }
}

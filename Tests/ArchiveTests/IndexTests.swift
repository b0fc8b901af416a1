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

    @Test("count follows every change: this connection's adds and removes, another connection's, a reindex")
    func countFollowsChanges() throws {
        let directory = TemporaryDirectory("index-count")
        let records = try makeArchive(directory.path + "/archive")
        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        let other = try ArchiveIndex(path: directory.path + "/index.sqlite")
        #expect(try index.count() == 0)
        try index.add(records[0])
        #expect(try index.count() == 1)
        // The same row again (an upsert): still one.
        try index.add(records[0])
        #expect(try index.count() == 1)
        #expect(try index.count() == 1)
        try other.add(records[1])
        try other.add(records[2])
        #expect(try other.count() == 3)
        #expect(try index.count() == 3, "another connection's rows")
        #expect(try other.remove(path: records[1].path))
        #expect(try index.count() == 2, "another connection's delete")
        #expect(try index.remove(path: records[0].path))
        #expect(try index.count() == 1)
        #expect(try other.count() == 1)
        _ = try other.reindex(from: directory.path + "/archive")
        #expect(try index.count() == records.count, "another connection's reindex")
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

    @Test("an index, or its -wal or -shm, that is a link or a FIFO is refused at once; the link's target is untouched")
    func indexThatIsNotARegularFile() throws {
        let directory = TemporaryDirectory("hostile-index")
        let outside = directory.path + "/outside"
        try Data("root's own file\n".utf8).write(to: URL(fileURLWithPath: outside))
        for suffix in ["", "-wal", "-shm"] {
            let archive = directory.path + "/archive\(suffix)"
            try FileManager.default.createDirectory(atPath: archive, withIntermediateDirectories: true)
            let path = archive + "/index.sqlite"
            #expect(symlink(outside, path + suffix) == 0)
            #expect(throws: ArchiveError.self) { try ArchiveIndex(path: path) }
        }
        #expect(try String(contentsOfFile: outside, encoding: .utf8) == "root's own file\n")
        let fifo = directory.path + "/fifo"
        try FileManager.default.createDirectory(atPath: fifo, withIntermediateDirectories: true)
        #expect(mkfifo(fifo + "/index.sqlite", 0o600) == 0)
        let started = Date()
        #expect(throws: ArchiveError.self) { try ArchiveIndex(path: fifo + "/index.sqlite") }
        #expect(Date().timeIntervalSince(started) < 5, "a FIFO must not block the opener")
    }

    @Test("rows no segment recd wrote can have are skipped and counted; the rest are listed")
    func implausibleRowsAreSkipped() throws {
        let directory = TemporaryDirectory("rows")
        let records = try makeArchive(directory.path + "/archive")
        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        for record in records { try index.add(record) }
        var forged = records[0]
        forged.path = directory.path + "/archive/../../escape.flac"
        try index.add(forged)
        forged.path = directory.path + "/archive/rate.flac"
        forged.sampleRate = 0
        try index.add(forged)
        forged.sampleRate = 8000
        forged.path = "/etc/passwd"
        try index.add(forged)
        #expect(Set(try index.list().map(\.path)) == Set(records.map(\.path)))
        #expect(index.implausibleRows == 3)
    }

    @Test("SegmentRow: every column out of range refuses the row; the real row passes")
    func segmentRowBounds() throws {
        let good = SegmentRow(
            path: "/a/2026/12/06/x-y-20261206T101010.000Z.flac", app: "x", stream: "y", group: 0, segment: 1,
            startMicroseconds: 1_765_015_810_000_000, frames: 48_000, sampleRate: 48_000, channels: 2,
            bitsPerSample: 24,
            endReason: "rotate", gaps: "10+5", recovered: 0, bytes: 1000,
            reals: [-23, 4, -1, 0.5, 1, 100, 200, nil, nil, nil], clockSource: "chrony")
        #expect(good.record(inArchive: "/a") != nil)
        let broken: [(String, (inout SegmentRow) -> Void)] = [
            ("start past 2262", { $0.startMicroseconds = 9_300_000_000_000_000 }),
            ("no path", { $0.path = nil }), ("path outside", { $0.path = "/b/x.flac" }),
            ("dot-dot", { $0.path = "/a/../x.flac" }), ("not flac", { $0.path = "/a/x.txt" }),
            ("rate 0", { $0.sampleRate = 0 }), ("9 channels", { $0.channels = 9 }),
            ("bits 64", { $0.bitsPerSample = 64 }),
            ("frames 2^40", { $0.frames = 1 << 40 }), ("negative size", { $0.bytes = -1 }),
            ("gaps 2^63", { $0.gaps = "0+9223372036854775807" }), ("gaps malformed", { $0.gaps = "1+" }),
            ("NaN loudness", { $0.reals[0] = .nan }), ("infinite drift", { $0.reals[3] = .infinity }),
            ("clock half known", { $0.reals[5] = nil }), ("clock error 1e300", { $0.reals[5] = 1e300 }),
            ("clock flag 7", { $0.reals[4] = 7 }), ("no app", { $0.app = nil }),
        ]
        for (name, breakIt) in broken {
            var row = good
            breakIt(&row)
            #expect(row.record(inArchive: "/a") == nil, "\(name) was let through")
        }
    }
}

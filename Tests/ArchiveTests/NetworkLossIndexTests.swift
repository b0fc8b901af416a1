// A segment's network losses (its NETWORK_LOSS tag, the file's frames where a network receiver
// played zeros) in the index, for the day view: read from the tag, kept in the row, placed in
// the segment's time line past its gaps, and an index of version 6 gains the column.
import Foundation
import Testing

@testable import Archive
@testable import Codec

@Suite("network losses in the index (the day view's marks)")
struct NetworkLossIndexTests {
    static func record(_ directory: String, losses: [SegmentGap]) -> SegmentRecord {
        SegmentRecord(
            path: directory + "/remote/2026-12-06/studio-1.flac", app: "remote", stream: "studio", group: 0,
            segment: 1, startTime: UTCTime(iso8601: "2026-12-06T10:00:00Z")!, frames: 48_000 * 60,
            sampleRate: 48_000, channels: 2, bitsPerSample: 24, endReason: .rotation,
            gaps: [SegmentGap(position: 48_000 * 5, length: 48_000 * 2)], recovered: false, bytes: 1_000,
            networkLosses: losses)
    }

    @Test("NETWORK_LOSS read from the tags; in the row and back; placed after the gap before it")
    func dayMarks() throws {
        let directory = TemporaryDirectory("netloss-index")
        let info = FLACStreamInfo(
            sampleRate: 48_000, channels: 2, bitsPerSample: 24, totalSamples: 48_000 * 60, md5: [],
            minBlockSize: 4096, maxBlockSize: 4096)
        let read = SegmentRecord(
            path: directory.path + "/x.flac", streamInfo: info,
            comments: [VorbisComment("NETWORK_LOSS", "480000+72000,960000+4800")], bytes: 10)
        #expect(
            read.networkLosses == [
                SegmentGap(position: 480_000, length: 72_000), .init(position: 960_000, length: 4_800),
            ])
        let malformed = SegmentRecord(
            path: directory.path + "/x.flac", streamInfo: info, comments: [VorbisComment("NETWORK_LOSS", "1+x")],
            bytes: 10)
        #expect(malformed.networkLosses == [])

        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        // 10 s into the file (after the 2 s gap at 5 s): 12 s into the segment, 1.5 s long.
        let record = Self.record(directory.path, losses: [SegmentGap(position: 480_000, length: 72_000)])
        try index.add(record)
        #expect(try index.record(path: record.path) == record)
        #expect(try index.record(path: record.path)?.networkLosses == record.networkLosses)
        let from = UTCTime(iso8601: "2026-12-06T00:00:00Z")!
        let to = from.advanced(bySeconds: 86_400)
        let day = try index.daySegments(app: "remote", stream: "studio", from: from, to: to, limit: 10)
        let start = record.startTime.microsecondsSinceEpoch
        #expect(day.first?.gaps.map(\.at) == [start + 5_000_000])
        #expect(day.first?.networkLosses.map(\.at) == [start + 12_000_000])
        #expect(day.first?.networkLosses.map(\.microseconds) == [1_500_000])
        // None: an empty list, NULL in the row.
        try index.update(Self.record(directory.path, losses: []))
        #expect(
            try index.daySegments(app: "remote", stream: "studio", from: from, to: to, limit: 10)
                .first?.networkLosses.isEmpty == true)
        // A row others wrote with a malformed list is not a segment recd wrote.
        try index.database.execute("UPDATE segments SET network_loss = '5+'")
        #expect(try index.record(path: record.path) == nil)
    }

    @Test("an index of version 6 gains network_loss (null), once")
    func migratesVersion6() throws {
        let directory = TemporaryDirectory("netloss-migrate")
        let path = directory.path + "/index.sqlite"
        let index = try ArchiveIndex(path: path)
        try index.add(Self.record(directory.path, losses: []))
        // As recd before network losses left it: no column, version 6.
        try index.database.execute("ALTER TABLE segments DROP COLUMN network_loss; PRAGMA user_version = 6;")
        let reopened = try ArchiveIndex(path: path)
        #expect(try reopened.list().count == 1)
        let version = try SQLiteDatabase(path: path).statement("PRAGMA user_version")
        #expect(try version.step() && version.int(0) == 7)
        try reopened.update(Self.record(directory.path, losses: [SegmentGap(position: 0, length: 480)]))
        #expect(try reopened.list().first?.networkLosses == [SegmentGap(position: 0, length: 480)])
    }
}

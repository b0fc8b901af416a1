// Retention: oldest first, by age and by free space, never an open file.

import Foundation
import Platform
import Testing

@testable import Archive

@Suite("Retention")
struct RetentionTests {
    @Test("segments past the maximum age go, oldest first; open and partial files stay")
    func maxAge() throws {
        let directory = TemporaryDirectory("retention")
        let root = directory.path + "/archive"
        let now = iso("2026-09-30T12:00:00.000000Z")
        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        var all: [SegmentRecord] = []
        for (stream, daysAgo) in [("old", 40.0), ("older", 45.0), ("recent", 1.0), ("spared", 50.0)] {
            let configuration = RecorderConfiguration(
                archiveDirectory: root, app: "app", stream: stream, channels: 1, sampleRate: 8000, bitsPerSample: 16,
                segmentSeconds: 3600)
            let source = MemorySource(
                channels: 1, startTime: now.advanced(bySeconds: -daysAgo * 86400), totalFrames: 8000)
            let records = finishedRecords(try record(configuration, source: source))
            for record in records { try index.add(record) }
            all += records
        }
        let open = try SegmentWriter(
            path: ArchiveLayout.segmentPath(
                archiveDirectory: root, app: "app", stream: "live", start: now.advanced(bySeconds: -60 * 86400)),
            format: SegmentFormat(sampleRate: 8000, channels: 1, bitsPerSample: 16), comments: [])
        let spared = all.first { $0.stream == "spared" }!.path

        let report = try RetentionPolicy(maxAgeDays: 30).enforce(
            archiveDirectory: root, index: index, openPaths: [spared, open.path, open.partialPath], now: now)
        let byStream = { (name: String) in all.first { $0.stream == name }!.path }
        #expect(report.deleted == [byStream("older"), byStream("old")])
        #expect(report.failures.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: byStream("old")))
        #expect(FileManager.default.fileExists(atPath: byStream("recent")))
        #expect(FileManager.default.fileExists(atPath: spared))
        #expect(FileManager.default.fileExists(atPath: open.partialPath))
        #expect(try index.list().map(\.stream).sorted() == ["recent", "spared"])
        // The emptied day folders went too; the open segment's folder stays.
        #expect(!FileManager.default.fileExists(atPath: FileSystem.directoryName(of: byStream("old"))))
        #expect(FileManager.default.fileExists(atPath: FileSystem.directoryName(of: open.partialPath)))
        open.abandon()
    }

    @Test("below the free-space floor, the oldest segments go until there is enough")
    func minFree() throws {
        let directory = TemporaryDirectory("retention-free")
        let root = directory.path + "/archive"
        let now = iso("2026-09-30T12:00:00.000000Z")
        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        let configuration = RecorderConfiguration(
            archiveDirectory: root, app: "app", stream: "s", channels: 1, sampleRate: 8000, bitsPerSample: 16,
            segmentSeconds: 1)
        let records = finishedRecords(
            try record(configuration, source: MemorySource(channels: 1, startTime: now, totalFrames: 8000 * 5)))
        for record in records { try index.add(record) }
        #expect(records.count == 5)
        // Pretend each deletion frees 4 %: from 10 % up to the 20 % floor takes three.
        var deletions = 0
        let report = try RetentionPolicy(minFreePercent: 20).enforce(
            archiveDirectory: root, index: index, openPaths: [], now: now,
            freePercent: { _ in
                let free = 10.0 + 4.0 * Double(deletions)
                deletions += 1
                return free
            })
        #expect(report.deleted == Array(records.prefix(3).map(\.path)))
        #expect(try index.list().map(\.path) == Array(records.suffix(2).map(\.path)))
        // Nothing to do when space suffices and nothing is old.
        let none = try RetentionPolicy(maxAgeDays: 30, minFreePercent: 5).enforce(
            archiveDirectory: root, index: index, openPaths: [], now: now)
        #expect(none.deleted.isEmpty)
    }
}

@Suite("Retention and replication")
struct RetentionReplicationTests {
    @Test("while a remote is set, old segments not yet copied there stay; copied ones go; a reindex keeps the marks")
    func sparesUnreplicated() throws {
        let directory = TemporaryDirectory("retention-replicate")
        let root = directory.path + "/archive"
        let now = iso("2026-09-30T12:00:00.000000Z")
        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        var paths: [String: String] = [:]
        var records: [String: SegmentRecord] = [:]
        for (stream, daysAgo) in [("copied", 40.0), ("waiting", 41.0), ("elsewhere", 42.0)] {
            let configuration = RecorderConfiguration(
                archiveDirectory: root, app: "app", stream: stream, channels: 1, sampleRate: 8000, bitsPerSample: 16,
                segmentSeconds: 3600)
            let source = MemorySource(
                channels: 1, startTime: now.advanced(bySeconds: -daysAgo * 86400), totalFrames: 8000)
            for record in finishedRecords(try record(configuration, source: source)) {
                try index.add(record)
                paths[stream] = record.path
                records[stream] = record
            }
        }
        #expect(try index.unreplicated(to: "box:a").count == 3)
        #expect(try index.markReplicated(path: paths["copied"]!, to: "box:a"))
        #expect(try index.markReplicated(path: paths["elsewhere"]!, to: "box:old"))
        #expect(try !index.markReplicated(path: root + "/nothing.flac", to: "box:a"))
        // Adding a segment again (a reindex's late arrivals) keeps where it was copied.
        try index.add(records["copied"]!)
        #expect(try index.unreplicated(to: "box:a").map(\.stream) == ["elsewhere", "waiting"])
        // A rebuild from the files keeps it too.
        _ = try index.reindex(from: root)
        #expect(try index.unreplicated(to: "box:a").map(\.stream) == ["elsewhere", "waiting"])

        let report = try RetentionPolicy(maxAgeDays: 30, replicationRemote: "box:a").enforce(
            archiveDirectory: root, index: index, openPaths: [], now: now)
        #expect(report.deleted == [paths["copied"]!])
        #expect(FileManager.default.fileExists(atPath: paths["waiting"]!))
        #expect(FileManager.default.fileExists(atPath: paths["elsewhere"]!))
        // Without a remote, retention deletes as before.
        let plain = try RetentionPolicy(maxAgeDays: 30).enforce(
            archiveDirectory: root, index: index, openPaths: [], now: now)
        #expect(plain.deleted == [paths["elsewhere"]!, paths["waiting"]!])
    }
}

extension RetentionReplicationTests {
    @Test("a version 2 index (no replicated column) gains it on open: every segment waits for its first copy")
    func migratesVersion2() throws {
        let directory = TemporaryDirectory("index-v2")
        let path = directory.path + "/index.sqlite"
        // The version 2 schema, as recd before replication created it, with one row.
        try OldIndex.write(version: 2, at: path, values: "'\(directory.path)/x.flac', 'app', 'main', 1, 1, 0, 1000000, 48000, 48000, 2, 24, 'rotation', '', 0, 100, NULL, NULL, NULL")
        let index = try ArchiveIndex(path: path)
        #expect(try index.unreplicated(to: "box:a").map(\.path) == [directory.path + "/x.flac"])
        #expect(try index.markReplicated(path: directory.path + "/x.flac", to: "box:a"))
        #expect(try index.unreplicated(to: "box:a").isEmpty)
        // Opening it again (now version 5) changes nothing.
        #expect(try ArchiveIndex(path: path).unreplicated(to: "box:a").isEmpty)
    }
}

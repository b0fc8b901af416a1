// Loudness through the archive: each segment's comments, its record, the index (and its
// migration from version 1), reindex, and the recorder's live reading.

import Foundation
import Testing

@testable import Archive
@testable import Codec

@Suite("Segment loudness in files and the index")
struct LoudnessArchiveTests {
    /// EBU Tech 3341 case 1: 1 kHz at -23 dBFS per channel, 48 kHz.
    static func sine23(_ n: Int, _ c: Int) -> Float {
        Float(pow(10, -23.0 / 20) * sin(2 * Double.pi * 1_000 * Double(n) / 48_000))
    }

    private func recordSine(_ root: String, loudness: Bool = true) throws -> (records: [SegmentRecord], recorder: Recorder) {
        var configuration = RecorderConfiguration(
            archiveDirectory: root, app: "news", stream: "air", channels: 2, sampleRate: 48_000, segmentSeconds: 5)
        configuration.measuresLoudness = loudness
        let source = MemorySource(
            channels: 2, startTime: iso("2026-06-01T10:00:00.000000Z"), totalFrames: 10 * 48_000, chunk: 4_096,
            signal: LoudnessArchiveTests.sine23)
        let recorder = try Recorder(configuration: configuration, source: source)
        try recorder.start()
        recorder.stop(reason: .stop)
        return (finishedRecords(recorder.drainEvents()), recorder)
    }

    @Test("a -23 dBFS stereo sine's segments say -23.0 ± 0.1 LUFS in their comments, records and the index")
    func segmentsCarryLoudness() throws {
        let directory = TemporaryDirectory("loudness")
        let (records, recorder) = try recordSine(directory.path + "/archive")
        #expect(records.count == 2)
        for record in records {
            let tags = try metaflacTags(record.path)
            let lufs = try #require(tags["LOUDNESS_LUFS"].flatMap { Double($0) }, "\(tags)")
            #expect(abs(lufs - -23) <= 0.1, "\(record.path): \(lufs) LUFS")
            let range = try #require(tags["LOUDNESS_RANGE_LU"].flatMap { Double($0) })
            #expect(range <= 0.1)
            let peak = try #require(tags["TRUE_PEAK_DBTP"].flatMap { Double($0) })
            #expect(abs(peak - -23) <= 0.1, "\(peak) dBTP")
            #expect(record.loudness.integratedLUFS == lufs && record.loudness.truePeakDBTP == peak)
            #expect(try SegmentRecord.read(path: record.path).loudness == record.loudness)
        }
        let live = recorder.loudness
        let momentary = try #require(live.momentaryLUFS)
        let shortTerm = try #require(live.shortTermLUFS)
        #expect(abs(momentary - -23) <= 0.1 && abs(shortTerm - -23) <= 0.1, "M \(momentary) S \(shortTerm)")

        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        for record in records { try index.add(record) }
        #expect(try index.list() == records)
        _ = try index.reindex(from: directory.path + "/archive")
        #expect(try index.list() == records)
    }

    @Test("with loudness off ([archive] loudness = no) a sine's segments carry no loudness and no live reading")
    func loudnessOff() throws {
        let directory = TemporaryDirectory("loudness-off")
        let (records, recorder) = try recordSine(directory.path + "/archive", loudness: false)
        #expect(records.count == 2)
        for record in records {
            let tags = try metaflacTags(record.path)
            #expect(tags["LOUDNESS_LUFS"] == nil && tags["TRUE_PEAK_DBTP"] == nil, "\(tags)")
            #expect(tags["APP"] == "news", "the other comments are there: \(tags)")
            #expect(record.loudness == LoudnessSummary(integratedLUFS: nil, rangeLU: nil, truePeakDBTP: nil))
        }
        #expect(recorder.loudness.momentaryLUFS == nil && recorder.loudness.shortTermLUFS == nil)
    }

    @Test("silence has no loudness comments and null loudness in the index")
    func silenceHasNone() throws {
        let directory = TemporaryDirectory("loudness-silence")
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path + "/archive", app: "quiet", stream: "s", channels: 1,
            sampleRate: 48_000, segmentSeconds: 60)
        let source = MemorySource(
            channels: 1, startTime: iso("2026-06-01T10:00:00.000000Z"), totalFrames: 48_000, signal: { _, _ in 0 })
        let records = finishedRecords(try record(configuration, source: source))
        let record = try #require(records.first)
        #expect(record.loudness == LoudnessSummary(integratedLUFS: nil, rangeLU: nil, truePeakDBTP: nil))
        #expect(try metaflacTags(record.path)["LOUDNESS_LUFS"] == nil)
        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        try index.add(record)
        #expect(try index.list() == [record])
    }

    @Test("an index of version 1 gains the loudness columns; reindex fills them from the comments")
    func migratesVersion1() throws {
        let directory = TemporaryDirectory("loudness-migrate")
        let (records, _) = try recordSine(directory.path + "/archive")
        let path = directory.path + "/index.sqlite"
        // The version 1 schema, as recd before loudness created it, with one row.
        try OldIndex.write(version: 1, at: path, values: "'\(records[0].path)', 'news', 'air', 0, 1, 0, 1, 1, 48000, 2, 24, 'rotation', '', 0, 1")
        let index = try ArchiveIndex(path: path)
        let migrated = try index.list()
        #expect(migrated.count == 1 && migrated.first?.loudness.integratedLUFS == nil)
        let version = try SQLiteDatabase(path: path).statement("PRAGMA user_version")
        // Through versions 2 and 3 (the replicated column: the row waits for its first copy) 4, 5 and 6 to 7.
        #expect(try version.step() && version.int(0) == 7)
        version.reset()
        #expect(try index.unreplicated(to: "box:a").count == 1)
        // Opening it again changes nothing.
        _ = try ArchiveIndex(path: path)
        _ = try index.reindex(from: directory.path + "/archive")
        #expect(try index.list() == records)
        #expect(try index.list().allSatisfy { abs(($0.loudness.integratedLUFS ?? 0) - -23) <= 0.1 })
    }

    @Test("a recovered partial is measured from its re-encoded samples")
    func recoveryMeasures() throws {
        let directory = TemporaryDirectory("loudness-recovery")
        let start = iso("2026-04-04T04:04:04.000000Z")
        let path = ArchiveLayout.segmentPath(archiveDirectory: directory.path, app: "app", stream: "s", start: start)
        let writer = try SegmentWriter(
            path: path, format: SegmentFormat(sampleRate: 48_000, channels: 2, bitsPerSample: 24),
            comments: [VorbisComment("START_TIME", start.iso8601), VorbisComment("APP", "app")])
        let samples = (0..<(5 * 48_000 * 2)).map { LoudnessArchiveTests.sine23($0 / 2, $0 % 2) }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        writer.abandon()
        let results = PartialRecovery.recoverAll(in: directory.path)
        guard case .recovered(let record)? = results.first?.outcome else {
            Issue.record("not recovered: \(results)")
            return
        }
        let lufs = try #require(record.loudness.integratedLUFS)
        #expect(abs(lufs - -23) <= 0.1, "\(lufs) LUFS")
        #expect(try metaflacTags(record.path)["LOUDNESS_LUFS"].flatMap { Double($0) } == lufs)
    }
}

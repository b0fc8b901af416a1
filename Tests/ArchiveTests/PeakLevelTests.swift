// Each file's sample peak, SAMPLE_PEAK_DBFS at its end (LevelOverviewStage: the level cells'
// highest), from a recorder of real files read back with metaflac.

import Foundation
import Testing

@testable import Archive

@Suite("Segment sample peak (SAMPLE_PEAK_DBFS)")
struct PeakLevelTests {
    @Test("decibels of an amplitude, in the standard library's arithmetic, agree with log10")
    func decibels() {
        for amplitude in [1.0, 0.999_999, 0.5, 0.25, 0.1, 0.001, 1e-7, 0.707_106_781] {
            let expected = 20 * log10(amplitude)
            #expect(abs(LevelOverview.decibels(amplitude: amplitude) - expected) < 1e-9, "\(amplitude)")
        }
    }

    @Test("each file of a 10-channel recorder ends with its own peak; a silent recorder's files carry none")
    func peaks() throws {
        let directory = TemporaryDirectory("peak")
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path + "/archive", app: "app", stream: "wide", channels: 10,
            sampleRate: 8000, bitsPerSample: 16, segmentSeconds: 1)
        // The first 8 channels peak at 0.5 (one sample of channel 3), the last two at 0.25.
        let source = MemorySource(
            channels: 10, startTime: iso("2026-12-02T10:00:00.000000Z"), totalFrames: 8000 * 2
        ) { n, c in
            if c < 8 { return n == 4000 && c == 3 ? -0.5 : 0.1 }
            return n % 2 == 0 ? 0.25 : -0.2
        }
        let records = finishedRecords(try record(configuration, source: source))
        try #require(records.count == 4)
        for record in records {
            let tags = try metaflacTags(record.path)
            let expected = record.group == 1 ? (record.segment == 1 ? "-6.02" : "-20.0") : "-12.04"
            #expect(tags[LevelOverviewStage.peakTag] == expected, "\(record.path): \(tags)")
        }

        let quiet = MemorySource(
            channels: 10, startTime: iso("2026-12-02T11:00:00.000000Z"), totalFrames: 8000
        ) { _, _ in 0 }
        var silent = configuration
        silent.stream = "quiet"
        for record in finishedRecords(try record(silent, source: quiet)) {
            #expect(try metaflacTags(record.path)[LevelOverviewStage.peakTag] == nil)
        }
    }
}

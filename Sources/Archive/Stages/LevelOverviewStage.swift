// Each file's level overview (`LevelOverview`: peak and RMS per second), at its end into the
// index's `level_overview` table: what the day view draws, never decoded from the FLAC again.
// Not a tag: a long segment's cells would not fit the padding end tags grow into, and the index
// is what the day view reads.
//
// And the highest sample of each file's segment, the cells' highest, in dB below full scale:
// SAMPLE_PEAK_DBFS at its end (to 0.01; 0.0 is a sample at full scale, where a louder one was
// clipped). Absent from a file of digital silence. The sample peak, not the true peak between
// samples (TRUE_PEAK_DBTP). One walk over the samples for both: the peak is one fact.
import Codec

final class LevelOverviewStage: SegmentStage {
    static let peakTag = "SAMPLE_PEAK_DBFS"

    private let files: [(first: Int, count: Int)]
    private var cells: [LevelCells]

    init?(_ setup: StageSetup) {
        files = setup.files
        cells = setup.files.map { _ in LevelCells(sampleRate: setup.outputRate, walks: Walks.current) }
    }

    func open(_ segment: SegmentOpening) -> [VorbisComment] {
        for index in cells.indices { cells[index].begin(at: segment.timelineStart) }
        return []
    }

    func observe(_ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int, at position: Int) {
        for (index, file) in files.enumerated() where index < cells.count {
            cells[index].add(
                channelStarts, channels: file.first..<(file.first + file.count), frames: frames, at: position)
        }
    }

    func close(_ segment: SegmentClosing, into ending: inout SegmentEnding) {
        for index in ending.files.indices where index < cells.count {
            ending.files[index].columns.levelOverview = cells[index].finish(at: segment.timelineEnd)
            let highest = cells[index].highest
            guard highest > 0 else { continue }
            let decibels = (LevelOverview.decibels(amplitude: Double(min(highest, 1))) * 100).rounded() / 100
            ending.files[index].tags.append(VorbisComment(Self.peakTag, String(decibels == 0 ? 0 : decibels)))
        }
    }
}

// Each file's level overview (`LevelOverview`: peak and RMS per second), at its end into the
// index's `level_overview` table: what the day view draws, never decoded from the FLAC again.
// Not a tag: a long segment's cells would not fit the padding end tags grow into, and the index
// is what the day view reads.

final class LevelOverviewStage: SegmentStage {
    private let files: [(first: Int, count: Int)]
    private var cells: [LevelCells]

    init?(_ setup: StageSetup) {
        files = setup.files
        cells = setup.files.map { _ in LevelCells(sampleRate: setup.outputRate) }
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
        }
    }
}

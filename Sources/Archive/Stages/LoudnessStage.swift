// EBU R128 loudness of each file's frames (`[archive] loudness`): LOUDNESS_LUFS,
// LOUDNESS_RANGE_LU and TRUE_PEAK_DBTP at its end (to 0.01, only those measured) and the index's
// loudness columns; the live momentary and short-term loudness of the first file (the first 8
// channels of a wider recorder) for `Recorder.loudness`.

import Codec

final class LoudnessStage: SegmentStage {
    private let files: [(first: Int, count: Int)]
    private let outputRate: Int
    private let engine: LoudnessEngine
    private let outlet: StageOutlet
    /// The open segment's meters, one per file (nil where one could not be set up).
    private var meters: [LoudnessMeter?] = []

    init?(_ setup: StageSetup) {
        guard setup.configuration.measuresLoudness else { return nil }
        files = setup.files
        outputRate = setup.outputRate
        engine = setup.configuration.loudnessEngine
        outlet = setup.outlet
    }

    func open(_ segment: SegmentOpening) -> [VorbisComment] {
        meters = files.map { try? LoudnessMeter(channels: $0.count, sampleRate: outputRate, engine: engine) }
        return []
    }

    func observe(_ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int, at position: Int) {
        for (meter, file) in zip(meters, files) {
            meter?.add(planar: channelStarts + file.first, offset: 0, frames: frames)
        }
        let first = meters.first ?? nil
        outlet.publishLoudness(momentary: first?.momentaryLUFS, shortTerm: first?.shortTermLUFS)
    }

    func close(_ segment: SegmentClosing, into ending: inout SegmentEnding) {
        for index in ending.files.indices where index < meters.count {
            guard let summary = meters[index]?.summary else { continue }
            let stored = CommentName.stored(summary)
            ending.files[index].tags += CommentName.loudnessComments(stored)
            ending.files[index].columns.loudness = stored
        }
        meters = []
    }
}

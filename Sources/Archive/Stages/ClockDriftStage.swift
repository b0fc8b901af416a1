// How fast the source's sample clock ran against the monotonic clock during the segment:
// CLOCK_DRIFT_PPM and the index's clock_drift_ppm, from the source's clock stamps (`ClockDriftFit`).

final class ClockDriftStage: SegmentStage {
    private let nominalRate: Int
    private var fit = ClockDriftFit()

    init?(_ setup: StageSetup) { nominalRate = setup.configuration.sampleRate }

    func open(_ segment: SegmentOpening) -> [VorbisComment] {
        fit = ClockDriftFit()
        return []
    }

    func note(_ fact: SegmentFact) {
        if case .clockStamp(let stamp) = fact { fit.add(stamp) }
    }

    func close(_ segment: SegmentClosing, into ending: inout SegmentEnding) {
        guard let ppm = fit.partsPerMillion(nominalRate: nominalRate) else { return }
        let text = ClockDriftFit.commentValue(ppm)
        ending.appendToEveryFile([VorbisComment(CommentName.clockDriftPPM, text)])
        ending.setEveryFile { $0.clockDriftPPM = Double(text) }
    }
}

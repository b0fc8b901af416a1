// Silence in the frames written (quiet audio, not missing packets): `.silence` events as the
// stream goes silent and comes back, and each segment's SILENCE_SECONDS. Only when the
// recorder's configuration asks for detection.
import Codec

final class SilenceStage: SegmentStage {
    private var detector: SilenceDetector
    private let channels: Int
    private let outputRate: Int
    private let outlet: StageOutlet

    init?(_ setup: StageSetup) {
        guard let detection = setup.configuration.silence else { return nil }
        detector = SilenceDetector(detection: detection, sampleRate: setup.outputRate, walks: Walks.current)
        channels = setup.configuration.channels
        outputRate = setup.outputRate
        outlet = setup.outlet
    }

    func observe(_ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int, at position: Int) {
        detector.observe(planar: channelStarts, frames: frames, channels: channels, position: position) {
            post($0)
        }
    }

    func close(_ segment: SegmentClosing, into ending: inout SegmentEnding) {
        let frames = detector.endSegment { post($0) }
        ending.appendToEveryFile([
            VorbisComment(
                CommentName.silenceSeconds, SilenceDetector.secondsText(frames: frames, sampleRate: outputRate))
        ])
    }

    private func post(_ transition: SilenceTransition) {
        guard let since = outlet.time(atFrame: transition.sinceFrame),
            let decided = outlet.time(atFrame: transition.decidedFrame)
        else { return }
        outlet.post(
            .silence(SilenceChange(state: transition.state, since: since, decided: decided, peak: transition.peak)))
    }
}

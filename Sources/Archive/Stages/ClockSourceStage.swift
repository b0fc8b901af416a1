// Who kept the clock when the segment started (CLOCK_SOURCE and the index's clock_source), as
// the time-source monitor last heard it: a value read under a lock, never a program run here.

import Platform

final class ClockSourceStage: SegmentStage {
    private let monitor: TimeSourceMonitor
    private var atStart: TimeSource?

    init?(_ setup: StageSetup) {
        guard let monitor = setup.inputs.timeSource else { return nil }
        self.monitor = monitor
    }

    func open(_ segment: SegmentOpening) -> [VorbisComment] {
        atStart = monitor.current
        return atStart.map { [VorbisComment(CommentName.clockSource, $0.description)] } ?? []
    }

    func close(_ segment: SegmentClosing, into ending: inout SegmentEnding) {
        ending.setEveryFile { [atStart] in $0.clockSource = atStart?.description }
    }
}

// How good the wall clock was when the segment started and when it ended: CLOCK_SYNCHRONIZED,
// CLOCK_ESTERROR_US, CLOCK_MAXERROR_US and their `_END` forms, the index's clock columns. One
// adjtimex read (reading only, a few µs) for all of a segment's files.

import Platform

final class ClockSyncStage: SegmentStage {
    private var atStart: ClockSynchronization?

    init?(_ setup: StageSetup) {}

    func open(_ segment: SegmentOpening) -> [VorbisComment] {
        atStart = ClockSynchronization.current()
        return atStart.map { CommentName.clockComments($0, atEnd: false) } ?? []
    }

    func close(_ segment: SegmentClosing, into ending: inout SegmentEnding) {
        let atEnd = ClockSynchronization.current()
        if let atEnd { ending.appendToEveryFile(CommentName.clockComments(atEnd, atEnd: true)) }
        ending.setEveryFile { [atStart] in
            $0.clockAtStart = atStart
            $0.clockAtEnd = atEnd
        }
    }
}

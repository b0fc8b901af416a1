// A pre-roll tap is kept for as long as its session: its keeper drains the tap's small gap log
// as it trims (clock stalls are logged as gaps), keeping what a take needs of them.
import AudioEngine
import Testing

@testable import Daemon

@Suite("pre-roll taps' gaps")
struct PreRollGapTests {
    @Test(
        "gaps at or before the discarded frames fold into one total per cause at position 0; later ones stay as logged; folding again changes nothing"
    )
    func fold() {
        let gaps = [
            CaptureGap(position: 100, length: 256, frameTime: 1, cause: .overrun),
            CaptureGap(position: 200, length: 48_000, frameTime: 2, cause: .clockStall),
            CaptureGap(position: 300, length: 1_000, frameTime: 3, cause: .clockStall),
            CaptureGap(position: 900, length: 512, frameTime: 4, cause: .overrun),
            CaptureGap(position: 950, length: 2_000, frameTime: 5, cause: .clockStall),
        ]
        let folded = PreRollKeeper.fold(gaps, before: 300)
        #expect(
            folded == [
                CaptureGap(position: 0, length: 256, frameTime: 0, cause: .overrun),
                CaptureGap(position: 0, length: 49_000, frameTime: 0, cause: .clockStall),
                gaps[3], gaps[4],
            ])
        #expect(PreRollKeeper.fold(folded, before: 300) == folded)
        // Many stalls over a long-kept pre-roll stay two entries once discarded.
        let many = (0..<1_000).map { CaptureGap(position: $0 * 10, length: 5, frameTime: 0, cause: .clockStall) }
        #expect(
            PreRollKeeper.fold(many, before: 20_000) == [
                CaptureGap(position: 0, length: 5_000, frameTime: 0, cause: .clockStall)
            ])
        #expect(PreRollKeeper.fold([], before: 10).isEmpty)
    }
}

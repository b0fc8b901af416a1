// The recorder's side of catch-up after a stall: a tap's clockStall gap is held until the
// tap's verdict on it, then goes on shortened by the frames the server delivered early (or not
// at all), driven here with made-up gaps and clocks.
import Archive
import AudioEngine
import Testing

@testable import Daemon

@Suite("stall gaps held for their catch-up verdict")
struct StallGapHoldTests {
    static func stall(at position: Int, _ length: Int, awaits: Bool = true) -> CaptureGap {
        CaptureGap(position: position, length: length, frameTime: 0, cause: .clockStall, awaitsVerdict: awaits)
    }

    static func verdict(at position: Int, _ length: Int) -> CaptureGap {
        CaptureGap(position: position, length: length, frameTime: 0, cause: .catchUp)
    }

    @Test(
        "a stall gap waits for its verdict (reads stop at it), then goes on less the frames that came early; a verdict of all of it leaves no gap; of none, the whole gap"
    )
    func verdicts() {
        var hold = StallGapHold()
        hold.take(Self.stall(at: 1000, 96_000), offset: 0, now: 10)
        hold.take(CaptureGap(position: 900, length: 256, frameTime: 0, cause: .overrun), offset: 0, now: 10)
        #expect(hold.firstHeldPosition(now: 10.1) == 1000, "no frame past the gap until its verdict")
        #expect(hold.handOn() == [SourceGap(position: 900, length: 256, cause: .overrun)])
        hold.take(Self.verdict(at: 1000, 93_000), offset: 0, now: 10.2)
        #expect(hold.firstHeldPosition(now: 10.2) == nil)
        #expect(hold.handOn() == [SourceGap(position: 1000, length: 3_000, cause: .clockStall)])

        hold.take(Self.stall(at: 5000, 48_000), offset: 0, now: 11)
        hold.take(Self.verdict(at: 5000, 48_000), offset: 0, now: 11)
        #expect(hold.firstHeldPosition(now: 11) == nil)
        #expect(hold.handOn().isEmpty, "a catch-up of the whole stall: the frames cover its time")

        hold.take(Self.stall(at: 9000, 4_800), offset: 0, now: 12)
        hold.take(Self.verdict(at: 9000, 0), offset: 0, now: 12)
        #expect(hold.handOn() == [SourceGap(position: 9000, length: 4_800, cause: .clockStall)])
    }

    @Test(
        "a stall gap that awaits no verdict goes on at once; a pre-roll's offset moves positions; a verdict for no held gap changes nothing; a gap held past maximumHoldSeconds (1 s), or when the tap leaves the graph, goes on whole"
    )
    func edges() {
        var hold = StallGapHold()
        hold.take(Self.stall(at: 700, 480, awaits: false), offset: 200, now: 0)
        #expect(hold.firstHeldPosition(now: 0) == nil)
        #expect(hold.handOn() == [SourceGap(position: 500, length: 480, cause: .clockStall)])
        hold.take(Self.verdict(at: 700, 480), offset: 200, now: 0)
        #expect(hold.handOn().isEmpty)

        hold.take(Self.stall(at: 1200, 960), offset: 200, now: 1)
        #expect(hold.firstHeldPosition(now: 1 + StallGapHold.maximumHoldSeconds - 0.5) == 1000)
        #expect(hold.firstHeldPosition(now: 1 + StallGapHold.maximumHoldSeconds + 0.5) == nil)
        #expect(hold.handOn() == [SourceGap(position: 1000, length: 960, cause: .clockStall)])

        hold.take(Self.stall(at: 3000, 960), offset: 0, now: 20)
        hold.releaseAll()
        #expect(hold.firstHeldPosition(now: 20) == nil)
        #expect(hold.handOn() == [SourceGap(position: 3000, length: 960, cause: .clockStall)])
    }
}

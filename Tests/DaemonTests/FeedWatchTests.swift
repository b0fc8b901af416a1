// A recorder's feed watch, driven tick by tick with made-up counters and clocks: when a feed
// with no frames becomes `stalled`, from when, and when it is `resumed`.
import Archive
import Testing

@testable import Daemon

@Suite("a recorder's feed watch")
struct FeedWatchTests {
    static let wall0: Int64 = 1_800_000_000 * 1_000_000_000

    /// Ticks every `step` s from `from` to `to` with the frame count `frames(t)` and a period
    /// stamp at the latest whole period before `t` while frames flow; the changes, with when.
    static func run(
        _ watch: inout FeedWatch, from: Double, to: Double, step: Double = 0.5, stallSeconds: Double = 2,
        frames: (Double) -> Int, stampAt: (Double) -> Double?
    ) -> [(Double, FeedWatch.Change)] {
        var changes: [(Double, FeedWatch.Change)] = []
        var t = from
        while t <= to + 1e-9 {
            let wall = UTCTime(nanosecondsSinceEpoch: wall0 + Int64(t * 1e9))
            if let change = watch.check(
                frames: frames(t), lastPeriodAt: stampAt(t), now: t, wallNow: wall, stallSeconds: stallSeconds)
            {
                changes.append((t, change))
            }
            t += step
        }
        return changes
    }

    @Test(
        "frames stop at 10.02 s for 4 s: stalled at the first tick 2 s after the last period (since that period), resumed when they come again, with the stall's length"
    )
    func stallAndResume() {
        var watch = FeedWatch(now: 0)
        let period = 0.0213
        let stopped = 10.02...14.02
        func lastPeriod(_ t: Double) -> Double {
            let end = stopped.contains(t) ? stopped.lowerBound : t
            return (end / period).rounded(.down) * period
        }
        let changes = Self.run(
            &watch, from: 0.5, to: 20, frames: { Int(lastPeriod($0) / period) * 1024 }, stampAt: lastPeriod)
        #expect(changes.count == 2, "\(changes)")
        guard changes.count == 2, case .stalled(let since) = changes[0].1,
            case .resumed(let resumedSince, let seconds) = changes[1].1
        else { return }
        let last = lastPeriod(10.02)
        #expect(changes[0].0 == 12.5, "the first tick 2 s after \(last)")
        #expect(abs(Double(since.nanosecondsSinceEpoch - Self.wall0) / 1e9 - last) < 1e-6)
        #expect(resumedSince == since)
        #expect(changes[1].0 == 14.5)
        #expect(abs(seconds - (14.5 - last)) < 0.01, "\(seconds)")
        #expect(watch.stalledSince == nil)
    }

    @Test("a recorder whose first frame never comes is stalled from its start; stall_seconds 0 never alarms")
    func neverStarted() {
        var watch = FeedWatch(now: 100)
        let changes = Self.run(&watch, from: 100, to: 103, frames: { _ in 0 }, stampAt: { _ in nil })
        #expect(changes.count == 1 && changes.first?.0 == 102)
        #expect(watch.stalledSince != nil)
        var off = FeedWatch(now: 100)
        #expect(Self.run(&off, from: 100, to: 200, stallSeconds: 0, frames: { _ in 0 }, stampAt: { _ in nil }).isEmpty)
    }

    @Test("a stamp from another clock (in the future, or before the last check) is not believed: the tick's time is")
    func oddStamps() {
        var watch = FeedWatch(now: 0)
        _ = watch.check(
            frames: 10, lastPeriodAt: 1e12, now: 1, wallNow: UTCTime(nanosecondsSinceEpoch: 0), stallSeconds: 2)
        // Believed, the stamp would keep the feed fresh for ever; the tick's 1 s is used.
        let change = watch.check(
            frames: 10, lastPeriodAt: nil, now: 3, wallNow: UTCTime(nanosecondsSinceEpoch: 3_000_000_000),
            stallSeconds: 2)
        #expect(change == .stalled(since: UTCTime(nanosecondsSinceEpoch: 1_000_000_000)))
    }
}

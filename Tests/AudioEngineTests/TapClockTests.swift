import TestSupport
import Testing

// Time stays true, on the process path: a tap compares each period with JACK's monotonic clock
// and logs a stall of more than a period as a clockStall gap, driven here without a server
// (`runCycle` with synthetic microseconds).
@testable import AudioEngine

@Suite("a tap's clock check")
struct TapClockTests {
    static let rate = 48_000
    static let period = 256
    static let periodMicros = Double(period) * 1e6 / Double(rate)

    /// A rig with one stereo tap that knows the rate; `cycle` runs one period at `micros`.
    final class ClockRig {
        let rig: ProcessRig
        let tap: CaptureTap
        let period: Int
        private var frameTime: UInt32 = 5000

        init(capacityFrames: Int = 10 * TapClockTests.rate, period: Int = TapClockTests.period) {
            self.period = period
            rig = ProcessRig(inputChannels: 2, outputChannels: 2, maxFrames: period)
            tap = CaptureTap(
                inputGroup: "in", flatInputChannels: [0, 1], capacityFrames: capacityFrames, zeroed: false,
                sampleRate: TapClockTests.rate)
            rig.memory.publish(players: rig.memory.players, taps: rig.memory.taps + [tap])
        }

        /// The catch-up verdicts `gaps()` took out of the log.
        private(set) var verdicts: [CaptureGap] = []

        /// The gaps logged since the last call, without the catch-up verdicts (kept in `verdicts`).
        func gaps() -> [CaptureGap] {
            let all = tap.drainGaps()
            verdicts += all.filter { $0.cause == .catchUp }
            return all.filter { $0.cause != .catchUp }
        }

        func cycle(micros: UInt64) {
            rig.feedCounter(frames: period)
            runCycle(rig.memory.state, frames: period, frameTime: frameTime, nowMicros: micros)
            frameTime &+= UInt32(period)
        }

        /// Reads everything and says whether channel 0 counts on by one from frame to frame.
        func counterUnbroken() -> Bool {
            let samples = tap.read(maxFrames: tap.availableToRead)
            return stride(from: 2, to: samples.count, by: 2).allSatisfy { samples[$0] == samples[$0 - 2] + 1 }
        }
    }

    static func micros(_ period: Int, periodFrames: Int = TapClockTests.period, plus extra: Double = 0) -> UInt64 {
        UInt64(1_000_000_000 + Double(period * periodFrames) * 1e6 / Double(rate) + extra)
    }

    @Test("periods on time, or woken up to 15 ms late at random, or from a clock 2000 ppm slow: no gap")
    func noStall() {
        for seed in randomSeeds(count: 3, base: 0x7A9) {
            var random = SplitMix64(seed: seed)
            let rig = ClockRig()
            for period in 0..<2000 {
                let late = Double(random.next() % 15_000)
                let drift = Double(period) * Self.periodMicros * 0.002
                rig.cycle(micros: Self.micros(period, plus: late + drift))
                if period % 100 == 99 { _ = rig.tap.read(maxFrames: rig.tap.availableToRead) }
            }
            #expect(rig.gaps().isEmpty, "seed \(seed)")
            #expect(rig.tap.stalls == 0 && rig.tap.clockResets == 0, "seed \(seed)")
            let stamp = rig.tap.clockStamp
            #expect(stamp?.frames == 1999 * Self.period, "the last period's stamp: \(String(describing: stamp))")
        }
    }

    @Test(
        "a 3 s stall after 100 periods: one clockStall gap of 3 s before the 101st period's frames, nothing of the signal lost, later periods unbroken"
    )
    func stall() throws {
        let rig = ClockRig()
        for period in 0..<100 { rig.cycle(micros: Self.micros(period)) }
        for period in 100..<200 { rig.cycle(micros: Self.micros(period, plus: 3_000_000)) }
        let gaps = rig.gaps()
        try #require(gaps.count == 1, "\(gaps)")
        #expect(gaps[0].cause == .clockStall)
        #expect(gaps[0].position == 100 * Self.period)
        #expect(gaps[0].length == 3 * Self.rate, "\(gaps[0].length) frames")
        #expect(gaps[0].frameTime == 5000 + UInt32(100 * Self.period))
        // The next period came at its pace: nothing came early, the gap stands whole.
        #expect(gaps[0].awaitsVerdict)
        #expect(rig.verdicts.map { [$0.position, $0.length] } == [[100 * Self.period, 0]])
        #expect(rig.tap.stalls == 1 && rig.tap.stalledFrames == 3 * Self.rate)
        #expect(rig.tap.overruns == 0 && rig.tap.droppedFrames == 0)
        #expect(rig.tap.framesCaptured == 200 * Self.period)
        #expect(rig.counterUnbroken())
        // The stamps count the stall's frames: the timeline stays on the clock.
        #expect(rig.tap.clockStamp?.frames == 199 * Self.period + 3 * Self.rate)
    }

    @Test(
        "at 256 frames (5.3 ms) a period 30 ms late is a gap of 1440 frames; 18 ms late, under the 20 ms floor, is not; at 2048 frames (42.7 ms) 40 ms late is not"
    )
    func threshold() {
        let short = ClockRig()
        for period in 0..<50 { short.cycle(micros: Self.micros(period)) }
        for period in 50..<60 { short.cycle(micros: Self.micros(period, plus: 30_000)) }
        #expect(short.gaps().map(\.length) == [1440])
        let shorter = ClockRig()
        for period in 0..<50 { shorter.cycle(micros: Self.micros(period)) }
        for period in 50..<60 { shorter.cycle(micros: Self.micros(period, plus: 18_000)) }
        #expect(shorter.gaps().isEmpty)
        let long = ClockRig(period: 2048)
        for period in 0..<50 { long.cycle(micros: Self.micros(period, periodFrames: 2048)) }
        for period in 50..<60 { long.cycle(micros: Self.micros(period, periodFrames: 2048, plus: 40_000)) }
        #expect(long.gaps().isEmpty)
        for period in 60..<70 { long.cycle(micros: Self.micros(period, periodFrames: 2048, plus: 40_000 + 50_000)) }
        // 50 ms more is a gap; of the 40 ms before it, what the baseline has not yet followed
        // (most of it, after 10 periods) comes with it.
        let lengths = long.gaps().map(\.length)
        #expect(lengths.count == 1 && (2400...4320).contains(lengths.first ?? 0), "\(lengths)")
    }

    /// Runs `count` periods with JACK's cycle times: cycle `k` starts at `start(k)` and says the
    /// next starts `length(k)` later; the callback wakes up at `wake(k)`.
    static func runWithCycleTimes(
        _ rig: ClockRig, count: Int, start: (Int) -> Double, length: (Int) -> Double, wake: (Int) -> Double
    ) {
        for k in 0..<count {
            rig.rig.feedCounter(frames: Self.period)
            runCycle(
                rig.rig.memory.state, frames: Self.period, frameTime: UInt32(k * Self.period),
                nowMicros: UInt64(wake(k)), cycleStart: Int64(start(k)), cycleNext: Int64(start(k) + length(k)))
            if k % 100 == 99 { _ = rig.tap.read(maxFrames: rig.tap.availableToRead) }
        }
    }

    @Test(
        "JACK's cycle times decide: a graph 10 % slow whose callbacks wake up to 15 ms late at random has no gap; cycles skipped for 3 s are one gap of 3 s"
    )
    func slowGraphIsNotCut() {
        for seed in randomSeeds(count: 3, base: 0x51A) {
            var random = SplitMix64(seed: seed)
            let rig = ClockRig()
            let length = Self.periodMicros * 1.1
            let start = { (k: Int) in 1e9 + Double(k) * length + (k >= 1000 ? 3e6 : 0) }
            let jitter = (0..<2000).map { _ in Double(random.next() % 15_000) }
            Self.runWithCycleTimes(
                rig, count: 2000, start: start, length: { _ in length }, wake: { start($0) + jitter[$0] })
            let gaps = rig.gaps()
            #expect(gaps.count == 1, "seed \(seed): \(gaps)")
            #expect(gaps.first?.position == 1000 * Self.period)
            // The lateness: the stop, and what the baseline had not followed of the slowness
            // and the jitter (64 periods of 10 %: 34 ms, and up to 15 ms).
            let extra = gaps.first.map { Double($0.length - 3 * Self.rate) / Double(Self.rate) }
            #expect(extra.map { (-0.015...0.05).contains($0) } == true, "\(gaps)")
            #expect(rig.tap.clockResets == 0)
        }
    }

    @Test(
        "jackd2's DLL reckons the cycles after a stall behind the true time, and an xrun puts its clock right: a skip of 1.25 s with the callbacks on time is no gap"
    )
    func skipWithoutPauseIsNotAGap() {
        let rig = ClockRig()
        let start = { (k: Int) in 1e9 + Double(k) * Self.periodMicros + (k >= 100 ? 1.25e6 : 0) }
        let wake = { (k: Int) in 1e9 + Double(k) * Self.periodMicros }
        Self.runWithCycleTimes(rig, count: 300, start: start, length: { _ in Self.periodMicros }, wake: wake)
        #expect(rig.gaps().isEmpty)
    }

    @Test(
        "jackd2 after a stop: the cycle after it starts at the resume (2 s on) and says the next is 1.9 s back (its DLL reset), which it then is: one gap of 2 s"
    )
    func jackdResetIsOneGap() {
        let rig = ClockRig()
        let resumed = 1e9 + 100 * Self.periodMicros + 2e6
        let start = { (k: Int) -> Double in
            if k < 100 { return 1e9 + Double(k) * Self.periodMicros }
            return k == 100 ? resumed : resumed - 1.9e6 + Double(k - 101) * Self.periodMicros
        }
        let length = { (k: Int) in k == 100 ? -1.9e6 : Self.periodMicros }
        let wake = { (k: Int) in k <= 100 ? start(k) : resumed + Double(k - 100) * Self.periodMicros }
        Self.runWithCycleTimes(rig, count: 300, start: start, length: length, wake: wake)
        let gaps = rig.gaps()
        #expect(gaps.count == 1, "\(gaps)")
        #expect(gaps.first.map { abs($0.length - 2 * Self.rate) <= 1 } == true, "\(gaps)")
    }

    @Test(
        "PipeWire catching up: after a 3 s stop the 563 cycles it missed come back to back (0.1 ms apart), then at its pace: the stall gap's verdict is the frames that came early, gap less verdict is the 50 ms of lateness left, the stamps stay on the clock, no clock reset, the signal whole"
    )
    func catchUpIsNotAGap() throws {
        let rig = ClockRig()
        let base = 1e9
        let resumed = base + 100 * Self.periodMicros + 3e6
        let missed = 563
        let wake = { (k: Int) -> Double in
            if k < 100 { return base + Double(k) * Self.periodMicros }
            if k < 100 + missed { return resumed + Double(k - 100) * 100 }
            return resumed + Double(missed) * 100 + Double(k - 100 - missed) * Self.periodMicros
        }
        for k in 0..<1000 {
            rig.cycle(micros: UInt64(wake(k)))
            if k % 100 == 99 { _ = rig.tap.read(maxFrames: rig.tap.availableToRead) }
        }
        let gaps = rig.gaps()
        try #require(gaps.count == 1, "\(gaps)")
        #expect(gaps[0].cause == .clockStall && gaps[0].awaitsVerdict && gaps[0].position == 100 * Self.period)
        try #require(rig.verdicts.count == 1, "\(rig.verdicts)")
        #expect(rig.verdicts[0].position == gaps[0].position)
        // What is left of the stop once the cycles are at their pace again: the 56 ms the catch-up
        // took, less the 2.7 ms by which its 563 periods exceed the 3 s stop.
        let left = Double(gaps[0].length - rig.verdicts[0].length) / Double(Self.rate)
        #expect(
            (0.03...0.08).contains(left), "gap \(gaps[0].length), caught up \(rig.verdicts[0].length): \(left) s left")
        #expect(rig.tap.stalledFrames == gaps[0].length - rig.verdicts[0].length)
        #expect(rig.tap.clockResets == 0)
        // Frames plus what is left of the gap are the clock's time, within a period.
        let stamp = try #require(rig.tap.clockStamp)
        let onClock = (Double(stamp.micros) - base) * Double(Self.rate) / 1e6
        #expect(abs(Double(stamp.frames) - onClock) <= Double(Self.period), "stamp \(stamp), clock \(onClock)")
        #expect(rig.counterUnbroken())
    }

    @Test("a graph 10 % slow without JACK's cycle times (this client's clock only): no gap either")
    func slowGraphWithoutCycleTimes() {
        let rig = ClockRig()
        for period in 0..<2000 {
            rig.cycle(micros: Self.micros(period, plus: Double(period) * Self.periodMicros * 0.1))
            if period % 100 == 99 { _ = rig.tap.read(maxFrames: rig.tap.availableToRead) }
        }
        #expect(rig.gaps().isEmpty)
        #expect(rig.tap.stalls == 0)
    }

    @Test("frames ahead of the clock (the clock jumped back, or stood still): no gap, the measurement starts afresh")
    func ahead() {
        let rig = ClockRig()
        for period in 0..<100 { rig.cycle(micros: Self.micros(period)) }
        for period in 100..<200 { rig.cycle(micros: Self.micros(period, plus: -500_000)) }
        #expect(rig.gaps().isEmpty)
        #expect(rig.tap.clockResets == 1)
        // Standing still: the first period past the threshold resets, and so on.
        for _ in 0..<20 { rig.cycle(micros: Self.micros(199, plus: -500_000)) }
        #expect(rig.gaps().isEmpty)
        #expect(rig.tap.clockResets >= 2)
        #expect(rig.counterUnbroken())
    }

    @Test("odd clocks never trap: 0 (no clock), values past Int64, a jump of 2^62 µs, a gap log that fills")
    func oddValues() {
        let rig = ClockRig(capacityFrames: 100 * Self.period)
        rig.cycle(micros: 0)
        rig.cycle(micros: UInt64.max)
        rig.cycle(micros: 1 << 63)
        #expect(rig.tap.clockStamp == nil, "no clock, no stamp")
        rig.cycle(micros: 1_000)
        rig.cycle(micros: 1 << 62)
        let gaps = rig.gaps()
        #expect(gaps.count == 1 && gaps[0].length > 0, "\(gaps)")
        // More stalls than the log holds, none drained: they merge, frames are dropped, counted.
        var now: UInt64 = 1 << 62
        for _ in 0..<200 {
            now += 1_000_000
            rig.cycle(micros: now)
        }
        #expect(rig.tap.stalls > 64)
        #expect(rig.gaps().count <= 64)
    }
}

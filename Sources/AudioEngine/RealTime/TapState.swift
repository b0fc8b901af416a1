// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// A capture tap's real-time half. The control thread allocates it (CaptureTap owns it) and frees it
// only after the process thread has moved past every snapshot that names it. The consumer
// (archiver) drains `ring` and `gaps`.

import Synchronization

/// One recorder's capture point: which input channels it copies, the ring they go to, and
/// the bookkeeping that makes an overflow a recorded gap instead of a torn frame, and a stall
/// of JACK's clock a recorded gap of the wall-clock time that passed without frames.
struct TapState: ~Copyable {
    let ring: FloatRing
    let gaps: GapLog
    /// Flat input channel of each tap channel.
    let inputChannels: UnsafeMutablePointer<Int>
    /// JACK's sample rate when the tap was made (0: no clock checks).
    let sampleRate: Int

    /// Control → process: write zeros instead of samples (input muted or not granted).
    let zeroed = Atomic<Bool>(false)

    // Process → readers.
    /// Periods dropped whole because the ring had no room for them.
    let overruns = Atomic<Int>(0)
    /// Frames in those periods.
    let droppedFrames = Atomic<Int>(0)
    /// JACK frame time of the first frame written, plus `TapState.frameTimeKnown`; 0 until then.
    let firstFrameTime = Atomic<UInt64>(0)

    /// Process thread only: a gap not yet in `gaps` (it is logged when the next period is
    /// written, or extended while periods keep being dropped).
    var pendingGap = PendingGap()

    // Process → readers: the clock (see `observeClock`).
    /// Stalls recorded as gaps, and the frames of wall-clock time they stand for.
    let stalls = Atomic<Int>(0)
    let stalledFrames = Atomic<Int>(0)
    /// Times the frames ran ahead of the monotonic clock by more than a period (the clock
    /// measurement started afresh; nothing can be inserted for time that did not pass).
    let clockResets = Atomic<Int>(0)
    /// The latest clock stamp, a sequence lock: odd while the process thread writes it.
    let stampSequence = Atomic<Int>(0)
    /// Timeline frames (delivered, dropped and stalled) before the stamped period.
    let stampFrames = Atomic<Int>(0)
    /// JACK's microsecond clock (monotonic) when the stamped period ran.
    let stampMicros = Atomic<Int>(0)

    /// Process thread only: the clock the frames are measured against (see `observeClock`).
    var clock = ClockState()
    /// Process thread only: a stall gap was logged and the catch-up after it not yet measured
    /// (see `settleStall`).
    var settling = SettlingStall()
    /// Process thread only: a `catchUp` verdict the full log refused, pushed again on the next
    /// cycle.
    var verdict = PendingVerdict()

    static var frameTimeKnown: UInt64 { 1 << 32 }
    /// The smallest lateness taken as a stall, whatever the period (a 1024-frame period at
    /// 48 kHz is above it): with short periods on a server without real-time priority, a
    /// wake-up that came late is not lost time. Smaller jumps count into the drift.
    static var minimumStallMicros: Int64 { 20_000 }
    /// The baseline follows the lateness by 1/`baselineDivisor` a period.
    static var baselineDivisor: Int64 { 64 }

    init(ring: FloatRing, gaps: GapLog, inputChannels: UnsafeMutablePointer<Int>, sampleRate: Int = 0) {
        self.ring = ring
        self.gaps = gaps
        self.inputChannels = inputChannels
        self.sampleRate = sampleRate
    }
}

// The process thread's plain state, grouped by what it is about. Stored inline in `TapState`
// (no allocation, no indirection); none holds an atomic.
extension TapState {
    /// A gap not yet in the log: where it starts, how long it is, the JACK frame time of the
    /// period that found it, and its cause.
    struct PendingGap {
        var position = 0
        /// 0: no gap is pending.
        var length = 0
        var frameTime: UInt32 = 0
        /// A clock stall (else an overrun).
        var isStall = false
        /// The stall gets a `catchUp` verdict (`CaptureGap.awaitsVerdict`).
        var awaitsVerdict = false

        /// The gap as the log records it.
        var logged: CaptureGap {
            CaptureGap(
                position: position, length: length, frameTime: frameTime, cause: isStall ? .clockStall : .overrun,
                awaitsVerdict: isStall && awaitsVerdict)
        }
    }

    /// The period's frames should arrive at `origin + frames / sampleRate` seconds; how late
    /// they are, less the slowly followed `baseline` (drift and scheduling), is a stall when it
    /// exceeds a period AND came in one pause between two callbacks (`previousCycleMicros`)
    /// longer than JACK's own length of the previous cycle (`cycleLengthMicros`).
    struct ClockState {
        var origin: Int64 = 0
        var frames: Int64 = 0
        var baseline: Int64 = 0
        /// Timeline frames (delivered, dropped and stalled) so far: what the stamp publishes.
        var timelineFrames = 0
        /// JACK's microsecond clock at the previous callback (0: none yet).
        var previousCycleMicros: Int64 = 0
        /// The previous cycle's length: JACK's (`jack_get_cycle_times`: next_usecs less
        /// current_usecs), or its frames at the nominal rate when JACK gave none or one off by
        /// more than a factor of two (jackd2's DLL after a stall).
        var cycleLengthMicros: Int64 = 0
    }

    /// The stall gap whose catch-up is being measured: its position and length.
    struct SettlingStall {
        var active = false
        var position = 0
        var length: Int64 = 0
    }

    /// A `catchUp` verdict waiting for room in the log.
    struct PendingVerdict {
        var pending = false
        var position = 0
        var length = 0
    }
}

extension TapState {
    /// Process thread, once per cycle before `capture`: records the time in which no cycle ran
    /// as a `clockStall` gap before this period's frames, so a recording's start plus a frame's
    /// offset stays that frame's time, and publishes the clock stamp the drift is measured from.
    ///
    /// The rule (docs/protocol.md, "Time stays true"): only time in which the graph ran no cycle
    /// is a gap; a graph that runs steadily slow or fast stays continuous and its drift is
    /// reported (CLOCK_DRIFT_PPM, from the stamps). A gap needs both: the frames are late
    /// against JACK's microsecond clock (`nowMicros`) by more than a period (and 20 ms) above a
    /// slowly followed baseline, AND the pause since the previous callback was longer than
    /// JACK's own length of the previous cycle (`cycleStart`/`cycleNext` of that call:
    /// current_usecs and next_usecs of `jack_get_cycle_times`) by as much; the lateness is the
    /// gap. A graph 1 % slow is late a little more every cycle but never pauses: it is drift.
    /// Frames early by more than a period (a server whose clock jumped ahead) start the
    /// measurement afresh; but early frames right after a stall gap, in callbacks back to
    /// back, are the server running the cycles it missed: they shorten the gap
    /// (`settleStall`). `nowMicros` 0 (a test without a server) skips the check; cycle
    /// times 0 (none from JACK): the nominal length. Never traps.
    @_noLocks
    mutating func observeClock(
        frames: Int, frameTime: UInt32, nowMicros: UInt64, cycleStart: Int64 = 0, cycleNext: Int64 = 0
    ) {
        let now = Int64(truncatingIfNeeded: nowMicros)
        guard now > 0, sampleRate > 0, frames > 0 else { return }
        let rate = Int64(sampleRate)
        let nominal = Int64(frames) &* 1_000_000 / rate
        observeOwnClock(now: now, frames: frames, frameTime: frameTime)
        clock.previousCycleMicros = now
        // JACK's length when plausible: jackd2's DLL reads far off for seconds after a stall.
        let length = cycleNext &- cycleStart
        clock.cycleLengthMicros = cycleStart > 0 && length > nominal / 2 && length < nominal &* 2 ? length : nominal
        stampSequence.add(1, ordering: .sequentiallyConsistent)
        stampFrames.store(clock.timelineFrames, ordering: .sequentiallyConsistent)
        stampMicros.store(Int(now), ordering: .sequentiallyConsistent)
        stampSequence.add(1, ordering: .sequentiallyConsistent)
        clock.frames &+= Int64(frames)
        clock.timelineFrames &+= frames
        // Keep the products small: move whole seconds from the frames into the origin.
        if clock.frames >= rate &* 60 {
            let seconds = clock.frames / rate
            clock.origin &+= seconds &* 1_000_000
            clock.frames &-= seconds &* rate
        }
    }

    /// Process thread: `micros` of time without a cycle become a `clockStall` gap before the
    /// next frame written.
    @_noLocks
    private mutating func noteStall(micros: Int64, frameTime: UInt32) {
        let (scaled, overflow) = micros.multipliedReportingOverflow(by: Int64(sampleRate))
        let missing = overflow ? Int64(Int32.max) : scaled / 1_000_000
        guard missing > 0 else { return }
        noteGap(length: Int(missing), frameTime: frameTime, isStall: true)
        if pendingGap.isStall {
            settling = SettlingStall(active: true, position: pendingGap.position, length: missing)
            pendingGap.awaitsVerdict = true
        }
        clock.frames &+= missing
        clock.timelineFrames &+= Int(missing)
        stalls.add(1, ordering: .relaxed)
        stalledFrames.add(Int(missing), ordering: .relaxed)
    }

    /// Process thread: the lateness and the pause (see `observeClock`).
    @_noLocks
    private mutating func observeOwnClock(now: Int64, frames: Int, frameTime: UInt32) {
        let rate = Int64(sampleRate)
        guard clock.origin != 0 else {
            clock.origin = now
            clock.frames = 0
            clock.baseline = 0
            return
        }
        let nominal = Int64(frames) &* 1_000_000 / rate
        let threshold = max(nominal, Self.minimumStallMicros)
        if verdict.pending { pushVerdict() }
        if settling.active && !settleStall(now: now, nominal: nominal, threshold: threshold) { return }
        let expected = clock.origin &+ clock.frames &* 1_000_000 / rate
        let excess = (now &- expected) &- clock.baseline
        // The lateness must have come at once: a graph a little slow every cycle never pauses.
        let pause =
            clock.previousCycleMicros > 0 ? (now &- clock.previousCycleMicros) &- clock.cycleLengthMicros : Int64.max
        if excess > threshold && pause > threshold {
            // All the lateness: what the baseline had not yet followed was lost time too.
            noteStall(micros: excess, frameTime: frameTime)
        } else if excess < -threshold {
            clockResets.add(1, ordering: .relaxed)
            clock.origin = now
            clock.frames = 0
            clock.baseline = 0
        } else {
            clock.baseline &+= excess / Self.baselineDivisor
        }
    }

    /// Process thread, on each cycle after a stall gap until it returns true: tells catch-up
    /// from a real gap (docs/protocol.md, "Time stays true"). While the callbacks come back to
    /// back (less than half a period apart) the server is running the cycles it missed: their
    /// frames stand for the stall's time, and nothing is judged (false). At the first callback
    /// at its pace, or once the frames ran ahead by the whole stall, how far they are ahead of
    /// the clock is the catch-up: the stall gap shrinks by that much (the `catchUp` verdict
    /// the consumer waits for; 0 when none came early, as on jackd) and the clock goes on.
    @_noLocks
    private mutating func settleStall(now: Int64, nominal: Int64, threshold: Int64) -> Bool {
        let rate = Int64(sampleRate)
        let expected = clock.origin &+ clock.frames &* 1_000_000 / rate
        let ahead = expected &- (now &- clock.baseline)
        let aheadFrames = ahead > 0 ? ahead &* rate / 1_000_000 : 0
        let backToBack = now &- clock.previousCycleMicros < nominal / 2
        // The verdict follows its gap in the log: not while the gap itself waits for room (a
        // later overrun gap waiting does not hold it: the consumer reads again after it).
        if backToBack && aheadFrames < settling.length { return false }
        settling.active = false
        if pendingGap.length > 0 && pendingGap.isStall && pendingGap.position == settling.position {
            // The gap itself still waits for room in the ring or the log: it will be logged as
            // it is, and nobody waits for a verdict on it.
            pendingGap.awaitsVerdict = false
            return true
        }
        let caughtUp = ahead > threshold ? min(aheadFrames, settling.length) : 0
        clock.frames &-= caughtUp
        clock.timelineFrames &-= Int(caughtUp)
        stalledFrames.subtract(Int(caughtUp), ordering: .relaxed)
        verdict.position = settling.position
        verdict.length = Int(caughtUp)
        pushVerdict()
        return true
    }

    /// Process thread: logs the pending `catchUp` verdict, or keeps it for the next cycle.
    @_noLocks
    private mutating func pushVerdict() {
        let logged = CaptureGap(position: verdict.position, length: verdict.length, frameTime: 0, cause: .catchUp)
        verdict.pending = !gaps.push(logged)
    }

    /// Process thread: `length` frames are missing before the next frame written (a clock
    /// stall when `isStall`, else an overrun). A pending gap of the other cause (at the same
    /// place: no frame was written since) is logged first when the log has room; else the two
    /// are one gap, of the pending one's cause.
    @_noLocks
    mutating func noteGap(length: Int, frameTime: UInt32, isStall: Bool) {
        guard length > 0 else { return }
        if pendingGap.length > 0 && pendingGap.isStall != isStall {
            if gaps.push(pendingGap.logged) { pendingGap.length = 0 }
        }
        if pendingGap.length == 0 {
            pendingGap = PendingGap(position: ring.framesWritten(), frameTime: frameTime, isStall: isStall)
        }
        pendingGap.length &+= length
    }
}

extension TapState {
    /// Process thread: copies one period of the tap's input channels into the ring, whole, or
    /// drops it whole and records the gap.
    @_noLocks
    mutating func capture(
        frames: Int, frameTime: UInt32, inputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    ) {
        let position = ring.framesWritten()
        // A pending gap must be logged before any frame after it, or the consumer would read
        // past the gap without knowing; if the log is full the period is dropped too.
        var room = ring.writableFrames() >= frames
        if room && pendingGap.length > 0 {
            if gaps.push(pendingGap.logged) {
                pendingGap.length = 0
            } else {
                room = false
            }
        }
        if !room {
            if pendingGap.length == 0 {
                pendingGap = PendingGap(position: position, frameTime: frameTime, isStall: false)
            }
            pendingGap.length += frames
            overruns.add(1, ordering: .relaxed)
            droppedFrames.add(frames, ordering: .relaxed)
            return
        }

        if firstFrameTime.load(ordering: .relaxed) == 0 {
            firstFrameTime.store(UInt64(frameTime) | Self.frameTimeKnown, ordering: .relaxed)
        }
        let start = position % ring.capacityFrames
        let firstRun = min(frames, ring.capacityFrames - start)
        let silent = zeroed.load(ordering: .relaxed)
        // Planar: each channel's period is one run (two across the wrap), copied as JACK's port
        // buffer holds it; the archiver encodes it in place.
        for channel in 0..<ring.channels {
            let run = ring.channel(channel)
            if silent {
                clearSamples(run + start, count: firstRun)
                if firstRun < frames { clearSamples(run, count: frames - firstRun) }
                continue
            }
            let source = UnsafePointer(inputs[inputChannels[channel]])
            copySamples(from: source, to: run + start, count: firstRun)
            if firstRun < frames { copySamples(from: source + firstRun, to: run, count: frames - firstRun) }
        }
        ring.commitWrite(frames: frames)
    }
}

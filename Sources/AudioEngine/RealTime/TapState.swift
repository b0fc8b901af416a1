// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// A capture tap's real-time half. The control thread allocates it (CaptureTap owns it) and frees it
// only after the process thread has moved past every snapshot that names it. The consumer
// (archiver) drains `ring` and `gaps`.

import Synchronization

/// One recorder's capture point: which input channels it copies, the ring they go to, and
/// the bookkeeping that makes an overflow a recorded gap instead of a torn frame.
struct TapState: ~Copyable {
    let ring: FloatRing
    let gaps: GapLog
    /// Flat input channel of each tap channel.
    let inputChannels: UnsafeMutablePointer<Int>

    /// Control → process: write zeros instead of samples (input muted or not granted).
    let zeroed = Atomic<Bool>(false)

    // Process → readers.
    /// Periods dropped whole because the ring had no room for them.
    let overruns = Atomic<Int>(0)
    /// Frames in those periods.
    let droppedFrames = Atomic<Int>(0)
    /// JACK frame time of the first frame written, plus `TapState.frameTimeKnown`; 0 until then.
    let firstFrameTime = Atomic<UInt64>(0)

    // Process thread only: a gap not yet in `gaps` (it is logged when the next period is
    // written, or extended while periods keep being dropped).
    var pendingGapPosition = 0
    var pendingGapLength = 0
    var pendingGapFrameTime: UInt32 = 0

    static var frameTimeKnown: UInt64 { 1 << 32 }

    init(ring: FloatRing, gaps: GapLog, inputChannels: UnsafeMutablePointer<Int>) {
        self.ring = ring
        self.gaps = gaps
        self.inputChannels = inputChannels
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
        if room && pendingGapLength > 0 {
            let gap = CaptureGap(
                position: pendingGapPosition, length: pendingGapLength,
                frameTime: pendingGapFrameTime)
            if gaps.push(gap) {
                pendingGapLength = 0
            } else {
                room = false
            }
        }
        if !room {
            if pendingGapLength == 0 {
                pendingGapPosition = position
                pendingGapFrameTime = frameTime
            }
            pendingGapLength += frames
            overruns.add(1, ordering: .relaxed)
            droppedFrames.add(frames, ordering: .relaxed)
            return
        }

        if firstFrameTime.load(ordering: .relaxed) == 0 {
            firstFrameTime.store(UInt64(frameTime) | Self.frameTimeKnown, ordering: .relaxed)
        }
        let channels = ring.channels
        let start = position % ring.capacityFrames
        let firstRun = min(frames, ring.capacityFrames - start)
        let silent = zeroed.load(ordering: .relaxed)
        store(
            into: ring.samples + start * channels, frames: firstRun, from: inputs,
            inputOffset: 0, silent: silent)
        if firstRun < frames {
            store(
                into: ring.samples, frames: frames - firstRun, from: inputs,
                inputOffset: firstRun, silent: silent)
        }
        ring.commitWrite(frames: frames)
    }

    /// Interleaves `frames` frames of the tap's input channels into `destination`.
    @_noLocks
    private func store(
        into destination: UnsafeMutablePointer<Float>, frames: Int,
        from inputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, inputOffset: Int,
        silent: Bool
    ) {
        let channels = ring.channels
        if silent {
            clearSamples(destination, count: frames * channels)
            return
        }
        // Pointer steps, not `frame * channels + channel`: the overflow checks of the index
        // arithmetic made this loop four times slower.
        for channel in 0..<channels {
            let source = inputs[inputChannels[channel]] + inputOffset
            var target = destination + channel
            for frame in 0..<frames {
                target.pointee = source[frame]
                target += channels
            }
        }
    }
}

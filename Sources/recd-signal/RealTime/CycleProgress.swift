// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// Progress shared by the process thread (writer) and the main thread (reader).

import Synchronization

/// How far `play` or `capture` has got, in plain memory inside their process state.
struct CycleProgress: ~Copyable {
    /// Set by the main thread once the ports are connected (just before `ready`); the
    /// process thread starts playing/capturing at the next cycle, so frame 0 follows `ready`.
    let armed = Atomic<Bool>(false)
    /// Set by the process thread once `frameLimit` frames have gone through.
    let finished = Atomic<Bool>(false)
    /// Frames played or captured (dropped ones included). Written by the process thread only.
    let frames = Atomic<Int>(0)
    /// JACK frame time of frame 0; -1 until then.
    let firstFrameTime = Atomic<Int>(-1)

    /// Process thread: this cycle's share of the frame budget, noting the first frame's
    /// time (`cycleStart`: the JACK frame time of this cycle's first frame). Returns how many
    /// of the cycle's frames to play or capture.
    @_noLocks
    func claim(frames cycleFrames: Int, limit: Int, cycleStart: UInt32) -> Int {
        let done = frames.load(ordering: .relaxed)
        if done == 0 && firstFrameTime.load(ordering: .relaxed) < 0 {
            firstFrameTime.store(Int(cycleStart), ordering: .releasing)
        }
        return min(cycleFrames, limit - done)
    }

    /// Process thread: `count` more frames have gone through.
    @_noLocks
    func advance(by count: Int, limit: Int) {
        let total = frames.load(ordering: .relaxed) + count
        frames.store(total, ordering: .releasing)
        if total >= limit { finished.store(true, ordering: .releasing) }
    }
}

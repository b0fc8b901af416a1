// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// The process thread pushes; the tap's consumer (the archiver) pops. Allocation and freeing
// are the control thread's.

import Synchronization

/// A small single-producer/single-consumer log of capture gaps, in plain memory.
struct GapLog {
    let entries: UnsafeMutablePointer<CaptureGap>
    /// Index 0: records pushed; index 8: records popped (a cache line apart).
    let counters: UnsafeMutablePointer<Atomic<Int>>
    let capacity: Int

    private static var counterSlots: Int { 16 }
    private static var poppedIndex: Int { 8 }

    /// Control thread.
    static func allocate(capacity: Int) -> GapLog {
        let entries = UnsafeMutablePointer<CaptureGap>.allocate(capacity: capacity)
        entries.initialize(
            repeating: CaptureGap(position: 0, length: 0, frameTime: 0), count: capacity)
        let counters = UnsafeMutablePointer<Atomic<Int>>.allocate(capacity: counterSlots)
        for slot in 0..<counterSlots { (counters + slot).initialize(to: Atomic(0)) }
        return GapLog(entries: entries, counters: counters, capacity: capacity)
    }

    /// Control thread, once neither side can use the log.
    func deallocate() {
        entries.deinitialize(count: capacity)
        entries.deallocate()
        counters.deinitialize(count: Self.counterSlots)
        counters.deallocate()
    }

    /// Process thread: appends `gap`; false when the log is full.
    @_noLocks
    func push(_ gap: CaptureGap) -> Bool {
        let pushed = counters[0].load(ordering: .relaxed)
        let popped = counters[Self.poppedIndex].load(ordering: .acquiring)
        if pushed - popped >= capacity { return false }
        entries[pushed % capacity] = gap
        counters[0].store(pushed + 1, ordering: .releasing)
        return true
    }

    /// Consumer thread: the oldest record not yet popped, if any.
    @_noLocks
    func pop() -> CaptureGap? {
        let popped = counters[Self.poppedIndex].load(ordering: .relaxed)
        let pushed = counters[0].load(ordering: .acquiring)
        if popped == pushed { return nil }
        let gap = entries[popped % capacity]
        counters[Self.poppedIndex].store(popped + 1, ordering: .releasing)
        return gap
    }
}

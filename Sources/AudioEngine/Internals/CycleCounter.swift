// The process thread's count of finished cycles, in memory that outlives the engine's
// real-time state: a removed capture tap keeps it to learn when no cycle can write it any more.

import Synchronization

/// Cycles the process thread has finished (`runCycle` adds one at its end). The process thread
/// touches only `pointer`; the class owns that memory and frees it when the last holder (the
/// engine's memory, or a retired tap) lets go.
///
/// Threads: the process thread adds; any thread reads; the control thread `stop`s it once the
/// JACK client is closed.
final class CycleCounter: @unchecked Sendable {
    // @unchecked: the only state is the atomic behind `pointer`.
    let pointer: UnsafeMutablePointer<Atomic<UInt64>>

    /// Read after the process thread can run no more cycles: every mark has passed.
    static var stopped: UInt64 { .max }

    init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: Atomic(0))
    }

    deinit {
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }

    var value: UInt64 { pointer.pointee.load(ordering: .sequentiallyConsistent) }

    /// Control thread, after jack_deactivate or jack_client_close: no cycle runs any more.
    func stop() { pointer.pointee.store(Self.stopped, ordering: .sequentiallyConsistent) }

    /// The mark for something just taken out of the graph: read right after the snapshot swap,
    /// so once the count has moved past it no cycle can still hold the old snapshot (cycles run
    /// one at a time on one thread). A cycle under way at the swap finishes and counts, so the
    /// wait is at most one period longer than needed, whatever the period.
    func markNow() -> RetirementMark { RetirementMark(counter: self, mark: value) }
}

/// When something the process thread wrote (a capture tap) was taken out of the graph, in cycles.
struct RetirementMark: Sendable {
    let counter: CycleCounter
    let mark: UInt64

    /// True once no cycle can write it: the process thread finished a cycle that began after
    /// the swap, or runs no more cycles.
    var hasPassed: Bool {
        let now = counter.value
        return now == CycleCounter.stopped || now > mark
    }
}

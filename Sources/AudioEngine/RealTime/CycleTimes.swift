// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// How late each of recd's cycles starts and how long it runs, as histograms the process thread
// keeps and any thread reads: what tells an xrun that recd's own work caused (a long cycle)
// from one the scheduler caused (a cycle woken late: upstream clients, the kernel, a virtual
// machine's host). The process thread is the only writer, so it updates with plain loads and
// stores of the atomics (no read-modify-write, no bus lock); readers see each cell whole.

import Synchronization

/// The cells' layout: two histograms of `bucketCount` buckets (start delay, then duration),
/// then the maxima, the late and overlong cycles, the cycle count and the sums. Microseconds throughout.
enum CycleTimeLayout {
    // Computed, not stored: a stored static is initialised lazily (swift_once), which the
    // process thread must not reach.
    /// Upper bounds of the buckets but the last: 25 µs · 2^k, k = 0...10 (25 µs to 25.6 ms);
    /// the last bucket holds everything longer.
    static var finiteBuckets: Int { 11 }
    static var bucketCount: Int { finiteBuckets + 1 }
    static var firstBoundMicros: UInt64 { 25 }
    static var startDelay: Int { 0 }
    static var duration: Int { bucketCount }
    static var maxStartDelay: Int { 2 * bucketCount }
    static var maxDuration: Int { maxStartDelay + 1 }
    static var late: Int { maxDuration + 1 }
    static var overlong: Int { late + 1 }
    static var cycles: Int { overlong + 1 }
    static var startDelaySum: Int { cycles + 1 }
    static var durationSum: Int { startDelaySum + 1 }
    static var cellCount: Int { durationSum + 1 }

    /// The bucket `micros` falls in: the first whose bound is ≥ it (Prometheus's `le`).
    @inline(__always)
    static func bucket(_ micros: UInt64) -> Int {
        // micros ≤ 25·2^k ⟺ ⌈micros/25⌉ ≤ 2^k.
        let units = micros / firstBoundMicros + (micros % firstBoundMicros == 0 ? 0 : 1)
        guard units > 1 else { return 0 }
        return min(64 - (units &- 1).leadingZeroBitCount, finiteBuckets)
    }

    /// Upper bound of bucket `index` in µs; nil for the last (+Inf).
    static func bound(_ index: Int) -> UInt64? {
        index < finiteBuckets ? firstBoundMicros << UInt64(index) : nil
    }
}

/// Counts one cycle: `startDelay` from JACK's start of the cycle to the callback's entry,
/// `duration` from entry to the end of recd's work, `late` when the work ended after the next
/// cycle's start (JACK counts that period as an xrun of this client), `overlong` when the work
/// alone took longer than the period (late even had it started on time).
@_noLocks
@inline(__always)
func recordCycleTime(
    _ cells: UnsafeMutablePointer<Atomic<UInt64>>, startDelay: UInt64, duration: UInt64, late: Bool,
    overlong: Bool = false
) {
    bumpCell(cells, CycleTimeLayout.startDelay + CycleTimeLayout.bucket(startDelay))
    bumpCell(cells, CycleTimeLayout.duration + CycleTimeLayout.bucket(duration))
    raiseCell(cells, CycleTimeLayout.maxStartDelay, to: startDelay)
    raiseCell(cells, CycleTimeLayout.maxDuration, to: duration)
    if late { bumpCell(cells, CycleTimeLayout.late) }
    if overlong { bumpCell(cells, CycleTimeLayout.overlong) }
    bumpCell(cells, CycleTimeLayout.startDelaySum, by: startDelay)
    bumpCell(cells, CycleTimeLayout.durationSum, by: duration)
    bumpCell(cells, CycleTimeLayout.cycles)
}

/// Adds to a cell that only the process thread writes.
@_noLocks
@inline(__always)
private func bumpCell(_ cells: UnsafeMutablePointer<Atomic<UInt64>>, _ index: Int, by amount: UInt64 = 1) {
    cells[index].store(cells[index].load(ordering: .relaxed) &+ amount, ordering: .relaxed)
}

/// Raises a maximum that only the process thread writes.
@_noLocks
@inline(__always)
private func raiseCell(_ cells: UnsafeMutablePointer<Atomic<UInt64>>, _ index: Int, to value: UInt64) {
    if value > cells[index].load(ordering: .relaxed) { cells[index].store(value, ordering: .relaxed) }
}

// The control thread's side of the process thread's cycle times (RealTime/CycleTimes.swift):
// the memory, and reading it.

import Synchronization

/// Owns the cells `recordCycleTime` writes. Made with the engine's real-time memory and freed
/// with it; the process thread touches only `pointer`, any thread reads `report`.
final class CycleTimeCells: @unchecked Sendable {
    // @unchecked: the only state is the atomics behind `pointer`.
    let pointer: UnsafeMutablePointer<Atomic<UInt64>>

    init() {
        pointer = .allocate(capacity: CycleTimeLayout.cellCount)
        for index in 0..<CycleTimeLayout.cellCount { (pointer + index).initialize(to: Atomic(0)) }
    }

    deinit {
        pointer.deinitialize(count: CycleTimeLayout.cellCount)
        pointer.deallocate()
    }

    /// What the cells hold now. Each cell is read whole; a cycle counted while this reads may
    /// be in some cells and not yet in others.
    var report: CycleTimeReport {
        func cell(_ index: Int) -> UInt64 { pointer[index].load(ordering: .relaxed) }
        let buckets = 0..<CycleTimeLayout.bucketCount
        return CycleTimeReport(
            boundsMicros: (0..<CycleTimeLayout.finiteBuckets).compactMap(CycleTimeLayout.bound),
            startDelayCounts: buckets.map { cell(CycleTimeLayout.startDelay + $0) },
            durationCounts: buckets.map { cell(CycleTimeLayout.duration + $0) },
            maxStartDelayMicros: cell(CycleTimeLayout.maxStartDelay),
            maxDurationMicros: cell(CycleTimeLayout.maxDuration), lateCycles: cell(CycleTimeLayout.late),
            overlongCycles: cell(CycleTimeLayout.overlong),
            cycles: cell(CycleTimeLayout.cycles), startDelayMicrosTotal: cell(CycleTimeLayout.startDelaySum),
            durationMicrosTotal: cell(CycleTimeLayout.durationSum))
    }
}

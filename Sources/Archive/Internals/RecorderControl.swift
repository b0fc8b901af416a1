// The lock-protected state the recorder's control thread shares with its archiver thread.

import Platform
import Synchronization

/// What the control thread and the archiver thread share: the stop request, the event queue
/// and the set of open files. Every access takes the mutex; nothing blocks while holding it.
final class RecorderControl: Sendable {
    private struct State {
        var stopReason: EndReason?
        var stopComments: [VorbisComment] = []
        var events: [RecorderEvent] = []
        var openPaths: Set<String> = []
        var running = false
        var open: [OpenSegment] = []
        /// Finished segments posted and not yet drained (the drainer indexes them).
        var unindexed: [SegmentRecord] = []
        var momentaryLUFS: Double?
        var shortTermLUFS: Double?
    }

    private let state = Mutex(State())
    private let wake: @Sendable () -> Void
    /// Signalled by `requestStop`, never drained: the archiver's wait between reads ends at
    /// once when a stop comes, and every later wait returns at once. Nil if the eventfd could
    /// not be made (out of descriptors): the archiver then sleeps its whole interval.
    private let stopEvent: Int32?

    init(wake: @escaping @Sendable () -> Void) {
        self.wake = wake
        stopEvent = try? EventFD.make()
    }

    deinit { if let stopEvent { Descriptor.close(stopEvent) } }

    var stopReason: EndReason? { state.withLock { $0.stopReason } }
    /// The comments the stop asked for beside END_REASON (empty until a stop is requested).
    var stopComments: [VorbisComment] { state.withLock { $0.stopComments } }

    func requestStop(_ reason: EndReason, comments: [VorbisComment] = []) {
        state.withLock {
            if $0.stopReason == nil {
                $0.stopReason = reason
                $0.stopComments = comments
            }
        }
        if let stopEvent { EventFD.signal(stopEvent) }
    }

    /// Archiver thread: waits up to `seconds`, less if a stop is (or was already) requested.
    func waitForStop(seconds: Double) {
        guard let stopEvent else {
            SystemClock.sleep(seconds: seconds)
            return
        }
        var entries = [PollEntry(descriptor: stopEvent, events: .readable)]
        _ = try? Descriptor.poll(&entries, timeoutMilliseconds: Int32((seconds * 1000).rounded(.up)))
    }

    func post(_ event: RecorderEvent) {
        state.withLock { state in
            state.events.append(event)
            if case .segmentFinished(let record) = event { state.unindexed.append(record) }
        }
        wake()
    }

    func drainEvents() -> [RecorderEvent] {
        state.withLock {
            let events = $0.events
            $0.events.removeAll()
            $0.unindexed.removeAll()
            return events
        }
    }

    /// The archiver publishes its open segments as they grow; a segment leaves with `closed`,
    /// after its `segmentFinished` was posted, so a snapshot never misses it.
    func publishOpen(_ segments: [OpenSegment]) { state.withLock { $0.open = segments } }
    var snapshot: RecorderSnapshot { state.withLock { RecorderSnapshot(open: $0.open, unindexed: $0.unindexed) } }

    var openPaths: Set<String> { state.withLock { $0.openPaths } }

    func opened(_ paths: [String]) { state.withLock { $0.openPaths.formUnion(paths) } }
    func closed(_ paths: [String]) {
        state.withLock { state in
            state.openPaths.subtract(paths)
            state.open.removeAll { paths.contains($0.partialPath) }
        }
    }

    /// The archiver publishes the live loudness of what it writes; anyone reads it.
    var loudness: (momentaryLUFS: Double?, shortTermLUFS: Double?) {
        state.withLock { ($0.momentaryLUFS, $0.shortTermLUFS) }
    }
    func publishLoudness(momentary: Double?, shortTerm: Double?) {
        state.withLock {
            $0.momentaryLUFS = momentary
            $0.shortTermLUFS = shortTerm
        }
    }

    var isRunning: Bool { state.withLock { $0.running } }
    func setRunning(_ running: Bool) { state.withLock { $0.running = running } }
}

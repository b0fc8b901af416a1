// The lock-protected state the recorder's control thread shares with its archiver thread.

import Synchronization

/// What the control thread and the archiver thread share: the stop request, the event queue
/// and the set of open files. Every access takes the mutex; nothing blocks while holding it.
final class RecorderControl: Sendable {
    private struct State {
        var stopReason: EndReason?
        var events: [RecorderEvent] = []
        var openPaths: Set<String> = []
        var running = false
        var momentaryLUFS: Double?
        var shortTermLUFS: Double?
    }

    private let state = Mutex(State())
    private let wake: @Sendable () -> Void

    init(wake: @escaping @Sendable () -> Void) { self.wake = wake }

    var stopReason: EndReason? { state.withLock { $0.stopReason } }

    func requestStop(_ reason: EndReason) {
        state.withLock { if $0.stopReason == nil { $0.stopReason = reason } }
    }

    func post(_ event: RecorderEvent) {
        state.withLock { $0.events.append(event) }
        wake()
    }

    func drainEvents() -> [RecorderEvent] {
        state.withLock {
            let events = $0.events
            $0.events.removeAll()
            return events
        }
    }

    var openPaths: Set<String> { state.withLock { $0.openPaths } }

    func opened(_ paths: [String]) { state.withLock { $0.openPaths.formUnion(paths) } }
    func closed(_ paths: [String]) { state.withLock { $0.openPaths.subtract(paths) } }

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

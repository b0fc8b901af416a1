// A device event source driven by a script: tests and simulations push the events that a
// card would report.

import Dispatch
import Platform
import Synchronization

/// Device events from a script: an initial state delivered on `start`, then whatever is
/// `push`ed. Stands in for `ALSAEventSource` in tests and in a simulated box with no sound
/// hardware.
///
/// Threads: `push` may be called from any thread; batches are delivered on the source's own
/// serial queue ("scripted devices"), never on the pushing thread, in the order the `push`
/// calls happened. `drain` waits until every batch pushed so far has been delivered (not from
/// inside `deliver`). Pushes while the source is not running are dropped (`push` returns
/// false), like hardware changes nobody is watching.
public final class ScriptedEventSource: DeviceEventSource, Sendable {
    private struct State {
        var initialState: [DeviceEvent]
        var startError: (any Error & Sendable)?
        var deliver: (@Sendable ([DeviceEvent]) -> Void)?
        /// Bumped on every start and stop, so a batch queued before a stop is not delivered
        /// after it.
        var generation = 0
        /// The queue's thread while it is inside `deliver` (nil: not delivering).
        var deliveringThread: ThreadID?
    }

    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "scripted devices")

    /// `initialState` is the first batch every `start` delivers; with `startError`, `start`
    /// throws it instead (a box whose cards cannot be opened).
    public init(initialState: [DeviceEvent] = [], startError: (any Error & Sendable)? = nil) {
        state = Mutex(State(initialState: initialState, startError: startError))
    }

    /// Replaces the initial state the next `start` delivers (the hardware as it is now).
    public func setInitialState(_ events: [DeviceEvent]) {
        state.withLock { $0.initialState = events }
    }

    /// Makes the next `start` calls throw `error` (nil: succeed).
    public func setStartError(_ error: (any Error & Sendable)?) {
        state.withLock { $0.startError = error }
    }

    public var isRunning: Bool {
        state.withLock { $0.deliver != nil }
    }

    public func start(deliver: @escaping @Sendable ([DeviceEvent]) -> Void) throws {
        try state.withLock { state throws(any Error) in
            precondition(state.deliver == nil, "ScriptedEventSource.start called while it is running; stop it first")
            if let error = state.startError { throw error }
            state.deliver = deliver
            state.generation += 1
            enqueue(state.initialState, generation: state.generation)
        }
    }

    /// Queues `events` as one batch; false when the source is not running (they are dropped).
    @discardableResult
    public func push(_ events: [DeviceEvent]) -> Bool {
        state.withLock { state in
            guard state.deliver != nil else { return false }
            enqueue(events, generation: state.generation)
            return true
        }
    }

    /// Queues one event as a batch of its own.
    @discardableResult
    public func push(_ event: DeviceEvent) -> Bool {
        push([event])
    }

    /// Waits until every batch pushed before this call has been delivered.
    public func drain() {
        precondition(!isDeliveringOnCurrentThread, "ScriptedEventSource.drain called from inside deliver")
        queue.sync {}
    }

    public func stop() {
        let wasRunning = state.withLock { state in
            guard state.deliver != nil else { return false }
            state.deliver = nil
            state.generation += 1
            return true
        }
        // From inside deliver the batch in progress is the last; waiting would deadlock.
        if wasRunning, !isDeliveringOnCurrentThread { queue.sync {} }
    }

    /// Called with the lock held, so batches enter the queue in push order.
    private func enqueue(_ events: [DeviceEvent], generation: Int) {
        queue.async { [self] in
            let deliver: (@Sendable ([DeviceEvent]) -> Void)? = state.withLock { state in
                guard state.generation == generation, let deliver = state.deliver else { return nil }
                state.deliveringThread = ThreadID.current
                return deliver
            }
            guard let deliver else { return }
            deliver(events)
            state.withLock { $0.deliveringThread = nil }
        }
    }

    private var isDeliveringOnCurrentThread: Bool {
        let current = ThreadID.current
        return state.withLock { $0.deliveringThread == current }
    }
}

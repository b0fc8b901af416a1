// Player changes that wait for the connection reconciler. A player's move to an output group is
// published once the reconciler has answered the engine's request for that group's edges (a
// device that has just arrived then hears the move from its first frame); the player's later
// changes (play, pause, gain, another move) wait behind it, so they reach the process thread in
// the order they were made. Other players are not held up.
//
// Threads: the control thread, except `Answers.answer` (the connection worker's thread).
import Synchronization

final class DeferredPlayerChanges {
    typealias Change = () -> Void

    /// The requests the worker has answered, until the control thread takes them.
    final class Answers: Sendable {
        private let done = Mutex<Set<Int>>([])

        /// Worker thread: the pass for `request` is over.
        func answer(_ request: Int) { done.withLock { _ = $0.insert(request) } }

        func take() -> Set<Int> {
            done.withLock { done in
                defer { done = [] }
                return done
            }
        }
    }

    private struct Entry {
        /// The request whose answer this change waits for (nil: only for the ones before it).
        var request: Int?
        var change: Change
    }

    let answers = Answers()
    private var waiting: [ObjectIdentifier: [Entry]] = [:]
    /// Answers taken whose change still waits behind an earlier one of its player.
    private var answered: Set<Int> = []
    private var serial = 0

    /// A new request number; `change` (the move) runs once it is answered, after the player's
    /// changes queued before it.
    func waitForAnswer(_ player: PlayerHandle, _ change: @escaping Change) -> Int {
        serial += 1
        waiting[ObjectIdentifier(player), default: []].append(Entry(request: serial, change: change))
        return serial
    }

    /// Runs `change` now, or after the player's changes that wait.
    func apply(_ player: PlayerHandle, _ change: @escaping Change) {
        let key = ObjectIdentifier(player)
        guard waiting[key] != nil else { return change() }
        waiting[key]?.append(Entry(request: nil, change: change))
    }

    /// Runs, in order, every change whose answer came and the changes behind it that wait for
    /// nothing else.
    func applyAnswered() {
        answered.formUnion(answers.take())
        guard !waiting.isEmpty, !answered.isEmpty else {
            answered = []
            return
        }
        for key in Array(waiting.keys) {
            guard var queue = waiting[key] else { continue }
            while let first = queue.first, first.request.map(answered.contains) ?? true {
                if let request = first.request { answered.remove(request) }
                queue.removeFirst()
                first.change()
            }
            waiting[key] = queue.isEmpty ? nil : queue
        }
        // Answers of forgotten players' requests go too.
        answered.formIntersection(waiting.values.flatMap { $0.compactMap(\.request) })
    }

    /// The player left the graph: what waited for it is dropped.
    func forget(_ player: PlayerHandle) { waiting[ObjectIdentifier(player)] = nil }

    /// The engine stopped: nothing will answer.
    func forgetAll() {
        waiting = [:]
        answered = []
    }
}

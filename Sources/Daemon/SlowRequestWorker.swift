// The worker for slow requests: one named thread that runs, one at a time, the jobs the control
// thread must not wait for, so that the control loop keeps answering and feeding systemd's
// watchdog. Jobs wait in one queue per owner (a uid, or recd itself), served in turn: one job of
// each owner with jobs waiting, then the next round, so that one user's many requests never put
// another user's behind all of them; a uid that is not an administrator may have at most
// `maxQueuedPerUser` waiting. recd has three: "slow worker" (archive verify,
// reindex, export, retention), "state writer" (state.json, `StateWriter`) and "player starter" (a
// played file's header and pre-roll, `PlayerService`).
//
// Threads:
// - `submit`, `clientGone` and `stop`: the control thread.
// - Jobs: the worker thread. A job touches nothing of the control thread's; what it needs it
//   gets in its closure (values) or owns on the worker side (`ArchiveMaintenance`).
// - `WorkerJob.progress` and `WorkerJob.isCancelled`: the worker thread, inside a job.
// - Completions and progress handlers: the control thread, through `deliver`
//   (`ControlServer.post`), in the order the jobs ran (one owner's in the order it submitted
//   them). Those of a client that has gone (`clientGone`), or of a stopped worker, never run.
import Archive
import Dispatch
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

/// Whose turn a worker job waits for.
enum JobOwner: Hashable, Sendable {
    /// recd's own housekeeping (retention, reading PipeWire's nodes, a reindex's follow-up of
    /// its own), and every job of a worker that serves nobody else.
    case daemon
    /// A request of this uid.
    case user(UInt32)
}

/// What a running job may ask of the worker. Worker thread only.
struct WorkerJob: Sendable {
    fileprivate let worker: SlowRequestWorker
    fileprivate let number: UInt64
    fileprivate let onProgress: (@Sendable (Int, Int) -> Void)?

    /// True once nobody wants the result (its client went away, or the worker is stopping):
    /// a long job may end early; whatever it returns is dropped.
    var isCancelled: Bool { !worker.isOutstanding(number) }

    /// Reports `done` of `total` steps; the job's progress handler sees it on the control
    /// thread, before the result (nothing happens for a job without one).
    func progress(done: Int, total: Int) {
        guard let onProgress else { return }
        let number = number
        let worker = worker
        worker.deliver {
            if worker.isOutstanding(number) { onProgress(done, total) }
        }
    }
}

/// A background thread with a queue of jobs, whose results are handed back to the control
/// thread. Owned by the router (the slow worker, the state writer's) and by `PlayerService`
/// (the player starter); `stop` ends the thread.
///
/// A job is outstanding from `submit` until its completion has run on the control thread;
/// `clientGone` withdraws every outstanding job of a client (queued ones never run), `stop`
/// withdraws them all.
///
/// Turns: the next job is the oldest of the owner whose turn it is; owners with jobs waiting
/// take turns in the order their first waiting job came. So a request waits for at most the
/// running job and one job of each other owner with jobs waiting, however many they queued.
final class SlowRequestWorker: Sendable {
    /// Runs a closure on the control thread, soon, in call order (`ControlServer.post`).
    typealias Deliver = @Sendable (@escaping @Sendable () -> Void) -> Void

    /// Most jobs a uid that is not an administrator may have waiting (not counting the one
    /// running): more are refused with isBusy (`submitRequest`).
    static let maxQueuedPerUser = 4

    /// Nice steps below the rest of recd: below the archiver too (`Recorder.archiverNiceIncrement`),
    /// so that checking old recordings never slows the one being written.
    static let niceIncrement: Int32 = Recorder.archiverNiceIncrement + 5

    private struct Job {
        var number: UInt64
        var client: ClientID?
        var progress: (@Sendable (Int, Int) -> Void)?
        var run: @Sendable (WorkerJob) -> Void
    }

    private struct State {
        /// Jobs waiting, per owner, oldest first; no empty queue is kept.
        var queues: [JobOwner: [Job]] = [:]
        /// The owners with jobs waiting, whose turn is next first.
        var turns: [JobOwner] = []
        /// Job numbers not yet completed on the control thread, with the client who asked.
        var outstanding: [UInt64: ClientID?] = [:]
        var lastNumber: UInt64 = 0
        var stopping = false
        var thread: NamedThread?
    }

    fileprivate let deliver: Deliver
    private let state = Mutex(State())
    /// One signal per queued job, and one from `stop`.
    private let wake = DispatchSemaphore(value: 0)

    /// Starts the worker thread, called `name` (`ps -L` shows it).
    init(name: String, deliver: @escaping Deliver) throws(SystemError) {
        self.deliver = deliver
        let thread = try NamedThread(name: name, niceIncrement: Self.niceIncrement) { [self] in runJobs() }
        state.withLock { $0.thread = thread }
    }

    /// Queues `job` for `client` (nil: nobody waits for it) in `owner`'s queue; `completion`
    /// gets its result on the control thread, unless the client has gone by then. `progress`
    /// sees what the job reports with `WorkerJob.progress`. Control thread; returns at once.
    func submit<Result: Sendable>(
        for client: ClientID?, owner: JobOwner = .daemon, _ job: @escaping @Sendable (WorkerJob) -> Result,
        progress: (@Sendable (Int, Int) -> Void)? = nil, completion: @escaping @Sendable (Result) -> Void
    ) {
        _ = enqueue(for: client, owner: owner, limit: nil, job, progress: progress, completion: completion)
    }

    /// `submit` for a request of `uid`: refused with isBusy, before anything is queued, when
    /// the uid is not an administrator and has `maxQueuedPerUser` jobs waiting already.
    func submitRequest<Result: Sendable>(
        for client: ClientID, of uid: UInt32, administrator: Bool, _ job: @escaping @Sendable (WorkerJob) -> Result,
        progress: (@Sendable (Int, Int) -> Void)? = nil, completion: @escaping @Sendable (Result) -> Void
    ) throws(SessionError) {
        let limit = administrator ? nil : Self.maxQueuedPerUser
        guard enqueue(for: client, owner: .user(uid), limit: limit, job, progress: progress, completion: completion)
        else {
            throw SessionError(
                .isBusy,
                "uid \(uid) has \(Self.maxQueuedPerUser) archive requests waiting for recd's worker already, the most "
                    + "one user may; wait for their replies, then ask again")
        }
    }

    private func enqueue<Result: Sendable>(
        for client: ClientID?, owner: JobOwner, limit: Int?, _ job: @escaping @Sendable (WorkerJob) -> Result,
        progress: (@Sendable (Int, Int) -> Void)?, completion: @escaping @Sendable (Result) -> Void
    ) -> Bool {
        let accepted = state.withLock { state -> Bool in
            if let limit, state.queues[owner, default: []].count >= limit { return false }
            // A stopped worker drops the job as it would have dropped its result.
            guard !state.stopping else { return true }
            state.lastNumber += 1
            let number = state.lastNumber
            state.outstanding[number] = .some(client)
            if state.queues[owner] == nil { state.turns.append(owner) }
            state.queues[owner, default: []].append(
                Job(number: number, client: client, progress: progress) { [deliver] context in
                    let result = job(context)
                    deliver { [weak worker = context.worker] in
                        if worker?.complete(number) == true { completion(result) }
                    }
                })
            return true
        }
        if accepted { wake.signal() }
        return accepted
    }

    /// Jobs waiting (not running) in `owner`'s queue. Any thread.
    func queuedJobs(of owner: JobOwner) -> Int {
        state.withLock { $0.queues[owner]?.count ?? 0 }
    }

    /// Forgets `client`'s jobs: queued ones are dropped, a running one is told it is
    /// cancelled, and no result or progress of theirs is delivered. Control thread.
    func clientGone(_ client: ClientID) {
        state.withLock { state in
            for owner in state.turns {
                state.queues[owner]?.removeAll { $0.client == client }
                if state.queues[owner]?.isEmpty == true { state.queues[owner] = nil }
            }
            state.turns.removeAll { state.queues[$0] == nil }
            state.outstanding = state.outstanding.filter { $0.value != client }
        }
    }

    /// Withdraws every job and waits for the thread to end (after the running job returns;
    /// it sees `isCancelled`). Control thread, at shutdown; a stopped worker takes no jobs.
    func stop() {
        let thread = state.withLock { state -> NamedThread? in
            state.stopping = true
            state.queues.removeAll()
            state.turns.removeAll()
            state.outstanding.removeAll()
            defer { state.thread = nil }
            return state.thread
        }
        wake.signal()
        thread?.join()
    }

    /// Whether a job of `client`'s is queued or running, or its result not yet delivered.
    /// Control thread.
    func hasOutstanding(for client: ClientID) -> Bool {
        state.withLock { $0.outstanding.values.contains(client) }
    }

    fileprivate func isOutstanding(_ number: UInt64) -> Bool {
        state.withLock { $0.outstanding[number] != nil }
    }

    /// Control thread: true when the job was still wanted; it is outstanding no more.
    private func complete(_ number: UInt64) -> Bool {
        state.withLock { $0.outstanding.removeValue(forKey: number) != nil }
    }

    /// The oldest job of the owner whose turn it is; that owner's next turn comes after every
    /// other owner's with jobs waiting.
    private static func takeNext(_ state: inout State) -> Job? {
        guard !state.turns.isEmpty else { return nil }
        let owner = state.turns.removeFirst()
        guard var queue = state.queues.removeValue(forKey: owner), !queue.isEmpty else { return nil }
        let job = queue.removeFirst()
        if !queue.isEmpty {
            state.queues[owner] = queue
            state.turns.append(owner)
        }
        return job
    }

    /// The worker thread's loop.
    private func runJobs() {
        while true {
            wake.wait()
            let next = state.withLock { state -> Job?? in
                if state.stopping { return .none }
                return .some(Self.takeNext(&state))
            }
            guard let job = next else { return }
            // A job withdrawn while queued left a signal behind: nothing to run for it.
            guard let job else { continue }
            job.run(WorkerJob(worker: self, number: job.number, onProgress: job.progress))
        }
    }
}

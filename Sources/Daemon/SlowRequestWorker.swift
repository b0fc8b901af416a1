// The worker for slow requests: one named thread that runs, one at a time and in the order
// given, the jobs the control thread must not wait for, so that the control loop keeps
// answering and feeding systemd's watchdog. recd has three: "slow worker" (archive verify,
// reindex, export, retention), "state writer" (state.json, `StateWriter`) and "player starter" (a
// played file's header and pre-roll, `PlayerService`).
//
// Threads:
// - `submit`, `clientGone` and `stop`: the control thread.
// - Jobs: the worker thread. A job touches nothing of the control thread's; what it needs it
//   gets in its closure (values) or owns on the worker side (`ArchiveMaintenance`).
// - `WorkerJob.progress` and `WorkerJob.isCancelled`: the worker thread, inside a job.
// - Completions and progress handlers: the control thread, through `deliver`
//   (`ControlServer.post`), in the order the jobs were submitted. Those of a client that has
//   gone (`clientGone`), or of a stopped worker, never run.
import Archive
import Dispatch
import Platform
import Synchronization
import SystemSupport

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
final class SlowRequestWorker: Sendable {
    /// Runs a closure on the control thread, soon, in call order (`ControlServer.post`).
    typealias Deliver = @Sendable (@escaping @Sendable () -> Void) -> Void

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
        var queue: [Job] = []
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

    /// Queues `job` for `client` (nil: the daemon's own housekeeping); `completion` gets its
    /// result on the control thread, unless the client has gone by then. `progress` sees
    /// what the job reports with `WorkerJob.progress`. Control thread; returns at once.
    func submit<Result: Sendable>(
        for client: ClientID?, _ job: @escaping @Sendable (WorkerJob) -> Result,
        progress: (@Sendable (Int, Int) -> Void)? = nil, completion: @escaping @Sendable (Result) -> Void
    ) {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.lastNumber += 1
            let number = state.lastNumber
            state.outstanding[number] = .some(client)
            state.queue.append(
                Job(number: number, client: client, progress: progress) { [deliver] context in
                    let result = job(context)
                    deliver { [weak worker = context.worker] in
                        if worker?.complete(number) == true { completion(result) }
                    }
                })
            return true
        }
        if accepted { wake.signal() }
    }

    /// Forgets `client`'s jobs: queued ones are dropped, a running one is told it is
    /// cancelled, and no result or progress of theirs is delivered. Control thread.
    func clientGone(_ client: ClientID) {
        state.withLock { state in
            state.queue.removeAll { $0.client == client }
            state.outstanding = state.outstanding.filter { $0.value != client }
        }
    }

    /// Withdraws every job and waits for the thread to end (after the running job returns;
    /// it sees `isCancelled`). Control thread, at shutdown; a stopped worker takes no jobs.
    func stop() {
        let thread = state.withLock { state -> NamedThread? in
            state.stopping = true
            state.queue.removeAll()
            state.outstanding.removeAll()
            defer { state.thread = nil }
            return state.thread
        }
        wake.signal()
        thread?.join()
    }

    fileprivate func isOutstanding(_ number: UInt64) -> Bool {
        state.withLock { $0.outstanding[number] != nil }
    }

    /// Control thread: true when the job was still wanted; it is outstanding no more.
    private func complete(_ number: UInt64) -> Bool {
        state.withLock { $0.outstanding.removeValue(forKey: number) != nil }
    }

    /// The worker thread's loop.
    private func runJobs() {
        while true {
            wake.wait()
            let next = state.withLock { state -> Job?? in
                if state.stopping { return .none }
                return .some(state.queue.isEmpty ? nil : state.queue.removeFirst())
            }
            guard let job = next else { return }
            // A job withdrawn while queued left a signal behind: nothing to run for it.
            guard let job else { continue }
            job.run(WorkerJob(worker: self, number: job.number, onProgress: job.progress))
        }
    }
}

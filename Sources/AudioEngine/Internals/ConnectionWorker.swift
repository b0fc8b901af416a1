// The one writer of recd's JACK connections: it applies the connection reconciler's plans on a
// thread of its own ("jack connection"), so the control thread never waits for JACK: reading a
// port's connections waits for a pending graph change (a period or two), and every connect or
// disconnect is a server round trip. JACK allows these client calls on any thread but the
// process thread. Nothing else in recd connects or disconnects a port (ArchitectureTests check
// it): a caller that needs edges made before it goes on (a player moving to a device that has
// just arrived, an attach) asks with `request`, a pass over those edges under the same rules
// (churn included), and is answered when it is done. The other server requests the control
// thread would wait for (an attachment's port registrations, the unregistrations when it ends)
// run here too, as jobs, in the order given, before the pass.
//
// The thread also keeps the engine's settle recheck: `wake(at:)` has it call the engine's wake
// at a time (40 ms after ports came or went), instead of a short-lived thread of its own.
//
// Threads:
// - `submit`, `request`, `perform`, `wake(at:)`, `runNow`, `stop`, `take…` and `churning`: the
//   control thread (`perform` also from a handle's deinit, which runs there).
// - passes and jobs: the worker thread (or the control thread in `runNow`, and when no
//   thread could be made), one at a time (`tracker` is held for the whole pass).
import Platform
import Synchronization

/// One engine connection's connection worker. Owned by the engine's `Connection`. It makes its
/// thread (`init`), holds it (`thread`) and stops it (`stop()` joins it before the client is
/// closed, so the worker never uses a closed client).
///
/// `@unchecked Sendable`: `client` is used by one pass at a time (under `tracker`) and closed
/// only after `stop()`; everything else is behind a Mutex or set once in `init`.
final class ConnectionWorker: @unchecked Sendable {
    /// What passes did since the control thread last took it.
    struct Report: Sendable {
        /// Port-keeping edges made again after JACK said someone removed them.
        var restored: [JackConnection] = []
        /// Edges cut because they would bypass an attachment (not an ended attachment's own).
        var cut: [JackConnection] = []
        /// Edges newly left alone (rule 3).
        var leftAlone: [ChurningConnection] = []
    }

    /// Server requests other than the reconciler's, run on the worker thread before its next
    /// pass; the job reports its own result (and wakes the control thread if it must).
    typealias Job = @Sendable (JackClient) -> Void

    private struct Shared {
        var pending: ConnectionRules?
        var jobs: [Job] = []
        var stopping = false
        var report = Report()
        /// Edges left alone now, for `status`.
        var churning: [JackConnection] = []
        /// When a pass should run to try a left-alone edge again.
        var nextRetry: Double?
        /// When to call `wake` (monotonic seconds; nil: no wake asked for).
        var wakeAt: Double?
    }

    private let client: JackClient
    private let wake: @Sendable () -> Void
    private let shared = Mutex(Shared())
    private let tracker: Mutex<ChurnTracker>
    /// eventfd the worker waits on (-1: none could be made).
    private let event: Int32
    /// Set once in `init` (nil: no thread; passes run inline).
    private var thread: NamedThread?

    /// Starts the worker thread; without one (no eventfd or thread to be had) every pass
    /// runs on the caller's thread instead, which is slower for the control loop but correct.
    init(client: JackClient, retrySeconds: Double, wake: @escaping @Sendable () -> Void) {
        self.client = client
        self.wake = wake
        tracker = Mutex(ChurnTracker(retrySeconds: retrySeconds))
        event = (try? EventFD.make()) ?? -1
        // The thread holds the worker until `stop` ends it.
        if event >= 0 { thread = try? NamedThread(name: "jack connection") { [self] in run() } }
    }

    deinit {
        if event >= 0 { Descriptor.close(event) }
    }

    /// Hands the worker the rules to apply; newer rules replace older ones not yet applied
    /// (their one-shot parts are kept). Returns at once.
    func submit(_ rules: ConnectionRules) {
        guard thread != nil else {
            pass(rules)
            return
        }
        let accepted = shared.withLock { shared -> Bool in
            guard !shared.stopping else { return false }
            var rules = rules
            if let older = shared.pending {
                rules.forbidden.formUnion(older.forbidden)
                rules.removedByOthers.formUnion(older.removedByOthers)
                rules.registered.formUnion(older.registered)
            }
            shared.pending = rules
            return true
        }
        if accepted { EventFD.signal(event) }
    }

    /// Runs `job` on the worker thread, after the jobs given before it and before the next
    /// pass. Returns at once; without a thread the job runs now, on the caller's. Once the
    /// worker is stopping, jobs are dropped (the client is about to close, which unregisters
    /// its ports, and the engine fails the attachments under way).
    func perform(_ job: @escaping Job) {
        guard thread != nil else {
            job(client)
            return
        }
        let accepted = shared.withLock { shared -> Bool in
            guard !shared.stopping else { return false }
            shared.jobs.append(job)
            return true
        }
        if accepted { EventFD.signal(event) }
    }

    /// Asks for a pass over `rules` (a few edges: a group's, before a player moves to it or an
    /// attachment plays to it) after the jobs and requests given before it; `done` runs on the
    /// worker thread when the pass is over (the edges are made, or refused, or left alone by
    /// rule 3), and must only record that and wake the control thread. The edges are connected
    /// without first reading the graph (that read waits for JACK's pending graph change): an
    /// edge that exists already is "already connected", which changes nothing. Returns at once;
    /// without a thread the pass runs now, on the caller's. Once the worker is stopping,
    /// requests are dropped (`done` is not called: the engine forgets what waited for them).
    func request(_ rules: ConnectionRules, then done: @escaping @Sendable () -> Void) {
        perform { [self] _ in
            pass(rules)
            done()
        }
    }

    /// Calls `wake` at `time` (monotonic seconds) or soon after, once; an earlier time asked
    /// for before it is due wins. Without a thread nothing is called (the caller's periodic
    /// drain does what the wake was for).
    func wake(at time: Double) {
        guard thread != nil else { return }
        let accepted = shared.withLock { shared -> Bool in
            guard !shared.stopping else { return false }
            shared.wakeAt = min(shared.wakeAt ?? time, time)
            return true
        }
        if accepted { EventFD.signal(event) }
    }

    /// Applies `rules` on the calling thread and returns when done (the engine's start: its
    /// groups are connected when `start` returns).
    func runNow(_ rules: ConnectionRules) { pass(rules) }

    /// Ends the thread after the pass under way; nothing is applied afterwards.
    func stop() {
        shared.withLock {
            $0.stopping = true
            $0.pending = nil
            $0.jobs = []
        }
        guard let thread else { return }
        EventFD.signal(event)
        thread.join()
    }

    /// The news since the last call.
    func takeReport() -> Report {
        shared.withLock { shared in
            defer { shared.report = Report() }
            return shared.report
        }
    }

    func takeRestored() -> [JackConnection] {
        shared.withLock { shared in
            defer { shared.report.restored = [] }
            return shared.report.restored
        }
    }

    func takeCut() -> [JackConnection] {
        shared.withLock { shared in
            defer { shared.report.cut = [] }
            return shared.report.cut
        }
    }

    func takeLeftAlone() -> [ChurningConnection] {
        shared.withLock { shared in
            defer { shared.report.leftAlone = [] }
            return shared.report.leftAlone
        }
    }

    /// Edges left alone now (as of the last pass).
    var churning: [JackConnection] { shared.withLock { $0.churning } }

    /// Whether a left-alone edge is due to be tried again (monotonic seconds `now`).
    func retryDue(now: Double) -> Bool { shared.withLock { $0.nextRetry.map { now >= $0 } ?? false } }

    // MARK: Worker thread

    private func run() {
        var entries = [PollEntry(descriptor: event, events: .readable)]
        var timeout: Int32 = -1
        while true {
            _ = try? Descriptor.poll(&entries, timeoutMilliseconds: timeout)
            EventFD.drain(event)
            let now = SystemClock.monotonicSeconds()
            let (jobs, rules, stopping, wakeDue, wakeAt) = shared.withLock { shared in
                let due = shared.wakeAt.map { now >= $0 } ?? false
                if due { shared.wakeAt = nil }
                defer {
                    shared.pending = nil
                    shared.jobs = []
                }
                return (shared.jobs, shared.pending, shared.stopping, due, shared.wakeAt)
            }
            if stopping { return }
            if wakeDue { wake() }
            for job in jobs { job(client) }
            if let rules { pass(rules) }
            // From the time after the jobs and the pass, rounded up: the wake is never early.
            let after = SystemClock.monotonicSeconds()
            timeout = wakeAt.map { Int32(min(max(0, (($0 - after) * 1000).rounded(.up)), 60_000)) } ?? -1
        }
    }

    /// One pass: read the watched ports' edges, plan, apply, report.
    private func pass(_ rules: ConnectionRules) {
        var report = Report()
        let (churning, nextRetry) = tracker.withLock { churn -> ([JackConnection], Double?) in
            churn.forgive(ports: rules.registered)
            let now = SystemClock.monotonicSeconds()
            let leftAlone = churn.leftAloneEdges(now: now)
            let plan = ConnectionReconciler.plan(rules, actual: actualEdges(rules), leftAlone: leftAlone)
            for edge in plan.disconnect {
                switch churn.mayChange(edge, recdWantsIt: false, now: now) {
                case .change:
                    do {
                        try client.disconnect(source: edge.source, destination: edge.destination)
                        // An ended attachment's own edges are not bypasses.
                        if !rules.forbidden.contains(edge) { report.cut.append(edge) }
                    } catch {}
                case .leaveAlone(let entry):
                    report.leftAlone.append(ChurningConnection(entry, retrySeconds: churn.retrySeconds))
                }
            }
            for edge in plan.connect {
                if case .leaveAlone(let entry) = churn.mayChange(edge, recdWantsIt: true, now: now) {
                    report.leftAlone.append(ChurningConnection(entry, retrySeconds: churn.retrySeconds))
                    continue
                }
                // A failure leaves the edge missing; the connection events tell, and the next
                // registration change retries.
                guard let made = try? client.connect(source: edge.source, destination: edge.destination) else {
                    continue
                }
                // The graph may still show an edge JACK said was removed (it is connected
                // without asking): "already connected" changed nothing.
                if !made { churn.uncount(edge) }
                // One report per removal JACK announced, whichever pass put the edge back.
                if rules.removedByOthers.contains(edge), case .group = rules.wanted[edge] {
                    report.restored.append(edge)
                }
            }
            let edges = churn.leftAlone.keys.sorted { ($0.source, $0.destination) < ($1.source, $1.destination) }
            return (edges, churn.nextRetry)
        }
        let news = !report.restored.isEmpty || !report.cut.isEmpty || !report.leftAlone.isEmpty
        shared.withLock { shared in
            shared.report.restored += report.restored
            shared.report.cut += report.cut
            shared.report.leftAlone += report.leftAlone
            shared.churning = churning
            shared.nextRetry = nextRetry
        }
        if news { wake() }
    }

    /// The edges of the watched ports as JACK has them now.
    private func actualEdges(_ rules: ConnectionRules) -> Set<JackConnection> {
        var edges = Set<JackConnection>()
        for (port, side) in rules.watched {
            for other in client.connections(of: port) {
                edges.insert(
                    side == .output
                        ? JackConnection(source: port, destination: other)
                        : JackConnection(source: other, destination: port))
            }
        }
        return edges
    }
}

/// A JACK connection recd leaves alone because something keeps undoing recd's changes to it
/// (`AudioEngine.takeChurnNews`, `status` jack.churning).
public struct ChurningConnection: Equatable, Sendable {
    public var connection: JackConnection
    /// recd's changes to it within `windowSeconds` before it gave up.
    public var changes: Int
    /// True: recd was making it (port keeping, an attachment) and something removed it;
    /// false: recd was cutting it (it would bypass an attachment) and something made it again.
    public var recdWantedIt: Bool
    /// The window the changes were counted in, and how long recd leaves the edge alone
    /// (unless its ports register again first).
    public var windowSeconds: Double
    public var retrySeconds: Double

    init(_ entry: ChurnTracker.LeftAlone, retrySeconds: Double) {
        connection = entry.edge
        changes = entry.changes
        recdWantedIt = entry.recdWantedIt
        windowSeconds = ChurnTracker.windowSeconds
        self.retrySeconds = retrySeconds
    }
}

// The archive's slow work, done on the worker thread (`SlowRequestWorker`): `archive.verify`
// decodes every segment, `archive.reindex` reads every file, retention walks the index and
// deletes files. The control thread checks the request, hands the job over and replies from
// the job's completion.
//
// Threads:
// - `ArchiveMaintenance`: the worker thread only (jobs); the control thread merely captures it.
// - The `ArchiveService` extension and `ArchiveRetention`: the control thread (requests, the
//   tick, completions).
//
// The index: the worker has its own connection to index.sqlite, the control thread keeps
// `ArchiveService.index`. The worker's write transactions are short: one row per deleted
// segment, and a reindex writes its rows in one transaction only after it has read every file.
import Archive
import ArchiveProof
import ControlProtocol
import Platform
import SessionPolicy
import SystemSupport

/// The archive as the worker thread sees it: its own index connection, opened on first use.
///
/// `@unchecked Sendable`: created on the control thread, then used by worker jobs only, which
/// run one at a time; `directory` and `indexPath` are constants any thread may read.
final class ArchiveMaintenance: @unchecked Sendable {
    let directory: String
    let indexPath: String
    private var connection: ArchiveIndex?
    /// The hash chains' keeper (nil: no key): `verify` checks chained segments against it.
    /// Set once at start, before any job runs.
    var chains: ChainKeeper?
    /// The archive key's certificate for clips' Content Credentials (nil: none). Set once at start.
    var credentials: ClipCredentials?

    init(directory: String) {
        self.directory = directory
        indexPath = directory + "/index.sqlite"
    }

    func index() throws -> ArchiveIndex {
        if let connection { return connection }
        let opened = try ArchiveIndex(path: indexPath)
        connection = opened
        return opened
    }

    /// What an `archive.verify` has done and has still to do, carried from one of its turns on
    /// the worker to the next.
    struct VerifyProgress: Sendable {
        /// Files still to decode, in order; nil before the first turn lists them.
        var remaining: [String]?
        var results: [VerifyResultInfo] = []
        var total = 0
        /// The chains read so far (their entries by segment), so each is read once a verify.
        var chained: [String: Result<[String: SHA256Digest], ProofError>] = [:]
    }

    /// Seconds one turn of a verify decodes before it lets other jobs run: a whole-archive
    /// verify holds the worker for this (or one file, if longer) at a time, not for hours.
    static let verifyTurnSeconds = 0.5

    /// One turn of a verify: lists the files (`path`, or every indexed segment) on the first,
    /// then decodes them for about `verifyTurnSeconds` (at least one), reporting one step per
    /// file; a segment recd chained (the index has its hash) is checked against its chain too.
    /// Stops early when the job is cancelled (its result is dropped then anyway).
    func verifyTurn(_ progress: VerifyProgress, path: String?, job: WorkerJob) throws -> VerifyProgress {
        var progress = progress
        if progress.remaining == nil {
            let paths = try path.map { [$0] } ?? index().list().map(\.path)
            progress.remaining = paths
            progress.total = paths.count
        }
        var remaining = progress.remaining ?? []
        let turnEnds = SystemClock.monotonicSeconds() + Self.verifyTurnSeconds
        var decoded = 0
        while !remaining.isEmpty, !job.isCancelled, decoded == 0 || SystemClock.monotonicSeconds() < turnEnds {
            let next = remaining.removeFirst()
            var chain: (keeper: ChainKeeper, path: String)?
            if let chains, (try? index().proof(path: next)) != nil, let record = try? index().record(path: next),
                let chainPath = SegmentChaining.chainPath(of: record, keeper: chains)
            {
                chain = (chains, chainPath)
            }
            let result = ArchiveVerifier.verify(path: next, chain: chain, chained: &progress.chained)
            progress.results.append(ArchiveService.verifyInfo(result))
            decoded += 1
            job.progress(done: progress.results.count, total: progress.total)
        }
        progress.remaining = remaining
        return progress
    }

    /// Rebuilds the index from the files.
    func reindex() throws -> ReindexSummary { try index().reindex(from: directory) }

    /// Deletes what `policy` says must go, sparing `openPaths`.
    /// Spares `openPaths`; with `chains`, each chained segment's `removed` entry goes first.
    func enforce(_ policy: RetentionPolicy, openPaths: Set<String>, chains: ChainKeeper?) throws -> RetentionReport {
        try policy.enforce(
            archiveDirectory: directory, index: index(), openPaths: openPaths, now: UTCTime.now(), chains: chains)
    }
}

extension ArchiveService {
    typealias Reply = LaterReply

    /// `archive.verify`: the path is checked here (with the caller's `uid` and `groups`),
    /// the decoding happens on the worker; `reply` follows on the control thread, never when
    /// `client` has gone. `progress` sees one step per decoded file.
    func verify(
        path asked: String?, uid: UInt32, groups: Set<UInt32>, administrator: Bool, for client: ClientID,
        progress: (@Sendable (Int, Int) -> Void)?, reply: @escaping Reply
    ) throws {
        let archiveDir = archiveDir
        let path = try asked.map { asked in
            // recd decodes with its own rights: only files inside the archive, never a path
            // that leads elsewhere (`..`, symlinks, another directory).
            guard let resolved = ArchivePath.resolve(asked, inside: archiveDir) else {
                throw SessionError(
                    .badParam,
                    "\(asked) is not a file inside the archive \(archiveDir); "
                        + "verify only segments there (`recctl archive list` shows them)"
                )
            }
            guard ArchivePath.isReadable(resolved, uid: uid, groups: groups) else {
                throw SessionError(
                    .badParam,
                    "uid \(uid) may not read \(resolved); verify only segments you can read, "
                        + "or run `recctl archive verify` without a path to check the whole archive"
                )
            }
            return resolved
        }
        try verifyTurn(
            ArchiveMaintenance.VerifyProgress(), path: path, uid: uid, administrator: administrator, for: client,
            progress: progress, reply: reply)
    }

    /// Queues a verify's next turn at the back of the caller's queue, so that the worker takes
    /// other users' jobs between turns; the last turn's completion replies. Only the first turn
    /// counts against the caller's queue limit: a verify once accepted runs to its end.
    private func verifyTurn(
        _ done: ArchiveMaintenance.VerifyProgress, path: String?, uid: UInt32, administrator: Bool,
        for client: ClientID, progress: (@Sendable (Int, Int) -> Void)?, reply: @escaping Reply
    ) throws(SessionError) {
        let maintenance = maintenance
        let job: @Sendable (WorkerJob) -> Result<ArchiveMaintenance.VerifyProgress, SessionError> = { job in
            Result { try maintenance.verifyTurn(done, path: path, job: job) }.mapError(RequestGate.replyError)
        }
        let next: @Sendable (Result<ArchiveMaintenance.VerifyProgress, SessionError>) -> Void = { [weak self] result in
            switch result {
            case .success(let turn) where turn.remaining?.isEmpty == false:
                try? self?.verifyTurn(
                    turn, path: path, uid: uid, administrator: true, for: client, progress: progress, reply: reply)
            case .success(let turn):
                reply(.success(VerifyInfo(results: turn.results).fields))
            case .failure(let error):
                reply(.failure(error))
            }
        }
        if done.remaining == nil {
            try worker.submitRequest(
                for: client, of: uid, administrator: administrator, job, progress: progress, completion: next)
        } else {
            worker.submit(for: client, owner: .user(uid), job, progress: progress, completion: next)
        }
    }

    static func verifyInfo(_ result: VerifyResult) -> VerifyResultInfo {
        VerifyResultInfo(path: result.path, ok: result.isOK, outcome: "\(result.outcome)", frames: result.frames)
    }

    /// `archive.reindex` on the worker. Segments finished meanwhile are added to the index
    /// again afterwards: the rebuild replaces every row with what it read before they existed.
    func reindex(for client: ClientID, uid: UInt32, reply: @escaping Reply) {
        reindexStarted()
        let maintenance = maintenance
        worker.submit(
            for: client, owner: .user(uid),
            { _ in
                Result {
                    let summary = try maintenance.reindex()
                    return ReindexInfo(indexed: summary.indexed, skipped: summary.skipped.keys.sorted()).fields
                }.mapError(RequestGate.replyError)
            }, completion: reply)
        // An empty job of the daemon's own, right behind in the same queue: its completion comes
        // after the rebuild whether or not the client stayed for the reply.
        worker.submit(for: nil, owner: .user(uid), { _ in () }) { [weak self] _ in self?.reindexFinished() }
    }

}

/// Retention (`[archive] max_age_days`, `min_free_percent`): from the tick every 60 s, on the
/// worker, one run at a time; at once after a recorder stopped for a full disk. Segments not yet
/// copied to the `[replicate] remote` are spared. Control thread (hence `@unchecked Sendable`:
/// its worker completion runs there too).
final class ArchiveRetention: DaemonFeature, SegmentFeature, @unchecked Sendable {
    private let policy: RetentionPolicy
    private let worker: SlowRequestWorker
    private let maintenance: ArchiveMaintenance
    /// The recorders whose open files are spared.
    private let recorders: RecorderService
    private let chains: ChainKeeper?
    private var lastRetention = 0.0
    /// A retention run is queued or running on the worker.
    private var retentionRunning = false

    init(
        settings: ArchiveSection, replicationRemote: String?, worker: SlowRequestWorker,
        maintenance: ArchiveMaintenance, recorders: RecorderService, chains: ChainKeeper?
    ) {
        policy = RetentionPolicy(
            maxAgeDays: settings.maxAgeDays, minFreePercent: settings.minFreePercent,
            replicationRemote: replicationRemote)
        self.worker = worker
        self.maintenance = maintenance
        self.recorders = recorders
        self.chains = chains
    }

    func tick(now: Double) {
        guard now - lastRetention >= 60 else { return }
        lastRetention = now
        enforceRetention()
    }

    /// A full disk: retention runs at the next tick rather than within the minute.
    func streamChanged(_ change: StreamChange, app: String, stream: String) {
        if change == .stoppedByItself(.diskFull) { lastRetention = -.infinity }
    }

    /// Retention, from the tick every 60 s: on the worker, one run at a time.
    func enforceRetention() {
        let policy = policy
        guard policy.maxAgeDays != nil || policy.minFreePercent != nil, !retentionRunning else { return }
        // Only finished segments are indexed, so no file opened after this snapshot is one
        // that retention could pick.
        let open = Set(recorders.live.flatMap { $0.recorder.openPaths })
        retentionRunning = true
        let maintenance = maintenance
        let chains = chains
        let job: @Sendable (WorkerJob) -> Result<RetentionReport, any Error> = { _ in
            Result {
                let report = try maintenance.enforce(policy, openPaths: open, chains: chains)
                // Said here, on the worker, as soon as the files are gone: a stop right after the
                // run ends the worker without delivering its completion, and a deletion must
                // never go unlogged.
                for path in report.deleted { Log.notice("retention deleted \(path)") }
                for (path, error) in report.failures.sorted(by: { $0.key < $1.key }) {
                    Log.error("retention: \(path): \(error)")
                }
                return report
            }
        }
        worker.submit(for: nil, job) { [weak self] result in
            self?.retentionRunning = false
            if case .failure(let error) = result { Log.error("retention: \(error)") }
        }
    }
}

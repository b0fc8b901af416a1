// The archive's slow work, done on the worker thread (`SlowRequestWorker`): `archive.verify`
// decodes every segment, `archive.reindex` reads every file, retention walks the index and
// deletes files. The control thread checks the request, hands the job over and replies from
// the job's completion.
//
// Threads:
// - `ArchiveMaintenance`: the worker thread only (jobs); the control thread merely captures it.
// - The `RecorderService` extension: the control thread (requests, the tick, completions).
//
// The index: the worker has its own connection to index.sqlite (WAL, 5 s busy timeout), the
// control thread keeps `RecorderService.index` (adds on segmentFinished, archive.list, the
// status count). Readers never wait for a writer in WAL mode; writers take turns, and the worker's
// write transactions are short: one row per deleted segment, and a reindex writes its rows
// in one transaction only after it has read every file.
import Archive
import ArchiveProof
import ControlProtocol
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

    /// Decodes `path`, or every indexed segment, reporting one step per file. Stops early
    /// when the job is cancelled (its result is dropped then anyway).
    func verify(path: String?, job: WorkerJob) throws -> [VerifyResult] {
        let paths = try path.map { [$0] } ?? index().list().map(\.path)
        var results: [VerifyResult] = []
        var chained: [String: Result<[String: SHA256Digest], ProofError>] = [:]
        for path in paths {
            if job.isCancelled { break }
            // A segment recd chained (the index has its hash) is checked against its chain too.
            var chain: (keeper: ChainKeeper, path: String)?
            if let chains, (try? index().proof(path: path)) != nil, let record = try? index().record(path: path),
                let chainPath = SegmentChaining.chainPath(of: record, keeper: chains)
            {
                chain = (chains, chainPath)
            }
            results.append(ArchiveVerifier.verify(path: path, chain: chain, chained: &chained))
            job.progress(done: results.count, total: paths.count)
        }
        return results
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

extension RecorderService {
    typealias Reply = LaterReply

    /// `archive.verify`: the path is checked here (with the caller's `uid` and `groups`),
    /// the decoding happens on the worker; `reply` follows on the control thread, never when
    /// `client` has gone. `progress` sees one step per decoded file.
    func verify(
        path asked: String?, uid: UInt32, groups: Set<UInt32>, for client: ClientID,
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
        let maintenance = maintenance
        worker.submit(
            for: client,
            { job in
                Result {
                    let results = try maintenance.verify(path: path, job: job)
                    return VerifyInfo(results: results.map(Self.verifyInfo)).fields
                }.mapError(RequestGate.replyError)
            }, progress: progress, completion: reply)
    }

    static func verifyInfo(_ result: VerifyResult) -> VerifyResultInfo {
        VerifyResultInfo(path: result.path, ok: result.isOK, outcome: "\(result.outcome)", frames: result.frames)
    }

    /// `archive.reindex` on the worker. Segments finished meanwhile are added to the index
    /// again afterwards: the rebuild replaces every row with what it read before they existed.
    func reindex(for client: ClientID, reply: @escaping Reply) {
        reindexesRunning += 1
        let maintenance = maintenance
        worker.submit(
            for: client,
            { _ in
                Result {
                    let summary = try maintenance.reindex()
                    return ReindexInfo(indexed: summary.indexed, skipped: summary.skipped.keys.sorted()).fields
                }.mapError(RequestGate.replyError)
            }, completion: reply)
        // An empty job of the daemon's own, right behind: its completion comes after the
        // rebuild whether or not the client stayed for the reply.
        worker.submit(for: nil, { _ in () }) { [weak self] _ in self?.reindexFinished() }
    }

    private func reindexFinished() {
        reindexesRunning -= 1
        if index == nil {
            do { index = try ArchiveIndex(path: maintenance.indexPath) } catch {
                Log.error("cannot open the archive index: \(error)")
            }
        }
        guard reindexesRunning == 0 else { return }
        for record in finishedDuringReindex {
            do { try index?.add(record) } catch { Log.warning("index: \(error)") }
        }
        finishedDuringReindex.removeAll()
    }

    /// Retention, from the tick every 60 s: on the worker, one run at a time.
    func enforceRetention() {
        let policy = RetentionPolicy(
            maxAgeDays: settings.maxAgeDays, minFreePercent: settings.minFreePercent,
            replicationRemote: replicationRemote)
        guard policy.maxAgeDays != nil || policy.minFreePercent != nil, !retentionRunning else { return }
        // Only finished segments are indexed, so no file opened after this snapshot is one
        // that retention could pick.
        let open = Set(recorders.flatMap { $0.recorder.openPaths })
        retentionRunning = true
        let maintenance = maintenance
        let chains = prover?.keeper
        let job: @Sendable (WorkerJob) -> Result<RetentionReport, any Error> = { _ in
            Result { try maintenance.enforce(policy, openPaths: open, chains: chains) }
        }
        worker.submit(for: nil, job) { [weak self] result in
            self?.retentionRunning = false
            switch result {
            case .success(let report):
                for path in report.deleted { Log.notice("retention deleted \(path)") }
                for (path, error) in report.failures.sorted(by: { $0.key < $1.key }) {
                    Log.error("retention: \(path): \(error)")
                }
            case .failure(let error):
                Log.error("retention: \(error)")
            }
        }
    }
}

// The archive's slow work, done on the worker thread (`SlowRequestWorker`): `archive.verify`
// decodes every segment, `archive.reindex` reads every file, retention walks the index and
// deletes files. The control thread checks the request, hands the job over and replies from
// the job's completion.
//
// Threads:
// - `ArchiveMaintenance`: the worker thread only (jobs); the control thread merely captures it.
// - The `ControlService` extension: the control thread (requests, the tick, completions).
//
// The index: the worker has its own connection to index.sqlite (WAL, 5 s busy timeout), the
// control thread keeps `archive.index` (adds on segmentFinished, archive.list, the status
// count). Readers never wait for a writer in WAL mode; writers take turns, and the worker's
// write transactions are short: one row per deleted segment, and a reindex writes its rows
// in one transaction only after it has read every file.
import Archive
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

    init(directory: String) {
        self.directory = directory
        indexPath = directory + "/index.sqlite"
    }

    private func index() throws -> ArchiveIndex {
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
        for path in paths {
            if job.isCancelled { break }
            results.append(ArchiveVerifier.verify(path: path))
            job.progress(done: results.count, total: paths.count)
        }
        return results
    }

    /// Rebuilds the index from the files.
    func reindex() throws -> ReindexSummary { try index().reindex(from: directory) }

    /// Deletes what `policy` says must go, sparing `openPaths`.
    func enforce(_ policy: RetentionPolicy, openPaths: Set<String>) throws -> RetentionReport {
        try policy.enforce(archiveDirectory: directory, index: index(), openPaths: openPaths, now: UTCTime.now())
    }
}

extension ControlService {
    /// Runs `job` on the worker and replies to `client` when it is done: its fields, or the
    /// error it threw. Returns nil, `handle`'s "the reply comes later". With `progress`, the
    /// job's steps reach the client as `{"id":…,"progress":{"done":k,"total":n}}` lines first.
    func replyLater(
        to client: ClientID, id: JSONValue, progress: Bool = false,
        _ job: @escaping @Sendable (WorkerJob) throws -> [(String, JSONValue)]
    ) -> [(String, JSONValue)]? {
        let sendProgress: @Sendable (Int, Int) -> Void = { [weak self] done, total in
            self?.send(Wire.progress(id: id, done: done, total: total), to: client)
        }
        worker.submit(
            for: client, { context in Result { try job(context) }.mapError(Self.replyError) },
            progress: progress ? sendProgress : nil
        ) { [weak self] result in
            switch result {
            case .success(let fields): self?.send(Wire.success(id: id, fields), to: client)
            case .failure(let error): self?.send(Wire.failure(id: id, error), to: client)
            }
        }
        return nil
    }

    /// `archive.verify`: the path is checked here, the decoding happens on the worker.
    func archiveVerify(
        _ request: Request, from client: ClientID, peer: PeerCredentials
    ) throws -> [(String, JSONValue)]? {
        let path = try request.optionalString("path").map { asked in
            // recd decodes with its own rights: only files inside the archive, never a path
            // that leads elsewhere (`..`, symlinks, another directory).
            guard let resolved = ArchivePath.resolve(asked, inside: archiveDir) else {
                throw SessionError(
                    .badParam,
                    "\(asked) is not a file inside the archive \(archiveDir); "
                        + "verify only segments there (`recctl archive list` shows them)"
                )
            }
            guard ArchivePath.isReadable(resolved, uid: peer.uid, groups: Set(peer.groups + [peer.gid])) else {
                throw SessionError(
                    .badParam,
                    "uid \(peer.uid) may not read \(resolved); verify only segments you can read, "
                        + "or run `recctl archive verify` without a path to check the whole archive"
                )
            }
            return resolved
        }
        let maintenance = maintenance
        return replyLater(to: client, id: request.id, progress: try request.optionalBool("progress") ?? false) { job in
            let results = try maintenance.verify(path: path, job: job)
            return [("results", .array(results.map(Self.verifyJSON))), ("all_ok", .bool(results.allSatisfy(\.isOK)))]
        }
    }

    static func verifyJSON(_ result: VerifyResult) -> JSONValue {
        [
            "path": .string(result.path), "ok": .bool(result.isOK), "outcome": .string("\(result.outcome)"),
            "frames": .number(Double(result.frames)),
        ]
    }

    /// `archive.reindex` on the worker. Segments finished meanwhile are added to the index
    /// again afterwards: the rebuild replaces every row with what it read before they existed.
    func archiveReindex(_ request: Request, from client: ClientID) -> [(String, JSONValue)]? {
        archive.reindexesRunning += 1
        let maintenance = maintenance
        let reply = replyLater(to: client, id: request.id) { _ in
            let summary = try maintenance.reindex()
            return [
                ("indexed", .number(Double(summary.indexed))),
                ("skipped", .array(summary.skipped.keys.sorted().map { .string($0) })),
            ]
        }
        // An empty job of the daemon's own, right behind: its completion comes after the
        // rebuild whether or not the client stayed for the reply.
        worker.submit(for: nil, { _ in () }) { [weak self] _ in self?.reindexFinished() }
        return reply
    }

    private func reindexFinished() {
        archive.reindexesRunning -= 1
        if archive.index == nil {
            do { archive.index = try ArchiveIndex(path: archiveIndexPath) } catch {
                Log.error("cannot open the archive index: \(error)")
            }
        }
        guard archive.reindexesRunning == 0 else { return }
        for record in archive.finishedDuringReindex {
            do { try archive.index?.add(record) } catch { Log.warning("index: \(error)") }
        }
        archive.finishedDuringReindex.removeAll()
    }

    /// Retention, from the tick every 60 s: on the worker, one run at a time.
    func enforceRetention() {
        let policy = RetentionPolicy(
            maxAgeDays: config.archive.maxAgeDays, minFreePercent: config.archive.minFreePercent)
        guard policy.maxAgeDays != nil || policy.minFreePercent != nil, !archive.retentionRunning else { return }
        // Only finished segments are indexed, so no file opened after this snapshot is one
        // that retention could pick.
        let open = Set(archive.recorders.flatMap { $0.recorder.openPaths })
        archive.retentionRunning = true
        let maintenance = maintenance
        let job: @Sendable (WorkerJob) -> Result<RetentionReport, any Error> = { _ in
            Result { try maintenance.enforce(policy, openPaths: open) }
        }
        worker.submit(for: nil, job) { [weak self] result in
            self?.archive.retentionRunning = false
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

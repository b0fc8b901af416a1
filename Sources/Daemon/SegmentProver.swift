// The archive's proof in the daemon (docs/archive-proof.md): the box's key, loaded (or made) at
// start, and every finished or recovered segment put into its hash chain on the "prover"
// thread: hashing an hour of audio reads hundreds of megabytes, which neither the control
// thread nor an archiver (two seconds of ring) may wait for.
//
// Threads: `SegmentProver` is the control thread's; its jobs run on its worker ("prover") and
// touch only the `ChainKeeper` (immutable, file-locked appends); completions (the index's
// proof columns) come back to the control thread.
import Archive
import ArchiveProof
import Platform
import SystemSupport

/// Chains finished segments, one at a time in the order they finished, off the control thread.
/// Owned by `RecorderService`; made by `Startup` (`make`), stopped at shutdown.
///
/// Confined to the control thread (hence `@unchecked Sendable`: its worker's completions,
/// which capture it, run there too).
final class SegmentProver: @unchecked Sendable {
    let keeper: ChainKeeper
    private let worker: SlowRequestWorker
    /// Segments handed to the worker whose completion has not come back, by path: chained
    /// on the control thread at shutdown instead of waiting for the next start.
    private var pending: [String: SegmentRecord] = [:]

    /// The private key's file under the state directory, and the public key's beside the archive.
    static let keyFileName = "archive-signing.key"

    private init(keeper: ChainKeeper, worker: SlowRequestWorker) {
        self.keeper = keeper
        self.worker = worker
    }

    /// Loads the key from `stateDir` (made there, 0600, at the first start), publishes the
    /// public key at the archive's root, starts the worker. Nil, with the reason logged, when the
    /// key cannot be had: recd records anyway, unproven (an archive is worth more than its proof).
    static func make(stateDir: String, archiveDir: String, deliver: @escaping SlowRequestWorker.Deliver)
        -> SegmentProver?
    {
        do {
            let key = try ArchiveSigningKey.loadOrCreate(
                path: stateDir + "/" + keyFileName, now: UTCTime.now().microsecondsSinceEpoch)
            try FileSystem.makeDirectories(archiveDir, mode: 0o750)
            try key.publish(to: archiveDir + "/" + ChainLayout.publicKeyFileName)
            let worker = try SlowRequestWorker(name: "prover", deliver: deliver)
            return SegmentProver(keeper: ChainKeeper(archiveDirectory: archiveDir, key: key), worker: worker)
        } catch {
            Log.error(
                "the archive will not prove itself: \(error); fix the state directory's key or permissions and restart")
            return nil
        }
    }

    /// When the key was made: segments that start before it are not chained after a crash.
    var since: UTCTime { UTCTime(microsecondsSinceEpoch: keeper.key.createdMicroseconds) }

    /// Queues `record` for its chain; `index` gets its proof columns when it is done, then
    /// `then` runs (chained or not). Control thread.
    func chain(
        _ record: SegmentRecord, index: @escaping @Sendable () -> ArchiveIndex?,
        then: @escaping @Sendable () -> Void = {}
    ) {
        pending[record.path] = record
        let keeper = keeper
        worker.submit(
            for: nil, { _ in Result { () throws(ArchiveError) in try SegmentChaining.chain(record, keeper: keeper) } }
        ) { [weak self] result in
            self?.pending[record.path] = nil
            Self.note(result, of: record, in: index())
            then()
        }
    }

    /// Stops the worker, then chains here what it had not reached (shutdown may wait: the
    /// recordings are finished by then). Control thread.
    func stop(index: ArchiveIndex?) {
        worker.stop()
        for record in pending.values.sorted(by: { $0.startTime < $1.startTime }) {
            Self.note(
                Result { () throws(ArchiveError) in try SegmentChaining.chain(record, keeper: keeper) }, of: record,
                in: index)
        }
        pending.removeAll()
    }

    private static func note(
        _ result: Result<SegmentProof, ArchiveError>, of record: SegmentRecord, in index: ArchiveIndex?
    ) {
        switch result {
        case .success(let proof):
            do { try index?.setProof(path: record.path, proof) } catch { Log.warning("index: \(error)") }
        case .failure(let error):
            Log.error("\(record.path) is not in its hash chain: \(error)")
        }
    }
}

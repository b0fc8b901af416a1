// The archive's proof in the daemon (docs/archive-proof.md): the box's key, loaded (or made) at
// start, and every finished or recovered segment put into its hash chain on the "prover"
// thread: hashing an hour of audio reads hundreds of megabytes, which neither the control
// thread nor an archiver (two seconds of ring) may wait for.
//
// Threads: `SegmentProver` is the control thread's; its jobs run on its worker ("prover") and
// touch only the `ChainKeeper` (immutable, file-locked appends); completions (the index's
// proof columns, the alarms) come back to the control thread.
//
// A chain that no longer holds what recd signed (the keeper checks before every append) is an
// alarm: status and /metrics show it and the log names what changed; recd chains nothing more
// into it and never signs it again, and recording goes on. The stream's next day starts a new
// chain. When the chain and its signature are restored (from the replica or a backup) to what
// recd signed, the next append succeeds, the alarm ends, and the segments it missed are chained.
import Archive
import ArchiveProof
import ControlProtocol
import Platform
import SystemSupport

/// Chains finished segments, one at a time in the order they finished, off the control thread:
/// a feature that hears every finished segment and passes it on to `next` once chained (a
/// replica carries the chain that names it). Made by `Startup` (`make`), stopped at shutdown.
///
/// Confined to the control thread (hence `@unchecked Sendable`: its worker's completions,
/// which capture it, run there too).
final class SegmentProver: SegmentFeature, DaemonFeature, @unchecked Sendable {
    let keeper: ChainKeeper
    /// The segments recd wrote and has not chained (in the state directory): after a crash, and
    /// when a chain holds again, only these are chained from the index.
    let ledger: SegmentLedger
    private let worker: SlowRequestWorker
    /// Segments handed to the worker whose completion has not come back, by path: chained
    /// on the control thread at shutdown instead of waiting for the next start.
    private var pending: [String: SegmentRecord] = [:]
    /// Chains that do not hold what recd signed, by their path under the archive root.
    private(set) var alarms: [String: ChainAlarm] = [:]

    /// The private key's file under the state directory, and the public key's beside the archive.
    static let keyFileName = "archive-signing.key"

    /// The prover thread's own connection to the index, for naming what changed in a chain
    /// found not to hold (opened on first use there).
    private let proverIndex: ThreadIndex

    /// The control thread's index (the catalog's), which gets each segment's proof columns.
    private let index: @Sendable () -> ArchiveIndex?
    /// The features that hear a segment once it is chained (or could not be).
    var next: [any SegmentFeature] = []

    private init(
        keeper: ChainKeeper, ledger: SegmentLedger, worker: SlowRequestWorker,
        index: @escaping @Sendable () -> ArchiveIndex?
    ) {
        self.keeper = keeper
        self.ledger = ledger
        self.worker = worker
        self.index = index
        proverIndex = ThreadIndex(path: keeper.archiveDirectory + "/index.sqlite")
    }

    /// Loads the key from `stateDir` (made there, 0600, at the first start), publishes the
    /// public key at the archive's root, starts the worker. Nil, with the reason logged, when the
    /// key cannot be had: recd records anyway, unproven (an archive is worth more than its proof).
    static func make(
        stateDir: String, archiveDir: String, deliver: @escaping SlowRequestWorker.Deliver,
        index: @escaping @Sendable () -> ArchiveIndex?
    ) -> SegmentProver? {
        do {
            let key = try ArchiveSigningKey.loadOrCreate(
                path: stateDir + "/" + keyFileName, now: UTCTime.now().microsecondsSinceEpoch)
            try FileSystem.makeDirectories(archiveDir, mode: 0o750)
            try key.publish(to: archiveDir + "/" + ChainLayout.publicKeyFileName)
            let worker = try SlowRequestWorker(name: "prover", deliver: deliver)
            let heads = ChainHeads(directory: stateDir + "/" + ChainHeads.directoryName)
            return SegmentProver(
                keeper: ChainKeeper(archiveDirectory: archiveDir, key: key, heads: heads),
                ledger: SegmentLedger(directory: stateDir + "/" + SegmentLedger.directoryName), worker: worker,
                index: index)
        } catch {
            Log.error(
                "the archive will not prove itself: \(error); fix the state directory's key or permissions and restart")
            return nil
        }
    }

    /// Recovered segments, and those a crash finished before they were chained; in the order
    /// they started, before any new segment (the prover's queue is in order). Only those recd
    /// noted in its ledger before it wrote them: a row or a partial someone else put in the
    /// archive is never chained (the prover checks each on its thread).
    func archiveOpened(recovered: [SegmentRecord]) {
        let unchained = (try? index()?.unchained(since: since)) ?? nil
        for record in unchained ?? recovered { chain(record, index: index, onlyIfOwed: true) }
        pruneLedger()
        for feature in next { feature.archiveOpened(recovered: recovered) }
    }

    /// A new recorder notes each segment in the ledger before it writes it.
    func configure(
        _ configuration: inout RecorderConfiguration, inputs: inout SegmentInputs, for spec: RecorderSpec
    ) {
        configuration.ledger = ledger
    }

    /// Chained, then passed on; one recovered from its partial only if the ledger owes it.
    func segmentFinished(_ record: SegmentRecord) {
        chain(record, index: index, onlyIfOwed: record.recovered) { [weak self] in
            for feature in self?.next ?? [] { feature.segmentFinished(record) }
        }
    }

    func contribute(to status: inout StatusInfo) { status.archive.chainAlarms = alarmInfos }

    /// At shutdown: the last segments into their chains now rather than at the next start.
    func stop() { stop(index: index()) }

    /// When the key was made: segments that start before it are not chained after a crash.
    var since: UTCTime { UTCTime(microsecondsSinceEpoch: keeper.key.createdMicroseconds) }

    /// Queues `record` for its chain; `index` gets its proof columns when it is done, then
    /// `then` runs (chained or not). `onlyIfOwed`: the record comes from the index or a
    /// recovery, not from a recorder of this run, and is chained only if the ledger names it.
    /// Control thread.
    func chain(
        _ record: SegmentRecord, index: @escaping @Sendable () -> ArchiveIndex?, onlyIfOwed: Bool = false,
        then: @escaping @Sendable () -> Void = {}
    ) {
        pending[record.path] = record
        let keeper = keeper
        let ledger = ledger
        let proverIndex = proverIndex
        // A chain already under alarm was described when it was found.
        let alarmed = SegmentChaining.chainPath(of: record, keeper: keeper).map { alarms[$0] != nil } ?? false
        worker.submit(
            for: nil,
            { _ in
                guard !onlyIfOwed || ledger.owes(record.path) else {
                    return (Result<SegmentProof, ArchiveError>.failure(.notOwed(path: record.path)), [String]())
                }
                let result = Result { () throws(ArchiveError) in try SegmentChaining.chain(record, keeper: keeper) }
                if case .success = result { ledger.settle(record.path) }
                guard !alarmed, case .failure(.proof(.tampered(let chainBreak))) = result,
                    let index = proverIndex.connection()
                else { return (result, [String]()) }
                return (
                    result,
                    SegmentChaining.differences(
                        inChain: chainBreak.chain, app: record.app, stream: record.stream, keeper: keeper, index: index)
                )
            }
        ) { [weak self] outcome in
            self?.pending[record.path] = nil
            self?.note(outcome.0, of: record, index: index(), requeue: index, differences: outcome.1)
            then()
        }
    }

    /// Stops the worker, then chains here what it had not reached (shutdown may wait: the
    /// recordings are finished by then). Control thread.
    func stop(index: ArchiveIndex?) {
        worker.stop()
        for record in pending.values.sorted(by: { $0.startTime < $1.startTime }) {
            note(
                Result { () throws(ArchiveError) in try SegmentChaining.chain(record, keeper: keeper) }, of: record,
                index: index, requeue: nil)
        }
        pending.removeAll()
    }

    /// Forgets, on the prover's thread, the ledger's notes of segments that are gone (neither the
    /// file nor its partial is there: deleted, or moved aside unrecoverable). Control thread.
    func pruneLedger() {
        let ledger = ledger
        worker.submit(
            for: nil,
            { _ in
                for path in ledger.owedPaths()
                where !FileSystem.exists(path) && !FileSystem.exists(path + SegmentWriter.partialSuffix) {
                    ledger.settle(path)
                }
            }, completion: { _ in })
    }

    /// The alarms for `status`, oldest first.
    var alarmInfos: [StatusInfo.ChainAlarm] {
        alarms.values.sorted { $0.since < $1.since }.map {
            StatusInfo.ChainAlarm(
                chain: $0.chain, app: $0.app, stream: $0.stream, since: $0.since.iso8601, detail: $0.detail,
                segmentsUnchained: $0.unchained)
        }
    }

    /// `index` gets the proof columns; `requeue`, when given, is how the segments a restored
    /// chain missed are chained again.
    private func note(
        _ result: Result<SegmentProof, ArchiveError>, of record: SegmentRecord, index: ArchiveIndex?,
        requeue: (@Sendable () -> ArchiveIndex?)?, differences: [String] = []
    ) {
        let chainPath = SegmentChaining.chainPath(of: record, keeper: keeper)
        switch result {
        case .success(let proof):
            do { try index?.setProof(path: record.path, proof) } catch { Log.warning("index: \(error)") }
            guard let chainPath, let alarm = alarms.removeValue(forKey: chainPath) else { return }
            Log.notice(
                "chain \(chainPath) holds what recd signed again: \(record.app)/\(record.stream) is chained again, "
                    + "and the segments it missed (\(alarm.unchained)) now")
            // The missed ones are the index's unchained segments of this chain (not kept here:
            // a day under alarm at 1 s rotation misses tens of thousands).
            guard let requeue, let unchained = (try? requeue()?.unchained(since: since)) ?? nil else { return }
            for missed in unchained
            where SegmentChaining.chainPath(of: missed, keeper: keeper) == chainPath && pending[missed.path] == nil
                && missed.path != record.path
            {
                chain(missed, index: requeue, onlyIfOwed: true)
            }
        case .failure(.proof(.tampered(let chainBreak))):
            if var alarm = alarms[chainBreak.chain] {
                alarm.unchained += 1
                alarms[chainBreak.chain] = alarm
                Log.error("\(record.path) is not chained (its chain is under alarm): \(chainBreak)")
                return
            }
            let changed =
                differences.isEmpty ? "" : "; the index says what changed: " + differences.joined(separator: "; ")
            alarms[chainBreak.chain] = ChainAlarm(
                chain: chainBreak.chain, app: record.app, stream: record.stream, since: UTCTime.now(),
                detail: chainBreak.description + changed, unchained: 1)
            Log.error(
                "ALARM: \(chainBreak)\(changed); \(record.path) and the rest of \(record.app)/\(record.stream)'s day are "
                    + "recorded but not chained, and recd signs this chain no more. Compare the day with the replica "
                    + "or a backup (`recctl archive prove`), restore its chain and .sig to what recd signed, and recd "
                    + "chains again (docs/security.md, \"The archive directory\")")
        case .failure(let error):
            Log.error("\(record.path) is not in its hash chain: \(error)")
        }
    }
}

/// A chain recd will not extend: it does not hold what recd signed. A plain value; control
/// thread (`SegmentProver.alarms`).
struct ChainAlarm {
    /// The chain's path under the archive root, and whose it is.
    var chain: String
    var app: String
    var stream: String
    /// When recd first found it so (since this start).
    var since: UTCTime
    /// What does not hold: which entry, what was expected and found (`ChainBreak`).
    var detail: String
    /// Segments it could not chain since (the index keeps them unchained: chained once it holds
    /// again, or queued again at the next start).
    var unchained: Int
}

/// An index connection opened on first use by the one thread that uses it (the prover's).
/// `@unchecked Sendable`: made on the control thread, used by the prover's jobs only, one at a
/// time.
final class ThreadIndex: @unchecked Sendable {
    let path: String
    private var opened: ArchiveIndex?

    init(path: String) { self.path = path }

    /// The connection, or nil (logged) when the index cannot be opened.
    func connection() -> ArchiveIndex? {
        if let opened { return opened }
        do {
            opened = try ArchiveIndex(path: path)
        } catch {
            Log.warning("the prover cannot open the index to say what changed: \(error)")
        }
        return opened
    }
}

// Off-box replication: every finished segment gets a checked copy on an
// rclone remote (`[replicate] remote`: sftp, S3, a local path, anything rclone speaks).
//
// The queue is the archive index: a segment is queued while its `replicated` column does not
// name the remote (ArchiveIndex.unreplicated), so it survives restarts and crashes; a
// segment is marked only after its copy was checked, on the replicator thread (an index
// write does not belong on the control thread). Retention spares unmarked segments
// (RetentionPolicy.replicationRemote).
//
// One copy, on the "replicator" thread (RcloneCopier), each step a time-limited rclone child
// (posix_spawn, no shell):
//   1. `rclone copyto --checksum LOCAL REMOTE/REL.partial` — never the final name first, so a
//      copy cut short (remote gone, rclone killed) never looks finished on the remote;
//   2. the MD5 of the local file and of the remote copy (`rclone md5sum`, which asks the
//      remote: S3's ETag, sftp's `md5sum` over ssh); a remote that cannot hash (an sftp
//      host without a shell) is read back instead (`rclone md5sum --download`), so the check
//      is byte-for-byte either way, never of decoded audio;
//   3. the day's hash chains, then their signatures (`copyto`, replacing the remote's older ones);
//   4. `rclone moveto REMOTE/REL.partial REMOTE/REL` (a rename on sftp and local paths).
// A failure waits `[replicate] retry_min_seconds`, doubled per failure in a row up to
// `retry_max_seconds`, then tries the same segment again.
//
// Threads:
// - `ReplicationService`: the control thread (start, segmentFinished, the tick, status,
//   completions of copies).
// - `RcloneCopier.replicate`: the replicator thread (a `SlowRequestWorker` of its own).
import Archive
import ArchiveProof
import ControlProtocol
import Foundation
import Platform
import SystemSupport

/// How one copy attempt ended. A plain value: any thread.
enum ReplicationOutcome: Sendable, Equatable {
    /// Copied and checked at this time (seconds since 1970): the remote holds the same bytes
    /// under the final name.
    case copied(at: Double)
    /// The local file is no longer there: nothing to copy.
    case gone
    /// It failed; the message says what went wrong and what to do.
    case failed(String)
}

/// Runs rclone for one segment. A value: made on the control thread, used on the replicator.
struct RcloneCopier: Sendable {
    let settings: ReplicateSection
    let remote: String
    /// Where rclone writes the hash lists it is asked for (one job at a time).
    let scratchDirectory: String
    let environment: [String: String]

    init(settings: ReplicateSection, remote: String, stateDirectory: String) {
        self.settings = settings
        self.remote = remote
        scratchDirectory = stateDirectory + "/replication"
        let home = ProcessInfo.processInfo.environment["HOME"] ?? stateDirectory
        environment = ["HOME": home, "PATH": "/usr/bin:/bin", "LC_ALL": "C"]
    }

    /// When the last copy was checked, kept across restarts.
    var lastSuccessFile: String { scratchDirectory + "/last-success" }

    /// The time `lastSuccessFile` holds, if any. Any thread (small file).
    func savedLastSuccess() -> Double? {
        guard let bytes = try? AtomicFile.read(lastSuccessFile) else { return nil }
        return Double(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// `remote` joined with a path relative to the archive.
    func destination(_ relative: String) -> String {
        remote.hasSuffix("/") || remote.hasSuffix(":") ? remote + relative : remote + "/" + relative
    }

    /// Copies, checks and names the segment at `local` (`relative` inside the archive).
    /// Replicator thread; blocks for as long as rclone runs.
    func replicate(local: String, relative: String, isCancelled: () -> Bool) -> ReplicationOutcome {
        guard FileSystem.exists(local) else { return .gone }
        let final = destination(relative)
        let partial = final + SegmentWriter.partialSuffix
        do {
            try FileSystem.makeDirectories(scratchDirectory, mode: 0o700)
            try run(["copyto", "--checksum", local, partial], isCancelled)
            let localHash = try md5(local, download: false, isCancelled)
            var remoteHash = try md5(partial, download: false, isCancelled)
            if remoteHash == nil {
                // The remote cannot hash (e.g. sftp without a shell): read the copy back.
                remoteHash = try md5(partial, download: true, isCancelled)
            }
            guard let localHash else {
                return .failed("rclone gave no MD5 for \(local); check that recd may read it")
            }
            guard remoteHash == localHash else {
                return .failed(
                    "the copy \(partial) differs from \(local) (MD5 \(remoteHash ?? "none") against \(localHash)); "
                        + "recd copies it again; if this repeats, check the remote's storage")
            }
            // The day's hash chains and signatures go with their segment (docs/archive-proof.md),
            // before it takes its name: the chain before its signature, so a reader between the
            // two sees at worst entries not yet signed, never a signature of entries it lacks.
            let day = FileSystem.directoryName(of: local)
            let dayRelative = FileSystem.directoryName(of: relative)
            for chain in FileSystem.files(under: day, withSuffix: ChainLayout.chainSuffix) {
                let name = FileSystem.fileName(of: chain)
                for suffix in ["", ChainLayout.signatureSuffix] where FileSystem.exists(chain + suffix) {
                    try run(["copyto", chain + suffix, destination(dayRelative + "/" + name + suffix)], isCancelled)
                }
            }
            try run(["moveto", partial, final], isCancelled)
            let now = Double(UTCTime.now().nanosecondsSinceEpoch) / 1e9
            // For `status` after a restart (the metric of the last success outlives recd's run).
            try? AtomicFile.write("\(now)\n", to: lastSuccessFile)
            return .copied(at: now)
        } catch let error as ReplicationFailure {
            return .failed(error.message)
        } catch {
            return .failed("\(error)")
        }
    }

    private struct ReplicationFailure: Error { var message: String }

    private var commonArguments: [String] {
        var arguments = [
            "--retries", "1", "--low-level-retries", "2", "--contimeout", "10s", "--timeout", "30s",
            "--log-level", "ERROR", "--stats", "0",
        ]
        if let config = settings.rcloneConfig { arguments += ["--config", config] }
        if let limit = settings.bandwidthLimit { arguments += ["--bwlimit", limit] }
        return arguments
    }

    private func run(_ arguments: [String], _ isCancelled: () -> Bool) throws {
        let outcome: ChildOutcome
        do {
            outcome = try ChildProcess.run(
                path: settings.rclone, arguments: arguments + commonArguments, environment: environment,
                timeLimit: settings.timeoutSeconds, isCancelled: isCancelled)
        } catch {
            throw ReplicationFailure(
                message: "cannot run \(settings.rclone): \(error); install rclone (Debian package rclone) "
                    + "or set [replicate] rclone to its path")
        }
        guard outcome.succeeded else {
            let how =
                outcome.timedOut ? "ran past \(Int(settings.timeoutSeconds)) s" : "ended with \(outcome.termination)"
            throw ReplicationFailure(
                message: "rclone \(arguments[0]) to \(remote) \(how) (its messages are in recd's log); "
                    + "check that the remote is reachable: rclone lsd \(remote)"
                    + (settings.rcloneConfig.map { " --config \($0)" } ?? ""))
        }
    }

    /// The MD5 rclone reports for `path` (nil when the remote has none), through a file:
    /// rclone's standard output is recd's log.
    private func md5(_ path: String, download: Bool, _ isCancelled: () -> Bool) throws -> String? {
        let output = scratchDirectory + "/md5"
        try? FileSystem.removeIfPresent(output)
        try run(["md5sum"] + (download ? ["--download"] : []) + ["--output-file", output, path], isCancelled)
        // rclone's answer for one file is one line: read no more than a few of them.
        let bytes = (try? OwnedFile(output, .readOnlyNoFollow).read(count: 4096, at: 0)) ?? []
        let text = String(decoding: bytes, as: UTF8.self)
        // `HASH  NAME`; a remote without the hash leaves the first column blank.
        let hash = String(text.prefix(32))
        return hash.count == 32 && hash.allSatisfy(\.isHexDigit) ? hash.lowercased() : nil
    }
}

/// The replication queue and its state: which finished segments wait for their copy, the
/// copy in flight, the backoff after failures, the last success and error. Made by the
/// router only when `[replicate] remote` is set.
///
/// Confined to the control thread (`@unchecked Sendable`: completions of its copies, which
/// capture it, run there too).
final class ReplicationService: DaemonFeature, SegmentFeature, @unchecked Sendable {
    let settings: ReplicateSection
    let remote: String
    let archiveDirectory: String
    private let copier: RcloneCopier
    private let runner: SlowRequestWorker
    /// Its own connection to the index (the queue's persistence).
    private var index: ReplicatorIndex?
    /// Segments waiting, oldest first; the first is the one being copied while `copying`.
    private var queue: [String] = []
    private var queued: Set<String> = []
    private var copying = false
    private var failures = 0
    /// Monotonic seconds before which no copy starts (the backoff).
    private var notBefore = 0.0
    private(set) var lastSuccess: Double?
    private(set) var lastError: String?

    /// Starts the "replicator" thread; nil without a remote.
    init?(config: RecdConfig, deliver: @escaping SlowRequestWorker.Deliver) throws(SystemError) {
        guard let remote = config.replicate.remote else { return nil }
        settings = config.replicate
        self.remote = remote
        archiveDirectory = config.archive.dir
        copier = RcloneCopier(settings: settings, remote: remote, stateDirectory: config.daemon.stateDir)
        runner = try SlowRequestWorker(name: "replicator", deliver: deliver)
    }

    /// Start-up, after the archive's recovery: queues every indexed segment not yet copied.
    func archiveOpened(recovered: [SegmentRecord]) { start() }

    func start() {
        lastSuccess = copier.savedLastSuccess()
        do {
            let opened = try ArchiveIndex(path: archiveDirectory + "/index.sqlite")
            index = ReplicatorIndex(opened)
            for record in try opened.unreplicated(to: remote) { enqueue(record.path) }
        } catch {
            lastError =
                "cannot read the archive index: \(error); segments wait until `recctl archive reindex` rebuilds it"
            Log.error("replication: \(lastError!)")
        }
        if !queue.isEmpty { Log.notice("replication to \(remote): \(queue.count) finished segments to copy") }
        pump()
    }

    /// A segment is finished and chained (never a `.partial`): queue it.
    func segmentFinished(_ record: SegmentRecord) {
        guard !record.path.hasSuffix(SegmentWriter.partialSuffix) else { return }
        enqueue(record.path)
        pump()
    }

    /// From the tick: starts the next copy once the backoff is over.
    func tick(now: Double) { pump(now: now) }

    /// `status.replication`.
    func contribute(to status: inout StatusInfo) { status.replication = self.status }

    var status: StatusInfo.Replication {
        StatusInfo.Replication(remote: remote, backlog: queue.count, lastSuccess: lastSuccess, lastError: lastError)
    }

    /// Shutdown: a copy in flight is ended (its rclone killed); the segment stays queued in the
    /// index and is copied again at the next start.
    func stop() { runner.stop() }

    private func enqueue(_ path: String) {
        guard queued.insert(path).inserted else { return }
        queue.append(path)
    }

    private func pump(now: Double = SystemClock.monotonicSeconds()) {
        guard !copying, let path = queue.first, now >= notBefore else { return }
        copying = true
        let copier = copier
        let relative = relativePath(path)
        let (index, remote) = (index, remote)
        runner.submit(
            for: nil,
            { job in
                let outcome = copier.replicate(local: path, relative: relative, isCancelled: { job.isCancelled })
                // Marked here, on the replicator thread: an index write (an fsync'd SQLite
                // transaction) has no place on the control thread.
                if case .copied = outcome, let index {
                    do { try index.index.markReplicated(path: path, to: remote) } catch {
                        Log.warning("replication: cannot mark \(path) as copied in the index: \(error)")
                    }
                }
                return outcome
            }
        ) { [weak self] outcome in self?.finished(path, outcome) }
    }

    private func relativePath(_ path: String) -> String {
        let root = archiveDirectory.hasSuffix("/") ? archiveDirectory : archiveDirectory + "/"
        return path.hasPrefix(root) ? String(path.dropFirst(root.count)) : FileSystem.fileName(of: path)
    }

    private func finished(_ path: String, _ outcome: ReplicationOutcome) {
        copying = false
        switch outcome {
        case .copied, .gone:
            if case .copied(let time) = outcome {
                lastSuccess = time
                lastError = nil
            } else {
                Log.warning("replication: \(path) is gone from the archive; nothing to copy")
            }
            failures = 0
            notBefore = 0
            queue.removeFirst()
            queued.remove(path)
        case .failed(let message):
            failures += 1
            let wait = settings.backoff(afterFailures: failures)
            notBefore = SystemClock.monotonicSeconds() + wait
            lastError = message
            Log.warning(
                "replication of \(path): \(message); \(Readable.count(queue.count, "segment")) wait, next try in "
                    + Readable.duration(wait))
        }
        pump()
    }
}

/// The replication queue's own index connection. The control thread reads the queue from it at
/// start-up, before any copy; from then on only the replicator thread uses it, one copy at a
/// time, to mark what was copied (hence `@unchecked Sendable`).
private final class ReplicatorIndex: @unchecked Sendable {
    let index: ArchiveIndex
    init(_ index: ArchiveIndex) { self.index = index }
}

// `.partial` segments whose recovery failed: at start (the disk full, a write error) or left by
// a recorder that could not finish them. They are kept here with why, shown in `status` and
// /metrics, and recovered again on the slow worker once the cause is gone: for a full disk,
// when there is room for the recovered copy; for anything else, every 30 s. `prove` reports
// each as unproven meanwhile (its file proves nothing until it is recovered and chained).
//
// Threads: the control thread (RecorderService's, which holds the list and runs the retries on
// its slow worker; a recovered segment goes to its features as a finished one). Space is asked (one statvfs) at most once a second, and
// only while a partial waits for it.
import Archive
import ControlProtocol
import Platform
import SystemSupport

/// The partials waiting for another recovery, and when each is tried. A value owned by
/// `RecorderService`; control thread.
struct UnrecoveredPartials {
    struct Entry {
        var path: String
        /// When its recovery first failed (wall clock), and why it failed last.
        var since: UTCTime
        var error: ArchiveError
        /// Not tried again before this (monotonic seconds).
        var retryAt: Double
        /// A recovery of it is on the worker.
        var running = false

        var waitsForSpace: Bool { if case .diskFull = error { true } else { false } }
    }

    private(set) var entries: [String: Entry] = [:]
    private var lastSpaceCheck = -Double.infinity

    /// A failure other than a full disk is tried again this often (seconds).
    static let retryInterval = 30.0
    /// A recovery writes a copy about the partial's size beside it: it waits for twice that and
    /// this much more.
    static let spareBytes: Int64 = 1 << 20

    var isEmpty: Bool { entries.isEmpty }

    /// Records that recovering `path` failed with `error` (monotonic `now`).
    mutating func failed(_ path: String, error: ArchiveError, now: Double) {
        var entry = entries[path] ?? Entry(path: path, since: UTCTime.now(), error: error, retryAt: now)
        entry.error = error
        entry.running = false
        entry.retryAt = entry.waitsForSpace ? now + 1 : now + Self.retryInterval
        entries[path] = entry
    }

    /// Forgets `path` (recovered, or gone).
    mutating func resolved(_ path: String) { entries[path] = nil }

    /// The partials to try again now: each marked running until `failed` or `resolved`.
    /// `freeBytes` is asked once at most per second, only when one waits for space.
    mutating func due(now: Double, freeBytes: () -> Int64?) -> [String] {
        var free: Int64?
        if entries.values.contains(where: { $0.waitsForSpace && !$0.running && now >= $0.retryAt }),
            now - lastSpaceCheck >= 1
        {
            lastSpaceCheck = now
            free = freeBytes()
        }
        var ready: [String] = []
        for (path, entry) in entries where !entry.running && now >= entry.retryAt {
            if entry.waitsForSpace {
                guard let free, free >= Self.neededBytes(for: path) else { continue }
            }
            entries[path]?.running = true
            ready.append(path)
        }
        return ready.sorted()
    }

    /// Free bytes a recovery of `path` waits for: twice its size and a megabyte.
    static func neededBytes(for path: String) -> Int64 {
        2 * (FileSystem.size(of: path) ?? 0) + spareBytes
    }

    /// `status`'s `archive.unrecovered`, by path.
    func infos(archiveDir: String) -> [StatusInfo.UnrecoveredPartial] {
        entries.values.sorted { $0.path < $1.path }.map { entry in
            let resumes =
                entry.waitsForSpace
                ? "\(RecorderRecovery.mebibytes(Self.neededBytes(for: entry.path))) are free in \(archiveDir)"
                : "recd tries again every \(Int(Self.retryInterval)) s"
            return StatusInfo.UnrecoveredPartial(
                path: entry.path, since: entry.since.iso8601, error: entry.error.description, resumesWhen: resumes)
        }
    }
}

extension UnrecoveredPartials {
    /// Recovers again, on `worker`, the partials whose cause of failure is gone; `completion`
    /// gets each outcome on the control thread (for `settle`).
    mutating func retry(
        now: Double, in directory: String, on worker: SlowRequestWorker,
        completion: @escaping @Sendable (RecoveryResult) -> Void
    ) {
        for path in due(now: now, freeBytes: { FileSystem.space(at: directory)?.availableBytes }) {
            worker.submit(for: nil, { _ in PartialRecovery.recover(partialPath: path) }, completion: completion)
        }
    }

    /// A retried recovery's outcome, on the control thread: the segment it recovered, if any.
    mutating func settle(_ result: RecoveryResult) -> SegmentRecord? {
        let path = result.partialPath
        switch result.outcome {
        case .recovered(let record):
            resolved(path)
            Log.notice("\(path) recovered at last: \(record.path)")
            return record
        case .alreadyRecovered, .unrecoverable:
            resolved(path)
            Log.notice("recovery of \(path): \(result.outcome)")
        case .inUse:
            failed(
                path, error: .invalidArgument("a recorder or another recovery holds it"),
                now: SystemClock.monotonicSeconds())
        case .failed(let error):
            if !FileSystem.exists(path) {
                resolved(path)
                return nil
            }
            Log.warning("\(path) is still not recovered: \(error)")
            failed(path, error: error, now: SystemClock.monotonicSeconds())
        }
        return nil
    }
}

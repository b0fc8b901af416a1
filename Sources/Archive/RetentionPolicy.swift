// Deleting old segments (SPEC §9): past a maximum age, or while free space is below a floor;
// oldest first, never a file being written.
// Threads: `enforce` runs on the thread that owns the index connection it is given.

import ArchiveProof
import Platform

/// What `RetentionPolicy.enforce` did. A plain value: any thread.
public struct RetentionReport: Hashable, Sendable {
    /// Segments deleted (files and index rows), oldest first.
    public var deleted: [String]
    /// Segments that should have gone but could not be deleted, with why.
    public var failures: [String: ArchiveError]
    /// Free space after enforcing, in percent (nil when statvfs failed).
    public var freePercent: Double?
}

/// `[archive] max_age_days` and `min_free_percent`. A plain value: any thread.
public struct RetentionPolicy: Hashable, Sendable {
    /// Segments whose last sample is older than this many days are deleted; nil: no limit.
    public var maxAgeDays: Int?
    /// While the archive's file system has less free space than this (percent of its size),
    /// the oldest segments are deleted; nil: no floor.
    public var minFreePercent: Double?
    /// `[replicate] remote`: while one is set, a segment not yet copied there is never
    /// deleted, whatever its age or the free space.
    public var replicationRemote: String?

    public init(maxAgeDays: Int? = nil, minFreePercent: Double? = nil, replicationRemote: String? = nil) {
        self.maxAgeDays = maxAgeDays
        self.minFreePercent = minFreePercent
        self.replicationRemote = replicationRemote
    }

    /// Deletes the oldest finished segments of the index while they are over age or the file
    /// system is below the free-space floor. Never touches `.partial` files or `openPaths`
    /// (the recorders' `openPaths`), nor a segment not yet copied to `replicationRemote`;
    /// removes the index rows of what it deleted (and of files
    /// already gone), and day folders left empty.
    ///
    /// Threads: the thread that owns `index` (in recd, the worker thread with its own index
    /// connection). Blocks on file deletion.
    ///
    /// With `chains`, a chained segment gets its `removed` entry before its file goes (a crash
    /// between the two leaves an entry that says removed beside a file that proves anyway);
    /// when that entry cannot be written the segment stays, and the failure is reported.
    public func enforce(
        archiveDirectory: String, index: ArchiveIndex, openPaths: Set<String>, now: UTCTime,
        chains: ChainKeeper? = nil
    ) throws(ArchiveError) -> RetentionReport {
        try enforce(
            archiveDirectory: archiveDirectory, index: index, openPaths: openPaths, now: now, chains: chains,
            freePercent: { FileSystem.freePercent(at: $0) })
    }

    /// `freePercent` is the file system query (a seam for tests).
    func enforce(
        archiveDirectory: String, index: ArchiveIndex, openPaths: Set<String>, now: UTCTime,
        chains: ChainKeeper? = nil, freePercent: (String) -> Double?
    ) throws(ArchiveError) -> RetentionReport {
        var report = RetentionReport(deleted: [], failures: [:], freePercent: freePercent(archiveDirectory))
        guard maxAgeDays != nil || minFreePercent != nil else { return report }
        let cutoff = maxAgeDays.map { now.advanced(bySeconds: -Double($0) * 86_400) }
        var notReplicated: Set<String> = []
        if let remote = replicationRemote { notReplicated = Set(try index.unreplicated(to: remote).map(\.path)) }
        for record in try index.list() where !notReplicated.contains(record.path) {
            let tooOld = cutoff.map { record.endTime < $0 } ?? false
            let tooFull = minFreePercent.map { floor in (report.freePercent ?? 100) < floor } ?? false
            guard tooOld || tooFull else { continue }
            if openPaths.contains(record.path) || record.path.hasSuffix(SegmentWriter.partialSuffix)
                || openPaths.contains(record.path + SegmentWriter.partialSuffix)
            {
                continue
            }
            if let chains, FileSystem.exists(record.path), let proof = try index.proof(path: record.path) {
                do throws(ArchiveError) {
                    try SegmentChaining.markRemoved(record, sha256: proof.sha256, at: now, keeper: chains)
                } catch {
                    report.failures[record.path] = error
                    continue
                }
            }
            var removed = true
            do throws(SystemError) {
                try FileSystem.remove(record.path)
            } catch {
                guard error.errno == .noSuchFileOrDirectory else {
                    report.failures[record.path] = ArchiveError(error)
                    continue
                }
                removed = false
            }
            try index.remove(path: record.path)
            if removed { report.deleted.append(record.path) }
            removeEmptyFolders(from: FileSystem.directoryName(of: record.path), upTo: archiveDirectory)
            report.freePercent = freePercent(archiveDirectory)
        }
        return report
    }

    private func removeEmptyFolders(from directory: String, upTo root: String) {
        let stop = root.hasSuffix("/") ? String(root.dropLast()) : root
        var current = directory
        while current.count > stop.count && current.hasPrefix(stop) {
            guard FileSystem.removeEmptyDirectory(current) else { return }
            current = FileSystem.directoryName(of: current)
        }
    }
}

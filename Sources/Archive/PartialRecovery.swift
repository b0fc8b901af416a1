// Turning leftover `.partial` segments (recd stopped without finishing them) into valid FLAC
// files (SPEC §9): decode as far as valid frames go, re-encode those samples into a new file
// with correct STREAMINFO (total samples, MD5) and the original comments plus RECOVERED=yes,
// rename it to the final name, remove the partial.

import Platform

/// What happened to one partial file. A plain value: any thread.
public struct RecoveryResult: Hashable, Sendable {
    public enum Outcome: Hashable, Sendable {
        /// Re-encoded into a valid file (the record says where and how many frames).
        case recovered(SegmentRecord)
        /// A previous recovery (or a finish interrupted after its rename) had already made
        /// the final file; the partial was removed.
        case alreadyRecovered(path: String)
        /// Not one frame could be decoded: moved aside to `movedTo` (never deleted).
        case unrecoverable(movedTo: String)
        /// A recorder still writes it (it is locked): left alone.
        case inUse
        /// Recovery failed (e.g. the disk is full); the partial is left as it was.
        case failed(ArchiveError)
    }

    public var partialPath: String
    public var outcome: Outcome
}

/// Recovers partial segments. Run it at start, before recorders start (partials that a
/// recorder holds locked are skipped anyway).
///
/// Threads: the calling thread (the control thread at start-up); it blocks while it decodes
/// and encodes.
public enum PartialRecovery {
    /// The suffix of a recovery's own temporary file.
    static let recoveringSuffix = ".recovering"
    /// What an undecodable partial is renamed to end with.
    public static let unrecoverableSuffix = ".unrecoverable"

    /// Recovers every `*.flac.partial` under `archiveDirectory` (recursively), oldest name first.
    public static func recoverAll(in archiveDirectory: String) -> [RecoveryResult] {
        FileSystem.files(under: archiveDirectory, withSuffix: ".flac" + SegmentWriter.partialSuffix).map {
            recover(partialPath: $0)
        }
    }

    /// Recovers one partial file (`<name>.flac.partial`).
    public static func recover(partialPath: String) -> RecoveryResult {
        do throws(ArchiveError) {
            return RecoveryResult(partialPath: partialPath, outcome: try recoverOrThrow(partialPath))
        } catch {
            return RecoveryResult(partialPath: partialPath, outcome: .failed(error))
        }
    }

    private static func recoverOrThrow(_ partialPath: String) throws(ArchiveError) -> RecoveryResult.Outcome {
        guard partialPath.hasSuffix(".flac" + SegmentWriter.partialSuffix) else {
            throw .invalidArgument("\(partialPath) is not a .flac.partial file")
        }
        let finalPath = String(partialPath.dropLast(SegmentWriter.partialSuffix.count))
        // Held for the whole recovery: a recorder writing it, or another recovery, keeps out.
        // In the archive, where others may write: never through a link, never waiting on a FIFO.
        let lock = try archiveCall { () throws(SystemError) in try OwnedFile(partialPath, .readOnlyNoFollow) }
        guard try archiveCall({ () throws(SystemError) in try lock.status() }).kind == .regular else {
            throw .unreadableFile(path: partialPath, reason: "not a regular file; recd recovers only the files it wrote")
        }
        guard lock.tryLockExclusive() else { return .inUse }

        // A finish interrupted between link and unlink leaves both names on one file.
        if let final = FileSystem.identity(of: finalPath), final == lock.identity() {
            try removePartial(partialPath)
            return .alreadyRecovered(path: finalPath)
        }
        // A recovery interrupted before it removed the partial left its temporary file.
        let stale = finalPath + recoveringSuffix
        if FileSystem.exists(stale) { try? FileSystem.remove(stale) }

        // Pass 1: how far do valid frames go, and what do the header and comments say?
        let survey = try SegmentDecoding.decode(path: partialPath, checkMD5: false)
        guard let info = survey.streamInfo, survey.frames > 0 else {
            return .unrecoverable(movedTo: try moveAside(partialPath, finalPath: finalPath))
        }
        if let existing = try? SegmentRecord.read(path: finalPath), existing.recovered,
            existing.frames == survey.frames
        {
            try removePartial(partialPath)
            return .alreadyRecovered(path: finalPath)
        }

        // Pass 2: re-encode exactly those frames.
        var comments = survey.comments.filter {
            let name = $0.name.uppercased()
            return name != CommentName.gaps && name != CommentName.gapsTruncated && name != CommentName.recovered
                && name != CommentName.endReason
        }
        comments.append(VorbisComment(CommentName.recovered, "yes"))
        let originalReason = survey.comments.last { $0.name.uppercased() == CommentName.endReason }?.value
        let originalGapsText = survey.comments.last { $0.name.uppercased() == CommentName.gaps }?.value
        let originalGaps = originalGapsText.flatMap { SegmentGap.parse(commentValue: $0) } ?? []
        let format = SegmentFormat(
            sampleRate: info.sampleRate, channels: info.channels, bitsPerSample: info.bitsPerSample,
            compressionLevel: 5)
        let writer = try SegmentWriter(
            path: finalPath, temporarySuffix: recoveringSuffix, format: format, comments: comments,
            expectedFrames: survey.frames)
        // The partial stays until the new file is finished (and fsync'ed): no need to sync on the way.
        writer.syncsPeriodically = false
        var writeError: ArchiveError?
        let copied = try SegmentDecoding.decode(path: partialPath, checkMD5: false, frameLimit: survey.frames) {
            samples, frames in
            do throws(ArchiveError) {
                try writer.write(integers: samples, frames: frames)
                return true
            } catch {
                writeError = error
                return false
            }
        }
        if let writeError {
            writer.abandon()
            try? FileSystem.remove(writer.partialPath)
            throw writeError
        }
        guard copied.frames == survey.frames else {
            writer.abandon()
            try? FileSystem.remove(writer.partialPath)
            throw .unreadableFile(
                path: partialPath, reason: "decoded \(copied.frames) frames the second time, \(survey.frames) the first"
            )
        }
        for gap in originalGaps where gap.position <= survey.frames {
            writer.recordGap(gap)
        }
        let finished: FinishedSegment
        do throws(ArchiveError) {
            finished = try writer.finish(reason: originalReason.map(EndReason.init(rawValue:)) ?? .crash)
        } catch {
            try? FileSystem.remove(writer.partialPath)
            throw error
        }
        try removePartial(partialPath)
        var record = try SegmentRecord.read(path: finished.path)
        record.gaps = finished.gaps
        return .recovered(record)
    }

    private static func removePartial(_ path: String) throws(ArchiveError) {
        try archiveCall { () throws(SystemError) in try FileSystem.remove(path) }
        try? FileSystem.syncDirectory(FileSystem.directoryName(of: path))
    }

    private static func moveAside(_ partialPath: String, finalPath: String) throws(ArchiveError) -> String {
        var attempt = 0
        while true {
            let target = finalPath + unrecoverableSuffix + (attempt == 0 ? "" : ".\(attempt)")
            do throws(SystemError) {
                try FileSystem.renameNoReplace(partialPath, target)
                try? FileSystem.syncDirectory(FileSystem.directoryName(of: target))
                return target
            } catch {
                guard error.errno == .fileExists, attempt < 10_000 else { throw ArchiveError(error) }
            }
            attempt += 1
        }
    }
}

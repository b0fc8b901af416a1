// Putting finished segments into their hash chains (docs/archive-proof.md): the file's SHA-256
// of its final bytes (after the STREAMINFO and end comments were rewritten), an entry in the
// chain of its stream and day beside it, the day's head signed again. Retention adds a
// `removed` entry before it deletes a chained segment.
//
// Threads: the caller's, never the control thread nor an archiver (hashing an hour of audio
// reads hundreds of megabytes): recd's "prover" worker, and retention's slow worker.

import ArchiveProof
import Platform

/// The archive's side of the chains: from `SegmentRecord`s to chain entries. Pure functions
/// over the keeper it is given: any thread.
public enum SegmentChaining {
    /// Hashes `record`'s file and appends its entry; returns what the index keeps of it.
    public static func chain(_ record: SegmentRecord, keeper: ChainKeeper) throws(ArchiveError) -> SegmentProof {
        guard let relative = ChainLayout.relative(record.path, to: keeper.archiveDirectory) else {
            throw .invalidArgument(
                "\(record.path) is not inside the archive \(keeper.archiveDirectory); only its segments are chained")
        }
        do throws(ProofError) {
            let digest = try SHA256Digest.ofFile(record.path)
            let entry = try keeper.append(
                ChainKeeper.Facts(
                    kind: .segment, sha256: digest, start: record.startTime.iso8601, frames: record.frames,
                    endReason: record.endReason?.rawValue ?? EndReason.crash.rawValue, path: relative),
                chain: ChainLayout.chainPath(ofSegment: relative, app: record.app, stream: record.stream))
            return SegmentProof(sha256: digest, chainPrevious: entry.previous, chainEntry: entry.hash)
        } catch {
            throw .proof(error)
        }
    }

    /// Appends the entry that says retention deleted `record` (whose chain entry held
    /// `sha256`) at `now`. Its segment entry stays: the day still proves.
    public static func markRemoved(
        _ record: SegmentRecord, sha256: SHA256Digest, at now: UTCTime, keeper: ChainKeeper
    ) throws(ArchiveError) {
        guard let relative = ChainLayout.relative(record.path, to: keeper.archiveDirectory) else { return }
        do throws(ProofError) {
            try keeper.append(
                ChainKeeper.Facts(
                    kind: .removed, sha256: sha256, start: record.startTime.iso8601, frames: record.frames,
                    endReason: "retention", path: relative, removedAt: now.iso8601),
                chain: ChainLayout.chainPath(ofSegment: relative, app: record.app, stream: record.stream))
        } catch {
            throw .proof(error)
        }
    }
}

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
            let digest = try SHA256Digest.ofArchiveFile(record.path)
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

    /// The chain `record` belongs in (its path under the root); nil for a file outside the archive.
    public static func chainPath(of record: SegmentRecord, keeper: ChainKeeper) -> String? {
        ChainLayout.relative(record.path, to: keeper.archiveDirectory).map {
            ChainLayout.chainPath(ofSegment: $0, app: record.app, stream: record.stream)
        }
    }

    /// What changed in the chain at `chain` (of `app`'s `stream`) that does not hold what recd
    /// signed, as far as the index tells (each segment's file hash and its chain line, noted
    /// when recd chained it): every line that is not the one recd chained for its segment, and
    /// every segment recd chained there that no line names any more; at most `limit`, in words.
    /// For the log and the alarm: the verdict is the chain's against recd's record, which an
    /// archive writer cannot reach (the index lives in the archive and could be rewritten too).
    ///
    /// Threads: the thread that owns `index`; reads the chain and the day's index rows.
    public static func differences(
        inChain chain: String, app: String, stream: String, keeper: ChainKeeper, index: ArchiveIndex, limit: Int = 8
    ) -> [String] {
        guard let lines = try? keeper.lines(ofChain: chain) else { return [] }
        func short(_ digest: SHA256Digest) -> String { String(digest.hex.prefix(12)) }
        var found: [String] = []
        var named: Set<String> = []
        for line in lines {
            guard let entry = line.entry, entry.kind == .segment else { continue }
            named.insert(entry.path)
            let path = keeper.archiveDirectory + "/" + entry.path
            guard let proof = (try? index.proof(path: path)) ?? nil, proof.chainEntry != line.hash else { continue }
            found.append(
                proof.sha256 != entry.sha256
                    ? "entry \(line.number) (\(entry.path)): recd chained the file with SHA-256 \(short(proof.sha256))…, "
                        + "the line now says \(short(entry.sha256))… (the file replaced, its line rewritten)"
                    : "entry \(line.number) (\(entry.path)): the line hashes to \(short(line.hash))…, recd chained "
                        + "\(short(proof.chainEntry))… (its fields or its link rewritten)")
        }
        let day = FileSystem.directoryName(of: chain).split(separator: "/").joined(separator: "-")
        let since = UTCTime(iso8601: day + "T00:00:00.000000Z")
        for record in (try? index.list(app: app, since: since)) ?? [] where record.stream == stream {
            guard let relative = ChainLayout.relative(record.path, to: keeper.archiveDirectory),
                ChainLayout.chainPath(ofSegment: relative, app: app, stream: stream) == chain,
                !named.contains(relative), ((try? index.proof(path: record.path)) ?? nil) != nil
            else { continue }
            found.append("\(relative): recd chained it here, and no line names it now")
        }
        return Array(found.prefix(limit))
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

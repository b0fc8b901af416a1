// A segment still being written, as its archiver last published it: what
// `archive.list` shows as `open`, and what an export reads, up to its last complete FLAC frame,
// alongside the finished segments around it.

import Codec
import Platform

/// The open segment of one file of a recorder at one moment. A plain value: any thread.
public struct OpenSegment: Hashable, Sendable {
    /// `path` is the planned final name, `frames` the samples (per channel) in the complete
    /// FLAC frames written so far, `bytes` where the last of them ends, `endReason` nil, `gaps`
    /// those recorded up to `frames`.
    public var record: SegmentRecord
    /// Where the data is until the segment is finished (`<path>.partial`).
    public var partialPath: String

    public init(record: SegmentRecord, partialPath: String) {
        self.record = record
        self.partialPath = partialPath
    }

    /// The file, readable up to `record.bytes` and no further: the `.partial`, or, when the
    /// segment was finished and renamed meanwhile, its final file. Finishing rewrites only the
    /// metadata before the first frame (STREAMINFO, seek table, comments in the padding) and
    /// appends after the last frame, so the frames up to `record.bytes` are the same bytes.
    public func open() throws(MediaError) -> ReadOnlyFile {
        do throws(MediaError) {
            return try ReadOnlyFile(path: partialPath, limit: record.bytes)
        } catch {
            if FileSystem.exists(partialPath) { throw error }
        }
        do throws(MediaError) {
            return try ReadOnlyFile(path: record.path, limit: record.bytes)
        } catch {
            throw MediaError(
                .io, path: record.path,
                message: "the segment being written was finished under another name while the export ran; "
                    + "export again (`recctl archive list` shows its final path)", cause: error.cause)
        }
    }
}

/// What an export may read of one recorder's newest audio, taken at one instant: its open
/// segments and the finished ones the index may not hold yet. A plain value: any thread.
public struct RecorderSnapshot: Sendable {
    public var open: [OpenSegment]
    /// Finished, reported to the control thread, not yet taken into its index.
    public var unindexed: [SegmentRecord]

    public init(open: [OpenSegment], unindexed: [SegmentRecord]) {
        self.open = open
        self.unindexed = unindexed
    }
}

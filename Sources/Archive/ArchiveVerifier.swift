// Decoding a whole segment to check it (`recctl archive verify`).

/// The verdict on one file. A plain value: any thread.
public struct VerifyResult: Hashable, Sendable {
    public enum Outcome: Hashable, Sendable {
        /// Every frame decoded and the MD5 in STREAMINFO matches (or there is none: see
        /// `md5Checked`).
        case ok
        /// Every frame decoded but the samples do not match STREAMINFO's MD5.
        case md5Mismatch
        /// Decoding stopped: libFLAC's error name, or a frame count that disagrees with
        /// STREAMINFO.
        case decodeError(String)
        /// The file could not be opened or is not FLAC.
        case unreadable(ArchiveError)
    }

    public var path: String
    public var outcome: Outcome
    /// Frames decoded without error.
    public var frames: Int
    /// Frames STREAMINFO promises (0: unknown).
    public var expectedFrames: Int
    /// Whether STREAMINFO carried an MD5 to check against.
    public var md5Checked: Bool

    public var isOK: Bool { outcome == .ok }
}

/// Checks segments by decoding them completely with MD5 checking on.
///
/// Threads: the calling thread (it blocks while it decodes; a long file takes a while).
public enum ArchiveVerifier {
    public static func verify(path: String) -> VerifyResult {
        let summary: DecodeSummary
        do throws(ArchiveError) {
            summary = try SegmentDecoding.decode(path: path, checkMD5: true)
        } catch {
            return VerifyResult(
                path: path, outcome: .unreadable(error), frames: 0, expectedFrames: 0, md5Checked: false)
        }
        let expected = summary.streamInfo?.totalSamples ?? 0
        let md5Checked = summary.streamInfo?.hasMD5 ?? false
        let outcome: VerifyResult.Outcome
        if let error = summary.error {
            outcome = .decodeError(error)
        } else if summary.md5Mismatch {
            outcome = .md5Mismatch
        } else if expected > 0 && summary.frames != expected {
            outcome = .decodeError("decoded \(summary.frames) frames, STREAMINFO says \(expected)")
        } else {
            outcome = .ok
        }
        return VerifyResult(
            path: path, outcome: outcome, frames: summary.frames, expectedFrames: expected, md5Checked: md5Checked)
    }
}

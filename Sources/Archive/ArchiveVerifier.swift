// Decoding a whole segment to check it (`recctl archive verify`), and, for a chained one, its
// bytes against its hash chain's entry, the chain checked against what recd signed: a file
// re-encoded into valid FLAC decodes fine, and only its chain can tell.

import ArchiveProof
import Platform

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
        /// It decodes, but it is not the segment recd chained: its bytes differ from its chain
        /// entry's, its chain no longer names it, or its chain does not hold what recd signed.
        case notAsChained(String)
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
    /// Decodes the file at `path`; with `chain` (the keeper, and the segment's chain under the
    /// root, for a segment recd chained), a file that decodes is also checked against it.
    /// `chained` memoises the chains read, for many segments of one chain.
    public static func verify(
        path: String, chain: (keeper: ChainKeeper, path: String)?,
        chained: inout [String: Result<[String: SHA256Digest], ProofError>]
    ) -> VerifyResult {
        var result = verify(path: path)
        guard result.isOK, let chain, let relative = ChainLayout.relative(path, to: chain.keeper.archiveDirectory)
        else { return result }
        let entries =
            chained[chain.path]
            ?? Result { () throws(ProofError) in try chain.keeper.segments(inChain: chain.path) }
        chained[chain.path] = entries
        switch entries {
        case .failure(let error):
            result.outcome = .notAsChained(error.message)
        case .success(let segments):
            guard let sha256 = segments[relative] else {
                result.outcome = .notAsChained("recd chained it, but its chain \(chain.path) does not name it")
                return result
            }
            do throws(ProofError) {
                if try SHA256Digest.ofArchiveFile(path) != sha256 {
                    result.outcome = .notAsChained(
                        "its SHA-256 is not the one its entry in \(chain.path) holds: it was altered or replaced "
                            + "after recd chained it")
                }
            } catch {
                result.outcome = .notAsChained(error.message)
            }
        }
        return result
    }

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

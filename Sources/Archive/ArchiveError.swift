// The archive's failures, mirroring the C codes they come from (POSIX errno, libFLAC encoder
// states and init statuses, SQLite result codes), each with a message that says what to do.

import ArchiveProof
import Codec
import Platform
import SessionPolicy

/// Why an archive operation failed. Environment failures (full disk, missing directory, a
/// corrupt file) are thrown as these; programmer errors (a wrong channel count in a write)
/// trap instead. A plain value: any thread.
public enum ArchiveError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The file system holding `path` is full (ENOSPC) or the user's quota is spent (EDQUOT).
    case diskFull(path: String)
    /// A system call failed: its operation (e.g. `open`, `fdatasync`), path and errno.
    case system(SystemError)
    /// The FLAC encoder refused its settings (FLAC__StreamEncoderInitStatus, Codec's).
    case encoderInit(FLACEncoderInitStatus, path: String)
    /// The FLAC encoder stopped working (FLAC__StreamEncoderState, Codec's).
    case encoder(FLACEncoderState, path: String)
    /// A configuration value or argument is out of range.
    case invalidArgument(String)
    /// A file is not a FLAC file recd can read, or its metadata is damaged.
    case unreadableFile(path: String, reason: String)
    /// The SQLite index failed (SQLite result code and its message).
    case index(code: Int32, message: String)
    /// The hash chain or the signing key failed (ArchiveProof's error, with its advice).
    case proof(ProofError)
    /// A segment recd has no note of writing (`SegmentLedger`): it is not chained.
    case notOwed(path: String)

    /// What went wrong and what to do about it.
    public var message: String {
        switch self {
        case .diskFull(let path):
            return "the disk holding \(path) is full; free space (lower [archive] max_age_days "
                + "or raise min_free_percent so retention deletes old segments): the recorder starts again by "
                + "itself once enough is free (`recctl status` says how much)"
        case .system(let error):
            return "\(error.operation) \(error.path ?? "") failed: \(error.errno); \(advice(error.errno))"
        case .encoderInit(let status, let path):
            return "the FLAC encoder for \(path) refused its settings (\(status.name)); "
                + "use 1...8 channels, 16 or 24 bits, a sample rate of 1...655350 Hz and compression 0...8"
        case .encoder(let state, let path):
            return "the FLAC encoder for \(path) stopped (\(state.name)); the segment is kept as a "
                + ".partial file that recd recovers on its next start"
        case .invalidArgument(let text):
            return text
        case .unreadableFile(let path, let reason):
            return "\(path) is not a readable FLAC file (\(reason)); check it with `flac -t`"
        case .index(let code, let message):
            return "the archive index failed (SQLite \(code): \(message)); "
                + "`recctl archive reindex` rebuilds it from the files"
        case .proof(let error):
            return "the archive's hash chain: \(error.message)"
        case .notOwed(let path):
            return "\(path) is in the archive or its index, but recd has no note of writing it (its state directory's "
                + "\(SegmentLedger.directoryName)): someone else put it there, so recd does not chain or sign it; "
                + "`recctl archive prove` lists it as unchained"
        }
    }

    public var description: String { message }

    /// The SPEC §2 code this failure is reported with.
    public var sessionError: SessionError {
        switch self {
        case .diskFull: return SessionError(.cannotStartRecording, message)
        case .invalidArgument: return SessionError(.badParam, message)
        default: return SessionError(.unspecified, message)
        }
    }

    /// `diskFull` for ENOSPC and EDQUOT (on the failed call's path), else `system`.
    init(_ error: SystemError) {
        if error.errno == .noSpace || error.errno == .diskQuotaExceeded {
            self = .diskFull(path: error.path ?? "")
        } else {
            self = .system(error)
        }
    }
}

/// What a person can do about a failed system call in the archive.
private func advice(_ errno: Errno) -> String {
    switch errno {
    case .permissionDenied, .notPermitted: return "give recd's user write access to the archive directory"
    case .noSuchFileOrDirectory, .notDirectory: return "check that [archive] dir exists"
    case .readOnlyFileSystem: return "the archive's file system is mounted read-only; remount it read-write"
    case .ioError: return "the storage reports an I/O error; check the disk (dmesg)"
    case .tooManyOpenFiles, .tooManyOpenFilesInSystem: return "too many open files; raise the limit (LimitNOFILE)"
    case .fileExists: return "a file of that name exists; recd never overwrites files"
    default: return "check the archive directory and its file system"
    }
}

/// Runs `body`, turning a `SystemError` it throws into the `ArchiveError` for it (`diskFull`
/// for ENOSPC and EDQUOT).
func archiveCall<T>(_ body: () throws(SystemError) -> T) throws(ArchiveError) -> T {
    do {
        return try body()
    } catch {
        throw ArchiveError(error)
    }
}

// Which segments recd itself wrote and has not chained yet, kept in the state directory where
// a writer of the archive cannot reach. The prover chains and signs, besides the segments it
// is handed as they finish, only what this ledger names: after a crash, a `.partial` or an
// index row someone else put in the archive is never taken for one of recd's own.
//
// Threads: any; each call is a few file operations on its own (an archiver notes a segment
// before it creates the file, the prover settles it once chained).

import Platform

/// The segments recd owes its hash chains: one small file (at most `ChainLimits.maximumSmallFileBytes`) per segment under
/// `state_dir/segments-owed`, named by the SHA-256 of the segment's path and holding the path.
/// A plain value: any thread.
public struct SegmentLedger: Hashable, Sendable {
    public let directory: String

    /// `state_dir/segments-owed`.
    public static let directoryName = "segments-owed"
    public init(directory: String) { self.directory = directory }

    /// Notes that recd is about to write `path` (a segment's final name): made durable before
    /// the file exists, so a crash can leave a partial recd wrote but never one it did not note.
    public func owe(_ path: String) throws(ProofError) {
        try proofCall { () throws(SystemError) in
            try FileSystem.makeDirectories(directory, mode: 0o750)
            try AtomicFile.write(Array(path.utf8), to: notePath(of: path), mode: 0o640)
        }
    }

    /// Forgets `path`: chained, or gone. Absent already is fine.
    public func settle(_ path: String) {
        try? FileSystem.remove(notePath(of: path))
    }

    /// Whether recd noted `path` and has not settled it: a regular file at the note's name (never
    /// through a link) holding exactly that path.
    public func owes(_ path: String) -> Bool {
        guard let bytes = try? ChainFiles.readSmall(notePath(of: path))
        else { return false }
        return bytes == Array(path.utf8)
    }

    /// Every path still owed (unreadable notes skipped), sorted.
    public func owedPaths() -> [String] {
        FileSystem.files(under: directory, withSuffix: ".owed").compactMap { note in
            guard let bytes = try? ChainFiles.readSmall(note) else { return nil }
            let path = String(decoding: bytes, as: UTF8.self)
            return notePath(of: path) == note ? path : nil
        }.sorted()
    }

    private func notePath(of path: String) -> String {
        directory + "/" + SHA256Digest.of(Array(path.utf8)).hex + ".owed"
    }
}

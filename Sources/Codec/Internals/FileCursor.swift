// One decoder's place in a ReadOnlyFile: the read, seek, tell and length its library's
// callbacks ask for, served with pread from a position of its own.

/// A read position in a shared `ReadOnlyFile`, for the I/O callbacks of libFLAC's stream
/// decoder and libsndfile's virtual I/O.
///
/// Holds the file (keeping its descriptor open) but never owns the descriptor's file offset:
/// every read is a `pread` at `position`, so cursors on one file, or on `dup`ed descriptors of
/// it, never disturb one another. One thread at a time: its decoder's.
final class FileCursor {
    let file: ReadOnlyFile
    /// Where the next read starts.
    private(set) var position: Int64 = 0
    /// A read returned nothing: the end of the file.
    private(set) var reachedEnd = false
    /// The first I/O failure. The libraries only see a failed callback; their caller reports
    /// this instead of their vaguer status.
    private(set) var failure: MediaError?

    init(file: ReadOnlyFile) {
        self.file = file
    }

    /// Up to `count` bytes into `buffer`; 0 at the end of the file or after a failure (then
    /// `failure` says why).
    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        guard failure == nil, count > 0 else { return 0 }
        do {
            let got = try file.read(into: buffer, count: count, at: position)
            position += Int64(got)
            reachedEnd = got == 0
            return got
        } catch {
            failure = error
            return 0
        }
    }

    /// Moves to `offset` bytes from the start; false for a negative offset.
    func seek(to offset: Int64) -> Bool {
        guard offset >= 0 else { return false }
        position = offset
        reachedEnd = false
        return true
    }

    /// The file's size now, or nil after recording a failure.
    var length: Int64? {
        do {
            return try file.size()
        } catch {
            if failure == nil { failure = error }
            return nil
        }
    }
}

// A FLAC sink on a plain file descriptor: errno is captured in the call that failed (so a full
// disk is told apart from other failures), and the data can be forced to disk with `sync`.

import Glibc

/// Writes an encoder's bytes to a new file, with seek and tell so libFLAC can complete
/// STREAMINFO and the seek table at the end.
///
/// Owns the file descriptor (closed by `close()` or `deinit`). Used on the encoder's thread.
public final class FLACFileSink: FLACStreamSink {
    public let path: String
    /// Why the last operation failed (errno included), for the encoder's error.
    public private(set) var failure: MediaError?
    private var fd: Int32

    /// Creates `path`; throws `.alreadyExists` if it exists: a file is never overwritten.
    public init(creating path: String) throws(MediaError) {
        self.path = path
        fd = try FileProbe.createExclusive(path)
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard fd >= 0 else { return fail(EBADF, "write after close") }
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                let code = errno
                if code == EINTR { continue }
                return fail(code, "write")
            }
            offset += written
        }
        return true
    }

    public func seek(to offset: UInt64) -> FLACSinkSeekResult {
        if lseek(fd, off_t(offset), SEEK_SET) < 0 {
            let code = errno
            if code == ESPIPE { return .unsupported }
            _ = fail(code, "seek")
            return .failed
        }
        return .ok
    }

    public func tell() -> UInt64? {
        let position = lseek(fd, 0, SEEK_CUR)
        return position < 0 ? nil : UInt64(position)
    }

    /// Forces what was written so far to the disk (`fdatasync`): what a crash-safe writer
    /// calls at least once a second (SPEC §9).
    public func sync() throws(MediaError) {
        if fdatasync(fd) != 0 {
            let code = errno
            _ = fail(code, "sync")
            throw failure!
        }
    }

    /// Closes the file; errors the kernel reports only at close (delayed write-back) throw.
    public func close() throws(MediaError) {
        guard fd >= 0 else { return }
        let result = Glibc.close(fd)
        let code = errno
        fd = -1
        if result != 0 && code != EINTR {
            _ = fail(code, "close")
            throw failure!
        }
    }

    /// Closes and deletes the file: for a stream that never got started.
    func discard() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        unlink(path)
    }

    private func fail(_ code: Int32, _ operation: String) -> Bool {
        let advice =
            code == ENOSPC || code == EDQUOT
            ? "the disk is full; free space or lower the retention limits"
            : "check the disk and the directory's permissions"
        failure = MediaError(
            .io, path: path,
            message: "\(operation) failed: \(FileProbe.describe(errno: code)); \(advice)",
            errno: code)
        return false
    }
}

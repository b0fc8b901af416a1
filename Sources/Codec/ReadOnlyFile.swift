// An open audio file that readers share without sharing a file offset.

import Platform

/// A regular file open for reading: what `AudioFileReader`, `FLACDecoder` and the daemon's
/// file players decode.
///
/// Owns its descriptor (through an `OwnedFile`) and closes it exactly once, in `deinit`, when
/// the last reader holding this object is gone. Readers read it only with `pread`, each from a
/// position of its own, never through the descriptor's file offset, so any number of them (on
/// this object, or on `dup`ed descriptors of the same open file, which share one offset) never
/// move one another's place: recd probes a file's header on one thread (its player starter)
/// while a feeder thread decodes the same descriptor.
///
/// `@unchecked Sendable`: after `init` only `pread` and `fstat` are called on the file, which
/// any number of threads may do at once, and nothing but `deinit` closes it.
public final class ReadOnlyFile: @unchecked Sendable {
    /// What messages call the file: its path, or the name a client gave a passed descriptor.
    public let name: String
    private let file: OwnedFile
    /// Bytes past which the file reads as ended (nil: its true end). A segment still being
    /// written is read up to the end of its last complete FLAC frame as it was when the export
    /// was asked for, never into what its writer adds meanwhile.
    public let limit: Int64?

    /// Adopts `descriptor`, which must be a regular file open for reading (`O_RDONLY` or
    /// `O_RDWR`, not `O_PATH`; checked with `fstat` and `fcntl(F_GETFL)`). Ownership passes to
    /// this object whether or not the initializer throws: on failure it closes the descriptor,
    /// so the caller never does. `name` appears in messages only; nothing opens it.
    public convenience init(adopting descriptor: Int32, name: String) throws(MediaError) {
        try self.init(checking: OwnedFile(adopting: descriptor, path: name), name: name, limit: nil)
    }

    /// Opens `path` for reading with this process's rights (non-blocking, so that a FIFO
    /// cannot hang the caller), then checks it as `init(adopting:name:)` does.
    public convenience init(path: String, limit: Int64? = nil) throws(MediaError) {
        let file: OwnedFile
        do {
            file = try OwnedFile(path, .readOnlyNonBlocking)
        } catch {
            throw FileProbe.error(opening: path, error)
        }
        try self.init(checking: file, name: path, limit: limit)
    }

    /// Keeps `file` if it is a regular file open for reading; otherwise it is dropped (and so
    /// closed) with the error.
    private init(checking file: OwnedFile, name: String, limit: Int64?) throws(MediaError) {
        let status: FileStatus
        let access: Descriptor.AccessMode
        do {
            status = try file.status()
            access = try Descriptor.accessMode(file.descriptor, path: name)
        } catch {
            throw MediaError(.io, path: name, message: "cannot examine it: \(MediaError.describe(error))", cause: error)
        }
        switch status.kind {
        case .regular:
            break
        case .directory:
            throw FileProbe.error(opening: name, SystemError(.isDirectory, operation: "open", path: name))
        default:
            throw MediaError(
                .io, path: name,
                message: "it is not a regular file (a device, FIFO or socket); give an audio file")
        }
        guard access == .readOnly || access == .readWrite else {
            throw MediaError(
                .io, path: name, message: "its descriptor is not open for reading; open it with O_RDONLY",
                cause: SystemError(.badFileDescriptor, operation: "fcntl(F_GETFL)", path: name))
        }
        self.file = file
        self.name = name
        self.limit = limit
    }

    /// `pread(2)`: up to `count` bytes at `offset`, never touching the descriptor's shared
    /// file offset. The bytes read, 0 at the end of the file. Any thread.
    func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws(MediaError) -> Int {
        var count = count
        if let limit { count = Int(max(0, min(Int64(count), limit - offset))) }
        guard count > 0 else { return 0 }
        do {
            return try file.read(into: buffer, count: count, at: offset)
        } catch {
            throw MediaError(.io, path: name, message: "cannot read it: \(MediaError.describe(error))", cause: error)
        }
    }

    /// The file's size now (at most `limit`). Any thread.
    func size() throws(MediaError) -> Int64 {
        do {
            let size = try file.size()
            return limit.map { min($0, size) } ?? size
        } catch {
            throw MediaError(.io, path: name, message: "cannot examine it: \(MediaError.describe(error))", cause: error)
        }
    }
}

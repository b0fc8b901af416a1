// An open audio file that readers share without sharing a file offset.

/// A regular file open for reading: what `AudioFileReader` and `FilePlayer` decode.
///
/// Owns its descriptor and closes it exactly once, in `deinit`, when the last reader holding
/// this object is gone. Readers read it only with `pread`, each from a position of its own,
/// never through the descriptor's file offset, so any number of them (on this object, or on
/// `dup`ed descriptors of the same open file, which share one offset) never move one
/// another's place: recd probes a file's header on the control thread while a feeder thread
/// decodes the same descriptor.
///
/// Immutable, hence `Sendable`; any thread may hand it to another.
public final class ReadOnlyFile: Sendable {
    /// What messages call the file: its path, or the name a client gave a passed descriptor.
    public let name: String
    /// Owned by this object; closed in `deinit`.
    let descriptor: Int32

    /// Adopts `descriptor`, which must be a regular file open for reading (`O_RDONLY` or
    /// `O_RDWR`, not `O_PATH`; checked with `fstat` and `fcntl(F_GETFL)`). Ownership passes to
    /// this object whether or not the initializer throws: on failure it closes the descriptor,
    /// so the caller never does. `name` appears in messages only; nothing opens it.
    public init(adopting descriptor: Int32, name: String) throws(MediaError) {
        do {
            try FileProbe.checkReadableRegularFile(descriptor, name: name)
        } catch {
            FileProbe.close(descriptor)
            throw error
        }
        self.descriptor = descriptor
        self.name = name
    }

    /// Opens `path` for reading with this process's rights, then checks it as
    /// `init(adopting:name:)` does.
    public convenience init(path: String) throws(MediaError) {
        try self.init(adopting: try FileProbe.openForReading(path), name: path)
    }

    deinit {
        FileProbe.close(descriptor)
    }
}

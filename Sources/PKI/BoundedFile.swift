// The one reader of the files PKI reads back (certificates, keys, time-stamp tokens): opened
// without following a link, a regular file, at most a bound, read in pieces so a file that
// grows while it is read cannot size memory.
import Platform

enum BoundedFile {
    /// `path`'s bytes, at most `limit`; `what` names what the file should be, for the error.
    static func read(_ path: String, limit: Int, what: String) throws(PKIError) -> [UInt8] {
        let file: OwnedFile
        let status: FileStatus
        do throws(SystemError) {
            file = try OwnedFile(path, .readOnlyNoFollow)
            status = try file.status()
        } catch {
            throw PKIError("cannot read \(path): \(error.message)")
        }
        guard status.kind == .regular else { throw PKIError("\(path) is not a regular file") }
        guard status.size <= Int64(limit) else {
            throw PKIError("\(path) is over \(limit / 1024) KiB; it is not \(what)")
        }
        var bytes: [UInt8] = []
        do throws(SystemError) {
            while bytes.count <= limit {
                let piece = try file.read(count: 16 * 1024, at: Int64(bytes.count))
                if piece.isEmpty { break }
                bytes += piece
            }
        } catch {
            throw PKIError("cannot read \(path): \(error.message)")
        }
        guard bytes.count <= limit else { throw PKIError("\(path) grew past \(limit / 1024) KiB as it was read") }
        return bytes
    }
}

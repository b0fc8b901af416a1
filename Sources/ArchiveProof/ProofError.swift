// Why a proof operation could not be done (as opposed to what a proof found: `ProofFinding`).

import Platform

/// A failure of the proof machinery itself: a key that cannot be read or made, a chain that
/// cannot be written. Each message says what to do. A plain value: any thread.
public enum ProofError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A system call failed (reading a segment, writing a chain or a key).
    case system(SystemError)
    /// A key file or key text is not what recd writes.
    case invalidKey(path: String, reason: String)
    /// libsodium could not initialise (no usable random source, or a broken library).
    case libraryUnavailable
    /// A segment a clip was cut from is in no signed chain yet (it was finished a moment ago).
    case notChained(path: String)
    /// A file where a chain, a signature or a record belongs that recd does not read or write:
    /// a symbolic link, a FIFO or device, or one larger than any recd writes.
    case unsafeFile(path: String, reason: String)
    /// A head record in the state directory that is not one recd writes.
    case invalidRecord(path: String)
    /// The chain does not hold what recd signed of it: recd appends nothing and signs nothing
    /// more in it.
    case tampered(ChainBreak)

    public var message: String {
        switch self {
        case .system(let error):
            return "\(error.operation) \(error.path ?? "") failed: \(error.errno); check that the archive "
                + "and the state directory are readable (and, for recd, writable) by who runs this"
        case .invalidKey(let path, let reason):
            return "\(path) is not an archive key (\(reason)); pass the public key `recctl archive key` prints "
                + "(ed25519:<64 hex digits>) or the file holding it"
        case .libraryUnavailable:
            return "libsodium could not initialise; reinstall libsodium23"
        case .notChained(let path):
            return "\(path) is in no signed chain yet; export it again in a moment (recd chains a segment just "
                + "after it is finished), or without --proof"
        case .unsafeFile(let path, let reason):
            return "\(path) is \(reason): not a file recd wrote, so it was left alone; find out who put it there "
                + "(docs/security.md, \"The archive directory\")"
        case .invalidRecord(let path):
            return "\(path) is not a head record recd writes; the state directory is recd's alone: restore it "
                + "from a backup"
        case .tampered(let chainBreak):
            return "\(chainBreak); recd signs nothing more in this chain. Compare it with the replica or a backup "
                + "(`recctl archive prove`) and restore its chain and .sig: recd goes on once they are what it signed"
        }
    }

    public var description: String { message }
}

/// Runs `body`, turning a `SystemError` into `ProofError.system`.
@inline(__always)
func proofCall<T>(_ body: () throws(SystemError) -> T) throws(ProofError) -> T {
    do throws(SystemError) {
        return try body()
    } catch {
        throw .system(error)
    }
}

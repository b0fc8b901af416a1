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

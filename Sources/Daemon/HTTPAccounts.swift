// The web accounts as recd sees them: the accounts file (`[http] users_file`, written by
// `recctl web user` as its caller), read again whenever it was replaced, and the password check.
//
// The file is read with O_NOFOLLOW, a regular file only, bounded (WebAccountsFile.read); a line
// recd cannot take is skipped and named in the log once per version of the file. It is looked
// at (lstat, microseconds) on every request that asks and read again only when it was replaced:
// an account added or removed counts from the next request (a login right after `recctl web
// user add` once got 401 when the look was at most once a second).
//
// Threads: the listener's connection threads; one lock for the cache, one that lets a single
// Argon2id check run at a time (each takes 64 MiB: 64 connections at once would take 4 GiB).
import ArchiveProof
import Dispatch
import Platform
import Synchronization
import SystemSupport

final class HTTPAccounts: Sendable {
    let path: String
    private struct Cache {
        var file = WebAccountsFile()
        var identity: FileStatus?
    }
    private let cache = Mutex(Cache())
    private let checking = Mutex(())

    init(path: String) {
        self.path = path
    }

    /// Whether the file holds any account (then the listener offers logins).
    var exists: Bool { FileSystem.linkStatus(of: path) != nil }

    /// The accounts now (the file read again when it changed).
    func current() -> WebAccountsFile {
        cache.withLock { cache in
            let status = FileSystem.linkStatus(of: path)
            guard status != cache.identity else { return cache.file }
            cache.identity = status
            do throws(WebAccountsError) {
                cache.file = try WebAccountsFile.read(path) ?? WebAccountsFile()
                for problem in cache.file.problems {
                    Log.warning("http: \(path) line \(problem.line) skipped: \(problem.reason)")
                }
            } catch {
                cache.file = WebAccountsFile()
                Log.warning("http: no web accounts: \(error.message)")
            }
            return cache.file
        }
    }

    func account(named name: String) -> WebAccount? { current().account(named: name) }

    /// A hash no password matches, checked for an unknown account so that a wrong name costs
    /// what a wrong password costs (the answer's time tells no one which names exist).
    private static let decoy = PasswordHash.make(SecureRandom.hex(bytes: 16)) ?? ""

    func verify(_ name: String, password: String) -> Bool {
        let hash = account(named: name)?.passwordHash
        return checking.withLock { _ in
            PasswordHash.matches(hash ?? Self.decoy, password: password) && hash != nil
        }
    }
}

// The accounts of recd's web pages (docs/http.md, "Accounts"): one file, written by `recctl web
// user` as its caller (mode 0600, replaced atomically) and read by recd. Here because both read
// it and both need the password hashes beside it (Secrets.swift).
//
// The file, one account a line (`#` begins a comment line):
//
//     NAME ROLE GRANT HASH
//
// NAME: 1–32 of A–Z a–z 0–9 . _ -; ROLE: viewer, listener or admin; GRANT: `-` (none),
// `feeds:APP/STREAM,APP/STREAM` (the feeds the account may hear) or `group:NAME` (a config
// `[web-group NAME]`'s feeds); HASH: an Argon2id string (`PasswordHash`).
//
// The parser is total: any bytes give accounts and, for each line it could not take, the line's
// number and why; memory bounded by `maxFileBytes` and `maxAccounts`.
import Platform

public struct WebAccount: Sendable, Equatable {
    public enum Role: String, Sendable, CaseIterable {
        /// States and meters: no recorded or live audio.
        case viewer
        /// Also hears and exports its granted feeds.
        case listener
        /// Everything.
        case admin
    }

    public enum Grant: Sendable, Equatable {
        case none
        case feeds([String])
        case group(String)
    }

    public var name: String
    public var role: Role
    public var grant: Grant
    public var passwordHash: String

    public init(name: String, role: Role, grant: Grant, passwordHash: String) {
        self.name = name
        self.role = role
        self.grant = grant
        self.passwordHash = passwordHash
    }

    /// The account's line in the file.
    public var line: String {
        let grantText: String
        switch grant {
        case .none: grantText = "-"
        case .feeds(let feeds): grantText = "feeds:" + feeds.joined(separator: ",")
        case .group(let group): grantText = "group:" + group
        }
        return "\(name) \(role.rawValue) \(grantText) \(passwordHash)"
    }

    /// Whether `text` may be an account's (or a group's) name.
    public static func isName(_ text: some StringProtocol) -> Bool {
        (1...32).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a) || $0 == 0x2e || $0 == 0x5f
                    || $0 == 0x2d
            }
    }

    /// Whether `text` may be a feed: APP/STREAM, each part a name.
    public static func isFeed(_ text: some StringProtocol) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { isName($0) }
    }
}

public struct WebAccountsFile: Sendable, Equatable {
    public static let maxFileBytes = 1 << 20
    public static let maxAccounts = 1000
    public static let maxFeedsPerAccount = 64

    public var accounts: [WebAccount]
    /// The lines not taken: their number (from 1) and why.
    public var problems: [(line: Int, reason: String)]

    public init(accounts: [WebAccount] = [], problems: [(line: Int, reason: String)] = []) {
        self.accounts = accounts
        self.problems = problems
    }

    public static func == (a: WebAccountsFile, b: WebAccountsFile) -> Bool {
        a.accounts == b.accounts && a.problems.map(\.line) == b.problems.map(\.line)
    }

    public func account(named name: String) -> WebAccount? { accounts.first { $0.name == name } }

    /// The file's text.
    public var text: String {
        "# recd's web accounts: NAME ROLE GRANT HASH (recctl web user add/passwd/remove)\n"
            + accounts.map { $0.line + "\n" }.joined()
    }

    /// Parses the file's bytes (any bytes; see the file's head).
    public static func parse(_ bytes: [UInt8]) -> WebAccountsFile {
        var file = WebAccountsFile()
        var names = Set<String>()
        var number = 0
        for raw in bytes.prefix(maxFileBytes).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            let line = String(decoding: raw, as: UTF8.self)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard file.accounts.count < maxAccounts else {
                file.problems.append((number, "more than \(maxAccounts) accounts"))
                break
            }
            switch account(line) {
            case .success(let account):
                if names.insert(account.name).inserted {
                    file.accounts.append(account)
                } else {
                    file.problems.append((number, "account \(account.name) appears twice"))
                }
            case .failure(let problem):
                file.problems.append((number, problem.reason))
            }
        }
        return file
    }

    struct Problem: Error {
        let reason: String
    }

    static func account(_ line: String) -> Result<WebAccount, Problem> {
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 4 else { return .failure(Problem(reason: "not NAME ROLE GRANT HASH")) }
        guard WebAccount.isName(fields[0]) else {
            return .failure(Problem(reason: "the name is not 1–32 of A–Z a–z 0–9 . _ -"))
        }
        guard let role = WebAccount.Role(rawValue: String(fields[1])) else {
            return .failure(Problem(reason: "the role is not viewer, listener or admin"))
        }
        let grant: WebAccount.Grant
        if fields[2] == "-" {
            grant = .none
        } else if fields[2].hasPrefix("feeds:") {
            let feeds = fields[2].dropFirst(6).split(separator: ",", omittingEmptySubsequences: false)
            guard feeds.count <= WebAccountsFile.maxFeedsPerAccount, feeds.allSatisfy({ WebAccount.isFeed($0) }) else {
                return .failure(Problem(reason: "the feeds are not APP/STREAM,APP/STREAM (at most 64)"))
            }
            grant = .feeds(feeds.map(String.init))
        } else if fields[2].hasPrefix("group:"), WebAccount.isName(fields[2].dropFirst(6)) {
            grant = .group(String(fields[2].dropFirst(6)))
        } else {
            return .failure(Problem(reason: "the grant is not -, feeds:APP/STREAM,… or group:NAME"))
        }
        guard PasswordHash.looksValid(String(fields[3])) else {
            return .failure(Problem(reason: "the password hash is not recd's Argon2id (recctl web user passwd)"))
        }
        return .success(WebAccount(name: String(fields[0]), role: role, grant: grant, passwordHash: String(fields[3])))
    }

    /// Reads the file at `path`: never through a symbolic link, a regular file only, at most
    /// `maxFileBytes`; nil when it does not exist. The error is a sentence.
    public static func read(_ path: String) throws(WebAccountsError) -> WebAccountsFile? {
        let file: OwnedFile
        let status: FileStatus
        do throws(SystemError) {
            file = try OwnedFile(path, .readOnlyNoFollow)
            status = try file.status()
        } catch {
            if error.errno == .noSuchFileOrDirectory { return nil }
            throw WebAccountsError("cannot read the accounts file \(path): \(error.message)")
        }
        guard status.kind == .regular, status.size <= Int64(maxFileBytes) else {
            throw WebAccountsError(
                "the accounts file \(path) is not a regular file of at most \(maxFileBytes / 1024) KiB")
        }
        do throws(SystemError) {
            return parse(Array(try file.readToEnd().prefix(maxFileBytes)))
        } catch {
            throw WebAccountsError("cannot read the accounts file \(path): \(error.message)")
        }
    }
}

/// Why the accounts file could not be read or written; the message says what to do.
public struct WebAccountsError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

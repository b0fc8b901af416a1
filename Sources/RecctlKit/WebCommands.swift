// `recctl web user add|passwd|remove|list` and `recctl web certificate`: done here, by recctl, as
// its caller, on the files recd uses (docs/http.md): `[http] users_file` and `tls_certificate`,
// or their places in recd's state directory. The accounts file is written as the caller, mode
// 0600 and replaced atomically: only who may write it (root, for the system's recd) manages
// accounts. recd is asked only where the files are (its status), when `--file` does not say.
import ArchiveProof
import ControlClient
import ControlProtocol
import Foundation
import Glibc
import PKI
import Platform

enum WebCommands {
    static let usersFileName = "http-users"
    static let certificateFileName = "http-certificate.pem"

    static func run(_ command: ParsedCommand, globals: GlobalOptions, environment: [String: String]) -> Int32 {
        let isCertificate = command.spec.path.last == "certificate"
        let name = isCertificate ? certificateFileName : usersFileName
        let path: String
        if let given = command.value("file") {
            path = Recctl.absolute(given)
        } else {
            switch askFiles(globals: globals, environment: environment) {
            case .success(let daemon):
                // recd names the files it uses ([http] users_file, tls_certificate); an older recd
                // names only its state directory, where the defaults are.
                if let named = isCertificate ? daemon.httpCertificate : daemon.httpUsersFile {
                    path = named
                } else if let state = daemon.stateDir {
                    path = state + "/" + name
                } else {
                    printError("error: recd did not say where its state directory is; pass --file \(name)'s path\n")
                    return 3
                }
            case .failure(let message):
                printError("error: \(message); or pass --file PATH (STATE_DIR/\(name))\n")
                return 3
            }
        }
        switch command.spec.path {
        case ["web", "certificate"]: return certificate(path, json: globals.json)
        case ["web", "user", "list"]: return list(path, json: globals.json)
        default: return editUsers(command, path: path)
        }
    }

    /// recd's own description (status): where its web files are.
    private static func askFiles(globals: GlobalOptions, environment: [String: String])
        -> Result<StatusInfo.Daemon, AskError>
    {
        let candidates = ControlSocket.candidates(globals.socket, environment: environment)
        do {
            let connection = try Connection(candidates: candidates, interface: .recctl)
            return .success(try StatusInfo(json: try connection.call(.status)).daemon)
        } catch let error as Unreachable {
            return .failure(AskError("cannot reach recd to ask where its files are (\(error.reason))"))
        } catch {
            return .failure(AskError("recd did not say where its files are (\(error))"))
        }
    }

    struct AskError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private static func certificate(_ path: String, json: Bool) -> Int32 {
        do throws(PKIError) {
            let pem = try Certificate.readFile(path)
            guard let fingerprint = Certificate.fingerprint(pem: pem) else {
                printError("error: \(path) holds no PEM certificate\n")
                return 1
            }
            if json {
                print("{\"path\":\"\(path)\",\"sha256\":\"\(fingerprint)\"}")
            } else {
                print("\(path)\nSHA-256 fingerprint: \(fingerprint)")
            }
            return 0
        } catch {
            printError(
                "error: \(error.message); recd makes it at start when [http] listen is not loopback and no "
                    + "tls_certificate is set (pass --file for another)\n")
            return 1
        }
    }

    private static func load(_ path: String) -> WebAccountsFile? {
        do throws(WebAccountsError) {
            return try WebAccountsFile.read(path) ?? WebAccountsFile()
        } catch {
            printError("error: \(error.message)\n")
            return nil
        }
    }

    private static func list(_ path: String, json: Bool) -> Int32 {
        guard let file = load(path) else { return 1 }
        for account in file.accounts {
            var grant = ""
            switch account.grant {
            case .none: grant = "-"
            case .feeds(let feeds): grant = "feeds " + feeds.joined(separator: ",")
            case .group(let group): grant = "group " + group
            }
            print(
                json
                    ? "{\"name\":\"\(account.name)\",\"role\":\"\(account.role.rawValue)\"}"
                    : "\(account.name)\t\(account.role.rawValue)\t\(grant)")
        }
        for problem in file.problems { printError("warning: \(path) line \(problem.line): \(problem.reason)\n") }
        return 0
    }

    private static func editUsers(_ command: ParsedCommand, path: String) -> Int32 {
        let name = command.positionals.first ?? ""
        guard WebAccount.isName(name) else {
            printError("error: \(name) is not an account name: use 1–32 of A–Z a–z 0–9 . _ -\n")
            return 2
        }
        guard var file = load(path) else { return 1 }
        let existing = file.accounts.firstIndex { $0.name == name }
        switch command.spec.path.last {
        case "remove":
            guard let existing else {
                printError("error: no account \(name) in \(path); `recctl web user list` lists them\n")
                return 1
            }
            file.accounts.remove(at: existing)
        case "passwd":
            guard let existing else {
                printError(
                    "error: no account \(name) in \(path); add it with `recctl web user add \(name) --role ROLE`\n")
                return 1
            }
            guard let hash = newPasswordHash(for: name) else { return 1 }
            file.accounts[existing].passwordHash = hash
        default:
            guard let roleText = command.value("role"), let role = WebAccount.Role(rawValue: roleText) else {
                printError("error: --role must be viewer, listener or admin\n")
                return 2
            }
            var grant = WebAccount.Grant.none
            if let feeds = command.value("feeds") {
                let list = feeds.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
                guard !list.isEmpty, list.count <= WebAccountsFile.maxFeedsPerAccount,
                    list.allSatisfy({ WebAccount.isFeed($0) })
                else {
                    printError(
                        "error: --feeds takes APP/STREAM[,APP/STREAM...], as `recctl archive list` names feeds\n")
                    return 2
                }
                grant = .feeds(list)
            }
            if let group = command.value("group") {
                guard command.value("feeds") == nil, WebAccount.isName(group) else {
                    printError("error: --group takes a [web-group NAME] of recd's config, and not with --feeds\n")
                    return 2
                }
                grant = .group(group)
            }
            guard let hash = newPasswordHash(for: name) else { return 1 }
            let account = WebAccount(name: name, role: role, grant: grant, passwordHash: hash)
            if let existing { file.accounts[existing] = account } else { file.accounts.append(account) }
        }
        do throws(SystemError) {
            try AtomicFile.write(file.text, to: path, mode: 0o600)
        } catch {
            printError("error: cannot write \(path): \(error.message); run as the owner of recd's state directory\n")
            return 1
        }
        print("\(command.spec.path.last == "remove" ? "removed" : "saved") account \(name) in \(path)")
        return 0
    }

    /// The password from the terminal (without echo, asked twice) or the first line of standard input.
    private static func newPasswordHash(for name: String) -> String? {
        let terminal = isatty(0) == 1
        func ask(_ prompt: String) -> String? {
            var saved = termios()
            if terminal {
                FileHandle.standardError.write(Data(prompt.utf8))
                tcgetattr(0, &saved)
                var quiet = saved
                quiet.c_lflag &= ~tcflag_t(ECHO)
                tcsetattr(0, TCSANOW, &quiet)
            }
            defer {
                if terminal {
                    tcsetattr(0, TCSANOW, &saved)
                    FileHandle.standardError.write(Data("\n".utf8))
                }
            }
            return readLine(strippingNewline: true)
        }
        guard let password = ask("Password for \(name): ") else {
            printError("error: no password given (type it, or give it on standard input)\n")
            return nil
        }
        if terminal, ask("Again: ") != password {
            printError("error: the two passwords differ; nothing changed\n")
            return nil
        }
        guard password.utf8.count >= 8, password.utf8.count <= PasswordHash.maxPasswordBytes else {
            printError("error: a password has 8 to \(PasswordHash.maxPasswordBytes) bytes; nothing changed\n")
            return nil
        }
        guard let hash = PasswordHash.make(password) else {
            printError("error: libsodium could not hash the password (64 MiB of memory needed); nothing changed\n")
            return nil
        }
        return hash
    }
}

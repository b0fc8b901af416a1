// A private recd for development takes no detective work: recd run by a normal user (nobody,
// a real Unix user; its HOME and XDG_RUNTIME_DIR temporary directories) with no config at all
// keeps its socket, state and archive per user and opens no HTTP port; recctl run by that user
// finds it with no --socket, root's recctl does not. Sessions test programs made go by
// themselves once their application has been gone for `[daemon] session_expiry_days`, and at
// once with `recctl session remove` by their owner (anyone else is refused).
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("a user's own recd, and sessions that expire", .serialized)
struct PerUserEndToEndTests {
    /// A user's login environment under `root`: HOME and XDG_RUNTIME_DIR (0700), owned by the user.
    struct UserHome {
        let root: String
        let user: String
        var home: String { root + "/home" }
        var runtime: String { root + "/run" }
        var environment: [String: String] {
            ["PATH": "/usr/bin:/bin", "HOME": home, "XDG_RUNTIME_DIR": runtime, "LANG": "C.UTF-8"]
        }

        init(user: String) throws {
            self.user = user
            root = try makeTemporaryDirectory("recd-user")
            chmod(root, 0o755)
            let ids = try userIDs(user)
            for directory in [root + "/home", root + "/run"] {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
                chown(directory, ids.uid, ids.gid)
                chmod(directory, 0o700)
            }
        }

        /// `program` as the user (setpriv: its uid, gid and no other groups), in exactly `environment`.
        func arguments(_ program: String, _ arguments: [String]) throws -> [String] {
            let ids = try userIDs(user)
            return ["--reuid=\(ids.uid)", "--regid=\(ids.gid)", "--clear-groups", "/usr/bin/env", "-i"]
                + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + [program] + arguments
        }

        func run(_ program: String, _ arguments: [String]) throws -> CommandResult {
            try runTool("setpriv", try self.arguments(program, arguments))
        }
    }

    @Test(
        "recd as nobody with no config: its socket in XDG_RUNTIME_DIR, its state and archive in ~/.local/state/recd, no HTTP listener; nobody's recctl finds it, root's looks at /run/recd"
    )
    func userRecdWithoutConfig() throws {
        try #require(getuid() == 0, "this test runs recd as user nobody and needs root")
        let user = try UserHome(user: "nobody")
        defer { try? FileManager.default.removeItem(atPath: user.root) }
        let recd = productsDirectory.appendingPathComponent("recd").path
        let recctl = productsDirectory.appendingPathComponent("recctl").path
        let log = user.root + "/recd.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = try ExternalTools.process("setpriv", try user.arguments(recd, []))
        process.environment = [:]
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let recdLog = { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        let socket = user.runtime + "/recd/control.sock"
        #expect(
            try eventually(timeout: 10) { try user.run(recctl, ["status"]).status == 0 },
            "nobody's recctl did not reach its recd; recd's log:\n\(recdLog())")
        let status = try user.run(recctl, ["status"])
        #expect(status.stdout.contains("socket:   \(socket)"), "\(status.stdout)")
        #expect(status.stdout.contains("config:   <embedded default>"), "\(status.stdout)")
        let state = user.home + "/.local/state/recd"
        #expect(status.stdout.contains("archive:  \(state)/archive"), "\(status.stdout)")
        // The state goes where the docs say, owned by the user.
        #expect(try user.run(recctl, ["session", "set", "errs", "--category", "playback"]).status == 0)
        #expect(eventually { FileManager.default.fileExists(atPath: state + "/state.json") })
        let owner =
            try FileManager.default.attributesOfItem(atPath: state + "/state.json")[.ownerAccountID] as? NSNumber
        #expect(owner?.uint32Value == (try userIDs("nobody")).uid)
        // No HTTP port: port 9720 is the system recd's, and a user's recd listens only when asked.
        #expect(
            recdLog().contains("HTTP listener off (a user's recd listens only when [http] listen"), "\(recdLog())")
        #expect(!recdLog().contains("HTTP listener on"), "\(recdLog())")
        let listening = try runTool("ss", ["-Hltnp"]).stdout
        #expect(
            !listening.split(separator: "\n").contains { $0.contains("pid=\(process.processIdentifier),") },
            "recd as a user listens on TCP:\n\(listening)")
        // Root's recctl looks at the system's socket, not at nobody's.
        let rootEnvironment = ["PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": user.runtime]
        let asRoot = try runProgram(recctl, ["status"], environment: rootEnvironment)
        #expect(asRoot.stderr.contains("looked at /run/recd/control.sock)"), "\(asRoot.stderr)")
        #expect(!asRoot.stderr.contains(socket), "\(asRoot.stderr)")
    }

    @Test(
        "a session nobody made expires session_expiry_days after its application went; a watched one, an active one and a declared one stay; a log line says so and state.json forgets it"
    )
    func sessionsExpire() throws {
        try #require(getuid() == 0, "this test drops to user nobody and needs root")
        // 0.00004 days: 3.456 s.
        let expiry = 0.000_04 * 86_400
        let daemon = try Daemon(
            extraConfig: """

                [session logger]
                category = record
                mic_usage = Keeps the log

                """,
            sessionExpiryDays: 0.000_04)
        daemon.openSocketToEveryone()
        for app in ["errs", "alert", "radio"] {
            let made = try daemon.recctl("session", "set", app, "--category", "playback", user: "nobody")
            try #require(made.status == 0, "\(made.stderr)")
        }
        let made = Date()
        #expect(try apps() == ["alert", "errs", "logger", "radio"])
        // alert's application watches it; radio is active; logger is declared.
        let watcher = try daemon.watch("alert")
        #expect(try daemon.recctl("session", "activate", "radio", user: "nobody").status == 0)
        func apps() throws -> [String] {
            (try daemon.recctl("--json", "session", "list").json?.arrayValue ?? []).compactMap {
                $0["app"]?.stringValue
            }
        }
        #expect(try eventually(timeout: expiry + 10) { !(try apps().contains("errs")) }, "errs never expired")
        let after = Date().timeIntervalSince(made)
        #expect(after >= expiry - 0.5, "errs expired after \(after) s, before its \(expiry) s")
        #expect(after <= expiry + 3, "errs expired \(after) s after its last use, want about \(expiry) s")
        let left = try apps()
        #expect(left == ["alert", "logger", "radio"], "\(left)")
        #expect(daemon.log.contains("session errs expired: its application has not been seen since"), "\(daemon.log)")
        #expect(
            try eventually {
                !((try? String(contentsOfFile: daemon.directory + "/state/state.json", encoding: .utf8)) ?? "errs")
                    .contains("\"errs\"")
            })
        let gone = try daemon.recctl("session", "show", "errs")
        #expect(gone.status == 1 && gone.stderr.contains("session errs was deleted"), "\(gone.stderr)")
        // A watch keeps its application there; when it goes, the session follows.
        usleep(UInt32(expiry * 1e6))
        #expect(try apps().contains("alert"))
        kill(watcher.process.processIdentifier, SIGTERM)
        watcher.process.waitUntilExit()
        #expect(try eventually(timeout: expiry + 5) { !(try apps().contains("alert")) }, "alert never expired")
        #expect(try apps() == ["logger", "radio"])
        _ = try daemon.recctl("session", "deactivate", "radio", user: "nobody")
        #expect(try eventually(timeout: expiry + 5) { try apps() == ["logger"] }, "radio never expired once inactive")
    }

    @Test(
        "recctl session remove: the owner removes its session with its saved state; another user is refused with notSessionOwner"
    )
    func sessionRemove() throws {
        try #require(getuid() == 0, "this test drops to users nobody and daemon and needs root")
        let daemon = try Daemon()
        daemon.openSocketToEveryone()
        #expect(try daemon.recctl("session", "set", "mine", "--category", "playback", user: "nobody").status == 0)
        let refused = try daemon.recctl("session", "remove", "mine", user: "daemon")
        #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
        let nobody = try userIDs("nobody").uid
        #expect(
            refused.stderr.contains("notSessionOwner")
                && refused.stderr.contains("session mine belongs to uid \(nobody); only its owner or an administrator"),
            "\(refused.stderr)")
        #expect(try daemon.recctl("session", "show", "mine").status == 0)
        let removed = try daemon.recctl("session", "remove", "mine", user: "nobody")
        #expect(removed.status == 0 && removed.stdout == "removed mine\n", "\(removed.stdout)\(removed.stderr)")
        #expect(try daemon.recctl("session", "show", "mine").status == 1)
        #expect(
            try eventually {
                !((try? String(contentsOfFile: daemon.directory + "/state/state.json", encoding: .utf8)) ?? "mine")
                    .contains("\"mine\"")
            })
        // Gone across a restart too.
        try daemon.restart()
        #expect(try daemon.recctl("session", "show", "mine").status == 1)
    }
}

// libaudiosession is a C library: it exports the header's functions and nothing else, is small,
// starts at once, needs only what a C program has, names every value of its header as recd does,
// hears the same notifications as the Swift library, and passes on recd's errors in its own
// terms. Against the real recd on the test's jackd.
import AudioSession
import ControlClient
import ControlProtocol
import Foundation
import Platform
import SessionPolicy
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// libaudiosession.so as scripts/build-libaudiosession builds it beside recd (what scripts/install
/// installs), and the C programs of Tests/CPrograms compiled against it.
enum CLibrary {
    static var path: String { productsDirectory.appendingPathComponent("libaudiosession.so").path }
    static var header: String { ExternalTools.packageRoot + "/libaudiosession/audiosession.h" }

    /// Builds the library (nothing when it is up to date) and returns its path.
    static func built() throws -> String {
        let build = try ExternalTools.runExecutable(
            ExternalTools.packageRoot + "/scripts/build-libaudiosession", [productsDirectory.path])
        try #require(build.status == 0, "scripts/build-libaudiosession: \(build.stderr)")
        return path
    }

    /// Tests/CPrograms/NAME.c compiled against the library with `extra` flags.
    static func program(_ name: String, into directory: String, extra: [String] = []) throws -> String {
        try Examples.compileC(
            name, into: directory, source: ExternalTools.packageRoot + "/Tests/CPrograms/\(name).c", extra: extra)
    }

    /// The functions audiosession.h declares (comments stripped: they name functions too).
    static func declaredFunctions() throws -> Set<String> {
        var text = try String(contentsOfFile: header, encoding: .utf8)
        while let open = text.range(of: "/*"), let close = text.range(of: "*/", range: open.upperBound..<text.endIndex)
        {
            text.removeSubrange(open.lowerBound..<close.upperBound)
        }
        let regex = try NSRegularExpression(pattern: #"\b(as_[a-z0-9_]+)\s*\("#)
        return Set(
            regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map {
                String(text[Range($0.range(at: 1), in: text)!])
            })
    }
}

@Suite("libaudiosession is a C library", .serialized)
struct CLibraryTests {
    @Test("it exports the functions of audiosession.h and no other symbol (nm -D --defined-only)")
    func exportsOnlyTheHeader() throws {
        let library = try CLibrary.built()
        let symbols = try runTool("nm", ["-D", "--defined-only", library])
        try #require(symbols.status == 0, "nm: \(symbols.stderr)")
        let exported = Set(
            symbols.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) })
        let declared = try CLibrary.declaredFunctions()
        #expect(declared.count >= 36, "the header scan found \(declared.sorted())")
        let extra = exported.subtracting(declared).sorted().prefix(20),
            missing = declared.subtracting(exported).sorted()
        #expect(exported == declared, "exported but not declared: \(extra); declared but not exported: \(missing)")
    }

    @Test("it is at most 4 MiB and needs only libc and libjansson: no Swift runtime, no rpath, every library found")
    func smallAndPlain() throws {
        let library = try CLibrary.built()
        let size = try FileManager.default.attributesOfItem(atPath: library)[.size] as? Int ?? .max
        #expect(size <= 4 << 20, "libaudiosession.so is \(size) bytes")
        let dynamic = try runTool("readelf", ["-d", library])
        let needed = dynamic.stdout.split(separator: "\n").compactMap { line -> String? in
            guard line.contains("(NEEDED)"), let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]")
            else { return nil }
            return String(line[line.index(after: open)..<close])
        }
        let expected: Set<String> = ["libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "libjansson.so.4"]
        #expect(!needed.isEmpty && Set(needed).isSubset(of: expected), "NEEDED: \(needed)")
        #expect(!dynamic.stdout.contains("RPATH") && !dynamic.stdout.contains("RUNPATH"), "\(dynamic.stdout)")
        #expect(dynamic.stdout.contains("Library soname: [libaudiosession.so.1]"))
        let loader = try runTool("ldd", [library])
        #expect(loader.status == 0 && !loader.stdout.contains("not found"), "ldd: \(loader.stdout)\(loader.stderr)")
        #expect(!loader.stdout.lowercased().contains("swift"), "ldd: \(loader.stdout)")
    }

    @Test("a program can use it within 20 ms: dlopen and as_session_new against a running recd (median of 7)")
    func startsQuickly() throws {
        let daemon = try Daemon()
        let directory = try makeTemporaryDirectory("recd-cstartup")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let library = try CLibrary.built()
        let program = directory + "/startup"
        let compiled = try runTool(
            "cc",
            [
                "-O2", "-Wall", "-Werror", ExternalTools.packageRoot + "/Tests/CPrograms/startup.c", "-o", program,
                "-ldl",
            ])
        try #require(compiled.status == 0, "cc: \(compiled.stderr)")
        var times: [Double] = []
        for _ in 0..<7 {
            let run = try runProgram(program, [library, daemon.socket])
            try #require(run.status == 0, "\(run.stdout)\(run.stderr)")
            #expect(run.stdout.contains("reached recd: ok"), "\(run.stdout)")
            let words = run.stdout.split(separator: " ")
            if let index = words.firstIndex(of: "startup"), let ms = Double(words[index + 1]) { times.append(ms) }
        }
        try #require(times.count == 7)
        let median = times.sorted()[3]
        #expect(median < 20, "dlopen + as_session_new took \(times.sorted()) ms")
    }

    @Test("as_*_name names every value of the header as recd does; \"unknown\" for others")
    func names() throws {
        let directory = try makeTemporaryDirectory("recd-cnames")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try runProgram(try CLibrary.program("names", into: directory), [])
        try #require(run.status == 0, "\(run.stdout)\(run.stderr)")
        var printed: [String: String] = [:]
        for line in run.stdout.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            if words.count == 3 { printed[words[0] + " " + words[1]] = words[2] }
        }
        for code in ErrorCode.allCases { #expect(printed["error \(code.rawValue)"] == code.name, "\(code)") }
        #expect(printed["error 0"] == "ok" && printed["error 12345"] == "unknown")
        for option in CategoryOption.allCases {
            #expect(printed["option \(option.upstreamValue)"] == option.rawValue, "\(option)")
        }
        #expect(printed["option 3"] == "unknown", "an or-ed set is not one option")
        #expect(printed["setActiveOption 1"] == "notifyOthersOnDeactivation")
        #expect(printed["permission 1970168948"] == RecordPermission.undetermined.rawValue)
        #expect(printed["permission 1684369017"] == RecordPermission.denied.rawValue)
        #expect(printed["permission 1735552628"] == RecordPermission.granted.rawValue)
        #expect(printed["permission 7"] == "unknown")
        for value in 0...9 {
            #expect(printed["interruptionType \(value)"] == (InterruptionType(rawValue: value)?.name ?? "unknown"))
            #expect(printed["interruptionReason \(value)"] == (InterruptionReason(rawValue: value)?.name ?? "unknown"))
            #expect(printed["routeChangeReason \(value)"] == (RouteChangeReason(rawValue: value)?.name ?? "unknown"))
            let options = value == 0 ? "none" : value == 1 ? "shouldResume" : "unknown"
            #expect(printed["interruptionOptions \(value)"] == options)
            let hint = SilenceSecondaryAudioHintType(rawValue: UInt(value)).map { $0 == .begin ? "begin" : "end" }
            #expect(printed["silenceHint \(value)"] == (hint ?? "unknown"))
        }
    }

    @Test(
        "recd words what to do for the interface the caller used: as_session_new for C, the initializer for Swift, --mic-usage for recctl, micUsage for the protocol"
    )
    func errorsInTheCallersTerms() throws {
        let daemon = try Daemon()
        let directory = try makeTemporaryDirectory("recd-cerrors")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try runProgram(
            try CLibrary.program("errors", into: directory), ["cerrors"],
            environment: ExternalTools.environment(["RECD_SOCKET": daemon.socket]))
        let lines = run.stdout.split(separator: "\n").map(String.init)
        let unconfigured = lines.first { $0.hasPrefix("unconfigured ") } ?? run.stdout
        #expect(unconfigured == "unconfigured expiredSession: no session cerrors; create it with as_set_category")
        let noUsage = lines.first { $0.hasPrefix("no mic usage ") } ?? run.stdout
        #expect(
            noUsage.hasPrefix("no mic usage missingEntitlement: cerrors uses the input (category record)"), "\(noUsage)"
        )
        #expect(
            noUsage.hasSuffix(
                "pass one as as_session_new's mic_usage argument (a new session), then call as_set_category again"),
            "\(noUsage)")
        #expect(!run.stdout.contains("--mic-usage") && !run.stdout.contains("recctl"), "\(run.stdout)")

        // The Swift library: its own initializer and method.
        let session = AudioSession(app: "swifterrors", socketPath: daemon.socket)
        defer { session.close() }
        try session.setCategory(.record)
        do {
            try session.setActive(true)
            Issue.record("an input category without a microphone usage description activated")
        } catch {
            #expect(error.code == .missingEntitlement)
            #expect(
                error.message.hasSuffix(
                    "pass one as AudioSession(app:microphoneUsageDescription:) (a new session), then call setCategory again"
                ),
                "\(error.message)")
        }

        // recctl: its flags, as before.
        #expect(try daemon.recctl("session", "set", "cli", "--category", "record").status == 0)
        let cli = try daemon.recctl("session", "activate", "cli")
        #expect(cli.stderr.contains("set one with --mic-usage TEXT"), "\(cli.stderr)")

        // A program that speaks the protocol itself: the request's keys.
        let connection = try Connection(candidates: [daemon.socket], interface: .protocol)
        let reply = try connection.call(.sessionActivate(app: "cli"))
        #expect(
            reply["error"]?["message"]?.stringValue?.hasSuffix("send one as \"micUsage\" with session.set") == true,
            "\(reply.jsonText)")
    }

    @Test(
        "a hostile \"interface\" (a number, an object, 60 KB, a NUL, a near miss) is never refused: the protocol's words, recd unharmed"
    )
    func hostileInterface() throws {
        let daemon = try Daemon()
        let connection = try Connection(candidates: [daemon.socket], interface: .protocol)
        let values = [
            "42", #"{"interface":"recctl"}"#, #"["recctl"]"#, "null",
            "\"" + String(repeating: "x", count: 60_000) + "\"",
            #""recctl\u0000""#, #""RECCTL""#, #""libaudiosession ""#,
        ]
        for (index, value) in values.enumerated() {
            try connection.sendLine(
                #"{"id":\#(index + 1),"v":2,"op":"session.activate","app":"nope","interface":\#(value)}"#)
            let reply = try connection.readMessage(timeout: 10)
            #expect(reply["id"] == .number(Double(index + 1)))
            #expect(
                reply["error"]?["message"]?.stringValue == "no session nope; create it with session.set",
                "interface \(value.prefix(40)): \(reply.jsonText.prefix(300))")
        }
        #expect(try daemon.recctl("status").status == 0)
    }

    @Test(
        "the candidates for recd's socket are the Swift libraries' (ControlSocket.candidates), for root and for another user"
    )
    func socketCandidates() throws {
        let directory = try makeTemporaryDirectory("recd-ccandidates")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        chmod(directory, 0o755)
        let program = try CLibrary.program("errors", into: directory)
        chmod(program, 0o755)
        let runtime = directory + "/runtime"
        let environment = ["XDG_RUNTIME_DIR": runtime, "RECD_SOCKET": ""]
        // As root (this test) and as nobody (setpriv), the "looked at" of the unreachable error.
        let asRoot = try runProgram(program, ["c1"], environment: ExternalTools.environment(environment))
        let nobody = try userIDs("nobody")
        let asNobody = try runTool(
            "setpriv", ["--reuid=\(nobody.uid)", "--regid=\(nobody.gid)", "--clear-groups", program, "c2"],
            environment: environment)
        func lookedAt(_ output: String) -> String? {
            guard let start = output.range(of: "(looked at "),
                let end = output.range(of: "):", range: start.upperBound..<output.endIndex)
            else { return nil }
            return String(output[start.upperBound..<end.lowerBound])
        }
        let rootCandidates = ControlSocket.candidates(nil, environment: environment)
        #expect(lookedAt(asRoot.stdout) == rootCandidates.joined(separator: ", "), "\(asRoot.stdout)")
        // The rule for a user other than root: $XDG_RUNTIME_DIR/recd/control.sock first.
        #expect(
            lookedAt(asNobody.stdout)
                == [runtime + "/recd/control.sock", "/run/recd/control.sock"].joined(separator: ", "),
            "\(asNobody.stdout)\(asNobody.stderr)")
        #expect(CurrentProcess.isRoot, "this test runs as root: ControlSocket.candidates above is root's")
    }
}

@Suite("libaudiosession and the Swift AudioSession library hear the same notifications", .serialized)
struct CLibraryParityTests {
    /// The steps both libraries' sessions go through, from outside: an interruption that begins
    /// and ends with shouldResume, an activation by recctl, a category change (route change), an
    /// input mute (announced to active input sessions), recd's restart (lost, then reset after
    /// the library applied its configuration again).
    static func steps(_ daemon: Daemon, app: String, heard: () -> [String]) throws {
        func wait(for line: String) {
            #expect(eventually(timeout: 10) { heard().contains(line) }, "no \"\(line)\" in \(heard())")
        }
        try #require(daemon.recctl("session", "set", "boss", "--category", "playback").status == 0)
        try #require(daemon.recctl("session", "activate", "boss").status == 0)
        wait(for: "interruption began reason=default options=none")
        try #require(daemon.recctl("session", "deactivate", "boss", "--notify-others").status == 0)
        wait(for: "interruption ended reason=default options=shouldResume")
        try #require(daemon.recctl("session", "activate", app).status == 0)
        let before = heard().count
        try #require(
            daemon.recctl("session", "set", app, "--category", "playAndRecord", "--mic-usage", "parity").status == 0)
        #expect(
            eventually(timeout: 10) {
                heard().dropFirst(before).contains { $0.hasPrefix("routeChange reason=categoryChange") }
            },
            "\(heard())")
        try #require(daemon.recctl("mute", app, "on").status == 0)
        wait(for: "inputMuteStateChange muted=true")
        try daemon.restart()
        wait(for: "mediaServicesWereLost")
        wait(for: "mediaServicesWereReset")
    }

    @Test(
        "the same lines, in the same order, from the same steps; the same configuration applied again after recd's restart"
    )
    func sameNotifications() throws {
        let directory = try makeTemporaryDirectory("recd-cparity")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let program = try CLibrary.program("notifications", into: directory)

        let cDaemon = try Daemon()
        let cApp = try AppProcess(program, ["parity"], socket: cDaemon.socket)
        try #require(cApp.waitFor { $0 == "active" }, "\(cApp.output)")
        try Self.steps(cDaemon, app: "parity") { cApp.lines.filter { $0 != "active" } }
        #expect(
            eventually(timeout: 10) {
                (try? cDaemon.recctl("--json", "session", "show", "parity").json?["state"]) == "active"
            })
        let cShown = try cDaemon.recctl("--json", "session", "show", "parity").json

        let swiftDaemon = try Daemon()
        let heard = Locked<[String]>([])
        let session = AudioSession(app: "parity", socketPath: swiftDaemon.socket)
        defer { session.close() }
        session.addObserver { note in
            let line: String
            if case .routeChange(let reason, let previous) = note {
                line = "routeChange reason=\(reason.name) previous=\(previous.json.jsonText)"
            } else {
                line = note.description
            }
            heard.withLock { $0.append(line) }
        }
        try session.setCategory(.playback)
        try session.setActive(true)
        try Self.steps(swiftDaemon, app: "parity") { heard.withLock { $0 } }
        #expect(
            eventually(timeout: 10) {
                (try? swiftDaemon.recctl("--json", "session", "show", "parity").json?["state"]) == "active"
            })
        let swiftShown = try swiftDaemon.recctl("--json", "session", "show", "parity").json

        // The libraries apply their configuration again after the reset: what that changes
        // arrives after it, so the two lists are compared once both have settled.
        #expect(
            eventually(timeout: 10) { cApp.lines.filter { $0 != "active" } == heard.withLock { $0 } },
            "C: \(cApp.lines)\nSwift: \(heard.withLock { $0 })")
        for key in ["category", "mode", "options", "state", "micUsage"] {
            #expect(
                cShown?[key] == swiftShown?[key],
                "\(key): C \(cShown?[key]?.jsonText ?? "-"), Swift \(swiftShown?[key]?.jsonText ?? "-")")
        }
    }
}

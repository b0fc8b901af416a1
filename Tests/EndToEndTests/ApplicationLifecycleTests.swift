// Sessions live and die with their applications: an activation made through the AudioSession
// library (Swift or C) is held by the application's process and ends with it, whatever way it
// ends; recctl's and the config's activations persist. The library mirrors recd's state and
// activates again after a reconnection only what was active when the connection was lost.
import AudioSession
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("application lifecycles: activations held by live processes", .serialized)
struct ApplicationLifecycleTests {
    /// `session show APP --json`.
    private func shown(_ daemon: Daemon, _ app: String) throws -> JSONValue? {
        try daemon.recctl("--json", "session", "show", app).json
    }

    /// An application's non-mixable session interrupted `music` (activated by recctl); the
    /// application is killed with SIGKILL: within 1 s its session is inactive and music hears
    /// `ended` with shouldResume; recctl's activation of music was never the process's to end.
    private func killedApplicationReleases(_ start: (Daemon) throws -> (AppProcess, String)) throws {
        let daemon = try Daemon()
        try #require(daemon.recctl("session", "set", "music", "--category", "playback").status == 0)
        try #require(daemon.recctl("session", "activate", "music").status == 0)
        let watch = try daemon.watch()
        let (app, name) = try start(daemon)
        #expect(app.waitFor { $0 == "active" }, "\(app.output)")
        let held = try shown(daemon, name)
        #expect(held?["state"] == "active" && held?["heldBy"]?.intValue == Int(app.process.processIdentifier), "\(held?.jsonText ?? "")")
        #expect(try shown(daemon, "music")?["state"] == "interrupted")
        #expect(try shown(daemon, "music")?["heldBy"] == .null, "recctl's activation is no process's")

        app.killHard()
        let killedAt = Date()
        #expect(try eventually(timeout: 1) { try shown(daemon, name)?["state"] == "inactive" }, "deactivated within 1 s")
        let events = watch.waitFor(timeout: 1) {
            $0["event"] == "interruption" && $0["app"] == "music" && $0["type"] == "ended"
        }
        let ended = events.last { $0["event"] == "interruption" && $0["app"] == "music" && $0["type"] == "ended" }
        #expect(ended?["options"] == ["shouldResume"], "\(events.map(\.jsonText))")
        #expect(Date().timeIntervalSince(killedAt) < 1.5)
        #expect(try shown(daemon, name)?["heldBy"] == .null)
        #expect(try shown(daemon, "music")?["interruption"] == .null)
        let log = try String(contentsOfFile: daemon.logPath, encoding: .utf8)
        #expect(log.contains("ended holding \(name)"), "the log says why")
    }

    @Test("a C application (libaudiosession) killed with SIGKILL: its session ends within 1 s, the one it interrupted gets ended with shouldResume")
    func cApplicationKilled() throws {
        let build = try makeTemporaryDirectory("recd-cbuild")
        defer { try? FileManager.default.removeItem(atPath: build) }
        let tone = try Examples.compileC("tone", into: build)
        try killedApplicationReleases { daemon in
            (try AppProcess(tone, ["ctone", uniqueName("ctone")], socket: daemon.socket), "ctone")
        }
    }

    @Test("a Swift application (AudioSession) killed with SIGKILL: its session ends within 1 s, the one it interrupted gets ended with shouldResume")
    func swiftApplicationKilled() throws {
        try killedApplicationReleases { daemon in
            (try AppProcess(Examples.tone, ["--app", "stone", "--client", uniqueName("stone")], socket: daemon.socket), "stone")
        }
    }

    @Test("recctl's activations are held by no process: they persist after recctl exits and after an application ends")
    func recctlActivationsPersist() throws {
        let daemon = try Daemon()
        try #require(daemon.recctl("session", "set", "logger", "--category", "playback").status == 0)
        try #require(daemon.recctl("session", "activate", "logger").status == 0)
        let app = try AppProcess(Examples.tone, ["--app", "quitter", "--client", uniqueName("quitter")], socket: daemon.socket)
        #expect(app.waitFor { $0 == "active" }, "\(app.output)")
        #expect(try shown(daemon, "logger")?["state"] == "interrupted")
        app.killHard()
        #expect(try eventually(timeout: 1) { try shown(daemon, "quitter")?["state"] == "inactive" })
        // quitter's end ended logger's interruption (as with notifyOthers); recctl activates
        // it again and exits: it stays active, held by no process.
        #expect(try shown(daemon, "logger")?["state"] == "inactive")
        #expect(try daemon.recctl("session", "activate", "logger").status == 0)
        usleep(300_000)
        #expect(try shown(daemon, "logger")?["state"] == "active", "a recctl activation is held by no process")
        #expect(try shown(daemon, "logger")?["heldBy"] == .null)
    }

    @Test("the library activates again after recd's restart only what was active when the connection was lost")
    func libraryMirrorsInterruptions() throws {
        let daemon = try Daemon()
        let session = AudioSession(app: "mirror", socketPath: daemon.socket)
        defer { session.close() }
        let log = NotificationLog()
        session.addObserver { log.append($0) }
        try session.setCategory(.playback)
        try session.setActive(true)
        // B interrupts it and ends without notifyOthers: mirror is inactive now, by recd's word.
        try #require(daemon.recctl("session", "set", "boss", "--category", "playback").status == 0)
        try #require(daemon.recctl("session", "activate", "boss").status == 0)
        #expect(log.waitFor { if case .interruption(.began, _, _) = $0 { true } else { false } } != nil, "\(log.all)")
        try #require(daemon.recctl("session", "deactivate", "boss").status == 0)
        #expect(try shown(daemon, "mirror")?["state"] == "inactive")

        try daemon.restart()
        #expect(log.waitFor { $0 == .mediaServicesWereReset } != nil, "\(log.all)")
        usleep(300_000)
        #expect(try shown(daemon, "mirror")?["state"] == "inactive", "the library did not revive what an interruption ended")
        #expect(try shown(daemon, "mirror")?["category"] == "playback", "its configuration was applied again")

        // Active at the loss: active again, held by this process.
        try session.setActive(true)
        try daemon.restart()
        #expect(try eventually(timeout: 3) { try shown(daemon, "mirror")?["state"] == "active" })
        #expect(try shown(daemon, "mirror")?["heldBy"]?.intValue == Int(getpid()))
    }
}

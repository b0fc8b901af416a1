// Applications bring their own audio. The Swift AudioSession library and
// libaudiosession (C) against the real recd on the test's jackd; the example applications
// (audiosession-tone, audiosession-record, examples/c) as real JACK clients.
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

/// A running example application (or compiled C program), talking to the test's recd.
final class AppProcess: ChildProgram, @unchecked Sendable {
    init(_ executable: String, _ arguments: [String], socket: String) throws {
        try super.init(
            executable, arguments, environment: ExternalTools.environment(["RECD_SOCKET": socket]), prefix: "recd-app")
    }
}

/// Notifications as they arrive, for the test thread to wait on.
final class NotificationLog: @unchecked Sendable {
    private let items = Locked<[AudioSessionNotification]>([])

    func append(_ notification: AudioSessionNotification) { items.withLock { $0.append(notification) } }
    var all: [AudioSessionNotification] { items.withLock { $0 } }

    func waitFor(timeout: Double = 5, _ predicate: (AudioSessionNotification) -> Bool) -> AudioSessionNotification? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let found = all.first(where: predicate) { return found }
            usleep(10_000)
        }
        return nil
    }
}

/// The example executables and libaudiosession.so, built beside recd.
enum Examples {
    static var tone: String { productsDirectory.appendingPathComponent("audiosession-tone").path }
    static var record: String { productsDirectory.appendingPathComponent("audiosession-record").path }

    /// Builds libaudiosession.so in the build directory and writes its audiosession.pc
    /// (scripts/audiosession-pc), then compiles examples/c/NAME.c (or `source`) with
    /// `cc $(pkg-config --cflags --libs audiosession) -ljack -lm` and `extra` flags.
    static func compileC(_ name: String, into directory: String, source: String? = nil, extra: [String] = []) throws
        -> String
    {
        let script = ExternalTools.packageRoot + "/scripts/audiosession-pc"
        let pc = try ExternalTools.runExecutable(script, [productsDirectory.path, directory])
        try #require(pc.status == 0, "\(pc.stderr)")
        let flags = try ExternalTools.run(
            "pkg-config", ["--cflags", "--libs", "audiosession"], environment: ["PKG_CONFIG_PATH": directory])
        try #require(flags.status == 0, "\(flags.stderr)")
        let words = flags.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        let binary = directory + "/" + name
        let source = source ?? ExternalTools.packageRoot + "/examples/c/\(name).c"
        let compiled = try ExternalTools.run(
            "cc", ["-Wall", "-Werror", source, "-o", binary] + words + ["-ljack", "-lm"] + extra)
        try #require(compiled.status == 0, "cc failed: \(compiled.stderr)")
        return binary
    }
}

/// recd's build has session.attach (the attach branch): the tests that put an
/// application's own JACK ports under a session run only then.
let attachAvailable = Op(rawValue: "session.attach") != nil

@Suite("AudioSession: the application library against the real recd", .serialized)
struct AudioSessionLibraryTests {
    @Test("setPrefersNoInterruptionsFromSystemAlerts: recd has it at once, setCategory keeps it, a restart of recd too")
    func prefersNoInterruptionsFromSystemAlerts() throws {
        let daemon = try Daemon()
        let session = AudioSession(app: "quietapp", socketPath: daemon.socket)
        defer { session.close() }
        try session.setCategory(.playAndRecord)
        #expect(try session.prefersNoInterruptionsFromSystemAlerts == false)
        try session.setPrefersNoInterruptionsFromSystemAlerts(true)
        #expect(try session.prefersNoInterruptionsFromSystemAlerts == true)
        let shown = try daemon.recctl("--json", "session", "show", "quietapp").json
        #expect(shown?["prefersNoInterruptionsFromSystemAlerts"] == true)
        try session.setCategory(.playback)
        #expect(try session.prefersNoInterruptionsFromSystemAlerts == true, "session.set without it leaves it")
        try session.setPrefersNoInterruptionsFromSystemAlerts(false)
        #expect(try session.prefersNoInterruptionsFromSystemAlerts == false)
        try session.setPrefersNoInterruptionsFromSystemAlerts(true)
        // No call after the restart: the library re-applies what it remembers as it reconnects.
        try daemon.restart()
        #expect(try eventually(timeout: 5) { (try? session.prefersNoInterruptionsFromSystemAlerts) == true })
    }

    @Test(
        "recd closes the library's idle request connection, the next call reconnects; an activation keeps it",
        .timeLimit(.minutes(1)))
    func idleRequestConnection() throws {
        let daemon = try Daemon(idleClientTimeout: 10)
        let session = AudioSession(app: "idleapp", socketPath: daemon.socket)
        defer { session.close() }
        try session.setCategory(.playback, options: [.mixWithOthers])
        let closing = "closing idle control connection"
        func idleCloses() -> Int { daemon.log.components(separatedBy: closing).count - 1 }
        // The request connection holds nothing and waits: recd closes it (the watch stays).
        #expect(try eventually(timeout: 15) { idleCloses() == 1 }, "recd's log: \(daemon.log.suffix(2000))")
        let info = try session.sessionInfo()
        #expect(info.category == "playback", "the call after the close reconnected")

        // An activation the library's process holds keeps every connection of the process.
        try session.setActive(true)
        #expect(try session.sessionInfo().state == "active")
        let quiet = Date().addingTimeInterval(12)
        while Date() < quiet {
            #expect(idleCloses() == 1, "a connection of a process that holds an activation was closed")
            usleep(200_000)
        }
        #expect(try session.sessionInfo().state == "active")
        #expect(idleCloses() == 1, "\(daemon.log.suffix(2000))")
        try session.setActive(false)
    }

    @Test(
        "a request that crosses recd's idle close is not answered by the closing line: the client sends it again",
        .timeLimit(.minutes(1)))
    func requestCrossingTheIdleClose() throws {
        // The crossing itself, exactly: recd's last line (the real one, `Wire.closing`) is on the
        // wire and the socket still open when the request goes out. A real socket whose other
        // end the test holds, because recd's own close cannot be timed to fall in between.
        let directory = try makeTemporaryDirectory("recd-crossing")
        let path = directory + "/control.sock"
        let listener = try UnixSocket.make()
        defer { Descriptor.close(listener) }
        try UnixSocket.bind(listener, path: path)
        try UnixSocket.listen(listener, backlog: 1, path: path)
        let connection = try Connection(candidates: [path], interface: .swift)
        let peer = try #require(try UnixSocket.accept(listener))
        defer { Descriptor.close(peer) }
        let closing = Wire.closing(
            SessionError(.badParam, "connection closed after 10 s without a request, a watch or anything held"),
            for: .swift)
        FileHandle(fileDescriptor: peer, closeOnDealloc: false).write(Data((closing + "\n").utf8))
        do {
            let reply = try connection.call(.status)
            Issue.record("the closing line was taken as the request's reply: \(reply.jsonText)")
        } catch ClientFailure.io(let message) {
            #expect(message.contains("recd closed the connection"), "\(message)")
        }

        // The real recd sends that line when it closes an idle connection, and the library
        // goes on over a new one.
        let daemon = try Daemon(idleClientTimeout: 10)
        let session = AudioSession(app: "crossapp", socketPath: daemon.socket)
        defer { session.close() }
        try session.setCategory(.playback)
        let watcher = try Connection(candidates: [daemon.socket], interface: .swift)
        #expect(try watcher.call(.status)["ok"]?.boolValue == true)
        let last = try watcher.readMessage(timeout: 15)
        #expect(last["closing"]?.boolValue == true && last["id"] == .null, "\(last.jsonText)")
        #expect(try session.sessionInfo().category == "playback")
    }

    @Test("setPrefersEchoCancelledInput: playAndRecord only, shown with isEchoCancelledInputAvailable, kept by recd")
    func prefersEchoCancelledInput() throws {
        let daemon = try Daemon()
        let session = AudioSession(app: "callapp", socketPath: daemon.socket)
        defer { session.close() }
        try session.setCategory(.playback)
        #expect(try session.isEchoCancelledInputAvailable == false)
        do {
            try session.setPrefersEchoCancelledInput(true)
            Issue.record("playback accepted prefersEchoCancelledInput")
        } catch {
            #expect(error.code == .incompatibleCategory && error.message.contains("playAndRecord"), "\(error)")
        }
        #expect(try session.prefersEchoCancelledInput == false, "a refused call changed it")
        try session.setCategory(.playAndRecord)
        #expect(try session.isEchoCancelledInputAvailable == true)
        try session.setPrefersEchoCancelledInput(true)
        let shown = try daemon.recctl("--json", "session", "show", "callapp").json
        #expect(shown?["prefersEchoCancelledInput"] == true && shown?["isEchoCancelledInputAvailable"] == true)
        try session.setCategory(.playAndRecord, mode: .measurement)
        #expect(try session.isEchoCancelledInputAvailable == false, "measurement promises unprocessed samples")
        #expect(try session.prefersEchoCancelledInput == true, "the preference waits")
        let off = try daemon.recctl("session", "prefer", "callapp", "--echo-cancelled-input", "no")
        #expect(off.status == 0, "\(off.stderr)")
        #expect(try session.prefersEchoCancelledInput == false)
        try session.setPrefersEchoCancelledInput(true)
        // No call after the restart: the library re-applies what it remembers as it reconnects.
        try daemon.restart()
        #expect(try eventually(timeout: 5) { (try? session.prefersEchoCancelledInput) == true })
    }

    @Test("setCategory, setActive, currentRoute, availableInputs and the hints; rejected calls throw SPEC §2 codes")
    func configureAndActivate() throws {
        let daemon = try Daemon()
        let session = AudioSession(app: "libapp", socketPath: daemon.socket)
        defer { session.close() }
        #expect(throws: AudioSessionError.self) { try session.sessionInfo() }
        do {
            _ = try session.sessionInfo()
        } catch {
            #expect(error.code == .expiredSession, "\(error)")
        }

        try session.setCategory(.playback, options: [.mixWithOthers])
        var info = try session.sessionInfo()
        #expect(info.category == "playback" && info.options == ["mixWithOthers"] && info.state == "inactive")
        do {
            try session.setCategory(.playback, mode: .voiceChat)
            Issue.record("playback + voiceChat was accepted")
        } catch {
            #expect(error.code == .badParam && error.message.contains("voiceChat"), "\(error)")
        }
        #expect(try session.sessionInfo().category == "playback", "a rejected call changes nothing")

        try session.setActive(true)
        info = try session.sessionInfo()
        #expect(info.state == "active")
        #expect(try daemon.recctl("--json", "session", "show", "libapp").json?["state"] == "active")
        #expect(try session.currentRoute.outputs.map(\.name) == ["out"])
        #expect(try session.currentRoute.outputs.first?.type == "lineOut")
        #expect(try session.availableInputs.isEmpty, "playback has no input")
        #expect(try session.isOtherAudioPlaying == false)
        #expect(try session.secondaryAudioShouldBeSilencedHint == false)
        do {
            try session.overrideOutputAudioPort(.speaker)
            Issue.record("a speaker override outside playAndRecord was accepted")
        } catch {
            #expect(error.code != .mediaServicesFailed, "\(error)")
        }
        try session.setActive(false)
        #expect(try session.sessionInfo().state == "inactive")

        try session.setCategory(.playAndRecord)
        #expect(try session.availableInputs.map(\.name) == ["mic"])
        try session.setPreferredInput(named: "mic")
        #expect(try session.sessionInfo().preferences.preferredInput == "mic")
        try session.setPreferredInput(nil)
        #expect(try session.sessionInfo().preferences.preferredInput == nil)
    }

    @Test(
        "another session's activation interrupts (callback and AsyncStream); its deactivation with notifyOthers ends it with shouldResume"
    )
    func interruptions() async throws {
        let daemon = try Daemon()
        let session = AudioSession(app: "libplayer", socketPath: daemon.socket)
        defer { session.close() }
        let log = NotificationLog()
        session.addObserver { log.append($0) }
        let streamed = NotificationLog()
        let stream = session.notifications
        let reader = Task {
            for await notification in stream { streamed.append(notification) }
        }
        defer { reader.cancel() }

        try session.setCategory(.playback)
        try session.setActive(true)
        try #require(daemon.recctl("session", "set", "caller", "--category", "playback").status == 0)
        try #require(daemon.recctl("session", "activate", "caller").status == 0)
        let began = log.waitFor {
            if case .interruption(.began, _, .default) = $0 { true } else { false }
        }
        #expect(began != nil, "no interruption began: \(log.all)")
        #expect(try session.sessionInfo().state == "interrupted")

        try #require(daemon.recctl("session", "deactivate", "caller", "--notify-others").status == 0)
        let ended = log.waitFor {
            if case .interruption(.ended, _, _) = $0 { true } else { false }
        }
        #expect(ended == .interruption(type: .ended, options: .shouldResume, reason: .default), "\(log.all)")
        #expect(streamed.waitFor { $0 == ended } != nil, "the AsyncStream got \(streamed.all)")
        #expect(ended.map { "\($0)" } == "interruption ended reason=default options=shouldResume")
    }

    @Test(
        "unplugging the route's device (scripted jack sense) delivers routeChange oldDeviceUnavailable with the previous route"
    )
    func routeChange() throws {
        let daemon = try Daemon(
            ports: """
                [port speaker]
                type = builtInSpeaker
                direction = output
                jack = system:playback_1

                [port phones]
                type = headphones
                direction = output
                jack = system:playback_2
                sense = Headphone Jack

                """, environment: ["RECD_DEVICE_EVENTS": "scripted"])
        let session = AudioSession(app: "libroute", socketPath: daemon.socket)
        defer { session.close() }
        let log = NotificationLog()
        session.addObserver { log.append($0) }
        try session.setCategory(.playback)
        try session.setActive(true)
        #expect(try eventually { try session.currentRoute.outputs.map(\.name) == ["phones"] })

        let client = try RawClient(path: daemon.socket)
        client.send(
            #"{"id":1,"op":"devices.inject","events":[{"type":"jackSense","card":"PCH","control":"Headphone Jack","plugged":false}]}"#
                + "\n")
        #expect(client.readJSON()?["ok"] == true)
        let change = log.waitFor {
            if case .routeChange(.oldDeviceUnavailable, _) = $0 { true } else { false }
        }
        guard case .routeChange(_, let previous) = change else {
            Issue.record("no routeChange oldDeviceUnavailable: \(log.all)")
            return
        }
        #expect(previous.outputs.map(\.name) == ["phones"] && previous.outputs.first?.type == "headphones")
        #expect(try session.currentRoute.outputs.map(\.name) == ["speaker"])
    }

    @Test(
        "requestRecordPermission waits for an administrator's grant (recctl permission grant); recordPermission follows"
    )
    func permission() async throws {
        let daemon = try Daemon()
        let session = AudioSession(app: "libmic", socketPath: daemon.socket, microphoneUsageDescription: "tests")
        defer { session.close() }
        try session.setCategory(.record)
        #expect(try session.recordPermission == .undetermined)
        let answered = Locked<Bool?>(nil)
        let asking = Task {
            let granted = await session.requestRecordPermission()
            answered.withLock { $0 = granted }
        }
        usleep(300_000)
        #expect(answered.withLock { $0 } == nil, "answered before anyone decided")
        try #require(daemon.recctl("permission", "grant", "libmic").status == 0)
        await asking.value
        #expect(answered.withLock { $0 } == true)
        #expect(try session.recordPermission == .granted)
        #expect(try session.requestRecordPermissionAndWait() == .granted, "a decided permission answers at once")
    }

    @Test(
        "after a recd restart the library reconnects, applies its configuration again (active again) and says mediaServicesWereLost, then Reset"
    )
    func reconnectsAfterRestart() throws {
        let daemon = try Daemon()
        let session = AudioSession(app: "libsurvivor", socketPath: daemon.socket)
        defer { session.close() }
        let log = NotificationLog()
        session.addObserver { log.append($0) }
        try session.setCategory(.playback, options: [.mixWithOthers])
        try session.setActive(true)

        daemon.stop()
        #expect(log.waitFor { $0 == .mediaServicesWereLost } != nil, "\(log.all)")
        do {
            try session.setActive(true)
            Issue.record("a call succeeded with recd stopped")
        } catch {
            #expect(error.code == .mediaServicesFailed && error.message.contains("start recd"), "\(error)")
        }
        try daemon.start()
        #expect(log.waitFor { $0 == .mediaServicesWereReset } != nil, "\(log.all)")
        // recd keeps the configuration but not the activation across its restart: the library
        // activated it again.
        let shown = try daemon.recctl("--json", "session", "show", "libsurvivor").json
        #expect(shown?["state"] == "active" && shown?["options"] == ["mixWithOthers"], "\(shown?.jsonText ?? "")")
        #expect(try session.sessionInfo().state == "active")
    }
}

@Suite("the example applications and libaudiosession (C) against the real recd", .serialized)
struct AudioSessionExampleTests {
    @Test(
        "examples/c/tone.c compiles with pkg-config's audiosession flags; it sets its category, activates and gets the interruption callback"
    )
    func cToneInterruption() throws {
        let daemon = try Daemon()
        let build = try makeTemporaryDirectory("recd-cbuild")
        defer { try? FileManager.default.removeItem(atPath: build) }
        let tone = try Examples.compileC("tone", into: build)
        _ = try Examples.compileC("record", into: build)
        let client = uniqueName("ctone")
        let app = try AppProcess(tone, ["ctone", client], socket: daemon.socket)
        #expect(app.waitFor { $0 == "active" }, "\(app.output)")
        #expect(app.lines.contains("category playback"), "\(app.output)")
        #expect(try daemon.recctl("--json", "session", "show", "ctone").json?["state"] == "active")

        try #require(daemon.recctl("session", "set", "boss", "--category", "playback").status == 0)
        try #require(daemon.recctl("session", "activate", "boss").status == 0)
        #expect(app.waitFor { $0 == "interruption began reason=default options=none" }, "\(app.output)")
        try #require(daemon.recctl("session", "deactivate", "boss", "--notify-others").status == 0)
        #expect(app.waitFor { $0 == "interruption ended reason=default options=shouldResume" }, "\(app.output)")
    }

    @Test("libaudiosession refuses NULL handles, strings, results, bad port lists and a freed session with badParam")
    func cArgumentsChecked() throws {
        let build = try makeTemporaryDirectory("recd-cmisuse")
        defer { try? FileManager.default.removeItem(atPath: build) }
        let misuse = try Examples.compileC(
            "api_misuse", into: build, source: ExternalTools.packageRoot + "/Tests/CPrograms/api_misuse.c")
        let run = try ExternalTools.runExecutable(misuse, [build + "/nobody-listens.sock"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("misuse: 0 failures"), "\(run.stdout)")
        // Every check ran (a crash would end the list early).
        #expect(run.stdout.split(separator: "\n").filter { $0.hasPrefix("ok ") }.count >= 34, "\(run.stdout)")
    }

    @Test("audiosession-tone (Swift) activates and resumes by itself when an interruption ends with shouldResume")
    func swiftToneResumes() throws {
        let daemon = try Daemon()
        let app = try AppProcess(
            Examples.tone, ["--app", "stone", "--client", uniqueName("stone")], socket: daemon.socket)
        #expect(app.waitFor { $0 == "active" }, "\(app.output)")
        try #require(daemon.recctl("session", "set", "boss", "--category", "playback").status == 0)
        try #require(daemon.recctl("session", "activate", "boss").status == 0)
        #expect(app.waitFor { $0.hasPrefix("interruption began") }, "\(app.output)")
        #expect(try daemon.recctl("--json", "session", "show", "stone").json?["state"] == "interrupted")
        try #require(daemon.recctl("session", "deactivate", "boss", "--notify-others").status == 0)
        #expect(app.waitFor { $0 == "resumed" }, "\(app.output)")
        #expect(try daemon.recctl("--json", "session", "show", "stone").json?["state"] == "active")
    }
}

/// The RMS of the last `seconds` of one channel of a growing raw capture (interleaved float32).
func rmsOfLast(_ path: String, seconds: Double, channel: Int = 0, channels: Int = 2, rate: Int = 48_000) throws -> Float
{
    let samples = deinterleave(try readRawFloats(path: path), channels: channels)[channel]
    let tail = samples.suffix(Int(seconds * Double(rate)))
    guard !tail.isEmpty else { return 0 }
    return (tail.reduce(0) { $0 + $1 * $1 } / Float(tail.count)).squareRoot()
}

/// Session-routed ports: an application's own JACK client under its session.
/// These need recd's `session.attach` (the attach branch); until it is merged they are skipped.
@Suite(
    "session-routed ports with the example applications", .serialized,
    .enabled(if: attachAvailable, "needs recd's session.attach / session.detach (the attach branch)"))
struct AttachedApplicationTests {
    /// A headphone output with jack sense whose JACK ports are a capturing recd-signal (the
    /// route while plugged), the built-in speaker (the route once they are unplugged), and an
    /// input fed by a recd-signal playing a 1 kHz sine.
    static func ports(sink: String, source: String) -> String {
        """
        [port mic]
        type = lineIn
        direction = input
        jack = \(source):out_1, \(source):out_2

        [port phones]
        type = headphones
        direction = output
        jack = \(sink):in_1, \(sink):in_2
        sense = Headphone Jack

        [port speaker]
        type = builtInSpeaker
        direction = output
        jack = system:playback_1, system:playback_2

        """
    }

    /// Two stereo outputs, headphones (preferred while there) and a speaker; `phones` and
    /// `speaker` are the JACK port names' stems, "CLIENT:in_" (channel numbers follow).
    static func headphonesAndSpeaker(phones: String, speaker: String) -> String {
        """
        [port phones]
        type = headphones
        direction = output
        jack = \(phones)1, \(phones)2

        [port speaker]
        type = builtInSpeaker
        direction = output
        jack = \(speaker)1, \(speaker)2

        """
    }

    func inject(_ daemon: Daemon, plugged: Bool) throws {
        let client = try RawClient(path: daemon.socket)
        client.send(
            #"{"id":1,"op":"devices.inject","events":[{"type":"jackSense","card":"PCH","control":"Headphone Jack","plugged":\#(plugged)}]}"#
                + "\n")
        #expect(client.readJSON()?["ok"] == true)
    }

    @Test(
        "an attached player whose output client exits stays silent; deactivated and activated again it plays on the session's new output"
    )
    func unplugThenActivateAgain() throws {
        let phones = uniqueName("phones")
        let speaker = uniqueName("speaker")
        let directory = try makeTemporaryDirectory("recd-reactivate")
        let phonesRaw = directory + "/phones.raw"
        let speakerRaw = directory + "/speaker.raw"
        let phonesClient = try SignalClient(["--name", phones, "capture", "--ports", "in_1,in_2", "--out", phonesRaw])
        let speakerClient = try SignalClient(["--name", speaker, "capture", "--ports", "in_1,in_2", "--out", speakerRaw])
        defer {
            phonesClient.stop()
            speakerClient.stop()
        }
        let daemon = try Daemon(ports: Self.headphonesAndSpeaker(phones: "\(phones):in_", speaker: "\(speaker):in_"))
        let app = try AppProcess(
            Examples.tone, ["--app", "replug", "--client", uniqueName("replug"), "--frequency", "1000"],
            socket: daemon.socket)
        try #require(app.waitFor { $0 == "active" }, "\(app.output)")
        awaitCaptured(phonesRaw, seconds: 0.7)
        #expect(try rmsOfLast(phonesRaw, seconds: 0.4) > 0.2, "heard on the phones")

        phonesClient.stop()
        #expect(app.waitFor { $0.hasPrefix("routeChange reason=oldDeviceUnavailable") }, "\(app.output)")
        awaitCaptured(speakerRaw, seconds: 0.6)
        #expect(try rmsOfLast(speakerRaw, seconds: 0.4) < 1e-3, "privacy: never a fall back to the speaker")

        try #require(daemon.recctl("session", "deactivate", "replug").status == 0)
        try #require(daemon.recctl("session", "activate", "replug").status == 0)
        awaitCaptured(speakerRaw, seconds: 0.7)
        let level = try rmsOfLast(speakerRaw, seconds: 0.4)
        #expect(level > 0.2, "activated again, the player plays on the speaker (RMS \(level))")
    }

    @Test(
        "attaching the JACK client of a configured [port]: the attachment wins while it lasts (port unavailable), no connection churns, status answers within 100 ms, SIGTERM stops recd"
    )
    func attachConfiguredDevice() throws {
        let metro = uniqueName("metro")
        let source = try SignalClient(["--name", metro, "play", "--ports", "out_1", "--signal", "sine:1000"])
        defer { source.stop() }
        let daemon = try Daemon(
            ports: """
                [port metro]
                type = lineIn
                direction = input
                jack = \(metro):out_1

                [port speaker]
                type = builtInSpeaker
                direction = output
                jack = system:playback_1, system:playback_2

                """)
        try #require(daemon.recctl("session", "set", "click", "--category", "playback").status == 0)
        func metroAvailable() throws -> Bool? {
            let routes = try daemon.recctl("--json", "routes").json
            return routes?["ports"]?.arrayValue?.first { $0["name"] == "metro" }?["available"]?.boolValue
        }
        #expect(try metroAvailable() == true)
        let client = try RawClient(path: daemon.socket)
        let began = Date()
        client.send(
            #"{"id":1,"op":"session.attach","app":"click","client":"\#(metro)","playPorts":["\#(metro):out_1"]}"#
                + "\n")
        let reply = client.readJSON()
        #expect(reply?["ok"] == true, "\(reply?.jsonText ?? "no reply")")
        #expect(Date().timeIntervalSince(began) < 0.5)
        #expect(try eventually(timeout: 2) { try metroAvailable() == false }, "the attached port is the session's now")
        // Two seconds of status round trips within 100 ms, no churn in the log. recd's part is
        // its control turns (it logs one over 50 ms, with its parts): none over 100 ms. A round
        // trip also waits on this 2-core machine's scheduler (three test passes beside it): one
        // of the twenty may be slower, with no long turn of recd's behind it (seen: 111 and
        // 179 ms in about 1 of 30 runs, every turn under 50 ms).
        var slowest = 0.0
        var slow = 0
        for id in 2..<22 {
            let asked = Date()
            client.send(#"{"id":\#(id),"op":"status"}"# + "\n")
            var answer: JSONValue?
            repeat { answer = client.readJSON() } while answer != nil && answer?["id"]?.intValue != id
            #expect(answer?["ok"] == true)
            let took = Date().timeIntervalSince(asked)
            slowest = max(slowest, took)
            if took >= 0.1 { slow += 1 }
            usleep(100_000)
        }
        // recd logs a control turn over 50 ms with its parts: a slow answer says whether recd's
        // control thread was busy then, or the answer waited to be scheduled.
        let longTurns = daemon.log.split(separator: "\n").filter { $0.contains("control: one turn took") }
        let turnMilliseconds = longTurns.compactMap { line in
            line.split(separator: "took ").last?.split(separator: " ").first.flatMap { Int($0) }
        }
        print(
            "status round trip while a configured device is attached: slowest \(Int(slowest * 1000)) ms, "
                + "\(slow) of 20 over 100 ms; long control turns: "
                + (longTurns.isEmpty ? "none" : longTurns.joined(separator: "; ")))
        #expect(slow <= 1, "\(slow) status round trips over 100 ms; long control turns: \(longTurns)")
        #expect(turnMilliseconds.allSatisfy { $0 < 100 }, "recd's control thread was busy: \(longTurns)")
        let restored = daemon.log.components(separatedBy: "recd restored it").count - 1
        let bypass = daemon.log.components(separatedBy: "would bypass recd").count - 1
        #expect(restored <= 1 && bypass <= 1, "churn: \(restored) restores, \(bypass) bypass removals\n\(daemon.log)")

        client.send(#"{"id":30,"op":"session.detach","app":"click","client":"\#(metro)"}"# + "\n")
        #expect(client.readJSON()?["ok"] == true)
        #expect(try eventually(timeout: 2) { try metroAvailable() == true }, "detached, the configured port is back")
        let stopping = Date()
        daemon.stop()
        #expect(Date().timeIntervalSince(stopping) < 10, "SIGTERM stops recd")
    }

    @Test(
        "audiosession-tone: silent before setActive(true), heard after; an interruption silences it, shouldResume brings it back; ducking -14 ± 0.5 dB; unplug silences it; after a recd restart it is attached and heard again"
    )
    func toneUnderThePolicy() throws {
        let sink = uniqueName("sink")
        let source = uniqueName("src")
        let raw = try makeTemporaryDirectory("recd-attach") + "/out.raw"
        let sinkClient = try SignalClient(["--name", sink, "capture", "--ports", "in_1,in_2", "--out", raw])
        let sourceClient = try SignalClient([
            "--name", source, "play", "--ports", "out_1,out_2", "--signal", "sine:1000",
        ])
        defer {
            sinkClient.stop()
            sourceClient.stop()
        }
        let daemon = try Daemon(
            extraConfig: "\n[policy]\nduck_level_db = -14\n", ports: Self.ports(sink: sink, source: source),
            environment: ["RECD_DEVICE_EVENTS": "scripted"])
        let client = uniqueName("atone")
        let app = try AppProcess(
            Examples.tone, ["--app", "atone", "--client", client, "--activate-after", "1.5", "--frequency", "1000"],
            socket: daemon.socket)
        try #require(app.waitFor { $0 == "attached" }, "\(app.output)")
        awaitCaptured(raw, seconds: 0.7)
        #expect(try rmsOfLast(raw, seconds: 0.4) < 1e-3, "the app's tone reached the output before activation")

        try #require(app.waitFor { $0 == "active" }, "\(app.output)")
        awaitCaptured(raw, seconds: 0.7)
        let full = try rmsOfLast(raw, seconds: 0.4)
        #expect(full > 0.2, "after setActive(true) the tone reaches the output (RMS \(full))")

        try #require(daemon.recctl("session", "set", "boss", "--category", "playback").status == 0)
        let peak = deinterleave(try readRawFloats(path: raw), channels: 2)[0].suffix(4800).map(abs).max() ?? 0
        let before = try readRawFloats(path: raw).count / 2
        try #require(daemon.recctl("session", "activate", "boss").status == 0)
        #expect(app.waitFor { $0 == "interruption began reason=default options=none" }, "\(app.output)")
        awaitCaptured(raw, seconds: 0.4)
        #expect(try rmsOfLast(raw, seconds: 0.3) < 1e-3, "interrupted, the tone left the output")
        // Within one period of the fade's start (a 1 kHz tone: one cycle per 48 frames), ramped.
        let played = Array(deinterleave(try readRawFloats(path: raw), channels: 2)[0].dropFirst(before))
        let fade = try #require(fadeOut(played, full: peak), "the tone never faded, or never went silent")
        #expect(fade.frames <= 1024 + 48 && fade.ramped && fade.staysSilent, "fade: \(fade)")
        print("example app interrupted: silent \(fade.frames) frames after the fade began (period 1024)")
        try #require(daemon.recctl("session", "deactivate", "boss", "--notify-others").status == 0)
        #expect(app.waitFor { $0 == "resumed" }, "\(app.output)")
        awaitCaptured(raw, seconds: 0.7)
        #expect(try rmsOfLast(raw, seconds: 0.4) > 0.2, "shouldResume brought it back")

        try #require(
            daemon.recctl(
                "session", "set", "nav", "--category", "playback", "--mode", "voicePrompt", "--options", "duckOthers"
            ).status == 0)
        try #require(daemon.recctl("session", "activate", "nav").status == 0)
        awaitCaptured(raw, seconds: 0.7)
        let ducked = try rmsOfLast(raw, seconds: 0.4)
        let levelDB = 20 * log10(Double(ducked / full))
        print("attached tone ducked by \(levelDB) dB")
        #expect(abs(levelDB + 14) <= 0.5, "ducked by \(levelDB) dB")
        try #require(daemon.recctl("session", "deactivate", "nav").status == 0)
        usleep(500_000)

        try inject(daemon, plugged: false)
        #expect(app.waitFor { $0.hasPrefix("routeChange reason=oldDeviceUnavailable") }, "\(app.output)")
        awaitCaptured(raw, seconds: 0.4)
        #expect(try rmsOfLast(raw, seconds: 0.3) < 1e-3, "unplugged, the tone is silenced (privacy)")
        try inject(daemon, plugged: true)

        try daemon.restart()
        #expect(app.waitFor(timeout: 10) { $0 == "mediaServicesWereReset" }, "\(app.output)")
        awaitCaptured(raw, seconds: 0.8)
        #expect(try rmsOfLast(raw, seconds: 0.4) > 0.2, "after recd's restart the library attached and activated again")
    }

    @Test("audiosession-record gets zeros until its record permission is granted, then the input's samples")
    func recorderZerosUntilGranted() throws {
        let sink = uniqueName("sink")
        let source = uniqueName("src")
        let directory = try makeTemporaryDirectory("recd-attach")
        let sinkClient = try SignalClient([
            "--name", sink, "capture", "--ports", "in_1,in_2", "--out", directory + "/out.raw",
        ])
        let sourceClient = try SignalClient([
            "--name", source, "play", "--ports", "out_1,out_2", "--signal", "sine:1000",
        ])
        defer {
            sinkClient.stop()
            sourceClient.stop()
        }
        let daemon = try Daemon(ports: Self.ports(sink: sink, source: source))
        let path = directory + "/rec.raw"
        let app = try AppProcess(
            Examples.record, ["--out", path, "--seconds", "3", "--app", "arec", "--client", uniqueName("arec")],
            socket: daemon.socket)
        try #require(app.waitFor { $0 == "active" }, "\(app.output)")
        #expect(app.lines.contains("attached"), "\(app.output)")
        usleep(1_000_000)
        try #require(daemon.recctl("permission", "grant", "arec").status == 0)
        #expect(app.waitFor { $0 == "permission granted" }, "\(app.output)")
        #expect(app.waitForExit(timeout: 10))
        let samples = try readRawFloats(path: path)
        let firstSound = samples.firstIndex { $0 != 0 } ?? samples.count
        #expect(
            firstSound >= 48_000 * 8 / 10,
            "the recorder got sound \(firstSound) frames in, before its permission was granted")
        let tail = samples.suffix(24_000)
        let rms = (tail.reduce(0) { $0 + $1 * $1 } / Float(max(tail.count, 1))).squareRoot()
        #expect(rms > 0.1, "after the grant the input's samples arrive (RMS \(rms))")
    }

    @Test("the C examples attach too: tone.c is heard once active, record.c gets zeros until granted")
    func cExamplesAttach() throws {
        let sink = uniqueName("sink")
        let source = uniqueName("src")
        let directory = try makeTemporaryDirectory("recd-attach")
        let raw = directory + "/out.raw"
        let sinkClient = try SignalClient(["--name", sink, "capture", "--ports", "in_1,in_2", "--out", raw])
        let sourceClient = try SignalClient([
            "--name", source, "play", "--ports", "out_1,out_2", "--signal", "sine:1000",
        ])
        defer {
            sinkClient.stop()
            sourceClient.stop()
        }
        let daemon = try Daemon(ports: Self.ports(sink: sink, source: source))
        let tone = try AppProcess(
            try Examples.compileC("tone", into: directory), ["ctone", uniqueName("ctone")], socket: daemon.socket)
        try #require(tone.waitFor { $0 == "active" }, "\(tone.output)")
        #expect(tone.lines.contains("attached"), "\(tone.output)")
        awaitCaptured(raw, seconds: 0.7)
        #expect(try rmsOfLast(raw, seconds: 0.4) > 0.2)

        let path = directory + "/rec.raw"
        let recorder = try AppProcess(
            try Examples.compileC("record", into: directory), [path, "3", "crec", uniqueName("crec")],
            socket: daemon.socket)
        try #require(recorder.waitFor { $0 == "active" }, "\(recorder.output)")
        usleep(1_000_000)
        try #require(daemon.recctl("permission", "grant", "crec").status == 0)
        #expect(recorder.waitForExit(timeout: 10))
        let samples = try readRawFloats(path: path)
        #expect((samples.firstIndex { $0 != 0 } ?? samples.count) >= 48_000 * 8 / 10)
        #expect(samples.suffix(24_000).contains { abs($0) > 0.1 })
    }
}

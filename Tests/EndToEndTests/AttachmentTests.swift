// Applications' own JACK clients under sessions (`session.attach`), end to end: the real recd,
// a recd-signal client standing in for the application (its ports connected nowhere, or
// connected straight to the device to try a bypass), and another one as the device, capturing
// what reaches it.
import ControlProtocol
import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

@Suite("session-routed JACK ports (session.attach)", .serialized)
struct AttachmentTests {
    /// A 1 kHz sine at -6 dBFS: exactly one cycle per 48 frames at 48 kHz, peak 0.501.
    static let tone = ["--signal", "sine:1000", "--level", "-6"]
    static let full = Float(pow(10, -6.0 / 20))

    /// Sends one request on `client` and returns its reply.
    func request(_ client: RawClient, _ op: String, _ fields: [(String, JSONValue)]) -> JSONValue? {
        let line = JSONValue.object([("v", 2), ("id", 1), ("op", .string(op))] + fields).jsonText
        client.send(line + "\n")
        return client.readJSON()
    }

    func attach(_ client: RawClient, app: String, jackClient: String, play: [String] = [], capture: [String] = [])
        -> JSONValue?
    {
        request(
            client, "session.attach",
            [
                ("app", .string(app)), ("client", .string(jackClient)), ("playPorts", JSONValue(play)),
                ("capturePorts", JSONValue(capture)),
            ])
    }

    /// The samples a capture client wrote so far (interleaved).
    struct Recording {
        let path: String
        let channels: Int
        func samples() throws -> [Float] { try readRawFloats(path: path) }
        /// Frames written so far.
        func mark() throws -> Int { try samples().count / channels }
        /// Channel `channel` from frame `from` to now.
        func channel(_ channel: Int, from: Int) throws -> [Float] {
            let all = deinterleave(try samples(), channels: channels)[channel]
            return Array(all[min(from, all.count)...])
        }
    }

    /// What `channel` carried over `seconds` from a moment `settle` seconds from now (seconds of
    /// captured audio, JACK's frames, not of the wall clock).
    func steady(_ recording: Recording, channel: Int = 0, settle: Double = 0.3, seconds: Double = 0.3) throws -> [Float]
    {
        awaitCaptured(recording.path, seconds: settle, channels: recording.channels)
        let mark = try recording.mark()
        awaitCaptured(recording.path, seconds: seconds, channels: recording.channels)
        return try recording.channel(channel, from: mark)
    }

    func peak(_ samples: [Float]) -> Float { samples.map(abs).max() ?? 0 }

    func eventNamed(_ name: String) -> (JSONValue) -> Bool { { $0["event"]?.stringValue == name } }

    @Test(
        "an attached app's tone: silent before activation, heard after, ducked by 14 dB, interrupted within a period, back after the interruption and activation; detach and connection close end it"
    )
    func playUnderPolicy() throws {
        let sink = uniqueName("sink")
        let appName = uniqueName("app")
        let daemon = try Daemon(
            extraConfig: "\n[policy]\nduck_level_db = -14\n",
            ports: "[port spk]\ntype = builtInSpeaker\ndirection = output\njack = \(sink):in_1\n\n")
        let raw = daemon.directory + "/sink.raw"
        let device = try SignalClient(["--name", sink, "capture", "--ports", "in_1", "--out", raw])
        defer { device.stop() }
        // The app connects itself straight to the device, as JACK apps do: attaching must cut that.
        let app = try SignalClient(
            ["--name", appName, "play", "--ports", "out_1", "--connect", "\(sink):in_1"] + Self.tone)
        defer { app.stop() }
        let recording = Recording(path: raw, channels: 1)
        #expect(
            abs(peak(try steady(recording, settle: 0.1)) - Self.full) < 1e-3,
            "the app reaches the device before attaching")

        // Non-mixable: another non-mixable session's activation interrupts it (SPEC §3).
        #expect(try daemon.recctl("session", "set", "voip", "--category", "playback").status == 0)
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        let control = try RawClient(path: daemon.socket)
        let reply = try #require(attach(control, app: "voip", jackClient: appName, play: ["\(appName):out_1"]))
        #expect(reply["ok"] == true, "\(reply.jsonText)")
        let attachment = try #require(reply["attachment"])
        #expect(attachment["playPorts"] == JSONValue(["\(appName):out_1"]))
        #expect(attachment["recdPlayPorts"]?.arrayValue?.count == 1)
        #expect(peak(try steady(recording)) == 0, "nothing of the app reaches the output before activation")

        #expect(try daemon.recctl("session", "activate", "voip").status == 0)
        #expect(abs(peak(try steady(recording)) - Self.full) < 1e-3, "after activation the tone plays at full level")

        // Ducking: another session with duckOthers.
        #expect(
            try daemon.recctl(
                "session", "set", "nav", "--category", "playback", "--mode", "voicePrompt", "--options", "duckOthers"
            )
            .status == 0)
        #expect(try daemon.recctl("session", "activate", "nav").status == 0)
        let ducked = peak(try steady(recording))
        let db = 20 * log10(Double(ducked / Self.full))
        #expect(abs(db + 14) <= 0.5, "ducked by \(db) dB")
        #expect(try daemon.recctl("session", "deactivate", "nav").status == 0)
        #expect(abs(peak(try steady(recording)) - Self.full) < 1e-3, "unducked")

        // A non-mixable session interrupts it: the interruption event, and silence within a period.
        let watcher = try daemon.watch("voip")
        #expect(try daemon.recctl("session", "set", "call", "--category", "playback").status == 0)
        let before = try recording.mark()
        #expect(try daemon.recctl("session", "activate", "call").status == 0)
        #expect(
            watcher.waitFor { $0["event"] == "interruption" && $0["type"] == "began" }.contains {
                $0["event"] == "interruption" && $0["type"] == "began"
            })
        usleep(400_000)
        // It fades out from the next period: silent within one period (1024 frames) plus a
        // cycle, ramped, and silent from then on.
        let fade = try #require(fadeOut(try recording.channel(0, from: before), full: Self.full), "never faded, or never silent")
        #expect(fade.frames <= 1024 + 48, "silent \(fade.frames) frames after the fade began")
        #expect(fade.staysSilent, "the tone came back during the interruption")
        #expect(fade.ramped, "ramped: the first window of the fade is not yet silent")

        // The end with shouldResume, then the app activates again: the tone is back.
        #expect(try daemon.recctl("session", "deactivate", "call", "--notify-others").status == 0)
        #expect(
            watcher.waitFor { $0["event"] == "interruption" && $0["type"] == "ended" }.contains {
                $0["type"] == "ended" && $0["options"] == ["shouldResume"]
            })
        #expect(try daemon.recctl("session", "activate", "voip").status == 0)
        #expect(abs(peak(try steady(recording)) - Self.full) < 1e-3, "back after the interruption")

        // A category that cannot play silences it; playback again brings it back.
        #expect(try daemon.recctl("session", "set", "voip", "--category", "record", "--mic-usage", "test").status == 0)
        #expect(peak(try steady(recording)) == 0, "under record nothing of it plays")
        #expect(try daemon.recctl("session", "set", "voip", "--category", "playback").status == 0)
        _ = try daemon.recctl("session", "activate", "voip")
        #expect(abs(peak(try steady(recording)) - Self.full) < 1e-3, "playback again")

        // A third party connecting the attached port to the device is undone.
        #expect(try runTool("jack_connect", ["\(appName):out_1", "\(sink):in_1"]).status == 0)
        #expect(try eventually(timeout: 3) { daemon.log.contains("would bypass recd") })
        #expect(
            try eventually(timeout: 3) {
                try runTool("jack_lsp", ["-c", "\(appName):out_1"]).stdout.contains("\(sink):in_1") == false
            })
        #expect(abs(peak(try steady(recording)) - Self.full) < 1e-3, "the bypass added nothing: one tone at full level")

        // status lists it; detach ends it (silence), and so does closing the connection.
        let status = try #require(try daemon.recctl("--json", "status").json)
        #expect(status["attachments"]?.arrayValue?.first?["client"]?.stringValue == appName)
        #expect(request(control, "session.detach", [("app", "voip"), ("client", .string(appName))])?["ok"] == true)
        #expect(peak(try steady(recording)) == 0, "detached: recd plays nothing of it")
        #expect(try daemon.recctl("--json", "status").json?["attachments"]?.arrayValue?.isEmpty == true)

        var second: RawClient? = try RawClient(path: daemon.socket)
        #expect(attach(second!, app: "voip", jackClient: appName, play: ["\(appName):out_1"])?["ok"] == true)
        #expect(abs(peak(try steady(recording)) - Self.full) < 1e-3, "attached again to an active session: heard")
        second = nil
        #expect(
            try eventually(timeout: 3) {
                try daemon.recctl("--json", "status").json?["attachments"]?.arrayValue?.isEmpty == true
            })
        #expect(peak(try steady(recording)) == 0, "the connection closed: the attachment ended")
        _ = control
    }

    @Test(
        "unplugging the route's device silences the app (no fall back to the speaker); plugging it in again brings it back there"
    )
    func privacyOnUnplug() throws {
        let sink = uniqueName("sink")
        let appName = uniqueName("app")
        let daemon = try Daemon(
            ports: """
                [port speaker]
                type = builtInSpeaker
                direction = output
                jack = \(sink):in_1

                [port phones]
                type = headphones
                direction = output
                jack = \(sink):in_2
                sense = Headphone Jack

                """, environment: ["RECD_DEVICE_EVENTS": "scripted"])
        let raw = daemon.directory + "/sink.raw"
        let device = try SignalClient(["--name", sink, "capture", "--ports", "in_1,in_2", "--out", raw])
        defer { device.stop() }
        let app = try SignalClient(["--name", appName, "play", "--ports", "out_1"] + Self.tone)
        defer { app.stop() }
        let recording = Recording(path: raw, channels: 2)
        #expect(try daemon.recctl("session", "set", "voip", "--category", "playback").status == 0)
        #expect(
            try eventually {
                try daemon.recctl("--json", "session", "show", "voip").json?["route"]?["outputs"] == ["phones"]
            })
        let control = try RawClient(path: daemon.socket)
        #expect(attach(control, app: "voip", jackClient: appName, play: ["\(appName):out_1"])?["ok"] == true)
        #expect(try daemon.recctl("session", "activate", "voip").status == 0)
        #expect(abs(peak(try steady(recording, channel: 1)) - Self.full) < 1e-3, "plays on the headphones")

        let watcher = try daemon.watch("voip")
        let inject: (Bool) throws -> Void = { plugged in
            let client = try RawClient(path: daemon.socket)
            client.send(
                #"{"id":1,"op":"devices.inject","events":[{"type":"jackSense","card":"PCH","control":"Headphone Jack","plugged":"#
                    + "\(plugged)}]}\n")
            #expect(client.readJSON()?["ok"] == true)
        }
        try inject(false)
        #expect(watcher.waitFor { $0["event"] == "routeChange" }.contains { $0["reason"] == "oldDeviceUnavailable" })
        awaitCaptured(recording.path, seconds: 0.3, channels: recording.channels)
        let mark = try recording.mark()
        awaitCaptured(recording.path, seconds: 0.3, channels: recording.channels)
        #expect(peak(try recording.channel(0, from: mark)) == 0, "no fall back to the speaker")
        #expect(peak(try recording.channel(1, from: mark)) == 0, "the unplugged output is silent")

        try inject(true)
        #expect(
            watcher.waitFor(count: 2) { $0["event"] == "routeChange" }.contains { $0["reason"] == "newDeviceAvailable" }
        )
        #expect(abs(peak(try steady(recording, channel: 1)) - Self.full) < 1e-3, "back on the headphones")
        // The app's JACK client goes away: the attachment ends.
        app.stop()
        #expect(watcher.waitFor { $0["event"] == "attachment" }.contains { $0["reason"] == "clientGone" })
        #expect(try daemon.recctl("--json", "status").json?["attachments"]?.arrayValue?.isEmpty == true)
        _ = control
    }

    @Test("the app's capture port gets zeros until record permission is granted, then the input")
    func captureNeedsPermission() throws {
        let mic = uniqueName("mic")
        let appName = uniqueName("app")
        let daemon = try Daemon(ports: "[port mic]\ntype = builtInMic\ndirection = input\njack = \(mic):out_1\n\n")
        let source = try SignalClient(["--name", mic, "play", "--ports", "out_1"] + Self.tone)
        defer { source.stop() }
        let raw = daemon.directory + "/app.raw"
        let app = try SignalClient(["--name", appName, "capture", "--ports", "in_1", "--out", raw])
        defer { app.stop() }
        let recording = Recording(path: raw, channels: 1)
        #expect(try daemon.recctl("session", "set", "rec", "--category", "record", "--mic-usage", "test").status == 0)
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        let control = try RawClient(path: daemon.socket)
        let reply = try #require(attach(control, app: "rec", jackClient: appName, capture: ["\(appName):in_1"]))
        #expect(reply["ok"] == true, "\(reply.jsonText)")
        #expect(reply["attachment"]?["recdCapturePorts"]?.arrayValue?.count == 1)
        _ = try daemon.recctl("session", "activate", "rec")
        #expect(peak(try steady(recording)) == 0, "zeros while the permission is undetermined")
        // Connecting the microphone straight into the app would bypass the permission: undone.
        #expect(try runTool("jack_connect", ["\(mic):out_1", "\(appName):in_1"]).status == 0)
        #expect(
            try eventually(timeout: 3) {
                try runTool("jack_lsp", ["-c", "\(appName):in_1"]).stdout.contains("\(mic):out_1") == false
            })
        #expect(peak(try steady(recording)) == 0, "still zeros: the bypass was removed")
        #expect(try daemon.recctl("permission", "grant", "rec").status == 0)
        _ = try daemon.recctl("session", "activate", "rec")
        #expect(abs(peak(try steady(recording)) - Self.full) < 1e-3, "granted and active: the input's samples")
        #expect(try daemon.recctl("mute", "rec", "on").status == 0)
        #expect(peak(try steady(recording)) == 0, "muted: zeros")
        #expect(try daemon.recctl("mute", "rec", "off").status == 0)
        #expect(abs(peak(try steady(recording)) - Self.full) < 1e-3, "unmuted")
        #expect(try daemon.recctl("session", "deactivate", "rec").status == 0)
        #expect(peak(try steady(recording)) == 0, "inactive: zeros")
        _ = control
    }

    @Test(
        "refusals: another user's client (notSessionOwner), a port of another client or the wrong direction (badParam), capture under playback (incompatibleCategory), no session (expiredSession)"
    )
    func refusals() throws {
        let appName = uniqueName("app")
        let daemon = try Daemon()
        let app = try SignalClient(["--name", appName, "play", "--ports", "out_1"] + Self.tone)
        defer { app.stop() }
        #expect(try daemon.recctl("session", "set", "voip", "--category", "playback").status == 0)
        let control = try RawClient(path: daemon.socket)
        func code(_ reply: JSONValue?) -> String? { reply?["error"]?["name"]?.stringValue ?? reply?.jsonText }
        #expect(
            code(attach(control, app: "nosuch", jackClient: appName, play: ["\(appName):out_1"])) == "expiredSession")
        #expect(code(attach(control, app: "voip", jackClient: appName, play: ["system:capture_1"])) == "badParam")
        #expect(code(attach(control, app: "voip", jackClient: appName, play: ["\(appName):nosuch"])) == "badParam")
        #expect(code(attach(control, app: "voip", jackClient: "system", play: ["system:playback_1"])) == "badParam")
        #expect(
            code(attach(control, app: "voip", jackClient: appName, capture: ["\(appName):out_1"]))
                == "incompatibleCategory")

        // Another Unix user owns a session and tries to attach root's client.
        try #require(getuid() == 0, "this test drops to user nobody and needs root")
        daemon.openSocketToEveryone()
        #expect(try daemon.recctl("session", "set", "theirs", "--category", "playback", user: "nobody").status == 0)
        let ids = try userIDs("nobody")
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            s.sendall(('{"v":2,"id":1,"op":"session.attach","app":"theirs","client":"%s","playPorts":["%s:out_1"]}\\n' % (sys.argv[2], sys.argv[2])).encode())
            print(s.makefile().readline())
            """
        let result = try runTool(
            "setpriv",
            [
                "--reuid=\(ids.uid)", "--regid=\(ids.gid)", "--clear-groups", "/usr/bin/python3", "-c", script,
                daemon.socket, appName,
            ])
        let reply = try #require(
            try? JSONValue.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)),
            "\(result.stdout) \(result.stderr)")
        #expect(reply["error"]?["name"] == "notSessionOwner", "\(result.stdout) \(result.stderr)")
        #expect(reply["error"]?["message"]?.stringValue?.contains("uid 0") == true)
        _ = control
    }

    /// The control thread spends < 10 ms in any attach. The checks are on it; recd's
    /// ports for the attachment are registered on the engine's connection thread (JACK takes
    /// one request at a time, so a registration waits behind the reconciler's connects: 11-45
    /// ms when the control thread made them), and the attach is answered when they are.
    @Test("session.attach and detach never hold recd's control thread 10 ms (20 cycles of a 2-port player and a 2-port recorder, measured by recd itself); an attach undone while under way leaves nothing behind")
    func attachIsQuick() throws {
        let player = uniqueName("qplay")
        let recorder = uniqueName("qrec")
        // recd logs every request, tick or engine wake that holds its control thread longer
        // than RECD_CONTROL_SLOW_MS (its time waiting for a CPU not counted).
        let daemon = try Daemon(environment: ["RECD_CONTROL_SLOW_MS": "10"])
        let playing = try SignalClient(["--name", player, "play", "--ports", "out_1,out_2"] + Self.tone)
        defer { playing.stop() }
        let recording = try SignalClient(
            ["--name", recorder, "capture", "--ports", "in_1,in_2", "--out", daemon.directory + "/app.raw"])
        defer { recording.stop() }
        #expect(
            try daemon.recctl("session", "set", "quick", "--category", "playAndRecord", "--mic-usage", "test").status
                == 0)
        #expect(try daemon.recctl("session", "activate", "quick").status == 0)
        let control = try RawClient(path: daemon.socket)
        var slowestRoundTrip = 0.0
        for cycle in 0..<20 {
            for (client, play, capture) in [
                (player, ["\(player):out_1", "\(player):out_2"], [String]()),
                (recorder, [], ["\(recorder):in_1", "\(recorder):in_2"]),
            ] {
                let began = Date()
                let reply = attach(control, app: "quick", jackClient: client, play: play, capture: capture)
                slowestRoundTrip = max(slowestRoundTrip, Date().timeIntervalSince(began))
                try #require(
                    reply?["ok"] == true,
                    "cycle \(cycle): \(reply?.jsonText ?? "no reply")\nrecd's log:\n\(daemon.log.suffix(3000))")
            }
            for client in [player, recorder] {
                let detached = request(control, "session.detach", [("app", "quick"), ("client", .string(client))])
                try #require(detached?["ok"] == true, "cycle \(cycle): \(detached?.jsonText ?? "no reply")")
            }
        }
        // Undone while under way: detached before the attach's answer (both sent at once), and
        // attached by a connection that closes at once. Neither stays; recd's ports for them go.
        let both =
            JSONValue.object([
                ("v", 2), ("id", 7), ("op", "session.attach"), ("app", "quick"), ("client", .string(player)),
                ("playPorts", JSONValue(["\(player):out_1"])),
            ]).jsonText + "\n"
            + JSONValue.object([
                ("v", 2), ("id", 8), ("op", "session.detach"), ("app", "quick"), ("client", .string(player)),
            ]).jsonText + "\n"
        control.send(both)
        var answers: [JSONValue] = []
        for _ in 0..<2 { if let answer = control.readJSON() { answers.append(answer) } }
        let attachAnswer = answers.first { $0["id"] == 7 }
        #expect(answers.first { $0["id"] == 8 }?["ok"] == true, "\(answers)")
        #expect(attachAnswer?["ok"] == false, "the attach says it was undone: \(answers)")
        do {
            // Closed when it goes out of scope, without reading the answer.
            let leaving = try RawClient(path: daemon.socket)
            leaving.send(
                JSONValue.object([
                    ("v", 2), ("id", 9), ("op", "session.attach"), ("app", "quick"), ("client", .string(recorder)),
                    ("capturePorts", JSONValue(["\(recorder):in_1"])),
                ]).jsonText + "\n")
        }
        let gone = try eventually {
            let ports = try runTool("jack_lsp", []).stdout
            return !ports.contains("\(player)-") && !ports.contains("\(recorder)-")
        }
        let listed = try runTool("jack_lsp", []).stdout
        #expect(gone, "recd's ports for undone attaches are unregistered: \(listed)")
        let status = try daemon.recctl("status", "--json").stdout
        #expect(!status.contains("\"client\":\"\(player)\"") && !status.contains("\"client\":\"\(recorder)\""), "\(status)")
        // The ticks that followed (reconciling the connections is off the control thread).
        usleep(300_000)
        let busy = daemon.controlThreadBusyLines
        #expect(
            !busy.contains {
                $0.contains("session.attach") || $0.contains("session.detach") || $0.contains("JACK's news")
            },
            "\(busy.joined(separator: "\n"))")
        print("attach: slowest round trip \(Int(slowestRoundTrip * 1000)) ms; busy lines: \(busy.count)")
        // recctl status says what is attached, in words.
        let again = attach(control, app: "quick", jackClient: player, play: ["\(player):out_1", "\(player):out_2"])
        #expect(again?["ok"] == true, "attached again after an attach undone: \(again?.jsonText ?? "no reply")")
        let text = try daemon.recctl("status").stdout
        #expect(text.contains("attached:\n  quick: JACK client \(player) plays \(player):out_1, \(player):out_2"), "\(text)")
    }

    @Test("recctl session attach holds a real third-party program's attachment (jack_metro) until it exits, then exits 0; status shows it meanwhile")
    func recctlHoldsAttachment() throws {
        let program = uniqueName("metro")
        let daemon = try Daemon()
        // jack_metro knows nothing of recd: one output port, CLIENT:120_bpm.
        let metro = try ExternalTools.process("jack_metro", ["--bpm", "120", "--name", program])
        metro.standardOutput = FileHandle.nullDevice
        metro.standardError = FileHandle.nullDevice
        try metro.run()
        defer { if metro.isRunning { kill(metro.processIdentifier, SIGKILL); metro.waitUntilExit() } }
        #expect(try eventually { try runTool("jack_lsp", []).stdout.contains("\(program):120_bpm") })
        #expect(try daemon.recctl("session", "set", "held", "--category", "playback").status == 0)
        let holder = try Watcher(
            recctl: daemon.recctlPath,
            arguments: ["--socket", daemon.socket, "session", "attach", "held", program, "--play", "\(program):120_bpm"])
        #expect(
            try eventually {
                holder.texts.contains { $0.hasPrefix("attached: held: JACK client \(program) plays \(program):120_bpm") }
            }, "\(holder.texts)")
        #expect(try daemon.recctl("--json", "status").json?["attachments"]?.arrayValue?.count == 1)
        #expect(holder.process.isRunning, "recctl did not hold the attachment")
        // The program is killed: recd ends the attachment (clientGone) and recctl exits with status 0.
        kill(metro.processIdentifier, SIGKILL)
        metro.waitUntilExit()
        #expect(try eventually(timeout: 10) { !holder.process.isRunning }, "recctl still holds a gone client")
        holder.process.waitUntilExit()
        #expect(holder.process.terminationStatus == 0, "\(holder.texts)")
        #expect(try daemon.recctl("--json", "status").json?["attachments"]?.arrayValue?.isEmpty == true)
    }
}

// Changes while active, end to end: `session set` on an active session is arbitrated like an
// activation, and streams the new category cannot carry stop with an event. Then a seeded,
// replayable random walk over set / activate / deactivate / play / record / stop / plug /
// unplug on the real recd (real jackd, real players and recorders, jack sense injected),
// checking the invariants after every step from `status`.
import ControlProtocol
import Foundation
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Ports on the dummy server's system ports: a built-in mic and speaker, headphones and a
/// headset (duplex) behind scripted jack sense.
private let changePorts = """
    [port mic]
    type = builtInMic
    direction = input
    jack = system:capture_1

    [port speaker]
    type = builtInSpeaker
    direction = output
    jack = system:playback_1

    [port phones]
    type = headphones
    direction = output
    jack = system:playback_2
    sense = Headphone Jack

    [port headset]
    type = headsetMic
    direction = duplex
    jack_in = system:capture_2
    jack_out = system:playback_2
    sense = Headset Jack

    """

/// A call-priority session, a background one and a headless logger that resumes by itself
/// (auto_resume), as a box would declare them.
private let declaredSessions = """

    [session call]
    category = playAndRecord
    mode = voiceChat
    priority = call
    mic_usage = calls
    permission = granted

    [session bg]
    category = playback
    options = mixWithOthers
    background = yes

    [session rec]
    category = record
    mic_usage = logs the room
    permission = granted
    auto_resume = yes

    """

/// One connection speaking protocol version 2, request by request.
final class ProtocolSession {
    let client: RawClient
    private var nextID = 0

    init(socket: String) throws { client = try RawClient(path: socket) }

    /// Sends one request (with `descriptor` riding along, for `play`) and returns its reply.
    func request(_ op: String, _ fields: [(String, JSONValue)] = [], passing descriptor: Int32? = nil) throws
        -> JSONValue
    {
        nextID += 1
        let line = JSONValue.object([("id", .number(Double(nextID))), ("v", 2), ("op", .string(op))] + fields).jsonText
        if let descriptor {
            try DescriptorPassing.sendLine(line, passing: [descriptor], over: client.fd)
        } else {
            client.send(line + "\n")
        }
        while true {
            guard let reply = client.readJSON() else {
                throw DaemonFailure(message: "no reply to \(line) (recd gone?)")
            }
            if reply["id"]?.intValue == nextID { return reply }
        }
    }

    /// `play` of `path`, opened here and passed as recctl does.
    func play(_ app: String, _ path: String) throws -> JSONValue {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DaemonFailure(message: "cannot open \(path)") }
        defer { close(fd) }
        return try request("play", [("app", .string(app)), ("file", .string(path))], passing: fd)
    }

    func injectSense(_ control: String, plugged: Bool) throws -> JSONValue {
        try request(
            "devices.inject",
            [
                (
                    "events",
                    [["type": "jackSense", "card": "PCH", "control": .string(control), "plugged": .bool(plugged)]]
                )
            ])
    }
}

extension JSONValue {
    var isOK: Bool { self["ok"] == .bool(true) }
    var errorName: String? { self["ok"] == .bool(false) ? self["error"]?["name"]?.stringValue : nil }
    var strings: [String] { arrayValue?.compactMap(\.stringValue) ?? [] }
    func string(_ key: String) -> String? { self[key]?.stringValue }
    /// Whether every key has that string value.
    func has(_ fields: [String: String]) -> Bool { fields.allSatisfy { string($0.key) == $0.value } }
}

@Suite("changes while active, end to end", .serialized)
struct ActiveChangeEndToEndTests {
    /// A long quiet WAV to play (stereo 48 kHz, `seconds` long).
    static func writeLongWAV(_ path: String, seconds: Int) throws {
        try writeWAV(
            path: path, sampleRate: 48_000, channels: 2, samples: [Int16](repeating: 64, count: 48_000 * 2 * seconds))
    }

    @Test(
        "ambient → playback while active interrupts the other player; beside a call it is refused and changes nothing")
    func arbitration() throws {
        let daemon = try Daemon(
            extraConfig: declaredSessions, ports: changePorts, environment: ["RECD_DEVICE_EVENTS": "scripted"])
        let wire = try ProtocolSession(socket: daemon.socket)
        let wav = daemon.directory + "/long.wav"
        try Self.writeLongWAV(wav, seconds: 20)
        try #require(wire.request("session.set", [("app", "music"), ("category", "playback")]).isOK)
        try #require(wire.request("session.set", [("app", "game"), ("category", "ambient")]).isOK)
        try #require(wire.play("music", wav).isOK)
        try #require(wire.play("game", wav).isOK)
        let watcher = try daemon.watch()
        let changed = try wire.request("session.set", [("app", "game"), ("category", "playback")])
        #expect(changed.isOK, Comment(rawValue: changed.jsonText))
        let began: [String: String] = ["event": "interruption", "app": "music", "type": "began"]
        watcher.waitFor { $0.has(began) }
        #expect(watcher.events.contains { $0.has(began) })
        let status = try wire.request("status")
        let sessions = status["sessions"]?.arrayValue ?? []
        #expect(sessions.first { $0.string("app") == "music" }?.string("state") == "interrupted")
        #expect(sessions.first { $0.string("app") == "game" }?.string("state") == "active")
        #expect(status["players"]?.arrayValue?.first { $0.string("app") == "music" }?.string("state") == "paused")

        // Beside the active call (priority call), ambient → playback is refused whole.
        try #require(wire.request("session.deactivate", [("app", "game"), ("force", true)]).isOK)
        try #require(wire.request("session.set", [("app", "game"), ("category", "ambient")]).isOK)
        try #require(wire.request("session.activate", [("app", "game")]).isOK)
        try #require(wire.request("session.activate", [("app", "call")]).isOK)
        let before = try wire.request("session.show", [("app", "game")])["session"]
        let refused = try wire.request("session.set", [("app", "game"), ("category", "playback"), ("micUsage", "new")])
        #expect(refused.errorName == "insufficientPriority", Comment(rawValue: refused.jsonText))
        #expect(refused["error"]?["message"]?.stringValue?.contains("call") == true)
        #expect(
            try wire.request("session.show", [("app", "game")])["session"] == before, "a refused set changes nothing")
        let active = try wire.request("status")["active"]?.strings ?? []
        #expect(Set(active) == ["call", "game"])

        // A background session may not become non-mixable while the call is active.
        try #require(wire.request("session.activate", [("app", "bg")]).isOK)
        let background = try wire.request("session.set", [("app", "bg"), ("category", "playback")])
        #expect(background.errorName == "insufficientPriority" || background.errorName == "cannotInterruptOthers")
    }

    @Test(
        "a playing session switched to record stops its player; a recording one switched to playback ends its segment with categoryChange"
    )
    func streamsTheCategoryCannotCarryStop() throws {
        let daemon = try Daemon(
            extraConfig: declaredSessions, ports: changePorts, environment: ["RECD_DEVICE_EVENTS": "scripted"])
        let wire = try ProtocolSession(socket: daemon.socket)
        let wav = daemon.directory + "/long.wav"
        try Self.writeLongWAV(wav, seconds: 20)
        let watcher = try daemon.watch()
        try #require(
            wire.request(
                "session.set", [("app", "deck"), ("category", "playAndRecord"), ("micUsage", "logs the room")]
            ).isOK)
        try #require(wire.request("permission.grant", [("app", "deck")]).isOK)
        try #require(wire.play("deck", wav).isOK)
        try #require(wire.request("record.start", [("app", "deck")]).isOK)
        let segmentOpened: [String: String] = ["event": "recording", "app": "deck", "state": "segment"]
        try #require(watcher.waitFor { $0.has(segmentOpened) }.contains { $0.has(segmentOpened) })

        try #require(wire.request("session.set", [("app", "deck"), ("category", "record")]).isOK)
        let playerStopped: [String: String] = ["event": "player", "state": "stopped", "reason": "categoryChange"]
        watcher.waitFor { $0.has(playerStopped) }
        #expect(watcher.events.contains { $0.has(playerStopped) })
        var status = try wire.request("status")
        #expect(status["players"]?.arrayValue?.isEmpty == true)
        #expect(status["recorders"]?.arrayValue?.count == 1, "record carries the recorder on")
        let refused = try wire.play("deck", wav)
        #expect(refused.errorName == "incompatibleCategory")

        try #require(wire.request("session.set", [("app", "deck"), ("category", "playback")]).isOK)
        let recorderStopped: [String: String] = ["event": "recording", "state": "stopped", "reason": "categoryChange"]
        watcher.waitFor { $0.has(recorderStopped) }
        #expect(watcher.events.contains { $0.has(recorderStopped) })
        status = try wire.request("status")
        #expect(status["recorders"]?.arrayValue?.isEmpty == true)
        var listing = JSONValue.null
        let indexed = try eventually {
            listing = try wire.request("archive.list", [("app", "deck")])
            return listing["segments"]?.arrayValue?.contains { $0.string("endReason") == "categoryChange" } == true
        }
        #expect(indexed, Comment(rawValue: "the segment's END_REASON is categoryChange: \(listing.jsonText)"))
        #expect(try wire.request("session.show", [("app", "deck")])["session"]?.string("state") == "active")
    }

    // MARK: - The random walk

    static let apps = ["amb", "music", "rec", "talk", "call", "bg"]
    static let categories = ["ambient", "soloAmbient", "playback", "record", "playAndRecord", "multiRoute"]
    static let modes = [
        "measurement", "spokenAudio", "voiceChat", "videoChat", "voicePrompt", "moviePlayback", "dualRoute",
    ]
    static let options = [
        "mixWithOthers", "duckOthers", "interruptSpokenAudioAndMixWithOthers", "allowBluetoothHFP", "defaultToSpeaker",
        "overrideMutedMicrophoneInterruption",
    ]
    static let senses = [("phones", "Headphone Jack"), ("headset", "Headset Jack")]

    final class Walk {
        let daemon: Daemon
        let wire: ProtocolSession
        let wav: String
        var random: SplitMix64
        var plugged: [String: Bool] = ["phones": true, "headset": true]
        var history: [String] = []
        var outcomes: [String: Int] = [:]

        init(daemon: Daemon, wav: String, seed: UInt64) throws {
            self.daemon = daemon
            self.wav = wav
            wire = try ProtocolSession(socket: daemon.socket)
            random = SplitMix64(seed: seed)
        }

        /// One random step; returns what it did and recd's answer.
        func step() throws -> String {
            let app = random.pick(ActiveChangeEndToEndTests.apps)
            let kind = random.below(100)
            let description: String
            let reply: JSONValue
            switch kind {
            case 0..<20:
                var fields: [(String, JSONValue)] = [
                    ("app", .string(app)), ("category", .string(random.pick(ActiveChangeEndToEndTests.categories))),
                ]
                if random.chance(30) { fields.append(("mode", .string(random.pick(ActiveChangeEndToEndTests.modes)))) }
                let options = ActiveChangeEndToEndTests.options.filter { random.chance($0 == "mixWithOthers" ? 25 : 7) }
                if !options.isEmpty { fields.append(("options", JSONValue(options))) }
                if random.chance(10) { fields.append(("micUsage", random.chance(50) ? "talks" : "")) }
                description = "set " + JSONValue.object(fields).jsonText
                reply = try wire.request("session.set", fields)
            case 20..<32:
                description = "activate \(app)"
                reply = try wire.request("session.activate", [("app", .string(app))])
            case 32..<42:
                let notify = random.chance(50)
                let force = random.chance(50)
                description = "deactivate \(app) notify=\(notify) force=\(force)"
                reply = try wire.request(
                    "session.deactivate",
                    [("app", .string(app)), ("notifyOthers", .bool(notify)), ("force", .bool(force))])
            case 42..<58:
                description = "play \(app)"
                reply = try wire.play(app, wav)
            case 58..<72:
                var fields: [(String, JSONValue)] = [("app", .string(app))]
                if random.chance(25) {
                    let input = random.pick(["mic", "headset"])
                    fields += [("input", .string(input)), ("stream", .string("explicit-\(input)"))]
                }
                description = "record " + JSONValue.object(fields).jsonText
                reply = try wire.request("record.start", fields)
            case 72..<80:
                let players = random.chance(50)
                description = players ? "stop \(app)" : "record stop \(app)"
                reply = try wire.request(players ? "stop" : "record.stop", [("app", .string(app))])
            default:
                let (name, control) = random.pick(ActiveChangeEndToEndTests.senses)
                let plug = !(plugged[name] ?? true)
                description = "\(plug ? "plug" : "unplug") \(name)"
                reply = try wire.injectSense(control, plugged: plug)
                plugged[name] = plug
                // The event reaches the control thread through the scripted source's queue.
                let seen = try eventually(timeout: 2) {
                    let ports = try wire.request("routes")["ports"]?.arrayValue ?? []
                    return ports.first { $0["name"] == .string(name) }?["available"] == .bool(plug)
                }
                if !seen { return description + " → NOT SEEN within 2 s" }
            }
            let outcome = reply.errorName ?? (reply["ok"] == true ? "ok" : "malformed \(reply.jsonText)")
            outcomes[outcome, default: 0] += 1
            return description + " → " + outcome
        }

        /// The invariants of changes while active (one active non-mixable session, streams that
        /// follow the route), read from `status`; nil when they hold.
        func violation(checkFollow: Bool) throws -> String? {
            let status = try wire.request("status")
            let sessions = status["sessions"]?.arrayValue ?? []
            let session = { (app: String) in sessions.first { $0["app"] == .string(app) } }
            let solo = sessions.filter {
                $0["state"] == "active" && !(($0["options"]?.strings ?? []).contains("mixWithOthers"))
            }
            if solo.count > 1 {
                return "two active non-mixable sessions: \(solo.compactMap { $0["app"]?.stringValue })"
            }
            let inputCategories: Set<String> = ["record", "playAndRecord", "multiRoute"]
            for recorder in status["recorders"]?.arrayValue ?? [] {
                let app = recorder["app"]?.stringValue ?? "?"
                guard let owner = session(app) else { return "recorder of unknown session \(app)" }
                let category = owner["category"]?.stringValue ?? "?"
                if !inputCategories.contains(category) {
                    return "\(app) records \(recorder.jsonText) under \(category)"
                }
                if owner["state"] != "active" { return "\(app) records while \(owner["state"]?.stringValue ?? "?")" }
                let explicit = recorder["stream"]?.stringValue?.hasPrefix("explicit-") == true
                let inputs = owner["route"]?["inputs"]?.strings ?? []
                if checkFollow && !explicit, let port = recorder["port"]?.stringValue, !inputs.contains(port) {
                    return "\(app)'s recorder captures \(port), not on its route inputs \(inputs)"
                }
            }
            for player in status["players"]?.arrayValue ?? [] {
                let app = player["app"]?.stringValue ?? "?"
                guard let owner = session(app) else { return "player of unknown session \(app)" }
                if owner["category"] == "record" { return "\(app) has a player \(player.jsonText) under record" }
                guard player["state"] == "playing" else { continue }
                if owner["state"] != "active" { return "\(app) plays while \(owner["state"]?.stringValue ?? "?")" }
                let outputs = owner["route"]?["outputs"]?.strings ?? []
                if checkFollow, let port = player["port"]?.stringValue, !outputs.contains(port) {
                    return "\(app)'s player plays to \(port), not on its route outputs \(outputs)"
                }
            }
            return nil
        }
    }

    /// One seed × 250 steps in scripts/test (its time budget); RECD_LONG_TESTS=1: 2 seeds. RECD_RANDOM_SEED=N replays one seed (RECD_RANDOM_SEEDS=K runs K);
    /// RECD_CHECK_FOLLOW=0 skips only "every running stream is on its session's route".
    @Test("random set/activate/deactivate/play/record/stop/plug/unplug keeps the invariants after every step")
    func randomWalk() throws {
        let checkFollow = ProcessInfo.processInfo.environment["RECD_CHECK_FOLLOW"] != "0"
        let long = ProcessInfo.processInfo.environment["RECD_LONG_TESTS"] == "1"
        let steps = 250
        var total = 0
        var outcomes: [String: Int] = [:]
        var events: [String: Int] = [:]
        let began = Date()
        for seed in randomSeeds(count: long ? 2 : 1, base: 1) {
            let daemon = try Daemon(
                extraConfig: declaredSessions, ports: changePorts, environment: ["RECD_DEVICE_EVENTS": "scripted"])
            let wav = daemon.directory + "/long.wav"
            try Self.writeLongWAV(wav, seconds: 120)
            let walk = try Walk(daemon: daemon, wav: wav, seed: seed)
            let watcher = try daemon.watch()
            for (app, category) in [
                ("amb", "ambient"), ("music", "playback"), ("rec", "record"), ("talk", "playAndRecord"),
            ] {
                try #require(
                    walk.wire.request(
                        "session.set", [("app", .string(app)), ("category", .string(category)), ("micUsage", "test")]
                    ).isOK)
            }
            for app in Self.apps {
                try #require(walk.wire.request("permission.grant", [("app", .string(app))]).isOK)
            }
            for number in 1...steps {
                let line: String
                do {
                    line = try walk.step()
                } catch {
                    line = "step failed: \(error)"
                }
                walk.history.append("\(number): \(line)")
                total += 1
                let crashed = daemon.process?.isRunning != true
                var problem = crashed ? "recd is not running (crash?); its log ends:\n\(daemon.log.suffix(2000))" : nil
                if problem == nil
                    && (line.contains("NOT SEEN") || line.contains("step failed") || line.contains("malformed"))
                {
                    problem = line
                }
                if problem == nil { problem = try walk.violation(checkFollow: checkFollow) }
                if let problem {
                    Issue.record(
                        """
                        seed \(seed) step \(number): \(problem)
                        replay with RECD_RANDOM_SEED=\(seed); the steps so far (last 30):
                        \(walk.history.suffix(30).joined(separator: "\n"))
                        """)
                    break
                }
            }
            outcomes.merge(walk.outcomes, uniquingKeysWith: +)
            // What the walk made recd do, so a run shows it reached the interesting places.
            for event in watcher.events {
                let name = [event.string("event"), event.string("type") ?? event.string("state"), event.string("reason")]
                    .compactMap { $0 }.joined(separator: "/")
                events[name, default: 0] += 1
            }
        }
        print(
            "randomized sessions end to end: \(total) steps in \(Int(Date().timeIntervalSince(began))) s; "
                + "replies \(outcomes.sorted { $0.key < $1.key }); events \(events.sorted { $0.key < $1.key })")
        #expect(total >= steps)
    }
}

// PlayerService alone: the real engine controller on the test's jackd, real WAV files passed
// as open descriptors, the test thread as the control thread; only the event sink is a
// stand-in. Levels are read back from the engine's own output meters.
import AudioEngine
import AudioTestSupport
import Codec
import ControlProtocol
import Foundation
import Glibc
import SessionPolicy
import SystemSupport
import Testing

@testable import Daemon

@Suite("player service against jackd", .serialized)
final class PlayerServiceTests {
    let directory: TemporaryDirectory
    let mailbox = Mailbox()
    let events = EventCollector()
    let device: StandInDevice
    let engine: EngineController
    let players: PlayerService

    init() throws {
        directory = try TemporaryDirectory()
        device = try StandInDevice()
        let config = try testConfig(
            ports: systemPorts + port("phones", "headphones", "output", jack: device.sinkPorts),
            directory: directory.path)
        engine = try startedEngine(config, mailbox: mailbox)
        players = try PlayerService(engine: engine.audio, ports: engine, sink: events, deliver: mailbox.deliver)
    }

    deinit {
        players.shutdown()
        engine.stop()
    }

    /// A DC file of `seconds` (0.5 full scale) in the test directory.
    func dcFile(_ name: String = "dc.wav", seconds: Double = 10) throws -> String {
        let path = directory.path + "/" + name
        try writeConstantWAV(path: path, seconds: seconds)
        return path
    }

    func probe(_ path: String) -> Result<ProbedFile, SessionError>? {
        let result = Shared<Result<ProbedFile, SessionError>?>(nil)
        do {
            let file = try ReadOnlyFile(adopting: try openReadOnly(path), name: path)
            players.probe(file, for: ClientID(rawValue: 1)) { probed in result.update { $0 = probed } }
        } catch {
            Issue.record("cannot open \(path): \(error)")
            return nil
        }
        #expect(mailbox.run(until: { result.get != nil }), "the probe never came back")
        return result.get
    }

    /// Starts `path` and waits for `started`; returns what it said.
    func play(
        _ path: String, app: String = "radio", stream: String = "main", port: String = "spk", channels: [Int]? = nil,
        followsRoute: Bool = false
    ) throws -> Result<JSONValue, SessionError> {
        let probed = try #require(probe(path)).get()
        let outcome = Shared<Result<JSONValue, SessionError>?>(nil)
        try players.start(
            PlayOrder(
                app: app, stream: stream, file: probed, port: port, channels: channels, followsRoute: followsRoute,
                gainDB: 0)
        ) { result in outcome.update { $0 = result } }
        #expect(outcome.get == nil, "start answered before the pre-roll was waited for off this thread")
        #expect(mailbox.run(until: { outcome.get != nil }), "the player never started")
        return try #require(outcome.get)
    }

    /// The highest peak of `group`'s channels over about 150 ms, after `settle` seconds.
    func peak(_ group: String, settle: Double = 0.1) -> Float {
        usleep(UInt32(settle * 1_000_000))
        _ = engine.audio.meters()
        usleep(150_000)
        return engine.audio.meters().filter { $0.group == group }.map(\.peak).max() ?? -1
    }

    @Test("a passed file is probed off the calling thread, plays once pre-rolled, and its samples reach the output")
    func playsAFile() throws {
        let started = try play(try dcFile())
        let json = try started.get()
        #expect(json["state"] == "playing" && json["port"] == "spk" && json["stream"] == "main")
        #expect(events.named("player", state: "playing").count == 1)
        #expect(players.isPlaying("radio"))
        #expect(abs(peak("spk") - 0.5) < 0.001, "the DC file's level reaches the speaker")
        let played = try #require(players.get("radio", "main")).handle.framesPlayed
        #expect(played > 0)
    }

    @Test("a file that is neither FLAC nor WAV is refused by the probe with cannotStartPlaying; nothing is added")
    func badFile() throws {
        let path = directory.path + "/notes.txt"
        try "not audio at all, just text".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try #require(probe(path))
        guard case .failure(let error) = result else {
            Issue.record("a text file was probed as audio")
            return
        }
        #expect(error.code == .cannotStartPlaying && error.message.contains(path), "\(error)")
        #expect(players.all.isEmpty && events.events.isEmpty)
    }

    @Test("pause holds the player (no frames played), resume plays on, stop removes it; each is announced, and reported as a fact")
    func pauseResumeStop() throws {
        _ = try play(try dcFile()).get()
        let player = try #require(players.get("radio", "main"))
        var reported = events.facts.count
        #expect(reported >= 1 && events.facts.allSatisfy { $0 == .streams }, "the start was not reported: \(events.facts)")
        players.pause(player, cause: .user)
        #expect(events.facts.count > reported, "the pause was not reported")
        reported = events.facts.count
        usleep(100_000)
        let frames = player.handle.framesPlayed
        usleep(200_000)
        #expect(player.handle.framesPlayed == frames, "a paused player still plays")
        #expect(!players.isPlaying("radio"))
        try players.resume(player, routeOutputs: ["spk"])
        #expect(events.facts.count > reported, "the resume was not reported")
        reported = events.facts.count
        #expect(waitUntil(seconds: 10) { player.handle.framesPlayed > frames }, "a resumed player does not play")
        players.stop(player, reason: "stop")
        #expect(events.facts.count > reported, "the stop was not reported")
        #expect(players.get("radio", "main") == nil && !player.handle.isAttached)
        let states = events.named("player").compactMap { $0["state"]?.stringValue }
        #expect(states == ["playing", "paused", "playing", "stopped"])
        #expect(events.named("player", state: "paused").first?["reason"] == "user")
    }

    @Test("a new file on a stream replaces the old player; a player stopped before its pre-roll ends is not started")
    func replacedAndStoppedEarly() throws {
        _ = try play(try dcFile())
        let first = try #require(players.get("radio", "main"))
        _ = try play(try dcFile("second.wav"))
        #expect(players.get("radio", "main") !== first && !first.handle.isAttached)
        #expect(events.named("player", state: "stopped").first?["reason"] == "replaced")

        let probed = try #require(probe(try dcFile("third.wav"))).get()
        let outcome = Shared<Result<JSONValue, SessionError>?>(nil)
        try players.start(PlayOrder(app: "radio", stream: "late", file: probed, port: "spk", channels: nil, gainDB: 0))
        {
            result in outcome.update { $0 = result }
        }
        players.stop(try #require(players.get("radio", "late")), reason: "stop")
        #expect(mailbox.run(until: { outcome.get != nil }))
        guard case .failure(let error) = outcome.get else {
            Issue.record("a stopped player was reported started")
            return
        }
        #expect(
            error.code == .cannotStartPlaying && error.message.contains("stopped before it started (stop)"), "\(error)")
    }

    @Test("a file that has played out is reaped as finished, and its app is reported")
    func reapsFinished() throws {
        _ = try play(try dcFile("short.wav", seconds: 0.2)).get()
        var reaped: Set<String> = []
        #expect(
            waitUntil(seconds: 10) {
                reaped.formUnion(players.reap()); return !reaped.isEmpty
            })
        #expect(reaped == ["radio"] && players.all.isEmpty)
        #expect(events.named("player", state: "stopped").first?["reason"] == "finished")
        // Nothing polls the players for the policy: the end itself is reported.
        #expect(events.facts.count >= 2 && events.facts.last == .streams)
    }

    @Test("an unplugged output pauses only the players assigned to it (oldDeviceUnavailable), asked of the engine")
    func pausesDisconnected() throws {
        _ = try play(try dcFile(), stream: "speaker", port: "spk").get()
        _ = try play(try dcFile("phones.wav"), stream: "phones", port: "phones").get()
        device.unplug()
        #expect(waitForAvailability(engine, port: "phones", false))
        players.pauseDisconnected(of: "radio")
        #expect(players.get("radio", "phones")?.pausedBy == .routeDisconnected)
        #expect(players.get("radio", "speaker")?.pausedBy == nil, "a player on an output still there paused")
        let paused = try #require(events.named("player", state: "paused").first)
        #expect(paused["stream"] == "phones" && paused["reason"] == "oldDeviceUnavailable")
    }

    @Test("a player that follows the route moves to the new output once the reconciler has connected it (announced with previousPort); one given a port stays; resume moves to the route output, or says there is none")
    func followsTheRoute() throws {
        _ = try play(try dcFile(), stream: "follower", port: "spk", followsRoute: true).get()
        _ = try play(try dcFile("fixed.wav"), stream: "fixed", port: "spk").get()
        #expect(abs(peak("spk") - 1) < 0.001, "both play on the speaker")
        players.follow(of: "radio", outputs: ["phones"], reason: .newDeviceAvailable)
        let follower = try #require(players.get("radio", "follower"))
        #expect(follower.port == "phones", "the stream names its new output at once")
        // The move is published when the connection reconciler answers (the engine's wake, then a drain).
        #expect(waitUntil(seconds: 10) { _ = engine.drain(); return follower.handle.outputGroup == "phones" })
        #expect(players.get("radio", "fixed")?.port == "spk")
        #expect(abs(peak("phones") - 0.5) < 0.001 && abs(peak("spk") - 0.5) < 0.001, "the follower moved, not the other")
        #expect(follower.info.port == "phones", "status reports where the audio goes")
        let moved = try #require(events.named("player").last)
        #expect(moved["port"] == "phones" && moved["previousPort"] == "spk" && moved["reason"] == "newDeviceAvailable")
        #expect(moved["state"] == "playing")
        // Several outputs (multiRoute): a stream stays while its port is still one of them.
        players.follow(of: "radio", outputs: ["spk", "phones"], reason: .newDeviceAvailable)
        #expect(follower.port == "phones" && events.named("player").count == 3)

        device.unplug()
        #expect(waitForAvailability(engine, port: "phones", false))
        players.pauseDisconnected(of: "radio")
        players.follow(of: "radio", outputs: ["spk"], reason: .oldDeviceUnavailable)
        #expect(follower.pausedBy == .routeDisconnected && follower.port == "phones", "no fall back to the speaker")
        let refused = #expect(throws: SessionError.self) { try players.resume(follower, routeOutputs: []) }
        #expect(refused?.code == .cannotStartPlaying && refused?.message.contains("plug") == true)
        #expect(follower.pausedBy == .routeDisconnected)
        try players.resume(follower, routeOutputs: ["spk"])
        #expect(follower.pausedBy == nil && follower.port == "spk")
        #expect(waitUntil(seconds: 10) { _ = engine.drain(); return follower.handle.outputGroup == "spk" })
        let resumed = try #require(events.named("player", state: "playing").last)
        #expect(resumed["port"] == "spk" && resumed["previousPort"] == "phones")
        #expect(abs(peak("spk") - 1) < 0.001, "resumed on the speaker")
        // No output left in the route: a following player pauses, the fixed one plays on.
        players.follow(of: "radio", outputs: [], reason: .noSuitableRouteForCategory)
        #expect(follower.pausedBy == .routeDisconnected && players.get("radio", "fixed")?.pausedBy == nil)
    }

    @Test("ducking ramps an app's players to the level and back")
    func ducking() throws {
        _ = try play(try dcFile()).get()
        #expect(abs(peak("spk") - 0.5) < 0.001)
        players.setGain(of: "radio", decibels: -14)
        let ducked = peak("spk")
        #expect(abs(20 * log10(Double(ducked / 0.5)) + 14) < 0.1, "ducked to \(ducked)")
        players.setGain(of: "radio", decibels: 0)
        #expect(abs(peak("spk") - 0.5) < 0.001)
    }

    @Test("channels outside the port are refused with resourceNotAvailable before anything is added")
    func channelsOutsideThePort() throws {
        let probed = try #require(probe(try dcFile())).get()
        let refused = #expect(throws: SessionError.self) {
            try players.start(
                PlayOrder(app: "radio", stream: "main", file: probed, port: "spk", channels: [3], gainDB: 0)
            ) { _ in }
        }
        #expect(refused?.code == .resourceNotAvailable)
        #expect(players.all.isEmpty)
        let json = try play(try dcFile("right.wav"), channels: [2]).get()
        #expect(json["channels"]?.intValue == 1, "one file channel, to the second channel of spk")
    }
}

// MonitoringService alone, against the real engine controller on the test's jackd: what it
// publishes is read back from the engine's own bus meters. A real engine player stands in
// for a file player (the test writes its samples into the player's ring itself).
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

@Suite("monitoring service against jackd", .serialized)
final class MonitoringServiceTests {
    let directory: TemporaryDirectory
    let engine: EngineController
    let monitoring: MonitoringService
    /// The player streams the service may ask about: "app/stream" → engine player.
    final class Streams {
        var handles: [String: PlayerHandle] = [:]
    }
    let streams = Streams()

    init() throws {
        directory = try TemporaryDirectory()
        let ports =
            port("deck", "lineIn", "input", jack: capturePorts) + port("pa", "lineOut", "output", jack: playbackPorts)
            + port("phones", "headphones", "output", jack: playbackPorts)
        let config = try testConfig(ports: ports, directory: directory.path)
        engine = try startedEngine(config)
        let streams = streams
        monitoring = MonitoringService(engine: engine.audio, ports: engine) { app, stream in streams.handles[app + "/" + stream]?.id }
    }

    deinit { engine.stop() }

    /// Meters of the buses over about 150 ms: group (main/cue) → highest peak.
    func busPeaks() -> [String: Float] {
        usleep(100_000)
        _ = engine.audio.meters()
        usleep(150_000)
        var peaks: [String: Float] = [:]
        for reading in engine.audio.meters() where reading.direction == .bus {
            peaks[reading.group] = max(peaks[reading.group] ?? 0, reading.peak)
        }
        return peaks
    }

    @Test("the buses' outputs must be the session's own; the owner's set-up reaches the engine, release takes it away")
    func outputsAndRelease() throws {
        let outside = #expect(throws: SessionError.self) {
            try self.monitoring.setOutputs(app: "dj", main: "phones", cue: nil, routeOutputs: ["pa"])
        }
        #expect(outside?.code == .resourceNotAvailable && monitoring.owner == nil)
        #expect(busPeaks().isEmpty, "buses before any set-up")

        try monitoring.setOutputs(app: "dj", main: "pa", cue: "phones", routeOutputs: ["pa", "phones"])
        try monitoring.publish()
        #expect(monitoring.owner == "dj")
        #expect(Set(busPeaks().keys) == ["main", "cue"], "the engine did not get the set-up")
        #expect(monitoring.json["main"] == "pa" && monitoring.json["cue"] == "phones")

        let taken = #expect(throws: SessionError.self) { try self.monitoring.checkOwner("other") }
        #expect(taken?.code == .resourceNotAvailable)
        monitoring.release(app: "other")
        #expect(monitoring.owner == "dj", "another app released the owner's buses")
        monitoring.release(app: "dj")
        #expect(monitoring.owner == nil && monitoring.json["main"]?.isNull == true)
    }

    @Test("a source is an input port or a player stream of the owner; bad names, gains and mixes are badParam")
    func sources() throws {
        try monitoring.assign(app: "dj", source: "deck", bus: "cue", gainDB: -3)
        let ghost = #expect(throws: SessionError.self) {
            try self.monitoring.assign(app: "dj", source: "ghost", bus: "main", gainDB: nil)
        }
        #expect(ghost?.code == .badParam && ghost?.message.contains("deck") == true, "the message lists the inputs")
        #expect(throws: SessionError.self) {
            try self.monitoring.assign(app: "dj", source: "deck", bus: "side", gainDB: nil)
        }
        #expect(throws: SessionError.self) {
            try self.monitoring.assign(app: "dj", source: "deck", bus: "main", gainDB: 30)
        }
        #expect(throws: SessionError.self) { try self.monitoring.setMix(app: "dj", 1.5) }

        let player = try engine.audio.addPlayer(channels: 2, outputGroup: "pa")
        streams.handles["dj/track"] = player
        try monitoring.assign(app: "dj", source: "track", bus: "main", gainDB: nil)
        let kinds = monitoring.json["sources"]?.arrayValue?.map { [$0["name"]?.stringValue, $0["kind"]?.stringValue] }
        #expect(kinds == [["deck", "input"], ["track", "player"]])
        #expect(monitoring.sources["deck"]?.gainDB == -3 && monitoring.sources["deck"]?.bus == .cue)
        engine.audio.removePlayer(player)
    }

    @Test("a player stream assigned to the main bus is heard on it, by its engine handle")
    func playerOnTheBus() throws {
        let player = try engine.audio.addPlayer(channels: 2, outputGroup: "pa")
        defer { engine.audio.removePlayer(player) }
        streams.handles["dj/track"] = player
        _ = player.write([Float](repeating: 0.25, count: player.capacityFrames * 2))
        engine.audio.play(player, rampMilliseconds: 0)
        try monitoring.setOutputs(app: "dj", main: "pa", cue: "phones", routeOutputs: ["pa", "phones"])
        try monitoring.assign(app: "dj", source: "track", bus: "main", gainDB: 0)
        try monitoring.publish()
        let peaks = busPeaks()
        #expect(abs((peaks["main"] ?? 0) - 0.25) < 0.001, "main bus: \(peaks)")
        #expect((peaks["cue"] ?? 1) < 0.001, "the cue bus hears what only main was given: \(peaks)")
        try monitoring.setMix(app: "dj", 0.5)
        monitoring.setSplit(app: "dj", true)
        #expect(monitoring.json["mix"]?.doubleValue == 0.5 && monitoring.json["split"] == true)

        // Released, the engine gets an empty set-up: the player is no longer on the bus.
        _ = player.write([Float](repeating: 0.25, count: player.availableToWrite * 2))
        monitoring.release(app: "dj")
        #expect((busPeaks()["main"] ?? 0) < 0.001, "the buses kept the released owner's sources")
    }
}

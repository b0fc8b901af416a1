// Which JACK implementation and server recd reaches, on jackd2 and on PipeWire's JACK
// (scripts/test runs this target on both; docs/jack-servers.md).

import Glibc
import TestSupport
import Testing

@testable import AudioEngine

@Suite("JACK implementations: server names (no server)")
struct JackServerNameTests {
    static let jackd = JackImplementation(version: "1.9.21")
    static let pipewire = JackImplementation(version: "3.0.0.0 (using PipeWire 0.3.65)")

    @Test("libjack's version text tells jackd2 from PipeWire's JACK")
    func kinds() {
        #expect(Self.jackd.kind == .jackd)
        #expect(Self.pipewire.kind == .pipewire)
    }

    @Test(
        "the server a client reaches, as each implementation reads [jack] server and the environment",
        arguments: [
            // (implementation, configured, environment, reached)
            ("jackd", nil, [:], "default"),
            ("jackd", nil, ["JACK_DEFAULT_SERVER": "studio"], "studio"),
            ("jackd", "booth", ["JACK_DEFAULT_SERVER": "studio"], "booth"),
            ("pipewire", nil, ["JACK_DEFAULT_SERVER": "studio"], "pipewire-0"),
            ("pipewire", "default", [:], "pipewire-0"),
            ("pipewire", "booth", [:], "booth"),
            ("pipewire", "booth", ["PIPEWIRE_REMOTE": "pipewire-1"], "pipewire-1"),
        ] as [(String, String?, [String: String], String)])
    func serverNames(
        _ implementation: String, _ configured: String?, _ environment: [String: String], _ reached: String
    ) {
        let jack = implementation == "pipewire" ? Self.pipewire : Self.jackd
        #expect(jack.serverName(configured: configured) { environment[$0] } == reached)
    }
}

extension EngineIntegrationTests {
    @Test("(p) the loaded libjack is the server this pass was started for (RECD_TEST_SERVER)")
    func loadedImplementationIsTheTestServer() {
        #expect(
            JackImplementation.loaded.kind.rawValue == TestServer.kind.rawValue,
            "libjack \(JackImplementation.loaded.version); the test run says \(TestServer.kind)")
    }

    @Test(
        "(r) a tap's first frame is placed on the wall clock by JACK's clock, not the fallback, near now",
        .timeLimit(.minutes(1)))
    func firstFrameOnTheWallClock() throws {
        let engine = AudioEngine()
        try engine.start(
            clientName: unique("recdtest-clock"),
            inputs: [PortGroupSpec(name: "mic", channels: 1, connectTo: ["system:capture_1"])], outputs: [])
        defer { engine.stop() }
        // PipeWire's frame time is the frame counter of the driver of the client's graph: the
        // client starts on the Dummy-Driver and moves to the capture node's driver once the link
        // is up, and its frame times jump then (measured: 91 s). Let the graph settle first.
        usleep(300_000)
        let tap = try engine.addCaptureTap(inputGroup: "mic")
        #expect(waitUntil(seconds: 5) { tap.firstFrameTime != nil })
        // Asked a little later, as the recorder does: the frame lies in an earlier cycle.
        usleep(100_000)
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let before = Int64(wall.tv_sec) * 1_000_000_000 + Int64(wall.tv_nsec)
        let first = try #require(tap.firstFrameTime)
        let placed = try #require(engine.utcNanoseconds(forFrameTime: first))
        #expect(placed.fromJackClock, "the wall-clock fallback stood in for \(TestServer.kind)'s clock")
        let age = Double(before - placed.nanoseconds) / 1e9
        #expect(age > 0.05 && age < 2, "the first frame was \(age) s before now")
    }

    @Test(
        "(q) a client name already taken: JACK picks another, and the engine reports it and names its ports by it",
        .timeLimit(.minutes(1)))
    func duplicateClientName() throws {
        let name = unique("recdtest-dup")
        let first = AudioEngine()
        try first.start(clientName: name, inputs: [PortGroupSpec(name: "mic", channels: 1)], outputs: [])
        defer { first.stop() }
        let second = AudioEngine()
        try second.start(clientName: name, inputs: [PortGroupSpec(name: "mic", channels: 1)], outputs: [])
        defer { second.stop() }
        #expect(first.clientName == name)
        // jackd2 appends "-01"; PipeWire's JACK "-<node id>".
        let given = try #require(second.clientName)
        #expect(given != name && given.hasPrefix(name + "-"), "the second client is \(given)")
        #expect(second.jackPortNames(ofGroup: "mic") == ["\(given):mic_1"])
        #expect(first.jackPortNames(ofGroup: "mic") == ["\(name):mic_1"])
    }
}

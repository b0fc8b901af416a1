// What the coordinator and service tests share (beyond AudioTestSupport's directories, files and
// waiting): a config on the test's JACK server (the one JACK_DEFAULT_SERVER names, a
// `jackd -d dummy`), the real engine controller, a JACK device that can be unplugged, and the
// two stand-ins
// the tests allow themselves: an event sink that collects events, and a client link that
// collects what recd sends to clients (replies and events) and runs what it posts on
// the test thread, as the control loop would.
import AudioEngine
import AudioTestSupport
import ControlProtocol
import Foundation
import Glibc
import Platform
import SessionPolicy
import Synchronization

@testable import Daemon
@testable import SystemSupport

/// A JACK client name no other test uses.
func uniqueClientName(_ prefix: String) -> String {
    "\(prefix)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
}

/// A config on the default JACK server with `ports` (INI `[port ...]` sections) and `extra`
/// sections, its state and archive under `directory`.
func testConfig(ports: String, directory: String, extra: String = "") throws -> RecdConfig {
    let text = """
        [daemon]
        socket = \(directory)/control.sock
        state_dir = \(directory)/state

        [jack]
        client_name = \(uniqueClientName("recd-dt"))

        [archive]
        dir = \(directory)/archive
        segment_seconds = 3600

        \(extra)
        \(ports)
        """
    return try ConfigLoader.parse(text: text, source: "test.conf", environment: ProcessInfo.processInfo.environment)
}

/// A `[port NAME]` section of a config; `extra` lines (`sense = ...`) follow the JACK ports.
func port(_ name: String, _ type: String, _ direction: String, jack: [String], extra: String = "") -> String {
    "[port \(name)]\ntype = \(type)\ndirection = \(direction)\njack = \(jack.joined(separator: ", "))\n\(extra)\n"
}

/// The dummy server's own ports.
let playbackPorts = ["system:playback_1", "system:playback_2"]
let capturePorts = ["system:capture_1", "system:capture_2"]

/// An output `spk` and an input `mic` on the dummy server's own ports.
let systemPorts =
    port("spk", "builtInSpeaker", "output", jack: playbackPorts)
    + port("mic", "builtInMic", "input", jack: capturePorts)

/// A constant (DC) 16-bit WAV: every sample `value` (0.5 full scale by default): its level
/// is the gain.
func writeConstantWAV(path: String, seconds: Double, channels: Int = 2, value: Int32 = 16384) throws {
    try writeWAV(
        path, sampleRate: 48_000, channels: channels, bits: 16,
        samples: [Int32](repeating: value, count: Int(48_000 * seconds) * channels))
}

/// The engine controller of `config`, started against the test's JACK server.
func startedEngine(_ config: RecdConfig, mailbox: Mailbox? = nil) throws -> EngineController {
    let engine = EngineController(config: config) { mailbox?.deliver({}) }
    guard engine.start() else {
        throw TestFailure("no JACK server: \(engine.lastError ?? "?"); start `jackd -d dummy`")
    }
    return engine
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A JACK client standing in for a device recd's ports connect to: `sink` input ports (a pair
/// of headphones) and `source` output ports (a microphone). `unplug` closes it: its ports go
/// away, as when a USB device is pulled.
final class StandInDevice {
    let name = uniqueClientName("device")
    private let engine = AudioEngine()

    init() throws {
        try engine.start(
            clientName: name, inputs: [PortGroupSpec(name: "sink", channels: 2, connectTo: [])],
            outputs: [PortGroupSpec(name: "source", channels: 2, connectTo: [])])
    }

    /// The JACK ports recd plays into (this client's inputs).
    var sinkPorts: [String] { engine.jackPortNames(ofGroup: "sink") }
    /// The JACK ports recd records from (this client's outputs).
    var sourcePorts: [String] { engine.jackPortNames(ofGroup: "source") }

    func unplug() { engine.stop() }

    deinit { engine.stop() }
}

/// Drains the controller's notifications until `port`'s availability is `available`.
func waitForAvailability(_ engine: EngineController, port: String, _ available: Bool) -> Bool {
    waitUntil(seconds: 10) {
        _ = engine.drain()
        return engine.isAvailable(port: port) == available
    }
}

/// The one allowed stand-in for services: collects the events a service sends to clients.
final class EventCollector: EventSink, FactSink {
    private(set) var events: [JSONValue] = []
    /// The facts the service reported (the coordinator's input).
    private(set) var facts: [ServiceFact] = []

    func broadcast(_ event: Event) { events.append(event.json) }
    func report(_ fact: ServiceFact) { facts.append(fact) }

    /// Events named `name` (`player`, `recording`, ...) with `state`, if given.
    func named(_ name: String, state: String? = nil) -> [JSONValue] {
        events.filter { $0["event"]?.stringValue == name && (state == nil || $0["state"]?.stringValue == state) }
    }
}

/// Stands in for the control server: collects what recd sends to each client (replies
/// and events, the front end's events seen from the clients' side) and queues what it
/// posts, for the test thread to run as the control thread.
final class TestLink: ClientLink, @unchecked Sendable {
    let mailbox = Mailbox()
    private let sent = Mutex<[(ClientID, String)]>([])

    func send(_ line: String, to client: ClientID) { sent.withLock { $0.append((client, line)) } }
    func post(_ work: @escaping @Sendable () -> Void) { mailbox.deliver(work) }
    func stop() {}
    func close(_ client: ClientID, afterFlush: Bool) { closed.withLock { $0.append(client) } }
    /// The clients the front end closed, in order.
    let closed = Mutex<[ClientID]>([])

    /// Every line sent to `client`, parsed.
    func lines(to client: ClientID) -> [JSONValue] {
        sent.withLock { $0.filter { $0.0 == client }.compactMap { try? JSONValue.parse($0.1) } }
    }

    /// The reply to request `id` from `client`, if sent.
    func reply(to client: ClientID, id: JSONValue) -> JSONValue? {
        lines(to: client).first { $0["id"] == id && $0["ok"] != nil }
    }

    func events(to client: ClientID) -> [JSONValue] { lines(to: client).filter { $0["event"] != nil } }
}

/// recd as composed by `Recd.compose` (front end, coordinator, services) on the test's JACK server, with clients of chosen identities.
final class RouterRig {
    let directory: TemporaryDirectory
    let link = TestLink()
    let config: RecdConfig
    let frontEnd: ControlFrontEnd
    var coordinator: SessionCoordinator { frontEnd.coordinator }
    private var nextClient: UInt64 = 0

    init(ports: String = systemPorts, extra: String = "") throws {
        directory = try TemporaryDirectory()
        config = try testConfig(ports: ports, directory: directory.path, extra: extra)
        try FileSystem.makeDirectories(config.daemon.stateDir, mode: 0o750)
        frontEnd = try Recd.compose(
            config: config, store: SessionDeclarations.makeStore(config: config, persisted: PersistedState()),
            stateFile: StateFile(stateDir: config.daemon.stateDir), startedAt: SystemClock.monotonicSeconds(),
            link: link)
        coordinator.openArchive()
        coordinator.startEngine()
    }

    deinit { coordinator.shutdown() }

    /// A new connection from `uid` (groups: its own gid only).
    func connect(uid: UInt32) -> ClientID {
        nextClient += 1
        let client = ClientID(rawValue: nextClient)
        frontEnd.clientConnected(client, peer: PeerCredentials(pid: 1, uid: uid, gid: uid, groups: [uid]))
        return client
    }

    /// Sends one request line (with `descriptors`, as SCM_RIGHTS would) and returns its reply
    /// if it came at once.
    @discardableResult
    func send(_ client: ClientID, _ line: String, descriptors: [Int32] = []) -> JSONValue? {
        var passed = PassedDescriptors(descriptors)
        frontEnd.clientSentLine(client, line: line, descriptors: &passed)
        return link.reply(to: client, id: Self.id(of: line))
    }

    /// Runs the control loop's share (posted work, ticks) until `condition`, or `seconds`.
    func pump(seconds: Double = 10, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var nextTick = Date()
        while !condition() {
            if Date() > deadline { return false }
            if link.mailbox.run() == 0 { usleep(1_000) }
            if Date() >= nextTick {
                frontEnd.tick(now: SystemClock.monotonicSeconds())
                nextTick = Date().addingTimeInterval(0.05)
            }
        }
        return true
    }

    /// Sends a request and pumps until its reply (one that comes later included).
    func request(_ client: ClientID, _ line: String, descriptors: [Int32] = []) -> JSONValue? {
        send(client, line, descriptors: descriptors)
        let id = Self.id(of: line)
        _ = pump { link.reply(to: client, id: id) != nil }
        return link.reply(to: client, id: id)
    }

    static func id(of line: String) -> JSONValue { (try? JSONValue.parse(line))?["id"] ?? .null }
}

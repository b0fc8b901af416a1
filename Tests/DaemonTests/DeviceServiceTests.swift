// DeviceService alone: the config's real bindings, the real engine controller on the test's
// jackd (jack sense gates availability there, the one place it lives), and the real scripted
// event source behind `devices.inject` (no sound card on these machines).
import AudioTestSupport
import Codec
import ControlProtocol
import Devices
import Foundation
import Glibc
import SessionPolicy
import SystemSupport
import Testing

@testable import Daemon

@Suite("device service against jackd", .serialized)
final class DeviceServiceTests {
    let directory: TemporaryDirectory
    let mailbox = Mailbox()
    let engine: EngineController
    let devices: DeviceService

    init() throws {
        directory = try TemporaryDirectory()
        let ports =
            port("mic", "builtInMic", "input", jack: capturePorts, extra: "mute_switch = Capture Switch")
            + port("phones", "headphones", "output", jack: playbackPorts, extra: "sense = Headphone Jack")
        let config = try testConfig(ports: ports, directory: directory.path)
        engine = try startedEngine(config)
        devices = DeviceService(bindings: try DeviceService.bindings(for: config).get(), engine: engine)
    }

    deinit {
        devices.stop()
        engine.stop()
    }

    func sense(_ plugged: Bool) -> DeviceEvent { .jackSense(card: "PCH", control: "Headphone Jack", plugged: plugged) }

    @Test("jack sense gates the port's availability in the engine controller; a port plugged again is the newest")
    func jackSense() throws {
        #expect(engine.isAvailable(port: "phones"))
        let before = try #require(engine.portState(named: "phones")).connectedOrder
        let unplugged = devices.handle([sense(false)])
        #expect(unplugged == DeviceNews(availabilityChanged: true))
        #expect(
            !engine.isAvailable(port: "phones") && engine.portStates.first { $0.name == "phones" }?.available == false)
        #expect(devices.handle([sense(false)]) == DeviceNews(), "a repeated value is news")
        #expect(devices.handle([sense(true)]).availabilityChanged)
        #expect(engine.isAvailable(port: "phones"))
        #expect(try #require(engine.portState(named: "phones")).connectedOrder > before, "not last in")
        #expect(engine.isAvailable(port: "mic"), "another port followed the sense control")
    }

    @Test("a capture switch becomes a hardware mute for the router to hand to the policy, in order")
    func captureSwitch() {
        let off = devices.handle([.captureSwitch(card: "PCH", control: "Capture Switch", on: false)])
        #expect(off == DeviceNews(hardwareMutes: [.init(port: "mic", muted: true)]))
        #expect(engine.isAvailable(port: "mic"), "a muted input is still available")
        let both = devices.handle([.captureSwitch(card: "PCH", control: "Capture Switch", on: true), sense(false)])
        #expect(both == DeviceNews(availabilityChanged: true, hardwareMutes: [.init(port: "mic", muted: false)]))
    }

    @Test("injection needs the scripted source; injected events come back through it, to the control thread")
    func injection() throws {
        let refused = #expect(throws: SessionError.self) { try self.devices.inject([.cardRemoved(card: "0")]) }
        #expect(refused?.code == .badParam)

        let received = Shared<[DeviceEvent]>([])
        let mailbox = mailbox
        devices.start(environment: ["RECD_DEVICE_EVENTS": "scripted"]) { events in
            mailbox.deliver { received.update { $0 += events } }
        }
        #expect(try devices.inject([.jackSense(card: "PCH", control: "Headphone Jack", plugged: false)]) == 1)
        #expect(mailbox.run(until: { !received.get.isEmpty }), "the injected event never came back")
        #expect(devices.handle(received.get).availabilityChanged && !engine.isAvailable(port: "phones"))
        #expect(devices.cards.isEmpty, "the scripted source lists no cards")
    }
}

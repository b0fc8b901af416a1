// ALSA jack sense and capture switches (SPEC §4): a jack-sense control gates a port's
// availability, a capture switch mutes an input in hardware (builtInMicMuted). Events arrive
// from a DeviceEventSource thread and are posted to the control thread; only it touches this.
import ControlProtocol
import Devices
import SessionPolicy
import SystemSupport

/// The device side of the daemon: bindings from config and the event source.
final class DeviceState {
    var bindings: DeviceBindings
    var source: (any DeviceEventSource)?
    /// A scripted source (RECD_DEVICE_EVENTS=scripted) that `devices.inject` feeds: for tests
    /// and simulation on machines with no sound card.
    var scripted: ScriptedEventSource?
    var cards: [SoundCard] = []

    init(bindings: DeviceBindings) { self.bindings = bindings }

    /// Bindings from the config's `sense` and `mute_switch` keys; errors carry FILE:LINE.
    static func bindings(for config: RecdConfig) -> Result<DeviceBindings, ConfigError> {
        do {
            return .success(try DeviceBindings(config.ports.map {
                DeviceBindings.Declaration(port: $0.name, sense: $0.sense, muteSwitch: $0.muteSwitch)
            }))
        } catch {
            let line = config.ports.first { $0.name == error.port }?.line ?? 0
            return .failure(ConfigError(file: config.source, line: line, message: "[port \(error.port ?? "?")] \(error)"))
        }
    }
}

extension ControlService {
    /// Starts the event source: ALSA, or the scripted one when RECD_DEVICE_EVENTS=scripted.
    func startDevices(environment: [String: String]) {
        let source: any DeviceEventSource
        if environment["RECD_DEVICE_EVENTS"] == "scripted" {
            let scripted = ScriptedEventSource()
            devices.scripted = scripted
            source = scripted
            Log.notice("device events come from `recctl`-injected scripts (RECD_DEVICE_EVENTS=scripted), not ALSA")
        } else {
            devices.cards = SoundCards.list()
            source = ALSAEventSource()
            for card in devices.cards {
                Log.info("sound card \(card.index): \(card.id) (\(card.name))\(card.isUSB ? ", USB" : "")")
            }
        }
        do {
            let service = self
            try source.start { [weak server] events in
                server?.post { service.deviceEvents(events) }
            }
            devices.source = source
        } catch {
            Log.warning("ALSA controls are not watched (\(error)); ports follow JACK alone. Add the recd user to group audio")
        }
    }

    func stopDevices() {
        devices.source?.stop()
        devices.source = nil
    }

    /// Control thread: jack sense → availability (and so routes), capture switch → mute.
    func deviceEvents(_ events: [DeviceEvent]) {
        var availabilityChanged = false
        for signal in devices.bindings.apply(events) {
            switch signal {
            case .plugged(let port, let plugged):
                Log.info("\(port): jack sense says \(plugged ? "plugged" : "unplugged")")
                engine.setSensePlugged(port: port, plugged)
                availabilityChanged = true
            case .senseLost(let port):
                engine.setSensePlugged(port: port, nil)
                availabilityChanged = true
            case .hardwareMuted(let port, let muted):
                Log.info("\(port): capture switch \(muted ? "off (muted in hardware)" : "on")")
                apply(store.setHardwareMuted(port: port, muted))
            }
        }
        if availabilityChanged { apply(store.updatePorts(engine.portStates)) }
    }

    /// `devices.inject`: events for the scripted source (tests, simulation).
    func injectDeviceEvents(_ request: Request) throws -> [(String, JSONValue)] {
        guard let scripted = devices.scripted else {
            throw SessionError(.badParam, "device events can be injected only when recd runs with RECD_DEVICE_EVENTS=scripted")
        }
        guard let items = request.body["events"]?.arrayValue else {
            throw SessionError(.badParam, "devices.inject needs \"events\": [{\"type\":\"jackSense\",\"card\":...,\"control\":...,\"plugged\":true}, ...]")
        }
        var events: [DeviceEvent] = []
        for item in items {
            let card = item["card"]?.stringValue ?? "0"
            let control = item["control"]?.stringValue ?? ""
            switch item["type"]?.stringValue {
            case "jackSense":
                events.append(.jackSense(card: card, control: control, plugged: item["plugged"]?.boolValue ?? false))
            case "captureSwitch":
                events.append(.captureSwitch(card: card, control: control, on: item["on"]?.boolValue ?? true))
            case "cardRemoved":
                events.append(.cardRemoved(card: card))
            default:
                throw SessionError(.badParam, "event type \(item["type"]?.jsonText ?? "none") is not jackSense, captureSwitch or cardRemoved")
            }
        }
        _ = scripted.push(events)
        return [("injected", .number(Double(events.count)))]
    }
}

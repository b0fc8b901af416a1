// ALSA jack sense and capture switches (SPEC §4): a jack-sense control gates a port's
// availability (in the engine controller, the one source of it), a capture switch mutes an
// input in hardware (builtInMicMuted, which the router hands to the policy).
//
// Threads: events arrive on the event source's thread, which only posts them to the control
// thread (`start`'s `deliver`); every member here runs on the control thread.
import ControlProtocol
import Devices
import SessionPolicy
import SystemSupport

/// What device events meant, for the router to hand to the policy.
struct DeviceNews: Equatable {
    /// A jack-sense control changed a port's availability: the policy needs new port states.
    var availabilityChanged = false
    /// Capture switches that changed, in order: the port, and whether it is muted in hardware.
    var hardwareMutes: [HardwareMute] = []

    struct HardwareMute: Equatable {
        var port: String
        var muted: Bool
    }
}

/// The device side of the daemon: bindings from config, the event source, the sound cards.
final class DeviceService {
    private var bindings: DeviceBindings
    private let engine: any SenseEngine
    private var source: (any DeviceEventSource)?
    /// A scripted source (RECD_DEVICE_EVENTS=scripted) that `devices.inject` feeds: for tests
    /// and simulation on machines with no sound card.
    private var scripted: ScriptedEventSource?
    private(set) var cards: [SoundCard] = []

    init(bindings: DeviceBindings, engine: any SenseEngine) {
        self.bindings = bindings
        self.engine = engine
    }

    /// Bindings from the config's `sense` and `mute_switch` keys; errors carry FILE:LINE.
    static func bindings(for config: RecdConfig) -> Result<DeviceBindings, ConfigError> {
        do {
            return .success(
                try DeviceBindings(
                    config.ports.map {
                        DeviceBindings.Declaration(port: $0.name, sense: $0.sense, muteSwitch: $0.muteSwitch)
                    }))
        } catch {
            let line = config.ports.first { $0.name == error.port }?.line ?? 0
            return .failure(
                ConfigError(file: config.source, line: line, message: "[port \(error.port ?? "?")] \(error)"))
        }
    }

    /// Starts the event source: ALSA, or the scripted one when RECD_DEVICE_EVENTS=scripted.
    /// `deliver` is called on the source's thread and must bring the events to the control
    /// thread (to `handle`).
    func start(environment: [String: String], deliver: @escaping @Sendable ([DeviceEvent]) -> Void) {
        let source: any DeviceEventSource
        if environment["RECD_DEVICE_EVENTS"] == "scripted" {
            let scripted = ScriptedEventSource()
            self.scripted = scripted
            source = scripted
            Log.notice("device events come from `recctl`-injected scripts (RECD_DEVICE_EVENTS=scripted), not ALSA")
        } else {
            cards = SoundCards.list()
            source = ALSAEventSource()
            for card in cards {
                Log.info("sound card \(card.index): \(card.id) (\(card.name))\(card.isUSB ? ", USB" : "")")
            }
        }
        do {
            try source.start(deliver: deliver)
            self.source = source
        } catch {
            Log.warning(
                "ALSA controls are not watched (\(error)); ports follow JACK alone. Add the recd user to group audio")
        }
    }

    func stop() {
        source?.stop()
        source = nil
    }

    /// Jack sense → the engine's availability; capture switch → a hardware mute for the policy.
    func handle(_ events: [DeviceEvent]) -> DeviceNews {
        var news = DeviceNews()
        for signal in bindings.apply(events) {
            switch signal {
            case .plugged(let port, let plugged):
                Log.info("\(port): jack sense says \(plugged ? "plugged" : "unplugged")")
                engine.setSensePlugged(port: port, plugged)
                news.availabilityChanged = true
            case .senseLost(let port):
                engine.setSensePlugged(port: port, nil)
                news.availabilityChanged = true
            case .hardwareMuted(let port, let muted):
                Log.info("\(port): capture switch \(muted ? "off (muted in hardware)" : "on")")
                news.hardwareMutes.append(.init(port: port, muted: muted))
            }
        }
        return news
    }

    /// `devices.inject`: events for the scripted source (tests, simulation); they come back
    /// through the source like ALSA's. Returns how many were queued.
    func inject(_ events: [InjectedDeviceEvent]) throws -> Int {
        guard let scripted else {
            throw SessionError(
                .badParam, "device events can be injected only when recd runs with RECD_DEVICE_EVENTS=scripted")
        }
        let converted: [DeviceEvent] = events.map { event in
            switch event {
            case .jackSense(let card, let control, let plugged):
                .jackSense(card: card, control: control, plugged: plugged)
            case .captureSwitch(let card, let control, let on): .captureSwitch(card: card, control: control, on: on)
            case .cardRemoved(let card): .cardRemoved(card: card)
            }
        }
        _ = scripted.push(converted)
        return converted.count
    }
}

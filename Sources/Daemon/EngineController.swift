// The daemon's side of the audio engine: config ports ↔ JACK port groups, availability for
// the policy, hardware facts for sessions, and media-services loss and return.
// Control thread only (the engine's wake closure merely posts to the control loop).
import AudioEngine
import SessionPolicy
import SystemSupport

/// What the engine told the control loop since the last drain, in policy terms.
struct EngineNews {
    var availabilityChanged = false
    var serverLost: String?
    var xruns = 0
    var bufferSizeChanged = false
}

/// Owns the `AudioEngine` and translates between config ports and JACK port groups.
final class EngineController {
    let engine: AudioEngine
    let config: RecdConfig
    /// Increases whenever a port becomes available: "last in wins" (SPEC §4).
    private var connectionCounter = 0
    private var connectedOrder: [String: Int] = [:]
    private var available: [String: Bool] = [:]
    /// Jack-sense state per port (nil: no sense control, JACK alone decides).
    private var sensePlugged: [String: Bool] = [:]
    private(set) var lastError: String?
    private var nextAttempt = 0.0

    init(config: RecdConfig, wake: @escaping @Sendable () -> Void) {
        self.config = config
        self.engine = AudioEngine(wake: wake)
    }

    /// Group names: a duplex port has an input and an output group.
    static func inputGroup(_ port: PortDecl) -> String? {
        switch port.direction {
        case .input: port.name
        case .duplex: port.name + "_in"
        case .output: nil
        }
    }

    static func outputGroup(_ port: PortDecl) -> String? {
        switch port.direction {
        case .output: port.name
        case .duplex: port.name + "_out"
        case .input: nil
        }
    }

    var engineConfiguration: AudioEngine.Configuration {
        var inputs: [PortGroupSpec] = []
        var outputs: [PortGroupSpec] = []
        for port in config.ports {
            if let name = Self.inputGroup(port) {
                inputs.append(PortGroupSpec(name: name, channels: port.channels, connectTo: port.direction == .duplex ? port.jackIn : port.jack))
            }
            if let name = Self.outputGroup(port) {
                let jack = port.direction == .duplex ? port.jackOut : port.jack
                // A duplex port's earpiece may have its own channel count (config: channels counts jack_in).
                outputs.append(PortGroupSpec(name: name, channels: outputChannels(of: port), connectTo: jack))
            }
        }
        return AudioEngine.Configuration(
            clientName: config.jack.clientName, serverName: config.jack.server, inputs: inputs, outputs: outputs)
    }

    var isRunning: Bool { engine.isRunning }

    /// Opens the JACK client. Never starts a server; false (with `lastError`) when none runs.
    func start() -> Bool {
        do {
            try engine.start(engineConfiguration)
            lastError = nil
            refreshAvailability()
            return true
        } catch {
            lastError = "\(error)"
            return false
        }
    }

    /// One reconnection attempt, at most every 250 ms (SPEC §6: back within 2 s).
    func tryReconnect(now: Double) -> Bool {
        guard now >= nextAttempt else { return false }
        nextAttempt = now + 0.25
        engine.stop()
        return start()
    }

    /// Collects engine notifications.
    func drain() -> EngineNews {
        var news = EngineNews()
        for notification in engine.drainNotifications(repair: false) {
            switch notification {
            case .groupAvailabilityChanged: news.availabilityChanged = true
            case .serverLost(let reason): news.serverLost = reason
            case .xrun(let count): news.xruns += count
            case .bufferSize: news.bufferSizeChanged = true
            case .portRegistered, .portUnregistered, .portConnectionChanged, .sampleRate: break
            }
        }
        if news.availabilityChanged { refreshAvailability() }
        return news
    }

    /// Makes missing JACK connections; after the policy has reacted (it can take a period or two).
    func repairConnections() { engine.repairConnections() }

    /// A jack-sense control changed: a port is available only while plugged (nil: no control).
    func setSensePlugged(port: String, _ plugged: Bool?) {
        sensePlugged[port] = plugged
        refreshAvailability()
    }

    /// After a loss every port is gone.
    func markAllUnavailable() {
        for port in config.ports { available[port.name] = false }
    }

    private func refreshAvailability() {
        for port in config.ports {
            let groups = [Self.inputGroup(port), Self.outputGroup(port)].compactMap { $0 }
            let now = engine.isRunning && groups.allSatisfy { engine.isAvailable(group: $0) } && sensePlugged[port.name] != false
            if now && available[port.name] != true {
                connectionCounter += 1
                connectedOrder[port.name] = connectionCounter
            }
            available[port.name] = now
        }
    }

    /// The policy's view of every configured port.
    var portStates: [PortState] {
        config.ports.map {
            PortState(
                name: $0.name, type: $0.type, direction: $0.direction, channels: $0.channels,
                capabilities: $0.capabilities, codec: $0.codec, available: available[$0.name] ?? false,
                connectedOrder: connectedOrder[$0.name] ?? 0)
        }
    }

    /// What JACK says of a session's route (SPEC §5): nil fields when not connected.
    func actualHardware(route: Route) -> ActualHardware {
        guard engine.isRunning, let rate = engine.sampleRate, let buffer = engine.bufferSize else { return ActualHardware() }
        let latencies = engine.latencies()
        func latency(_ group: String?) -> Double? {
            guard let group, let entry = latencies.first(where: { $0.group == group }) else { return nil }
            return entry.seconds
        }
        let inputs = route.inputs.compactMap { name in config.port(named: name) }
        let outputs = route.outputs.compactMap { name in config.port(named: name) }
        return ActualHardware(
            sampleRate: Double(rate), ioBufferDuration: Double(buffer) / Double(rate),
            inputLatency: inputs.first.flatMap { latency(Self.inputGroup($0)) },
            outputLatency: outputs.first.flatMap { latency(Self.outputGroup($0)) },
            inputChannels: inputs.first?.channels, outputChannels: outputs.first.map(outputChannels(of:)))
    }

    /// Applies a preferred IO buffer duration when the config allows it; returns a note for the log.
    func applyBufferPreference(_ duration: Double) -> String? {
        guard config.jack.allowBufferSizeChanges else {
            return "the JACK buffer size stays as it is ([jack] allow_buffer_size_changes = no)"
        }
        guard let rate = engine.sampleRate else { return nil }
        do {
            let frames = try engine.setBufferSize(nearest: Int((duration * Double(rate)).rounded()))
            return "JACK buffer size set to \(frames) frames"
        } catch {
            return "JACK refused a new buffer size: \(error)"
        }
    }

    /// Channels of a port's output side (a duplex port's earpiece may differ from its mic).
    func outputChannels(of port: PortDecl) -> Int {
        port.direction == .duplex ? max(port.jackOut.count, 1) : port.channels
    }

    /// The ports and groups for `recctl routes`.
    func describePorts() -> [(port: PortDecl, available: Bool, recdPorts: [String], order: Int)] {
        config.ports.map { port in
            let groups = [Self.inputGroup(port), Self.outputGroup(port)].compactMap { $0 }
            return (port, available[port.name] ?? false, groups.flatMap { engine.jackPortNames(ofGroup: $0) }, connectedOrder[port.name] ?? 0)
        }
    }
}

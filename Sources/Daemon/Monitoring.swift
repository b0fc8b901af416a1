// DJ-style main/cue monitoring (SPEC §4 multiRoute, §12 `recctl cue`): one multiRoute session
// owns the engine's monitoring buses; its sources are input ports (deck returns) and its own
// player streams. Control thread only.
import AudioEngine
import ControlProtocol
import SessionPolicy
import SystemSupport

/// Which buses a source feeds.
enum BusAssignment: String, CaseIterable {
    case main, cue, both, none

    var toMain: Bool { self == .main || self == .both }
    var toCue: Bool { self == .cue || self == .both }
}

/// The monitoring set-up as the user gave it, by port and stream names.
final class MonitoringState {
    var owner: String?
    var mainPort: String?
    var cuePort: String?
    /// Source name (an input port, or a player stream of the owner) → buses and gain.
    var sources: [String: (bus: BusAssignment, gainDB: Double)] = [:]
    var cueMix = 0.0
    var split = false

    func json(players: PlayerTable) -> JSONValue {
        [
            "app": JSONValue(owner), "main": JSONValue(mainPort), "cue": JSONValue(cuePort),
            "mix": .number(cueMix), "split": .bool(split),
            "sources": .array(sources.keys.sorted().map { name in
                let source = sources[name]!
                let kind = owner.flatMap { players.get($0, name) } != nil ? "player" : "input"
                return ["name": .string(name), "kind": .string(kind), "bus": .string(source.bus.rawValue), "gain_db": .number(source.gainDB)]
            }),
        ]
    }
}

extension ControlService {
    /// `cue.*` requests: outputs, assign, mix, split, show.
    func cue(_ request: Request, peer: PeerCredentials) throws -> [(String, JSONValue)] {
        let app = try request.string("app")
        let session = try store.session(app)
        if request.op != .cueShow { try authorizeChange(of: app, by: peer) }
        guard session.configuration.category == .multiRoute else {
            throw SessionError(.incompatibleCategory, "main/cue monitoring needs category multiRoute (\(app) is \(session.configuration.category.rawValue)); `recctl session set \(app) --category multiRoute`")
        }
        if let owner = monitoring.owner, owner != app, request.op != .cueShow {
            throw SessionError(.resourceNotAvailable, "the monitoring buses belong to \(owner); delete or reconfigure that session first")
        }
        switch request.op {
        case .cueOutputs:
            let route = session.route
            let main = try request.optionalString("main")
            let cue = try request.optionalString("cue")
            for port in [main, cue].compactMap({ $0 }) where !route.outputs.contains(port) {
                throw SessionError(.resourceNotAvailable, "\(port) is not among \(app)'s outputs (\(route.outputs.joined(separator: ", "))); multiRoute can use available usbAudio, lineOut, headphones and HDMI ports")
            }
            guard main != nil || cue != nil else { throw SessionError(.badParam, "cue outputs needs --main PORT and/or --cue PORT") }
            if let main { monitoring.mainPort = main }
            if let cue { monitoring.cuePort = cue }
        case .cueAssign:
            let name = try request.string("source")
            let busName = try request.string("bus")
            guard let bus = BusAssignment(rawValue: busName) else {
                throw SessionError(.badParam, "bus \"\(busName)\" is not main, cue, both or none")
            }
            let isInput = config.port(named: name).map { $0.direction.canCapture } ?? false
            guard isInput || players.get(app, name) != nil else {
                let inputs = config.ports.filter(\.direction.canCapture).map(\.name)
                throw SessionError(.badParam, "\(name) is neither an input port (\(inputs.joined(separator: ", "))) nor a player stream of \(app); start one with `recctl play \(app) FILE --stream \(name)`")
            }
            let gain = try request.optionalDouble("gain_db") ?? monitoring.sources[name]?.gainDB ?? 0
            guard gain.isFinite, gain <= 24 else { throw SessionError(.badParam, "gain \(gain) dB is out of range; use a finite value up to +24 dB") }
            monitoring.sources[name] = (bus, gain)
        case .cueMix:
            guard let mix = try request.optionalDouble("mix"), (0...1).contains(mix) else {
                throw SessionError(.badParam, "cue mix must be a number from 0 (cue only) to 1 (main only)")
            }
            monitoring.cueMix = mix
        case .cueSplit:
            guard let on = try request.optionalBool("on") else { throw SessionError(.badParam, "cue split needs \"on\": true or false") }
            monitoring.split = on
        default:
            return [("monitoring", monitoring.json(players: players))]
        }
        monitoring.owner = app
        if !session.isActive { apply(try store.activate(app: app, forInput: false)) }
        try publishMonitoring()
        return [("monitoring", monitoring.json(players: players))]
    }

    /// Hands the engine the current set-up (gains ramp, no clicks). Also after players change.
    func publishMonitoring() throws {
        guard let owner = monitoring.owner, engine.isRunning else { return }
        func group(_ port: String?) -> String? { port.flatMap { config.port(named: $0) }.flatMap(EngineController.outputGroup) }
        var sources: [MonitoringSource] = []
        for (name, assignment) in monitoring.sources.sorted(by: { $0.key < $1.key }) {
            if let player = players.get(owner, name) {
                sources.append(.player(player.handle.id, toMain: assignment.bus.toMain, toCue: assignment.bus.toCue, gainDecibels: assignment.gainDB))
            } else if let port = config.port(named: name), let input = EngineController.inputGroup(port) {
                sources.append(.input(input, toMain: assignment.bus.toMain, toCue: assignment.bus.toCue, gainDecibels: assignment.gainDB))
            }
        }
        let setup = MonitoringSetup(
            mainOutput: group(monitoring.mainPort), cueOutput: group(monitoring.cuePort), sources: sources,
            cueMix: monitoring.cueMix, splitCue: monitoring.split)
        do {
            try engine.engine.setMonitoring(setup)
        } catch {
            throw SessionError(.resourceNotAvailable, "the engine refused the monitoring set-up: \(error)")
        }
    }

    /// Players came or went: their handles changed, the buses must follow.
    func monitoringPlayersChanged(app: String) {
        guard monitoring.owner == app else { return }
        do { try publishMonitoring() } catch { Log.warning("monitoring: \(error)") }
    }

    /// The session that owned monitoring is gone or no longer multiRoute.
    func releaseMonitoring(app: String) {
        guard monitoring.owner == app else { return }
        monitoring = MonitoringState()
        if engine.isRunning { try? engine.engine.setMonitoring(MonitoringSetup(mainOutput: nil, cueOutput: nil, sources: [], cueMix: 0, splitCue: false)) }
    }
}

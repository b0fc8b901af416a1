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

/// The monitoring buses: who owns them, their outputs and sources as the user gave them (by
/// port and stream names), and handing the engine the set-up. The router checks the policy
/// (a multiRoute session, its owner's right to change it) and passes the session's route;
/// the player table is asked through `playerHandle` (a player stream of the owner, by name).
final class MonitoringService {
    private let engine: any MonitoringEngine
    private let ports: any EnginePorts
    /// The engine player behind a stream of an app, if it has one now.
    private let playerHandle: (_ app: String, _ stream: String) -> PlayerHandleID?

    private(set) var owner: String?
    private(set) var mainPort: String?
    private(set) var cuePort: String?
    /// Source name (an input port, or a player stream of the owner) → buses and gain.
    private(set) var sources: [String: (bus: BusAssignment, gainDB: Double)] = [:]
    private(set) var cueMix = 0.0
    private(set) var split = false

    init(
        engine: any MonitoringEngine, ports: any EnginePorts,
        playerHandle: @escaping (_ app: String, _ stream: String) -> PlayerHandleID?
    ) {
        self.engine = engine
        self.ports = ports
        self.playerHandle = playerHandle
    }

    /// Throws unless `app` may change the buses: nobody owns them, or `app` does.
    func checkOwner(_ app: String) throws {
        if let owner, owner != app {
            throw SessionError(
                .resourceNotAvailable,
                "the monitoring buses belong to \(owner); delete or reconfigure that session first")
        }
    }

    /// `cue.outputs`: the buses' output ports, among `routeOutputs` (the session's route).
    func setOutputs(app: String, main: String?, cue: String?, routeOutputs: [String]) throws {
        for port in [main, cue].compactMap({ $0 }) where !routeOutputs.contains(port) {
            throw SessionError(
                .resourceNotAvailable,
                "\(port) is not among \(app)'s outputs (\(routeOutputs.joined(separator: ", "))); multiRoute can "
                    + "use available usbAudio, lineOut, headphones and HDMI ports"
            )
        }
        guard main != nil || cue != nil else {
            throw SessionError(.badParam, "cue outputs needs --main PORT and/or --cue PORT")
        }
        if let main { mainPort = main }
        if let cue { cuePort = cue }
        owner = app
    }

    /// `cue.assign`: an input port or a player stream of `app` to the buses, with a gain.
    func assign(app: String, source name: String, bus busName: String, gainDB: Double?) throws {
        guard let bus = BusAssignment(rawValue: busName) else {
            throw SessionError(.badParam, "bus \"\(busName)\" is not main, cue, both or none")
        }
        let isInput = ports.inputGroup(port: name) != nil
        guard isInput || playerHandle(app, name) != nil else {
            throw SessionError(
                .badParam,
                "\(name) is neither an input port (\(ports.inputPortNames.joined(separator: ", "))) nor a player "
                    + "stream of \(app); start one with `recctl play \(app) FILE --stream \(name)`"
            )
        }
        let gain = gainDB ?? sources[name]?.gainDB ?? 0
        guard gain.isFinite, gain <= 24 else {
            throw SessionError(.badParam, "gain \(gain) dB is out of range; use a finite value up to +24 dB")
        }
        sources[name] = (bus, gain)
        owner = app
    }

    /// `cue.mix`: 0 = cue only … 1 = main only.
    func setMix(app: String, _ mix: Double) throws {
        guard (0...1).contains(mix) else {
            throw SessionError(.badParam, "cue mix must be a number from 0 (cue only) to 1 (main only)")
        }
        cueMix = mix
        owner = app
    }

    /// `cue.split`: headphones get cue left, main right.
    func setSplit(app: String, _ on: Bool) {
        split = on
        owner = app
    }

    /// Hands the engine the current set-up (gains ramp, no clicks). Also after players change.
    func publish() throws {
        guard let owner, engine.isRunning else { return }
        var setupSources: [MonitoringSource] = []
        for (name, assignment) in sources.sorted(by: { $0.key < $1.key }) {
            if let player = playerHandle(owner, name) {
                setupSources.append(
                    .player(
                        player, toMain: assignment.bus.toMain, toCue: assignment.bus.toCue,
                        gainDecibels: assignment.gainDB))
            } else if let input = ports.inputGroup(port: name) {
                setupSources.append(
                    .input(
                        input, toMain: assignment.bus.toMain, toCue: assignment.bus.toCue,
                        gainDecibels: assignment.gainDB))
            }
        }
        let setup = MonitoringSetup(
            mainOutput: mainPort.flatMap { ports.output(port: $0)?.group },
            cueOutput: cuePort.flatMap { ports.output(port: $0)?.group },
            sources: setupSources, cueMix: cueMix, splitCue: split)
        do {
            try engine.setMonitoring(setup, rampMilliseconds: AudioEngine.defaultRampMilliseconds)
        } catch {
            throw SessionError(.resourceNotAvailable, "the engine refused the monitoring set-up: \(error)")
        }
    }

    /// Players of `app` came or went: their handles changed, the buses must follow.
    func playersChanged(app: String) {
        guard owner == app else { return }
        do { try publish() } catch { Log.warning("monitoring: \(error)") }
    }

    /// The session that owned monitoring is gone or no longer multiRoute.
    func release(app: String) {
        guard owner == app else { return }
        owner = nil
        mainPort = nil
        cuePort = nil
        sources = [:]
        cueMix = 0
        split = false
        if engine.isRunning {
            try? engine.setMonitoring(
                MonitoringSetup(mainOutput: nil, cueOutput: nil, sources: [], cueMix: 0, splitCue: false),
                rampMilliseconds: AudioEngine.defaultRampMilliseconds)
        }
    }

    /// `cue.show` and the other `cue.*` replies.
    var info: MonitoringInfo {
        MonitoringInfo(
            app: owner, main: mainPort, cue: cuePort, mix: cueMix, split: split,
            sources: sources.keys.sorted().map { name in
                let source = sources[name]!
                let kind = owner.flatMap { playerHandle($0, name) } != nil ? "player" : "input"
                return MonitoringInfo.Source(name: name, kind: kind, bus: source.bus.rawValue, gainDB: source.gainDB)
            })
    }

    var json: JSONValue { info.json }
}

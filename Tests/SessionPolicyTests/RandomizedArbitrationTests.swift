// Changes while active: a seeded, replayable random walk over set / activate / deactivate / play /
// record / stop / plug / unplug, driving the real SessionStore with a small model of the
// daemon's streams (what ControlRouter and its services do with each effect), and checking
// the arbiter's invariants after every step. A failure prints the seed, the step and the
// steps before it; RECD_RANDOM_SEED=N replays one seed.
//
// The model follows the route the way the daemon does (a routeChange moves running
// players to the new output and input recorders to the new input): it relies on the store
// announcing every route change, which the "on its route" invariant checks.

import TestSupport
import Testing

@testable import SessionPolicy

/// What the daemon holds of players and recorders, updated from the store's effects the way
/// `ControlRouter.dispatch` and the services do.
struct StreamModel {
    struct Player: Equatable {
        var port: String
        var pausedBy: String?
    }
    struct Recorder: Equatable {
        var port: String
        /// Started with an explicit input (`record start --input`): it does not follow the route.
        var explicit: Bool
        /// Stopped by an interruption, kept to start again on resume.
        var suspended = false
    }

    var players: [String: Player] = [:]  // one stream ("main") per app
    var recorders: [String: [Recorder]] = [:]

    func isRunning(_ app: String) -> Bool {
        players[app].map { $0.pausedBy == nil } == true || recorders[app, default: []].contains { !$0.suspended }
    }

    mutating func apply(_ effects: [PolicyEffect], store: SessionStore) {
        for effect in effects {
            switch effect {
            case .pauseStreams(let app, _):
                if players[app]?.pausedBy == nil { players[app]?.pausedBy = "interruption" }
                recorders[app] = recorders[app]?.map {
                    var r = $0; r.suspended = true; return r
                }
            case .stopStreams(let app, let reason):
                players[app] = nil
                recorders[app] =
                    reason == .mediaServicesLost
                    ? recorders[app]?.map {
                        var r = $0; r.suspended = true; return r
                    } : nil
            case .pausePlayers(let app):
                if let player = players[app], player.pausedBy == nil,
                    store.ports.first(where: { $0.name == player.port })?.available != true
                {
                    players[app]?.pausedBy = "oldDeviceUnavailable"
                }
            case .stopPlayers(let app, _):
                players[app] = nil
            case .stopRecorders(let app, _):
                recorders[app] = nil
            case .resumeStreams(let app):
                // What the interruption paused comes back on the session's route as it is now
                // (it may have changed meanwhile): following the route.
                let route = store.sessions[app]?.route ?? .none
                if var player = players[app], player.pausedBy == "interruption" {
                    if !route.outputs.contains(player.port), let output = route.outputs.first { player.port = output }
                    if route.outputs.contains(player.port) { player.pausedBy = nil }
                    players[app] = player
                }
                // Suspended recorders start again (else they are dropped, logged): an explicit
                // input where its port still is, the others on the route's input.
                recorders[app] = recorders[app]?.compactMap { recorder in
                    guard recorder.suspended else { return recorder }
                    var resumed = recorder
                    resumed.suspended = false
                    if !recorder.explicit && !route.inputs.contains(recorder.port) {
                        guard let input = route.inputs.first else { return nil }
                        resumed.port = input
                    }
                    guard store.ports.contains(where: { $0.name == resumed.port && $0.available }) else { return nil }
                    return resumed
                }
            case .routeChange(let app, _, _, let current):
                // RecorderService.stopUnavailable: input recorders whose port is gone stop.
                recorders[app] = recorders[app]?.filter { recorder in
                    store.ports.contains { $0.name == recorder.port && $0.available }
                }
                // Following the route.
                if var player = players[app], player.pausedBy == nil, !current.outputs.contains(player.port) {
                    if let output = current.outputs.first {
                        player.port = output
                    } else {
                        player.pausedBy = "oldDeviceUnavailable"
                    }
                    players[app] = player
                }
                recorders[app] = recorders[app]?.compactMap { recorder in
                    guard !recorder.explicit, !recorder.suspended, !current.inputs.contains(recorder.port) else {
                        return recorder
                    }
                    guard let input = current.inputs.first else { return nil }
                    var moved = recorder
                    moved.port = input
                    return moved
                }
            default:
                break
            }
            recorders = recorders.filter { !$0.value.isEmpty }
        }
    }
}

/// One random walk: the store, the stream model, the history, and the invariant check.
struct ArbitrationWalk {
    static let apps = ["amb", "music", "rec", "talk", "call", "bg"]
    static let pluggable = ["phones", "headset", "usbIn", "hfp"]

    let seed: UInt64
    var random: SplitMix64
    var store = SessionStore.fixture(ports: [
        port("mic", .builtInMic, .input), port("spk", .builtInSpeaker, .output),
        port("rcv", .builtInReceiver, .output, channels: 1),
        port("phones", .headphones, .output, order: 1, available: false),
        port("headset", .headsetMic, .duplex, order: 2, channels: 1, available: false),
        port("usbIn", .usbAudio, .input, order: 3, available: false),
        port("hfp", .bluetoothHFP, .duplex, order: 4, channels: 1, codec: .msbc, available: false),
    ])
    var streams = StreamModel()
    var history: [String] = []
    var outcomes: [String: Int] = [:]
    private var order = 10

    init(seed: UInt64) {
        self.seed = seed
        random = SplitMix64(seed: seed)
        store.add("amb", .ambient)
        store.add("music", .playback)
        store.add("rec", .record, autoResume: true)
        store.add("talk", .playAndRecord)
        store.add("call", .playAndRecord, .voiceChat, priority: .call)
        store.add("bg", .playback, .default, [.mixWithOthers], background: true)
        for app in Self.apps { _ = store.setPermission(app: app, .granted) }
    }

    /// A configuration, valid or not (an invalid one must be refused and change nothing).
    mutating func randomConfiguration() -> (Category, Mode, Set<CategoryOption>) {
        let category = random.pick(Category.allCases)
        let mode = random.chance(60) ? Mode.default : random.pick(Mode.allCases)
        var options: Set<CategoryOption> = []
        for option in CategoryOption.allCases where random.chance(option == .mixWithOthers ? 25 : 8) {
            options.insert(option)
        }
        if mode == .dualRoute && random.chance(80) { options.insert(.allowBluetoothHFP) }
        return (category, mode, options)
    }

    /// Runs one step; returns what it did (for the history).
    mutating func step() -> String {
        let app = random.pick(Self.apps)
        let kind = random.below(100)
        let description: String
        let outcome: Result<[PolicyEffect], SessionError>
        switch kind {
        case 0..<22:
            let (category, mode, options) = randomConfiguration()
            let micUsage: String?? = random.chance(85) ? .none : random.chance(50) ? .some("talks") : .some(nil)
            description =
                "set \(app) \(category) \(mode) \(options.map(\.rawValue).sorted()) mic=\(String(describing: micUsage))"
            let before = store
            outcome = Result { () throws(SessionError) in
                let configuration = try SessionConfiguration.validated(category: category, mode: mode, options: options)
                return try store.configure(
                    app: app, ownerUID: testUID, configuration: configuration, micUsage: micUsage)
            }
            if case .failure = outcome, store != before { return description + " → REFUSED BUT CHANGED THE STORE" }
        case 22..<34:
            description = "activate \(app)"
            outcome = Result { () throws(SessionError) in try store.activate(app: app) }
        case 34..<44:
            let notify = random.chance(50)
            let force = random.chance(50)
            description = "deactivate \(app) notify=\(notify) force=\(force)"
            outcome = Result { () throws(SessionError) in
                try store.deactivate(app: app, notifyOthers: notify, force: force)
            }
        case 44..<60:
            description = "play \(app)"
            outcome = Result { () throws(SessionError) in try play(app) }
        case 60..<74:
            let explicit = random.chance(25) ? random.pick(["mic", "usbIn", "headset", "hfp"]) : nil
            description = "record \(app)\(explicit.map { " --input \($0)" } ?? "")"
            outcome = Result { () throws(SessionError) in try record(app, input: explicit) }
        case 74..<82:
            let players = random.chance(50)
            description = players ? "stop \(app)" : "record stop \(app)"
            if players { streams.players[app] = nil } else { streams.recorders[app] = nil }
            outcome = .success([])
        default:
            let name = random.pick(Self.pluggable)
            var ports = store.ports
            let index = ports.firstIndex { $0.name == name }!
            let plug = !ports[index].available
            ports[index].available = plug
            if plug {
                order += 1
                ports[index].connectedOrder = order
            }
            description = "\(plug ? "plug" : "unplug") \(name)"
            outcome = .success(store.updatePorts(ports))
        }
        switch outcome {
        case .success(let effects):
            streams.apply(effects, store: store)
            outcomes["ok", default: 0] += 1
            sync()
            return description + " → ok " + effects.map(Self.brief).filter { !$0.isEmpty }.joined(separator: ", ")
        case .failure(let error):
            outcomes[error.code.name, default: 0] += 1
            sync()
            return description + " → \(error.code.name)"
        }
    }

    /// `play` as ControlRouter.startPlayer does it: output category, activation for output,
    /// the first output of the route; the stream replaces the app's previous one.
    mutating func play(_ app: String) throws(SessionError) -> [PolicyEffect] {
        let session = try store.session(app)
        guard session.configuration.category.hasOutput else { throw SessionError(.incompatibleCategory, "cannot play") }
        var effects: [PolicyEffect] = []
        if !session.isActive {
            effects = try store.activate(app: app, forInput: false)
            streams.apply(effects, store: store)
        }
        guard let output = try store.session(app).route.outputs.first else {
            throw SessionError(.cannotStartPlaying, "no output route")
        }
        streams.players[app] = .init(port: output)
        return []
    }

    /// `record start` as ControlRouter.recordStart and startRecorder do it.
    mutating func record(_ app: String, input: String?) throws(SessionError) -> [PolicyEffect] {
        try store.checkCanRecord(app: app)
        if !(try store.session(app)).isActive {
            streams.apply(try store.activate(app: app), store: store)
        }
        let session = try store.session(app)
        guard let name = input ?? session.route.inputs.first else {
            throw SessionError(.resourceNotAvailable, "no input route")
        }
        try store.checkRecordInput(app: app, port: name)
        if streams.recorders[app, default: []].contains(where: { $0.port == name }) {
            throw SessionError(.badParam, "already records \(name)")
        }
        guard let state = store.ports.first(where: { $0.name == name }), state.available else {
            throw SessionError(.resourceNotAvailable, "\(name) is not available")
        }
        let request = RouteRequest(configuration: session.configuration, preferredInput: name, region: store.region)
        guard RouteChooser.isEligibleInput(state, request: request) else {
            throw SessionError(.resourceNotAvailable, "\(app) may not use \(name)")
        }
        streams.recorders[app, default: []].append(.init(port: name, explicit: input != nil))
        return []
    }

    /// ControlRouter.syncStreams for every app.
    mutating func sync() {
        for app in Self.apps { store.setStreamsRunning(app: app, streams.isRunning(app)) }
    }

    static func brief(_ effect: PolicyEffect) -> String {
        switch effect {
        case .sessionChanged, .ducked, .unducked: ""
        case .interruption(let app, let type, _, let resume): "\(type.name)(\(app)\(resume ? ",resume" : ""))"
        case .routeChange(let app, let reason, _, let current):
            "route(\(app) \(reason.name) in=\(current.inputs) out=\(current.outputs))"
        default: "\(effect)"
        }
    }

    /// The invariants of changes while active (one active non-mixable session, streams that
    /// follow the route); nil when they hold.
    func violation(checkFollow: Bool = true) -> String? {
        let sessions = Self.apps.compactMap { store.sessions[$0] }
        let activeSolo = sessions.filter { $0.isActive && !$0.isMixable }.map(\.app)
        if activeSolo.count > 1 { return "two active non-mixable sessions: \(activeSolo)" }
        for session in sessions {
            let app = session.app
            let category = session.configuration.category
            let recorders = streams.recorders[app, default: []]
            if !category.hasInput && !recorders.isEmpty {
                return "\(app) has recorders \(recorders) under \(category) (no input)"
            }
            if let player = streams.players[app], category == .record {
                return "\(app) has a player \(player) under record"
            }
            if streams.isRunning(app) && !session.isActive {
                return "\(app) runs streams while \(session.state)"
            }
            guard checkFollow else { continue }
            if let player = streams.players[app], player.pausedBy == nil, !session.route.outputs.contains(player.port) {
                return "\(app)'s player plays to \(player.port), not on its route \(session.route.outputs)"
            }
            for recorder in recorders where !recorder.suspended && !recorder.explicit {
                if !session.route.inputs.contains(recorder.port) {
                    return "\(app)'s recorder captures \(recorder.port), not on its route \(session.route.inputs)"
                }
            }
        }
        return nil
    }
}

@Suite("changes while active: randomized arbitration (pure policy, seeded)")
struct RandomizedArbitrationTests {
    /// 100 × 500 steps take about 4 s in a debug build.
    static let seeds = 100
    static let steps = 500

    @Test(
        "after every step: one active non-mixable session at most, no recorder without input, no player under record, streams on their route"
    )
    func randomWalks() {
        var totals: [String: Int] = [:]
        let seeds = randomSeeds(count: Self.seeds, base: 1)
        for seed in seeds {
            var walk = ArbitrationWalk(seed: seed)
            for number in 1...Self.steps {
                let line = walk.step()
                walk.history.append("\(number): \(line)")
                if let problem = walk.violation() ?? (line.contains("REFUSED BUT CHANGED") ? line : nil) {
                    Issue.record(
                        """
                        seed \(seed) step \(number): \(problem)
                        replay with RECD_RANDOM_SEED=\(seed); the last steps:
                        \(walk.history.suffix(25).joined(separator: "\n"))
                        """)
                    break
                }
            }
            totals.merge(walk.outcomes, uniquingKeysWith: +)
        }
        print(
            "randomized arbitration: \(seeds.count) seed(s) × \(Self.steps) steps; outcomes \(totals.sorted { $0.key < $1.key })"
        )
        // The walk must reach the interesting places, not only refusals.
        #expect(totals["ok", default: 0] > totals.values.reduce(0, +) / 3)
        if seeds.count > 1 {
            #expect(totals["insufficientPriority", default: 0] > 0)
            #expect(totals["cannotInterruptOthers", default: 0] > 0)
            #expect(totals["missingEntitlement", default: 0] > 0)
        }
    }

    @Test("the same seed replays the same walk")
    func replayable() {
        func run() -> [String] {
            var walk = ArbitrationWalk(seed: 42)
            return (0..<200).map { _ in walk.step() }
        }
        #expect(run() == run())
    }

    @Test("the checker has teeth: a broken state is reported")
    func checkerFindsViolations() throws {
        var walk = ArbitrationWalk(seed: 7)
        walk.streams.players["rec"] = .init(port: "spk")
        #expect(walk.violation()?.contains("under record") == true)
        walk.streams.players["rec"] = nil
        walk.streams.recorders["music"] = [.init(port: "mic", explicit: false)]
        #expect(walk.violation()?.contains("no input") == true)
        walk.streams.recorders["music"] = nil
        _ = try walk.store.activate(app: "music")
        walk.streams.players["music"] = .init(port: "rcv")
        #expect(walk.violation()?.contains("not on its route") == true)
        walk.streams.players["music"] = nil
        #expect(walk.violation() == nil)
    }
}

// Loggers nothing stops by accident (priority class `logger`), AVAudioSession's
// prefersNoInterruptionsFromSystemAlerts with recd's system-alert class, and who interrupted.
// Tables over every priority pair and mixability, then a seeded random walk whose invariants
// are the promises of docs/protocol.md ("Interruptions: priority, system alerts, who and since
// when"); RECD_RANDOM_SEED=N replays one seed.

import TestSupport
import Testing

@testable import SessionPolicy

@Suite("priority class logger")
struct LoggerPriorityClassTests {
    enum Outcome: Sendable { case interrupts, insufficientPriority, coexists }

    struct Case: Sendable, CustomTestStringConvertible {
        let incumbent: PriorityClass
        let incumbentMixable: Bool
        let newcomer: PriorityClass
        let newcomerMixable: Bool
        var testDescription: String {
            "\(newcomer)\(newcomerMixable ? " mixable" : "") activates beside active \(incumbent)"
                + "\(incumbentMixable ? " mixable" : "")"
        }

        /// The rule of docs/protocol.md, spelled out per case: mixable on either side coexists;
        /// a logger is never interrupted; otherwise a lower class may not interrupt a higher one.
        var expected: Outcome {
            if incumbentMixable || newcomerMixable { return .coexists }
            if incumbent == .logger { return .insufficientPriority }
            let rank: [PriorityClass: Int] = [.normal: 0, .call: 1, .logger: 2]
            return rank[incumbent]! > rank[newcomer]! ? .insufficientPriority : .interrupts
        }
    }

    static let cases: [Case] = PriorityClass.allCases.flatMap { incumbent in
        PriorityClass.allCases.flatMap { newcomer in
            [false, true].flatMap { a in
                [false, true].map { b in
                    Case(incumbent: incumbent, incumbentMixable: a, newcomer: newcomer, newcomerMixable: b)
                }
            }
        }
    }

    @Test("three classes, ordered normal < call < logger")
    func classes() {
        #expect(PriorityClass.allCases.map(\.rawValue) == ["normal", "call", "logger"])
        #expect(PriorityClass.normal < .call && PriorityClass.call < .logger)
    }

    /// The incumbent records (record category, streams running); the newcomer plays.
    @Test(arguments: cases)
    func arbitration(_ c: Case) throws {
        var store = SessionStore.fixture()
        store.add("incumbent", .record, .default, c.incumbentMixable ? [.mixWithOthers] : [], priority: c.incumbent)
        _ = try store.activate(app: "incumbent")
        store.setStreamsRunning(app: "incumbent", true)
        store.add("newcomer", .playback, .default, c.newcomerMixable ? [.mixWithOthers] : [], priority: c.newcomer)
        switch c.expected {
        case .interrupts:
            let effects = try store.activate(app: "newcomer")
            #expect(effects.interruptions == [began("incumbent")])
            #expect(effects.contains(.pauseStreams(app: "incumbent", reason: .interruption)))
            #expect(store.sessions["incumbent"]?.interruption?.by == "newcomer")
        case .insufficientPriority:
            let before = StoreSnapshot(store)
            let error = expectError(.insufficientPriority, mentioning: ["incumbent", c.incumbent.rawValue]) {
                _ = try store.activate(app: "newcomer")
            }
            #expect(error.map { saysWhatToDo($0.message) } == true)
            #expect(StoreSnapshot(store) == before)
        case .coexists:
            let effects = try store.activate(app: "newcomer")
            #expect(effects.interruptions.isEmpty && effects.streamControl.isEmpty)
            #expect(store.state("incumbent") == .active && store.state("newcomer") == .active)
            #expect(store.sessions["incumbent"]?.streamsRunning == true)
        }
    }

    @Test("session.set of an active session beside a logger is refused like an activation, and changes nothing")
    func activeChangeBesideALogger() throws {
        var store = SessionStore.fixture()
        store.add("logger", .record, priority: .logger)
        _ = try store.activate(app: "logger")
        store.add("radio", .playback, .default, [.mixWithOthers], priority: .call)
        _ = try store.activate(app: "radio")
        let before = StoreSnapshot(store)
        expectError(.insufficientPriority, mentioning: ["logger"]) {
            _ = try store.configure(app: "radio", ownerUID: testUID, configuration: config(.playback))
        }
        #expect(StoreSnapshot(store) == before)
    }

    @Test("interruptSpokenAudioAndMixWithOthers spares a spokenAudio logger, even from another logger")
    func spokenAudioLoggerIsSpared() throws {
        for activator in PriorityClass.allCases {
            var store = SessionStore.fixture()
            store.add("logger", .playAndRecord, .spokenAudio, [.mixWithOthers], priority: .logger)
            _ = try store.activate(app: "logger")
            store.add("nav", .playback, .voicePrompt, [.interruptSpokenAudioAndMixWithOthers], priority: activator)
            let effects = try store.activate(app: "nav")
            #expect(effects.interruptions.isEmpty, "\(activator)")
            #expect(store.state("logger") == .active)
        }
    }

    @Test("a logger still hears its input's hardware mute switch (a fact, not an activation)")
    func hardwareMuteStillInterrupts() throws {
        var store = SessionStore.fixture()
        store.add("logger", .record, priority: .logger)
        _ = try store.activate(app: "logger")
        let input = try #require(store.sessions["logger"]?.route.inputs.first)
        let effects = store.report(.hardwareMute(port: input, muted: true))
        #expect(effects.interruptions == [began("logger", .builtInMicMuted)])
        #expect(store.sessions["logger"]?.interruption?.by == input)
    }

    @Test("a logger's own non-mixable activation interrupts lower classes as any activation does")
    func loggerActivationInterruptsLower() throws {
        var store = SessionStore.fixture()
        store.add("phone", .playAndRecord, .voiceChat, priority: .call)
        _ = try store.activate(app: "phone")
        store.add("logger", .record, priority: .logger)
        let effects = try store.activate(app: "logger")
        #expect(effects.interruptions == [began("phone")])
    }
}

@Suite("prefersNoInterruptionsFromSystemAlerts")
struct SystemAlertTests {
    /// Which sessions are system-alert class (docs/protocol.md): written out, not derived.
    struct ClassCase: Sendable, CustomTestStringConvertible {
        let category: Category
        let mode: Mode
        let options: Set<CategoryOption>
        let priority: PriorityClass
        let isAlert: Bool
        var testDescription: String {
            "\(category) \(mode) \(options.map(\.rawValue).sorted()) \(priority): \(isAlert ? "alert" : "not an alert")"
        }
    }

    static let classCases: [ClassCase] = [
        .init(category: .playback, mode: .voicePrompt, options: [], priority: .normal, isAlert: true),
        .init(category: .playback, mode: .voicePrompt, options: [.duckOthers], priority: .normal, isAlert: false),
        .init(category: .playback, mode: .voicePrompt, options: [.mixWithOthers], priority: .normal, isAlert: false),
        .init(category: .playback, mode: .voicePrompt, options: [], priority: .call, isAlert: false),
        .init(category: .playback, mode: .voicePrompt, options: [], priority: .logger, isAlert: false),
        .init(category: .playback, mode: .default, options: [], priority: .normal, isAlert: false),
        .init(category: .playback, mode: .spokenAudio, options: [], priority: .normal, isAlert: false),
        .init(category: .soloAmbient, mode: .default, options: [], priority: .normal, isAlert: false),
        .init(category: .playAndRecord, mode: .voiceChat, options: [], priority: .normal, isAlert: false),
        .init(category: .ambient, mode: .default, options: [], priority: .normal, isAlert: false),
    ]

    @Test(arguments: classCases)
    func systemAlertClass(_ c: ClassCase) {
        var store = SessionStore.fixture()
        store.add("s", c.category, c.mode, c.options, priority: c.priority)
        #expect(store.sessions["s"]?.isSystemAlert == c.isAlert)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let prefers: Bool
        let activator: ClassCase
        var testDescription: String { "prefers \(prefers), \(activator.testDescription)" }
    }

    static let cases: [Case] = [false, true].flatMap { prefers in
        classCases.filter { $0.category != .ambient && !$0.options.contains(.mixWithOthers) && !$0.options.contains(.duckOthers) }
            .map { Case(prefers: prefers, activator: $0) }
    }

    /// The incumbent (playAndRecord, normal, recording) against every non-mixable activator:
    /// spared only by an alert when it prefers so; a logger-class activator interrupts anyway.
    @Test(arguments: cases)
    func alertsSpareOnlyThoseWhoPrefer(_ c: Case) throws {
        var store = SessionStore.fixture()
        store.add("talk", .playAndRecord)
        _ = try store.setPrefersNoInterruptionsFromSystemAlerts(app: "talk", c.prefers)
        _ = try store.activate(app: "talk")
        store.setStreamsRunning(app: "talk", true)
        store.add("other", c.activator.category, c.activator.mode, c.activator.options, priority: c.activator.priority)
        let effects = try store.activate(app: "other")
        if c.prefers && c.activator.isAlert {
            #expect(effects.interruptions.isEmpty && effects.streamControl.isEmpty)
            #expect(store.state("talk") == .active && store.state("other") == .active)
        } else {
            #expect(effects.interruptions == [began("talk")])
            #expect(store.state("talk") == .interrupted)
        }
    }

    @Test("a background alert beside a session that prefers no alerts activates (nothing to interrupt)")
    func backgroundAlert() throws {
        var store = SessionStore.fixture()
        store.add("talk", .playAndRecord)
        _ = try store.setPrefersNoInterruptionsFromSystemAlerts(app: "talk", true)
        _ = try store.activate(app: "talk")
        store.add("chime", .playback, .voicePrompt, background: true)
        #expect(try store.activate(app: "chime").interruptions.isEmpty)
        // Without the preference the background alert may not interrupt: cannotInterruptOthers.
        _ = try store.deactivate(app: "chime", notifyOthers: false, force: true)
        _ = try store.setPrefersNoInterruptionsFromSystemAlerts(app: "talk", false)
        expectError(.cannotInterruptOthers, mentioning: ["talk"]) { _ = try store.activate(app: "chime") }
    }

    @Test("an active session changed into an alert spares the one that prefers; out of it, interrupts")
    func configureIntoAndOutOfAlert() throws {
        var store = SessionStore.fixture()
        store.add("talk", .playAndRecord)
        _ = try store.setPrefersNoInterruptionsFromSystemAlerts(app: "talk", true)
        store.add("chime", .playback, .voicePrompt, [.mixWithOthers])
        _ = try store.activate(app: "talk")
        _ = try store.activate(app: "chime")
        let into = try store.configure(app: "chime", ownerUID: testUID, configuration: config(.playback, .voicePrompt))
        #expect(into.interruptions.isEmpty)
        let out = try store.configure(app: "chime", ownerUID: testUID, configuration: config(.playback, .default))
        #expect(out.interruptions == [began("talk")])
        #expect(store.sessions["talk"]?.interruption?.by == "chime")
    }

    @Test("the preference is a sessionChanged (persisted); of an unknown app it is expiredSession")
    func setter() throws {
        var store = SessionStore.fixture()
        store.add("talk", .playAndRecord)
        #expect(try store.setPrefersNoInterruptionsFromSystemAlerts(app: "talk", true) == [.sessionChanged(app: "talk")])
        #expect(store.sessions["talk"]?.prefersNoInterruptionsFromSystemAlerts == true)
        let before = StoreSnapshot(store)
        expectError(.expiredSession) { _ = try store.setPrefersNoInterruptionsFromSystemAlerts(app: "gone", true) }
        #expect(StoreSnapshot(store) == before)
    }
}

@Suite("who interrupted")
struct InterruptionByTests {
    @Test("by names the app, the muted port, or nothing for a lost output")
    func byOfEachCause() {
        func by(_ cause: Interruption.Cause) -> String? {
            Interruption(cause: cause, reason: .default, streamsWereRunning: false).by
        }
        #expect(by(.nonMixable(by: "voice")) == "voice")
        #expect(by(.spokenAudio(by: "nav")) == "nav")
        #expect(by(.hardwareMute(port: "mic")) == "mic")
        #expect(by(.routeDisconnected) == nil)
    }

    @Test("handed over: by names the session now active")
    func handedOver() throws {
        var store = SessionStore.fixture()
        store.add("logger", .record)
        store.add("voice", .playAndRecord)
        store.add("game", .playback)
        _ = try store.activate(app: "logger")
        _ = try store.activate(app: "voice")
        #expect(store.sessions["logger"]?.interruption?.by == "voice")
        _ = try store.activate(app: "game")
        _ = try store.deactivate(app: "voice", notifyOthers: true, force: true)
        #expect(store.sessions["logger"]?.interruption?.by == "game")
    }
}

/// A seeded walk over activations, deactivations and configuration changes of sessions around a
/// logger and a session that prefers no alerts; after every step: a refusal changed nothing, an
/// active logger stayed active unless the step was its own, the preferring session was never
/// interrupted by an alert, and at most one non-mixable session is active except an alert beside
/// one that prefers (or beside a logger it could not interrupt: never, it is refused).
@Suite("randomized logger and alert arbitration (pure policy, seeded)")
struct RandomizedLoggerTests {
    static let apps = ["logger", "logger2", "pref", "alert", "prompt", "voice", "call"]

    /// Each app's configurations: its own, and mixable or other variants of it.
    static let configurations: [String: [SessionConfiguration]] = [
        "logger": [config(.record), config(.record, .default, [.mixWithOthers])],
        "logger2": [config(.record), config(.record, .default, [.mixWithOthers])],
        "pref": [config(.playAndRecord), config(.playback), config(.playAndRecord, .default, [.mixWithOthers])],
        "alert": [config(.playback, .voicePrompt), config(.playback, .voicePrompt, [.mixWithOthers]), config(.playback)],
        "prompt": [config(.playback, .voicePrompt)],
        "voice": [config(.playAndRecord, .voiceChat), config(.playAndRecord, .voiceChat, [.mixWithOthers])],
        "call": [config(.playAndRecord, .voiceChat)],
    ]

    struct Walk {
        var random: SplitMix64
        var store = SessionStore.fixture()
        var outcomes: [String: Int] = [:]

        init(seed: UInt64) {
            random = SplitMix64(seed: seed)
            store.add("logger", .record, priority: .logger)
            store.add("logger2", .record, priority: .logger)
            store.add("pref", .playAndRecord)
            store.add("alert", .playback, .voicePrompt)
            store.add("prompt", .playback, .voicePrompt, priority: .call)
            store.add("voice", .playAndRecord, .voiceChat)
            store.add("call", .playAndRecord, .voiceChat, priority: .call)
            _ = try? store.setPrefersNoInterruptionsFromSystemAlerts(app: "pref", true)
        }

        /// One step; nil when the invariants hold, else what broke.
        mutating func step() -> (String, String?) {
            let app = random.pick(RandomizedLoggerTests.apps)
            let before = store
            let loggersActive = store.sessions.values.filter { $0.priority == .logger && $0.isActive }.map(\.app)
            let prefActive = store.state("pref") == .active
            let description: String
            let outcome: Result<[PolicyEffect], SessionError>
            switch random.below(100) {
            case 0..<45:
                description = "activate \(app)"
                outcome = Result { () throws(SessionError) in try store.activate(app: app) }
            case 45..<70:
                let notify = random.chance(50)
                description = "deactivate \(app) notify=\(notify)"
                outcome = Result { () throws(SessionError) in
                    try store.deactivate(app: app, notifyOthers: notify, force: true)
                }
            default:
                let configuration = random.pick(RandomizedLoggerTests.configurations[app]!)
                description = "set \(app) \(configuration.category) \(configuration.mode) mixable=\(configuration.isMixable)"
                outcome = Result { () throws(SessionError) in
                    try store.configure(app: app, ownerUID: testUID, configuration: configuration)
                }
            }
            switch outcome {
            case .failure(let error):
                outcomes[error.code.name, default: 0] += 1
                if store != before { return (description, "refused (\(error.code.name)) but changed the store") }
            case .success:
                outcomes["ok", default: 0] += 1
            }
            for logger in loggersActive where logger != app && store.state(logger) != .active {
                return (description, "\(logger) (priority logger) was active and is now \(store.state(logger)!)")
            }
            if prefActive, store.state("pref") != .active, app == "alert", store.sessions["alert"]!.isSystemAlert {
                return (description, "the system alert interrupted pref, which prefers no interruptions from alerts")
            }
            let solo = store.sessions.values.filter { $0.isActive && !$0.isMixable }
            if solo.count > 1 {
                let alerts = solo.filter(\.isSystemAlert)
                let preferring = solo.filter(\.prefersNoInterruptionsFromSystemAlerts)
                if !(solo.count == 2 && alerts.count == 1 && preferring.count == 1) {
                    return (description, "active non-mixable sessions \(solo.map(\.app).sorted())")
                }
            }
            for session in store.sessions.values where session.state == .interrupted {
                guard let by = session.interruption?.by, store.sessions[by] != nil else {
                    return (description, "\(session.app) is interrupted by no session: \(String(describing: session.interruption))")
                }
            }
            return (description, nil)
        }
    }

    @Test("after every step the promises hold; the walk reaches refusals and coexistence")
    func randomWalks() {
        var totals: [String: Int] = [:]
        var spared = 0
        let seeds = randomSeeds(count: 60, base: 2700)
        for seed in seeds {
            var walk = Walk(seed: seed)
            var history: [String] = []
            for number in 1...400 {
                let (line, problem) = walk.step()
                history.append("\(number): \(line)")
                if walk.store.state("alert") == .active && walk.store.state("pref") == .active
                    && walk.store.sessions["alert"]!.isSystemAlert && !walk.store.sessions["pref"]!.isMixable
                {
                    spared += 1
                }
                if let problem {
                    Issue.record(
                        """
                        seed \(seed) step \(number): \(problem)
                        replay with RECD_RANDOM_SEED=\(seed); the last steps:
                        \(history.suffix(20).joined(separator: "\n"))
                        """)
                    break
                }
            }
            totals.merge(walk.outcomes, uniquingKeysWith: +)
        }
        print("randomized logger arbitration: \(seeds.count) seed(s); outcomes \(totals.sorted { $0.key < $1.key }); "
            + "\(spared) steps with an alert beside pref")
        if seeds.count > 1 {
            #expect(totals["insufficientPriority", default: 0] > 0)
            #expect(spared > 0)
        }
    }

    @Test("not vacuous: the same walks with the loggers declared normal interrupt them")
    func withoutTheClassLoggersAreInterrupted() {
        var interrupted = false
        for seed in UInt64(1)...40 where !interrupted {
            var walk = Walk(seed: seed)
            walk.store.updateDeclaration(app: "logger") { $0.priority = .normal }
            for _ in 1...400 where !interrupted {
                _ = walk.step()
                interrupted = walk.store.sessions["logger"]?.interruption.map { $0.by != "logger" } == true
                    && walk.store.state("logger") == .interrupted
            }
        }
        #expect(interrupted, "a normal-priority logger is interrupted somewhere in 40 walks")
    }
}

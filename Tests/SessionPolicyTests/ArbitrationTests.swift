// SPEC §3 (and §6, §8 where they meet the arbiter): activation, interruption, ducking,
// priority, deactivation, auto-resume, deletion, media services, mute.

import Testing

@testable import SessionPolicy

@Suite("SPEC §3 activation and interruption")
struct ActivationTests {
    struct InterruptCase: Sendable, CustomTestStringConvertible {
        let category: Category
        let mode: Mode
        let options: Set<CategoryOption>
        let interrupts: Bool
        var testDescription: String {
            "\(category)/\(mode) \(options.map(\.rawValue).sorted()) \(interrupts ? "interrupts" : "mixes")"
        }

        /// From the last column of SPEC §1's category table, plus the options that imply mixing.
        static let all: [InterruptCase] = {
            var cases: [InterruptCase] = []
            for row in Spec.rows(Spec.categoryTable).dropFirst() {
                let category = Category(rawValue: row[0])!
                let column = row[4]
                cases.append(.init(category: category, mode: .default, options: [], interrupts: column.hasPrefix("yes")))
                if column.contains("no, with mixWithOthers") {
                    cases.append(.init(category: category, mode: .default, options: [.mixWithOthers], interrupts: false))
                }
                cases.append(.init(category: category, mode: .default, options: [.duckOthers], interrupts: false))
                cases.append(
                    .init(category: category, mode: .default, options: [.interruptSpokenAudioAndMixWithOthers], interrupts: false))
            }
            cases.append(.init(category: .playAndRecord, mode: .voiceChat, options: [], interrupts: true))
            cases.append(.init(category: .multiRoute, mode: .dualRoute, options: [.allowBluetoothHFP], interrupts: true))
            return cases
        }()
    }

    /// A non-mixable playback session is active; the newcomer interrupts it exactly when it is non-mixable.
    @Test(arguments: InterruptCase.all)
    func activationInterruptsNonMixableSessions(_ c: InterruptCase) throws {
        var store = SessionStore.fixture()
        store.add("incumbent", .playback)
        _ = try store.activate(app: "incumbent")
        store.add("newcomer", c.category, c.mode, c.options)
        let effects = try store.activate(app: "newcomer")
        #expect(store.state("newcomer") == .active)
        if c.interrupts {
            #expect(effects.interruptions == [began("incumbent")])
            #expect(store.state("incumbent") == .interrupted)
            #expect(store.sessions["incumbent"]?.interruption?.reason == .default)
        } else {
            #expect(effects.interruptions.isEmpty)
            #expect(store.state("incumbent") == .active)
        }
    }

    struct MixableIncumbent: Sendable, CustomTestStringConvertible {
        let category: Category
        let mode: Mode
        let options: Set<CategoryOption>
        var testDescription: String { "\(category)/\(mode) \(options.map(\.rawValue).sorted())" }
    }

    static let mixableIncumbents: [MixableIncumbent] = [
        .init(category: .ambient, mode: .default, options: []),
        .init(category: .soloAmbient, mode: .default, options: [.mixWithOthers]),
        .init(category: .playback, mode: .default, options: [.mixWithOthers]),
        .init(category: .playback, mode: .voicePrompt, options: [.duckOthers]),
        .init(category: .record, mode: .default, options: [.mixWithOthers]),
        .init(category: .playAndRecord, mode: .default, options: [.interruptSpokenAudioAndMixWithOthers]),
        .init(category: .multiRoute, mode: .default, options: [.mixWithOthers]),
    ]

    @Test(arguments: mixableIncumbents)
    func mixableSessionsKeepRunning(_ m: MixableIncumbent) throws {
        var store = SessionStore.fixture()
        store.add("mixable", m.category, m.mode, m.options)
        _ = try store.activate(app: "mixable")
        store.add("solo", .playback)
        let effects = try store.activate(app: "solo")
        #expect(effects.interruptions.isEmpty)
        #expect(store.state("mixable") == .active)
        #expect(store.state("solo") == .active)
    }

    @Test func everyActiveNonMixableSessionIsInterrupted() throws {
        var store = SessionStore.fixture()
        store.add("a", .playback, .default, [.mixWithOthers])
        store.add("b", .soloAmbient)
        store.add("c", .ambient)
        _ = try store.activate(app: "a")
        _ = try store.activate(app: "b")
        _ = try store.activate(app: "c")
        store.add("d", .playback)
        _ = try store.activate(app: "d")  // interrupts b
        store.add("e", .record)
        let effects = try store.activate(app: "e")
        #expect(effects.interruptions == [began("d")])
        #expect(store.state("a") == .active)
        #expect(store.state("b") == .interrupted)
        #expect(store.state("c") == .active)
        #expect(store.state("d") == .interrupted)
        #expect(store.state("e") == .active)
    }

    /// SPEC §3: a session is owned by the Unix user that created it; reconfiguring keeps the owner.
    @Test func ownerIsTheCreator() throws {
        var store = SessionStore.fixture()
        _ = try store.configure(app: "app", ownerUID: 1001, configuration: config(.playback))
        _ = try store.configure(app: "app", ownerUID: 1002, configuration: config(.record), micUsage: .some("x"))
        #expect(store.sessions["app"]?.ownerUID == 1001)
        #expect(store.sessions["app"]?.configuration.category == .record)
        #expect(store.sessions["app"]?.micUsage == "x")
        // micUsage left out keeps the declared one.
        _ = try store.configure(app: "app", ownerUID: 1001, configuration: config(.playAndRecord))
        #expect(store.sessions["app"]?.micUsage == "x")
    }

    @Test func activatingAnActiveSessionDoesNothing() throws {
        var store = SessionStore.fixture()
        store.add("a")
        _ = try store.activate(app: "a")
        let before = StoreSnapshot(store)
        #expect(try store.activate(app: "a").isEmpty)
        #expect(StoreSnapshot(store) == before)
    }

    @Test(arguments: Category.allCases)
    func inputSessionsNeedAMicrophoneUsageDescription(_ category: Category) throws {
        for usage in [nil, ""] as [String?] {
            var store = SessionStore.fixture()
            store.add("a", category, micUsage: usage)
            if category.hasInput {
                let before = StoreSnapshot(store)
                expectError(.missingEntitlement, mentioning: ["a"]) { _ = try store.activate(app: "a") }
                #expect(StoreSnapshot(store) == before)
            } else {
                _ = try store.activate(app: "a")
                #expect(store.state("a") == .active)
            }
        }
    }

    @Test func interruptedSessionWithRunningStreamsPauses() throws {
        var store = SessionStore.fixture()
        store.add("running", .playback)
        store.add("idle", .soloAmbient, .default, [])
        _ = try store.activate(app: "running")
        store.setStreamsRunning(app: "running", true)
        let effects = try store.activate(app: "idle")
        #expect(effects.interruptions == [began("running")])
        #expect(effects.streamControl == [.pauseStreams(app: "running", reason: .interruption)])
        #expect(store.sessions["running"]?.streamsRunning == false)
        // A session without running streams is interrupted with nothing to pause.
        let back = try store.activate(app: "running")
        #expect(back.interruptions == [began("idle")])
        #expect(back.streamControl.isEmpty)
    }
}

@Suite("SPEC §3 priority and background sessions")
struct PriorityTests {
    enum Outcome: Sendable { case interrupts, insufficientPriority, coexists }

    struct PriorityCase: Sendable, CustomTestStringConvertible {
        let incumbent: PriorityClass
        let newcomer: PriorityClass
        let newcomerCategory: Category
        let newcomerOptions: Set<CategoryOption>
        let outcome: Outcome
        var testDescription: String {
            "\(newcomer) \(newcomerCategory) \(newcomerOptions.map(\.rawValue).sorted()) vs active \(incumbent): \(outcome)"
        }
    }

    static let cases: [PriorityCase] = [
        .init(incumbent: .normal, newcomer: .normal, newcomerCategory: .playback, newcomerOptions: [], outcome: .interrupts),
        .init(incumbent: .call, newcomer: .call, newcomerCategory: .playback, newcomerOptions: [], outcome: .interrupts),
        .init(incumbent: .normal, newcomer: .call, newcomerCategory: .playback, newcomerOptions: [], outcome: .interrupts),
        .init(incumbent: .normal, newcomer: .call, newcomerCategory: .record, newcomerOptions: [], outcome: .interrupts),
        .init(
            incumbent: .call, newcomer: .normal, newcomerCategory: .playback, newcomerOptions: [],
            outcome: .insufficientPriority),
        .init(
            incumbent: .call, newcomer: .normal, newcomerCategory: .record, newcomerOptions: [],
            outcome: .insufficientPriority),
        .init(
            incumbent: .call, newcomer: .normal, newcomerCategory: .soloAmbient, newcomerOptions: [],
            outcome: .insufficientPriority),
        .init(
            incumbent: .call, newcomer: .normal, newcomerCategory: .playback, newcomerOptions: [.mixWithOthers],
            outcome: .coexists),
        .init(
            incumbent: .call, newcomer: .normal, newcomerCategory: .playback, newcomerOptions: [.duckOthers],
            outcome: .coexists),
        .init(incumbent: .call, newcomer: .normal, newcomerCategory: .ambient, newcomerOptions: [], outcome: .coexists),
    ]

    /// The incumbent is a non-mixable playAndRecord session.
    @Test(arguments: cases)
    func priorityClasses(_ c: PriorityCase) throws {
        var store = SessionStore.fixture()
        store.add("incumbent", .playAndRecord, priority: c.incumbent)
        _ = try store.activate(app: "incumbent")
        store.add("newcomer", c.newcomerCategory, .default, c.newcomerOptions, priority: c.newcomer)
        switch c.outcome {
        case .interrupts:
            let effects = try store.activate(app: "newcomer")
            #expect(effects.interruptions == [began("incumbent")])
            #expect(store.state("incumbent") == .interrupted)
        case .insufficientPriority:
            let before = StoreSnapshot(store)
            expectError(.insufficientPriority, mentioning: ["incumbent"]) { _ = try store.activate(app: "newcomer") }
            #expect(StoreSnapshot(store) == before)
        case .coexists:
            let effects = try store.activate(app: "newcomer")
            #expect(effects.interruptions.isEmpty)
            #expect(store.state("incumbent") == .active)
            #expect(store.state("newcomer") == .active)
        }
    }

    /// "A recording session is never silently stopped by a lower-priority one."
    @Test func recordingIsNeverStoppedByALowerPriority() throws {
        var store = SessionStore.fixture()
        store.add("logger", .playAndRecord, .spokenAudio, priority: .call)
        _ = try store.activate(app: "logger")
        store.setStreamsRunning(app: "logger", true)
        // Non-mixable: refused.
        store.add("player", .playback)
        expectError(.insufficientPriority) { _ = try store.activate(app: "player") }
        // Mixable, interrupting spoken audio: the recording keeps running.
        store.add("nav", .playback, .voicePrompt, [.interruptSpokenAudioAndMixWithOthers])
        let effects = try store.activate(app: "nav")
        #expect(effects.interruptions.isEmpty)
        #expect(effects.streamControl.isEmpty)
        #expect(store.state("logger") == .active)
        #expect(store.sessions["logger"]?.streamsRunning == true)
    }

    struct BackgroundCase: Sendable, CustomTestStringConvertible {
        let options: Set<CategoryOption>
        let othersActive: [String: Set<CategoryOption>]
        let refused: Bool
        var testDescription: String {
            "background \(options.map(\.rawValue).sorted()) with active \(othersActive.keys.sorted()): \(refused ? "refused" : "ok")"
        }
    }

    static let backgroundCases: [BackgroundCase] = [
        .init(options: [], othersActive: ["solo": []], refused: true),
        .init(options: [], othersActive: ["solo": [], "mixer": [.mixWithOthers]], refused: true),
        .init(options: [], othersActive: ["mixer": [.mixWithOthers]], refused: false),
        .init(options: [], othersActive: [:], refused: false),
        .init(options: [.mixWithOthers], othersActive: ["solo": []], refused: false),
        .init(options: [.duckOthers], othersActive: ["solo": []], refused: false),
    ]

    @Test(arguments: backgroundCases)
    func backgroundSessionsCannotInterruptOthers(_ c: BackgroundCase) throws {
        var store = SessionStore.fixture()
        for (app, options) in c.othersActive.sorted(by: { $0.key < $1.key }) {
            store.add(app, .playback, .default, options)
            _ = try store.activate(app: app)
        }
        store.add("bg", .playback, .default, c.options, background: true)
        if c.refused {
            let before = StoreSnapshot(store)
            expectError(.cannotInterruptOthers, mentioning: ["bg", "solo"]) { _ = try store.activate(app: "bg") }
            #expect(StoreSnapshot(store) == before)
        } else {
            let effects = try store.activate(app: "bg")
            #expect(effects.interruptions.isEmpty)
            #expect(store.state("bg") == .active)
            for app in c.othersActive.keys { #expect(store.state(app) == .active) }
        }
    }
}

@Suite("SPEC §3 ducking and spoken audio")
struct DuckingTests {
    @Test func defaultDuckLevelIsMinus14dB() {
        #expect(SessionStore().duckLevelDB == -14)
    }

    @Test(arguments: [-14.0, -20.0, -6.5])
    func duckOthersDucksEveryOtherActiveSession(_ level: Double) throws {
        var store = SessionStore.fixture(duckLevelDB: level)
        store.add("music", .playback)
        store.add("game", .ambient)
        store.add("late", .playback, .default, [.mixWithOthers])
        store.add("nav", .playback, .voicePrompt, [.duckOthers])
        _ = try store.activate(app: "music")
        _ = try store.activate(app: "game")
        let on = try store.activate(app: "nav")
        #expect(on.interruptions.isEmpty)
        #expect(
            unordered(on.ducking)
                == unordered([.ducked(app: "music", by: "nav", levelDB: level), .ducked(app: "game", by: "nav", levelDB: level)]))
        #expect(store.sessions["music"]?.duckedBy == "nav")
        #expect(store.sessions["game"]?.duckedBy == "nav")
        #expect(store.sessions["nav"]?.duckedBy == nil)
        #expect(store.sessions["late"]?.duckedBy == nil)

        // A session activating while the ducker is active is ducked too.
        let late = try store.activate(app: "late")
        #expect(late.ducking == [.ducked(app: "late", by: "nav", levelDB: level)])

        // Full level returns on the ducker's deactivation.
        let off = try store.deactivate(app: "nav", notifyOthers: false, force: false)
        #expect(
            unordered(off.ducking)
                == unordered([.unducked(app: "music"), .unducked(app: "game"), .unducked(app: "late")]))
        for app in ["music", "game", "late", "nav"] { #expect(store.sessions[app]?.duckedBy == nil) }
        #expect(off.interruptions.isEmpty)
    }

    @Test("a session in mode measurement is ducked by name but its playback keeps 0 dB")
    func measurementIsNotDuckGained() throws {
        var store = SessionStore.fixture(duckLevelDB: -14)
        store.add("meter", .playback, .measurement, [.mixWithOthers])
        store.add("music", .playback, .default, [.mixWithOthers])
        store.add("nav", .playback, .voicePrompt, [.duckOthers])
        _ = try store.activate(app: "meter")
        _ = try store.activate(app: "music")
        let on = try store.activate(app: "nav")
        #expect(store.sessions["meter"]?.duckedBy == "nav" && store.sessions["music"]?.duckedBy == "nav")
        #expect(store.duckGainDB(of: "meter") == 0 && store.duckGainDB(of: "music") == -14)
        #expect(on.ducking.contains(.ducked(app: "meter", by: "nav", levelDB: 0)))
        #expect(on.ducking.contains(.ducked(app: "music", by: "nav", levelDB: -14)))
    }

    @Test func deletingTheDuckerUnducks() throws {
        var store = SessionStore.fixture()
        store.add("music", .playback)
        store.add("nav", .playback, .voicePrompt, [.duckOthers])
        _ = try store.activate(app: "music")
        _ = try store.activate(app: "nav")
        let effects = try store.delete(app: "nav")
        #expect(effects.ducking == [.unducked(app: "music")])
        #expect(store.sessions["music"]?.duckedBy == nil)
    }

    @Test(arguments: [false, true])
    func interruptSpokenAudioInterruptsSpokenSessionsAndEndsWithShouldResume(_ notify: Bool) throws {
        var store = SessionStore.fixture()
        store.add("podcast", .playback, .spokenAudio)
        store.add("book", .ambient, .spokenAudio)
        store.add("music", .playback, .default, [.mixWithOthers])
        store.add("nav", .playback, .voicePrompt, [.interruptSpokenAudioAndMixWithOthers])
        for app in ["podcast", "book", "music"] { _ = try store.activate(app: app) }

        let on = try store.activate(app: "nav")
        #expect(unordered(on.interruptions) == unordered([began("podcast"), began("book")]))
        #expect(store.state("podcast") == .interrupted)
        #expect(store.state("book") == .interrupted)
        #expect(store.state("music") == .active)
        #expect(store.state("nav") == .active)

        let off = try store.deactivate(app: "nav", notifyOthers: notify, force: false)
        #expect(
            unordered(off.interruptions)
                == unordered([ended("podcast", shouldResume: true), ended("book", shouldResume: true)]))
        #expect(store.sessions["podcast"]?.interruption == nil)
        #expect(store.sessions["book"]?.interruption == nil)
    }
}

@Suite("SPEC §3 deactivation")
struct DeactivationTests {
    @Test(arguments: [false, true])
    func notifyOthersDecidesShouldResume(_ notify: Bool) throws {
        var store = SessionStore.fixture()
        store.add("music", .playback)
        store.add("call", .playAndRecord, .voiceChat)
        _ = try store.activate(app: "music")
        _ = try store.activate(app: "call")
        let effects = try store.deactivate(app: "call", notifyOthers: notify, force: false)
        #expect(effects.interruptions == [ended("music", shouldResume: notify)])
        #expect(store.state("music") == .inactive)
        #expect(store.state("call") == .inactive)
        #expect(store.sessions["music"]?.interruption == nil)
    }

    @Test(arguments: [false, true])
    func chainedInterruptionsAllEnd(_ notify: Bool) throws {
        var store = SessionStore.fixture()
        store.add("a", .playback)
        store.add("b", .soloAmbient)
        store.add("c", .playAndRecord)
        _ = try store.activate(app: "a")
        #expect(try store.activate(app: "b").interruptions == [began("a")])
        // c interrupts b only: a is already interrupted and gets no second `began`.
        #expect(try store.activate(app: "c").interruptions == [began("b")])
        let effects = try store.deactivate(app: "c", notifyOthers: notify, force: false)
        #expect(
            unordered(effects.interruptions)
                == unordered([ended("a", shouldResume: notify), ended("b", shouldResume: notify)]))
        #expect(store.state("a") == .inactive)
        #expect(store.state("b") == .inactive)
    }

    @Test func isBusyWhileStreamsRunUnlessForced() throws {
        var store = SessionStore.fixture()
        store.add("music", .playback)
        store.add("rec", .record)
        _ = try store.activate(app: "music")
        _ = try store.activate(app: "rec")
        store.setStreamsRunning(app: "rec", true)

        let before = StoreSnapshot(store)
        expectError(.isBusy, mentioning: ["rec"]) { _ = try store.deactivate(app: "rec", notifyOthers: true, force: false) }
        #expect(StoreSnapshot(store) == before)

        let effects = try store.deactivate(app: "rec", notifyOthers: true, force: true)
        #expect(effects.streamControl == [.stopStreams(app: "rec", reason: .stop)])
        #expect(effects.interruptions == [ended("music", shouldResume: true)])
        #expect(store.state("rec") == .inactive)
        #expect(store.sessions["rec"]?.streamsRunning == false)
    }

    @Test func deactivatingWithoutStreamsNeedsNoForce() throws {
        var store = SessionStore.fixture()
        store.add("a")
        _ = try store.activate(app: "a")
        let effects = try store.deactivate(app: "a", notifyOthers: false, force: false)
        #expect(effects.streamControl.isEmpty)
        #expect(store.state("a") == .inactive)
        // Deactivating an inactive session is harmless.
        #expect(try store.deactivate(app: "a", notifyOthers: false, force: false).isEmpty)
    }

    struct AutoResumeCase: Sendable, CustomTestStringConvertible {
        let autoResume: Bool
        let streamsRunning: Bool
        let notify: Bool
        var resumes: Bool { autoResume && streamsRunning && notify }
        var testDescription: String {
            "auto_resume \(autoResume), streams \(streamsRunning ? "running" : "stopped"), notify \(notify)"
        }
    }

    static let autoResumeCases: [AutoResumeCase] = [false, true].flatMap { a in
        [false, true].flatMap { s in [false, true].map { n in AutoResumeCase(autoResume: a, streamsRunning: s, notify: n) } }
    }

    @Test(arguments: autoResumeCases)
    func autoResumeOnlyOnShouldResumeAndOnlyWhatRan(_ c: AutoResumeCase) throws {
        var store = SessionStore.fixture()
        store.add("logger", .playback, autoResume: c.autoResume)
        store.add("call", .playAndRecord, .voiceChat)
        _ = try store.activate(app: "logger")
        store.setStreamsRunning(app: "logger", c.streamsRunning)
        _ = try store.activate(app: "call")
        #expect(store.sessions["logger"]?.streamsRunning == false)

        let effects = try store.deactivate(app: "call", notifyOthers: c.notify, force: false)
        #expect(effects.interruptions.first == ended("logger", shouldResume: c.notify))
        let resumed = effects.contains(.resumeStreams(app: "logger"))
        #expect(resumed == c.resumes)
        #expect(store.sessions["logger"]?.streamsRunning == c.resumes)
        if c.resumes { #expect(store.state("logger") == .active) }
        if !c.autoResume || !c.notify { #expect(store.state("logger") == .inactive) }
    }

    @Test func autoResumeAfterSpokenAudioInterruption() throws {
        var store = SessionStore.fixture()
        store.add("radio", .playback, .spokenAudio, autoResume: true)
        store.add("nav", .playback, .voicePrompt, [.interruptSpokenAudioAndMixWithOthers])
        _ = try store.activate(app: "radio")
        store.setStreamsRunning(app: "radio", true)
        let on = try store.activate(app: "nav")
        #expect(on.streamControl == [.pauseStreams(app: "radio", reason: .interruption)])
        let off = try store.deactivate(app: "nav", notifyOthers: false, force: false)
        #expect(off.interruptions.first == ended("radio", shouldResume: true))
        #expect(off.contains(.resumeStreams(app: "radio")))
        #expect(store.state("radio") == .active)
    }

    @Test func anInterruptedSessionThatGivesUpDoesNotAutoResume() throws {
        var store = SessionStore.fixture()
        store.add("logger", .playback, autoResume: true)
        store.add("call", .playAndRecord)
        _ = try store.activate(app: "logger")
        store.setStreamsRunning(app: "logger", true)
        _ = try store.activate(app: "call")
        _ = try store.deactivate(app: "logger", notifyOthers: false, force: false)
        let effects = try store.deactivate(app: "call", notifyOthers: true, force: false)
        #expect(!effects.contains(.resumeStreams(app: "logger")))
        #expect(store.state("logger") != .active)
    }
}

@Suite("SPEC §3 deletion, §6 media services")
struct LifecycleTests {
    struct AfterDelete: Sendable, CustomTestStringConvertible {
        let name: String
        let call: @Sendable (inout SessionStore) throws -> Void
        var testDescription: String { name }
    }

    static let afterDelete: [AfterDelete] = [
        .init(name: "session") { _ = try $0.session("gone") },
        .init(name: "activate") { _ = try $0.activate(app: "gone") },
        .init(name: "deactivate") { _ = try $0.deactivate(app: "gone", notifyOthers: true, force: true) },
        .init(name: "setPreferences") { _ = try $0.setPreferences(app: "gone", HardwarePreferences()) },
        .init(name: "overrideOutput") { _ = try $0.overrideOutput(app: "gone", speaker: false) },
        .init(name: "setInputMuted") { _ = try $0.setInputMuted(app: "gone", true) },
        .init(name: "setPrefersInterruptionOnRouteDisconnect") {
            _ = try $0.setPrefersInterruptionOnRouteDisconnect(app: "gone", true)
        },
        .init(name: "checkCanRecord") { try $0.checkCanRecord(app: "gone") },
        .init(name: "delete") { _ = try $0.delete(app: "gone") },
    ]

    @Test(arguments: afterDelete)
    func deletedSessionIsExpired(_ op: AfterDelete) throws {
        var store = SessionStore.fixture()
        store.add("gone", .playAndRecord)
        _ = store.setPermission(app: "gone", .granted)
        _ = try store.activate(app: "gone")
        let effects = try store.delete(app: "gone")
        #expect(effects.last == .sessionDeleted(app: "gone"))
        #expect(store.sessions["gone"] == nil)
        let before = StoreSnapshot(store)
        expectError(.expiredSession, mentioning: ["gone"]) { try op.call(&store) }
        #expect(StoreSnapshot(store) == before)
    }

    @Test func deleteStopsStreamsAndReleasesWhatItInterrupted() throws {
        var store = SessionStore.fixture()
        store.add("music", .playback)
        store.add("rec", .record)
        _ = try store.activate(app: "music")
        _ = try store.activate(app: "rec")
        store.setStreamsRunning(app: "rec", true)
        let effects = try store.delete(app: "rec")
        #expect(effects.streamControl == [.stopStreams(app: "rec", reason: .deleted)])
        #expect(effects.interruptions == [ended("music", shouldResume: true)])
        #expect(effects.contains(.sessionDeleted(app: "rec")))
        // Configuring it again creates a fresh session.
        store.add("rec", .record)
        #expect(store.state("rec") == .inactive)
    }

    @Test func mediaServicesLostAndReset() throws {
        var store = SessionStore.fixture()
        store.add("logger", .record, .default, [.mixWithOthers], autoResume: true)
        store.add("player", .playback, .default, [.mixWithOthers])
        store.add("idle", .playback, .default, [.mixWithOthers], autoResume: true)
        for app in ["logger", "player", "idle"] { _ = try store.activate(app: app) }
        store.setStreamsRunning(app: "logger", true)
        store.setStreamsRunning(app: "player", true)

        let lost = store.mediaServicesLost()
        #expect(lost.first == .mediaServicesWereLost)
        #expect(
            unordered(lost.streamControl)
                == unordered([
                    .stopStreams(app: "logger", reason: .mediaServicesLost),
                    .stopStreams(app: "player", reason: .mediaServicesLost),
                ]))
        #expect(store.mediaServicesAvailable == false)
        for app in ["logger", "player", "idle"] { #expect(store.state(app) != .active) }
        #expect(store.mediaServicesLost().isEmpty)

        // Calls fail while the server is gone, and change nothing.
        let before = StoreSnapshot(store)
        expectError(.mediaServicesFailed) { _ = try store.activate(app: "player") }
        #expect(StoreSnapshot(store) == before)

        let reset = store.mediaServicesReset()
        #expect(reset.first == .mediaServicesWereReset)
        #expect(reset.streamControl == [.resumeStreams(app: "logger")])
        #expect(store.state("logger") == .active)
        #expect(store.sessions["logger"]?.streamsRunning == true)
        #expect(store.state("player") == .inactive)
        #expect(store.mediaServicesReset().isEmpty)
        _ = try store.activate(app: "player")
        #expect(store.state("player") == .active)
    }

    /// SPEC §6: "calls fail with mediaServicesFailed" — a recorder cannot start either.
    @Test func recordingCannotStartWhileMediaServicesAreLost() throws {
        var store = SessionStore.fixture()
        store.add("rec", .record)
        _ = store.setPermission(app: "rec", .granted)
        try store.checkCanRecord(app: "rec")
        _ = store.mediaServicesLost()
        expectError(.mediaServicesFailed) { try store.checkCanRecord(app: "rec") }
    }
}

@Suite("SPEC §4, §8 hardware and app input mute")
struct MuteTests {
    @Test func hardwareMuteInterruptsUnlessOverridden() throws {
        var store = SessionStore.fixture(ports: Ports.builtIn + [Ports.usbIn()])
        store.add("plain", .record, .default, [.mixWithOthers])
        store.add("override", .playAndRecord, .default, [.mixWithOthers, .overrideMutedMicrophoneInterruption])
        store.add("usb", .record, .default, [.mixWithOthers])
        store.add("inactive", .record, .default, [.mixWithOthers])
        store.add("player", .playback, .default, [.mixWithOthers])
        for app in ["plain", "override", "inactive"] {
            _ = try store.setPreferences(app: app, HardwarePreferences(preferredInput: "mic"))
        }
        for app in ["plain", "override", "usb", "player"] { _ = try store.activate(app: app) }
        store.setStreamsRunning(app: "plain", true)
        #expect(store.sessions["plain"]?.route.inputs == ["mic"])
        #expect(store.sessions["override"]?.route.inputs == ["mic"])
        #expect(store.sessions["usb"]?.route.inputs == ["usbIn"])

        let effects = store.setHardwareMuted(port: "mic", true)
        #expect(effects.interruptions == [began("plain", .builtInMicMuted)])
        #expect(effects.streamControl == [.pauseStreams(app: "plain", reason: .interruption)])
        #expect(store.state("plain") == .interrupted)
        #expect(store.sessions["plain"]?.interruption?.reason == .builtInMicMuted)
        #expect(store.state("override") == .active)
        #expect(store.state("usb") == .active)
        #expect(store.state("player") == .active)
        #expect(store.state("inactive") == .inactive)
        #expect(store.mutedPorts == ["mic"])
        #expect(store.setHardwareMuted(port: "mic", true).isEmpty)

        let unmuted = store.setHardwareMuted(port: "mic", false)
        #expect(store.mutedPorts.isEmpty)
        #expect(unmuted.interruptions.allSatisfy { $0 == ended("plain", shouldResume: true, .builtInMicMuted) })
    }

    struct InputMuteCase: Sendable, CustomTestStringConvertible {
        let category: Category
        let active: Bool
        var announced: Bool { active && category.hasInput }
        var testDescription: String { "\(category) \(active ? "active" : "inactive")" }
    }

    static let inputMuteCases: [InputMuteCase] = Category.allCases.flatMap {
        [InputMuteCase(category: $0, active: false), InputMuteCase(category: $0, active: true)]
    }

    @Test(arguments: inputMuteCases)
    func appInputMute(_ c: InputMuteCase) throws {
        var store = SessionStore.fixture()
        store.add("app", c.category)
        if c.active { _ = try store.activate(app: "app") }
        let on = try store.setInputMuted(app: "app", true)
        #expect(store.sessions["app"]?.inputMuted == true)
        #expect(on.contains(.inputMuteStateChange(app: "app", muted: true)) == c.announced)
        #expect(on.filter { if case .inputMuteStateChange = $0 { true } else { false } }.count == (c.announced ? 1 : 0))
        // No change, no event.
        #expect(!(try store.setInputMuted(app: "app", true)).contains(.inputMuteStateChange(app: "app", muted: true)))
        let off = try store.setInputMuted(app: "app", false)
        #expect(store.sessions["app"]?.inputMuted == false)
        #expect(off.contains(.inputMuteStateChange(app: "app", muted: false)) == c.announced)
    }

    @Test func muteStoredWhileInactiveSurvivesActivation() throws {
        var store = SessionStore.fixture()
        store.add("app", .record)
        _ = try store.setInputMuted(app: "app", true)
        _ = try store.activate(app: "app")
        #expect(store.sessions["app"]?.inputMuted == true)
        // An interrupted input session is not active: no event.
        store.add("other", .record)
        _ = try store.activate(app: "other")
        #expect(store.state("app") == .interrupted)
        let effects = try store.setInputMuted(app: "app", false)
        #expect(!effects.contains(.inputMuteStateChange(app: "app", muted: false)))
    }
}

/// SPEC §1: "A rejected call changes nothing." One row per way a store call can be refused.
struct RejectedStoreCall: Sendable, CustomTestStringConvertible {
    let name: String
    let code: ErrorCode
    let setup: @Sendable (inout SessionStore) throws -> Void
    let call: @Sendable (inout SessionStore) throws -> Void
    var testDescription: String { "\(name) → \(code.name)" }

    static func prefs(
        _ name: String, _ prefs: HardwarePreferences, in category: Category = .playAndRecord, code: ErrorCode = .badParam
    ) -> RejectedStoreCall {
        RejectedStoreCall(name: name, code: code) { store in
            store.add("app", category)
            _ = try store.setPreferences(app: "app", HardwarePreferences(sampleRate: 48000, ioBufferDuration: 0.005))
            _ = try store.activate(app: "app")
        } call: { store in
            _ = try store.setPreferences(app: "app", prefs)
        }
    }
}

@Suite("SPEC §1: a rejected call changes nothing")
struct RejectedCallTests {
    static let calls: [RejectedStoreCall] = [
        .prefs("sample rate NaN", HardwarePreferences(sampleRate: .nan)),
        .prefs("sample rate 0", HardwarePreferences(sampleRate: 0)),
        .prefs("sample rate negative", HardwarePreferences(sampleRate: -48000)),
        .prefs("sample rate infinite", HardwarePreferences(sampleRate: .infinity)),
        .prefs("sample rate 1 GHz", HardwarePreferences(sampleRate: 1e9)),
        .prefs("IO buffer NaN", HardwarePreferences(ioBufferDuration: .nan)),
        .prefs("IO buffer 0", HardwarePreferences(ioBufferDuration: 0)),
        .prefs("IO buffer negative", HardwarePreferences(ioBufferDuration: -0.01)),
        .prefs("IO buffer 100 s", HardwarePreferences(ioBufferDuration: 100)),
        .prefs("input channels 0", HardwarePreferences(inputChannels: 0)),
        .prefs("input channels 99", HardwarePreferences(inputChannels: 99)),
        .prefs("output channels -1", HardwarePreferences(outputChannels: -1)),
        .prefs("output channels 99", HardwarePreferences(outputChannels: 99)),
        .prefs("good rate, bad channels", HardwarePreferences(sampleRate: 44100, inputChannels: 0)),
        .prefs("unknown preferred input", HardwarePreferences(preferredInput: "nope")),
        .prefs(
            "preferred input in playback", HardwarePreferences(preferredInput: "mic"), in: .playback,
            code: .incompatibleCategory),
        .prefs("input channels in ambient", HardwarePreferences(inputChannels: 1), in: .ambient, code: .incompatibleCategory),
        RejectedStoreCall(name: "activate below a call priority", code: .insufficientPriority) { store in
            store.add("call", .playAndRecord, .voiceChat, priority: .call)
            _ = try store.activate(app: "call")
            store.add("app", .playback)
        } call: { _ = try $0.activate(app: "app") },
        RejectedStoreCall(name: "background activation that would interrupt", code: .cannotInterruptOthers) { store in
            store.add("music", .playback)
            _ = try store.activate(app: "music")
            store.add("app", .soloAmbient, background: true)
        } call: { _ = try $0.activate(app: "app") },
        RejectedStoreCall(name: "activate input without mic usage", code: .missingEntitlement) { store in
            store.add("music", .playback)
            _ = try store.activate(app: "music")
            store.add("app", .record, micUsage: nil)
        } call: { _ = try $0.activate(app: "app") },
        RejectedStoreCall(name: "deactivate with running streams", code: .isBusy) { store in
            store.add("music", .playback)
            _ = try store.activate(app: "music")
            store.add("app", .record)
            _ = try store.activate(app: "app")
            store.setStreamsRunning(app: "app", true)
        } call: { _ = try $0.deactivate(app: "app", notifyOthers: true, force: false) },
        RejectedStoreCall(name: "speaker override in playback", code: .incompatibleCategory) { store in
            store.add("app", .playback)
        } call: { _ = try $0.overrideOutput(app: "app", speaker: true) },
        RejectedStoreCall(name: "activate while media services are lost", code: .mediaServicesFailed) { store in
            store.add("app", .playback)
            _ = store.mediaServicesLost()
        } call: { _ = try $0.activate(app: "app") },
    ]

    @Test(arguments: calls)
    func rejectedCallChangesNothing(_ c: RejectedStoreCall) throws {
        var store = SessionStore.fixture(ports: Ports.builtIn + [Ports.headphones(order: 0, available: false)])
        try c.setup(&store)
        let before = StoreSnapshot(store)
        expectError(c.code) { try c.call(&store) }
        #expect(StoreSnapshot(store) == before)
    }
}

// SPEC §13 with §3: a change made while a session is active takes effect at
// once and goes through the same arbitration as activation. A refused change changes nothing
// (the whole store compares equal); streams the new category cannot carry stop.

import Testing

@testable import SessionPolicy

@Suite("SPEC §13: session.set on an active session is arbitrated like an activation")
struct ActiveChangeTests {
    /// Expects `code` from `body` and the whole store (private bookkeeping included) unchanged.
    func expectRefused(
        _ code: ErrorCode, mentioning words: [String] = [], _ store: inout SessionStore,
        sourceLocation: SourceLocation = #_sourceLocation, _ body: (inout SessionStore) throws -> Void
    ) {
        let before = store
        expectError(code, mentioning: words, sourceLocation: sourceLocation) { try body(&store) }
        #expect(store == before, "a refused change must change nothing", sourceLocation: sourceLocation)
    }

    @Test("an active ambient session changed to playback interrupts the other active non-mixable session")
    func ambientToPlaybackInterrupts() throws {
        var store = SessionStore.fixture()
        store.add("music", .playback)
        store.add("game", .ambient)
        _ = try store.activate(app: "music")
        _ = try store.activate(app: "game")
        store.setStreamsRunning(app: "music", true)
        let effects = try store.configure(app: "game", ownerUID: testUID, configuration: config(.playback))
        #expect(effects.interruptions == [began("music")])
        #expect(effects.streamControl == [.pauseStreams(app: "music", reason: .interruption)])
        #expect(store.state("music") == .interrupted)
        #expect(store.sessions["music"]?.interruption?.cause == .nonMixable(by: "game"))
        #expect(store.state("game") == .active)
        #expect(store.sessions["game"]?.configuration.category == .playback)
        // When game deactivates with notifyOthers, music gets its `ended` with shouldResume.
        let ended = try store.deactivate(app: "game", notifyOthers: true, force: false)
        #expect(ended.interruptions == [SessionPolicyTests.ended("music", shouldResume: true)])
    }

    @Test("beside an active call-priority session the change fails with insufficientPriority and changes nothing")
    func besideACallFails() throws {
        var store = SessionStore.fixture()
        store.add("phone", .playAndRecord, .voiceChat, priority: .call)
        store.add("game", .ambient)
        _ = try store.activate(app: "phone")
        _ = try store.activate(app: "game")
        store.setStreamsRunning(app: "game", true)
        expectRefused(.insufficientPriority, mentioning: ["phone", "game"], &store) {
            _ = try $0.configure(
                app: "game", ownerUID: testUID, configuration: config(.playback), micUsage: .some("new"))
        }
        #expect(store.sessions["game"]?.configuration.category == .ambient)
        #expect(
            store.sessions["game"]?.micUsage == "records the room", "the refused call's mic usage is not kept either")
        // A mixable change beside the call is fine.
        let effects = try store.configure(
            app: "game", ownerUID: testUID, configuration: config(.playback, .default, [.mixWithOthers]))
        #expect(effects.interruptions.isEmpty)
        #expect(store.state("phone") == .active)
    }

    @Test("a background session made non-mixable while others play fails with cannotInterruptOthers")
    func backgroundCannotInterrupt() throws {
        var store = SessionStore.fixture()
        store.add("music", .playback)
        store.add("radio", .playback, .default, [.mixWithOthers], background: true)
        _ = try store.activate(app: "music")
        _ = try store.activate(app: "radio")
        expectRefused(.cannotInterruptOthers, mentioning: ["radio", "music"], &store) {
            _ = try $0.configure(app: "radio", ownerUID: testUID, configuration: config(.playback))
        }
        // With no other non-mixable session active it may.
        _ = try store.deactivate(app: "music", notifyOthers: false, force: false)
        let effects = try store.configure(app: "radio", ownerUID: testUID, configuration: config(.playback))
        #expect(effects.interruptions.isEmpty)
        #expect(store.state("radio") == .active && store.sessions["radio"]?.isMixable == false)
    }

    @Test("missingEntitlement when the change makes an active session input-capable without a mic usage text")
    func missingEntitlementOnInputCategory() throws {
        var store = SessionStore.fixture()
        store.add("app", .playback, micUsage: nil)
        _ = try store.activate(app: "app")
        for category in [Category.record, .playAndRecord, .multiRoute] {
            expectRefused(.missingEntitlement, mentioning: ["app", "--mic-usage"], &store) {
                _ = try $0.configure(app: "app", ownerUID: testUID, configuration: config(category))
            }
        }
        // Clearing the description of an active input session is refused the same way.
        _ = try store.configure(
            app: "app", ownerUID: testUID, configuration: config(.playAndRecord), micUsage: .some("talks"))
        expectRefused(.missingEntitlement, &store) {
            _ = try $0.configure(app: "app", ownerUID: testUID, configuration: config(.record), micUsage: .some(nil))
        }
        // An inactive session is configured as before: activation checks it later.
        var idle = SessionStore.fixture()
        idle.add("app", .playback, micUsage: nil)
        _ = try idle.configure(app: "app", ownerUID: testUID, configuration: config(.record))
        #expect(idle.sessions["app"]?.configuration.category == .record)
    }

    @Test("an input session active only to play (no mic usage) may still change mode: the call makes nothing worse")
    func outputOnlyActivationKeeps() throws {
        var store = SessionStore.fixture()
        store.add("app", .playAndRecord, micUsage: nil)
        _ = try store.activate(app: "app", forInput: false)
        _ = try store.configure(app: "app", ownerUID: testUID, configuration: config(.playAndRecord, .spokenAudio))
        #expect(store.sessions["app"]?.configuration.mode == .spokenAudio)
        #expect(store.state("app") == .active)
    }

    struct CategoryPair: Sendable, CustomTestStringConvertible {
        let from: Category
        let to: Category
        let stopsPlayers: Bool
        let stopsRecorders: Bool
        var testDescription: String { "\(from) → \(to)" }

        /// Input and output columns of SPEC §1's category table: a stream stops exactly when the
        /// new category lacks the direction the old one had.
        static let all: [CategoryPair] = {
            let rows = Spec.rows(Spec.categoryTable).dropFirst().map {
                (Category(rawValue: $0[0])!, input: $0[1] == "yes", output: $0[2].hasPrefix("yes"))
            }
            return rows.flatMap { from in
                rows.map { to in
                    CategoryPair(
                        from: from.0, to: to.0, stopsPlayers: from.output && !to.output,
                        stopsRecorders: from.input && !to.input)
                }
            }
        }()
    }

    /// Players stop under record; recorders under playback, ambient and soloAmbient. In every
    /// state: a paused player or suspended recorder would otherwise come back under the new
    /// category (resumption after an interruption).
    @Test(arguments: CategoryPair.all)
    func streamsTheNewCategoryCannotCarryStop(_ pair: CategoryPair) throws {
        for state in ActivationState.allCases {
            // ambient is mixable: no other session's activation interrupts it.
            if state == .interrupted && pair.from == .ambient { continue }
            var store = SessionStore.fixture()
            store.add("app", pair.from)
            store.add("other", .playback)
            _ = try store.activate(app: "app", forInput: false)
            store.setStreamsRunning(app: "app", true)
            if state == .interrupted { _ = try store.activate(app: "other") }
            if state == .inactive { _ = try store.deactivate(app: "app", notifyOthers: false, force: true) }
            try #require(store.state("app") == state)
            let effects = try store.configure(app: "app", ownerUID: testUID, configuration: config(pair.to))
            var expected: [PolicyEffect] = []
            if pair.stopsPlayers { expected.append(.stopPlayers(app: "app", reason: .categoryChange)) }
            if pair.stopsRecorders { expected.append(.stopRecorders(app: "app", reason: .categoryChange)) }
            #expect(effects.streamControl == expected, "\(state)")
            #expect(store.state("app") == state, "a change never activates nor deactivates")
        }
    }

    @Test("a new session has no streams to stop")
    func newSessionStopsNothing() throws {
        var store = SessionStore.fixture()
        let effects = try store.configure(app: "new", ownerUID: testUID, configuration: config(.record))
        #expect(effects.streamControl.isEmpty)
    }

    @Test("on an inactive or interrupted session the change is not arbitrated (as before)")
    func notArbitratedWhenNotActive() throws {
        var store = SessionStore.fixture()
        store.add("phone", .playAndRecord, priority: .call)
        store.add("idle", .ambient)
        _ = try store.activate(app: "phone")
        let effects = try store.configure(app: "idle", ownerUID: testUID, configuration: config(.playback))
        #expect(effects.interruptions.isEmpty)
        #expect(store.state("phone") == .active && store.state("idle") == .inactive)
        // Interrupted by the call: reconfigured without arbitration, still interrupted.
        store.add("music", .playback)
        _ = try store.deactivate(app: "phone", notifyOthers: false, force: false)
        _ = try store.activate(app: "music")
        _ = try store.activate(app: "phone")
        try #require(store.state("music") == .interrupted)
        let change = try store.configure(app: "music", ownerUID: testUID, configuration: config(.soloAmbient))
        #expect(change.interruptions.isEmpty)
        #expect(store.state("music") == .interrupted && store.state("phone") == .active)
    }

    @Test("changing to the same configuration while active changes nothing but persistence")
    func sameConfiguration() throws {
        var store = SessionStore.fixture()
        store.add("a", .playback)
        store.add("b", .ambient)
        _ = try store.activate(app: "a")
        _ = try store.activate(app: "b")
        let before = store
        let effects = try store.configure(app: "a", ownerUID: testUID, configuration: config(.playback))
        #expect(effects == [.sessionChanged(app: "a")])
        #expect(store == before)
    }

    @Test("a change to duckOthers while active ducks the others at once; dropping it unducks them")
    func duckingFollowsTheChange() throws {
        var store = SessionStore.fixture()
        store.add("music", .playback)
        store.add("nav", .playback, .voicePrompt, [.mixWithOthers])
        _ = try store.activate(app: "music")
        _ = try store.activate(app: "nav")
        let duck = try store.configure(
            app: "nav", ownerUID: testUID, configuration: config(.playback, .voicePrompt, [.duckOthers]))
        #expect(duck.ducking == [.ducked(app: "music", by: "nav", levelDB: -14)])
        let unduck = try store.configure(
            app: "nav", ownerUID: testUID, configuration: config(.playback, .voicePrompt, [.mixWithOthers]))
        #expect(unduck.ducking == [.unducked(app: "music")])
    }

    @Test("a change to interruptSpokenAudioAndMixWithOthers while active interrupts spoken audio")
    func spokenAudioInterrupted() throws {
        var store = SessionStore.fixture()
        store.add("book", .playback, .spokenAudio)
        store.add("nav", .playback, .voicePrompt, [.mixWithOthers])
        _ = try store.activate(app: "book")
        _ = try store.activate(app: "nav")
        let effects = try store.configure(
            app: "nav", ownerUID: testUID,
            configuration: config(.playback, .voicePrompt, [.interruptSpokenAudioAndMixWithOthers]))
        #expect(effects.interruptions == [began("book")])
        #expect(store.sessions["book"]?.interruption?.cause == .spokenAudio(by: "nav"))
    }

    /// "Exactly as activate would": for every configuration of the activation table, changing
    /// an active mixable session to it gives the same interruptions, states and ducking as
    /// activating a session configured so from the start.
    @Test(arguments: ActivationTests.InterruptCase.all)
    func sameVerdictAsActivation(_ c: ActivationTests.InterruptCase) throws {
        func scene() throws -> SessionStore {
            var store = SessionStore.fixture()
            store.add("incumbent", .playback)
            store.add("book", .playback, .spokenAudio, [.mixWithOthers])
            _ = try store.activate(app: "incumbent")
            _ = try store.activate(app: "book")
            return store
        }
        var activated = try scene()
        activated.add("newcomer", c.category, c.mode, c.options)
        let byActivation = try activated.activate(app: "newcomer")
        var changed = try scene()
        changed.add("newcomer", .ambient)
        _ = try changed.activate(app: "newcomer")
        let byChange = try changed.configure(
            app: "newcomer", ownerUID: testUID, configuration: config(c.category, c.mode, c.options))
        #expect(byChange.interruptions == byActivation.interruptions)
        #expect(byChange.ducking.filter { $0 != .unducked(app: "newcomer") } == byActivation.ducking)
        for app in ["incumbent", "book", "newcomer"] {
            #expect(changed.sessions[app]?.state == activated.sessions[app]?.state, "\(app)")
            #expect(changed.sessions[app]?.interruption == activated.sessions[app]?.interruption, "\(app)")
            #expect(changed.sessions[app]?.duckedBy == activated.sessions[app]?.duckedBy, "\(app)")
        }
    }
}

// SPEC §4 in the store: route change events, the privacy rule, the speaker override,
// categoryChange and noSuitableRouteForCategory.

import Testing

@testable import SessionPolicy

@Suite("SPEC §4 route changes in the store")
struct StoreRouteTests {
    static let withPhones = Ports.builtIn + [Ports.headphones(order: 3)]
    static let phonesGone = Ports.builtIn + [Ports.headphones(order: 3, available: false)]

    @Test func plugAndUnplugCarryReasonAndPreviousRoute() throws {
        var store = SessionStore.fixture()
        store.add("player", .playback)
        store.add("rec", .record)
        _ = try store.activate(app: "player")
        #expect(store.sessions["player"]?.route == Route(outputs: ["spk"]))
        #expect(store.sessions["rec"]?.route == Route(inputs: ["mic"]))

        let plug = store.updatePorts(Self.withPhones)
        #expect(
            plug.routeChanges == [
                .routeChange(
                    app: "player", reason: .newDeviceAvailable, previous: Route(outputs: ["spk"]),
                    current: Route(outputs: ["phones"]))
            ])
        #expect(store.sessions["player"]?.route == Route(outputs: ["phones"]))

        let unplug = store.updatePorts(Self.phonesGone)
        #expect(
            unplug.routeChanges == [
                .routeChange(
                    app: "player", reason: .oldDeviceUnavailable, previous: Route(outputs: ["phones"]),
                    current: Route(outputs: ["spk"]))
            ])
        #expect(store.sessions["player"]?.route == Route(outputs: ["spk"]))
    }

    @Test func inputArrivalIsNewDeviceAvailable() throws {
        var store = SessionStore.fixture()
        store.add("rec", .record)
        let effects = store.updatePorts(Ports.builtIn + [Ports.usbIn(order: 2)])
        #expect(
            effects.routeChanges == [
                .routeChange(
                    app: "rec", reason: .newDeviceAvailable, previous: Route(inputs: ["mic"]), current: Route(inputs: ["usbIn"]))
            ])
    }

    @Test func unchangedAvailabilityChangesNoRoute() throws {
        var store = SessionStore.fixture(ports: Self.withPhones)
        store.add("player", .playback)
        _ = try store.activate(app: "player")
        #expect(store.updatePorts(Self.withPhones).routeChanges.isEmpty)
    }

    struct PrivacyCase: Sendable, CustomTestStringConvertible {
        let streamsRunning: Bool
        let prefersInterruption: Bool
        var testDescription: String {
            "streams \(streamsRunning ? "running" : "stopped"), prefersInterruptionOnRouteDisconnect \(prefersInterruption)"
        }
        var expected: [PolicyEffect] {
            switch (streamsRunning, prefersInterruption) {
            case (false, false): []
            case (true, false): [.pausePlayers(app: "player")]
            case (false, true): [began("player", .routeDisconnected)]
            case (true, true): [began("player", .routeDisconnected), .pauseStreams(app: "player", reason: .interruption)]
            }
        }
    }

    static let privacyCases = [false, true].flatMap { s in
        [false, true].map { p in PrivacyCase(streamsRunning: s, prefersInterruption: p) }
    }

    @Test(arguments: privacyCases)
    func privacyWhenTheOutputDisappears(_ c: PrivacyCase) throws {
        var store = SessionStore.fixture(ports: Self.withPhones)
        store.add("player", .playback)
        _ = try store.setPrefersInterruptionOnRouteDisconnect(app: "player", c.prefersInterruption)
        _ = try store.activate(app: "player")
        store.setStreamsRunning(app: "player", c.streamsRunning)
        // Bystanders: an inactive session on the same output, an active one on another port.
        store.add("idle", .playback, .default, [.mixWithOthers])
        store.add("rec", .record, .default, [.mixWithOthers])
        _ = try store.activate(app: "rec")
        store.setStreamsRunning(app: "rec", true)

        let effects = store.updatePorts(Self.phonesGone)
        #expect(unordered(effects.interruptions + effects.streamControl) == unordered(c.expected))
        #expect(store.state("player") == (c.prefersInterruption ? .interrupted : .active))
        if c.prefersInterruption {
            #expect(store.sessions["player"]?.interruption?.reason == .routeDisconnected)
        }
        #expect(effects.routeChanges.contains { $0 == .routeChange(
            app: "player", reason: .oldDeviceUnavailable, previous: Route(outputs: ["phones"]), current: Route(outputs: ["spk"])) })
        #expect(store.state("rec") == .active)
        #expect(store.sessions["rec"]?.streamsRunning == true)
    }

    @Test func speakerOverrideLastsUntilTheNextRouteChange() throws {
        var store = SessionStore.fixture()
        store.add("call", .playAndRecord)
        let handset = Route(inputs: ["mic"], outputs: ["rcv"])
        let speaker = Route(inputs: ["mic"], outputs: ["spk"])
        #expect(store.sessions["call"]?.route == handset)

        let on = try store.overrideOutput(app: "call", speaker: true)
        #expect(on.routeChanges == [.routeChange(app: "call", reason: .override, previous: handset, current: speaker)])
        #expect(store.sessions["call"]?.overrideSpeaker == true)

        let off = try store.overrideOutput(app: "call", speaker: false)
        #expect(off.routeChanges == [.routeChange(app: "call", reason: .override, previous: speaker, current: handset)])
        _ = try store.overrideOutput(app: "call", speaker: true)

        // The next route change (a USB mic arrives) clears it.
        let effects = store.updatePorts(Ports.builtIn + [Ports.usbIn(order: 2)])
        #expect(store.sessions["call"]?.overrideSpeaker == false)
        let after = Route(inputs: ["usbIn"], outputs: ["rcv"])
        #expect(store.sessions["call"]?.route == after)
        #expect(effects.routeChanges == [.routeChange(app: "call", reason: .newDeviceAvailable, previous: speaker, current: after)])
    }

    /// The override "lasts until the next route change": a category change that moves the
    /// route is a route change, so going back to playAndRecord must not bring the speaker back.
    @Test func speakerOverrideDoesNotSurviveACategoryChange() throws {
        var store = SessionStore.fixture()
        store.add("call", .playAndRecord)
        _ = try store.overrideOutput(app: "call", speaker: true)
        let toPlayback = store.add("call", .playback)
        #expect(toPlayback.routeChanges.count == 1)
        store.add("call", .playAndRecord)
        #expect(store.sessions["call"]?.route == Route(inputs: ["mic"], outputs: ["rcv"]))
    }

    @Test func speakerOverrideNeedsPlayAndRecordAndASpeaker() throws {
        for category in Category.allCases where category != .playAndRecord {
            var store = SessionStore.fixture()
            store.add("app", category)
            expectError(.incompatibleCategory, mentioning: ["playAndRecord"]) {
                _ = try store.overrideOutput(app: "app", speaker: true)
            }
        }
        var store = SessionStore.fixture(ports: [Ports.mic, Ports.receiver])
        store.add("call", .playAndRecord)
        expectError(.resourceNotAvailable) { _ = try store.overrideOutput(app: "call", speaker: true) }
    }

    @Test func configureReroutesWithCategoryChange() throws {
        var store = SessionStore.fixture()
        store.add("app", .playback)
        let effects = store.add("app", .playAndRecord)
        #expect(effects.contains(.sessionChanged(app: "app")))
        #expect(
            effects.routeChanges == [
                .routeChange(
                    app: "app", reason: .categoryChange, previous: Route(outputs: ["spk"]),
                    current: Route(inputs: ["mic"], outputs: ["rcv"]))
            ])
        let speaker = store.add("app", .playAndRecord, .default, [.defaultToSpeaker])
        #expect(
            speaker.routeChanges == [
                .routeChange(
                    app: "app", reason: .categoryChange, previous: Route(inputs: ["mic"], outputs: ["rcv"]),
                    current: Route(inputs: ["mic"], outputs: ["spk"]))
            ])
    }

    /// Route choice is recomputed on every change, including for a brand-new session whose
    /// requested configuration happens to equal the initial one (soloAmbient/default).
    @Test func newSessionWithTheInitialConfigurationGetsARoute() throws {
        var store = SessionStore.fixture()
        store.add("solo", .soloAmbient)
        #expect(store.sessions["solo"]?.route == Route(outputs: ["spk"]))
        store.add("player", .playback)
        #expect(store.sessions["player"]?.route == Route(outputs: ["spk"]))
    }

    @Test func insertedSessionsGetARoute() {
        var store = SessionStore.fixture()
        var session = Session(app: "declared", ownerUID: 0)
        session.declaredInConfig = true
        store.insert(session, configuration: config(.record), inputMuted: true)
        #expect(store.sessions["declared"]?.route == Route(inputs: ["mic"]))
        #expect(store.sessions["declared"]?.inputMuted == true)
        #expect(store.state("declared") == .inactive)
    }

    /// Four loggers, each declared with its own feed (`record = feedN`), the feeds connected in
    /// order: each route shows the feed its recorder records, not the most recent one; a feed
    /// that goes leaves its logger with no input (and comes back to it); a preferred input does
    /// not move it.
    @Test func declaredRecordersRouteShowsTheirOwnInput() throws {
        let feeds = (1...4).map { PortState(name: "feed\($0)", type: .lineIn, direction: .input, connectedOrder: $0) }
        var store = SessionStore.fixture(ports: feeds)
        for number in 1...4 {
            var session = Session(app: "log\(number)", ownerUID: 0)
            session.declaredInConfig = true
            session.declaredInput = "feed\(number)"
            store.insert(session, configuration: config(.record))
        }
        // An undeclared recorder beside them takes the most recent feed, as before.
        store.add("other", .record)
        #expect((1...4).map { store.sessions["log\($0)"]?.route } == (1...4).map { Route(inputs: ["feed\($0)"]) })
        #expect(store.sessions["other"]?.route == Route(inputs: ["feed4"]))

        var gone = feeds
        gone[1].available = false
        let lost = store.updatePorts(gone)
        #expect(
            lost.routeChanges == [
                .routeChange(
                    app: "log2", reason: .noSuitableRouteForCategory, previous: Route(inputs: ["feed2"]),
                    current: Route())
            ])
        let back = store.updatePorts(feeds)
        #expect(back.routeChanges.count == 1 && store.sessions["log2"]?.route == Route(inputs: ["feed2"]))

        _ = try store.setPreferences(app: "log2", HardwarePreferences(preferredInput: "feed3"))
        #expect(store.sessions["log2"]?.route == Route(inputs: ["feed2"]))
    }

    struct NoRouteCase: Sendable, CustomTestStringConvertible {
        let category: Category
        let ports: [PortState]
        var testDescription: String { "\(category) with \(ports.map(\.name))" }
    }

    static let noRouteCases: [NoRouteCase] = [
        .init(category: .playback, ports: [Ports.mic]),
        .init(category: .ambient, ports: [Ports.mic, Ports.receiver]),
        .init(category: .playAndRecord, ports: [Ports.mic]),
        .init(category: .multiRoute, ports: [Ports.mic]),
        .init(category: .record, ports: [Ports.speaker]),
    ]

    @Test(arguments: noRouteCases)
    func noSuitableRouteForCategory(_ c: NoRouteCase) throws {
        var store = SessionStore.fixture(ports: c.ports)
        let effects = store.add("app", c.category)
        #expect(effects.routeChanges.count == 1)
        guard case .routeChange(let app, let reason, _, _) = effects.routeChanges.first else { return }
        #expect(app == "app")
        #expect(reason == .noSuitableRouteForCategory)
    }

    @Test func losingTheOnlyOutputIsNoSuitableRoute() throws {
        let lineOut = port("lineOut", .lineOut, .output, order: 1)
        var store = SessionStore.fixture(ports: [Ports.mic, lineOut])
        store.add("player", .playback)
        _ = try store.activate(app: "player")
        var gone = lineOut
        gone.available = false
        let effects = store.updatePorts([Ports.mic, gone])
        #expect(
            effects.routeChanges == [
                .routeChange(
                    app: "player", reason: .noSuitableRouteForCategory, previous: Route(outputs: ["lineOut"]),
                    current: Route())
            ])
    }

    @Test func preferredInputReroutes() throws {
        var store = SessionStore.fixture(ports: Ports.builtIn + [Ports.usbIn(order: 2)])
        store.add("rec", .record)
        #expect(store.sessions["rec"]?.route == Route(inputs: ["usbIn"]))
        let effects = try store.setPreferences(app: "rec", HardwarePreferences(preferredInput: "mic"))
        #expect(effects.contains(.sessionChanged(app: "rec")))
        #expect(effects.routeChanges.count == 1)
        #expect(store.sessions["rec"]?.route == Route(inputs: ["mic"]))
        #expect(store.sessions["rec"]?.preferences.preferredInput == "mic")
        // An unavailable preferred input is kept, and the route falls back until it returns.
        _ = try store.setPreferences(app: "rec", HardwarePreferences(preferredInput: "usbIn"))
        _ = store.updatePorts(Ports.builtIn + [Ports.usbIn(order: 2, available: false)])
        #expect(store.sessions["rec"]?.route == Route(inputs: ["mic"]))
        _ = store.updatePorts(Ports.builtIn + [Ports.usbIn(order: 3)])
        #expect(store.sessions["rec"]?.route == Route(inputs: ["usbIn"]))
    }

    /// Another JACK client changed the buffer size (or the rate changed): one row per session
    /// state, whether it hears routeConfigurationChange (route unchanged, previous == current).
    static let configurationChangeRows: [(state: String, hears: Bool)] = [
        ("active", true), ("inactive", false), ("interrupted", false),
    ]

    @Test func serverConfigurationChangeReachesActiveSessionsOnly() throws {
        var store = SessionStore.fixture(ports: Self.withPhones)
        store.add("interrupted", .playback, .default, [])
        store.add("inactive", .record, .default, [.mixWithOthers])
        store.add("active", .playback, .default, [])
        _ = try store.activate(app: "interrupted")
        _ = try store.activate(app: "active")
        let effects = store.routeConfigurationChanged()
        for row in Self.configurationChangeRows {
            #expect(store.state(row.state)?.rawValue == row.state, "fixture: \(row.state)")
            let route = try #require(store.sessions[row.state]?.route)
            let heard = effects.contains(
                .routeChange(app: row.state, reason: .routeConfigurationChange, previous: route, current: route))
            #expect(heard == row.hears, "\(row.state)")
        }
        #expect(effects.count == Self.configurationChangeRows.filter(\.hears).count, "\(effects)")
    }
}


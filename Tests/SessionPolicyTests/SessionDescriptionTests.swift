// What a session reports of others and of its ports: isOtherAudioPlaying,
// secondaryAudioShouldBeSilencedHint and its silenceSecondaryAudioHint effects, availableInputs,
// the maximum channel counts of a route, and preferred channel counts as channels used.

import Testing

@testable import SessionPolicy

extension Array where Element == PolicyEffect {
    var hints: [PolicyEffect] {
        filter { if case .silenceSecondaryAudioHint = $0 { true } else { false } }
    }
}

func begin(_ app: String) -> PolicyEffect { .silenceSecondaryAudioHint(app: app, begin: true) }
func end(_ app: String) -> PolicyEffect { .silenceSecondaryAudioHint(app: app, begin: false) }

@Suite("isOtherAudioPlaying and the secondary audio hint")
struct SecondaryAudioHintTests {
    /// music (playback: primary audio), game (ambient: mixable) and radio (playback: primary).
    func store() throws -> SessionStore {
        var store = SessionStore.fixture()
        store.add("music", .playback)
        store.add("game", .ambient)
        store.add("radio", .playback)
        _ = try store.activate(app: "music")
        _ = try store.activate(app: "game")
        return store
    }

    @Test func otherSessionsPlayersDecideIsOtherAudioPlaying() throws {
        var store = try store()
        for app in ["music", "game", "radio"] { #expect(!store.isOtherAudioPlaying(app: app)) }
        _ = store.setPlayersRunning(["game"])
        #expect(store.isOtherAudioPlaying(app: "music") && store.isOtherAudioPlaying(app: "radio"))
        #expect(!store.isOtherAudioPlaying(app: "game"), "a session's own players are not other audio")
        _ = store.setPlayersRunning(["game", "music"])
        #expect(store.isOtherAudioPlaying(app: "game"))
        _ = store.setPlayersRunning([])
        for app in ["music", "game", "radio"] { #expect(!store.isOtherAudioPlaying(app: app)) }
    }

    @Test func primaryAudioSetsTheHintAndMixableSessionsHearBeginAndEnd() throws {
        var store = try store()
        let started = store.setPlayersRunning(["music"])
        // radio's hint is true too, but radio is not mixable: only game is told.
        #expect(started == [begin("game")])
        #expect(store.sessions["game"]?.secondaryAudioShouldBeSilencedHint == true)
        #expect(store.sessions["radio"]?.secondaryAudioShouldBeSilencedHint == true)
        #expect(store.sessions["music"]?.secondaryAudioShouldBeSilencedHint == false, "its own audio is not other audio")
        #expect(store.setPlayersRunning(["music"]).isEmpty, "no change, no event")
        #expect(store.setPlayersRunning([]) == [end("game")])
        #expect(store.sessions["game"]?.secondaryAudioShouldBeSilencedHint == false)
        #expect(store.sessions["radio"]?.secondaryAudioShouldBeSilencedHint == false)
    }

    @Test func mixableAudioIsNoReasonToSilenceOthers() throws {
        var store = try store()
        store.add("chime", .ambient)
        _ = try store.activate(app: "chime")
        #expect(store.setPlayersRunning(["chime"]).isEmpty)
        #expect(store.isOtherAudioPlaying(app: "game"))
        #expect(store.sessions["game"]?.secondaryAudioShouldBeSilencedHint == false)
    }

    struct PlayerCase: CustomTestStringConvertible, Sendable {
        var category: Category
        var mode: Mode = .default
        var options: Set<CategoryOption> = []
        var primary: Bool
        var testDescription: String { "\(category) \(mode) \(options.map(\.rawValue).sorted()): primary \(primary)" }
    }

    /// Whose playing is primary audio: SPEC §1's "mixable by default" column, and mixWithOthers
    /// (or an option implying it) makes any category secondary.
    static let playerCases: [PlayerCase] = [
        .init(category: .ambient, primary: false),
        .init(category: .soloAmbient, primary: true),
        .init(category: .soloAmbient, options: [.mixWithOthers], primary: false),
        .init(category: .playback, primary: true),
        .init(category: .playback, options: [.mixWithOthers], primary: false),
        .init(category: .playback, options: [.duckOthers], primary: false),
        .init(category: .playback, options: [.interruptSpokenAudioAndMixWithOthers], primary: false),
        .init(category: .playAndRecord, primary: true),
        .init(category: .playAndRecord, options: [.mixWithOthers], primary: false),
        .init(category: .multiRoute, primary: true),
    ]

    @Test(arguments: playerCases)
    func hintFollowsThePlayersMixability(_ c: PlayerCase) throws {
        var store = SessionStore.fixture()
        store.add("observer", .ambient)
        store.add("player", c.category, c.mode, c.options)
        _ = try store.activate(app: "observer")
        _ = try store.activate(app: "player")
        let effects = store.setPlayersRunning(["player"])
        #expect(store.sessions["observer"]?.secondaryAudioShouldBeSilencedHint == c.primary)
        #expect(effects == (c.primary ? [begin("observer")] : []))
        #expect(store.isOtherAudioPlaying(app: "observer"))
    }

    @Test func anInterruptionEndsTheHintAtOnce() throws {
        var store = try store()
        _ = store.setPlayersRunning(["music"])
        // radio takes over: music's players pause, so game's hint ends in the same effects.
        let effects = try store.activate(app: "radio")
        #expect(effects.interruptions == [began("music")])
        #expect(effects.hints == [end("game")])
        #expect(store.sessions["music"]?.playersRunning == false)
        // The daemon reports radio playing: the hint begins again.
        #expect(store.setPlayersRunning(["radio"]) == [begin("game")])
        #expect(store.sessions["music"]?.secondaryAudioShouldBeSilencedHint == true)
    }

    @Test func becomingMixableEndsTheHint() throws {
        var store = try store()
        _ = store.setPlayersRunning(["music"])
        let effects = try store.configure(app: "music", ownerUID: testUID, configuration: config(.playback, .default, [.mixWithOthers]))
        #expect(effects.hints == [end("game")])
        let back = try store.configure(app: "music", ownerUID: testUID, configuration: config(.playback))
        #expect(back.hints == [begin("game")])
    }

    @Test func forcedDeactivationDeletionAndLossEndTheHint() throws {
        var store = try store()
        _ = store.setPlayersRunning(["music"])
        store.setStreamsRunning(app: "music", true)
        #expect(try store.deactivate(app: "music", notifyOthers: false, force: true).hints == [end("game")])

        _ = try store.activate(app: "music")
        _ = store.setPlayersRunning(["music"])
        #expect(try store.delete(app: "music").hints == [end("game")])

        store.add("music", .playback)
        _ = try store.activate(app: "music")
        _ = store.setPlayersRunning(["music"])
        #expect(store.mediaServicesLost().hints == [end("game")])
        #expect(!store.isOtherAudioPlaying(app: "game"))
    }

    @Test func aHardwareMuteInterruptionEndsTheHint() throws {
        var store = SessionStore.fixture()
        store.add("call", .playAndRecord)
        store.add("game", .ambient)
        _ = try store.activate(app: "call")
        _ = try store.activate(app: "game")
        #expect(store.setPlayersRunning(["call"]) == [begin("game")])
        let muted = store.setHardwareMuted(port: "mic", true)
        #expect(muted.interruptions == [began("call", .builtInMicMuted)])
        #expect(muted.hints == [end("game")])
    }
}

@Suite("availableInputs and channel counts")
struct PortDescriptionPolicyTests {
    static let ports = [
        Ports.mic, Ports.speaker, Ports.usbIn(channels: 4), Ports.usbIn(available: false).renamed("oldUSB"),
        Ports.hfp(capabilities: [.highQualityRecording]),
        port("headset", .bluetoothHFP, .duplex, order: 1, channels: 1, codec: .cvsd).withOutputChannels(3),
    ]

    func inputs(_ category: Category, _ mode: Mode = .default, _ options: Set<CategoryOption> = [], region: String? = nil)
        -> [String]
    {
        var store = SessionStore.fixture(ports: Self.ports, region: region)
        store.add("app", category, mode, options)
        return store.availableInputs(app: "app").map(\.name)
    }

    @Test func categoriesWithoutInputHaveNone() {
        for category in [Category.ambient, .soloAmbient, .playback] { #expect(inputs(category).isEmpty, "\(category)") }
    }

    @Test func availableEligibleInputsInConfigurationOrder() {
        // Not the unavailable USB input, not the HFP devices without allowBluetoothHFP.
        #expect(inputs(.record) == ["mic", "usbIn"])
        #expect(inputs(.playAndRecord) == ["mic", "usbIn"])
        #expect(inputs(.playAndRecord, .default, [.allowBluetoothHFP]) == ["mic", "usbIn", "hfp", "headset"])
        #expect(inputs(.record, .default, [.allowBluetoothHFP]) == ["mic", "usbIn", "hfp", "headset"])
    }

    @Test func highQualityRecordingAdmitsACapableBluetoothMicrophoneOutsideTheEU() {
        #expect(inputs(.record, .default, [.bluetoothHighQualityRecording]) == ["mic", "usbIn", "hfp"])
        #expect(inputs(.record, .default, [.bluetoothHighQualityRecording], region: "EU") == ["mic", "usbIn"])
    }

    @Test func dualRouteOffersItsRouteInputsOnly() {
        #expect(inputs(.multiRoute, .dualRoute, [.allowBluetoothHFP]) == ["mic", "hfp"])
    }

    @Test func maximumChannelsAreThoseOfTheRoutePorts() throws {
        var store = SessionStore.fixture(ports: Self.ports)
        store.add("rec", .record)
        store.add("out", .playback)
        store.add("call", .playAndRecord, .default, [.allowBluetoothHFP])
        store.add("nothing", .playback)
        #expect(store.sessions["rec"]?.route.inputs == ["usbIn"])
        #expect(store.maximumChannels(app: "rec") == (4, 0))
        #expect(store.maximumChannels(app: "out") == (0, 2))
        // The most recent device is the HFP one (order 4): its microphone 1, earpiece 1.
        #expect(store.sessions["call"]?.route == Route(inputs: ["hfp"], outputs: ["hfp"]))
        #expect(store.maximumChannels(app: "call") == (1, 1))
        #expect(store.maximumChannels(app: "unknown") == (0, 0))
        _ = store.updatePorts(Self.ports.filter { $0.name != "spk" })
        #expect(store.maximumChannels(app: "nothing") == (0, 0), "no output route: 0")
    }

    @Test func aDuplexPortsEarpieceHasItsOwnChannelCount() throws {
        var store = SessionStore.fixture(ports: Self.ports.filter { $0.name != "hfp" })
        store.add("call", .playAndRecord, .default, [.allowBluetoothHFP])
        #expect(store.sessions["call"]?.route == Route(inputs: ["headset"], outputs: ["headset"]))
        #expect(store.maximumChannels(app: "call") == (1, 3))
        // Preferred output channels are checked against the earpiece's channels too.
        _ = try store.setPreferences(app: "call", HardwarePreferences(outputChannels: 3))
    }

    @Test func preferredChannelsAreUsedUpToThePortsChannels() {
        let none = HardwarePreferences()
        #expect(none.inputChannels(ofPort: 2) == 2 && none.outputChannels(ofPort: 8) == 8)
        let one = HardwarePreferences(inputChannels: 1, outputChannels: 1)
        #expect(one.inputChannels(ofPort: 2) == 1 && one.outputChannels(ofPort: 2) == 1)
        let many = HardwarePreferences(inputChannels: 8, outputChannels: 6)
        #expect(many.inputChannels(ofPort: 2) == 2 && many.outputChannels(ofPort: 4) == 4)
    }
}

extension PortState {
    func renamed(_ name: String) -> PortState {
        var copy = self
        copy.name = name
        return copy
    }

    func withOutputChannels(_ count: Int) -> PortState {
        var copy = self
        copy.outputChannels = count
        return copy
    }
}

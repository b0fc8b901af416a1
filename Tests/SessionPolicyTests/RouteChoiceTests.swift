// SPEC §4 and §7: route choice (RouteChooser.choose) and capture bandwidth as tables over port sets.

import Testing

@testable import SessionPolicy

/// The port vocabulary of the route tables. Built-in ports are connected at order 0.
enum RP {
    static let mic = Ports.mic
    static let spk = Ports.speaker
    static let rcv = Ports.receiver
    static func phones(_ order: Int = 3, available: Bool = true) -> PortState {
        Ports.headphones(order: order, available: available)
    }
    static func lineOut(_ order: Int = 5) -> PortState { port("lineOut", .lineOut, .output, order: order) }
    static func usbOut(_ order: Int = 1) -> PortState { port("usbOut", .usbAudio, .output, order: order) }
    static func hdmi(_ order: Int = 4) -> PortState { port("hdmi", .HDMI, .output, order: order) }
    static func usbIn(_ order: Int = 2, available: Bool = true) -> PortState {
        Ports.usbIn(order: order, available: available)
    }
    static func usbDuplex(_ order: Int = 3) -> PortState { port("usbDuplex", .usbAudio, .duplex, order: order) }
    static func hfp(_ order: Int = 4, codec: HFPCodec = .msbc, hq: Bool = false, available: Bool = true) -> PortState {
        Ports.hfp(order: order, codec: codec, capabilities: hq ? [.highQualityRecording] : [], available: available)
    }
    static func hfpInputOnly(_ order: Int = 4) -> PortState {
        port("hfpIn", .bluetoothHFP, .input, order: order, channels: 1, codec: .cvsd)
    }
    static func le(_ order: Int = 4) -> PortState { port("le", .bluetoothLE, .duplex, order: order, channels: 1) }
    static func headset(_ order: Int = 3) -> PortState { port("headset", .headsetMic, .duplex, order: order) }
    static func headsetMicInput(_ order: Int = 3) -> PortState { port("headsetIn", .headsetMic, .input, order: order) }
    static func a2dp(_ order: Int = 3) -> PortState { port("a2dp", .bluetoothA2DP, .output, order: order) }
    static func airPlay(_ order: Int = 3) -> PortState { port("airplay", .airPlay, .output, order: order) }
}

struct RouteCase: Sendable, CustomTestStringConvertible {
    let name: String
    let ports: [PortState]
    let request: RouteRequest
    let inputs: Set<String>
    let outputs: Set<String>
    var testDescription: String { name }

    init(
        _ name: String, _ ports: [PortState], _ category: Category, _ mode: Mode = .default,
        _ options: Set<CategoryOption> = [], preferred: String? = nil, overrideSpeaker: Bool = false,
        region: String? = nil, in inputs: Set<String>, out outputs: Set<String>
    ) {
        self.name = name
        self.ports = ports
        self.request = RouteRequest(
            configuration: config(category, mode, options), preferredInput: preferred, overrideSpeaker: overrideSpeaker,
            region: region)
        self.inputs = inputs
        self.outputs = outputs
    }
}

@Suite("SPEC §4 route choice")
struct RouteChoiceTests {
    static let inputCases: [RouteCase] = [
        .init("last in wins: USB mic after built-in", [RP.mic, RP.usbIn(2)], .record, in: ["usbIn"], out: []),
        .init("last in wins: built-in reconnected later", [port("mic", .builtInMic, .input, order: 5), RP.usbIn(2)],
            .record, in: ["mic"], out: []),
        .init("preferred input wins over last in", [RP.mic, RP.usbIn(2)], .record, preferred: "mic", in: ["mic"], out: []),
        .init("unavailable preferred input: last in", [RP.mic, RP.usbIn(2, available: false)], .record,
            preferred: "usbIn", in: ["mic"], out: []),
        .init("unavailable ports are never chosen", [RP.mic, RP.usbIn(9, available: false)], .record, in: ["mic"], out: []),
        .init("no input port: empty", [RP.spk], .record, in: [], out: []),
        .init("HFP input needs allowBluetoothHFP", [RP.mic, RP.hfp()], .record, in: ["mic"], out: []),
        .init("preferred HFP needs allowBluetoothHFP", [RP.mic, RP.hfp()], .record, preferred: "hfp", in: ["mic"], out: []),
        .init("HFP input with allowBluetoothHFP", [RP.mic, RP.hfp()], .record, .default, [.allowBluetoothHFP],
            in: ["hfp"], out: []),
        .init("bluetoothLE input with allowBluetoothHFP", [RP.mic, RP.le()], .record, .default, [.allowBluetoothHFP],
            in: ["le"], out: []),
        .init("bluetoothLE input needs allowBluetoothHFP", [RP.mic, RP.le()], .record, in: ["mic"], out: []),
        .init("record has no outputs", [RP.mic, RP.spk, RP.rcv, RP.phones()], .record, in: ["mic"], out: []),
        .init("ambient has no inputs", [RP.mic, RP.usbIn(), RP.spk], .ambient, in: [], out: ["spk"]),
        .init("soloAmbient has no inputs", [RP.mic, RP.usbIn(), RP.spk], .soloAmbient, in: [], out: ["spk"]),
        .init("playback has no inputs", [RP.mic, RP.usbIn(), RP.spk], .playback, in: [], out: ["spk"]),
        .init("wired headset: last in, both ways", [RP.mic, RP.spk, RP.rcv, RP.headset()], .playAndRecord,
            in: ["headset"], out: ["headset"]),
    ]

    static let outputCases: [RouteCase] = [
        .init("playAndRecord: receiver", [RP.mic, RP.spk, RP.rcv], .playAndRecord, in: ["mic"], out: ["rcv"]),
        .init("playAndRecord + defaultToSpeaker: speaker", [RP.mic, RP.spk, RP.rcv], .playAndRecord, .default,
            [.defaultToSpeaker], in: ["mic"], out: ["spk"]),
        .init("videoChat implies defaultToSpeaker", [RP.mic, RP.spk, RP.rcv], .playAndRecord, .videoChat,
            in: ["mic"], out: ["spk"]),
        .init("voiceChat: receiver", [RP.mic, RP.spk, RP.rcv], .playAndRecord, .voiceChat, in: ["mic"], out: ["rcv"]),
        .init("playAndRecord without receiver: speaker", [RP.mic, RP.spk], .playAndRecord, in: ["mic"], out: ["spk"]),
        .init("playback never uses the receiver", [RP.spk, RP.rcv], .playback, in: [], out: ["spk"]),
        .init("playback with only a receiver: no output", [RP.rcv], .playback, in: [], out: []),
        .init("soloAmbient never uses the receiver", [RP.rcv, RP.spk], .soloAmbient, in: [], out: ["spk"]),
        .init("external beats built-in", [RP.spk, RP.phones()], .playback, in: [], out: ["phones"]),
        .init("most recent external wins (line out)", [RP.spk, RP.phones(3), RP.lineOut(5)], .playback,
            in: [], out: ["lineOut"]),
        .init("most recent external wins (headphones)", [RP.spk, RP.phones(6), RP.lineOut(5)], .playback,
            in: [], out: ["phones"]),
        .init("unavailable external is ignored", [RP.spk, RP.phones(available: false)], .playback, in: [], out: ["spk"]),
        .init("external beats defaultToSpeaker", [RP.mic, RP.spk, RP.rcv, RP.phones()], .playAndRecord, .default,
            [.defaultToSpeaker], in: ["mic"], out: ["phones"]),
        .init("external beats receiver", [RP.mic, RP.spk, RP.rcv, RP.phones()], .playAndRecord, in: ["mic"], out: ["phones"]),
        .init("speaker override beats external", [RP.mic, RP.spk, RP.rcv, RP.phones()], .playAndRecord,
            overrideSpeaker: true, in: ["mic"], out: ["spk"]),
        .init("speaker override beats receiver", [RP.mic, RP.spk, RP.rcv], .playAndRecord, overrideSpeaker: true,
            in: ["mic"], out: ["spk"]),
        .init("speaker override only for playAndRecord (playback)", [RP.spk, RP.phones()], .playback,
            overrideSpeaker: true, in: [], out: ["phones"]),
        .init("speaker override only for playAndRecord (ambient)", [RP.spk, RP.lineOut()], .ambient,
            overrideSpeaker: true, in: [], out: ["lineOut"]),
        .init("A2DP for playback", [RP.spk, RP.a2dp()], .playback, in: [], out: ["a2dp"]),
        .init("A2DP not for playAndRecord without allowBluetoothA2DP", [RP.mic, RP.spk, RP.rcv, RP.a2dp()],
            .playAndRecord, in: ["mic"], out: ["rcv"]),
        .init("A2DP for playAndRecord with allowBluetoothA2DP", [RP.mic, RP.spk, RP.rcv, RP.a2dp()], .playAndRecord,
            .default, [.allowBluetoothA2DP], in: ["mic"], out: ["a2dp"]),
        .init("AirPlay for playback", [RP.spk, RP.airPlay()], .playback, in: [], out: ["airplay"]),
        .init("AirPlay not for playAndRecord without allowAirPlay", [RP.mic, RP.spk, RP.rcv, RP.airPlay()],
            .playAndRecord, in: ["mic"], out: ["rcv"]),
        .init("AirPlay for playAndRecord with allowAirPlay", [RP.mic, RP.spk, RP.rcv, RP.airPlay()], .playAndRecord,
            .default, [.allowAirPlay], in: ["mic"], out: ["airplay"]),
        .init("HFP is a call link, not a playback output", [RP.spk, RP.hfp()], .playback, in: [], out: ["spk"]),
    ]

    static let hfpCases: [RouteCase] = [
        .init("HFP input drags the output to the same device",
            [RP.mic, RP.spk, RP.rcv, RP.phones(5), RP.hfp(4)], .playAndRecord, .default, [.allowBluetoothHFP],
            preferred: "hfp", in: ["hfp"], out: ["hfp"]),
        .init("HFP output drags the input to the same device",
            [RP.mic, RP.usbIn(6), RP.spk, RP.rcv, RP.hfp(4)], .playAndRecord, .default, [.allowBluetoothHFP],
            in: ["hfp"], out: ["hfp"]),
        .init("HFP last in: input and output", [RP.mic, RP.spk, RP.rcv, RP.hfp()], .playAndRecord, .default,
            [.allowBluetoothHFP], in: ["hfp"], out: ["hfp"]),
        .init("voiceChat implies allowBluetoothHFP", [RP.mic, RP.spk, RP.rcv, RP.hfp()], .playAndRecord, .voiceChat,
            in: ["hfp"], out: ["hfp"]),
        .init("videoChat implies allowBluetoothHFP", [RP.mic, RP.spk, RP.rcv, RP.hfp()], .playAndRecord, .videoChat,
            in: ["hfp"], out: ["hfp"]),
        .init("bluetoothLE both ways", [RP.mic, RP.spk, RP.rcv, RP.le()], .playAndRecord, .default, [.allowBluetoothHFP],
            in: ["le"], out: ["le"]),
        .init("preferred wired mic keeps the call link off the output", [RP.mic, RP.spk, RP.rcv, RP.hfp()],
            .playAndRecord, .default, [.allowBluetoothHFP], preferred: "mic", in: ["mic"], out: ["rcv"]),
        .init("without allowBluetoothHFP, HFP is neither input nor output", [RP.mic, RP.spk, RP.rcv, RP.hfp()],
            .playAndRecord, in: ["mic"], out: ["rcv"]),
        .init("a more recent wired headset beats HFP", [RP.mic, RP.spk, RP.rcv, RP.hfp(4), RP.headset(7)],
            .playAndRecord, .default, [.allowBluetoothHFP], in: ["headset"], out: ["headset"]),
    ]

    static let highQualityCases: [RouteCase] = [
        .init("bluetoothHighQualityRecording makes a capable HFP mic eligible", [RP.mic, RP.hfp(hq: true)], .record,
            .default, [.bluetoothHighQualityRecording], in: ["hfp"], out: []),
        .init("... not in region EU", [RP.mic, RP.hfp(hq: true)], .record, .default, [.bluetoothHighQualityRecording],
            region: "EU", in: ["mic"], out: []),
        .init("... not in region eu", [RP.mic, RP.hfp(hq: true)], .record, .default, [.bluetoothHighQualityRecording],
            region: "eu", in: ["mic"], out: []),
        .init("... in region US", [RP.mic, RP.hfp(hq: true)], .record, .default, [.bluetoothHighQualityRecording],
            region: "US", in: ["hfp"], out: []),
        .init("... not without the capability", [RP.mic, RP.hfp()], .record, .default, [.bluetoothHighQualityRecording],
            in: ["mic"], out: []),
        .init("... not outside mode default", [RP.mic, RP.hfp(hq: true)], .record, .measurement,
            [.bluetoothHighQualityRecording], in: ["mic"], out: []),
        .init("EU with allowBluetoothHFP: HFP fallback keeps it eligible", [RP.mic, RP.hfp(hq: true)], .record,
            .default, [.bluetoothHighQualityRecording, .allowBluetoothHFP], region: "EU", in: ["hfp"], out: []),
        .init("other mode with allowBluetoothHFP: HFP fallback", [RP.mic, RP.hfp(hq: true)], .record, .videoRecording,
            [.bluetoothHighQualityRecording, .allowBluetoothHFP], in: ["hfp"], out: []),
    ]

    static let multiRouteCases: [RouteCase] = [
        .init("multiRoute: every eligible output at once",
            [RP.mic, RP.spk, RP.usbOut(1), RP.lineOut(2), RP.phones(3), RP.hdmi(4)], .multiRoute,
            in: ["mic"], out: ["usbOut", "lineOut", "phones", "hdmi"]),
        .init("multiRoute: builtInSpeaker when no other", [RP.mic, RP.spk, RP.rcv], .multiRoute, in: ["mic"], out: ["spk"]),
        .init("multiRoute: unavailable outputs do not count", [RP.mic, RP.spk, RP.phones(available: false)], .multiRoute,
            in: ["mic"], out: ["spk"]),
        .init("multiRoute: builtInSpeaker not with another", [RP.mic, RP.spk, RP.lineOut()], .multiRoute,
            in: ["mic"], out: ["lineOut"]),
        .init("multiRoute: receiver, A2DP, AirPlay, HFP are not multi outputs",
            [RP.mic, RP.spk, RP.rcv, RP.a2dp(), RP.airPlay(5), RP.hfp(6)], .multiRoute, in: ["mic"], out: ["spk"]),
        .init("multiRoute: one input, last in", [RP.mic, RP.usbIn(2), RP.spk, RP.phones()], .multiRoute,
            in: ["usbIn"], out: ["phones"]),
        .init("multiRoute: preferred input", [RP.mic, RP.usbIn(2), RP.spk], .multiRoute, preferred: "mic",
            in: ["mic"], out: ["spk"]),
        .init("multiRoute: HFP mic not eligible outside dualRoute", [RP.mic, RP.spk, RP.hfp(6)], .multiRoute,
            in: ["mic"], out: ["spk"]),
    ]

    static let dualRouteCases: [RouteCase] = [
        .init("dualRoute: built-in pair plus HFP", [RP.mic, RP.spk, RP.hfp()], .multiRoute, .dualRoute,
            [.allowBluetoothHFP], in: ["mic", "hfp"], out: ["spk", "hfp"]),
        .init("dualRoute: built-in pair plus wired headset", [RP.mic, RP.spk, RP.headset()], .multiRoute, .dualRoute,
            [.allowBluetoothHFP], in: ["mic", "headset"], out: ["spk", "headset"]),
        .init("dualRoute: built-in pair plus bluetoothLE", [RP.mic, RP.spk, RP.le()], .multiRoute, .dualRoute,
            [.allowBluetoothHFP], in: ["mic", "le"], out: ["spk", "le"]),
        .init("dualRoute: one secondary, the most recent (HFP)", [RP.mic, RP.spk, RP.headset(3), RP.hfp(4)],
            .multiRoute, .dualRoute, [.allowBluetoothHFP], in: ["mic", "hfp"], out: ["spk", "hfp"]),
        .init("dualRoute: one secondary, the most recent (headset)", [RP.mic, RP.spk, RP.headset(5), RP.hfp(4)],
            .multiRoute, .dualRoute, [.allowBluetoothHFP], in: ["mic", "headset"], out: ["spk", "headset"]),
        .init("dualRoute: non-duplex devices never qualify",
            [RP.mic, RP.spk, RP.hfpInputOnly(), RP.headsetMicInput(), RP.phones(5), RP.usbIn(6), RP.lineOut(7)],
            .multiRoute, .dualRoute, [.allowBluetoothHFP], in: ["mic"], out: ["spk"]),
        .init("dualRoute: a duplex USB interface is not a secondary", [RP.mic, RP.spk, RP.usbDuplex()], .multiRoute,
            .dualRoute, [.allowBluetoothHFP], in: ["mic"], out: ["spk"]),
        .init("dualRoute: unavailable secondary", [RP.mic, RP.spk, RP.hfp(available: false)], .multiRoute, .dualRoute,
            [.allowBluetoothHFP], in: ["mic"], out: ["spk"]),
    ]

    func check(_ c: RouteCase) {
        let route = RouteChooser.choose(ports: c.ports, for: c.request)
        #expect(Set(route.inputs) == c.inputs, "inputs \(route.inputs)")
        #expect(Set(route.outputs) == c.outputs, "outputs \(route.outputs)")
        #expect(route.inputs.count == Set(route.inputs).count)
        #expect(route.outputs.count == Set(route.outputs).count)
        // Pure: the same ports and request give the same route, whatever the declaration order.
        #expect(RouteChooser.choose(ports: c.ports, for: c.request) == route)
        let reversed = RouteChooser.choose(ports: c.ports.reversed(), for: c.request)
        #expect(Set(reversed.inputs) == c.inputs, "reversed declaration order: inputs \(reversed.inputs)")
        #expect(Set(reversed.outputs) == c.outputs, "reversed declaration order: outputs \(reversed.outputs)")
    }

    /// The override is first in the output precedence ("overrideOutputAudioPort speaker > ..."),
    /// and an HFP input would drag the output back onto the headset, so with the override the
    /// route is the built-in speaker and microphone (what upstream's override does too).
    static let overrideOverHFPCases: [RouteCase] = [
        .init("speaker override beats the HFP link", [RP.mic, RP.spk, RP.rcv, RP.hfp()], .playAndRecord, .default,
            [.allowBluetoothHFP], overrideSpeaker: true, in: ["mic"], out: ["spk"]),
        .init("speaker override beats the HFP link in voiceChat", [RP.mic, RP.spk, RP.rcv, RP.hfp()], .playAndRecord,
            .voiceChat, overrideSpeaker: true, in: ["mic"], out: ["spk"]),
    ]

    @Test(arguments: overrideOverHFPCases) func speakerOverrideBeatsTheHFPLink(_ c: RouteCase) { check(c) }

    @Test(arguments: inputCases) func inputs(_ c: RouteCase) { check(c) }
    @Test(arguments: outputCases) func outputs(_ c: RouteCase) { check(c) }
    @Test(arguments: hfpCases) func bluetoothHFP(_ c: RouteCase) { check(c) }
    @Test(arguments: highQualityCases) func bluetoothHighQualityRecordingEligibility(_ c: RouteCase) { check(c) }
    @Test(arguments: multiRouteCases) func multiRoute(_ c: RouteCase) { check(c) }
    @Test(arguments: dualRouteCases) func dualRoute(_ c: RouteCase) { check(c) }
}

@Suite("SPEC §7 capture bandwidth")
struct BandwidthTests {
    struct BandwidthCase: Sendable, CustomTestStringConvertible {
        let name: String
        let port: PortState
        let request: RouteRequest
        let expected: CaptureBandwidth
        let expectedName: String
        var testDescription: String { name }

        init(
            _ name: String, _ port: PortState, _ category: Category, _ mode: Mode,
            _ options: Set<CategoryOption>, region: String? = nil, _ expected: CaptureBandwidth, _ expectedName: String
        ) {
            self.name = name
            self.port = port
            self.request = RouteRequest(configuration: config(category, mode, options), region: region)
            self.expected = expected
            self.expectedName = expectedName
        }

        init(
            _ name: String, _ port: PortState, _ category: Category, _ options: Set<CategoryOption>,
            region: String? = nil, _ expected: CaptureBandwidth, _ expectedName: String
        ) {
            self.init(name, port, category, .default, options, region: region, expected, expectedName)
        }
    }

    static let cases: [BandwidthCase] = [
        .init("built-in mic: full", RP.mic, .record, [], .full, "full"),
        .init("USB: full", RP.usbIn(), .record, [], .full, "full"),
        .init("wired headset: full", RP.headset(), .playAndRecord, [], .full, "full"),
        .init("HFP cvsd: narrowband", RP.hfp(codec: .cvsd), .record, [.allowBluetoothHFP], .hfp(.cvsd), "hfp-cvsd"),
        .init("HFP msbc: wideband", RP.hfp(codec: .msbc), .record, [.allowBluetoothHFP], .hfp(.msbc), "hfp-msbc"),
        .init("HFP msbc in voiceChat", RP.hfp(codec: .msbc), .playAndRecord, .voiceChat, [], .hfp(.msbc), "hfp-msbc"),
        .init("high quality: mode default, capability, no region", RP.hfp(hq: true), .record,
            [.bluetoothHighQualityRecording], .full, "full"),
        .init("high quality: region US", RP.hfp(codec: .cvsd, hq: true), .record, [.bluetoothHighQualityRecording],
            region: "US", .full, "full"),
        .init("high quality with allowBluetoothHFP too", RP.hfp(hq: true), .playAndRecord,
            [.bluetoothHighQualityRecording, .allowBluetoothHFP], .full, "full"),
        .init("high quality in multiRoute", RP.hfp(hq: true), .multiRoute, [.bluetoothHighQualityRecording], .full, "full"),
        .init("region EU: HFP fallback", RP.hfp(codec: .msbc, hq: true), .record,
            [.bluetoothHighQualityRecording, .allowBluetoothHFP], region: "EU", .hfp(.msbc), "hfp-msbc"),
        .init("no capability: HFP fallback", RP.hfp(codec: .cvsd), .record,
            [.bluetoothHighQualityRecording, .allowBluetoothHFP], .hfp(.cvsd), "hfp-cvsd"),
        .init("mode measurement: the port's samples as they are, no HFP transform", RP.hfp(codec: .msbc, hq: true),
            .record, .measurement, [.bluetoothHighQualityRecording, .allowBluetoothHFP], .full, "full"),
        .init("mode measurement without the capability: no HFP transform either", RP.hfp(codec: .cvsd), .record,
            .measurement, [.allowBluetoothHFP], .full, "full"),
        .init("mode videoChat: HFP fallback", RP.hfp(codec: .cvsd, hq: true), .playAndRecord, .videoChat,
            [.bluetoothHighQualityRecording], .hfp(.cvsd), "hfp-cvsd"),
        .init("dualRoute: HFP fallback", RP.hfp(codec: .msbc, hq: true), .multiRoute, .dualRoute,
            [.bluetoothHighQualityRecording, .allowBluetoothHFP], .hfp(.msbc), "hfp-msbc"),
    ]

    @Test(arguments: cases)
    func bandwidth(_ c: BandwidthCase) {
        let bandwidth = RouteChooser.bandwidth(of: c.port, for: c.request)
        #expect(bandwidth == c.expected)
        #expect(bandwidth.name == c.expectedName)
    }

    @Test func codecRates() {
        #expect(HFPCodec.cvsd.sampleRate == 8000)
        #expect(HFPCodec.msbc.sampleRate == 16000)
    }

    @Test(arguments: [nil, "EU"] as [String?])
    func storeReportsTheBandwidthOfTheRoute(_ region: String?) throws {
        var store = SessionStore.fixture(ports: Ports.builtIn + [RP.hfp(codec: .msbc, hq: true)], region: region)
        store.add("hq", .record, .default, [.bluetoothHighQualityRecording, .allowBluetoothHFP])
        store.add("wired", .record, .default, [], micUsage: "x")
        let hq = store.bandwidths(app: "hq")
        #expect(hq.map(\.port) == ["hfp"])
        #expect(hq.map(\.bandwidth) == [region == "EU" ? .hfp(.msbc) : .full])
        #expect(store.bandwidths(app: "wired").map(\.bandwidth) == [.full])
        #expect(store.bandwidths(app: "nobody").isEmpty)
    }
}

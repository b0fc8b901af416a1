// SPEC §5 hardware preferences, SPEC §8 record permission.

import Testing

@testable import SessionPolicy

@Suite("SPEC §5 hardware preferences")
struct PreferencesTests {
    /// mic: 2 in; usbIn: 8 in; spk: 2 out; rcv: 1 out; lineOut: 4 out.
    static let ports = [
        Ports.mic, Ports.speaker, Ports.receiver, Ports.usbIn(order: 2, channels: 8),
        port("lineOut", .lineOut, .output, order: 1, channels: 4),
    ]

    struct PrefCase: Sendable, CustomTestStringConvertible {
        let name: String
        let category: Category
        let prefs: HardwarePreferences
        /// nil: accepted.
        let error: ErrorCode?
        let mentioning: [String]
        var testDescription: String { "\(category): \(name) → \(error?.name ?? "ok")" }

        init(
            _ name: String, _ category: Category, _ prefs: HardwarePreferences, _ error: ErrorCode? = nil,
            mentioning: [String] = []
        ) {
            self.name = name
            self.category = category
            self.prefs = prefs
            self.error = error
            self.mentioning = mentioning
        }

        /// In playAndRecord, which has both directions.
        init(_ name: String, _ prefs: HardwarePreferences, _ error: ErrorCode? = nil, mentioning: [String] = []) {
            self.init(name, .playAndRecord, prefs, error, mentioning: mentioning)
        }
    }

    static let cases: [PrefCase] = [
        // Accepted hints.
        .init("no preferences", HardwarePreferences()),
        .init("44.1 kHz", HardwarePreferences(sampleRate: 44100)),
        .init("48 kHz", HardwarePreferences(sampleRate: 48000)),
        .init("96 kHz", HardwarePreferences(sampleRate: 96000)),
        .init("192 kHz", HardwarePreferences(sampleRate: 192000)),
        .init("8 kHz", HardwarePreferences(sampleRate: 8000)),
        .init("1 ms buffer", HardwarePreferences(ioBufferDuration: 0.001)),
        .init("5 ms buffer", HardwarePreferences(ioBufferDuration: 0.005)),
        .init("100 ms buffer", HardwarePreferences(ioBufferDuration: 0.1)),
        .init("1 input channel", HardwarePreferences(inputChannels: 1)),
        .init("max input channels", HardwarePreferences(inputChannels: 8)),
        .init("1 output channel", HardwarePreferences(outputChannels: 1)),
        .init("max output channels", HardwarePreferences(outputChannels: 4)),
        .init("preferred input", HardwarePreferences(preferredInput: "usbIn")),
        .init("preferred input in record", .record, HardwarePreferences(preferredInput: "mic", inputChannels: 2)),
        .init("preferred input in multiRoute", .multiRoute, HardwarePreferences(preferredInput: "mic")),
        .init("output channels in playback", .playback, HardwarePreferences(sampleRate: 48000, outputChannels: 2)),
        .init("everything at once", HardwarePreferences(
            preferredInput: "mic", sampleRate: 48000, ioBufferDuration: 0.005, inputChannels: 2, outputChannels: 2)),
        // Bad values.
        .init("sample rate NaN", HardwarePreferences(sampleRate: .nan), .badParam),
        .init("sample rate +inf", HardwarePreferences(sampleRate: .infinity), .badParam),
        .init("sample rate 0", HardwarePreferences(sampleRate: 0), .badParam),
        .init("sample rate negative", HardwarePreferences(sampleRate: -44100), .badParam),
        .init("sample rate 1 Hz", HardwarePreferences(sampleRate: 1), .badParam),
        .init("sample rate 10 MHz", HardwarePreferences(sampleRate: 10_000_000), .badParam),
        .init("IO buffer NaN", HardwarePreferences(ioBufferDuration: .nan), .badParam),
        .init("IO buffer -inf", HardwarePreferences(ioBufferDuration: -.infinity), .badParam),
        .init("IO buffer 0", HardwarePreferences(ioBufferDuration: 0), .badParam),
        .init("IO buffer negative", HardwarePreferences(ioBufferDuration: -0.005), .badParam),
        .init("IO buffer 1 minute", HardwarePreferences(ioBufferDuration: 60), .badParam),
        .init("input channels 0", HardwarePreferences(inputChannels: 0), .badParam),
        .init("input channels -2", HardwarePreferences(inputChannels: -2), .badParam),
        .init("input channels above max", HardwarePreferences(inputChannels: 9), .badParam),
        .init("output channels 0", HardwarePreferences(outputChannels: 0), .badParam),
        .init("output channels above max", HardwarePreferences(outputChannels: 5), .badParam),
        .init("output channels above max in playback", .playback, HardwarePreferences(outputChannels: 64), .badParam),
        .init("unknown preferred input", HardwarePreferences(preferredInput: "studioMic"), .badParam,
            mentioning: ["studioMic"]),
        .init("unknown preferred input in record", .record, HardwarePreferences(preferredInput: "ghost"), .badParam,
            mentioning: ["ghost"]),
        .init("preferred input that is an output", HardwarePreferences(preferredInput: "lineOut"), .badParam,
            mentioning: ["lineOut"]),
        .init("good rate, bad buffer", HardwarePreferences(sampleRate: 48000, ioBufferDuration: .nan), .badParam),
        // What the category cannot do.
        .init("preferred input in playback", .playback, HardwarePreferences(preferredInput: "mic"), .incompatibleCategory),
        .init("preferred input in ambient", .ambient, HardwarePreferences(preferredInput: "mic"), .incompatibleCategory),
        .init("preferred input in soloAmbient", .soloAmbient, HardwarePreferences(preferredInput: "mic"),
            .incompatibleCategory),
        .init("input channels in playback", .playback, HardwarePreferences(inputChannels: 1), .incompatibleCategory),
        .init("input channels in ambient", .ambient, HardwarePreferences(inputChannels: 2), .incompatibleCategory),
        .init("input channels in soloAmbient", .soloAmbient, HardwarePreferences(inputChannels: 1), .incompatibleCategory),
        .init("output channels in record", .record, HardwarePreferences(outputChannels: 1), .incompatibleCategory),
    ]

    @Test(arguments: cases)
    func validation(_ c: PrefCase) throws {
        var store = SessionStore.fixture(ports: Self.ports)
        store.add("app", c.category)
        if let code = c.error {
            expectError(code, mentioning: c.mentioning) {
                try HardwarePreferences.validate(c.prefs, category: c.category, ports: Self.ports)
            }
            let before = StoreSnapshot(store)
            expectError(code, mentioning: c.mentioning) { _ = try store.setPreferences(app: "app", c.prefs) }
            #expect(StoreSnapshot(store) == before)
        } else {
            try HardwarePreferences.validate(c.prefs, category: c.category, ports: Self.ports)
            let effects = try store.setPreferences(app: "app", c.prefs)
            #expect(effects.contains(.sessionChanged(app: "app")))
            #expect(store.sessions["app"]?.preferences == c.prefs)
        }
    }

    /// "Channel counts outside 1...max available give badParam": a port that is not available
    /// does not raise the maximum.
    @Test func channelLimitCountsOnlyAvailablePorts() throws {
        let ports = [
            Ports.mic, Ports.speaker, Ports.usbIn(order: 2, channels: 8, available: false),
            port("lineOut", .lineOut, .output, order: 1, channels: 4, available: false),
        ]
        try HardwarePreferences.validate(HardwarePreferences(inputChannels: 2, outputChannels: 2), category: .playAndRecord, ports: ports)
        expectError(.badParam) {
            try HardwarePreferences.validate(HardwarePreferences(inputChannels: 8), category: .playAndRecord, ports: ports)
        }
        expectError(.badParam) {
            try HardwarePreferences.validate(HardwarePreferences(outputChannels: 4), category: .playAndRecord, ports: ports)
        }
    }

    @Test func newPreferencesReplaceTheOldOnes() throws {
        var store = SessionStore.fixture(ports: Self.ports)
        store.add("app", .playAndRecord)
        _ = try store.setPreferences(app: "app", HardwarePreferences(sampleRate: 48000, inputChannels: 2))
        _ = try store.setPreferences(app: "app", HardwarePreferences(ioBufferDuration: 0.005))
        #expect(store.sessions["app"]?.preferences == HardwarePreferences(ioBufferDuration: 0.005))
    }
}

@Suite("SPEC §8 record permission")
struct RecordPermissionTests {
    @Test func permissionIsUndeterminedUntilDecided() {
        let store = SessionStore.fixture()
        #expect(store.permission("anyone") == .undetermined)
    }

    @Test func setPermissionAnnouncesOnlyChanges() {
        var store = SessionStore.fixture()
        let steps: [(RecordPermission, [PolicyEffect])] = [
            (.undetermined, []),
            (.granted, [.recordPermission(app: "app", state: .granted)]),
            (.granted, []),
            (.denied, [.recordPermission(app: "app", state: .denied)]),
            (.denied, []),
            (.undetermined, [.recordPermission(app: "app", state: .undetermined)]),
            (.undetermined, []),
            (.denied, [.recordPermission(app: "app", state: .denied)]),
        ]
        for (state, expected) in steps {
            #expect(store.setPermission(app: "app", state) == expected, "set \(state)")
            #expect(store.permission("app") == state)
        }
        // Per application.
        #expect(store.permission("other") == .undetermined)
    }

    struct RecordCase: Sendable, CustomTestStringConvertible {
        let category: Category
        let micUsage: String?
        let permission: RecordPermission
        var expected: ErrorCode? {
            if !category.hasInput { return .incompatibleCategory }
            if (micUsage ?? "").isEmpty { return .missingEntitlement }
            return permission == .granted ? nil : .cannotStartRecording
        }
        var testDescription: String {
            "\(category), mic usage \(micUsage.map { "\"\($0)\"" } ?? "none"), \(permission) → \(expected?.name ?? "ok")"
        }
    }

    static let recordCases: [RecordCase] = Category.allCases.flatMap { category in
        [nil, "", "logs the studio"].flatMap { (usage: String?) in
            RecordPermission.allCases.map { RecordCase(category: category, micUsage: usage, permission: $0) }
        }
    }

    @Test(arguments: recordCases)
    func checkCanRecord(_ c: RecordCase) throws {
        var store = SessionStore.fixture()
        store.add("app", c.category, micUsage: c.micUsage)
        _ = store.setPermission(app: "app", c.permission)
        if let code = c.expected {
            let error = expectError(code) { try store.checkCanRecord(app: "app") }
            if code == .cannotStartRecording {
                #expect(error?.message.contains("recctl permission grant app") == true, "\(error?.message ?? "")")
            }
        } else {
            try store.checkCanRecord(app: "app")
        }
    }

    @Test func permissionIsNotTiedToASession() throws {
        var store = SessionStore.fixture()
        #expect(store.setPermission(app: "later", .granted) == [.recordPermission(app: "later", state: .granted)])
        store.add("later", .record)
        try store.checkCanRecord(app: "later")
        expectError(.expiredSession) { try store.checkCanRecord(app: "nobody") }
    }
}

// Shared fixtures for the SessionPolicy tests: the SPEC.md tables copied verbatim (so a wrong
// table in the module is caught, never mirrored), ports, a store builder, and effect helpers.

import Testing

@testable import SessionPolicy

// MARK: - SPEC.md tables, copied verbatim

/// The tables of SPEC.md as text, parsed here. The expected values of the table tests come
/// from these strings only, never from `acceptedModes` / `acceptedOptions`.
enum Spec {
    /// SPEC §1, first table.
    static let categoryTable = """
        | category | input | output | mixable by default | interrupts non-mixable sessions on activation |
        |---|---|---|---|---|
        | ambient | no | yes | yes (mixWithOthers implied) | no |
        | soloAmbient | no | yes | no | yes |
        | playback | no | yes | no | yes (no, with mixWithOthers) |
        | record | yes | no | no | yes (no, with mixWithOthers) |
        | playAndRecord | yes | yes | no | yes (no, with mixWithOthers) |
        | multiRoute | yes | yes (several at once) | no | yes (no, with mixWithOthers) |
        """

    /// SPEC §1, category × mode.
    static let modeTable = """
        | category | default | measurement | moviePlayback | shortFormVideo | spokenAudio | videoChat | videoRecording | voiceChat | voicePrompt | dualRoute |
        |---|---|---|---|---|---|---|---|---|---|---|
        | ambient | ✔ | | | | ✔ | | | | | |
        | soloAmbient | ✔ | | | | ✔ | | | | | |
        | playback | ✔ | ✔ | ✔ | ✔ | ✔ | | | | ✔ | |
        | record | ✔ | ✔ | | | | | ✔ | | | |
        | playAndRecord | ✔ | ✔ | | | ✔ | ✔ | ✔ | ✔ | | |
        | multiRoute | ✔ | ✔ | | | ✔ | | | | | ✔ (requires allowBluetoothHFP) |
        """

    /// SPEC §1, option × category.
    static let optionTable = """
        | option | ambient | soloAmbient | playback | record | playAndRecord | multiRoute |
        |---|---|---|---|---|---|---|
        | mixWithOthers | ✔ | ✔ | ✔ | ✔ | ✔ | ✔ |
        | duckOthers | ✔ | ✔ | ✔ | ✔ | ✔ | ✔ |
        | interruptSpokenAudioAndMixWithOthers | ✔ | ✔ | ✔ | ✔ | ✔ | ✔ |
        | overrideMutedMicrophoneInterruption | | ✔ | ✔ | ✔ | ✔ | ✔ |
        | allowAirPlay | | | | | ✔ | |
        | allowBluetoothA2DP | | | | | ✔ | |
        | allowBluetoothHFP | | | | ✔ | ✔ | only with mode dualRoute |
        | defaultToSpeaker | | | | | ✔ | ✔ |
        | bluetoothHighQualityRecording | | | | ✔ | ✔ | ✔ |
        """

    /// SPEC §2 (name and value columns).
    static let errorTable = """
        | badParam | -50 |
        | isBusy | '!act' 560030580 |
        | incompatibleCategory | '!cat' 560161140 |
        | cannotInterruptOthers | '!int' 560557684 |
        | cannotStartPlaying | '!pla' 561015905 |
        | cannotStartRecording | '!rec' 561145187 |
        | insufficientPriority | '!pri' 561017449 |
        | resourceNotAvailable | '!res' 561145203 |
        | sessionNotActive | 'inac' 1768841571 |
        | expiredSession | '!ses' 561210739 |
        | missingEntitlement | 'ent?' 1701737535 |
        | mediaServicesFailed | 'msrv' 1836282486 |
        | unspecified | 'what' 2003329396 |
        """

    /// recd's own codes beyond SPEC §2 (docs/protocol.md, "Errors"), in the same form.
    static let recdErrorTable = """
        | notSessionOwner | '!own' 560953198 |
        | notAdministrator | '!adm' 560030829 |
        """

    /// SPEC §1, the option list with upstream raw values.
    static let optionValues: [(name: String, value: UInt)] = [
        ("mixWithOthers", 0x1), ("duckOthers", 0x2), ("allowBluetoothHFP", 0x4), ("defaultToSpeaker", 0x8),
        ("interruptSpokenAudioAndMixWithOthers", 0x11), ("allowBluetoothA2DP", 0x20), ("allowAirPlay", 0x40),
        ("overrideMutedMicrophoneInterruption", 0x80), ("bluetoothHighQualityRecording", 1 << 19),
    ]

    /// SPEC §4, route change reasons.
    static let routeChangeReasons =
        "unknown=0, newDeviceAvailable=1, oldDeviceUnavailable=2, categoryChange=3, override=4, wakeFromSleep=6, noSuitableRouteForCategory=7, routeConfigurationChange=8"

    /// SPEC §3, interruption event fields.
    static let interruptionTypes = "began=1, ended=0"
    static let interruptionReasons = "default=0, builtInMicMuted=2, routeDisconnected=4"

    static let categories = ["ambient", "soloAmbient", "playback", "record", "playAndRecord", "multiRoute"]
    static let modes = [
        "default", "gameChat", "measurement", "moviePlayback", "shortFormVideo", "spokenAudio", "videoChat",
        "videoRecording", "voiceChat", "voicePrompt", "dualRoute",
    ]

    /// Rows of a markdown table: header cells, then each data row's cells (trimmed).
    static func rows(_ table: String) -> [[String]] {
        table.split(separator: "\n").map(String.init)
            .filter { !$0.hasPrefix("|---") }
            .map { line in
                var cells = line.split(separator: "|", omittingEmptySubsequences: false)
                    .map { $0.trimmingSpaces }
                cells.removeFirst()
                cells.removeLast()
                return cells
            }
    }

    /// "a=1, b=2" as pairs.
    static func pairs(_ text: String) -> [(name: String, value: Int)] {
        text.split(separator: ",").map { item in
            let parts = item.split(separator: "=")
            return (parts[0].trimmingSpaces, Int(parts[1].trimmingSpaces)!)
        }
    }

    /// The numeric value of a FourCC, computed here from its characters (big-endian).
    static func fourCCValue(_ code: String) -> Int32 {
        Int32(bitPattern: code.utf8.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}

// MARK: - Configurations

/// A configuration the spec accepts (a precondition of the test using it). If the module
/// rejects it, that is recorded as an issue and the initial configuration stands in, so a wrong
/// table fails the tests that depend on it instead of crashing the whole run.
func config(
    _ category: Category, _ mode: Mode = .default, _ options: Set<CategoryOption> = [],
    policy: RouteSharingPolicy = .default, sourceLocation: SourceLocation = #_sourceLocation
) -> SessionConfiguration {
    do {
        return try SessionConfiguration.validated(category: category, mode: mode, options: options, policy: policy)
    } catch {
        Issue.record("fixture configuration rejected: \(error)", sourceLocation: sourceLocation)
        return .initial
    }
}

// MARK: - Ports

func port(
    _ name: String, _ type: PortType, _ direction: PortDirection, order: Int = 0, channels: Int = 2,
    codec: HFPCodec? = nil, capabilities: Set<PortCapability> = [], available: Bool = true
) -> PortState {
    PortState(
        name: name, type: type, direction: direction, channels: channels, capabilities: capabilities,
        codec: codec, available: available, connectedOrder: order)
}

enum Ports {
    static let mic = port("mic", .builtInMic, .input)
    static let speaker = port("spk", .builtInSpeaker, .output)
    static let receiver = port("rcv", .builtInReceiver, .output, channels: 1)
    /// The built-in trio every store fixture starts with.
    static let builtIn = [mic, speaker, receiver]
    static func headphones(order: Int = 3, available: Bool = true) -> PortState {
        port("phones", .headphones, .output, order: order, available: available)
    }
    static func usbIn(order: Int = 2, channels: Int = 2, available: Bool = true) -> PortState {
        port("usbIn", .usbAudio, .input, order: order, channels: channels, available: available)
    }
    static func hfp(
        order: Int = 4, codec: HFPCodec = .msbc, capabilities: Set<PortCapability> = [], available: Bool = true
    ) -> PortState {
        port("hfp", .bluetoothHFP, .duplex, order: order, channels: 1, codec: codec, capabilities: capabilities,
            available: available)
    }
}

// MARK: - Store

let testUID: UInt32 = 1000

extension SessionStore {
    static func fixture(
        ports: [PortState] = Ports.builtIn, duckLevelDB: Double = -14, region: String? = nil
    ) -> SessionStore {
        SessionStore(duckLevelDB: duckLevelDB, region: region, ports: ports)
    }

    /// Creates or reconfigures a session (valid configuration) with declaration fields.
    @discardableResult
    mutating func add(
        _ app: String, _ category: Category = .playback, _ mode: Mode = .default, _ options: Set<CategoryOption> = [],
        priority: PriorityClass = .normal, background: Bool = false, autoResume: Bool = false,
        prefersInterruptionOnRouteDisconnect: Bool = false, micUsage: String? = "records the room"
    ) -> [PolicyEffect] {
        let effects: [PolicyEffect]
        do {
            effects = try configure(
                app: app, ownerUID: testUID, configuration: config(category, mode, options), micUsage: .some(micUsage))
        } catch {
            Issue.record("fixture configure refused: \(error)")
            return []
        }
        updateDeclaration(app: app) {
            $0.priority = priority
            $0.background = background
            $0.autoResume = autoResume
            $0.prefersInterruptionOnRouteDisconnect = prefersInterruptionOnRouteDisconnect
        }
        return effects
    }

    func state(_ app: String) -> ActivationState? { sessions[app]?.state }
}

/// Everything observable of a store, to show that a rejected call changed nothing.
struct StoreSnapshot: Equatable {
    var sessions: [String: Session]
    var permissions: [String: RecordPermission]
    var ports: [PortState]
    var mutedPorts: Set<String>
    var mediaServicesAvailable: Bool
    var duckLevelDB: Double
    var region: String?

    init(_ store: SessionStore) {
        sessions = store.sessions
        permissions = store.permissions
        ports = store.ports
        mutedPorts = store.mutedPorts
        mediaServicesAvailable = store.mediaServicesAvailable
        duckLevelDB = store.duckLevelDB
        region = store.region
    }
}

// MARK: - Effects

func began(_ app: String, _ reason: InterruptionReason = .default) -> PolicyEffect {
    .interruption(app: app, type: .began, reason: reason, shouldResume: false)
}

func ended(_ app: String, shouldResume: Bool, _ reason: InterruptionReason = .default) -> PolicyEffect {
    .interruption(app: app, type: .ended, reason: reason, shouldResume: shouldResume)
}

extension PolicyEffect {
    var isInterruption: Bool { if case .interruption = self { true } else { false } }
    var isDucking: Bool {
        switch self {
        case .ducked, .unducked: true
        default: false
        }
    }
    var isRouteChange: Bool { if case .routeChange = self { true } else { false } }
    var isStreamControl: Bool {
        switch self {
        case .pauseStreams, .stopStreams, .pausePlayers, .stopPlayers, .stopRecorders, .resumeStreams: true
        default: false
        }
    }
}

/// Effects in a stable order for comparison where the spec gives no order between apps.
func unordered(_ effects: [PolicyEffect]) -> [String] { effects.map { "\($0)" }.sorted() }

extension Array where Element == PolicyEffect {
    var interruptions: [PolicyEffect] { filter(\.isInterruption) }
    var ducking: [PolicyEffect] { filter(\.isDucking) }
    var routeChanges: [PolicyEffect] { filter(\.isRouteChange) }
    var streamControl: [PolicyEffect] { filter(\.isStreamControl) }
}

// MARK: - Errors

/// Runs `body`, expects a SessionError with `code` whose message mentions every word of
/// `mentioning`, and returns it.
@discardableResult
func expectError(
    _ code: ErrorCode, mentioning words: [String] = [], sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) -> SessionError? {
    do {
        try body()
        Issue.record("expected \(code.name), but the call succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as SessionError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        for word in words {
            #expect(error.message.contains(word), "message should name \(word): \(error.message)", sourceLocation: sourceLocation)
        }
        return error
    } catch {
        Issue.record("unexpected error type: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Whether a message tells the reader what to do: it contains an imperative hint word.
func saysWhatToDo(_ message: String) -> Bool {
    let hints: Set<String> = [
        "use", "set", "wait", "grant", "stop", "add", "configure", "create", "declare", "prefer", "reset",
        "remove", "drop", "choose", "pick", "plug", "connect",
    ]
    let words = message.lowercased().split { !$0.isLetter }.map(String.init)
    // "cannot be set" states a fact, not an instruction.
    return words.indices.contains { hints.contains(words[$0]) && ($0 == 0 || words[$0 - 1] != "be") }
}

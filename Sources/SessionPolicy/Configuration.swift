// Session configuration and the compatibility tables of SPEC §1. Validation is all-or-nothing:
// a configuration either passes every rule or is rejected whole, so a session never holds a
// half-applied change.

/// The category × mode table (SPEC §1). `gameChat` is in no row: clients cannot set it.
public let acceptedModes: [Category: Set<Mode>] = [
    .ambient: [.default, .spokenAudio],
    .soloAmbient: [.default, .spokenAudio],
    .playback: [.default, .measurement, .moviePlayback, .shortFormVideo, .spokenAudio, .voicePrompt],
    .record: [.default, .measurement, .videoRecording],
    .playAndRecord: [.default, .measurement, .spokenAudio, .videoChat, .videoRecording, .voiceChat],
    .multiRoute: [.default, .measurement, .spokenAudio, .dualRoute],
]

/// The option × category table (SPEC §1). allowBluetoothHFP with multiRoute is further
/// restricted to mode dualRoute by `SessionConfiguration.validated`.
public let acceptedOptions: [CategoryOption: Set<Category>] = [
    .mixWithOthers: Set(Category.allCases),
    .duckOthers: Set(Category.allCases),
    .interruptSpokenAudioAndMixWithOthers: Set(Category.allCases),
    .overrideMutedMicrophoneInterruption: [.soloAmbient, .playback, .record, .playAndRecord, .multiRoute],
    .allowAirPlay: [.playAndRecord],
    .allowBluetoothA2DP: [.playAndRecord],
    .allowBluetoothHFP: [.record, .playAndRecord, .multiRoute],
    .defaultToSpeaker: [.playAndRecord, .multiRoute],
    .bluetoothHighQualityRecording: [.record, .playAndRecord, .multiRoute],
]

/// A session's category, mode, options and route-sharing policy, as accepted.
///
/// Values of this type are always valid: they are made only by `validated(...)` or `initial`.
public struct SessionConfiguration: Equatable, Sendable {
    public private(set) var category: Category
    public private(set) var mode: Mode
    /// The options the client asked for (after validation), without implied ones.
    public private(set) var requestedOptions: Set<CategoryOption>
    public private(set) var policy: RouteSharingPolicy

    /// A new session: soloAmbient, default mode, no options, default policy.
    public static let initial = SessionConfiguration(
        category: .soloAmbient, mode: .default, requestedOptions: [], policy: .default)

    private init(category: Category, mode: Mode, requestedOptions: Set<CategoryOption>, policy: RouteSharingPolicy) {
        self.category = category
        self.mode = mode
        self.requestedOptions = requestedOptions
        self.policy = policy
    }

    /// The options in force: requested ones, those implied by them and by the category,
    /// and the mode's side effects (SPEC §1 rules).
    public var effectiveOptions: Set<CategoryOption> {
        var options = requestedOptions
        if category == .ambient || options.contains(.duckOthers)
            || options.contains(.interruptSpokenAudioAndMixWithOthers)
        {
            options.insert(.mixWithOthers)
        }
        switch mode {
        case .voiceChat: options.insert(.allowBluetoothHFP)
        case .videoChat: options.formUnion([.allowBluetoothHFP, .defaultToSpeaker])
        default: break
        }
        return options
    }

    /// Effective options in table order, for display and the wire.
    public var effectiveOptionNames: [String] { effectiveOptions.sorted().map(\.rawValue) }

    /// Options accepted but without effect in this configuration, with why.
    public var ignoredOptions: [(option: CategoryOption, why: String)] {
        if requestedOptions.contains(.bluetoothHighQualityRecording) && mode != .default {
            return [(.bluetoothHighQualityRecording, "takes effect only in mode default (mode is \(mode.rawValue))")]
        }
        return []
    }

    public var isMixable: Bool { effectiveOptions.contains(.mixWithOthers) }

    /// Whether `bluetoothHighQualityRecording` is in force (SPEC §7: mode default only).
    public var wantsHighQualityBluetooth: Bool {
        requestedOptions.contains(.bluetoothHighQualityRecording) && mode == .default
    }

    /// Checks a whole new configuration against SPEC §1. Options are not sticky: the result
    /// holds exactly `options` (plus what they imply), never options of the previous one.
    public static func validated(
        category: Category, mode: Mode = .default, options: Set<CategoryOption> = [],
        policy: RouteSharingPolicy = .default
    ) throws(SessionError) -> SessionConfiguration {
        if mode == .gameChat {
            throw .badParam("mode gameChat cannot be set by a client; it is only reported. Use voiceChat or default")
        }
        guard acceptedModes[category, default: []].contains(mode) else {
            let allowed = Mode.allCases.filter { acceptedModes[category, default: []].contains($0) }
            throw .badParam(
                "mode \(mode.rawValue) is not accepted with category \(category.rawValue); use one of "
                    + allowed.map(\.rawValue).joined(separator: ", "))
        }
        for option in options.sorted() where !acceptedOptions[option, default: []].contains(category) {
            let allowed = Category.allCases.filter { acceptedOptions[option, default: []].contains($0) }
            throw .badParam(
                "option \(option.rawValue) is not accepted with category \(category.rawValue); drop it or use category "
                    + allowed.map(\.rawValue).joined(separator: " or "))
        }
        if category == .multiRoute && options.contains(.allowBluetoothHFP) && mode != .dualRoute {
            throw .badParam(
                "option allowBluetoothHFP is accepted with category multiRoute only in mode dualRoute",
                remedy: .addModeOrDropOption(.dualRoute))
        }
        if mode == .dualRoute && !options.contains(.allowBluetoothHFP) {
            throw .badParam(
                "mode dualRoute requires option allowBluetoothHFP in the same call",
                remedy: .addOption(.allowBluetoothHFP))
        }
        switch policy {
        case .independent:
            throw .badParam("route sharing policy independent cannot be set; use default, longFormAudio or longFormVideo")
        case .longFormAudio, .longFormVideo:
            guard category == .playback, [.default, .moviePlayback, .spokenAudio].contains(mode), options.isEmpty
            else {
                throw .badParam(
                    "route sharing policy \(policy.rawValue) needs category playback, mode default, moviePlayback or spokenAudio, and no options (got \(category.rawValue), \(mode.rawValue), \(options.count) option(s)); use policy default or change the rest"
                )
            }
        case .default:
            break
        }
        return SessionConfiguration(category: category, mode: mode, requestedOptions: options, policy: policy)
    }
}

/// Parsing of wire names into the vocabulary, each failure a badParam naming the value.
public enum Vocabulary {
    public static func category(_ name: String) throws(SessionError) -> Category {
        if name == "audioProcessing" {
            throw .badParam("category audioProcessing is deprecated upstream and not supported; use record or playAndRecord")
        }
        guard let value = Category(rawValue: name) else {
            throw .badParam("\"\(name)\" is not a category; use one of \(names(Category.self))")
        }
        return value
    }

    public static func mode(_ name: String) throws(SessionError) -> Mode {
        guard let value = Mode(rawValue: name) else {
            throw .badParam("\"\(name)\" is not a mode; use one of \(names(Mode.self))")
        }
        return value
    }

    public static func option(_ name: String) throws(SessionError) -> CategoryOption {
        guard let value = CategoryOption(wireName: name) else {
            throw .badParam("\"\(name)\" is not a category option; use one of \(names(CategoryOption.self))")
        }
        return value
    }

    public static func policy(_ name: String) throws(SessionError) -> RouteSharingPolicy {
        guard let value = RouteSharingPolicy(rawValue: name) else {
            throw .badParam("\"\(name)\" is not a route sharing policy; use one of \(names(RouteSharingPolicy.self))")
        }
        return value
    }

    static func names<T: CaseIterable & RawRepresentable>(_ type: T.Type) -> String where T.RawValue == String {
        T.allCases.map(\.rawValue).joined(separator: ", ")
    }
}

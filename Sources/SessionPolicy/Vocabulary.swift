// The words of an audio session: categories, modes, options, route-sharing policies,
// port types. Wire and CLI names are AVAudioSession's (SPEC §1, §4).

/// What an application means to do with audio. Decides input/output capability and
/// whether activation interrupts others by default.
public enum Category: String, CaseIterable, Sendable, Codable {
    case ambient, soloAmbient, playback, record, playAndRecord, multiRoute

    /// The category a new session starts with.
    public static let initial: Category = .soloAmbient

    public var hasInput: Bool {
        switch self {
        case .record, .playAndRecord, .multiRoute: true
        case .ambient, .soloAmbient, .playback: false
        }
    }

    public var hasOutput: Bool { self != .record }
}

/// A specialisation of a category (SPEC §1's second table).
public enum Mode: String, CaseIterable, Sendable, Codable {
    case `default`, gameChat, measurement, moviePlayback, shortFormVideo, spokenAudio,
        videoChat, videoRecording, voiceChat, voicePrompt, dualRoute
}

/// One category option. `rawValue` is the upstream bit value, for a numeric form.
public enum CategoryOption: String, CaseIterable, Sendable, Codable, Comparable {
    case mixWithOthers, duckOthers, allowBluetoothHFP, defaultToSpeaker,
        interruptSpokenAudioAndMixWithOthers, allowBluetoothA2DP, allowAirPlay,
        overrideMutedMicrophoneInterruption, bluetoothHighQualityRecording

    /// Upstream raw values (AVAudioSession.CategoryOptions).
    public var upstreamValue: UInt {
        switch self {
        case .mixWithOthers: 0x1
        case .duckOthers: 0x2
        case .allowBluetoothHFP: 0x4
        case .defaultToSpeaker: 0x8
        case .interruptSpokenAudioAndMixWithOthers: 0x11
        case .allowBluetoothA2DP: 0x20
        case .allowAirPlay: 0x40
        case .overrideMutedMicrophoneInterruption: 0x80
        case .bluetoothHighQualityRecording: 1 << 19
        }
    }

    /// Parses a wire name, accepting the pre-rename alias `allowBluetooth`.
    public init?(wireName: String) {
        if wireName == "allowBluetooth" {
            self = .allowBluetoothHFP
        } else if let option = CategoryOption(rawValue: wireName) {
            self = option
        } else {
            return nil
        }
    }

    public static func < (lhs: CategoryOption, rhs: CategoryOption) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// How a session's route is shared with others (SPEC §1).
public enum RouteSharingPolicy: String, CaseIterable, Sendable, Codable {
    case `default`, longFormAudio, longFormVideo, independent
}

/// Importance of a session in arbitration: a higher class cannot be interrupted by a lower one.
public enum PriorityClass: String, CaseIterable, Sendable, Codable, Comparable {
    case normal, call
    /// A declared recorder that must keep recording whatever other sessions do: no other
    /// session's activation interrupts it, not even another logger's (SPEC §3: "a recording
    /// session is never silently stopped"); a non-mixable activation beside it fails with
    /// insufficientPriority instead.
    case logger

    var rank: Int {
        switch self {
        case .normal: 0
        case .call: 1
        case .logger: 2
        }
    }
    public static func < (lhs: PriorityClass, rhs: PriorityClass) -> Bool { lhs.rank < rhs.rank }
}

/// AVAudioSession port types (SPEC §4).
public enum PortType: String, CaseIterable, Sendable, Codable {
    case builtInMic, headsetMic, lineIn, usbAudio, bluetoothHFP, bluetoothLE, bluetoothA2DP,
        headphones, lineOut, builtInSpeaker, builtInReceiver, HDMI, airPlay, carAudio,
        displayPort, fireWire, PCI, thunderbolt, virtual, AVB, continuityMicrophone

    /// A device built into the box rather than plugged in (never "external" in route choice).
    public var isBuiltIn: Bool {
        self == .builtInMic || self == .builtInSpeaker || self == .builtInReceiver
    }
}

/// Which way audio flows through a port group.
public enum PortDirection: String, CaseIterable, Sendable, Codable {
    case input, output, duplex

    public var canCapture: Bool { self != .output }
    public var canPlay: Bool { self != .input }
}

/// Bluetooth HFP link codec: what bandwidth the link really carries (SPEC §7).
public enum HFPCodec: String, CaseIterable, Sendable, Codable {
    case cvsd, msbc

    public var sampleRate: Int { self == .cvsd ? 8000 : 16000 }
}

/// Optional abilities a port declares in config.
public enum PortCapability: String, CaseIterable, Sendable, Codable {
    case highQualityRecording
}

/// Record permission of one application (SPEC §8).
public enum RecordPermission: String, CaseIterable, Sendable, Codable {
    case undetermined, denied, granted
}

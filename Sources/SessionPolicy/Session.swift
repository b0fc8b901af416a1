// One application's audio session as the policy sees it.

/// Whether a session is running audio, and if not, why.
public enum ActivationState: String, Sendable, Codable, CaseIterable {
    case inactive, active, interrupted
}

/// Interruption type with its upstream value (began = 1, ended = 0).
public enum InterruptionType: Int, Sendable, Codable {
    case ended = 0
    case began = 1

    public var name: String { self == .began ? "began" : "ended" }
}

/// Interruption reason with its upstream value.
public enum InterruptionReason: Int, Sendable, Codable {
    case `default` = 0
    case builtInMicMuted = 2
    case routeDisconnected = 4

    public var name: String {
        switch self {
        case .default: "default"
        case .builtInMicMuted: "builtInMicMuted"
        case .routeDisconnected: "routeDisconnected"
        }
    }
}

/// Why streams were stopped or paused; the archive records it as a segment's end reason.
public enum StreamStopReason: String, Sendable, Codable {
    case stop, interruption, routeChange, mediaServicesLost, deleted
    /// The session's category changed to one that cannot carry the stream (a player under
    /// `record`, a recorder under an output-only category).
    case categoryChange
}

/// What interrupted a session and what to give back when the interruption ends.
public struct Interruption: Equatable, Sendable {
    public enum Cause: Equatable, Sendable {
        /// A non-mixable activation of that session.
        case nonMixable(by: String)
        /// interruptSpokenAudioAndMixWithOthers of that session; always ends with shouldResume.
        case spokenAudio(by: String)
        /// The hardware mute switch of that input port.
        case hardwareMute(port: String)
        /// The output the session played to went away.
        case routeDisconnected
    }

    /// Who interrupted: the app of a session, the muted port, or nil for a lost output.
    public var by: String? {
        switch cause {
        case .nonMixable(let app), .spokenAudio(let app): app
        case .hardwareMute(let port): port
        case .routeDisconnected: nil
        }
    }

    public var cause: Cause
    public var reason: InterruptionReason
    /// Streams were running when it began: auto_resume brings them back.
    public var streamsWereRunning: Bool
}

/// An application's session: configuration, preferences, and the arbiter's view of its state.
///
/// Owned by a `SessionStore`; fields the arbiter decides are read-only outside the module.
public struct Session: Equatable, Sendable {
    public let app: String
    /// The Unix user that created it (peer credentials), or 0 for sessions from config.
    public var ownerUID: UInt32
    public internal(set) var configuration: SessionConfiguration = .initial
    public var priority: PriorityClass = .normal
    /// A session that must never interrupt others (config `background = yes`).
    public var background = false
    /// The microphone usage description; required for input categories.
    public var micUsage: String?
    /// Resume by itself on shouldResume (headless sessions, config `auto_resume = yes`).
    public var autoResume = false
    public var prefersInterruptionOnRouteDisconnect = false
    /// AVAudioSession's prefersNoInterruptionsFromSystemAlerts (iOS 14.5): activations of
    /// system-alert-class sessions (`isSystemAlert`) do not interrupt this one.
    public var prefersNoInterruptionsFromSystemAlerts = false
    /// AVAudioSession's prefersEchoCancelledInput (iOS 18.2): echo cancellation of the capture
    /// against the session's own output, without voiceChat's other processing; honoured while
    /// `isEchoCancelledInputAvailable` (`CaptureProcessing`).
    public var prefersEchoCancelledInput = false
    /// Declared in the config file (its declaration wins over persisted state).
    public var declaredInConfig = false
    /// The port its declared recorder records (config `record = PORT`): the route's input is
    /// this port while it is available and eligible, and none otherwise; a preferred input
    /// does not move it. nil: the input is chosen as for any session.
    public var declaredInput: String?
    public internal(set) var preferences = HardwarePreferences()
    public internal(set) var overrideSpeaker = false
    public internal(set) var inputMuted = false
    /// The arbiter's record: active or not, held by whom, interrupted why.
    public internal(set) var activation = Activation()
    /// What the daemon reports of its streams, and the hint other sessions' audio gives it.
    public internal(set) var streams = Streams()
    public internal(set) var route = Route.none
    public internal(set) var duckedBy: String?

    /// The arbiter's record of a session's activation. The store changes it; everyone reads.
    public struct Activation: Equatable, Sendable {
        public internal(set) var state: ActivationState = .inactive
        /// The live process that holds the activation (an application's pid), nil for
        /// activations that no process holds (recctl, the config's loggers): those persist
        /// until deactivated. Meaningful only while the session is active or interrupted; each
        /// activation sets it anew.
        public internal(set) var holder: Int32?
        public internal(set) var interruption: Interruption?
        /// Activation sequence number: the most recent ducker wins.
        var activatedAt = 0
        /// Streams to bring back when media services return (auto_resume).
        var resumeAfterReset = false
    }

    /// A session's streams as the daemon reports them (`SessionStore.report(.streams)`), and
    /// the hint that follows from the other sessions' streams.
    public struct Streams: Equatable, Sendable {
        /// Players or recorders run (not paused, not stopped).
        public internal(set) var running = false
        /// Some of its players play (not paused).
        public internal(set) var playing = false
        /// Another session whose audio is primary (non-mixable) plays: mixable sessions should
        /// silence their secondary audio. Told to them by `silenceSecondaryAudioHint` when it
        /// changes.
        public internal(set) var secondaryAudioShouldBeSilencedHint = false
    }

    public var state: ActivationState { activation.state }
    public var holder: Int32? { activation.holder }
    public var interruption: Interruption? { activation.interruption }
    public var streamsRunning: Bool { streams.running }
    public var playersRunning: Bool { streams.playing }
    public var secondaryAudioShouldBeSilencedHint: Bool { streams.secondaryAudioShouldBeSilencedHint }

    /// AVAudioSession's isEchoCancelledInputAvailable: playAndRecord, not measurement, on a
    /// route with both directions (`CaptureProcessing`).
    public var isEchoCancelledInputAvailable: Bool {
        CaptureProcessing.isEchoCancelledInputAvailable(
            category: configuration.category, mode: configuration.mode, routeHasInput: !route.inputs.isEmpty,
            routeHasOutput: !route.outputs.isEmpty)
    }

    /// What its mode and preference do to its capture now.
    public var captureProcessing: CaptureProcessing {
        CaptureProcessing.of(
            category: configuration.category, mode: configuration.mode,
            prefersEchoCancelledInput: prefersEchoCancelledInput, routeHasInput: !route.inputs.isEmpty,
            routeHasOutput: !route.outputs.isEmpty)
    }

    public init(app: String, ownerUID: UInt32) {
        self.app = app
        self.ownerUID = ownerUID
    }

    public var isActive: Bool { state == .active }
    public var isMixable: Bool { configuration.isMixable }

    /// System-alert class (what prefersNoInterruptionsFromSystemAlerts is about): a short
    /// notification sound or spoken prompt that would interrupt. In recd's terms a non-mixable
    /// session in category playback, mode voicePrompt, priority normal. Any other session is
    /// not an alert: a call-priority prompt is a higher-priority interruption and still wins.
    public var isSystemAlert: Bool {
        configuration.category == .playback && configuration.mode == .voicePrompt && !isMixable && priority == .normal
    }
}

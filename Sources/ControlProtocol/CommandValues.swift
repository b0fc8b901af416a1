// The values some commands carry: a player's target, a session's settings and preference
// changes, play, record-start and attach requests, a simulated device event. Plain values,
// decoded and encoded with their commands (Command.swift, Command+Encoding.swift).
import SessionPolicy

/// Where a player's audio goes: an output port and, optionally, which of its channels (1-based).
public struct PlayTarget: Sendable, Equatable {
    public var port: String
    public var channels: [Int]?

    public init(port: String, channels: [Int]? = nil) {
        self.port = port
        self.channels = channels
    }

    /// `PORT` or `PORT:CH,CH,...` as typed on a command line (recctl's `--to`).
    public init(commandLine text: String) throws(SessionError) {
        guard let colon = text.firstIndex(of: ":") else {
            self.init(port: text)
            return
        }
        let list = text[text.index(after: colon)...].split(separator: ",", omittingEmptySubsequences: false)
            .map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !list.isEmpty, list.allSatisfy({ $0 != nil }) else {
            throw SessionError(
                .badParam, "--to \(text): channels must be a comma-separated list of numbers, e.g. --to pa:1,2")
        }
        self.init(port: String(text[..<colon]), channels: list.compactMap { $0 })
    }

    var json: JSONValue {
        var fields: [(String, JSONValue)] = [("port", .string(port))]
        if let channels { fields.append(("channels", .array(channels.map { .number(Double($0)) }))) }
        return .object(fields)
    }
}

/// `session.set`: the whole configuration of a session (options are not sticky).
public struct SessionSettings: Sendable, Equatable {
    public var app: String
    public var category: Category
    public var mode: Mode
    public var options: Set<CategoryOption>
    public var policy: RouteSharingPolicy
    /// `.none`: leave the description as it is; `.some(nil)`: clear it.
    public var micUsage: String??
    public var prefersInterruptionOnRouteDisconnect: Bool?
    /// nil leaves it as it is.
    public var prefersNoInterruptionsFromSystemAlerts: Bool?

    public init(
        app: String, category: Category, mode: Mode = .default, options: Set<CategoryOption> = [],
        policy: RouteSharingPolicy = .default, micUsage: String?? = .none,
        prefersInterruptionOnRouteDisconnect: Bool? = nil, prefersNoInterruptionsFromSystemAlerts: Bool? = nil
    ) {
        self.prefersNoInterruptionsFromSystemAlerts = prefersNoInterruptionsFromSystemAlerts
        self.app = app
        self.category = category
        self.mode = mode
        self.options = options
        self.policy = policy
        self.micUsage = micUsage
        self.prefersInterruptionOnRouteDisconnect = prefersInterruptionOnRouteDisconnect
    }
}

/// `session.prefer`: hardware preferences to change; nil leaves one as it is.
public struct PreferenceChange: Sendable, Equatable {
    public var app: String
    /// Start from no preferences before applying the others.
    public var clear: Bool
    /// A port name, or `"none"` to clear the preferred input.
    public var input: String?
    public var sampleRate: Double?
    public var ioBuffer: Double?
    public var inputChannels: Int?
    public var outputChannels: Int?
    /// Not a hardware preference (`clear` leaves it), but set here too so that a client changes
    /// it without restating its configuration (AVAudioSession's own setter).
    public var prefersNoInterruptionsFromSystemAlerts: Bool?
    /// AVAudioSession's prefersEchoCancelledInput (playAndRecord only); `clear` leaves it.
    public var prefersEchoCancelledInput: Bool?

    public init(
        app: String, clear: Bool = false, input: String? = nil, sampleRate: Double? = nil, ioBuffer: Double? = nil,
        inputChannels: Int? = nil, outputChannels: Int? = nil, prefersNoInterruptionsFromSystemAlerts: Bool? = nil,
        prefersEchoCancelledInput: Bool? = nil
    ) {
        self.prefersNoInterruptionsFromSystemAlerts = prefersNoInterruptionsFromSystemAlerts
        self.prefersEchoCancelledInput = prefersEchoCancelledInput
        self.app = app
        self.clear = clear
        self.input = input
        self.sampleRate = sampleRate
        self.ioBuffer = ioBuffer
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
    }
}

/// `play`: a file (its descriptor rides with the request line; `file` names it for people),
/// or nothing to resume paused players.
public struct PlayRequest: Sendable, Equatable {
    public var app: String
    public var file: String?
    public var stream: String?
    public var to: PlayTarget?

    public init(app: String, file: String? = nil, stream: String? = nil, to: PlayTarget? = nil) {
        self.app = app
        self.file = file
        self.stream = stream
        self.to = to
    }
}

/// `record.start`: an input port, or one of the monitoring buses.
public struct RecordStartRequest: Sendable, Equatable {
    public var app: String
    public var stream: String?
    public var input: String?
    public var bus: String?
    /// Arms a level-triggered take: it starts when a channel's peak reaches this (dBFS).
    public var triggerDB: Double?
    /// A take ends this many seconds after the level fell below `triggerDB` (default 10).
    public var holdSeconds: Double?

    public init(
        app: String, stream: String? = nil, input: String? = nil, bus: String? = nil, triggerDB: Double? = nil,
        holdSeconds: Double? = nil
    ) {
        self.app = app
        self.stream = stream
        self.input = input
        self.bus = bus
        self.triggerDB = triggerDB
        self.holdSeconds = holdSeconds
    }
}

/// `session.attach`'s arguments: the application's JACK client and its ports. `playPorts` are
/// the client's output ports whose audio the session plays (to its output route);
/// `capturePorts` are its input ports that receive the session's input route.
public struct AttachRequest: Sendable, Equatable {
    public var app: String
    public var client: String
    public var playPorts: [String]
    public var capturePorts: [String]

    public init(app: String, client: String, playPorts: [String] = [], capturePorts: [String] = []) {
        self.app = app
        self.client = client
        self.playPorts = playPorts
        self.capturePorts = capturePorts
    }
}

/// A simulated ALSA event for `devices.inject` (tests and simulation only).
public enum InjectedDeviceEvent: Sendable, Equatable {
    case jackSense(card: String, control: String, plugged: Bool)
    case captureSwitch(card: String, control: String, on: Bool)
    case cardRemoved(card: String)
}

/// Every request, typed. `Command(request)` decodes and checks argument types (badParam naming
/// the key); `op` and `arguments` encode. Meaning (does the port exist, is 0...1 a valid mix)
/// is for the daemon and the policy to judge.

extension InjectedDeviceEvent {
    var json: JSONValue {
        switch self {
        case .jackSense(let card, let control, let plugged):
            ["type": "jackSense", "card": .string(card), "control": .string(control), "plugged": .bool(plugged)]
        case .captureSwitch(let card, let control, let on):
            ["type": "captureSwitch", "card": .string(card), "control": .string(control), "on": .bool(on)]
        case .cardRemoved(let card):
            ["type": "cardRemoved", "card": .string(card)]
        }
    }
}

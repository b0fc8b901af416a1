// Route choice (SPEC §4) as a pure function of the ports, their availability and connection
// order, the session's configuration and its preferences and overrides.

/// What the policy knows of one configured port group at one moment.
public struct PortState: Equatable, Sendable {
    public var name: String
    public var type: PortType
    public var direction: PortDirection
    /// Channels of the port (of its input side, for a duplex port).
    public var channels: Int
    /// Channels of its output side: a duplex port's earpiece may differ from its microphone.
    public var outputChannels: Int
    public var capabilities: Set<PortCapability>
    public var codec: HFPCodec?
    public var available: Bool
    /// Increases each time a port becomes available: higher is more recent ("last in wins").
    public var connectedOrder: Int

    public init(
        name: String, type: PortType, direction: PortDirection, channels: Int = 2,
        capabilities: Set<PortCapability> = [], codec: HFPCodec? = nil, available: Bool = true,
        connectedOrder: Int = 0, outputChannels: Int? = nil
    ) {
        self.name = name
        self.type = type
        self.direction = direction
        self.channels = channels
        self.outputChannels = outputChannels ?? channels
        self.capabilities = capabilities
        self.codec = codec
        self.available = available
        self.connectedOrder = connectedOrder
    }

    /// Bluetooth devices that carry a two-way call link (HFP, LE audio).
    public var isBluetoothDuplex: Bool { type == .bluetoothHFP || type == .bluetoothLE }

    /// Channels on the side a route uses it from: capture (an input) or playback (an output).
    public func channels(asOutput: Bool) -> Int { asOutput ? outputChannels : channels }
}

/// The ports a session's audio currently goes through.
public struct Route: Equatable, Sendable, Codable {
    public var inputs: [String]
    public var outputs: [String]

    public init(inputs: [String] = [], outputs: [String] = []) {
        self.inputs = inputs
        self.outputs = outputs
    }

    public static let none = Route()
}

/// Why a route changed (AVAudioSession.RouteChangeReason, with upstream codes).
public enum RouteChangeReason: Int, CaseIterable, Sendable, Codable {
    case unknown = 0
    case newDeviceAvailable = 1
    case oldDeviceUnavailable = 2
    case categoryChange = 3
    case override = 4
    case wakeFromSleep = 6
    case noSuitableRouteForCategory = 7
    case routeConfigurationChange = 8

    public var name: String { "\(self)" }
}

/// Capture bandwidth of an input in a route (SPEC §7).
public enum CaptureBandwidth: Equatable, Sendable {
    /// Full bandwidth at the JACK rate, 24-bit.
    case full
    /// Band-limited to what an HFP link carries, 16-bit at the codec's rate.
    case hfp(HFPCodec)

    public var name: String {
        switch self {
        case .full: "full"
        case .hfp(let codec): "hfp-\(codec.rawValue)"
        }
    }
}

/// Everything of a session that route choice depends on.
public struct RouteRequest: Equatable, Sendable {
    public var configuration: SessionConfiguration
    public var preferredInput: String?
    /// The session's declared recorder's port (`Session.declaredInput`): the only input it may
    /// have; it outranks `preferredInput`.
    public var declaredInput: String?
    /// `overrideOutputAudioPort speaker`, in force until the next route change.
    public var overrideSpeaker: Bool
    /// The configured region; `EU` disables bluetoothHighQualityRecording (SPEC §7).
    public var region: String?

    public init(
        configuration: SessionConfiguration, preferredInput: String? = nil, overrideSpeaker: Bool = false,
        region: String? = nil, declaredInput: String? = nil
    ) {
        self.configuration = configuration
        self.preferredInput = preferredInput
        self.declaredInput = declaredInput
        self.overrideSpeaker = overrideSpeaker
        self.region = region
    }
}

/// Chooses routes. Pure: the same ports and request always give the same route.
public enum RouteChooser {
    /// Output port types a multiRoute session can play to at once (builtInSpeaker only alone).
    public static let multiRouteOutputTypes: Set<PortType> = [.usbAudio, .lineOut, .headphones, .HDMI]
    /// Port types that can be the duplex secondary of a dualRoute session.
    public static let dualRouteSecondaryTypes: Set<PortType> = [.headsetMic, .bluetoothHFP, .bluetoothLE]

    public static func choose(ports: [PortState], for request: RouteRequest) -> Route {
        let config = request.configuration
        if config.category == .multiRoute {
            return config.mode == .dualRoute
                ? dualRoute(ports: ports, request: request) : multiRoute(ports: ports, request: request)
        }
        let options = config.effectiveOptions
        var input = config.category.hasInput ? chooseInput(ports: ports, request: request) : nil
        var output = config.category.hasOutput ? chooseOutput(ports: ports, request: request, excludingBluetooth: false) : nil

        if let chosen = input, chosen.isBluetoothDuplex, config.category.hasOutput, chosen.direction == .duplex {
            output = chosen  // an HFP microphone brings its earpiece along
        } else if let chosen = output, chosen.isBluetoothDuplex, config.category.hasInput {
            let preferred = request.preferredInput.flatMap { name in ports.first { $0.name == name } }
            if let preferred, preferred.available, isEligibleInput(preferred, request: request) {
                // An explicit non-Bluetooth input keeps the call link off the output too.
                output = chooseOutput(ports: ports, request: request, excludingBluetooth: true)
            } else if chosen.direction == .duplex, options.contains(.allowBluetoothHFP) {
                input = chosen
            }
        }
        if request.overrideSpeaker, config.category == .playAndRecord,
            let speaker = ports.first(where: { $0.available && $0.type == .builtInSpeaker && $0.direction.canPlay })
        {
            // The override takes the built-in speaker, and with it the built-in microphone when
            // the input was the Bluetooth device the output just left.
            output = speaker
            if let chosen = input, chosen.isBluetoothDuplex {
                input = byRecency(ports.filter { $0.available && !$0.isBluetoothDuplex && isEligibleInput($0, request: request) }).first
            }
        }
        return Route(inputs: input.map { [$0.name] } ?? [], outputs: output.map { [$0.name] } ?? [])
    }

    /// The capture bandwidth an input port gets in a session (SPEC §7; mode measurement: full).
    public static func bandwidth(of port: PortState, for request: RouteRequest) -> CaptureBandwidth {
        guard port.isBluetoothDuplex else { return .full }
        // Mode measurement promises the samples as the port gave them: no HFP band limit and
        // resampling (the port still needs allowBluetoothHFP to be eligible).
        if request.configuration.mode == .measurement { return .full }
        if highQualityAllowed(port, request: request) { return .full }
        return .hfp(port.codec ?? .cvsd)
    }

    static func highQualityAllowed(_ port: PortState, request: RouteRequest) -> Bool {
        request.configuration.wantsHighQualityBluetooth && port.capabilities.contains(.highQualityRecording)
            && request.region?.uppercased() != "EU"
    }

    /// Whether a session may capture from a port (HFP rules of SPEC §4, §7).
    public static func isEligibleInput(_ port: PortState, request: RouteRequest) -> Bool {
        guard port.direction.canCapture else { return false }
        if port.isBluetoothDuplex {
            return request.configuration.effectiveOptions.contains(.allowBluetoothHFP)
                || highQualityAllowed(port, request: request)
        }
        return true
    }

    static func isEligibleOutput(_ port: PortState, request: RouteRequest) -> Bool {
        guard port.direction.canPlay else { return false }
        let config = request.configuration
        let options = config.effectiveOptions
        switch port.type {
        case .bluetoothHFP, .bluetoothLE:
            return config.category.hasInput && options.contains(.allowBluetoothHFP)
        case .bluetoothA2DP:
            return config.category == .playAndRecord ? options.contains(.allowBluetoothA2DP) : !config.category.hasInput
        case .airPlay:
            return config.category == .playAndRecord ? options.contains(.allowAirPlay) : !config.category.hasInput
        case .builtInReceiver:
            return config.category == .playAndRecord
        default:
            return true
        }
    }

    /// Most recent first; among equals, external before built-in, then declaration order.
    static func byRecency(_ ports: [PortState]) -> [PortState] {
        ports.enumerated().sorted { lhs, rhs in
            if lhs.element.connectedOrder != rhs.element.connectedOrder {
                return lhs.element.connectedOrder > rhs.element.connectedOrder
            }
            if lhs.element.type.isBuiltIn != rhs.element.type.isBuiltIn { return !lhs.element.type.isBuiltIn }
            return lhs.offset < rhs.offset
        }.map(\.element)
    }

    static func chooseInput(ports: [PortState], request: RouteRequest) -> PortState? {
        let eligible = ports.filter { $0.available && isEligibleInput($0, request: request) }
        // A declared recorder's session shows what it records, or nothing while that port is gone.
        if let declared = request.declaredInput { return eligible.first { $0.name == declared } }
        if let name = request.preferredInput, let preferred = eligible.first(where: { $0.name == name }) {
            return preferred
        }
        return byRecency(eligible).first
    }

    static func chooseOutput(ports: [PortState], request: RouteRequest, excludingBluetooth: Bool) -> PortState? {
        let config = request.configuration
        let eligible = ports.filter {
            $0.available && isEligibleOutput($0, request: request) && !(excludingBluetooth && $0.isBluetoothDuplex)
        }
        let speaker = eligible.first { $0.type == .builtInSpeaker }
        if let external = byRecency(eligible.filter { !$0.type.isBuiltIn }).first { return external }
        if config.effectiveOptions.contains(.defaultToSpeaker), let speaker { return speaker }
        if config.category == .playAndRecord, let receiver = eligible.first(where: { $0.type == .builtInReceiver }) {
            return receiver
        }
        return speaker
    }

    static func multiRoute(ports: [PortState], request: RouteRequest) -> Route {
        let available = ports.filter(\.available)
        var outputs = available.filter { $0.direction.canPlay && multiRouteOutputTypes.contains($0.type) }
        if outputs.isEmpty, let speaker = available.first(where: { $0.type == .builtInSpeaker && $0.direction.canPlay }) {
            outputs = [speaker]
        }
        let input = chooseInput(ports: ports, request: request)
        return Route(inputs: input.map { [$0.name] } ?? [], outputs: outputs.map(\.name))
    }

    static func dualRoute(ports: [PortState], request: RouteRequest) -> Route {
        let available = ports.filter(\.available)
        let mic = available.first { $0.type == .builtInMic && $0.direction.canCapture }
        let speaker = available.first { $0.type == .builtInSpeaker && $0.direction.canPlay }
        let secondary = byRecency(
            available.filter { $0.direction == .duplex && dualRouteSecondaryTypes.contains($0.type) }
        ).first
        let inputs = [mic, secondary].compactMap { $0?.name }
        let outputs = [speaker, secondary].compactMap { $0?.name }
        return Route(inputs: inputs, outputs: outputs)
    }
}

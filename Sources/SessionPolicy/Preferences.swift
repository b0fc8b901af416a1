// Hardware preferences (SPEC §5): hints a session gives; the actual values come from JACK.

/// What a session would like of the hardware. Every field is optional: nil means no preference.
public struct HardwarePreferences: Equatable, Sendable, Codable {
    public var preferredInput: String?
    public var sampleRate: Double?
    public var ioBufferDuration: Double?
    public var inputChannels: Int?
    public var outputChannels: Int?

    public init(
        preferredInput: String? = nil, sampleRate: Double? = nil, ioBufferDuration: Double? = nil,
        inputChannels: Int? = nil, outputChannels: Int? = nil
    ) {
        self.preferredInput = preferredInput
        self.sampleRate = sampleRate
        self.ioBufferDuration = ioBufferDuration
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
    }

    public static let sampleRateRange: ClosedRange<Double> = 8000...384_000
    public static let ioBufferDurationRange: ClosedRange<Double> = 0.000_5...1.0

    /// Checks a change of preferences. `ports` are the configured ports; the channel limits are
    /// the largest channel count of an available port in each direction.
    public static func validate(
        _ prefs: HardwarePreferences, category: Category, ports: [PortState]
    ) throws(SessionError) {
        if let rate = prefs.sampleRate, !(rate.isFinite && sampleRateRange.contains(rate)) {
            throw .badParam("preferred sample rate \(rate) Hz is out of range; use 8000...384000")
        }
        if let duration = prefs.ioBufferDuration, !(duration.isFinite && ioBufferDurationRange.contains(duration)) {
            throw .badParam("preferred IO buffer duration \(duration) s is out of range; use 0.0005...1.0 seconds")
        }
        if let name = prefs.preferredInput {
            guard category.hasInput else {
                throw SessionError(
                    .incompatibleCategory,
                    "category \(category.rawValue) has no input, so it cannot prefer input \(name); use record, playAndRecord or multiRoute")
            }
            guard let port = ports.first(where: { $0.name == name }) else {
                let inputs = ports.filter(\.direction.canCapture).map(\.name).joined(separator: ", ")
                throw .badParam("\"\(name)\" is not a configured port; use one of the inputs: \(inputs)")
            }
            guard port.direction.canCapture else {
                throw .badParam("port \(name) is an output (\(port.type.rawValue)); prefer an input port")
            }
        }
        if let count = prefs.inputChannels {
            guard category.hasInput else {
                throw SessionError(
                    .incompatibleCategory,
                    "category \(category.rawValue) has no input, so preferred input channels cannot be set; use record, playAndRecord or multiRoute")
            }
            let limit = ports.filter { $0.available && $0.direction.canCapture }.map(\.channels).max() ?? 0
            guard (1...max(limit, 1)).contains(count), limit > 0 else {
                throw .badParam("preferred input channels \(count) is out of range; use 1...\(limit) (the most an available input has)")
            }
        }
        if let count = prefs.outputChannels {
            guard category.hasOutput else {
                throw SessionError(
                    .incompatibleCategory,
                    "category \(category.rawValue) has no output, so preferred output channels cannot be set; use playAndRecord or multiRoute to play and record")
            }
            let limit = ports.filter { $0.available && $0.direction.canPlay }.map(\.outputChannels).max() ?? 0
            guard (1...max(limit, 1)).contains(count), limit > 0 else {
                throw .badParam("preferred output channels \(count) is out of range; use 1...\(limit) (the most an available output has)")
            }
        }
    }

    /// The channels a capture of a port with `portChannels` channels uses: its first
    /// `inputChannels` (the preference), at most all of them (SPEC §5: a hint, never more).
    public func inputChannels(ofPort portChannels: Int) -> Int { min(inputChannels ?? portChannels, portChannels) }

    /// The channels a player on a port with `portChannels` channels plays to: its first
    /// `outputChannels`, at most all of them.
    public func outputChannels(ofPort portChannels: Int) -> Int { min(outputChannels ?? portChannels, portChannels) }

    /// The channels (1-based) of a port with `portChannels` channels a new player plays to when
    /// the request names none: its first `outputChannels`; nil for all of them (it follows
    /// the port as it is).
    public func playChannels(ofPort portChannels: Int) -> [Int]? {
        let preferred = outputChannels(ofPort: portChannels)
        return preferred < portChannels ? Array(1...max(preferred, 1)) : nil
    }
}

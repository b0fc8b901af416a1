// Silence and stall alarms in the config: `silence_threshold_db`, `silence_seconds`,
// `stall_seconds` and `on_silence`, in `[archive]` for every recorder and per `[session APP]`.

/// How recorders watch for silence, and what they run when it begins or ends. A plain value.
public struct SilenceSettings: Sendable, Equatable {
    /// Every channel's peak below this (dBFS) is silence (`silence_threshold_db`).
    public var thresholdDB: Double
    /// Seconds of silence that begin a silence (`silence_seconds`); 0 turns detection off.
    public var seconds: Double
    /// Seconds without a single frame from the source that make a recorder `stalled`
    /// (`stall_seconds`): a graph that stopped, a driver that stopped, a lost server. 0: no
    /// stall alarm (the gap is still recorded when the frames come back).
    public var stallSeconds: Double
    /// Absolute path of the program run on every change (`on_silence`), of silence and of a
    /// stall alike (`RECD_STATE` says which); nil: none.
    public var program: String?

    public static let defaultThresholdDB = -50.0
    public static let defaultSeconds = 30.0
    public static let defaultStallSeconds = 2.0
    public static let thresholdDBRange = -144.0...0.0
    public static let secondsRange = 0.0...86400.0
    /// Bounded above so that a typo cannot switch the alarm off for days; below, the tick
    /// (100–500 ms) and a long JACK period (8192 frames at 44.1 kHz: 186 ms) are the limit.
    public static let stallSecondsRange = 0.0...3600.0
    /// The config keys, as `[archive]` and `[session APP]` both take them.
    static let keys = ["silence_threshold_db", "silence_seconds", "stall_seconds", "on_silence"]

    public init(
        thresholdDB: Double = SilenceSettings.defaultThresholdDB, seconds: Double = SilenceSettings.defaultSeconds,
        stallSeconds: Double = SilenceSettings.defaultStallSeconds, program: String? = nil
    ) {
        self.thresholdDB = thresholdDB
        self.seconds = seconds
        self.stallSeconds = stallSeconds
        self.program = program
    }

    /// Whether recorders detect silence at all.
    public var isOn: Bool { seconds > 0 }

    /// These settings with what a session sets itself.
    public func applying(_ override: SilenceOverride) -> SilenceSettings {
        SilenceSettings(
            thresholdDB: override.thresholdDB ?? thresholdDB, seconds: override.seconds ?? seconds,
            stallSeconds: override.stallSeconds ?? stallSeconds, program: override.program ?? program)
    }
}

/// What a `[session APP]` section sets of the silence keys; nil keeps `[archive]`'s.
public struct SilenceOverride: Sendable, Equatable {
    public var thresholdDB: Double?
    public var seconds: Double?
    public var stallSeconds: Double?
    public var program: String?

    public init(
        thresholdDB: Double? = nil, seconds: Double? = nil, stallSeconds: Double? = nil, program: String? = nil
    ) {
        self.thresholdDB = thresholdDB
        self.seconds = seconds
        self.stallSeconds = stallSeconds
        self.program = program
    }
}

extension ConfigInterpreter {
    /// The silence keys of `[archive]` or a `[session APP]`.
    static func readSilence(_ fields: ConfigSectionFields, in issues: inout ConfigIssues) -> SilenceOverride {
        SilenceOverride(
            thresholdDB: fields["silence_threshold_db"]?.number(in: SilenceSettings.thresholdDBRange, in: &issues),
            seconds: fields["silence_seconds"]?.number(in: SilenceSettings.secondsRange, in: &issues),
            stallSeconds: fields["stall_seconds"]?.number(in: SilenceSettings.stallSecondsRange, in: &issues),
            program: fields["on_silence"]?.absolutePath(in: &issues))
    }
}

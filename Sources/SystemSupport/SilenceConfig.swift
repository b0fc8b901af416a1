// Silence alarms in the config (issue 15, item 1): `silence_threshold_db`, `silence_seconds`
// and `on_silence`, in `[archive]` for every recorder and per `[session APP]`.

/// How recorders watch for silence, and what they run when it begins or ends. A plain value.
public struct SilenceSettings: Sendable, Equatable {
    /// Every channel's peak below this (dBFS) is silence (`silence_threshold_db`).
    public var thresholdDB: Double
    /// Seconds of silence that begin a silence (`silence_seconds`); 0 turns detection off.
    public var seconds: Double
    /// Absolute path of the program run on every change (`on_silence`); nil: none.
    public var program: String?

    public static let defaultThresholdDB = -50.0
    public static let defaultSeconds = 30.0
    public static let thresholdDBRange = -144.0...0.0
    public static let secondsRange = 0.0...86400.0
    /// The config keys, as `[archive]` and `[session APP]` both take them.
    static let keys = ["silence_threshold_db", "silence_seconds", "on_silence"]

    public init(
        thresholdDB: Double = SilenceSettings.defaultThresholdDB, seconds: Double = SilenceSettings.defaultSeconds,
        program: String? = nil
    ) {
        self.thresholdDB = thresholdDB
        self.seconds = seconds
        self.program = program
    }

    /// Whether recorders detect silence at all.
    public var isOn: Bool { seconds > 0 }

    /// These settings with what a session sets itself.
    public func applying(_ override: SilenceOverride) -> SilenceSettings {
        SilenceSettings(
            thresholdDB: override.thresholdDB ?? thresholdDB, seconds: override.seconds ?? seconds,
            program: override.program ?? program)
    }
}

/// What a `[session APP]` section sets of the silence keys; nil keeps `[archive]`'s.
public struct SilenceOverride: Sendable, Equatable {
    public var thresholdDB: Double?
    public var seconds: Double?
    public var program: String?

    public init(thresholdDB: Double? = nil, seconds: Double? = nil, program: String? = nil) {
        self.thresholdDB = thresholdDB
        self.seconds = seconds
        self.program = program
    }
}

extension ConfigInterpreter {
    /// The silence keys of `[archive]` or a `[session APP]`.
    static func readSilence(_ fields: ConfigSectionFields, in issues: inout ConfigIssues) -> SilenceOverride {
        SilenceOverride(
            thresholdDB: fields["silence_threshold_db"]?.number(in: SilenceSettings.thresholdDBRange, in: &issues),
            seconds: fields["silence_seconds"]?.number(in: SilenceSettings.secondsRange, in: &issues),
            program: fields["on_silence"]?.absolutePath(in: &issues))
    }
}

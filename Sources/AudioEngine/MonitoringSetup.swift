/// DJ-style main/cue monitoring for one engine (SPEC §4 multiRoute, §12 `recctl cue`): which
/// sources go to the main bus (what the room hears, e.g. the PA) and which to the cue bus (what
/// the DJ pre-listens to on headphones), at what gain, and where the two buses come out.
///
/// The daemon maps one multiRoute session to it and hands it to `AudioEngine.setMonitoring`.
/// A value: the engine keeps a copy (`AudioEngine.monitoring`) and applies it again after a
/// reconnect.
///
/// Signal flow, every period (RealTime/MonitorMix.swift):
/// - main bus = Σ (sources with `toMain`) × gain; cue bus = Σ (sources with `toCue`) × gain;
/// - the main output group gets the main bus, added to whatever players write there;
/// - the cue output group gets `(1 − cueMix) × cue + cueMix × main`, or with `splitCue`
///   left = mono(cue) and right = mono(main), where mono(bus) = (L + R) / 2 (the mean of the
///   bus channels: −6 dB per channel, so a centred L = R signal keeps its level). With more
///   than two cue channels, even channels (0-based) take mono(cue) and odd ones mono(main).
///
/// Channel mapping: an input group's channel n feeds bus channel n; a group with fewer channels
/// than the bus repeats them (a mono microphone feeds both sides). A player feeds the buses
/// through its routes: the channel of its output group a route goes to is the bus channel it
/// feeds. Bus channel n goes to output channel n; an output group with more channels repeats
/// the bus channels, one with fewer takes the mean of the bus channels folded onto it (a mono
/// output gets (L + R) / 2).
public struct MonitoringSetup: Hashable, Sendable {
    /// The output group carrying the main bus (the PA); nil: the main bus goes nowhere (it can
    /// still be metered and tapped).
    public var mainOutput: String?
    /// The output group carrying the cue bus (headphones); nil: none. Must differ from
    /// `mainOutput`.
    public var cueOutput: String?
    /// What is on the buses. Each input group or player at most once.
    public var sources: [MonitoringSource]
    /// Blend of the main bus into the cue output: 0 = cue only ... 1 = main only.
    public var cueMix: Double
    /// Cue output left = cue summed to mono, right = main summed to mono (the cue output needs
    /// at least two channels). Overrides `cueMix` while on.
    public var splitCue: Bool
    /// Channels of each bus, 1...8.
    public var busChannels: Int

    public static let defaultBusChannels = 2

    public init(
        mainOutput: String? = nil, cueOutput: String? = nil, sources: [MonitoringSource] = [],
        cueMix: Double = 0, splitCue: Bool = false, busChannels: Int = MonitoringSetup.defaultBusChannels
    ) {
        self.mainOutput = mainOutput
        self.cueOutput = cueOutput
        self.sources = sources
        self.cueMix = cueMix
        self.splitCue = splitCue
        self.busChannels = busChannels
    }
}

/// One source on the monitoring buses: an input group (a deck return, a microphone) or a
/// player stream, with the buses it goes to and its gain on them.
///
/// A player that is a source does NOT also play directly to its own output group: while it is
/// in `MonitoringSetup.sources` (whatever its `toMain`/`toCue`), its routes feed the buses
/// instead, so it is heard only through them. Taking it out of `sources` sends it back to its
/// output group at once (no ramp: fade it first with `toMain`/`toCue` off if that matters).
public struct MonitoringSource: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        /// An input group, by name.
        case input(group: String)
        /// A player, by `PlayerHandle.id`. A player not (or no longer) in the engine
        /// contributes nothing.
        case player(PlayerHandleID)
    }

    public var kind: Kind
    /// On the main bus.
    public var toMain: Bool
    /// On the cue bus.
    public var toCue: Bool
    /// Gain on both buses, in dB (-infinity: silent).
    public var gainDecibels: Double

    public init(_ kind: Kind, toMain: Bool = false, toCue: Bool = false, gainDecibels: Double = 0) {
        self.kind = kind
        self.toMain = toMain
        self.toCue = toCue
        self.gainDecibels = gainDecibels
    }

    /// An input group as a source.
    public static func input(
        _ group: String, toMain: Bool = false, toCue: Bool = false, gainDecibels: Double = 0
    ) -> MonitoringSource {
        MonitoringSource(.input(group: group), toMain: toMain, toCue: toCue, gainDecibels: gainDecibels)
    }

    /// A player as a source.
    public static func player(
        _ id: PlayerHandleID, toMain: Bool = false, toCue: Bool = false, gainDecibels: Double = 0
    ) -> MonitoringSource {
        MonitoringSource(.player(id), toMain: toMain, toCue: toCue, gainDecibels: gainDecibels)
    }
}

/// A monitoring bus.
public enum Bus: String, Hashable, Sendable, CaseIterable {
    /// What the room hears (the PA).
    case main
    /// What the DJ pre-listens to (headphones).
    case cue
}

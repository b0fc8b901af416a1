/// How recd's JACK cycles ran since the engine connected: how late each started and how long
/// recd's work in it took (histograms in µs), and how many ended after the next cycle's start.
/// A long `duration` is recd's own work; a long `startDelay` is time before recd was run (the
/// clients before it in the graph, the kernel's wake-up, a virtual machine's host).
public struct CycleTimeReport: Sendable, Equatable {
    /// Upper bounds of the buckets but the last, in µs (25 · 2^k); the last bucket is +Inf.
    public var boundsMicros: [UInt64]
    /// Cycles per bucket (not cumulative), `boundsMicros.count + 1` of them: from JACK's start
    /// of the cycle (jack_get_cycle_times) to the callback's entry.
    public var startDelayCounts: [UInt64]
    /// Cycles per bucket: from the callback's entry to the end of recd's work in it.
    public var durationCounts: [UInt64]
    public var maxStartDelayMicros: UInt64
    public var maxDurationMicros: UInt64
    /// Cycles whose work ended after the next cycle's scheduled start (jack_get_cycle_times: the
    /// server's schedule; a server running behind makes its cycles late by this too).
    public var lateCycles: UInt64
    /// Cycles whose work alone took longer than the period: late however early it started.
    /// `lateCycles` less these were late because they started late.
    public var overlongCycles: UInt64
    public var cycles: UInt64
    public var startDelayMicrosTotal: UInt64
    public var durationMicrosTotal: UInt64

    public init(
        boundsMicros: [UInt64], startDelayCounts: [UInt64], durationCounts: [UInt64], maxStartDelayMicros: UInt64,
        maxDurationMicros: UInt64, lateCycles: UInt64, overlongCycles: UInt64, cycles: UInt64, startDelayMicrosTotal: UInt64,
        durationMicrosTotal: UInt64
    ) {
        self.boundsMicros = boundsMicros
        self.startDelayCounts = startDelayCounts
        self.durationCounts = durationCounts
        self.maxStartDelayMicros = maxStartDelayMicros
        self.maxDurationMicros = maxDurationMicros
        self.lateCycles = lateCycles
        self.overlongCycles = overlongCycles
        self.cycles = cycles
        self.startDelayMicrosTotal = startDelayMicrosTotal
        self.durationMicrosTotal = durationMicrosTotal
    }
}

// Values the engine hands out: meter readings, JACK connections, group latencies. Any thread.

#if canImport(Glibc)
    import Glibc  // log10
#endif

/// One channel's level over a metering interval. Linear values; `…Decibels` give dBFS.
public struct MeterReading: Equatable, Sendable {
    public var group: String
    /// 0-based channel within the group.
    public var channel: Int
    public var direction: GroupDirection
    /// Largest |sample|.
    public var peak: Float
    /// Root mean square.
    public var rms: Float
    /// Frames measured (0: no period ran since the last reading).
    public var frames: Int

    public init(
        group: String, channel: Int, direction: GroupDirection, peak: Float, rms: Float, frames: Int
    ) {
        self.group = group
        self.channel = channel
        self.direction = direction
        self.peak = peak
        self.rms = rms
        self.frames = frames
    }

    init(
        group: String, channel: Int, direction: GroupDirection,
        taken: (peak: Float, sumOfSquares: Double, frames: Int)
    ) {
        let rms =
            taken.frames > 0 ? Float((taken.sumOfSquares / Double(taken.frames)).squareRoot()) : 0
        self.init(
            group: group, channel: channel, direction: direction, peak: taken.peak, rms: rms,
            frames: taken.frames)
    }

    /// recd's port name for this channel, e.g. `mic_1`; for a bus `bus:main_1` (group names
    /// cannot hold a colon, so it never collides with a group's).
    public var name: String {
        direction == .bus ? "bus:\(group)_\(channel + 1)" : "\(group)_\(channel + 1)"
    }
    /// Peak in dBFS, floored at -120.
    public var peakDecibels: Double { Self.decibels(peak) }
    /// RMS in dBFS, floored at -120.
    public var rmsDecibels: Double { Self.decibels(rms) }

    static func decibels(_ linear: Float) -> Double {
        max(-120, 20 * log10(Double(max(linear, 1e-7))))
    }
}

/// A JACK connection by full port names: from an output port (`source`) to an input port.
public struct JackConnection: Hashable, Sendable, CustomStringConvertible {
    public var source: String
    public var destination: String

    public init(source: String, destination: String) {
        self.source = source
        self.destination = destination
    }

    public var description: String { "\(source) → \(destination)" }
}

/// The latency JACK reports between a group and the outside world.
public struct GroupLatency: Equatable, Sendable {
    public var group: String
    public var direction: GroupDirection
    public var frames: ClosedRange<Int>
    public var sampleRate: Int

    /// The larger bound in seconds (what AVAudioSession's input/outputLatency report).
    public var seconds: Double {
        sampleRate > 0 ? Double(frames.upperBound) / Double(sampleRate) : 0
    }
}

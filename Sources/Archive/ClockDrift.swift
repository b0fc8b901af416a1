// How fast a stream's sample clock runs against the system's monotonic clock: the segment's
// CLOCK_DRIFT_PPM. Stalls and jumps of the audio clock are gaps; what is
// left, the slow drift, is measured here and reported, not corrected.

/// A least-squares fit of timeline frames against monotonic time, fed one stamp at a time.
/// Pure arithmetic, no clock: any thread, one at a time.
public struct ClockDriftFit: Sendable {
    /// Stamps closer together than this span give no figure (scheduling jitter of a few
    /// milliseconds would dominate it).
    public static let minimumSpanMicros = 2_000_000

    private var origin: ClockStamp?
    private var last: ClockStamp?
    private var count = 0.0
    private var sumX = 0.0
    private var sumY = 0.0
    private var sumXX = 0.0
    private var sumXY = 0.0

    public init() {}

    /// Adds a stamp; a stamp that does not move on (the same period read twice, a clock that
    /// went backwards) is ignored.
    public mutating func add(_ stamp: ClockStamp) {
        if let last, stamp.frames <= last.frames || stamp.micros <= last.micros { return }
        let origin = self.origin ?? stamp
        self.origin = origin
        last = stamp
        // Seconds and frames from the first stamp: small numbers keep the sums exact enough.
        let x = Double(stamp.micros - origin.micros) / 1e6
        let y = Double(stamp.frames - origin.frames)
        count += 1
        sumX += x
        sumY += y
        sumXX += x * x
        sumXY += x * y
    }

    /// Parts per million by which the frames came faster (positive) or slower (negative) than
    /// `nominalRate` per second of the monotonic clock; nil with stamps spanning less than
    /// `minimumSpanMicros`, or a rate of 0.
    public func partsPerMillion(nominalRate: Int) -> Double? {
        guard nominalRate > 0, let origin, let last, last.micros - origin.micros >= Self.minimumSpanMicros,
            count >= 2
        else { return nil }
        let spread = sumXX - sumX * sumX / count
        guard spread > 0 else { return nil }
        let slope = (sumXY - sumX * sumY / count) / spread
        let ppm = (slope / Double(nominalRate) - 1) * 1e6
        return ppm.isFinite ? ppm : nil
    }

    /// The fit of `stamps` in order (`add` each).
    public static func partsPerMillion(_ stamps: [ClockStamp], nominalRate: Int) -> Double? {
        var fit = ClockDriftFit()
        for stamp in stamps { fit.add(stamp) }
        return fit.partsPerMillion(nominalRate: nominalRate)
    }

    /// The comment's text: one decimal (`-12.3`).
    public static func commentValue(_ ppm: Double) -> String { String((ppm * 10).rounded() / 10) }
}

/// A step of the wall clock against the monotonic one (settimeofday, an NTP step): the
/// recorder's time line moves by it, in a new segment. Pure: any thread.
public enum ClockStep {
    /// Steps smaller than this are not acted on (the two clocks are read one after the other).
    public static let thresholdNanoseconds: Int64 = 20_000_000

    /// How far the wall clock stepped since `offset` was read, when `now` says it did.
    public static func step(from offset: Int64, to now: Int64) -> Int64? {
        let (delta, overflow) = now.subtractingReportingOverflow(offset)
        guard !overflow, delta > thresholdNanoseconds || delta < -thresholdNanoseconds else { return nil }
        return delta
    }
}

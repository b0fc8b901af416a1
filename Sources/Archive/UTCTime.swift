// An instant in UTC with nanosecond resolution, and the sample arithmetic that ties frame
// counts to it. Integer-only: a segment's start is the stream's start plus frames / rate,
// computed the same way every time (no wall-clock reads per sample, no float drift).

import Platform

/// An instant in UTC, as nanoseconds since 1970-01-01T00:00:00Z. A plain value: any thread.
public struct UTCTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanosecondsSinceEpoch: Int64

    public init(nanosecondsSinceEpoch: Int64) { self.nanosecondsSinceEpoch = nanosecondsSinceEpoch }

    public init(secondsSinceEpoch seconds: Int64, nanoseconds: Int64 = 0) {
        nanosecondsSinceEpoch = seconds * 1_000_000_000 + nanoseconds
    }

    public init(microsecondsSinceEpoch micros: Int64) { nanosecondsSinceEpoch = micros * 1_000 }

    /// The system's real-time clock now (CLOCK_REALTIME).
    public static func now() -> UTCTime {
        UTCTime(nanosecondsSinceEpoch: SystemClock.realtimeNanoseconds())
    }

    public static func < (lhs: UTCTime, rhs: UTCTime) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }

    /// Whole seconds since the epoch (rounded down, also before 1970).
    public var secondsSinceEpoch: Int64 { floorDivide(nanosecondsSinceEpoch, 1_000_000_000) }
    /// Microseconds since the epoch (rounded down): what the index stores.
    public var microsecondsSinceEpoch: Int64 { floorDivide(nanosecondsSinceEpoch, 1_000) }

    /// The instant `frames` samples later at `sampleRate` (rounded down to the nanosecond).
    /// Exact for any frame count a recorder can reach: no overflow for centuries of audio. Total
    /// for any arguments (numbers read back from the archive are not trusted): a rate below 1
    /// counts as 1, and a result past what 64 bits of nanoseconds hold stops at that end.
    public func advanced(byFrames frames: Int, sampleRate: Int) -> UTCTime {
        let rate = Int64(max(sampleRate, 1))
        let whole = Int64(frames) / rate
        let rest = Int64(frames) % rate
        let (wholeNanos, wholeOverflow) = whole.multipliedReportingOverflow(by: 1_000_000_000)
        // |rest| < rate ≤ Int.max, and rate ≤ 2^63 / 10^9 for any real rate: beyond it, saturate.
        let (restScaled, restOverflow) = rest.multipliedReportingOverflow(by: 1_000_000_000)
        guard !wholeOverflow, !restOverflow else { return saturated(towardsPositive: frames > 0) }
        return adding(nanoseconds: wholeNanos, thenAdding: restScaled / rate)
    }

    /// The instant `seconds` later; past the ends of 64-bit nanoseconds (or NaN: no change), it
    /// stops at that end.
    public func advanced(bySeconds seconds: Double) -> UTCTime {
        let nanos = (seconds * 1e9).rounded()
        guard !nanos.isNaN else { return self }
        guard abs(nanos) < 9.2e18 else { return saturated(towardsPositive: nanos > 0) }
        return adding(nanoseconds: Int64(nanos), thenAdding: 0)
    }

    private func adding(nanoseconds first: Int64, thenAdding second: Int64) -> UTCTime {
        let (partial, firstOverflow) = nanosecondsSinceEpoch.addingReportingOverflow(first)
        let (sum, secondOverflow) = partial.addingReportingOverflow(second)
        guard !firstOverflow, !secondOverflow else { return saturated(towardsPositive: first > 0 || second > 0) }
        return UTCTime(nanosecondsSinceEpoch: sum)
    }

    private func saturated(towardsPositive: Bool) -> UTCTime {
        UTCTime(nanosecondsSinceEpoch: towardsPositive ? .max : .min)
    }

    /// `micros` as an instant; nil when 64 bits of nanoseconds cannot hold it (years before
    /// 1678 or after 2261): for numbers read back from the index.
    public init?(checkedMicrosecondsSinceEpoch micros: Int64) {
        let (nanos, overflow) = micros.multipliedReportingOverflow(by: 1_000)
        guard !overflow else { return nil }
        self.init(nanosecondsSinceEpoch: nanos)
    }

    /// Seconds and nanoseconds as an instant; nil when 64 bits of nanoseconds cannot hold it.
    public init?(checkedSecondsSinceEpoch seconds: Int64, nanoseconds: Int64) {
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, sumOverflow) = scaled.addingReportingOverflow(nanoseconds)
        guard !overflow, !sumOverflow else { return nil }
        self.init(nanosecondsSinceEpoch: sum)
    }

    /// `2026-11-29T23:17:01.123456Z`: ISO 8601, microseconds, what START_TIME holds.
    public var iso8601: String {
        let parts = calendarParts
        let micros = floorModulo(nanosecondsSinceEpoch, 1_000_000_000) / 1_000
        return "\(pad(parts.year, 4))-\(pad(parts.month, 2))-\(pad(parts.day, 2))T"
            + "\(pad(parts.hour, 2)):\(pad(parts.minute, 2)):\(pad(parts.second, 2)).\(pad(Int(micros), 6))Z"
    }

    /// `20261129T231701.123Z`: the compact form in segment file names (milliseconds).
    public var fileNameStamp: String {
        let parts = calendarParts
        let millis = floorModulo(nanosecondsSinceEpoch, 1_000_000_000) / 1_000_000
        return "\(pad(parts.year, 4))\(pad(parts.month, 2))\(pad(parts.day, 2))T"
            + "\(pad(parts.hour, 2))\(pad(parts.minute, 2))\(pad(parts.second, 2)).\(pad(Int(millis), 3))Z"
    }

    /// `2026/11/29`: the day folder of a segment starting at this instant.
    public var dayPath: String {
        let parts = calendarParts
        return "\(pad(parts.year, 4))/\(pad(parts.month, 2))/\(pad(parts.day, 2))"
    }

    public var description: String { iso8601 }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (what `iso8601` writes; up to 9 fraction digits).
    public init?(iso8601 text: String) {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == 45, bytes[7] == 45, bytes[10] == 84 || bytes[10] == 116,
            bytes[13] == 58, bytes[16] == 58, bytes.last == 90 || bytes.last == 122,
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var nanos: Int64 = 0
        if bytes.count > 20 {
            guard bytes[19] == 46, bytes.count - 21 <= 9, bytes.count - 21 >= 1,
                let fraction = number(20..<(bytes.count - 1))
            else { return nil }
            var scale: Int64 = 1
            for _ in 0..<(9 - (bytes.count - 21)) { scale *= 10 }
            nanos = Int64(fraction) * scale
        } else if bytes.count != 20 {
            return nil
        }
        let seconds = SystemClock.secondsSinceEpoch(
            utc: CalendarParts(year: year, month: month, day: day, hour: hour, minute: minute, second: second))
        // Years 0000–9999 parse; those 64-bit nanoseconds cannot hold (before 1678, after 2261) do not.
        self.init(checkedSecondsSinceEpoch: Int64(seconds), nanoseconds: nanos)
    }

    private var calendarParts: CalendarParts { SystemClock.utcCalendar(secondsSinceEpoch: secondsSinceEpoch) }
}

private func pad(_ value: Int, _ width: Int) -> String {
    let digits = String(value)
    return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}

func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
    let quotient = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient
}

func floorModulo(_ a: Int64, _ b: Int64) -> Int64 { a - floorDivide(a, b) * b }

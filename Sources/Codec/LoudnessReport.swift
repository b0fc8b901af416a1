// Loudness compliance of a stretch of audio (`/api/loudness`, `recctl archive loudness`): its
// integrated loudness, loudness range and maximum true peak (one `LoudnessMeter` over the whole
// stretch, so integrated loudness is gated over all its 400 ms blocks, never an average of
// per-segment readings), its short-term loudness at every whole second (the plot), and the
// seconds whose short-term loudness lies above the target plus the tolerance. recd and recctl
// both measure with this type, so the page, the CSV and recctl print the same numbers.
// Threads: one at a time per builder (a plain class); reports are plain values.

/// What a stretch's loudness report says.
public struct LoudnessReport: Sendable, Equatable {
    /// Integrated loudness, range, maximum true peak (nil where there is nothing to measure).
    public var summary: LoudnessSummary
    /// Frames measured, and their rate.
    public var frames: Int
    public var sampleRate: Int
    /// The short-term (3 s) loudness at the end of each whole second, LUFS (nil: silence, or
    /// the first 2 s).
    public var shortTerm: [Double?]
    /// The target (LUFS) and the tolerance (LU) the report was judged against.
    public var target: Double
    public var tolerance: Double
    /// Seconds whose short-term loudness is above `target + tolerance`.
    public var secondsAbove: Int

    /// Seconds measured.
    public var seconds: Double { sampleRate > 0 ? Double(frames) / Double(sampleRate) : 0 }
}

/// Builds a `LoudnessReport` from interleaved samples as they pass.
public final class LoudnessReportBuilder {
    /// The longest stretch one report measures: 25 hours (a day, with room), so its per-second
    /// series is bounded where it enters (90,000 values).
    public static let longestSeconds = 25 * 3600

    private let meter: LoudnessMeter
    private let target: Double
    private let tolerance: Double
    private var shortTerm: [Double?] = []
    private var secondsAbove = 0
    /// Frames into the current second.
    private var intoSecond = 0

    public init(channels: Int, sampleRate: Int, target: Double, tolerance: Double) throws(MediaError) {
        meter = try LoudnessMeter(channels: channels, sampleRate: sampleRate)
        self.target = target
        self.tolerance = tolerance
    }

    /// Adds interleaved frames; past `longestSeconds` the rest is not measured (false).
    @discardableResult
    public func add(_ samples: UnsafeBufferPointer<Float>) -> Bool {
        guard let base = samples.baseAddress else { return true }
        let channels = meter.channels
        var frames = samples.count / channels
        var offset = 0
        while frames > 0 {
            guard shortTerm.count < Self.longestSeconds else { return false }
            let n = min(frames, meter.sampleRate - intoSecond)
            meter.add(interleaved: base + offset * channels, frames: n, stride: channels, firstChannel: 0)
            intoSecond += n
            offset += n
            frames -= n
            if intoSecond == meter.sampleRate {
                intoSecond = 0
                let reading = meter.shortTermLUFS
                shortTerm.append(reading)
                if let reading, reading > target + tolerance { secondsAbove += 1 }
            }
        }
        return true
    }

    /// The report of everything added.
    public var report: LoudnessReport {
        LoudnessReport(
            summary: meter.summary, frames: meter.framesAdded, sampleRate: meter.sampleRate, shortTerm: shortTerm,
            target: target, tolerance: tolerance, secondsAbove: secondsAbove)
    }

    /// Reads `reader` to its end into a report (at most `longestSeconds`).
    public static func measure(_ reader: AudioFileReader, target: Double, tolerance: Double) throws(MediaError)
        -> LoudnessReport
    {
        let builder = try LoudnessReportBuilder(
            channels: reader.channels, sampleRate: reader.sampleRate, target: target, tolerance: tolerance)
        var chunk = [Float](repeating: 0, count: 4800 * reader.channels)
        while true {
            let frames = try chunk.withUnsafeMutableBufferPointer { buffer throws(MediaError) in
                try reader.read(into: buffer, maxFrames: 4800)
            }
            if frames == 0 { break }
            let more = chunk.withUnsafeBufferPointer { buffer in
                builder.add(UnsafeBufferPointer(rebasing: buffer[..<(frames * reader.channels)]))
            }
            if !more { break }
        }
        return builder.report
    }
}

extension LoudnessReport {
    /// The report as CSV: one `summary` block of name,value lines, then `second,short_term_lufs`
    /// rows (`start`: the stretch's start as the caller writes times; `timeOfSecond(i)`: the time
    /// at the end of second `i`, 0-based, for the rows' first column).
    public func csv(feed: String, start: String, timeOfSecond: (Int) -> String) -> String {
        func number(_ value: Double?) -> String { value.map { Self.fixed($0) } ?? "" }
        var lines = [
            "feed,from,seconds,integrated_lufs,range_lu,true_peak_dbtp,target_lufs,tolerance_lu,seconds_above",
            [
                feed, start, Self.fixed(seconds), number(summary.integratedLUFS), number(summary.rangeLU),
                number(summary.truePeakDBTP), Self.fixed(target), Self.fixed(tolerance), String(secondsAbove),
            ].joined(separator: ","),
            "",
            "time_utc,short_term_lufs",
        ]
        for (index, value) in shortTerm.enumerated() {
            lines.append("\(timeOfSecond(index)),\(number(value))")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Two decimals, as the segments' loudness tags have them.
    public static func fixed(_ value: Double) -> String {
        guard value.isFinite else { return "" }
        let hundredths = (value * 100).rounded()
        let negative = hundredths < 0
        let magnitude = Int64(abs(hundredths))
        let fraction = magnitude % 100
        return (negative ? "-" : "") + "\(magnitude / 100)." + (fraction < 10 ? "0" : "") + "\(fraction)"
    }
}

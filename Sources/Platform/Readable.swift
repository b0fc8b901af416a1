// Numbers as a person writes them, for every text recd and recctl show people (log lines,
// recctl's words, error messages): durations with a unit and at most three significant digits,
// counts with their noun in the right number, positions in a recording as times with their
// frame in brackets. JSON and tags keep exact numbers; this is for words only.
// Pure functions of their arguments: any thread. No Foundation (Platform's imports).

/// How recd and recctl write durations, counts and positions for people.
public enum Readable {
    /// A duration with its unit: `0.011706785` → "11.7 ms", `0.0363` → "36.3 ms", `1.5` →
    /// "1.5 s", `360` → "6 min", `3725` → "1 h 2 min", `90000` → "1 day 1 h". At most three
    /// significant digits below a minute; whole seconds, minutes and hours above it.
    public static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "unknown" }
        if seconds < 0 { return "-" + duration(-seconds) }
        if seconds == 0 { return "0 s" }
        // Each unit up to where its rounded figure would reach the next one's.
        let small: [(scale: Double, unit: String)] = [(1e9, "ns"), (1e6, "µs"), (1e3, "ms"), (1, "s")]
        for (index, step) in small.enumerated() {
            let figure = rounded(seconds * step.scale, significantDigits: 3)
            let limit = index + 1 < small.count ? 1000.0 : 60.0
            if figure < limit { return decimal(figure, significantDigits: 3) + " " + step.unit }
        }
        let wholeSeconds = Int((seconds).rounded())
        if wholeSeconds < 3600 { return pair(wholeSeconds / 60, "min", wholeSeconds % 60, "s") }
        let minutes = Int((seconds / 60).rounded())
        if minutes < 24 * 60 { return pair(minutes / 60, "h", minutes % 60, "min") }
        let hours = Int((seconds / 3600).rounded())
        return count(hours / 24, "day") + (hours % 24 == 0 ? "" : " \(hours % 24) h")
    }

    /// A count with its noun: "1 chain", "2 chains", "0 chains"; `plural` for nouns that do not
    /// take an s ("1 entry", "2 entries").
    public static func count(_ number: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(number) " + (number == 1 ? singular : plural ?? singular + "s")
    }

    /// A place in a recording, from its start: "16.54 s", "2:16.54", "1:02:16.54" (to the
    /// hundredth of a second: a position is read against a waveform, not as a length).
    public static func position(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "unknown" }
        let sign = seconds < 0 ? "-" : ""
        let hundredths = Int((abs(seconds) * 100).rounded())
        let fraction = two(hundredths % 100)
        let totalSeconds = hundredths / 100
        if totalSeconds < 60 { return "\(sign)\(totalSeconds).\(fraction) s" }
        let (hours, minutes, secondsPart) = (totalSeconds / 3600, totalSeconds / 60 % 60, totalSeconds % 60)
        let clock = hours > 0 ? "\(hours):\(two(minutes))" : "\(minutes)"
        return "\(sign)\(clock):\(two(secondsPart)).\(fraction)"
    }

    /// A place given in frames at `sampleRate`: "16.54 s [793882]"; the frames alone when the
    /// rate is not known.
    public static func position(frames: Int, sampleRate: Int?) -> String {
        guard let sampleRate, sampleRate > 0 else { return count(frames, "frame") }
        return "\(position(Double(frames) / Double(sampleRate))) [\(frames)]"
    }

    /// A length given in frames at `sampleRate`: "36.3 ms [1744]"; the frames alone when the
    /// rate is not known.
    public static func length(frames: Int, sampleRate: Int?) -> String {
        guard let sampleRate, sampleRate > 0 else { return count(frames, "frame") }
        return "\(duration(Double(frames) / Double(sampleRate))) [\(frames)]"
    }

    // MARK: Digits

    /// `value` (positive) rounded to `significantDigits`.
    static func rounded(_ value: Double, significantDigits: Int) -> Double {
        let decimals = decimalsFor(value, significantDigits: significantDigits)
        let scale = power10(decimals)
        return (value * scale).rounded() / scale
    }

    /// `value` (positive, already rounded) written with at most `significantDigits`, trailing
    /// zeros dropped: 11.7, 36.3, 1.5, 6, 850.
    static func decimal(_ value: Double, significantDigits: Int) -> String {
        let decimals = max(0, decimalsFor(value, significantDigits: significantDigits))
        let scaled = Int((value * power10(decimals)).rounded())
        var digits = String(scaled)
        guard decimals > 0 else { return digits }
        if digits.count <= decimals { digits = String(repeating: "0", count: decimals - digits.count + 1) + digits }
        var whole = String(digits.dropLast(decimals))
        var fraction = String(digits.suffix(decimals))
        while fraction.hasSuffix("0") { fraction.removeLast() }
        if whole.isEmpty { whole = "0" }
        return fraction.isEmpty ? whole : whole + "." + fraction
    }

    /// How many decimals keep `significantDigits` of `value` (negative: rounding to tens, ...).
    private static func decimalsFor(_ value: Double, significantDigits: Int) -> Int {
        guard value > 0 else { return 0 }
        var exponent = 0
        var scaled = value
        while scaled >= 10 {
            scaled /= 10
            exponent += 1
        }
        while scaled < 1 {
            scaled *= 10
            exponent -= 1
        }
        return significantDigits - 1 - exponent
    }

    private static func power10(_ exponent: Int) -> Double {
        var result = 1.0
        for _ in 0..<abs(exponent) { result *= 10 }
        return exponent < 0 ? 1 / result : result
    }

    /// "6 min", "6 min 5 s", "2 h", "2 h 5 min".
    private static func pair(_ major: Int, _ majorUnit: String, _ minor: Int, _ minorUnit: String) -> String {
        "\(major) \(majorUnit)" + (minor == 0 ? "" : " \(minor) \(minorUnit)")
    }

    private static func two(_ number: Int) -> String { number < 10 ? "0\(number)" : "\(number)" }
}

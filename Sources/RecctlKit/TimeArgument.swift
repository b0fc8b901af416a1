// recctl's times (`archive list --since`, `archive export --from/--to`): what a person types,
// resolved here, on recctl's clock and in its time zone (TZ), to what recd takes: ISO 8601 in
// UTC. recd knows neither the caller's zone nor which day "today" is for them.
// Threads: the main thread only (pure: the clock and the zone are arguments).
import Foundation

#if canImport(Glibc)
import Glibc
#endif

enum TimeArgument {
    /// The forms, for the help and for errors.
    static let forms =
        "now, -30s, -5m, -1h, -2d (before now), today, yesterday (local midnight), HH:MM[:SS] (today), "
        + "YYYY-MM-DD, YYYY-MM-DD[T| ]HH:MM[:SS[.fff]] (local time), or ISO 8601 with a zone "
        + "(2026-12-02T10:42:03Z, 2026-12-02T11:42:03+01:00)"

    /// The furthest back a relative time reaches: ten years. Bounded where it enters, so no
    /// amount typed can overflow the clock's arithmetic.
    static let longestLookBack: Double = 10 * 366 * 86_400

    /// `text` as recd's wire form: passed through when it carries its own zone (recd checks
    /// it), else resolved against `now` in `timeZone`. A usage error (exit 2) names `flag`,
    /// what was wrong and the forms.
    static func resolve(_ text: String, flag: String, now: Date, timeZone: TimeZone) throws(UsageError) -> String {
        let refused = UsageError(
            message: "--\(flag) \"\(text)\" is not a time; write one of: \(forms)", usage: "recctl help archive")
        if hasZone(text) { return text }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        switch text {
        case "now": return wire(now)
        case "today": return wire(calendar.startOfDay(for: now))
        case "yesterday":
            guard let day = calendar.date(byAdding: .day, value: -1, to: calendar.startOfDay(for: now)) else {
                throw refused
            }
            return wire(day)
        default: break
        }
        if text.hasPrefix("-") || text.hasPrefix("now-") {
            let relative = text.hasPrefix("now") ? text.dropFirst(3) : text[...]
            return wire(now.addingTimeInterval(-(try lookBack(relative, flag: flag, refused))))
        }
        guard var fields = localFields(text, today: calendar.dateComponents([.year, .month, .day], from: now)) else {
            throw refused
        }
        let nanosecond = fields.nanosecond ?? 0
        fields.nanosecond = nil
        // A local time that does not exist (Feb 30, or an hour the clocks skipped) would be
        // moved silently by the calendar: refused instead, by reading the fields back.
        let read = calendar.date(from: fields).map {
            calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: $0)
        }
        guard let date = calendar.date(from: fields), let read, read.year == fields.year, read.month == fields.month,
            read.day == fields.day, read.hour == fields.hour, read.minute == fields.minute, read.second == fields.second
        else {
            throw UsageError(
                message: "--\(flag) \"\(text)\" is no time in \(timeZone.identifier) (no such day, or the clocks "
                    + "skipped that hour); write one of: \(forms)", usage: "recctl help archive")
        }
        return wire(date.addingTimeInterval(Double(nanosecond) / 1e9))
    }

    /// `-30s`, `-1.5m`, `-2h`, `-7d` (the text after `now` for `now-30s`): seconds before now.
    private static func lookBack(_ text: Substring, flag: String, _ refused: UsageError) throws(UsageError) -> Double {
        let scales: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard text.first == "-", let unit = text.last, let scale = scales[unit],
            let amount = Double(text.dropFirst().dropLast()), amount.isFinite, amount >= 0
        else { throw refused }
        let seconds = amount * scale
        guard seconds <= longestLookBack else {
            throw UsageError(
                message: "--\(flag) \"-\(text.dropFirst())\" reaches back more than ten years; give a date instead",
                usage: refused.usage)
        }
        return seconds
    }

    /// Ends in `Z` or a `±HH:MM`/`±HHMM` offset after a time of day.
    private static func hasZone(_ text: String) -> Bool {
        guard let t = text.firstIndex(where: { $0 == "T" || $0 == "t" }) else { return false }
        let time = text[text.index(after: t)...]
        if time.hasSuffix("Z") || time.hasSuffix("z") { return true }
        return time.contains("+") || time.dropFirst().contains("-")
    }

    /// `HH:MM[:SS]` (on `today`), `YYYY-MM-DD`, `YYYY-MM-DD[T| ]HH:MM[:SS[.fraction]]`, as calendar
    /// fields (year to second, the fraction in `nanosecond`); nil for anything else.
    private static func localFields(_ text: String, today: DateComponents) -> DateComponents? {
        var date: Substring? = Substring(text)
        var time: Substring?
        if let separator = text.firstIndex(where: { $0 == "T" || $0 == "t" || $0 == " " }) {
            date = text[..<separator]
            time = text[text.index(after: separator)...]
        } else if text.contains(":") {
            date = nil
            time = Substring(text)
        }
        var fields = DateComponents(hour: 0, minute: 0, second: 0)
        if let date {
            let parts = date.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
                let year = digits(parts[0]), let month = digits(parts[1]), let day = digits(parts[2])
            else { return nil }
            (fields.year, fields.month, fields.day) = (year, month, day)
        } else {
            (fields.year, fields.month, fields.day) = (today.year, today.month, today.day)
        }
        guard let time else { return fields }
        var clock = time
        var fraction: Substring = ""
        if let dot = time.firstIndex(of: ".") {
            clock = time[..<dot]
            fraction = time[time.index(after: dot)...]
            guard (1...9).contains(fraction.count), digits(fraction) != nil else { return nil }
        }
        let parts = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3, parts.allSatisfy({ $0.count == 2 }),
            let hour = digits(parts[0]), let minute = digits(parts[1]), hour < 24, minute < 60
        else { return nil }
        let second = parts.count == 3 ? digits(parts[2]) : 0
        guard let second, second < 60, parts.count == 3 || fraction.isEmpty else { return nil }
        (fields.hour, fields.minute, fields.second) = (hour, minute, second)
        if !fraction.isEmpty {
            fields.nanosecond = digits(fraction + String(repeating: "0", count: 9 - fraction.count))
        }
        return fields
    }

    private static func digits(_ text: Substring) -> Int? {
        text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber) ? Int(text) : nil
    }

    /// `2026-12-02T10:42:03Z`, or with microseconds when there are any (always with
    /// `microseconds`: the form START takes in the archive's chains): recd's UTC form.
    static func wire(_ date: Date, microseconds: Bool = false) -> String {
        let total = Int64((date.timeIntervalSince1970 * 1e6).rounded())
        let (quotient, remainder) = total.quotientAndRemainder(dividingBy: 1_000_000)
        var seconds = time_t(remainder < 0 ? quotient - 1 : quotient)
        let fraction = remainder < 0 ? remainder + 1_000_000 : remainder
        var fields = tm()
        gmtime_r(&seconds, &fields)
        let base = String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d", fields.tm_year + 1900, fields.tm_mon + 1, fields.tm_mday,
            fields.tm_hour, fields.tm_min, fields.tm_sec)
        return base + (fraction == 0 && !microseconds ? "" : String(format: ".%06d", Int32(fraction))) + "Z"
    }
}

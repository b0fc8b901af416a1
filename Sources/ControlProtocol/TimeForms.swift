// The times a person types (`recctl archive list --since`, `archive export --from/--to`, the
// archive browser's `from=`/`to=`), resolved on the caller's clock and in a time zone to what
// recd takes: ISO 8601 in UTC. One parser for recctl (its zone: TZ) and recd's HTTP pages
// (their zone: UTC, as every time on the pages is); each wraps the refusal in its own words.
// Threads: any (pure: the clock and the zone are arguments).
import Foundation

public enum TimeForms {
    /// The forms, for help texts and errors.
    public static let forms =
        "now, -30s, -5m, -1h, -2d (before now), today, yesterday (local midnight), HH:MM[:SS] (today), "
        + "YYYY-MM-DD, YYYY-MM-DD[T| ]HH:MM[:SS[.fff]] (local time), or ISO 8601 with a zone "
        + "(2026-12-02T10:42:03Z, 2026-12-02T11:42:03+01:00)"

    /// The furthest back a relative time reaches: ten years. Bounded where it enters, so no
    /// amount typed can overflow the clock's arithmetic.
    public static let longestLookBack: Double = 10 * 366 * 86_400

    /// Why a text is no time.
    public enum Refusal: Error, Equatable, Sendable {
        /// None of the forms.
        case notATime
        /// A relative time further back than `longestLookBack`.
        case tooFarBack
        /// A local time that does not exist in the zone (Feb 30, an hour the clocks skipped).
        case noSuchLocalTime
    }

    /// `text` as recd's wire form: passed through when it carries its own zone (recd checks
    /// it), else resolved against `now` in `timeZone`. Input of any length: the forms are
    /// short, and anything longer than 64 characters is no time.
    public static func resolve(_ text: String, now: Date, timeZone: TimeZone) throws(Refusal) -> String {
        guard text.utf8.count <= 64 else { throw .notATime }
        if hasZone(text) { return text }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        switch text {
        case "now": return wire(now)
        case "today": return wire(calendar.startOfDay(for: now))
        case "yesterday":
            guard let day = calendar.date(byAdding: .day, value: -1, to: calendar.startOfDay(for: now)) else {
                throw .notATime
            }
            return wire(day)
        default: break
        }
        if text.hasPrefix("-") || text.hasPrefix("now-") {
            let relative = text.hasPrefix("now") ? text.dropFirst(3) : text[...]
            return wire(now.addingTimeInterval(-(try lookBack(relative))))
        }
        guard var fields = localFields(text, today: calendar.dateComponents([.year, .month, .day], from: now)) else {
            throw .notATime
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
        else { throw .noSuchLocalTime }
        return wire(date.addingTimeInterval(Double(nanosecond) / 1e9))
    }

    /// `-30s`, `-1.5m`, `-2h`, `-7d` (the text after `now` for `now-30s`): seconds before now.
    private static func lookBack(_ text: Substring) throws(Refusal) -> Double {
        let scales: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard text.first == "-", let unit = text.last, let scale = scales[unit],
            let amount = Double(text.dropFirst().dropLast()), amount.isFinite, amount >= 0
        else { throw .notATime }
        let seconds = amount * scale
        guard seconds <= longestLookBack else { throw .tooFarBack }
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
    public static func wire(_ date: Date, microseconds: Bool = false) -> String {
        let total = Int64((date.timeIntervalSince1970 * 1e6).rounded())
        let (quotient, remainder) = total.quotientAndRemainder(dividingBy: 1_000_000)
        let seconds = remainder < 0 ? quotient - 1 : quotient
        let fraction = remainder < 0 ? remainder + 1_000_000 : remainder
        let (days, secondOfDay) = seconds.quotientAndRemainder(dividingBy: 86_400)
        let day = secondOfDay < 0 ? days - 1 : days
        let second = secondOfDay < 0 ? secondOfDay + 86_400 : secondOfDay
        let (year, month, dayOfMonth) = civil(daysSinceEpoch: day)
        let base =
            "\(pad(year, 4))-\(pad(month, 2))-\(pad(dayOfMonth, 2))T\(pad(second / 3600, 2)):"
            + "\(pad(second / 60 % 60, 2)):\(pad(second % 60, 2))"
        return base + (fraction == 0 && !microseconds ? "" : "." + pad(fraction, 6)) + "Z"
    }

    /// The proleptic Gregorian date of a day counted from 1970-01-01 (H. Hinnant's
    /// days-to-civil): no C library, no calendar object per call.
    static func civil(daysSinceEpoch days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let dayOfMonth = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, dayOfMonth)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}

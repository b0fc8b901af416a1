// recctl's times (`archive list --since`, `archive export --from/--to`): what a person types,
// resolved on recctl's clock and in its time zone (TZ) by `TimeForms` (ControlProtocol: the one
// parser, shared with recd's archive browser), with refusals in recctl's words (the flag).
// Threads: the main thread only (pure: the clock and the zone are arguments).
import ControlProtocol
import Foundation

enum TimeArgument {
    static let forms = TimeForms.forms

    /// `text` as recd's wire form (see `TimeForms.resolve`). A usage error (exit 2) names
    /// `flag`, what was wrong and the forms.
    static func resolve(_ text: String, flag: String, now: Date, timeZone: TimeZone) throws(UsageError) -> String {
        do throws(TimeForms.Refusal) {
            return try TimeForms.resolve(text, now: now, timeZone: timeZone)
        } catch .tooFarBack {
            let back = text.hasPrefix("now") ? String(text.dropFirst(3)) : text
            throw UsageError(
                message: "--\(flag) \"\(back)\" reaches back more than ten years; give a date instead",
                usage: "recctl help archive")
        } catch .noSuchLocalTime {
            throw UsageError(
                message: "--\(flag) \"\(text)\" is no time in \(timeZone.identifier) (no such day, or the clocks "
                    + "skipped that hour); write one of: \(forms)", usage: "recctl help archive")
        } catch {
            throw UsageError(
                message: "--\(flag) \"\(text)\" is not a time; write one of: \(forms)", usage: "recctl help archive")
        }
    }

    static func wire(_ date: Date, microseconds: Bool = false) -> String {
        TimeForms.wire(date, microseconds: microseconds)
    }
}

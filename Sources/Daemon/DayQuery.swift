// The parameters of `/api/day` and `/api/events`, read from the query string: total (any bytes
// give a query or a refusal that says what to send), each bounded where it is read.
import Archive

/// Why a query was refused, in HTTP's words.
struct DayQueryRefusal: Error, Equatable {
    let message: String
}

/// A feed as `recctl archive list` names it: `app/stream`.
struct FeedName: Equatable {
    let app: String
    let stream: String

    /// The most bytes a feed name may have.
    static let maxBytes = 256

    static func parse(_ text: String) -> Result<FeedName, DayQueryRefusal> {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard text.utf8.count <= maxBytes, parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
            !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            return .failure(
                DayQueryRefusal(
                    message: "feed must be app/stream as `recctl archive list` names it (at most \(maxBytes) bytes), "
                        + "e.g. feed=logger/mic"))
        }
        return .success(FeedName(app: String(parts[0]), stream: String(parts[1])))
    }
}

/// `/api/day`'s range: a UTC day (`date=YYYY-MM-DD`) or the last hours (`last=24h`, `last=90m`).
struct DayQuery: Equatable {
    var feed: FeedName?
    var from: UTCTime
    var to: UTCTime

    /// The longest range `/api/day` answers (two days: a day and the hours around it).
    static let maxDayHours = 48

    static func day(_ query: [String: String], now: UTCTime) -> Result<DayQuery, DayQueryRefusal> {
        var feed: FeedName?
        if let text = query["feed"], !text.isEmpty {
            switch FeedName.parse(text) {
            case .success(let name): feed = name
            case .failure(let refusal): return .failure(refusal)
            }
        }
        if let date = query["date"], query["last"] != nil, !date.isEmpty {
            return .failure(DayQueryRefusal(message: "give date or last, not both"))
        }
        if let date = query["date"], !date.isEmpty {
            guard let start = Self.date(date) else {
                return .failure(
                    DayQueryRefusal(message: "date must be a day as YYYY-MM-DD (UTC), e.g. date=2026-12-06"))
            }
            return .success(DayQuery(feed: feed, from: start, to: start.advanced(bySeconds: 86_400)))
        }
        let last = query["last"] ?? "24h"
        guard let seconds = Self.span(last), seconds >= 60, seconds <= Self.maxDayHours * 3_600 else {
            return .failure(
                DayQueryRefusal(
                    message: "last must be hours or minutes from 1m to \(maxDayHours)h, e.g. last=24h or last=90m; "
                        + "for an older or longer range ask day by day with date=YYYY-MM-DD"))
        }
        return .success(DayQuery(feed: feed, from: now.advanced(bySeconds: Double(-seconds)), to: now))
    }

    /// Midnight UTC of `YYYY-MM-DD` (years 1970...9999); nil for anything else.
    static func date(_ text: String) -> UTCTime? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes.enumerated().allSatisfy({ $0.offset == 4 || $0.offset == 7 || (48...57).contains($0.element) }),
            let time = UTCTime(iso8601: text + "T00:00:00Z"), time.iso8601.hasPrefix(text),
            time.microsecondsSinceEpoch >= 0
        else { return nil }
        return time
    }

    /// Seconds of `90m`, `24h` (at most 4 digits); nil for anything else.
    static func span(_ text: String) -> Int? {
        guard let unit = text.last, text.count >= 2, text.count <= 5, let number = Int(text.dropLast()), number > 0
        else { return nil }
        switch unit {
        case "h": return number * 3_600
        case "m": return number * 60
        default: return nil
        }
    }
}

/// `/api/events`' filters: feed, a range (`from`, `to`: ISO 8601 with a zone, or a date), kinds
/// (`kind=silence,stall`), a count (`limit`).
struct EventsQuery: Equatable {
    var feed: FeedName?
    var from: UTCTime
    var to: UTCTime
    var kinds: [String]
    var limit: Int

    /// The longest range one request may ask; a longer one is asked in pieces.
    static let maxEventDays = 31
    static let maxKinds = 16
    static let maxLimit = 1_000
    static let defaultLimit = 500

    static func events(_ query: [String: String], now: UTCTime) -> Result<EventsQuery, DayQueryRefusal> {
        var feed: FeedName?
        if let text = query["feed"], !text.isEmpty {
            switch FeedName.parse(text) {
            case .success(let name): feed = name
            case .failure(let refusal): return .failure(refusal)
            }
        }
        func time(_ key: String) -> Result<UTCTime?, DayQueryRefusal> {
            guard let text = query[key], !text.isEmpty else { return .success(nil) }
            guard text.utf8.count <= 64, let time = UTCTime(iso8601WithZone: text) ?? DayQuery.date(text) else {
                return .failure(
                    DayQueryRefusal(
                        message: "\(key) must be a time in ISO 8601 with a zone (2026-12-06T10:00:00Z) or a date "
                            + "(2026-12-06, UTC midnight)"))
            }
            return .success(time)
        }
        let to: UTCTime
        let from: UTCTime
        switch (time("from"), time("to")) {
        case (.failure(let refusal), _), (_, .failure(let refusal)): return .failure(refusal)
        case (.success(let start), .success(let end)):
            to = end ?? now
            from = start ?? to.advanced(bySeconds: -86_400)
        }
        guard from < to else { return .failure(DayQueryRefusal(message: "from must be before to")) }
        guard to.microsecondsSinceEpoch - from.microsecondsSinceEpoch <= Int64(maxEventDays) * 86_400_000_000 else {
            return .failure(
                DayQueryRefusal(
                    message: "the range is longer than \(maxEventDays) days; ask for at most \(maxEventDays) days "
                        + "at a time (from=...&to=...) and page on from the last event's time"))
        }
        var kinds: [String] = []
        if let text = query["kind"], !text.isEmpty {
            kinds = text.split(separator: ",", omittingEmptySubsequences: true).map(String.init)
            guard kinds.count <= maxKinds,
                kinds.allSatisfy({ kind in
                    kind.utf8.count <= 32 && kind.utf8.allSatisfy { (97...122).contains($0) || $0 == 45 }
                })
            else {
                return .failure(
                    DayQueryRefusal(
                        message: "kind must be up to \(maxKinds) comma-separated words of a-z and -, "
                            + "e.g. kind=silence,stall,gap"))
            }
        }
        var limit = defaultLimit
        if let text = query["limit"], !text.isEmpty {
            guard text.utf8.count <= 6, let value = Int(text), (1...maxLimit).contains(value) else {
                return .failure(DayQueryRefusal(message: "limit must be a number from 1 to \(maxLimit)"))
            }
            limit = value
        }
        return .success(EventsQuery(feed: feed, from: from, to: to, kinds: kinds, limit: limit))
    }
}

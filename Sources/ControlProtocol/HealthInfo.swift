// The box's health on the wire: `status`'s `health`, `/api/health`, `/api/status`'s `health`
// and the `health` event carry this one object (docs/protocol.md, "The health state"). The
// rules that make it are SessionPolicy's `HealthTracker`; this is only its JSON.
// Threads: any; values only.
import SessionPolicy

/// The box's health: `state` (`ok`, `warning`, `alarm`; `unknown` from a reader that cannot
/// tell), since when, every reason worst first (`feed` null for the box's own), and each feed's
/// state with its reasons. Required: `state`.
public struct HealthInfo: ReplyObject {
    /// One reason. Required: `state`, `reason`, `text`.
    public struct Reason: ReplyObject {
        public var state: String
        /// A fixed name: `jack-down`, `jack-stalled`, `disk-low`, `clock-unsynchronised`,
        /// `replication-behind`, `chain-broken`, `partials-unrecovered`, `feed-stopped`,
        /// `feed-stalled`, `silent`, `packets-lost`.
        public var reason: String
        public var feed: String?
        public var text: String
        /// ISO 8601 UTC.
        public var since: String?

        public init(state: String, reason: String, feed: String?, text: String, since: String?) {
            self.state = state
            self.reason = reason
            self.feed = feed
            self.text = text
            self.since = since
        }

        public var json: JSONValue {
            .object([
                ("state", .string(state)), ("reason", .string(reason)), ("feed", JSONValue(feed)),
                ("text", .string(text)), ("since", JSONValue(since)),
            ])
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "a health reason")
            self.init(
                state: try f.string("state"), reason: try f.string("reason"), feed: try f.optionalString("feed"),
                text: try f.string("text"), since: try f.optionalString("since"))
        }
    }

    /// One feed's health. Required: `feed`, `state`.
    public struct Feed: ReplyObject {
        public var feed: String
        public var state: String
        public var reasons: [Reason]

        public init(feed: String, state: String, reasons: [Reason]) {
            self.feed = feed
            self.state = state
            self.reasons = reasons
        }

        public var json: JSONValue {
            .object([("feed", .string(feed)), ("state", .string(state)), ("reasons", .array(reasons.map(\.json)))])
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "a feed's health")
            self.init(feed: try f.string("feed"), state: try f.string("state"), reasons: try f.optionalList("reasons"))
        }
    }

    public var state: String
    public var since: String?
    public var reasons: [Reason]
    public var feeds: [Feed]

    public init(state: String, since: String?, reasons: [Reason], feeds: [Feed]) {
        self.state = state
        self.since = since
        self.reasons = reasons
        self.feeds = feeds
    }

    /// The report's JSON; `iso8601` writes a Unix time as ISO 8601 UTC.
    public init(_ report: HealthReport, iso8601: (Double) -> String) {
        func reason(_ r: HealthReason) -> Reason {
            Reason(state: r.state.rawValue, reason: r.code, feed: r.feed, text: r.text, since: iso8601(r.since))
        }
        self.init(
            state: report.state.rawValue, since: iso8601(report.since), reasons: report.reasons.map(reason),
            feeds: report.feeds.map { Feed(feed: $0.feed, state: $0.state.rawValue, reasons: $0.reasons.map(reason)) })
    }

    public var json: JSONValue {
        .object([
            ("state", .string(state)), ("since", JSONValue(since)), ("reasons", .array(reasons.map(\.json))),
            ("feeds", .array(feeds.map(\.json))),
        ])
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "the health")
        self.init(
            state: try f.string("state"), since: try f.optionalString("since"), reasons: try f.optionalList("reasons"),
            feeds: try f.optionalList("feeds"))
    }

    /// The state and its reasons in one line, as `recctl status` begins: `ALARM: JACK server
    /// 'x' stalled: no process cycle for 4 s; logger/mic silent for 6 min`, or `OK`.
    public var line: String {
        let head = state.uppercased()
        guard !reasons.isEmpty else { return head }
        return head + ": " + reasons.map(\.text).joined(separator: "; ")
    }
}

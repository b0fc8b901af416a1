// The box's health: one state (ok, warning, alarm) for the box and for each feed, with every
// reason in words and since when. The rules live here, once: the daemon gathers the facts
// (JACK, the recorders, the disk, the clock, replication, the archive's chains) and every face
// of recd — `status`, `/api/health`, `/api/status`, `/metrics`, the `health` event, the pages —
// shows the report this computes, so none of them can disagree with another.
//
// Pure: no I/O, no clock (the caller says what time it is), no threads. `HealthTracker` keeps
// the one thing the facts do not carry: since when a reason without a time of its own (a full
// disk, an unsynchronised clock) has held, and since when the box's state is what it is.

/// How well something works, worst last.
public enum HealthState: String, Sendable, Comparable, CaseIterable {
    case ok
    case warning
    case alarm

    /// 0, 1, 2: the metric `recd_health_state`.
    public var level: Int {
        switch self {
        case .ok: 0
        case .warning: 1
        case .alarm: 2
        }
    }

    public static func < (lhs: HealthState, rhs: HealthState) -> Bool { lhs.level < rhs.level }
}

/// What the health rules look at, gathered by the daemon. Times are Unix seconds (UTC).
public struct HealthFacts: Sendable, Equatable {
    /// recd's JACK server.
    public struct Jack: Sendable, Equatable {
        public var connected: Bool
        /// The server's name (nil: the default server).
        public var server: String?
        /// Why recd is not connected, in words; nil while connected.
        public var error: String?
        /// When the server's last process cycle ran, while none has run for the stall time;
        /// nil while cycles come.
        public var stalledSince: Double?

        public init(connected: Bool, server: String? = nil, error: String? = nil, stalledSince: Double? = nil) {
            self.connected = connected
            self.server = server
            self.error = error
            self.stalledSince = stalledSince
        }
    }

    /// A feed: one recorder's stream, running or not.
    public struct Feed: Sendable, Equatable {
        /// `app/stream`, as `archive list` names it.
        public var name: String
        /// When its input went silent, while it is.
        public var silentSince: Double?
        /// When its source delivered its last frame, while it delivers none.
        public var stalledSince: Double?
        /// Why it does not record (status's `waiting` reason: `inputGone`, `diskFull`, ...),
        /// nil while it records; `stoppedSince` when that began, `resumesWhen` what brings it back.
        public var stoppedReason: String?
        public var stoppedSince: Double?
        public var resumesWhen: String?
        /// Network packets of its input lost within the last minute (an RTP stream's).
        public var packetsLostRecently: Int

        public init(
            name: String, silentSince: Double? = nil, stalledSince: Double? = nil, stoppedReason: String? = nil,
            stoppedSince: Double? = nil, resumesWhen: String? = nil, packetsLostRecently: Int = 0
        ) {
            self.name = name
            self.silentSince = silentSince
            self.stalledSince = stalledSince
            self.stoppedReason = stoppedReason
            self.stoppedSince = stoppedSince
            self.resumesWhen = resumesWhen
            self.packetsLostRecently = packetsLostRecently
        }
    }

    /// Off-box replication, when a remote is set.
    public struct Replication: Sendable, Equatable {
        public var remote: String
        public var backlog: Int
        public var lastSuccess: Double?
        public var lastError: String?

        public init(remote: String, backlog: Int, lastSuccess: Double? = nil, lastError: String? = nil) {
            self.remote = remote
            self.backlog = backlog
            self.lastSuccess = lastSuccess
            self.lastError = lastError
        }
    }

    /// RFC 3161 time-stamps of the chains, when a TSA is configured.
    public struct TimeStamps: Sendable, Equatable {
        /// Chains whose head waits for a token, and the oldest wait (seconds; nil: none).
        public var backlog: Int
        public var oldestUnstampedSeconds: Double?
        public var lastError: String?
        /// `tsa_interval_seconds`: a wait past twice this is a warning; `alarmSeconds` an alarm.
        public var intervalSeconds: Double
        public var alarmSeconds: Double

        public init(
            backlog: Int, oldestUnstampedSeconds: Double?, lastError: String?, intervalSeconds: Double,
            alarmSeconds: Double
        ) {
            self.backlog = backlog
            self.oldestUnstampedSeconds = oldestUnstampedSeconds
            self.lastError = lastError
            self.intervalSeconds = intervalSeconds
            self.alarmSeconds = alarmSeconds
        }
    }

    public var jack: Jack
    public var feeds: [Feed]
    /// The archive's file system: free percent and bytes; nil when unknown.
    public var diskFreePercent: Double?
    public var diskFreeBytes: Double?
    /// Retention's `min_free_percent`, which sets what counts as low (nil: not set).
    public var minFreePercent: Double?
    /// Whether the kernel keeps the wall clock synchronised; nil: unknown.
    public var clockSynchronized: Bool?
    public var replication: Replication?
    public var timeStamps: TimeStamps?
    /// Chains that do not hold what recd signed (their paths).
    public var brokenChains: [String]
    /// Partial segments whose recovery failed.
    public var unrecoveredPartials: Int

    public init(
        jack: Jack, feeds: [Feed] = [], diskFreePercent: Double? = nil, diskFreeBytes: Double? = nil,
        minFreePercent: Double? = nil, clockSynchronized: Bool? = nil, replication: Replication? = nil,
        brokenChains: [String] = [], unrecoveredPartials: Int = 0
    ) {
        self.jack = jack
        self.feeds = feeds
        self.diskFreePercent = diskFreePercent
        self.diskFreeBytes = diskFreeBytes
        self.minFreePercent = minFreePercent
        self.clockSynchronized = clockSynchronized
        self.replication = replication
        self.brokenChains = brokenChains
        self.unrecoveredPartials = unrecoveredPartials
    }
}

/// One reason the box or a feed is not ok.
public struct HealthReason: Sendable, Equatable {
    public var state: HealthState
    /// A fixed name (`jack-stalled`, `silent`, ...): the metric's `reason` label.
    public var code: String
    /// The feed it is about; nil: the box.
    public var feed: String?
    /// In words, with how long it has lasted.
    public var text: String
    /// Since when (Unix seconds).
    public var since: Double

    public init(state: HealthState, code: String, feed: String?, text: String, since: Double) {
        self.state = state
        self.code = code
        self.feed = feed
        self.text = text
        self.since = since
    }
}

/// The health of one feed.
public struct FeedHealth: Sendable, Equatable {
    public var feed: String
    public var state: HealthState
    public var reasons: [HealthReason]

    public init(feed: String, state: HealthState, reasons: [HealthReason]) {
        self.feed = feed
        self.state = state
        self.reasons = reasons
    }
}

/// The box's health: its state (the worst of every reason), since when it is that, every
/// reason (the box's and the feeds', worst first), and each feed's own.
public struct HealthReport: Sendable, Equatable {
    public var state: HealthState
    public var since: Double
    public var reasons: [HealthReason]
    public var feeds: [FeedHealth]

    public init(state: HealthState, since: Double, reasons: [HealthReason], feeds: [FeedHealth]) {
        self.state = state
        self.since = since
        self.reasons = reasons
        self.feeds = feeds
    }

    /// What a change is judged by: the state and which reasons hold (not their words, whose
    /// durations grow every second).
    public var signature: [String] {
        [state.rawValue] + reasons.map { "\($0.state.rawValue) \($0.feed ?? "") \($0.code)" }
    }
}

/// The health rules and the memory they need. A value the daemon keeps on its control thread.
public struct HealthTracker: Sendable {
    /// Free space below this percent of the archive's file system is a warning (or below half
    /// of retention's `min_free_percent`, when that is lower: retention keeps the disk there).
    public static let diskWarningPercent = 10.0
    /// Free space below this percent is an alarm: recorders stop at a full disk.
    public static let diskAlarmPercent = 3.0
    /// Replication this many segments behind is a warning even without an error.
    public static let replicationBacklogWarning = 20

    /// When each reason without a time of its own was first seen ("feed code" keys).
    private var firstSeen: [String: Double] = [:]
    private var current: (state: HealthState, since: Double)?
    private var lastSignature: [String]?

    public init() {}

    /// The report for `facts` at `now` (Unix seconds), and whether it differs from the last
    /// one's state or reasons (the `health` event). `duration` writes a duration in words.
    public mutating func evaluate(
        _ facts: HealthFacts, now: Double, duration: (Double) -> String
    ) -> (report: HealthReport, changed: Bool) {
        var seen: [String: Double] = [:]
        func since(_ code: String, feed: String?, _ own: Double?) -> Double {
            let key = (feed ?? "") + " " + code
            let value = own ?? firstSeen[key] ?? now
            seen[key] = value
            return value
        }
        func lasted(_ start: Double) -> String { duration(max(0, now - start).rounded()) }

        var box: [HealthReason] = []
        func add(_ state: HealthState, _ code: String, _ own: Double?, _ text: (Double) -> String) {
            let start = since(code, feed: nil, own)
            box.append(HealthReason(state: state, code: code, feed: nil, text: text(start), since: start))
        }
        let server = "JACK server '\(facts.jack.server ?? "default")'"
        if !facts.jack.connected {
            add(.alarm, "jack-down", nil) { start in
                "\(server) not connected for \(lasted(start))" + (facts.jack.error.map { ": \($0)" } ?? "")
            }
        } else if let stalled = facts.jack.stalledSince {
            add(.alarm, "jack-stalled", stalled) { "\(server) stalled: no process cycle for \(lasted($0))" }
        }
        if let percent = facts.diskFreePercent {
            let warning = min(Self.diskWarningPercent, (facts.minFreePercent ?? Self.diskWarningPercent * 2) / 2)
            let alarm = min(Self.diskAlarmPercent, warning)
            if percent < warning {
                let bytes = facts.diskFreeBytes.map { " (" + Self.gigabytes($0) + ")" } ?? ""
                add(percent < alarm ? .alarm : .warning, "disk-low", nil) { _ in
                    "archive disk low: \(Self.decimal(percent)) % free\(bytes)"
                }
            }
        }
        if facts.clockSynchronized == false {
            add(.warning, "clock-unsynchronised", nil) {
                "wall clock not synchronised for \(lasted($0)): segment times are only as good as the free-running clock"
            }
        }
        if let replication = facts.replication, replication.backlog > 0,
            replication.lastError != nil || replication.backlog >= Self.replicationBacklogWarning
        {
            let last = replication.lastSuccess.map { "last copy \(lasted($0)) ago" } ?? "no copy yet"
            let error = replication.lastError.map { "; last error: \($0)" } ?? ""
            add(.warning, "replication-behind", nil) { _ in
                "replication to \(replication.remote) behind: \(Self.count(replication.backlog, "segment")) "
                    + "waiting, \(last)\(error)"
            }
        }
        if let stamps = facts.timeStamps, stamps.backlog > 0, let waited = stamps.oldestUnstampedSeconds,
            stamps.lastError != nil || waited > 2 * stamps.intervalSeconds
        {
            // Waiting is a warning once a TSA fails (or the queue falls behind); the evidence's
            // gap is an alarm past the configured age.
            let error = stamps.lastError.map { "; last error: \($0)" } ?? ""
            add(waited >= stamps.alarmSeconds ? .alarm : .warning, "tsa-behind", now - waited) { _ in
                "time-stamps behind: \(Self.count(stamps.backlog, "chain head")) waiting, the oldest for "
                    + "\(duration(waited.rounded()))\(error)"
            }
        }
        for chain in facts.brokenChains.sorted() {
            add(.alarm, "chain-broken", nil) { _ in "chain \(chain) does not hold what recd signed: nothing is chained"
            }
        }
        if facts.unrecoveredPartials > 0 {
            add(.warning, "partials-unrecovered", nil) { _ in
                "\(Self.count(facts.unrecoveredPartials, "partial segment")) not recovered yet"
            }
        }

        var feeds: [FeedHealth] = []
        for feed in facts.feeds.sorted(by: { $0.name < $1.name }) {
            var reasons: [HealthReason] = []
            func add(_ state: HealthState, _ code: String, _ own: Double?, _ text: (Double) -> String) {
                let start = since(code, feed: feed.name, own)
                reasons.append(HealthReason(state: state, code: code, feed: feed.name, text: text(start), since: start))
            }
            if let reason = feed.stoppedReason {
                // Stopped by an operator (`record stop`): known and meant, a warning that stays
                // in view; every other stop is the box failing to record, an alarm.
                add(reason == "stop" ? .warning : .alarm, "feed-stopped", feed.stoppedSince) { start in
                    "\(feed.name) not recording for \(lasted(start)) (\(reason))"
                        + (feed.resumesWhen.map { "; resumes when \($0)" } ?? "")
                }
            } else if let stalled = feed.stalledSince {
                add(.alarm, "feed-stalled", stalled) { "\(feed.name) stalled: no frames for \(lasted($0))" }
            } else if let silent = feed.silentSince {
                add(.alarm, "silent", silent) { "\(feed.name) silent for \(lasted($0))" }
            }
            if feed.packetsLostRecently > 0 {
                add(.warning, "packets-lost", nil) { _ in
                    "\(feed.name) losing network packets: \(Self.count(feed.packetsLostRecently, "packet")) "
                        + "lost in the last minute"
                }
            }
            let state = reasons.map(\.state).max() ?? .ok
            feeds.append(FeedHealth(feed: feed.name, state: state, reasons: Self.worstFirst(reasons)))
        }
        firstSeen = seen

        let all = Self.worstFirst(box + feeds.flatMap(\.reasons))
        let state = all.map(\.state).max() ?? .ok
        if current?.state != state { current = (state, now) }
        let report = HealthReport(state: state, since: current?.since ?? now, reasons: all, feeds: feeds)
        let changed = lastSignature != report.signature
        lastSignature = report.signature
        return (report, changed)
    }

    /// Alarms before warnings; within a state, the box's before the feeds', oldest first.
    static func worstFirst(_ reasons: [HealthReason]) -> [HealthReason] {
        reasons.enumerated().sorted { a, b in
            if a.element.state != b.element.state { return a.element.state > b.element.state }
            if (a.element.feed == nil) != (b.element.feed == nil) { return a.element.feed == nil }
            return a.offset < b.offset
        }.map(\.element)
    }

    static func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }

    /// One decimal, without a trailing ".0".
    static func decimal(_ value: Double) -> String {
        let tenths = (value * 10).rounded()
        guard tenths.isFinite, abs(tenths) < 1e15 else { return "\(value)" }
        let whole = Int64(tenths)
        return whole % 10 == 0 ? "\(whole / 10)" : "\(whole / 10).\(abs(whole % 10))"
    }

    static func gigabytes(_ bytes: Double) -> String {
        bytes >= 1e9 ? decimal(bytes / 1e9) + " GB" : decimal(bytes / 1e6) + " MB"
    }
}

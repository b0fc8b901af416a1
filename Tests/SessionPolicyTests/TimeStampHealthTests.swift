import SessionPolicy
import Testing

/// The time-stamp backlog's health rule from a table: waiting is normal within two intervals;
/// a failed attempt or a longer wait is a warning; the configured age an alarm.
@Suite struct TimeStampHealthTests {
    static let now = 1_800_000_000.0
    static let connected = HealthFacts.Jack(connected: true, server: "x")

    static func facts(backlog: Int, waited: Double?, error: String? = nil) -> HealthFacts {
        var facts = HealthFacts(jack: connected)
        facts.timeStamps = .init(
            backlog: backlog, oldestUnstampedSeconds: waited, lastError: error, intervalSeconds: 600,
            alarmSeconds: 3600)
        return facts
    }

    @Test(
        arguments: [
            // (backlog, oldest wait, last error, state, text)
            (0, nil, nil, HealthState.ok, nil),
            (1, 30.0, nil, .ok, nil),
            (1, 1199.0, nil, .ok, nil),
            (1, 1201.0, nil, .warning, "time-stamps behind: 1 chain head waiting, the oldest for 1201 s"),
            (
                2, 5.0, "http://tsa/: no answer", .warning,
                "time-stamps behind: 2 chain heads waiting, the oldest for 5 s; last error: http://tsa/: no answer"
            ),
            (
                1, 3600.0, "http://tsa/: HTTP status 500", .alarm,
                "time-stamps behind: 1 chain head waiting, the oldest for 3600 s; last error: http://tsa/: HTTP status 500"
            ),
        ] as [(Int, Double?, String?, HealthState, String?)])
    func backlog(backlog: Int, waited: Double?, error: String?, state: HealthState, text: String?) {
        var tracker = HealthTracker()
        let report = tracker.evaluate(
            Self.facts(backlog: backlog, waited: waited, error: error), now: Self.now, duration: { "\(Int($0)) s" }
        ).report
        #expect(report.state == state)
        let reason = report.reasons.first { $0.code == "tsa-behind" }
        #expect(reason?.text == text)
        if let waited, reason != nil { #expect(reason?.since == Self.now - waited, "since the oldest advance") }
    }
}

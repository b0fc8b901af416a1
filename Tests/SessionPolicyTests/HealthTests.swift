import SessionPolicy
import Testing

/// The health rules from tables: each fact alone, then together (the worst wins), the since
/// times a reason keeps, and when a change is announced.
@Suite struct HealthTests {
    static let now = 1_800_000_000.0
    static func words(_ seconds: Double) -> String { "\(Int(seconds)) s" }
    static let connected = HealthFacts.Jack(connected: true, server: "x")

    func evaluate(_ facts: HealthFacts, at now: Double = now) -> HealthReport {
        var tracker = HealthTracker()
        return tracker.evaluate(facts, now: now, duration: Self.words).report
    }

    @Test(
        arguments: [
            // (facts, state, reason code, text)
            (HealthFacts(jack: connected), HealthState.ok, nil, nil),
            (
                HealthFacts(jack: .init(connected: false, server: "x", error: "server gone")), .alarm, "jack-down",
                "JACK server 'x' not connected for 0 s: server gone"
            ),
            (
                HealthFacts(jack: .init(connected: true, server: "x", stalledSince: now - 4)), .alarm, "jack-stalled",
                "JACK server 'x' stalled: no process cycle for 4 s"
            ),
            (
                HealthFacts(jack: connected, diskFreePercent: 8, diskFreeBytes: 2.5e9), .warning, "disk-low",
                "archive disk low: 8 % free (2.5 GB)"
            ),
            (
                HealthFacts(jack: connected, diskFreePercent: 2.4, diskFreeBytes: 7.5e8), .alarm, "disk-low",
                "archive disk low: 2.4 % free (750 MB)"
            ),
            (HealthFacts(jack: connected, diskFreePercent: 10.5), .ok, nil, nil),
            // Retention keeps the disk at min_free_percent: only half of it is low.
            (HealthFacts(jack: connected, diskFreePercent: 4, minFreePercent: 5), .ok, nil, nil),
            (
                HealthFacts(jack: connected, diskFreePercent: 2, minFreePercent: 5), .alarm, "disk-low",
                "archive disk low: 2 % free"
            ),
            (
                HealthFacts(jack: connected, clockSynchronized: false), .warning, "clock-unsynchronised",
                "wall clock not synchronised for 0 s: segment times are only as good as the free-running clock"
            ),
            (HealthFacts(jack: connected, clockSynchronized: true), .ok, nil, nil),
            (
                HealthFacts(
                    jack: connected,
                    replication: .init(remote: "r:", backlog: 3, lastSuccess: now - 60, lastError: "timeout")),
                .warning, "replication-behind",
                "replication to r: behind: 3 segments waiting, last copy 60 s ago; "
                    + "last error: timeout"
            ),
            (HealthFacts(jack: connected, replication: .init(remote: "r:", backlog: 3)), .ok, nil, nil),
            (
                HealthFacts(jack: connected, replication: .init(remote: "r:", backlog: 20)), .warning,
                "replication-behind", "replication to r: behind: 20 segments waiting, no copy yet"
            ),
            (
                HealthFacts(jack: connected, brokenChains: ["logger/mic/2026-12-06.chain"]), .alarm, "chain-broken",
                "chain logger/mic/2026-12-06.chain does not hold what recd signed: nothing is chained"
            ),
            (
                HealthFacts(jack: connected, unrecoveredPartials: 1), .warning, "partials-unrecovered",
                "1 partial segment not recovered yet"
            ),
            (
                HealthFacts(jack: connected, feeds: [.init(name: "logger/mic", silentSince: now - 360)]), .alarm,
                "silent", "logger/mic silent for 360 s"
            ),
            (
                HealthFacts(jack: connected, feeds: [.init(name: "logger/mic", stalledSince: now - 3)]), .alarm,
                "feed-stalled", "logger/mic stalled: no frames for 3 s"
            ),
            (
                HealthFacts(
                    jack: connected,
                    feeds: [
                        .init(
                            name: "logger/mic", stoppedReason: "inputGone", stoppedSince: now - 5,
                            resumesWhen: "mic is back")
                    ]),
                .alarm, "feed-stopped", "logger/mic not recording for 5 s (inputGone); resumes when mic is back"
            ),
            (
                HealthFacts(
                    jack: connected,
                    feeds: [.init(name: "logger/mic", stoppedReason: "stop", stoppedSince: now - 5)]),
                .warning, "feed-stopped", "logger/mic not recording for 5 s (stop)"
            ),
            (
                HealthFacts(jack: connected, feeds: [.init(name: "net/feed", packetsLostRecently: 12)]), .warning,
                "packets-lost", "net/feed losing network packets: 12 packets lost in the last minute"
            ),
        ] as [(HealthFacts, HealthState, String?, String?)])
    func oneFact(facts: HealthFacts, state: HealthState, code: String?, text: String?) {
        let report = evaluate(facts)
        #expect(report.state == state)
        #expect(report.reasons.first?.code == code)
        #expect(report.reasons.first?.text == text)
        #expect(report.reasons.count == (code == nil ? 0 : 1))
    }

    @Test func theWorstWinsAndAlarmsComeFirst() {
        let report = evaluate(
            HealthFacts(
                jack: .init(connected: true, server: "x", stalledSince: Self.now - 4),
                feeds: [
                    .init(name: "logger/mic", silentSince: Self.now - 360),
                    .init(name: "logger/aux"),
                ],
                clockSynchronized: false))
        #expect(report.state == .alarm)
        #expect(report.reasons.map(\.code) == ["jack-stalled", "silent", "clock-unsynchronised"])
        #expect(report.feeds.map(\.feed) == ["logger/aux", "logger/mic"])
        #expect(report.feeds.map(\.state) == [.ok, .alarm])
        #expect(report.reasons[1].feed == "logger/mic")
        #expect(report.reasons[0].feed == nil)
    }

    /// A stopped feed says it is not recording, not that it is silent or stalled as well.
    @Test func aStoppedFeedIsOneReason() {
        let report = evaluate(
            HealthFacts(
                jack: Self.connected,
                feeds: [.init(name: "a/b", silentSince: Self.now - 9, stalledSince: Self.now - 9, stoppedReason: "x")]))
        #expect(report.reasons.map(\.code) == ["feed-stopped"])
    }

    @Test func aReasonKeepsItsFirstSightAndTheBoxItsStateSince() {
        var tracker = HealthTracker()
        let unsynced = HealthFacts(jack: Self.connected, clockSynchronized: false)
        let first = tracker.evaluate(unsynced, now: 100, duration: Self.words)
        #expect(first.changed)
        #expect(first.report.since == 100)
        let later = tracker.evaluate(unsynced, now: 160, duration: Self.words)
        #expect(!later.changed, "the words changed (60 s), the state and reasons did not")
        #expect(later.report.reasons.first?.since == 100)
        #expect(later.report.reasons.first?.text.hasPrefix("wall clock not synchronised for 60 s") == true)
        #expect(later.report.since == 100)
        // A second reason of the same state: a change, but the box's state is warning since 100.
        let both = tracker.evaluate(
            HealthFacts(jack: Self.connected, clockSynchronized: false, unrecoveredPartials: 2), now: 170,
            duration: Self.words)
        #expect(both.changed)
        #expect(both.report.since == 100)
        // Healed: ok since now, and a reason that comes back starts over.
        let healed = tracker.evaluate(HealthFacts(jack: Self.connected), now: 180, duration: Self.words)
        #expect(healed.changed)
        #expect(healed.report.state == .ok)
        #expect(healed.report.since == 180)
        let again = tracker.evaluate(unsynced, now: 200, duration: Self.words)
        #expect(again.report.reasons.first?.since == 200)
    }

    @Test func aStallHealsByItself() {
        var tracker = HealthTracker()
        let stalled = HealthFacts(jack: .init(connected: true, server: "x", stalledSince: 95))
        #expect(tracker.evaluate(stalled, now: 100, duration: Self.words).report.state == .alarm)
        let back = tracker.evaluate(HealthFacts(jack: Self.connected), now: 101, duration: Self.words)
        #expect(back.changed)
        #expect(back.report.state == .ok)
        #expect(back.report.reasons.isEmpty)
    }

    @Test func levelsAreTheMetricsValues() {
        #expect(HealthState.allCases.map(\.level) == [0, 1, 2])
        #expect(HealthState.ok < .warning && HealthState.warning < .alarm)
    }
}

// One health, three faces: the facts `HealthFeature` reads from a made-up `status`, the policy's
// report on them, and that report as `/metrics`, `recctl status`'s first line and the JSON of
// `/api/health` (the real daemon's faces: EndToEndTests/WallTests.swift).
import Archive
import ControlProtocol
import SessionPolicy
import Testing

@testable import Daemon

@Suite("the health's faces")
struct HealthFacesTests {
    @Test("a made-up status: its facts, then the same reasons in /metrics, the line and the JSON")
    func facesOfOneReport() throws {
        var status = PrometheusMetricsTests.status(recorders: [
            PrometheusMetricsTests.recorder("logger", "main", silent: true),
            PrometheusMetricsTests.recorder("dj", "deck"),
        ])
        status.clock = .init(synchronized: false, estimatedErrorSeconds: nil, maximumErrorSeconds: nil, source: "none")
        let stalledAt = 1_764_601_200.0  // 2025-12-01T15:00:00Z
        let facts = HealthFeature.facts(status, minFreePercent: nil, stallSince: stalledAt)
        #expect(facts.jack.stalledSince == stalledAt)
        #expect(facts.feeds.map(\.name) == ["logger/main", "dj/deck", "logger/desk"])
        #expect(facts.feeds[0].silentSince == HealthFeature.parseISO8601("2026-12-01T15:00:00Z"))
        #expect(facts.feeds[2].stoppedReason == "diskFull")
        #expect(facts.clockSynchronized == false)
        #expect(facts.brokenChains == ["2026/12/01/logger-main.chain"])
        #expect(facts.unrecoveredPartials == 1)

        var tracker = HealthTracker()
        let report = tracker.evaluate(facts, now: stalledAt + 4, duration: { "\(Int($0)) s" }).report
        let health = HealthInfo(report, iso8601: HealthFeature.iso8601)
        status.health = health
        #expect(health.state == "alarm")
        #expect(
            health.reasons.map(\.reason) == [
                "jack-stalled", "chain-broken", "feed-stopped", "silent", "clock-unsynchronised",
                "partials-unrecovered",
            ])
        #expect(health.line.hasPrefix("ALARM: JACK server 'default' stalled: no process cycle for 4 s; chain "))
        #expect(health.reasons[0].since == "2025-12-01T15:00:00.000000Z")

        let text = PrometheusMetrics.render(MetricsSnapshot(status: status, inputPeaks: [], replication: nil))
        #expect(text.contains("\nrecd_health_state 2\n"))
        #expect(text.contains("recd_health{scope=\"box\",reason=\"jack-stalled\",state=\"alarm\"} 1\n"))
        #expect(text.contains("recd_health{scope=\"feed\",feed=\"logger/main\",reason=\"silent\",state=\"alarm\"} 1\n"))
        #expect(text.split(separator: "\n").filter { $0.hasPrefix("recd_health{") }.count == health.reasons.count)
        #expect(text.contains("# TYPE recd_health gauge\n"))

        // The line recctl prints first, from the JSON it reads back.
        let decoded = try StatusInfo(json: JSONValue.parse(status.json.jsonText))
        #expect(decoded.health == health)
        #expect(decoded.health?.line == health.line)
    }

    @Test("no health from an older recd: no health series, recd_jack_stalled still in every scrape")
    func olderRecd() {
        let text = PrometheusMetrics.render(
            MetricsSnapshot(status: PrometheusMetricsTests.status(recorders: []), inputPeaks: [], replication: nil))
        #expect(!text.contains("recd_health"))
        #expect(text.contains("\nrecd_jack_stalled 0\n"))
    }
}

@Suite("the journal of a health change")
struct HealthJournalTests {
    @Test("a health event is journaled as the box's, with its worst reason in words")
    func healthIsJournaled() throws {
        let health = HealthInfo(
            state: "alarm", since: "2026-12-06T10:00:00Z",
            reasons: [
                .init(
                    state: "alarm", reason: "jack-stalled", feed: nil,
                    text: "JACK server 'x' stalled: no process cycle for 3 s", since: "2026-12-06T10:00:00Z")
            ], feeds: [])
        let entry = try #require(
            EventJournal.entry(for: .health(health), at: UTCTime(nanosecondsSinceEpoch: 1_765_015_200_000_000_000)))
        #expect(entry.kind == "health" && entry.app == nil)
        #expect(entry.text == "health alarm: JACK server 'x' stalled: no process cycle for 3 s")
    }
}

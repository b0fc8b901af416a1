// The health's `packets-lost` fact from the RTP monitor's counts: which feed a stream belongs to
// (the recorder whose configured input port names the stream's node), the last minute's lost
// packets as the growth of the monitor's running count plus a loss going on, and the reason
// that shows and clears by itself (the real stream: EndToEndTests/RTPHealthTests.swift).
import ControlProtocol
import NetworkAudio
import SessionPolicy
import Testing

@testable import Daemon

@Suite("packets lost: the health's fact from the RTP monitor")
struct PacketLossHealthTests {
    /// A 1 ms stream (AES67's packet time) with a 100 ms receiver buffer whose last packet came at
    /// `last` (µs) and that has lost `lost` packets so far.
    static func stream(lost: Int, last: Int) -> RTPStreamFacts {
        var facts = RTPStreamFacts(
            session: "studio2", address: "10.231.0.2", group: "239.255.42.1", port: 46000, packetMicros: 1_000,
            lossMicros: 20_000, latencyMicros: 100_000)
        facts.lost = lost
        facts.packets = 10_000
        facts.lastPacketMicros = last
        return facts
    }

    @Test("the recorder of the stream's port gets the reading; another port's recorder, none")
    func readingsByFeed() {
        var remote = PrometheusMetricsTests.recorder("remote", "studio")
        remote.port = "studio"
        let local = PrometheusMetricsTests.recorder("logger", "main")  // port "mic": no stream
        let status = PrometheusMetricsTests.status(recorders: [remote, local])
        let now = 50_000_000
        let readings = HealthFeature.networkReadings(status, nowMicros: now) { port in
            port == "studio" ? Self.stream(lost: 7, last: now - 500_000) : nil
        }
        // Half a second without packets: a loss going on, 499 packets not come (1 ms each).
        #expect(readings == ["remote/studio": NetworkLossReading(lost: 7, missingNow: 499)])
        // While packets come nothing is missing now.
        let flowing = HealthFeature.networkReadings(status, nowMicros: now) { _ in
            Self.stream(lost: 7, last: now - 2_000)
        }
        #expect(flowing["remote/studio"] == NetworkLossReading(lost: 7, missingNow: 0))

        let facts = HealthFeature.facts(
            status, minFreePercent: nil, stallSince: nil, packetsLost: ["remote/studio": 12])
        // (The made-up status also has a waiting recorder, logger/desk.)
        #expect(facts.feeds.map(\.name) == ["remote/studio", "logger/main", "logger/desk"])
        #expect(facts.feeds.map(\.packetsLostRecently) == [12, 0, 0])
        var tracker = HealthTracker()
        let report = tracker.evaluate(facts, now: 1_000, duration: { "\(Int($0)) s" }).report
        let reasons = report.feeds.first { $0.feed == "remote/studio" }?.reasons ?? []
        #expect(reasons.map(\.code) == ["packets-lost"])
        #expect(reasons.first?.state == .warning)
        #expect(reasons.first?.text == "remote/studio losing network packets: 12 packets lost in the last minute")
        #expect(report.feeds.first { $0.feed == "logger/main" }?.reasons == [])
    }

    @Test("the window: the count's growth over the last minute, a loss going on, cleared a minute after")
    func window() {
        var window = PacketLossWindow()
        let feed = "remote/studio"
        func lost(_ count: Int, missing: Int = 0, at time: Double) -> Int? {
            window.update([feed: NetworkLossReading(lost: count, missingNow: missing)], now: time)[feed]
        }
        // Losses before the first reading are not this window's (a stream the monitor followed earlier).
        #expect(lost(40, at: 100) == 0)
        #expect(lost(40, at: 101) == 0)
        // A cut going on: its packets are not counted yet, but missing.
        #expect(lost(40, missing: 1_500, at: 102.5) == 1_500)
        // Packets again: the monitor counted them lost.
        #expect(lost(1_540, at: 104) == 1_500)
        // Many evaluations within a second keep one reading.
        for step in 0..<50 { #expect(lost(1_540, at: 104.2 + Double(step) * 0.01) == 1_500) }
        #expect(lost(1_540, at: 130) == 1_500)
        #expect(lost(1_540, at: 163.9) == 1_500)
        // A minute after the count last grew, the window holds none of it.
        #expect(lost(1_540, at: 164.1) == 0)
        // A count that went down is a new stream: counted from its first reading.
        #expect(lost(3, at: 170) == 0)
        #expect(lost(5, at: 171) == 2)
        // A feed not read any more is forgotten; nothing is kept without readings.
        #expect(window.update([:], now: 172) == [:])
        #expect(lost(9, at: 173) == 0)
    }
}

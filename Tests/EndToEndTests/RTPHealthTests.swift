// The operator's view of a stream losing packets (RTPAudioTests' setup through
// `RTPAdversaryTests.withRecordedStream`: module-rtp-sink in one namespace, module-rtp-source and
// recd in the other, across a veth pair): nftables on the sender drops the stream for 1.5 s.
// While it does, recd's health has `packets-lost` for the feed in `recctl --json status` and
// in /metrics; a minute after, it has cleared by itself. PipeWire pass only, as RTPAudioTests.
import ControlProtocol
import Foundation
import TestSupport
import Testing

extension RTPAudioTests {
    /// The feed's health reasons (`reason` codes) in `recctl --json status`.
    static func feedReasons(_ daemon: Daemon, feed: String) -> [String] {
        let health = try? daemon.recctl("--json", "status").json?["health"]
        let entry = health?["feeds"]?.arrayValue?.first { $0["feed"]?.stringValue == feed }
        return (entry?["reasons"]?.arrayValue ?? []).compactMap { $0["reason"]?.stringValue }
    }

    /// Drops every packet of the stream the sender sends (its UDP port) until `resume` is called.
    static func dropStream(_ pair: NamespacePair, table: String) throws -> () throws -> Int {
        try nft(pair, .second, ["add", "table", "inet", table])
        try nft(pair, .second, ["add", "chain", "inet", table, "out", "{ type filter hook output priority 0; }"])
        try nft(pair, .second, ["add", "rule", "inet", table, "out", "udp", "dport", "46000", "counter", "drop"])
        return {
            let dropped = nftDropped(try nft(pair, .second, ["list", "table", "inet", table])) ?? 0
            try nft(pair, .second, ["delete", "table", "inet", table])
            return dropped
        }
    }

    @Test(
        "a stream losing packets: while nftables drops it, recctl --json status's health and /metrics have packets-lost for the feed; a minute after the loss it has cleared by itself"
    )
    func packetLossInTheHealth() throws {
        try RTPAdversaryTests.withRecordedStream { pair, daemon in
            let recorder = try #require(try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue?.first)
            let feed = "\(recorder["app"]?.stringValue ?? "")/\(recorder["stream"]?.stringValue ?? "")"
            let series = "recd_health{scope=\"feed\",feed=\"\(feed)\",reason=\"packets-lost\",state=\"warning\"} 1"
            #expect(
                eventually(timeout: 3) { !Self.feedReasons(daemon, feed: feed).contains("packets-lost") },
                "packets lost before the drop: \(Self.feedReasons(daemon, feed: feed))")

            let resume = try Self.dropStream(pair, table: "recdhealth")
            let cutAt = Date()
            let whileDropping = eventually(timeout: 3) { Self.feedReasons(daemon, feed: feed).contains("packets-lost") }
            let shownAfter = Date().timeIntervalSince(cutAt)
            let metricsWhileDropping = Self.metrics(pair)
            let line = try daemon.recctl("status").stdout.split(separator: "\n").first.map(String.init) ?? ""
            // 1.5 s of the cut in all (the checks above took part of it).
            usleep(UInt32(max(0, 1.5 - Date().timeIntervalSince(cutAt)) * 1e6))
            let dropped = try resume()
            let upAt = Date()
            print("rtp health: nft dropped \(dropped) packets; packets-lost shown \(shownAfter) s into the cut")
            print("rtp health: recctl status while dropping: \(line)")
            #expect(whileDropping, "no packets-lost while the stream is dropped: \(daemon.log.suffix(2000))")
            #expect(metricsWhileDropping.contains(series), "\(metricsWhileDropping)")
            #expect(dropped > 1000, "the cut dropped \(dropped) packets")
            #expect(line.contains("\(feed) losing network packets"), "\(line)")

            // After the cut the monitor has counted them lost: still within the last minute.
            #expect(Self.feedReasons(daemon, feed: feed).contains("packets-lost"))
            let text = try daemon.recctl("--json", "status").json?["health"]?["feeds"]?.arrayValue?
                .first { $0["feed"]?.stringValue == feed }?["reasons"]?.arrayValue?
                .first { $0["reason"] == "packets-lost" }?["text"]?.stringValue ?? ""
            print("rtp health: \(text)")
            let counted = Int(text.split(separator: ":").last?.split(separator: " ").first ?? "") ?? -1
            #expect(abs(counted - dropped) <= max(10, dropped / 10), "\(text); nft dropped \(dropped)")

            // Clears by itself once the loss is older than the window (a minute), not before.
            let cleared = eventually(timeout: 80) { !Self.feedReasons(daemon, feed: feed).contains("packets-lost") }
            let clearedAfter = Date().timeIntervalSince(upAt)
            print("rtp health: packets-lost cleared \(clearedAfter) s after the cut ended")
            #expect(cleared, "packets-lost still there: \(Self.feedReasons(daemon, feed: feed))")
            #expect(clearedAfter >= 55, "cleared after \(clearedAfter) s: sooner than the minute")
            #expect(!Self.metrics(pair).contains("reason=\"packets-lost\""), "\(Self.metrics(pair))")
        }
    }
}

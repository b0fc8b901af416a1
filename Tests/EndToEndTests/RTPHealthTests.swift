// The operator's view of a stream losing packets (RTPAudioTests' setup through
// `RTPAdversaryTests.withRecordedStream`: module-rtp-sink in one namespace, module-rtp-source and
// recd in the other, across a veth pair): nftables on the sender drops the stream for 1.5 s.
// While it does, recd's health has `packets-lost` for the feed in `recctl --json status` and
// in /metrics; a minute after, it has cleared by itself; the finished segment's network loss is
// in /api/day (the day view's marks) where the cut was. And the converse: recd itself stopped for
// a moment (its monitor's socket overflowing, PipeWire's not) is no network loss.
// PipeWire pass only, as RTPAudioTests.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension RTPAudioTests {
    /// The feed's health reasons (`reason` codes) in `recctl --json status`.
    static func feedReasons(_ daemon: Daemon, feed: String) -> [String] {
        let health = try? daemon.recctl("--json", "status").json?["health"]
        let entry = health?["feeds"]?.arrayValue?.first { $0["feed"]?.stringValue == feed }
        return (entry?["reasons"]?.arrayValue ?? []).compactMap { $0["reason"]?.stringValue }
    }

    @Test(
        "a stream losing packets: while nftables drops it, recctl --json status's health and /metrics have packets-lost for the feed; a minute after the loss it has cleared by itself; /api/day has the network loss at the cut's time"
    )
    func packetLossInTheHealth() throws {
        try RTPAdversaryTests.withRecordedStream { pair, daemon in
            let recorder = try #require(try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue?.first)
            let feed = "\(recorder["app"]?.stringValue ?? "")/\(recorder["stream"]?.stringValue ?? "")"
            let series = "recd_health{scope=\"feed\",feed=\"\(feed)\",reason=\"packets-lost\",state=\"warning\"} 1"
            #expect(
                eventually(timeout: 3) { !Self.feedReasons(daemon, feed: feed).contains("packets-lost") },
                "packets lost before the drop: \(Self.feedReasons(daemon, feed: feed))")

            let drop = try Self.StreamDrop(pair, table: "recdhealth")
            let cutAt = Date()
            let whileDropping = eventually(timeout: 3) { Self.feedReasons(daemon, feed: feed).contains("packets-lost") }
            let shownAfter = Date().timeIntervalSince(cutAt)
            let metricsWhileDropping = Self.metrics(pair)
            let line = try daemon.recctl("status").stdout.split(separator: "\n").first.map(String.init) ?? ""
            // 1.5 s of the cut in all (the checks above took part of it).
            usleep(UInt32(max(0, 1.5 - Date().timeIntervalSince(cutAt)) * 1e6))
            let dropped = try drop.stop()
            let upAt = Date()
            print("rtp health: nft dropped \(dropped) packets; packets-lost shown \(shownAfter) s into the cut")
            print("rtp health: recctl status while dropping: \(line)")
            #expect(whileDropping, "no packets-lost while the stream is dropped: \(daemon.log.suffix(2000))")
            #expect(metricsWhileDropping.contains(series), "\(metricsWhileDropping)")
            #expect(dropped > 1000, "the cut dropped \(dropped) packets")
            #expect(line.contains("\(feed) losing network packets"), "\(line)")

            // After the cut the monitor has counted them lost: still within the last minute.
            #expect(Self.feedReasons(daemon, feed: feed).contains("packets-lost"))
            let text =
                try daemon.recctl("--json", "status").json?["health"]?["feeds"]?.arrayValue?
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

            // The day view: the finished segment's network loss in /api/day, where the cut was.
            try #require(daemon.recctl("record", "stop", "remote").status == 0)
            let date = String(ISO8601DateFormatter().string(from: cutAt).prefix(10))
            let query =
                "/api/day?feed=\(feed.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
                + "&date=\(date)"
            func losses() -> [(at: Double, seconds: Double)] {
                let day = try? JSONValue.parse(Self.httpGet(pair, query))
                return (day?["segments"]?.arrayValue ?? []).flatMap { segment in
                    // [start, end, number, LUFS, dBTP, end reason, gaps, network losses]
                    let columns = segment.arrayValue ?? []
                    let list = columns.count > 7 ? columns[7].arrayValue ?? [] : []
                    return list.compactMap { loss -> (at: Double, seconds: Double)? in
                        let pair = loss.arrayValue ?? []
                        guard pair.count == 2, let at = pair[0].doubleValue, let ms = pair[1].doubleValue else {
                            return nil
                        }
                        return (at / 1000, ms / 1000)
                    }
                }
            }
            #expect(eventually(timeout: 10) { !losses().isEmpty }, "no network loss in \(Self.httpGet(pair, query))")
            let found = losses()
            print(
                "rtp day: network losses \(found); the cut \(cutAt.timeIntervalSince1970) to \(upAt.timeIntervalSince1970)"
            )
            #expect(found.count == 1, "one network loss for one cut: \(found)")
            if let loss = found.first {
                #expect(abs(loss.at - cutAt.timeIntervalSince1970) <= 1, "the loss at \(loss.at), the cut at \(cutAt)")
                #expect(abs(loss.seconds - upAt.timeIntervalSince(cutAt)) <= 1, "\(loss.seconds) s of loss")
            }
        }
    }

    @Test(
        "recd stopped for 1.5 s (SIGSTOP) while the stream flows: what its own socket dropped meanwhile is unheard, not lost; no packets-lost in the health, no NETWORK_LOSS and no lost packets in the segment"
    )
    func monitorFallsBehind() throws {
        try RTPAdversaryTests.withRecordedStream { pair, daemon in
            let recd = try #require(daemon.pid)
            let recorder = try #require(try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue?.first)
            let feed = "\(recorder["app"]?.stringValue ?? "")/\(recorder["stream"]?.stringValue ?? "")"
            let before = try #require(RTPAdversaryTests.Counts(pair))
            // Every thread of recd stands still; PipeWire (another process) goes on receiving.
            try #require(kill(recd, SIGSTOP) == 0)
            usleep(1_500_000)
            try #require(kill(recd, SIGCONT) == 0)
            #expect(RTPAdversaryTests.stillCounting(pair), "the monitor stopped counting")
            let after = try #require(RTPAdversaryTests.Counts(pair))
            print("rtp monitor behind: before \(before); after \(after)")
            // 1.5 s is 1500 packets; the socket's buffer holds a few hundred of them.
            #expect((after.unheard ?? 0) - (before.unheard ?? 0) >= 500, "\(before) → \(after)")
            #expect(after.lost - before.lost <= 5, "the stall counted as lost: \(before) → \(after)")
            #expect(after.silences == before.silences, "the stall made a network loss: \(before) → \(after)")
            #expect(!Self.feedReasons(daemon, feed: feed).contains("packets-lost"), "\(Self.feedReasons(daemon, feed: feed))")
            #expect(daemon.log.contains("own socket dropped"), "\(daemon.log.suffix(2000))")
            let segment = try RTPAdversaryTests.finishedSegment(daemon)
            #expect(try metaflacTag(segment, "NETWORK_LOSS") == nil)
            let lost = try metaflacTag(segment, "NETWORK_PACKETS_LOST").flatMap { Int($0) } ?? -1
            #expect(lost >= 0 && lost <= 5, "NETWORK_PACKETS_LOST \(lost)")
        }
    }
}

// The RTP monitor's pure parts: counting a stream's sequence numbers (wraparound, reordering,
// duplicates, a new sender), reading RTP headers and SAP announcements as PipeWire 0.3.65's
// module-rtp-sink sends them, and placing a silence in the receiver's output. The sockets and the
// thread are RTPAudioTests' (a real stream between two PipeWires in network namespaces).
import Foundation
import Platform
import TestSupport
import Testing

@testable import Daemon

#if canImport(Glibc)
    import Glibc
#endif

@Suite("RTP monitor: sequence numbers, headers, SAP, outages")
struct RTPMonitorTests {
    /// Feeds `sequences` (one SSRC unless given) and returns the counter.
    static func counted(_ sequences: [UInt16], ssrc: UInt32 = 7) -> RTPSequenceCounter {
        var counter = RTPSequenceCounter()
        for sequence in sequences { _ = counter.count(ssrc: ssrc, sequence: sequence) }
        return counter
    }

    @Test("in order: every packet received, none lost")
    func inOrder() {
        let counter = Self.counted(Array(100..<1100))
        #expect(counter.received == 1000 && counter.lost == 0 && counter.duplicates == 0)
    }

    @Test("the 16-bit sequence number wraps without a loss, and a loss across the wrap is counted")
    func wraparound() {
        let steady = Self.counted((65_000...65_535).map { UInt16($0) } + (0..<1000).map { UInt16($0) })
        #expect(steady.received == 1536 && steady.lost == 0)
        let lossy = Self.counted([65_533, 65_534, 2, 3])
        #expect(lossy.received == 4 && lossy.lost == 3, "65535, 0 and 1 are missing")
    }

    @Test("skipped numbers are lost; one that comes late is taken back off the loss; a duplicate is not counted")
    func reorderAndDuplicates() {
        var counter = RTPSequenceCounter()
        #expect(counter.count(ssrc: 1, sequence: 10) == .newSource)
        #expect(counter.count(ssrc: 1, sequence: 13) == .inOrder(skipped: 2))
        #expect(counter.lost == 2)
        #expect(counter.count(ssrc: 1, sequence: 11) == .late)
        #expect(counter.lost == 1 && counter.received == 3)
        #expect(counter.count(ssrc: 1, sequence: 11) == .duplicate)
        #expect(counter.count(ssrc: 1, sequence: 13) == .duplicate)
        #expect(counter.count(ssrc: 1, sequence: 12) == .late)
        #expect(counter.lost == 0 && counter.received == 4 && counter.duplicates == 2)
    }

    @Test("a new SSRC is a restarted sender: counting goes on from its first packet, nothing lost across")
    func newSender() {
        var counter = Self.counted(Array(500..<600), ssrc: 1)
        #expect(counter.count(ssrc: 2, sequence: 9) == .newSource)
        for sequence in UInt16(10)..<20 { _ = counter.count(ssrc: 2, sequence: sequence) }
        #expect(counter.received == 111 && counter.lost == 0)
        _ = counter.count(ssrc: 2, sequence: 25)
        #expect(counter.lost == 5)
    }

    @Test("a link cut of 3000 packets is 3000 lost; a jump further back than 3000 is a resynchronization")
    func longCut() {
        var counter = Self.counted(Array(0..<100))
        _ = counter.count(ssrc: 7, sequence: 3100)
        #expect(counter.lost == 3000)
        #expect(counter.count(ssrc: 7, sequence: 50) == .resynchronized)
        _ = counter.count(ssrc: 7, sequence: 51)
        #expect(counter.lost == 3000 && counter.received == 103)
    }

    @Test("missing audio by the timestamps: a cut is its samples; packets in bursts, a lost packet or two, are none")
    func audioGaps() {
        var gaps = RTPAudioGaps(thresholdSamples: 960, samplesPerPacket: 48)
        var counter = RTPSequenceCounter()
        func packet(_ sequence: UInt16, _ timestamp: UInt32) -> Int? {
            gaps.missing(before: timestamp, arrival: counter.count(ssrc: 1, sequence: sequence))
        }
        #expect(packet(0, 4_294_967_200) == nil)
        #expect(packet(1, 4_294_967_248) == nil)
        #expect(packet(2, 0) == nil, "the timestamp wraps")
        #expect(packet(5, 144) == nil, "two packets lost: 2 ms, under the 20 ms threshold")
        #expect(packet(3005, 144_144) == 143_952, "3000 packets of 48 samples lost but this one's")
        #expect(packet(3006, 154_144) == 9952, "the sender stood still 0.2 s: no number skipped, time missing")
        var learning = RTPAudioGaps(thresholdSamples: 960, samplesPerPacket: nil)
        var second = RTPSequenceCounter()
        _ = learning.missing(before: 1000, arrival: second.count(ssrc: 9, sequence: 7))
        _ = learning.missing(before: 1048, arrival: second.count(ssrc: 9, sequence: 8))
        #expect(learning.samplesPerPacket == 48)
    }

    @Test("an RTP header: version 2, sequence, timestamp, SSRC; anything shorter or another version is not one")
    func header() {
        let bytes: [UInt8] = [0x80, 0x7F, 0x12, 0x34, 0, 0, 0x01, 0x00, 0xDE, 0xAD, 0xBE, 0xEF, 1, 2, 3]
        let header = bytes.withUnsafeBytes { RTPHeader($0) }
        #expect(header == RTPHeader(sequence: 0x1234, timestamp: 256, ssrc: 0xDEAD_BEEF))
        #expect(Array(bytes.prefix(11)).withUnsafeBytes { RTPHeader($0) } == nil)
        #expect(([0x40] + Array(bytes.dropFirst())).withUnsafeBytes { RTPHeader($0) } == nil)
    }

    /// An announcement as PipeWire 0.3.65's module-rtp-sink sends it (IPv4 origin, no
    /// authentication, `application/sdp`).
    static func announcement(deletion: Bool = false) -> [UInt8] {
        let sdp = """
            v=0\r
            o=root 4005211321 0 IN IP4 10.231.0.2\r
            s=studio2\r
            c=IN IP4 239.255.42.1/32\r
            t=0 0\r
            m=audio 46000 RTP/AVP 127\r
            a=rtpmap:127 L24/48000/2\r
            a=ptime:1\r

            """
        return [deletion ? 0x24 : 0x20, 0, 0x12, 0x34, 10, 231, 0, 2] + Array("application/sdp".utf8) + [0]
            + Array(sdp.utf8)
    }

    @Test("a SAP announcement gives the session's origin, name, group, port and packet time")
    func sap() throws {
        let parsed = try #require(Self.announcement().withUnsafeBytes { SAPAnnouncement($0) })
        #expect(!parsed.deletion)
        #expect(parsed.session.origin == "root 4005211321 0 IN IP4 10.231.0.2")
        #expect(parsed.session.name == "studio2")
        #expect(parsed.session.group == "239.255.42.1" && parsed.session.port == 46000)
        #expect(parsed.session.packetMilliseconds == 1 && parsed.session.clockRate == 48_000)
        #expect(Self.announcement(deletion: true).withUnsafeBytes { SAPAnnouncement($0) }?.deletion == true)
        // Encrypted, another version, another payload type, cut short: not taken.
        var encrypted = Self.announcement()
        encrypted[0] |= 0x02
        #expect(encrypted.withUnsafeBytes { SAPAnnouncement($0) } == nil)
        var version = Self.announcement()
        version[0] = 0x40
        #expect(version.withUnsafeBytes { SAPAnnouncement($0) } == nil)
        let other = [UInt8]([0x20, 0, 0, 0, 1, 2, 3, 4]) + Array("text/plain".utf8) + [0] + Array("v=0\n".utf8)
        #expect(other.withUnsafeBytes { SAPAnnouncement($0) } == nil)
        #expect(Array(Self.announcement().prefix(30)).withUnsafeBytes { SAPAnnouncement($0) } == nil)
    }

    @Test("a silence plays as zeros one buffer later, from the end of the last packet to the first after it")
    func outages() {
        var facts = RTPStreamFacts(
            session: "studio2", address: "10.231.0.2", group: "239.255.42.1", port: 46000, packetMicros: 1000,
            silenceMicros: 20_000, latencyMicros: 100_000)
        facts.recentSilences = [
            RTPSilence(
                lastPacketMicros: 1_000_000, firstPacketMicros: 4_000_000, lastPacketWallNanoseconds: 0,
                firstPacketWallNanoseconds: 0, missingMicros: 2_999_000)
        ]
        facts.lastPacketMicros = 9_000_000
        #expect(facts.outages(overlapping: 0..<9_000_000, now: 9_000_500) == [1_101_000..<4_100_000])
        #expect(facts.outages(overlapping: 5_000_000..<9_000_000, now: 9_000_500).isEmpty)
        // No packet for longer than the buffer by now: an outage going on, to the end of the range
        // asked; for less (a burst late), none.
        #expect(
            facts.outages(overlapping: 8_000_000..<9_200_000, now: 9_150_000) == [9_101_000..<9_200_000])
        #expect(facts.outages(overlapping: 8_000_000..<9_200_000, now: 9_050_000).isEmpty)
        #expect(facts.label == "studio2@10.231.0.2")
    }
}

/// The monitor itself on real sockets: SAP and RTP sent to multicast groups on the loopback
/// interface (no traffic leaves the machine), the monitor joined there; its thread counts.
@Suite("RTP monitor on loopback multicast", .serialized)
struct RTPMonitorSocketTests {
    /// A UDP socket that sends multicast out of the loopback interface.
    final class Sender {
        let fd: Int32
        init() throws {
            fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            try #require(fd >= 0)
            var loopback = in_addr(s_addr: inet_addr("127.0.0.1"))
            var on: UInt8 = 1
            setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &loopback, socklen_t(MemoryLayout<in_addr>.size))
            setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, &on, 1)
        }
        deinit { close(fd) }

        func send(_ bytes: [UInt8], to group: String, port: UInt16) {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr(group)
            _ = bytes.withUnsafeBytes { buffer in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }

        /// An RTP packet of 48 L24 stereo frames (the payload zeros) after a 12-byte header.
        func rtp(sequence: UInt16, timestamp: UInt32, ssrc: UInt32, to group: String, port: UInt16) {
            var packet: [UInt8] = [0x80, 127, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
            for word in [timestamp, ssrc] { packet += [24, 16, 8, 0].map { UInt8((word >> $0) & 0xFF) } }
            send(packet + [UInt8](repeating: 0, count: 288), to: group, port: port)
        }
    }

    @Test(
        "the monitor learns the group from SAP, hears the stream beside another socket, counts wraparound, loss, a late packet, a duplicate, a silence and a new sender"
    )
    func countsAStream() throws {
        let group = "239.255.77.\(1 + getpid() % 250)"
        let port = UInt16(40_000 + getpid() % 20_000)
        let origin = "root \(getpid()) 0 IN IP4 127.0.0.1"
        let monitor = try RTPMonitor(interface: "lo")
        defer { monitor.stop() }
        monitor.watch([
            origin: RTPMonitor.Wanted(
                client: "studio2", session: "studio2", address: "127.0.0.1", latencyMilliseconds: 100)
        ])
        // Another receiver of the group, as PipeWire is: it gets every packet too.
        let other = try MulticastSocket.open(group: group, port: port, interface: "lo")
        defer { Descriptor.close(other) }
        let sender = try Sender()
        let sdp =
            "v=0\r\no=\(origin)\r\ns=studio2\r\nc=IN IP4 \(group)/1\r\nt=0 0\r\nm=audio \(port) RTP/AVP 127\r\n"
            + "a=rtpmap:127 L24/48000/2\r\na=ptime:1\r\n"
        let announcement =
            [UInt8]([0x20, 0, 0x12, 0x34, 127, 0, 0, 1]) + Array("application/sdp".utf8) + [0]
            + Array(sdp.utf8)
        #expect(
            eventually(timeout: 5) {
                sender.send(announcement, to: SAPAnnouncement.group, port: SAPAnnouncement.port)
                usleep(50_000)
                return monitor.facts()["studio2"] != nil
            }, "the monitor did not take the announcement")

        // 65530...65535, 0...10 (the wrap), 13, 14 (11 and 12 lost), 12 (late), 12 again (a
        // duplicate), 15, then 1 s of audio missing by the timestamps (a silence), 16; then a new SSRC.
        var sequences: [UInt16] = Array(65_530...65_535) + Array(0...10) + [13, 14, 12, 12, 15]
        var timestamps = sequences.map { UInt32(truncatingIfNeeded: Int($0 &- 65_530) * 48) }
        sequences.append(16)
        timestamps.append(timestamps.last! + 48_000 + 48)
        for (sequence, timestamp) in zip(sequences, timestamps) {
            sender.rtp(sequence: sequence, timestamp: timestamp, ssrc: 42, to: group, port: port)
        }
        for sequence in UInt16(500)..<UInt16(510) {
            sender.rtp(sequence: sequence, timestamp: UInt32(sequence) * 48, ssrc: 43, to: group, port: port)
        }
        // Distinct packets: 17 to the wrap's end, 13, 14, 12 (late), 15, 16, and the new sender's 10.
        let expected = (packets: 17 + 5 + 10, lost: 1, silences: 1)
        #expect(
            eventually(timeout: 5) {
                let facts = monitor.facts()["studio2"]
                return facts?.packets == expected.packets && facts?.lost == expected.lost
            }, "\(String(describing: monitor.facts()["studio2"]))")
        let facts = try #require(monitor.facts()["studio2"])
        #expect(facts.duplicates == 1 && facts.silences == expected.silences, "\(facts)")
        #expect(facts.recentSilences.first.map { abs($0.missingMicros - 1_000_000) <= 1 } == true, "\(facts)")
        #expect(facts.group == group && facts.port == port && facts.label == "studio2@127.0.0.1")

        // The other socket got every datagram too (and the monitor's reads were truncated ones).
        var buffer = [UInt8](repeating: 0, count: 2048)
        var received = 0
        while let _ = try buffer.withUnsafeMutableBytes({ try MulticastSocket.receive(other, into: $0) }) {
            received += 1
        }
        #expect(received == sequences.count + 10)

        // The node goes: the stream is forgotten.
        monitor.watch([:])
        #expect(eventually(timeout: 2) { monitor.facts().isEmpty })
    }
}

// The RTP monitor on real sockets: SAP and RTP sent to multicast groups on the loopback interface
// (no traffic leaves the machine), the monitor joined there; its thread counts. A second sender
// bound to 127.0.0.2 (another address of this machine: another host for the monitor) forges
// packets and announcements, which do not count.
import Foundation
import Platform
import TestSupport
import Testing

@testable import NetworkAudio

#if canImport(Glibc)
    import Glibc
#endif

@Suite("RTP monitor on loopback multicast", .serialized)
struct RTPMonitorSocketTests {
    /// A UDP socket that sends multicast out of the loopback interface.
    final class Sender {
        let fd: Int32
        /// From `address` (a loopback address: 127.0.0.1, or 127.0.0.2 for another host).
        init(from address: String = "127.0.0.1") throws {
            fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            try #require(fd >= 0)
            var source = sockaddr_in()
            source.sin_family = sa_family_t(AF_INET)
            source.sin_addr.s_addr = inet_addr(address)
            let bound = withUnsafePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(bound == 0, "bind \(address): errno \(errno)")
            var loopback = in_addr(s_addr: inet_addr(address))
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
        "the monitor learns the group from SAP, hears the stream beside another socket, counts wraparound, loss, a late packet, a duplicate, a network loss; another host's packets and announcement do not count; a sender that starts again with a new SSRC is taken over"
    )
    func countsAStream() throws {
        let group = "239.255.77.\(1 + getpid() % 250)"
        let port = UInt16(40_000 + getpid() % 20_000)
        let origin = "root \(getpid()) 0 IN IP4 127.0.0.1"
        let notes = Locked<[String]>([])
        let monitor = try RTPMonitor(interface: "lo") { note in notes.withLock { $0.append(note.text) } }
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
        func announce(_ sdp: String) -> [UInt8] {
            [0x20, 0, 0x12, 0x34, 127, 0, 0, 1] + Array("application/sdp".utf8) + [0] + Array(sdp.utf8)
        }
        let announcement = announce(sdp)
        #expect(
            eventually(timeout: 5) {
                sender.send(announcement, to: SAPAnnouncement.group, port: SAPAnnouncement.port)
                usleep(50_000)
                return monitor.facts()["studio2"] != nil
            }, "the monitor did not take the announcement")

        // 65530...65535, 0...10 (the wrap), 13, 14 (11 and 12 lost), 12 (late), 12 again (a
        // duplicate), 15, then 1 s of audio missing by the timestamps (a network loss), 16 and 17 (whose
        // timestamp goes on from 16's: the network loss stands).
        var sequences: [UInt16] = Array(65_530...65_535) + Array(0...10) + [13, 14, 12, 12, 15]
        var timestamps = sequences.map { UInt32(truncatingIfNeeded: Int($0 &- 65_530) * 48) }
        let resumed = (timestamps.last ?? 0) + 48_000 + 48
        sequences += [16, 17]
        timestamps += [resumed, resumed + 48]
        for (sequence, timestamp) in zip(sequences, timestamps) {
            sender.rtp(sequence: sequence, timestamp: timestamp, ssrc: 42, to: group, port: port)
        }
        // Another SSRC at once: not the stream's (its own SSRC did not stop).
        for sequence in UInt16(500)..<UInt16(510) {
            sender.rtp(sequence: sequence, timestamp: UInt32(sequence) * 48, ssrc: 43, to: group, port: port)
        }
        // Distinct packets: 17 to the wrap's end, 13, 14, 12 (late), 15, 16, 17.
        let expected = (packets: 17 + 6, lost: 1, lossCount: 1)
        #expect(
            eventually(timeout: 5) {
                let facts = monitor.facts()["studio2"]
                return facts?.packets == expected.packets && facts?.ignored == 10
            }, "\(String(describing: monitor.facts()["studio2"]))")
        let facts = try #require(monitor.facts()["studio2"])
        #expect(
            facts.lost == expected.lost && facts.duplicates == 1 && facts.lossCount == expected.lossCount, "\(facts)")
        #expect(facts.recentLosses.first.map { abs($0.missingMicros - 1_000_000) <= 1 } == true, "\(facts)")
        #expect(facts.group == group && facts.port == port && facts.label == "studio2@127.0.0.1")

        // Another host (127.0.0.2) forges: packets of the stream's SSRC far ahead, and the stream's
        // announcement moved to another group. Neither counts; the stream goes on.
        let forger = try Sender(from: "127.0.0.2")
        for offset in UInt16(0)..<20 {
            forger.rtp(sequence: 30_000 + offset, timestamp: 60 * 48_000, ssrc: 42, to: group, port: port)
        }
        forger.send(
            announce(sdp.replacingOccurrences(of: "c=IN IP4 \(group)", with: "c=IN IP4 239.255.78.1")),
            to: SAPAnnouncement.group, port: SAPAnnouncement.port)
        for sequence in UInt16(18)..<UInt16(28) {
            sender.rtp(
                sequence: sequence, timestamp: resumed + UInt32(sequence - 16) * 48, ssrc: 42, to: group, port: port)
        }
        #expect(
            eventually(timeout: 5) { monitor.facts()["studio2"]?.packets == expected.packets + 10 },
            "\(String(describing: monitor.facts()["studio2"]))")
        let after = try #require(monitor.facts()["studio2"])
        #expect(after.lost == expected.lost && after.lossCount == expected.lossCount && after.ignored == 30, "\(after)")
        #expect(after.group == group)
        #expect(
            eventually(timeout: 2) {
                notes.withLock { $0 }.contains { $0.contains("refused an announcement") && $0.contains("127.0.0.2") }
            }, "\(notes.withLock { $0 })")

        // The sender starts again with a new SSRC after 3 s without packets: it takes over at its
        // fourth packet in sequence, the counts go on, the 3 s are a network loss.
        usleep(UInt32(RTPStreamTracker.handoverLossMicros) + 100_000)
        for sequence in UInt16(500)..<UInt16(510) {
            sender.rtp(sequence: sequence, timestamp: UInt32(sequence) * 48, ssrc: 43, to: group, port: port)
        }
        #expect(
            eventually(timeout: 5) { monitor.facts()["studio2"]?.packets == expected.packets + 10 + 7 },
            "\(String(describing: monitor.facts()["studio2"]))")
        let restarted = try #require(monitor.facts()["studio2"])
        #expect(restarted.lost == expected.lost && restarted.lossCount == 2, "\(restarted)")
        #expect((restarted.recentLosses.last?.missingMicros ?? 0) >= 3_000_000, "\(restarted)")

        // The other socket got every datagram too (and the monitor's reads were truncated ones).
        var buffer = [UInt8](repeating: 0, count: 2048)
        var received = 0
        while let _ = try buffer.withUnsafeMutableBytes({ try MulticastSocket.receive(other, into: $0) }) {
            received += 1
        }
        #expect(received == sequences.count + 10 + 20 + 10 + 10)

        // The node goes: the stream is forgotten.
        monitor.watch([:])
        #expect(eventually(timeout: 2) { monitor.facts().isEmpty })
    }
}

extension RTPMonitorSocketTests {
    @Test("a socket whose reader falls behind says how many datagrams it dropped (SO_RXQ_OVFL) with the next one")
    func socketDrops() throws {
        let group = "239.255.78.\(1 + getpid() % 250)"
        let port = UInt16(40_000 + (getpid() + 7) % 20_000)
        let fd = try MulticastSocket.open(group: group, port: port, interface: "lo")
        defer { Descriptor.close(fd) }
        // A small receive buffer (the kernel's least, about 2 KiB of datagrams): it fills at once.
        var size: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let sender = try Sender()
        var buffer = [UInt8](repeating: 0, count: 2048)
        func drain() throws -> (count: Int, lastDrops: UInt32?) {
            var count = 0
            var last: UInt32?
            while let datagram = try buffer.withUnsafeMutableBytes({ try MulticastSocket.receive(fd, into: $0) }) {
                count += 1
                last = datagram.socketDrops
            }
            return (count, last)
        }
        // Nothing dropped yet: the count is 0 on each datagram.
        sender.rtp(sequence: 1, timestamp: 48, ssrc: 1, to: group, port: port)
        #expect(eventually(timeout: 2) { (try? drain())?.lastDrops == 0 })
        // 300 sent while nobody reads: most are dropped, and a datagram queued after the drops says
        // how many (the last one sent comes when room is made: read, send one more).
        for sequence in UInt16(2)..<UInt16(302) {
            sender.rtp(sequence: sequence, timestamp: UInt32(sequence) * 48, ssrc: 1, to: group, port: port)
        }
        let first = try drain()
        sender.rtp(sequence: 302, timestamp: 302 * 48, ssrc: 1, to: group, port: port)
        var after: (count: Int, lastDrops: UInt32?) = (0, nil)
        #expect(eventually(timeout: 2) {
            after = (try? drain()) ?? (0, nil)
            return after.count > 0
        })
        print("socket drops: \(first.count) of 300 read, then \(after.lastDrops ?? 0) dropped said the next")
        #expect(first.count < 300, "the buffer held all 300: nothing was dropped")
        #expect(after.lastDrops.map(Int.init) == 300 - first.count, "\(first), then \(after)")
    }
}

/// A value behind a lock, for the monitor's log closure (its thread) and the test's reads.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

// The RTP monitor's decisions against a host on the network that is not the sender, fed datagrams
// with their source addresses and receive times (no sockets): each attack that forged or erased loss
// (10 packets seq+30000, a 60 s timestamp jump, 80 fake 30 ms gaps against a real 1.5 s cut,
// random-SSRC packets during a cut, the real origin announced with another group), from another
// address and from the sender's own (spoofed), and what a real sender does (a cut, a restart).
// The same attacks as real processes against a running recd: RTPAdversaryTests.
import Platform
import Testing

@testable import NetworkAudio

@Suite("RTP monitor: which announcements and packets count")
struct RTPMonitorCoreTests {
    static let origin = "root 4005211321 0 IN IP4 10.231.0.2"

    /// A monitor listening to one stream (1 ms L24 packets at 48 kHz) and a sender feeding it.
    struct Lab {
        var core = RTPMonitorCore()
        let sender: IPAddress
        let otherHost: IPAddress
        /// CLOCK_MONOTONIC µs.
        var now = 10_000_000
        var sequence: UInt16 = 65_000
        var timestamp: UInt32 = 4_294_000_000
        let ssrc: UInt32 = 0xC0FFEE
        /// What the monitor's socket says it dropped so far (SO_RXQ_OVFL), wrapping as the kernel's.
        var socketDrops: UInt32 = 4_294_967_000

        init() throws {
            sender = try #require(IPAddress(parsing: "10.231.0.2"))
            otherHost = try #require(IPAddress(parsing: "10.231.0.3"))
            let effects = core.apply(
                [
                    RTPMonitorCoreTests.origin: RTPMonitor.Wanted(
                        client: "studio2", session: "studio2", address: "10.231.0.2", latencyMilliseconds: 100)
                ], now: now)
            #expect(effects.isEmpty)
            #expect(announce(from: sender) == [.open(client: "studio2", group: "239.255.42.1", port: 46000)])
        }

        static func sdp(origin: String = RTPMonitorCoreTests.origin, group: String = "239.255.42.1", port: Int = 46000)
            -> String
        {
            "v=0\no=\(origin)\ns=studio2\nc=IN IP4 \(group)/1\nt=0 0\nm=audio \(port) RTP/AVP 127\n"
                + "a=rtpmap:127 L24/48000/2\na=ptime:1\n"
        }

        mutating func announce(from source: IPAddress?, sdp: String = Lab.sdp()) -> [RTPMonitorCore.Effect] {
            let bytes = [UInt8]([0x20, 0, 0, 1, 10, 231, 0, 2]) + Array("application/sdp".utf8) + [0] + Array(sdp.utf8)
            return bytes.withUnsafeBytes { core.announcement($0, size: $0.count, from: source, now: now) }
        }

        /// One datagram on the stream's socket.
        mutating func packet(
            sequence: UInt16, timestamp: UInt32, ssrc: UInt32, from source: IPAddress?, bytes count: Int = 300
        ) {
            var bytes: [UInt8] = [0x80, 127, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
            for word in [timestamp, ssrc] { bytes += [24, 16, 8, 0].map { UInt8((word >> $0) & 0xFF) } }
            bytes += [UInt8](repeating: 0, count: max(0, count - 12))
            let wall = Int64(truncatingIfNeeded: now) &* 1000 &+ 1_700_000_000_000_000_000
            bytes.withUnsafeBytes {
                core.packet(
                    client: "studio2", UnsafeRawBufferPointer(rebasing: $0.prefix(count)), from: source,
                    arrivalMicros: now, wallNanoseconds: wall, socketDrops: socketDrops)
            }
        }

        /// `count` packets of the real stream, 1 ms apart (in bursts of `burst`, as PipeWire sends).
        mutating func play(_ count: Int, burst: Int = 1) {
            for index in 0..<count {
                packet(sequence: sequence, timestamp: timestamp, ssrc: ssrc, from: sender)
                sequence &+= 1
                timestamp &+= 48
                if (index + 1) % burst == 0 { now += 1000 * burst }
            }
        }

        /// The link is cut for `seconds`: the sender goes on counting, nothing arrives.
        mutating func cut(_ seconds: Double) {
            let packets = Int(seconds * 1000)
            sequence &+= UInt16(truncatingIfNeeded: packets)
            timestamp &+= UInt32(packets * 48)
            now += packets * 1000
        }

        var facts: RTPStreamFacts {
            core.facts["studio2"]
                ?? RTPStreamFacts(
                    session: "none", address: nil, group: "", port: 0, packetMicros: 0, lossMicros: 0,
                    latencyMicros: 0)
        }
    }

    @Test(
        "packets count only from the address the SDP's origin names: another host's, with the stream's SSRC, are ignored"
    )
    func otherSourceIgnored() throws {
        var lab = try Lab()
        lab.play(100)
        for offset in 0..<50 {
            lab.packet(
                sequence: lab.sequence &+ UInt16(offset) &+ 30_000, timestamp: lab.timestamp &+ 60 * 48_000,
                ssrc: lab.ssrc, from: lab.otherHost)
        }
        lab.play(100)
        #expect(lab.facts.packets == 200 && lab.facts.lost == 0 && lab.facts.lossCount == 0, "\(lab.facts)")
        #expect(lab.facts.ignored == 50)
        #expect(
            lab.core.takeNotes().contains {
                $0.text.contains("not counting datagrams") && $0.text.contains("10.231.0.3")
            })
    }

    @Test(
        "packets recd's own socket dropped (the monitor fell behind) are unheard, not lost, and make no network loss; a gap they explain in part, or while another host floods the group, stays a loss"
    )
    func socketDropsAreUnheard() throws {
        var lab = try Lab()
        lab.play(100)
        // The monitor stalls for 0.5 s: its socket drops all 500 packets (its count wraps past
        // 2^32 on the way), while PipeWire's socket has them.
        lab.cut(0.5)
        lab.now += 500_000
        lab.socketDrops &+= 500
        lab.play(100)
        #expect(lab.facts.lost == 0 && lab.facts.unheard == 500 && lab.facts.lossCount == 0, "\(lab.facts)")
        #expect(lab.facts.packets == 200)
        let notes = lab.core.takeNotes().map(\.text)
        #expect(notes.contains { $0.contains("own socket dropped") && $0.contains("studio2") }, "\(notes)")
        // A 0.5 s gap of which the socket dropped 200: 300 lost, and the gap is a network loss.
        lab.cut(0.5)
        lab.now += 500_000
        lab.socketDrops &+= 200
        lab.play(100)
        #expect(lab.facts.lost == 300 && lab.facts.unheard == 700 && lab.facts.lossCount == 1, "\(lab.facts)")
        // A cut with no drops at the socket: all lost, as before.
        lab.cut(0.5)
        lab.now += 500_000
        lab.play(100)
        #expect(lab.facts.lost == 800 && lab.facts.unheard == 700 && lab.facts.lossCount == 2, "\(lab.facts)")
        // Drops without a gap in this stream (another sender's datagrams): nothing unheard.
        lab.socketDrops &+= 50
        lab.play(100)
        #expect(lab.facts.lost == 800 && lab.facts.unheard == 700, "\(lab.facts)")
        #expect(lab.core.takeNotes().filter { $0.text.contains("own socket dropped") }.isEmpty, "logged once")
        // Another host floods the group while the stream is cut and the socket drops as much:
        // the flood cannot pass the cut off as unheard.
        lab.cut(0.5)
        for offset in 0..<50 {
            lab.packet(
                sequence: UInt16(truncatingIfNeeded: offset), timestamp: 0, ssrc: lab.ssrc, from: lab.otherHost)
        }
        lab.now += 500_000
        lab.socketDrops &+= 500
        lab.play(100)
        #expect(lab.facts.lost == 1300 && lab.facts.unheard == 700 && lab.facts.lossCount == 3, "\(lab.facts)")
    }

    @Test("10 packets 30000 ahead of the stream, from the sender's own address and SSRC: no loss")
    func sequenceJump() throws {
        var lab = try Lab()
        lab.play(100)
        for _ in 0..<10 {
            lab.packet(
                sequence: lab.sequence &+ 30_000, timestamp: lab.timestamp &+ 30_000 * 48, ssrc: lab.ssrc,
                from: lab.sender)
            lab.play(5)
        }
        #expect(lab.facts.lost == 0 && lab.facts.packets == 150 && lab.facts.lossCount == 0, "\(lab.facts)")
        // Two forged in sequence take the counter over for a moment (a sender that started over);
        // the real stream's next two take it back; nothing is lost either way.
        lab.packet(sequence: lab.sequence &+ 30_000, timestamp: lab.timestamp, ssrc: lab.ssrc, from: lab.sender)
        lab.packet(sequence: lab.sequence &+ 30_001, timestamp: lab.timestamp, ssrc: lab.ssrc, from: lab.sender)
        lab.play(100)
        #expect(lab.facts.lost == 0 && lab.facts.lossCount == 0, "\(lab.facts)")
    }

    @Test("one packet with a 60 s timestamp jump, the next sequence number: no network loss")
    func timestampJump() throws {
        var lab = try Lab()
        lab.play(100)
        lab.packet(sequence: lab.sequence, timestamp: lab.timestamp &+ 60 * 48_000, ssrc: lab.ssrc, from: lab.sender)
        lab.sequence &+= 1
        lab.play(100)
        #expect(lab.facts.lossCount == 0 && lab.facts.recentLosses.isEmpty, "\(lab.facts)")
        #expect(lab.facts.losses(overlapping: 0..<lab.now, now: lab.now).isEmpty)
    }

    @Test(
        "80 fake 30 ms gaps from the sender's own address: the stream's next packets contradict them, no network loss")
    func fakeGapsContradicted() throws {
        var lab = try Lab()
        lab.play(100)
        for _ in 0..<80 {
            // The forged packet takes the next number; the real one with it is then a duplicate.
            lab.packet(sequence: lab.sequence, timestamp: lab.timestamp &+ 31 * 48, ssrc: lab.ssrc, from: lab.sender)
            lab.play(20)
        }
        #expect(lab.facts.lossCount == 0 && lab.facts.pendingLoss == nil, "\(lab.facts)")
        #expect(lab.facts.losses(overlapping: 0..<lab.now, now: lab.now).isEmpty)
    }

    @Test("a real 1.5 s cut, then 80 fake 30 ms gaps that later packets go on from: the cut stays in the loss list")
    func fakeGapsKeepTheCut() throws {
        var lab = try Lab()
        lab.play(1000, burst: 21)
        lab.cut(1.5)
        lab.play(100)
        #expect(lab.facts.lossCount == 1 && lab.facts.lost == 1500, "\(lab.facts)")
        for _ in 0..<80 {
            // A forger that also sends the packets after its gap (here: the lab's stream goes on
            // from the forged timestamp): the gaps are network losses, each as long as it says.
            lab.packet(sequence: lab.sequence, timestamp: lab.timestamp &+ 31 * 48, ssrc: lab.ssrc, from: lab.sender)
            lab.sequence &+= 1
            lab.timestamp &+= 31 * 48
            lab.play(20)
        }
        let kept = lab.facts.recentLosses
        #expect(kept.count == RTPStreamFacts.keptLosses)
        #expect(
            kept.contains { abs($0.missingMicros - 1_500_000) <= 1000 },
            "the cut was pushed out: \(kept.map(\.missingMicros))")
        #expect(kept.allSatisfy { $0.missingMicros <= 1_501_000 }, "overlapping forged gaps were merged into more")
        #expect(lab.facts.lossCount == 81)
    }

    @Test("packets of random SSRCs from the sender's address during a 1.5 s cut: the cut is still counted")
    func randomSSRCsDuringACut() throws {
        var lab = try Lab()
        var generator = SystemRandomNumberGenerator()
        lab.play(500)
        let before = lab.facts
        for _ in 0..<750 {
            lab.packet(
                sequence: UInt16.random(in: 0...65535, using: &generator),
                timestamp: UInt32.random(in: 0...UInt32.max, using: &generator),
                ssrc: UInt32.random(in: 0...UInt32.max, using: &generator), from: lab.sender)
            lab.sequence &+= 2
            lab.timestamp &+= 96
            lab.now += 2000
        }
        lab.play(100)
        #expect(lab.facts.lost - before.lost == 1500, "\(lab.facts)")
        #expect(
            lab.facts.lossCount == 1
                && lab.facts.recentLosses.first.map { abs($0.missingMicros - 1_500_000) <= 1000 } == true)
        #expect(lab.facts.ignored == 750)
    }

    @Test(
        "the real origin announced with another group: refused from another host; from the sender's address it waits while packets come, and moves once they stopped 3 s"
    )
    func movedAnnouncement() throws {
        var lab = try Lab()
        lab.play(100)
        let moved = Lab.sdp(group: "239.255.42.99")
        #expect(lab.announce(from: lab.otherHost, sdp: moved).isEmpty)
        #expect(lab.core.takeNotes().contains { $0.text.contains("refused an announcement") })
        #expect(lab.announce(from: lab.sender, sdp: moved).isEmpty, "the stream still receives")
        lab.play(100)
        #expect(lab.core.destination(of: "studio2")?.group == "239.255.42.1")
        #expect(lab.facts.packets == 200)
        // The real one again: nothing to do.
        #expect(lab.announce(from: lab.sender).isEmpty)
        // The stream stops; 2.9 s later the move still waits, at 3 s it is taken.
        lab.now += 2_900_000
        #expect(lab.announce(from: lab.sender, sdp: moved).isEmpty)
        lab.now += 100_000
        #expect(
            lab.announce(from: lab.sender, sdp: moved)
                == [.close(client: "studio2"), .open(client: "studio2", group: "239.255.42.99", port: 46000)])
    }

    @Test(
        "a sender that starts again with a new SSRC: taken over after 3 s without the old one's packets and 4 in sequence; counts only grow"
    )
    func handover() throws {
        var lab = try Lab()
        lab.play(1000)
        let before = lab.facts
        // A new SSRC while the old one plays: ignored.
        lab.packet(sequence: 1, timestamp: 0, ssrc: 77, from: lab.sender)
        lab.play(10)
        lab.now += 3_000_000
        for sequence in UInt16(1)...3 {
            lab.packet(sequence: sequence, timestamp: UInt32(sequence) * 48, ssrc: 77, from: lab.sender)
            lab.now += 1000
        }
        #expect(lab.facts.packets == before.packets + 10, "3 packets of the new SSRC are not enough")
        lab.packet(sequence: 4, timestamp: 4 * 48, ssrc: 77, from: lab.sender)
        #expect(lab.facts.packets == before.packets + 11 && lab.facts.lost == before.lost, "\(lab.facts)")
        #expect(lab.facts.lossCount == 1 && (lab.facts.recentLosses.last?.missingMicros ?? 0) >= 3_000_000)
        #expect(lab.core.takeNotes().contains { $0.text.contains("new SSRC") })
        // Now the old SSRC is the stranger.
        lab.play(5)
        #expect(lab.facts.packets == before.packets + 11)
    }

    @Test("an origin that names no address (0.0.0.0): the announcement's own sender is the stream's")
    func unspecifiedOrigin() throws {
        var lab = try Lab()
        let origin = "root 9 0 IN IP4 0.0.0.0"
        _ = lab.core.apply(
            [origin: RTPMonitor.Wanted(client: "anon", session: "anon", address: nil, latencyMilliseconds: 100)],
            now: lab.now)
        #expect(
            lab.announce(from: lab.otherHost, sdp: Lab.sdp(origin: origin, group: "239.1.1.1"))
                == [.open(client: "anon", group: "239.1.1.1", port: 46000)])
        lab.core.packet(
            client: "anon", UnsafeRawBufferPointer(start: nil, count: 0), from: lab.sender, arrivalMicros: 0,
            wallNanoseconds: 0)
        #expect(lab.core.facts["anon"]?.ignored == 1, "not from the address that announced it")
    }

    @Test(
        "what is remembered of announcements is bounded per sender: a flood from one host does not push out another's")
    func heardIsBounded() throws {
        var lab = try Lab()
        // An announcement for a node PipeWire does not show yet.
        let later = "root 55 0 IN IP4 10.231.0.2"
        _ = lab.announce(from: lab.sender, sdp: Lab.sdp(origin: later, group: "239.2.2.2"))
        for index in 0..<1000 {
            _ = lab.announce(
                from: lab.otherHost, sdp: Lab.sdp(origin: "evil \(index) 0 IN IP4 10.231.0.3", group: "239.3.3.3"))
        }
        let effects = lab.core.apply(
            [
                RTPMonitorCoreTests.origin: RTPMonitor.Wanted(
                    client: "studio2", session: "studio2", address: "10.231.0.2", latencyMilliseconds: 100),
                later: RTPMonitor.Wanted(client: "later", session: "later", address: nil, latencyMilliseconds: 100),
            ], now: lab.now)
        #expect(effects == [.open(client: "later", group: "239.2.2.2", port: 46000)])
    }

    @Test(
        "the network loss list: a loss right after another merges, an overlapping one does not; over 64, the shortest goes unless the oldest is a day old"
    )
    func networkLossList() {
        var facts = RTPStreamFacts(
            session: "s", address: nil, group: "239.1.1.1", port: 1, packetMicros: 1000, lossMicros: 20_000,
            latencyMicros: 100_000)
        func loss(at micros: Int, missing: Int) -> NetworkLoss {
            NetworkLoss(
                lastPacketMicros: micros, firstPacketMicros: micros + missing, lastPacketWallNanoseconds: 0,
                firstPacketWallNanoseconds: 0, missingMicros: missing)
        }
        facts.record(loss(at: 1_000_000, missing: 50_000))
        // Right after the first: merged. Overlapping it by 10 ms (timestamps no stream sends): apart.
        facts.record(loss(at: 1_050_000, missing: 50_000))
        #expect(facts.recentLosses.count == 1 && facts.recentLosses[0].missingMicros == 100_000)
        facts.record(loss(at: 1_090_000, missing: 20_000))
        #expect(facts.recentLosses.count == 2 && facts.lossCount == 3)
        facts.recentLosses.removeLast()
        facts.record(loss(at: 2_000_000, missing: 1_500_000))
        for index in 0..<100 { facts.record(loss(at: 4_000_000 + index * 100_000, missing: 30_000 + index)) }
        #expect(facts.recentLosses.count == 64)
        #expect(facts.recentLosses.contains { $0.missingMicros == 1_500_000 })
        #expect(facts.recentLosses.contains { $0.missingMicros == 30_099 }, "the newest long one")
        #expect(!facts.recentLosses.contains { $0.missingMicros == 30_000 }, "the shortest went")
        // A day later the oldest goes first, whatever its length.
        facts.record(loss(at: 26 * 3_600_000_000, missing: 25_000))
        #expect(!facts.recentLosses.contains { $0.missingMicros == 100_000 })
        #expect(facts.recentLosses.last?.missingMicros == 25_000)
    }

    @Test("warnings are bounded: 1000 refused announcements from 1000 addresses log 20 a minute, then how many more")
    func warningsBounded() throws {
        var lab = try Lab()
        _ = lab.core.takeNotes()
        for index in 0..<1000 {
            let source = try #require(IPAddress(parsing: "10.9.\(index / 250).\(index % 250 + 1)"))
            _ = lab.announce(from: source)
            lab.now += 1000
        }
        let first = lab.core.takeNotes()
        #expect(first.count == RTPMonitorCore.warningsPerMinute, "\(first.count)")
        lab.now += 60_000_000
        _ = lab.announce(from: try #require(IPAddress(parsing: "10.9.9.9")))
        let next = lab.core.takeNotes().map(\.text)
        #expect(next.first == "RTP monitor: 980 more warnings in the last minute not logged", "\(next)")
        #expect(next.count == 2)
    }

    @Test("datagrams of any size, any time, any source: counted or ignored, never a trap")
    func anyDatagram() throws {
        var lab = try Lab()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            let times = [Int.min, Int.max, 0, -1, lab.now, Int.random(in: Int.min...Int.max, using: &generator)]
            lab.now = times.randomElement(using: &generator) ?? 0
            let source = [lab.sender, lab.otherHost, nil].randomElement(using: &generator) ?? nil
            lab.packet(
                sequence: UInt16.random(in: 0...65535, using: &generator),
                timestamp: UInt32.random(in: 0...UInt32.max, using: &generator),
                ssrc: [lab.ssrc, 1].randomElement(using: &generator) ?? 1, from: source,
                bytes: Int.random(in: 0...20, using: &generator))
            _ = lab.facts.losses(overlapping: 0..<Int.max, now: Int.max)
        }
    }
}

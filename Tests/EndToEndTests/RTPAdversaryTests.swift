// Another host on the logger's network attacks recd's RTP monitor while recd records a real RTP
// stream (RTPAudioTests' setup: module-rtp-sink in one network namespace, module-rtp-source and recd
// in the other, across a veth pair). The attacker is a separate process (python3): it listens to
// the group on the logger's side, as any host on the LAN can, and sends from the sender's side,
// either from an address of its own (10.231.0.3: another host) or from the sender's own address
// (a host that spoofs it). What it sends is what such a host can: malformed SAP
// announcements, sequence and timestamp jumps, fake gaps, packets of random SSRCs during a real
// link cut, and the stream's own announcement moved to another group.
//
// PipeWire pass only, as RTPAudioTests: the monitor listens only to streams PipeWire receives.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(
    "RTP: an attacker on the multicast network against recd's RTP monitor", .serialized,
    .enabled(
        if: TestServer.isPipeWire,
        "PipeWire's module-rtp-source feeds PipeWire's graph, which only PipeWire's libjack reaches (pw-jack)"),
    .enabled(if: NamespacePair.permitted, Comment(rawValue: NamespacePair.skipReason)))
struct RTPAdversaryTests {
    /// Another host's address on the sender's side (added to its veth end).
    static let otherHost = "10.231.0.3"
    /// The attacker's UDP source port: the cut's nftables rule spares it.
    static let attackerPort = 47000

    /// The attacker (python3, a process of its own). It joins the stream's group and SAP's in the
    /// logger's namespace (to learn the stream's SSRC, sequence number, timestamp and announcement),
    /// then sends from the sender's namespace from `source`. Prints one line per thing sent.
    static let attacker = #"""
        import ctypes, os, random, socket, struct, sys, time
        listen_ns, send_ns, source, mode = sys.argv[1:5]
        args = sys.argv[5:]
        GROUP, PORT, SAP = '239.255.42.1', 46000, ('224.0.0.56', 9875)
        libc = ctypes.CDLL(None, use_errno=True)
        def enter(ns):
            fd = os.open('/run/netns/' + ns, os.O_RDONLY)
            if libc.setns(fd, 0x40000000) != 0:
                raise OSError(ctypes.get_errno(), 'setns ' + ns)
            os.close(fd)
        def ear(group, port):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            s.bind((group, port))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton('0.0.0.0'))
            return s
        enter(listen_ns)
        stream = ear(GROUP, PORT)
        sap_ear = ear(*SAP) if mode == 'move' else None
        enter(send_ns)
        out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        out.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        out.bind((source, int(os.environ.get('ATTACKER_PORT', '47000'))))
        out.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(source))
        out.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
        mine = out.getsockname()
        def newest():
            """The newest packet of the real stream: (sequence, timestamp, ssrc)."""
            found = None
            stream.setblocking(False)
            while True:
                try:
                    data, address = stream.recvfrom(2048)
                except BlockingIOError:
                    if found:
                        return found
                    stream.settimeout(5)
                    data, address = stream.recvfrom(2048)
                    stream.setblocking(False)
                if address != mine and len(data) >= 12 and data[0] >> 6 == 2:
                    found = struct.unpack('!HII', data[2:12])
        def rtp(sequence, timestamp, ssrc):
            header = struct.pack('!BBHII', 0x80, 127, sequence & 0xFFFF, timestamp & 0xFFFFFFFF, ssrc & 0xFFFFFFFF)
            out.sendto(header + bytes(288), (GROUP, PORT))
        def sap(sdp, flags=0x20):
            return bytes([flags, 0, 0x12, 0x34]) + socket.inet_aton(source) + b'application/sdp\0' + sdp
        if mode == 'malformed':
            good = b'v=0\r\no=evil 7 0 IN IP4 ' + source.encode() + b'\r\ns=x\r\nc=IN IP4 239.255.42.7/1\r\nt=0 0\r\n'
            bodies = [
                good + b'm=audio / RTP/AVP 127\r\na=rtpmap:127 L24/48000/2\r\n',
                good + b'm=audio /\r\n', good + b'm=audio //// RTP/AVP 127\r\n', good + b'm=audio 99999 RTP/AVP 1\r\n',
                b'v=0\r\no=evil 8 0 IN IP4 ' + source.encode() + b'\r\nc=\r\nc=IN\r\nc=IN IP4 /\r\nm=audio 5004 x\r\n',
                good + b'm=audio 5004 RTP/AVP 127\r\na=rtpmap:\r\na=rtpmap:127 L24/\r\na=ptime:nan\r\na=ptime:1e308\r\n',
                good + b'm=audio 5004 RTP/AVP 127\r\n' + b'a=x\r\n' * 600, b'', b'\r\n\r\n', b'v=0', bytes(range(256)),
            ]
            packets = [sap(body) for body in bodies] + [
                b'\x20', b'\x20\xff\x00\x00', bytes([0x30, 255, 0, 0]) + bytes(20), b'\x20\x00\x00\x00\x0a\x00\x00\x01text',
                bytes([0x20, 0, 0, 0, 10, 231, 0, 3]) + b'application/sdp', sap(b'v=0\n' + b'\xff\xfe' * 500),
            ]
            for _ in range(3):
                for packet in packets:
                    out.sendto(packet, SAP)
            print('sent', 3 * len(packets), 'malformed announcements', flush=True)
        elif mode == 'seqjump':
            for _ in range(int(args[0])):
                sequence, timestamp, ssrc = newest()
                rtp(sequence + 30000, timestamp + 30000 * 48, ssrc)
                time.sleep(0.01)
            print('sent', args[0], 'packets 30000 ahead of the stream', flush=True)
        elif mode == 'tsjump':
            sequence, timestamp, ssrc = newest()
            rtp(sequence + 1, timestamp + 60 * 48000, ssrc)
            print('sent a packet 60 s ahead of the stream', flush=True)
        elif mode == 'gaps':
            # A packet 30 ms of audio past the stream; 'paired': and the one after it, which goes on
            # from its timestamp (the stream's own next packets go back from it).
            for _ in range(int(args[0])):
                sequence, timestamp, ssrc = newest()
                rtp(sequence + 1, timestamp + 31 * 48, ssrc)
                if args[1:] == ['paired']:
                    rtp(sequence + 2, timestamp + 32 * 48, ssrc)
                time.sleep(0.02)
            print('sent', args[0], 'gaps of 30 ms of audio past the stream', *args[1:], flush=True)
        elif mode == 'randomssrc':
            end = time.monotonic() + float(args[0])
            count = 0
            while time.monotonic() < end:
                rtp(random.getrandbits(16), random.getrandbits(32), random.getrandbits(32))
                count += 1
                time.sleep(0.002)
            print('sent', count, 'packets of random SSRCs', flush=True)
        elif mode == 'move':
            sap_ear.settimeout(12)
            while True:
                data, address = sap_ear.recvfrom(4096)
                start = data.find(b'v=0')
                if address != mine and start > 0 and b'c=IN IP4 ' + GROUP.encode() in data:
                    break
            moved = data[start:].replace(b'c=IN IP4 ' + GROUP.encode(), b'c=IN IP4 ' + args[0].encode())
            out.sendto(sap(moved), SAP)
            print('sent the stream\'s announcement moved to', args[0], flush=True)
        """#

    /// Runs the attacker from `source` in the sender's namespace (listening in the logger's).
    @discardableResult
    static func attack(_ pair: NamespacePair, from source: String, _ mode: String, _ arguments: String...) throws
        -> String
    {
        let script = NSTemporaryDirectory() + "recd-rtp-attacker-\(getpid()).py"
        try attacker.write(toFile: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: script) }
        let result = try ExternalTools.run(
            "python3", [script, pair.name(.first), pair.name(.second), source, mode] + arguments,
            environment: ["ATTACKER_PORT": String(attackerPort)], timeout: 30)
        guard result.status == 0 else {
            throw DaemonFailure(message: "the attacker (\(mode)) failed: \(result.stderr)")
        }
        return result.stdout
    }

    /// The stream's counters in recd's /metrics (nil before the monitor hears it).
    struct Counts: CustomStringConvertible {
        var received: Double
        var lost: Double
        var silences: Double
        /// Datagrams the monitor did not count (nil: recd has no such figure).
        var ignored: Double?
        /// Packets recd's own socket dropped (nil: recd has no such figure).
        var unheard: Double?
        var description: String {
            "received \(Int(received)), lost \(Int(lost)), silences \(Int(silences)), ignored \(ignored.map { Int($0) } ?? -1), "
                + "unheard \(unheard.map { Int($0) } ?? -1)"
        }

        init?(_ pair: NamespacePair) {
            let metrics = RTPAudioTests.metrics(pair)
            guard let received = RTPAudioTests.sample(metrics, "recd_rtp_packets_received_total"),
                let lost = RTPAudioTests.sample(metrics, "recd_rtp_packets_lost_total"),
                let silences = RTPAudioTests.sample(metrics, "recd_rtp_silences_total")
            else { return nil }
            (self.received, self.lost, self.silences) = (received, lost, silences)
            ignored = RTPAudioTests.sample(metrics, "recd_rtp_datagrams_ignored_total")
            unheard = RTPAudioTests.sample(metrics, "recd_rtp_packets_unheard_total")
        }
    }

    /// RTPAudioTests' two PipeWires, recd-signal's counter into the sender, recd recording the
    /// stream in the logger's namespace with /metrics on; another address (`otherHost`) on the
    /// sender's side. `body` gets the pair and recd once the monitor counts the stream.
    static func withRecordedStream(_ body: (NamespacePair, Daemon) throws -> Void) throws {
        let pair = try NamespacePair(RTPAudioTests.namespaceTags.0, RTPAudioTests.namespaceTags.1)
        defer { pair.remove() }
        _ = try ExternalTools.run(
            "ip", ["-n", pair.name(.second), "addr", "add", otherHost + "/24", "dev", pair.links[1]], timeout: 10)
        let logger = try PrivatePipeWire(
            name: RTPAudioTests.pipeWireName("logger"), dropIn: RTPAudioTests.receiver(interface: pair.links[0]),
            namespace: (pair, .first))
        defer { logger.stop() }
        let sender = try PrivatePipeWire(
            name: RTPAudioTests.pipeWireName("sender"), dropIn: RTPAudioTests.sender(address: pair.addresses[1]),
            namespace: (pair, .second))
        defer { sender.stop() }
        try #require(sender.waitForPort("rtp-sink:input_FR"), "no rtp-sink ports: \(sender.log)")
        let deck = try SignalClient(
            [
                "--name", "studiodeck", "play", "--ports", "out_1,out_2", "--signal", "counter",
                "--connect", "rtp-sink:input_FL,rtp-sink:input_FR",
            ], environment: ExternalTools.environment(sender.environment))
        defer { deck.stop() }
        let daemon = try Daemon(
            extraConfig: RTPAudioTests.sessions + RTPAudioTests.http, ports: RTPAudioTests.ports,
            environment: logger.environment, networkNamespace: pair.name(.first))
        let recording = { (try? daemon.recctl("--json", "status").json?["recorders"]?.arrayValue?.count) ?? 0 }
        try #require(eventually(timeout: 10) { recording() == 1 }, "\(daemon.log.suffix(2000))")
        try #require(
            eventually(timeout: 8) { (Counts(pair)?.received ?? 0) > 100 },
            "recd's RTP monitor hears nothing: \(daemon.log.suffix(2000))")
        try body(pair, daemon)
    }

    /// Whether recd's monitor is still counting the stream: its received count grows within 2 s.
    static func stillCounting(_ pair: NamespacePair) -> Bool {
        let before = Counts(pair)?.received ?? 0
        return eventually(timeout: 2) { (Counts(pair)?.received ?? 0) > before + 100 }
    }

    /// Stops the recording and returns its one segment (flac -t checked).
    static func finishedSegment(_ daemon: Daemon) throws -> String {
        try #require(daemon.recctl("record", "stop", "remote").status == 0)
        #expect(eventually { archiveFiles(daemon.directory + "/archive").allSatisfy { $0.hasSuffix(".flac") } })
        let files = archiveFiles(daemon.directory + "/archive")
        try #require(files.count == 1, "\(files)")
        #expect(try flacTest(files[0]), "flac -t \(files[0])")
        return files[0]
    }

    @Test(
        "malformed SAP announcements (m=audio / RTP/AVP 127 and others) from another host: recd stays up, recctl status answers, the monitor goes on counting, the segment has no gap"
    )
    func malformedAnnouncements() throws {
        try Self.withRecordedStream { pair, daemon in
            let recd = try #require(daemon.pid)
            let said = try Self.attack(pair, from: Self.otherHost, "malformed")
            print("rtp attack: \(said.trimmingCharacters(in: .whitespacesAndNewlines))")
            // The SAP socket is read on the monitor's thread within a poll round: 1 s is many.
            usleep(1_000_000)
            try #require(
                daemon.process?.isRunning == true, "recd died (pid \(recd)): \(daemon.log.suffix(3000))")
            let status = try daemon.recctl("status")
            #expect(status.status == 0, "recctl status: \(status.stderr)")
            #expect(daemon.pid == recd)
            #expect(Self.stillCounting(pair), "the monitor stopped counting: \(daemon.log.suffix(2000))")
            let segment = try Self.finishedSegment(daemon)
            #expect(try metaflacTag(segment, "GAPS") == nil, "the recording has a gap")
            #expect(try metaflacTag(segment, "NETWORK_LOSS") == nil)
        }
    }

    /// One forgery of the loss figures after another, from `source`, each against the counts before it;
    /// then the segment's tags. `spoofed`: the attacker sends from the sender's own address (it
    /// passes recd's check of the source address and must be stopped by the SSRC, the jump bound
    /// and the loss list's rule).
    static func forgeries(from source: String, spoofed: Bool) throws {
        try withRecordedStream { pair, daemon in
            func counts() throws -> Counts { try #require(Counts(pair), "no RTP counts in /metrics") }
            func settle() { usleep(500_000) }

            // 10 packets 30000 sequence numbers ahead of the stream's, its SSRC.
            let start = try counts()
            try attack(pair, from: source, "seqjump", "10")
            settle()
            let afterJumps = try counts()
            #expect(
                afterJumps.lost - start.lost <= 10, "forged sequence numbers counted lost: \(start) → \(afterJumps)")
            #expect(afterJumps.received > start.received, "the stream is not counted any more: \(afterJumps)")
            // recd saw them (not a test whose packets went nowhere) and says so.
            #expect(
                (afterJumps.ignored ?? 0) - (start.ignored ?? 0) >= 10,
                "the forged packets did not reach recd: \(afterJumps)")

            // One packet 60 s of timestamps ahead.
            try attack(pair, from: source, "tsjump")
            settle()
            let afterTimestamp = try counts()
            #expect(
                afterTimestamp.silences == afterJumps.silences, "a forged timestamp made a silence: \(afterTimestamp)")

            // A real cut of 1.5 s (nftables on the sender drops the stream, not the attacker),
            // with packets of random SSRCs meanwhile.
            let cut = try RTPAudioTests.StreamDrop(
                pair, table: "recdcut", matching: ["udp", "sport", "!=", String(attackerPort)])
            try attack(pair, from: source, "randomssrc", "1.5")
            let dropped = try cut.stop()
            settle()
            let afterCut = try counts()
            print("rtp attack: nft dropped \(dropped) packets of the stream; \(afterTimestamp) → \(afterCut)")
            #expect(dropped > 1000, "the cut dropped \(dropped) packets")
            #expect(
                abs(afterCut.lost - afterTimestamp.lost - Double(dropped)) <= 100,
                "the cut's \(dropped) packets against \(afterTimestamp) → \(afterCut)")
            #expect(afterCut.silences - afterTimestamp.silences == 1, "one silence for the cut: \(afterCut)")

            // 80 fake gaps of 30 ms after the real cut: none is a silence (another host's are not
            // counted; the sender's next packets contradict a spoofed one's timestamp).
            try attack(pair, from: source, "gaps", "80")
            settle()
            let afterGaps = try counts()
            print("rtp attack: after 80 fake gaps \(afterGaps)")
            // (A real loss or two on this loaded machine is a silence too: not 80.)
            #expect(afterGaps.silences - afterCut.silences <= 2, "fake gaps made silences: \(afterGaps)")
            if spoofed {
                // 80 more, each with the packet after it going on from its timestamp: silences,
                // but the loss list keeps the cut (the longest) however many come.
                try attack(pair, from: source, "gaps", "80", "paired")
                settle()
                let afterPairs = try counts()
                print("rtp attack: after 80 fake gaps in pairs \(afterPairs)")
                #expect(afterPairs.silences - afterGaps.silences <= 80, "\(afterPairs)")
                #expect(afterPairs.lost - afterGaps.lost <= 10, "\(afterPairs)")
            }

            // The stream's own announcement, moved to another group.
            try attack(pair, from: source, "move", "239.255.42.99")
            usleep(300_000)
            #expect(stillCounting(pair), "an announcement moved the monitor off the stream: \(daemon.log.suffix(2000))")
            #expect(
                RTPAudioTests.metrics(pair).contains("session=\"studio2@10.231.0.2\""), "\(RTPAudioTests.metrics(pair))"
            )

            // The segment: the cut is in NETWORK_LOSS, as long as it was; nothing 60 s long; the
            // loss the cut's.
            let segment = try finishedSegment(daemon)
            let loss = try metaflacTag(segment, "NETWORK_LOSS").flatMap { TrueTimeEndToEndTests.parseGaps($0) } ?? []
            let lost = try metaflacTag(segment, "NETWORK_PACKETS_LOST").flatMap { Int($0) } ?? -1
            print(
                "rtp attack: NETWORK_LOSS \(loss.map { "\($0.position)+\($0.length)" }), NETWORK_PACKETS_LOST \(lost)")
            // As RTPAudioTests allows for a cut: 100 packets (here, beside nft's, the ones a loaded
            // machine loses around it), and a period for where its audio plays.
            let cutFrames = dropped * 48
            let tolerance = 100 * 48 + RTPAudioTests.period
            #expect(loss.contains { abs($0.length - cutFrames) <= tolerance }, "no entry for the cut: \(loss)")
            #expect(loss.allSatisfy { $0.length <= cutFrames + tolerance }, "\(loss)")
            #expect(
                !loss.contains { abs($0.length - 30 * 48) <= 48 } || spoofed,
                "a fake 30 ms gap is in the segment: \(loss)")
            #expect(lost >= dropped && lost <= dropped + 200, "NETWORK_PACKETS_LOST \(lost), the cut \(dropped)")
        }
    }

    @Test(
        "another host on the group forges loss: 10 packets seq+30000, a 60 s timestamp jump, random SSRCs during a real 1.5 s cut, 80 fake 30 ms gaps, the stream's announcement moved to another group; none of it counts"
    )
    func anotherHostForges() throws {
        try Self.forgeries(from: Self.otherHost, spoofed: false)
    }

    @Test(
        "a host that spoofs the sender's address: the jumps are no loss, random SSRCs do not erase the cut, fake gaps are no silences, 80 fake gaps it confirms do not push the cut out of the loss list, the moved announcement does not move the monitor off a stream that receives"
    )
    func spoofedSenderForges() throws {
        try Self.forgeries(from: "10.231.0.2", spoofed: true)
    }
}

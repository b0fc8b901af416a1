// Reading RTP headers, SAP announcements and their SDP as PipeWire 0.3.65's module-rtp-sink sends
// them, and refusing, never trapping on, everything else: the announcement that stopped recd
// (`m=audio / RTP/AVP 127`), cut and malformed fields, lines and SDP beyond their bounds, and
// random bytes. (fuzz/NetworkFuzz.swift does the same at libFuzzer's pace; RTPAdversaryTests sends
// them to a running recd.)
import Foundation
import Platform
import TestSupport
import Testing

@testable import NetworkAudio

@Suite("RTP, SAP and SDP parsing")
struct RTPParsingTests {
    @Test("an RTP header: version 2, sequence, timestamp, SSRC; anything shorter or another version is not one")
    func header() {
        let bytes: [UInt8] = [0x80, 0x7F, 0x12, 0x34, 0, 0, 0x01, 0x00, 0xDE, 0xAD, 0xBE, 0xEF, 1, 2, 3]
        let header = bytes.withUnsafeBytes { RTPHeader($0) }
        #expect(header == RTPHeader(sequence: 0x1234, timestamp: 256, ssrc: 0xDEAD_BEEF))
        #expect(Array(bytes.prefix(11)).withUnsafeBytes { RTPHeader($0) } == nil)
        #expect(([0x40] + Array(bytes.dropFirst())).withUnsafeBytes { RTPHeader($0) } == nil)
    }

    /// An SDP as PipeWire 0.3.65's module-rtp-sink writes it, with `lines` in place of its `m=` line.
    static func sdp(origin: String = "root 4005211321 0 IN IP4 10.231.0.2", media: String = "m=audio 46000 RTP/AVP 127")
        -> String
    {
        "v=0\r\no=\(origin)\r\ns=studio2\r\nc=IN IP4 239.255.42.1/32\r\nt=0 0\r\n\(media)\r\n"
            + "a=rtpmap:127 L24/48000/2\r\na=ptime:1\r\n"
    }

    /// An announcement as PipeWire 0.3.65's module-rtp-sink sends it (IPv4 origin, no
    /// authentication, `application/sdp`).
    static func announcement(deletion: Bool = false, sdp: String = sdp()) -> [UInt8] {
        [deletion ? 0x24 : 0x20, 0, 0x12, 0x34, 10, 231, 0, 2] + Array("application/sdp".utf8) + [0] + Array(sdp.utf8)
    }

    static func parse(_ bytes: [UInt8]) -> SAPAnnouncement? { bytes.withUnsafeBytes { SAPAnnouncement($0) } }

    @Test("a SAP announcement gives the session's origin and its address, name, group, port and packet time")
    func sap() throws {
        let parsed = try #require(Self.parse(Self.announcement()))
        #expect(!parsed.deletion)
        #expect(parsed.session.origin == "root 4005211321 0 IN IP4 10.231.0.2")
        #expect(parsed.session.originAddress == IPAddress(parsing: "10.231.0.2"))
        #expect(parsed.session.name == "studio2")
        #expect(parsed.session.group == "239.255.42.1" && parsed.session.port == 46000)
        #expect(parsed.session.packetMilliseconds == 1 && parsed.session.clockRate == 48_000)
        #expect(Self.parse(Self.announcement(deletion: true))?.deletion == true)
        // The real one, captured from module-rtp-sink (LF only, no ptime before a=type).
        let real = try #require(
            FileManager.default.contents(atPath: ExternalTools.packageRoot + "/fuzz/corpus/network/sap-pipewire-0.3.65")
        )
        let captured = try #require(Self.parse(Array(real)))
        #expect(captured.session.origin == "root 4005561041 0 IN IP4 10.231.0.2")
        #expect(captured.session.group == "239.255.42.1" && captured.session.port == 46000)
        #expect(captured.session.packetMilliseconds == 1 && captured.session.clockRate == 48_000)
        // Encrypted, another version, another payload type, cut short: not taken.
        var encrypted = Self.announcement()
        encrypted[0] |= 0x02
        #expect(Self.parse(encrypted) == nil)
        var version = Self.announcement()
        version[0] = 0x40
        #expect(Self.parse(version) == nil)
        let other = [UInt8]([0x20, 0, 0, 0, 1, 2, 3, 4]) + Array("text/plain".utf8) + [0] + Array("v=0\n".utf8)
        #expect(Self.parse(other) == nil)
        #expect(Self.parse(Array(Self.announcement().prefix(30))) == nil)
        // No payload type: the SDP right after the header.
        let bare = [UInt8]([0x20, 0, 0x12, 0x34, 10, 231, 0, 2]) + Array(Self.sdp().utf8)
        #expect(Self.parse(bare)?.session.port == 46000)
    }

    @Test(
        "malformed SDP is refused, never a trap: the m= line that stopped recd, and others",
        arguments: [
            "m=audio / RTP/AVP 127", "m=audio /", "m=audio //// RTP/AVP 127", "m=audio", "m=audio 0 RTP/AVP 127",
            "m=audio 65536 RTP/AVP 127", "m=audio -1 RTP/AVP 127", "m=audio 4600x RTP/AVP 127",
            "m=audio 99999999999999999999 RTP/AVP 127", "m=video 46000 RTP/AVP 127", "m=audio\u{0}46000 RTP/AVP 1",
        ])
    func malformedMedia(media: String) {
        #expect(Self.parse(Self.announcement(sdp: Self.sdp(media: media))) == nil, "\(media)")
    }

    @Test("the fields: each malformed one is dropped or refuses the SDP, as SDP says")
    func fields() throws {
        func session(_ text: String) -> SDPStreamDescription? { SDPStreamDescription(text) }
        let base = "v=0\no=- 1 0 IN IP4 10.0.0.1\ns=x\n"
        #expect(session(base + "c=IN IP4 239.1.2.3\nm=audio 5004 RTP/AVP 96\n")?.group == "239.1.2.3")
        // c= must hold a multicast address: not a unicast one, not a name, not an empty field.
        for connection in ["c=IN IP4 10.1.2.3", "c=IN IP4 studio", "c=", "c=IN", "c=IN IP4 /", "c=IN IP4 239.1.2.3.4"] {
            #expect(session(base + connection + "\nm=audio 5004 RTP/AVP 96\n") == nil, "\(connection)")
        }
        // A later good c= is taken when the first is no address.
        #expect(session(base + "c=IN IP4 /\nc=IN IP4 239.1.2.3/1\nm=audio 5004 x\n")?.group == "239.1.2.3")
        // IPv6.
        let six = try #require(session("o=- 1 0 IN IP6 fd00::2\nc=IN IP6 FF0E::1:2\nm=audio 5004 RTP/AVP 96\n"))
        #expect(six.group == "ff0e::1:2" && six.originAddress == IPAddress(parsing: "fd00::2"))
        // An origin with no address, or 0.0.0.0: the session still, its sender unknown.
        #expect(session("o=- 1 0 IN IP4 0.0.0.0\nc=IN IP4 239.1.2.3\nm=audio 1 x\n")?.originAddress == nil)
        #expect(session("o=nonsense\nc=IN IP4 239.1.2.3\nm=audio 1 x\n")?.originAddress == nil)
        // No o=: no session.
        #expect(session("c=IN IP4 239.1.2.3\nm=audio 1 x\n") == nil)
        // ptime and rtpmap out of their ranges are dropped.
        let tail = "c=IN IP4 239.1.2.3\nm=audio 1 x\n"
        for ptime in ["nan", "inf", "-1", "0", "0.05", "1001", "1e308", "", "0x1p3"] {
            #expect(session(base + tail + "a=ptime:\(ptime)\n")?.packetMilliseconds == nil, "\(ptime)")
        }
        #expect(session(base + tail + "a=ptime:0.125\n")?.packetMilliseconds == 0.125)
        for map in [
            "a=rtpmap:", "a=rtpmap:127", "a=rtpmap:127 L24", "a=rtpmap:127 L24/", "a=rtpmap:127 L24/0",
            "a=rtpmap:127 L24/768001/2", "a=rtpmap:127 L24/-5", "a=rtpmap:127 /",
        ] {
            #expect(session(base + tail + map + "\n")?.clockRate == nil, "\(map)")
        }
        #expect(session(base + tail + "a=rtpmap:96 L16/44100\n")?.clockRate == 44_100)
    }

    @Test(
        "bounded: 4 KiB of SDP read, an o=, s=, c= or m= line over 512 bytes refuses it, other long lines are passed over"
    )
    func bounds() {
        let essential = "v=0\no=- 1 0 IN IP4 10.0.0.1\nc=IN IP4 239.1.2.3\n"
        let media = "m=audio 5004 RTP/AVP 96\n"
        #expect(SDPStreamDescription(essential + String(repeating: "a=x\n", count: 1020) + media) == nil, "m= past 4 KiB")
        #expect(SDPStreamDescription(essential + String(repeating: "a=x\n", count: 1000) + media) != nil)
        #expect(SDPStreamDescription(essential + "a=" + String(repeating: "y", count: 3000) + "\n" + media) != nil)
        #expect(SDPStreamDescription(essential + "s=" + String(repeating: "y", count: 600) + "\n" + media) == nil)
        // A datagram of 64 KiB: only its first 4 KiB of SDP are looked at.
        let big = Self.announcement(sdp: Self.sdp() + String(repeating: "a=z\r\n", count: 13_000))
        #expect(Self.parse(big)?.session.port == 46000)
        // A payload type that never ends within 64 bytes: not an announcement.
        let endless = [UInt8]([0x20, 0, 0, 0, 1, 2, 3, 4]) + [UInt8](repeating: 0x61, count: 4000)
        #expect(Self.parse(endless) == nil)
        // Authentication data longer than the datagram: nothing read past it.
        #expect(Self.parse([0x20, 255, 0, 0, 1, 2, 3, 4, 0x76, 0x3D]) == nil)
        #expect(Self.parse([0x30, 0, 0, 0] + [UInt8](repeating: 0, count: 16)) == nil)
    }

    @Test("random bytes and random mutations of a real announcement: an announcement or nil, never a trap")
    func randomBytes() {
        let real = Self.announcement()
        for seed in randomSeeds(count: 4, base: 0x5A9) {
            var generator = SplitMix64(seed: seed)
            for _ in 0..<2000 {
                var bytes = real
                for _ in 0..<Int.random(in: 1...8, using: &generator) {
                    let at = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: bytes[at] = UInt8.random(in: 0...255, using: &generator)
                    case 1: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: at)
                    default: bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...40, using: &generator)))
                    }
                    if bytes.isEmpty { bytes = [0x20] }
                }
                _ = Self.parse(bytes)
                _ = bytes.withUnsafeBytes { RTPHeader($0) }
                let noise = (0..<Int.random(in: 0...600, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
                _ = Self.parse(noise)
                _ = noise.withUnsafeBytes { SDPStreamDescription.parse($0) }
            }
        }
    }
}

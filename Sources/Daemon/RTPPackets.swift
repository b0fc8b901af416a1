// What recd's RTP monitor reads off the wire, pure: RTP headers (RFC 3550 §5.1), SAP
// announcements (RFC 2974) and the SDP in them (RFC 4566), and the counting of a stream's
// sequence numbers. No sockets, no clock, no threads: `RTPMonitor` feeds them.

/// The fixed part of an RTP header: all the monitor reads of a packet.
struct RTPHeader: Equatable, Sendable {
    /// The fixed header's size; the monitor reads no more of a packet.
    static let size = 12

    var sequence: UInt16
    var timestamp: UInt32
    var ssrc: UInt32

    init(sequence: UInt16, timestamp: UInt32, ssrc: UInt32) {
        self.sequence = sequence
        self.timestamp = timestamp
        self.ssrc = ssrc
    }

    /// The header at the start of `bytes`; nil for fewer than 12 bytes or a version other than 2.
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= Self.size, bytes[0] >> 6 == 2 else { return nil }
        func word(_ at: Int) -> UInt32 {
            UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
        }
        sequence = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        timestamp = word(4)
        ssrc = word(8)
    }
}

/// Counts one RTP stream's packets by their sequence numbers: received (each sequence number
/// once), lost (numbers skipped and not seen since), duplicates. A 16-bit sequence number wraps;
/// the counter follows the highest number seen as a count that does not (`highest`). A packet
/// behind the highest (reordered) that was counted lost is taken back off the loss, if it is
/// within the last `window` numbers (a bitmap says which of those came); one further behind is
/// counted received and taken off the loss too (no bitmap: a duplicate that far back would be
/// counted twice; not seen on a LAN). A new SSRC is a new sender (a restart): the count goes on
/// from its first packet, nothing counted lost across the change. A jump of more than half the
/// number space (32768: 33 s of 1 ms packets) cannot be told from a step back; it is taken as a
/// restart too, its packets not counted lost (the silence it makes is still seen by time).
struct RTPSequenceCounter: Equatable, Sendable {
    /// Sequence numbers behind the highest whose arrival is remembered.
    static let window = 64
    /// A step back further than this is not a late packet but a sender that started over.
    static let largestReorder = 3000

    enum Arrival: Equatable, Sendable {
        /// The first packet of a sender (a new SSRC, or the first packet at all).
        case newSource
        /// The next number, or one after skipped numbers (`skipped` of them, now counted lost).
        case inOrder(skipped: Int)
        /// Behind the highest, not seen before: was counted lost, now received.
        case late
        case duplicate
        /// A jump the counter cannot place (more than `largestReorder` back): counted from here.
        case resynchronized
    }

    private(set) var received = 0
    private(set) var lost = 0
    private(set) var duplicates = 0
    private(set) var ssrc: UInt32?
    /// The highest sequence number seen, extended past the 16-bit wrap.
    private(set) var highest = 0
    /// Bit i: number `highest - i` came (i < `window`).
    private var seen: UInt64 = 0

    mutating func count(ssrc: UInt32, sequence: UInt16) -> Arrival {
        guard self.ssrc == ssrc else {
            self.ssrc = ssrc
            restart(at: sequence)
            return .newSource
        }
        let step = Int(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: highest)))
        if step > 0 {
            lost += step - 1
            highest += step
            seen = step >= Self.window ? 1 : (seen << UInt64(step)) | 1
            received += 1
            return .inOrder(skipped: step - 1)
        }
        if step == 0 {
            duplicates += 1
            return .duplicate
        }
        let back = -step
        if back < Self.window {
            let bit: UInt64 = 1 << UInt64(back)
            if seen & bit != 0 {
                duplicates += 1
                return .duplicate
            }
            seen |= bit
        } else if back > Self.largestReorder {
            restart(at: sequence)
            return .resynchronized
        }
        received += 1
        lost = max(0, lost - 1)
        return .late
    }

    private mutating func restart(at sequence: UInt16) {
        // Keep the extended count growing across a restart: only differences matter.
        highest = (highest & ~0xFFFF) + 0x1_0000 + Int(sequence)
        seen = 1
        received += 1
    }
}

/// The audio a stream's packets did not bring, by their RTP timestamps: after a packet that
/// follows skipped sequence numbers (a loss, a link cut) or a jump of its timestamp (a sender whose
/// graph stood still), the samples between the end of the packet before and this one's start.
/// By the audio's own clock, so a sender that sends a cycle's packets in one burst (PipeWire does:
/// 21 ms apart at a 1024-frame quantum) is no silence, however late the burst comes.
struct RTPAudioGaps: Equatable, Sendable {
    /// Missing audio longer than this (samples) is a silence.
    let thresholdSamples: Int
    /// A packet's samples: the SDP's ptime at the clock rate, else learnt from the first two packets
    /// in sequence.
    private(set) var samplesPerPacket: Int?
    private var lastTimestamp: UInt32?

    init(thresholdSamples: Int, samplesPerPacket: Int?) {
        self.thresholdSamples = thresholdSamples
        self.samplesPerPacket = samplesPerPacket
    }

    /// The samples missing before a packet with `timestamp` that the sequence counter placed as
    /// `arrival`, when more than the threshold; nil otherwise.
    mutating func missing(before timestamp: UInt32, arrival: RTPSequenceCounter.Arrival) -> Int? {
        switch arrival {
        case .newSource, .resynchronized:
            lastTimestamp = timestamp
            return nil
        case .late, .duplicate:
            return nil
        case .inOrder(let skipped):
            defer { lastTimestamp = timestamp }
            guard let last = lastTimestamp else { return nil }
            let step = Int(Int32(bitPattern: timestamp &- last))
            if samplesPerPacket == nil, skipped == 0, step > 0 { samplesPerPacket = step }
            guard let perPacket = samplesPerPacket, step > perPacket else { return nil }
            let missing = step - perPacket
            return missing > thresholdSamples ? missing : nil
        }
    }
}

/// One RTP session as its SDP describes it (the fields the monitor needs).
struct SDPSession: Equatable, Sendable {
    /// The `o=` line's value, `USER SESSION-ID VERSION IN IP4 ADDRESS`: what PipeWire's node
    /// carries as `rtp.origin`, so how a node and an announcement are matched.
    var origin: String
    /// `s=`.
    var name: String
    /// The stream's destination: `c=`'s address (TTL and count cut off) and `m=`'s port.
    var group: String
    var port: UInt16
    /// `a=ptime:` in milliseconds; nil when absent.
    var packetMilliseconds: Double?
    /// The RTP clock rate of the first `a=rtpmap:` (`L24/48000/2`: 48000); nil when absent.
    var clockRate: Int?

    /// The most bytes of an SDP read.
    static let maximumBytes = 4096

    /// Parses SDP text (lines ending in CRLF or LF: one Character in Swift, hence `isNewline`); nil without an `o=`, a `c=` with an
    /// address, or an `m=audio` with a port in 1...65535.
    init?(_ text: Substring) {
        var origin: String?
        var name = ""
        var group: String?
        var port: UInt16?
        var packet: Double?
        var rate: Int?
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.drop { $0 == " " }
            if line.hasPrefix("o=") {
                origin = String(line.dropFirst(2))
            } else if line.hasPrefix("s=") {
                name = String(line.dropFirst(2))
            } else if line.hasPrefix("c="), group == nil {
                // c=IN IP4 239.255.42.1/32
                let fields = line.dropFirst(2).split(separator: " ")
                if fields.count == 3, let address = fields[2].split(separator: "/").first { group = String(address) }
            } else if line.hasPrefix("m=audio ") {
                let fields = line.split(separator: " ")
                if fields.count >= 2, let value = UInt16(fields[1].split(separator: "/")[0]), value > 0 { port = value }
            } else if line.hasPrefix("a=rtpmap:"), rate == nil {
                // a=rtpmap:127 L24/48000/2
                let encoding = line.split(separator: " ").dropFirst().first?.split(separator: "/") ?? []
                rate = encoding.count >= 2 ? Int(encoding[1]).flatMap { (1...768_000).contains($0) ? $0 : nil } : nil
            } else if line.hasPrefix("a=ptime:") {
                packet = Double(line.dropFirst(8)).flatMap { $0 > 0 && $0 <= 1000 ? $0 : nil }
            }
        }
        guard let origin, let group, let port else { return nil }
        self.origin = origin
        self.name = name
        self.group = group
        self.port = port
        packetMilliseconds = packet
        clockRate = rate
    }
}

/// A SAP packet (RFC 2974): an announcement or a deletion, and its SDP.
struct SAPAnnouncement: Equatable, Sendable {
    /// Where PipeWire's module-rtp-sink announces by default (its `sap.ip`, `sap.port`).
    static let group = "224.0.0.56"
    static let port: UInt16 = 9875

    var deletion: Bool
    var session: SDPSession

    /// The announcement in `bytes`; nil for another version, an encrypted or compressed one, a
    /// payload that is not SDP, or SDP that `SDPSession` does not take.
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 8 else { return nil }
        let flags = bytes[0]
        // V=1; E (encrypted) and C (compressed) unset.
        guard flags >> 5 == 1, flags & 0b11 == 0 else { return nil }
        let ipv6 = flags & 0x10 != 0
        var offset = 4 + (ipv6 ? 16 : 4) + Int(bytes[1]) * 4
        guard offset < bytes.count else { return nil }
        // An optional payload type (`application/sdp`), NUL-terminated, before the SDP.
        if !(bytes[offset] == UInt8(ascii: "v") && offset + 1 < bytes.count && bytes[offset + 1] == UInt8(ascii: "=")) {
            guard let end = bytes[offset...].firstIndex(of: 0) else { return nil }
            let type = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<end]), as: UTF8.self)
            guard type == "application/sdp" else { return nil }
            offset = end + 1
        }
        let sdp = UnsafeRawBufferPointer(rebasing: bytes[offset..<min(bytes.count, offset + SDPSession.maximumBytes)])
        guard let session = SDPSession(Substring(String(decoding: sdp, as: UTF8.self))) else { return nil }
        deletion = flags & 0x04 != 0
        self.session = session
    }
}

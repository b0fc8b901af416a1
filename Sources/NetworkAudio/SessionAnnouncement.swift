// SAP announcements (RFC 2974) and the SDP in them (RFC 4566): the fields the RTP monitor needs
// of a session. Pure and total: any bytes give an announcement or nil, reading nothing past the
// datagram, at most `SDPStreamDescription.maximumBytes` of SDP in lines of at most
// `SDPStreamDescription.maximumLineBytes`, in time linear in those bytes.
import Platform

/// One RTP stream as its SDP describes it (the fields the monitor needs).
public struct SDPStreamDescription: Equatable, Sendable {
    /// The `o=` line's value, `USER SESSION-ID VERSION IN IP4 ADDRESS`: what PipeWire's node
    /// carries as `rtp.origin`, so how a node and an announcement are matched.
    public var origin: String
    /// The `o=` line's address: the sender's, where its announcements and packets come from; nil
    /// when it says none (0.0.0.0 or ::: a module-rtp-sink without `source.ip`) or is no address.
    public var originAddress: IPAddress?
    /// `s=`.
    public var name: String
    /// The stream's destination: `c=`'s multicast address (TTL and count cut off), as
    /// `IPAddress` writes it, and `m=audio`'s port.
    public var group: String
    public var port: UInt16
    /// `a=ptime:` in milliseconds (0.1 to 1000); nil when absent or out of that range.
    public var packetMilliseconds: Double?
    /// The RTP clock rate of the first `a=rtpmap:` (`L24/48000/2`: 48000; 1 to 768000); nil when
    /// absent.
    public var clockRate: Int?

    /// The most bytes of an SDP read (the rest of a longer one is not).
    public static let maximumBytes = 4096
    /// An `o=`, `s=`, `c=` or `m=` line longer than this makes the SDP unreadable; other longer
    /// lines are passed over.
    public static let maximumLineBytes = 512

    public init(
        origin: String, originAddress: IPAddress?, name: String, group: String, port: UInt16,
        packetMilliseconds: Double? = nil, clockRate: Int? = nil
    ) {
        self.origin = origin
        self.originAddress = originAddress
        self.name = name
        self.group = group
        self.port = port
        self.packetMilliseconds = packetMilliseconds
        self.clockRate = clockRate
    }

    /// Parses SDP text (lines ending in CRLF, LF or CR); nil without an `o=`, a `c=` with a
    /// multicast address, or an `m=audio` with a port in 1...65535.
    public init?(_ text: String) {
        guard let session = Array(text.utf8).withUnsafeBytes({ Self.parse($0) }) else { return nil }
        self = session
    }

    /// The session in the first `maximumBytes` of `bytes` (see `init(_:)`).
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> SDPStreamDescription? {
        var lines = SDPLines(bytes: bytes, end: min(bytes.count, maximumBytes))
        var origin: (text: String, address: IPAddress?)?
        var name: String?
        var group: String?
        var port: UInt16?
        var packet: Double?
        var rate: Int?
        while let line = lines.next() {
            guard line.count >= 2, bytes[line.lowerBound + 1] == UInt8(ascii: "=") else { continue }
            let kind = bytes[line.lowerBound]
            let value = (line.lowerBound + 2)..<line.upperBound
            let essential =
                kind == UInt8(ascii: "o") || kind == UInt8(ascii: "s") || kind == UInt8(ascii: "c")
                || kind == UInt8(ascii: "m")
            if line.count > maximumLineBytes {
                if essential { return nil }
                continue
            }
            switch kind {
            case UInt8(ascii: "o") where origin == nil:
                origin = (lines.text(value), lines.originAddress(value))
            case UInt8(ascii: "s") where name == nil:
                name = lines.text(value)
            case UInt8(ascii: "c") where group == nil:
                group = lines.connectionGroup(value)
            case UInt8(ascii: "m") where port == nil:
                port = lines.audioPort(value)
            case UInt8(ascii: "a"):
                if rate == nil, let map = lines.after("rtpmap:", in: value) {
                    rate = lines.clockRate(map)
                } else if packet == nil, let time = lines.after("ptime:", in: value) {
                    packet = lines.milliseconds(time).flatMap { $0 >= 0.1 && $0 <= 1000 ? $0 : nil }
                }
            default: continue
            }
        }
        guard let origin, let group, let port else { return nil }
        return SDPStreamDescription(
            origin: origin.text, originAddress: origin.address, name: name ?? "", group: group, port: port,
            packetMilliseconds: packet, clockRate: rate)
    }
}

/// The lines of an SDP and the reading of their fields, by byte ranges of one buffer.
private struct SDPLines {
    let bytes: UnsafeRawBufferPointer
    let end: Int
    private var position = 0

    init(bytes: UnsafeRawBufferPointer, end: Int) {
        self.bytes = bytes
        self.end = end
    }

    static func isBreak(_ byte: UInt8) -> Bool { byte == 0x0A || byte == 0x0D }

    /// The next non-empty line, leading spaces dropped; nil at the end.
    mutating func next() -> Range<Int>? {
        while position < end {
            var stop = position
            while stop < end, !Self.isBreak(bytes[stop]) { stop += 1 }
            var start = position
            position = stop + 1
            while start < stop, bytes[start] == 0x20 { start += 1 }
            if start < stop { return start..<stop }
        }
        return nil
    }

    func text(_ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// `range` split at spaces, empty fields dropped.
    func fields(_ range: Range<Int>, separator: UInt8 = 0x20) -> [Range<Int>] {
        var fields: [Range<Int>] = []
        var start = range.lowerBound
        for index in range where bytes[index] == separator {
            if start < index { fields.append(start..<index) }
            start = index + 1
        }
        if start < range.upperBound { fields.append(start..<range.upperBound) }
        return fields
    }

    func equals(_ range: Range<Int>, _ literal: StaticString) -> Bool {
        guard range.count == literal.utf8CodeUnitCount else { return false }
        let expected = UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        return zip(range, expected).allSatisfy { bytes[$0] == $1 }
    }

    /// What follows `prefix` at the start of `range`; nil when it does not start so.
    func after(_ prefix: StaticString, in range: Range<Int>) -> Range<Int>? {
        let length = prefix.utf8CodeUnitCount
        guard range.count >= length, equals(range.lowerBound..<(range.lowerBound + length), prefix) else {
            return nil
        }
        return (range.lowerBound + length)..<range.upperBound
    }

    /// The part of `range` before its first `/`.
    func beforeSlash(_ range: Range<Int>) -> Range<Int> {
        range.lowerBound..<(range.first { bytes[$0] == UInt8(ascii: "/") } ?? range.upperBound)
    }

    /// A decimal number of at most 9 digits (no sign, nothing else).
    func decimal(_ range: Range<Int>) -> Int? {
        guard !range.isEmpty, range.count <= 9 else { return nil }
        var value = 0
        for index in range {
            let digit = Int(bytes[index]) - 48
            guard digit >= 0, digit <= 9 else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    /// A decimal number with an optional fraction (`0.125`), at most 12 characters.
    func milliseconds(_ range: Range<Int>) -> Double? {
        guard !range.isEmpty, range.count <= 12 else { return nil }
        var points = 0
        for index in range {
            let byte = bytes[index]
            if byte == UInt8(ascii: ".") {
                points += 1
            } else if byte < UInt8(ascii: "0") || byte > UInt8(ascii: "9") {
                return nil
            }
        }
        return points <= 1 ? Double(text(range)) : nil
    }

    func address(_ range: Range<Int>) -> IPAddress? { IPAddress(parsing: text(range)) }

    /// `o=USER SESSION-ID VERSION IN IP4|IP6 ADDRESS`: the address, unless unspecified.
    func originAddress(_ value: Range<Int>) -> IPAddress? {
        let fields = fields(value)
        guard fields.count == 6, equals(fields[3], "IN"), equals(fields[4], "IP4") || equals(fields[4], "IP6"),
            let address = address(fields[5]), !address.isUnspecified
        else { return nil }
        return address
    }

    /// `c=IN IP4 239.255.42.1/32`: the multicast address.
    func connectionGroup(_ value: Range<Int>) -> String? {
        let fields = fields(value)
        guard fields.count == 3, equals(fields[0], "IN"), let address = address(beforeSlash(fields[2])),
            address.isMulticast
        else { return nil }
        return address.description
    }

    /// `m=audio 46000[/2] RTP/AVP 127`: the port, 1...65535; nil for another medium.
    func audioPort(_ value: Range<Int>) -> UInt16? {
        let fields = fields(value)
        guard fields.count >= 2, equals(fields[0], "audio"), let port = decimal(beforeSlash(fields[1])),
            (1...65535).contains(port)
        else { return nil }
        return UInt16(port)
    }

    /// `a=rtpmap:127 L24/48000/2`: the clock rate, 1...768000.
    func clockRate(_ value: Range<Int>) -> Int? {
        let fields = fields(value)
        guard fields.count >= 2 else { return nil }
        let encoding = self.fields(fields[1], separator: UInt8(ascii: "/"))
        guard encoding.count >= 2, let rate = decimal(encoding[1]), (1...768_000).contains(rate) else { return nil }
        return rate
    }
}

/// A SAP packet (RFC 2974): an announcement or a deletion, and its SDP.
public struct SAPAnnouncement: Equatable, Sendable {
    /// Where PipeWire's module-rtp-sink announces by default (its `sap.ip`, `sap.port`).
    public static let group = "224.0.0.56"
    public static let port: UInt16 = 9875
    /// The longest payload type before the SDP read (`application/sdp` is 15 bytes).
    static let maximumPayloadTypeBytes = 64

    public var deletion: Bool
    public var session: SDPStreamDescription

    /// The announcement in `bytes` (one whole datagram); nil for another version, an encrypted or
    /// compressed one, a payload that is not SDP, or SDP that `SDPStreamDescription` does not take.
    public init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 8 else { return nil }
        let flags = bytes[0]
        // V=1; E (encrypted) and C (compressed) unset.
        guard flags >> 5 == 1, flags & 0b11 == 0 else { return nil }
        let ipv6 = flags & 0x10 != 0
        // The header, the originating source (4 or 16 bytes) and the authentication data (its
        // length in 32-bit words): at most 1040 bytes.
        var offset = 4 + (ipv6 ? 16 : 4) + Int(bytes[1]) * 4
        guard offset < bytes.count else { return nil }
        // An optional payload type (`application/sdp`), NUL-terminated, before the SDP.
        let isSDP =
            offset + 1 < bytes.count && bytes[offset] == UInt8(ascii: "v") && bytes[offset + 1] == UInt8(ascii: "=")
        if !isSDP {
            let limit = min(bytes.count, offset + Self.maximumPayloadTypeBytes)
            guard let end = (offset..<limit).first(where: { bytes[$0] == 0 }) else { return nil }
            let type = UnsafeRawBufferPointer(rebasing: bytes[offset..<end])
            guard type.elementsEqual("application/sdp".utf8) else { return nil }
            offset = end + 1
        }
        let sdp = UnsafeRawBufferPointer(rebasing: bytes[offset..<bytes.count])
        guard let session = SDPStreamDescription.parse(sdp) else { return nil }
        deletion = flags & 0x04 != 0
        self.session = session
    }
}

// The fixed RTP header (RFC 3550 §5.1): all the monitor reads of a packet. Pure and total: any
// bytes give a header or nil, reading nothing past the buffer.

/// The fixed part of an RTP header.
public struct RTPHeader: Equatable, Sendable {
    /// The fixed header's size; the monitor reads no more of a packet.
    public static let size = 12

    public var sequence: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32

    public init(sequence: UInt16, timestamp: UInt32, ssrc: UInt32) {
        self.sequence = sequence
        self.timestamp = timestamp
        self.ssrc = ssrc
    }

    /// The header at the start of `bytes`; nil for fewer than 12 bytes or a version other than 2.
    public init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= Self.size, bytes[0] >> 6 == 2 else { return nil }
        func word(_ at: Int) -> UInt32 {
            UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
        }
        sequence = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        timestamp = word(4)
        ssrc = word(8)
    }
}

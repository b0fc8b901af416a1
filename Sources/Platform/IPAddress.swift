// IP addresses as values: a datagram's sender, an SDP's origin and group. Parsed and written by
// the C library (inet_pton, inet_ntop: Internals/Syscalls+Sockets.swift).

/// An IPv4 or IPv6 address. IPv4 is kept in its IPv4-mapped IPv6 form (`::ffff:a.b.c.d`), so one
/// address compares equal whichever way it came (a datagram's sender, an SDP's text). A plain value.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address's 16 bytes, big-endian, as two words.
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// An IPv4 dotted quad or an IPv6 literal (the C library's reading); nil for any other text.
    public init?(parsing text: String) {
        guard let (high, low) = Syscall.parseAddress(text) else { return nil }
        self.init(high: high, low: low)
    }

    public var isIPv4: Bool { high == 0 && low >> 32 == 0xFFFF }
    /// 224.0.0.0/4 or ff00::/8.
    public var isMulticast: Bool { isIPv4 ? (low >> 24) & 0xF0 == 0xE0 : high >> 56 == 0xFF }
    /// 0.0.0.0 or ::.
    public var isUnspecified: Bool { high == 0 && (low == 0 || low == 0xFFFF_0000_0000) }

    /// A dotted quad for IPv4, else IPv6 text (the C library's writing).
    public var description: String { Syscall.formatAddress(high, low) }
}

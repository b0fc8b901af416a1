// Where the HTTP listener binds: `[http] listen = HOST:PORT` with HOST an IPv4 literal or a
// bracketed IPv6 literal. Names are refused on purpose: what a name resolves to can change
// under a daemon that must not start listening on a public address by surprise.
import Glibc

/// A parsed `[http] listen` address. `port` 0 lets the kernel choose (tests).
public struct HTTPListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// The literal as written, without brackets.
    public let host: String
    public let port: UInt16
    public let isIPv6: Bool

    /// The default: loopback only.
    public static let defaultText = "127.0.0.1:9720"

    /// Parses `127.0.0.1:9720`, `0.0.0.0:9720`, `[::1]:9720`, `[::]:9720`. The error's message
    /// says what to write instead.
    public init(parsing text: String) throws(HTTPServerError) {
        let usage = "write HOST:PORT with an IP address, e.g. listen = \(Self.defaultText), [::1]:9720, or listen = no"
        var host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw HTTPServerError("\"\(text)\" is not an address; \(usage)")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw HTTPServerError("\"\(text)\" has no port; \(usage)")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { throw HTTPServerError("\"\(text)\": put an IPv6 address in brackets; \(usage)") }
        }
        guard let port = UInt16(portText), !portText.isEmpty else {
            throw HTTPServerError("\"\(text)\": the port must be a number from 0 to 65535; \(usage)")
        }
        host = host.isEmpty ? "" : host
        let isIPv6 = text.hasPrefix("[")
        guard Self.socketAddress(host: String(host), port: port, isIPv6: isIPv6) != nil else {
            throw HTTPServerError("\"\(host)\" is not an IP\(isIPv6 ? "v6" : "v4") address; \(usage)")
        }
        self.host = String(host)
        self.port = port
        self.isIPv6 = isIPv6
    }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether only this machine can reach the address (127.0.0.0/8 or ::1).
    public var isLoopback: Bool {
        guard let address = Self.socketAddress(host: host, port: port, isIPv6: isIPv6) else { return false }
        return address.withUnsafeBytes { Self.isLoopback($0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }

    /// The address as a `sockaddr_in` or `sockaddr_in6`, in bytes (nil: not a literal).
    static func socketAddress(host: String, port: UInt16, isIPv6: Bool) -> [UInt8]? {
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return nil }
            return withUnsafeBytes(of: address) { Array($0) }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
        return withUnsafeBytes(of: address) { Array($0) }
    }

    /// A peer's IP address as bytes (4 for IPv4, 16 for IPv6; empty for anything else): what
    /// the per-address connection limit counts by.
    static func peerKey(_ address: UnsafePointer<sockaddr>) -> [UInt8] {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) }
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) }
            }
        default:
            return []
        }
    }

    /// An IPv4 or IPv6 socket address as bytes and port (nil for any other family).
    static func endpoint(_ address: UnsafePointer<sockaddr>) -> HTTPSocketAddress? {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let port = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                UInt16(bigEndian: $0.pointee.sin_port)
            }
            return HTTPSocketAddress(address: peerKey(address), port: port)
        case AF_INET6:
            let port = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                UInt16(bigEndian: $0.pointee.sin6_port)
            }
            return HTTPSocketAddress(address: peerKey(address), port: port)
        default:
            return nil
        }
    }

    /// Our end of a connected socket (`getsockname`).
    static func localEndpoint(of socket: Int32) -> HTTPSocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard status == 0 else { return nil }
        return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { endpoint($0) } }
    }

    /// Whether a peer's address is on this machine: 127.0.0.0/8, ::1, or ::ffff:127.x.y.z.
    static func isLoopback(_ address: UnsafePointer<sockaddr>) -> Bool {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                UInt32(bigEndian: $0.pointee.sin_addr.s_addr) >> 24 == 127
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                let bytes = withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) }
                if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
                let mapped = bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff
                return mapped && bytes[12] == 127
            }
        default:
            return false
        }
    }
}

/// Why the HTTP listener cannot start or an address is wrong; the message says what to do.
public struct HTTPServerError: Error, CustomStringConvertible, Sendable {
    public let message: String
    /// True when the config is at fault (an address, a missing token); false when the system
    /// refused (the port is taken, the sandbox allows no IP sockets).
    public let isConfiguration: Bool

    public init(_ message: String, isConfiguration: Bool = true) {
        self.message = message
        self.isConfiguration = isConfiguration
    }

    public var description: String { message }
}

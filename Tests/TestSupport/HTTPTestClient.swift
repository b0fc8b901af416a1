// A raw HTTP/1.1 client over a real TCP socket, for the tests of recd's HTTP listener: it
// sends exactly the bytes a test gives (hostile requests included), can bind its own source
// address (127.0.0.2, the box's own address), and reads what comes back until the server
// closes or a time limit.
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One HTTP answer, parsed loosely (status line, headers, body as received).
public struct HTTPTestResponse: Sendable {
    public var status: Int
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: [UInt8]
    public var text: String { String(decoding: body, as: UTF8.self) }
}

public struct HTTPTestError: Error, CustomStringConvertible {
    public var description: String
}

/// A TCP connection to an HTTP server.
public final class HTTPTestConnection {
    public let fd: Int32

    /// Connects to `host:port` (IPv4), from `source` when given; `receiveBuffer` sets SO_RCVBUF
    /// first (a small one makes a client that never reads fill up soon).
    public init(host: String, port: UInt16, source: String? = nil, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPTestError(description: "socket: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let source {
            var local = Self.address(source, 0)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                close(fd)
                throw HTTPTestError(description: "bind \(source): errno \(errno)")
            }
        }
        var remote = Self.address(host, port)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = errno
            close(fd)
            throw HTTPTestError(description: "connect \(host):\(port): errno \(error)")
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Ends the connection both ways (the descriptor stays open until deinit).
    public func hangUp() { shutdown(fd, Int32(SHUT_RDWR)) }

    private static func address(_ host: String, _ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        return address
    }

    /// Sends all of `bytes`; false when the server has closed.
    @discardableResult
    public func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Reads until the server closes, `limit` bytes came, or `timeout` seconds pass.
    public func readAll(timeout: Double = 5, limit: Int = 16 << 20) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while out.count < limit && Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buffer[..<n]
        }
        return out
    }

    /// Reads until `marker` appears in what came (or the time limit / the server closing).
    public func read(until marker: String, timeout: Double = 5) -> String {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buffer[..<n]
            if String(decoding: out, as: UTF8.self).contains(marker) { break }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// What arrives within `timeout` seconds (empty when nothing did); nil once the server has
    /// closed (or reset) the connection and nothing more is left to read.
    public func readAvailable(timeout: Double) -> [UInt8]? {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, Int32(timeout * 1000)) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n > 0 { return Array(buffer[..<n]) }
        if n < 0 && (errno == EAGAIN || errno == EINTR) { return [] }
        return nil
    }

    /// Parses a whole answer (status line, headers, body; chunked bodies decoded).
    public static func parse(_ bytes: [UInt8]) -> HTTPTestResponse? {
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: Array("\r\n\r\n".utf8)) }) else {
            return nil
        }
        let head = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = head[0].split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        var body = Array(bytes[(end + 4)...])
        if headers["transfer-encoding"] == "chunked" {
            var decoded: [UInt8] = []
            var rest = body[...]
            while let lineEnd = rest.indices.first(where: { rest[$0...].starts(with: [13, 10]) }),
                let size = Int(String(decoding: rest[..<lineEnd], as: UTF8.self), radix: 16), size > 0
            {
                let start = lineEnd + 2
                guard start + size <= rest.endIndex else { break }
                decoded += rest[start..<(start + size)]
                rest = rest[min(rest.endIndex, start + size + 2)...]
            }
            body = decoded
        }
        return HTTPTestResponse(status: status, headers: headers, body: body)
    }
}

public enum HTTPTestClient {
    /// One request on a new connection (`Connection: close`), the answer parsed.
    public static func get(
        host: String = "127.0.0.1", port: UInt16, path: String, method: String = "GET",
        headers: [String: String] = [:], source: String? = nil, timeout: Double = 5
    ) throws -> HTTPTestResponse {
        let connection = try HTTPTestConnection(host: host, port: port, source: source)
        var request = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        connection.send(request + "\r\n")
        let bytes = connection.readAll(timeout: timeout)
        guard let response = HTTPTestConnection.parse(bytes) else {
            throw HTTPTestError(description: "no HTTP answer to \(method) \(path): \(bytes.count) bytes")
        }
        return response
    }

    /// A TCP port free on 127.0.0.1 just now (for a server the test starts, e.g. Prometheus).
    public static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw HTTPTestError(description: "no free port: errno \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// The machine's IPv4 addresses other than loopback (for the token tests), from getifaddrs.
    public static func nonLoopbackIPv4() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var out: [String] = []
        var entry = list
        while let current = entry {
            if let address = current.pointee.ifa_addr, Int32(address.pointee.sa_family) == AF_INET {
                var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    var inAddress = $0.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &inAddress, &text, socklen_t(INET_ADDRSTRLEN))
                }
                let name = String(cString: text)
                if !name.hasPrefix("127.") { out.append(name) }
            }
            entry = current.pointee.ifa_next
        }
        return out
    }
}

/// Connections that each send a request line, then one header byte every `interval` seconds
/// (on their own thread), never finishing the head: the slow-header attack on a listener. Each
/// stops at the first byte of an answer, or when the server closes it; `outcomes` says when
/// and what came.
public final class HTTPTricklers: @unchecked Sendable {
    private let lock = NSLock()
    private var connections: [HTTPTestConnection] = []
    private var received: [[UInt8]] = []
    private var endedAt: [Double?] = []
    private var stopped = false
    public let began = Date()

    /// `each` connections from every address in `sources`, all opened before this returns.
    public init(port: UInt16, sources: [String], each: Int, interval: Double) throws {
        for source in sources {
            for _ in 0..<each {
                let connection = try HTTPTestConnection(host: "127.0.0.1", port: port, source: source)
                connection.send("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                connections.append(connection)
            }
        }
        received = Array(repeating: [], count: connections.count)
        endedAt = Array(repeating: nil, count: connections.count)
        Thread.detachNewThread { [self] in
            var nextByte = Date().addingTimeInterval(interval)
            while !lock.withLock({ stopped }) {
                let byteDue = Date() >= nextByte
                if byteDue { nextByte = nextByte.addingTimeInterval(interval) }
                for index in connections.indices where lock.withLock({ endedAt[index] == nil }) {
                    // Read first: a byte sent after the server's answer could reset the
                    // connection before the answer is read.
                    var gone = false
                    while true {
                        guard let bytes = connections[index].readAvailable(timeout: 0) else {
                            gone = true
                            break
                        }
                        if bytes.isEmpty { break }
                        lock.withLock { received[index] += bytes }
                    }
                    if gone || !lock.withLock({ received[index].isEmpty }) {
                        let at = Date().timeIntervalSince(began)
                        lock.withLock { endedAt[index] = at }
                    } else if byteDue {
                        connections[index].send("a")
                    }
                }
                usleep(50_000)
            }
        }
    }

    /// Ends the thread (it holds the connections until then).
    public func stop() { lock.withLock { stopped = true } }

    /// Per connection: seconds from the start until it was answered or closed (nil: still
    /// open), and what it received.
    public var outcomes: [(endedAt: Double?, received: String)] {
        lock.withLock { zip(endedAt, received).map { ($0, String(decoding: $1, as: UTF8.self)) } }
    }
}

// recctl's side of the control socket: connect, send one request, read its reply (events
// that arrive meanwhile are passed to a watcher or skipped).
import ControlProtocol
import Foundation
import SystemSupport

#if canImport(Glibc)
import Glibc
#endif

/// Why recctl could not talk to recd.
struct Unreachable: Error {
    var tried: [String]
    var reason: String
}

/// A blocking client connection to recd's control socket.
final class Connection {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var nextID = 1
    let path: String

    /// Connects to the first candidate path that accepts.
    init(candidates: [String]) throws(Unreachable) {
        var reasons: [String] = []
        for path in candidates {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw Unreachable(tried: candidates, reason: String(cString: strerror(errno))) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
                close(fd)
                reasons.append("\(path): path too long")
                continue
            }
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if result == 0 {
                self.fd = fd
                self.path = path
                return
            }
            reasons.append("\(path): \(String(cString: strerror(errno)))")
            close(fd)
        }
        throw Unreachable(tried: candidates, reason: reasons.joined(separator: "; "))
    }

    deinit { close(fd) }

    /// Sends a request and waits for its reply; `onEvent` sees events that arrive first.
    /// `passing` descriptors travel with the request line (SCM_RIGHTS); the caller keeps them.
    func call(
        _ op: Op, _ arguments: [(String, JSONValue)] = [], passing descriptors: [Int32] = [], timeout: Double? = 30,
        onEvent: ((JSONValue) -> Void)? = nil
    ) throws -> JSONValue {
        let id = nextID
        nextID += 1
        try sendLine(Request(id: id, op: op, arguments: arguments).body.jsonText, passing: descriptors)
        while true {
            let message = try readMessage(timeout: timeout)
            if message["event"] != nil, message["id"] == nil {
                onEvent?(message)
                continue
            }
            if message["id"]?.intValue == id || message["id"] == .null { return message }
        }
    }

    /// Sends one line, whole, in one sendmsg with the descriptors, which recd then gets with it.
    func sendLine(_ line: String, passing descriptors: [Int32] = []) throws {
        do {
            try DescriptorPassing.sendLine(line, passing: descriptors, over: fd)
        } catch {
            throw ClientFailure.io("cannot send to recd at \(path): \(error.message)")
        }
    }

    /// Reads one JSON line; nil timeout waits forever.
    func readMessage(timeout: Double?) throws -> JSONValue {
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                do {
                    return try JSONValue.parse(line)
                } catch {
                    throw ClientFailure.io("recd sent a line that is not JSON: \(line.prefix(200))")
                }
            }
            var waitMs: Int32 = -1
            if let deadline {
                let left = deadline.timeIntervalSinceNow
                if left <= 0 { throw ClientFailure.io("no reply from recd at \(path) within \(Int(timeout!)) s") }
                waitMs = Int32(min(left * 1000, 1_000_000))
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, waitMs)
            if ready < 0 && errno != EINTR { throw ClientFailure.io("poll: \(String(cString: strerror(errno)))") }
            if ready <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(fd, &chunk, chunk.count, 0)
            if count == 0 { throw ClientFailure.io("recd at \(path) closed the connection") }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw ClientFailure.io("cannot read from recd at \(path): \(String(cString: strerror(errno)))")
            }
            buffer += chunk[..<count]
        }
    }
}

enum ClientFailure: Error {
    case io(String)
}

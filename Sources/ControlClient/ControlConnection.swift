// The client's side of the control socket, shared by recctl and the AudioSession library:
// where recd listens, connect, send a request, read its reply (events that arrive meanwhile
// are passed to a watcher or skipped, and so are the request's own progress lines).
// Threads: a Connection is used by one thread at a time (its owner serializes).
import ControlProtocol
import Foundation
import Platform

/// Why a client could not talk to recd.
public struct Unreachable: Error {
    public var tried: [String]
    public var reason: String
}

/// Where clients look for recd's control socket.
public enum ControlSocket {
    /// The candidates in order: `explicit` (--socket), RECD_SOCKET, then the places recd
    /// itself defaults to (Platform's `DefaultPlaces`): a user's own recd
    /// (`$XDG_RUNTIME_DIR/recd/control.sock`), then the system's (`/run/recd/control.sock`).
    public static func candidates(_ explicit: String?, environment: [String: String]) -> [String] {
        if let explicit { return [explicit] }
        if let fromEnvironment = environment["RECD_SOCKET"], !fromEnvironment.isEmpty { return [fromEnvironment] }
        return DefaultPlaces.socketCandidates(environment: environment, isRoot: CurrentProcess.isRoot)
    }
}

/// A blocking client connection to recd's control socket.
public final class Connection {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var nextID = 1
    public let path: String
    /// Whose terms the caller reads recd's errors in: sent with every request.
    public let interface: CallerInterface

    /// Connects to the first candidate path that accepts; `interface` is the caller's (recctl,
    /// the AudioSession library).
    public init(candidates: [String], interface: CallerInterface) throws(Unreachable) {
        self.interface = interface
        var reasons: [String] = []
        for path in candidates {
            let fd: Int32
            do {
                fd = try UnixSocket.make()
            } catch {
                throw Unreachable(tried: candidates, reason: error.message)
            }
            guard path.utf8.count <= UnixSocket.maxPathBytes else {
                Descriptor.close(fd)
                reasons.append("\(path): path too long")
                continue
            }
            do {
                try UnixSocket.connect(fd, path: path)
                self.fd = fd
                self.path = path
                return
            } catch {
                reasons.append("\(path): \(error.message)")
                Descriptor.close(fd)
            }
        }
        throw Unreachable(tried: candidates, reason: reasons.joined(separator: "; "))
    }

    deinit { Descriptor.close(fd) }

    /// Whether recd sent something nobody asked for, or closed the connection: on a connection
    /// that watches nothing and waits for no reply, that is recd's last line before it closed
    /// it (idle for `[daemon] idle_client_timeout`, or shutting down). Such a connection is
    /// spent: connect again rather than read that line as the next request's reply.
    public var hasUnsolicitedInput: Bool {
        if !buffer.isEmpty { return true }
        var poller = [PollEntry(descriptor: fd, events: .readable)]
        let ready = (try? Descriptor.poll(&poller, timeoutMilliseconds: 0)) ?? 1
        return ready > 0
    }

    /// Sends a request and waits for its reply; `onEvent` sees events that arrive first.
    /// `passing` descriptors travel with the request line (SCM_RIGHTS); the caller keeps them.
    /// Progress lines of the request (no `ok`) are skipped; each restarts the `timeout`.
    public func call(
        _ command: Command, passing descriptors: [Int32] = [], timeout: Double? = 30,
        onEvent: ((JSONValue) -> Void)? = nil
    ) throws -> JSONValue {
        let id = nextID
        nextID += 1
        return try exchange(
            command.request(id: id, interface: interface).body, id: id, passing: descriptors, timeout: timeout,
            onEvent: onEvent)
    }

    private func exchange(
        _ request: JSONValue, id: Int, passing descriptors: [Int32], timeout: Double?, onEvent: ((JSONValue) -> Void)?
    ) throws -> JSONValue {
        try sendLine(request.jsonText, passing: descriptors)
        while true {
            let message = try readMessage(timeout: timeout)
            if message["event"] != nil, message["id"] == nil {
                onEvent?(message)
                continue
            }
            if message["progress"] != nil, message["ok"] == nil { continue }
            // recd closed the connection before it read the request (idle): not its reply; the
            // request may be sent again on a new connection.
            if message["closing"]?.boolValue == true {
                throw ClientFailure.io("recd closed the connection: \(Wire.error(from: message)?.message ?? "closing")")
            }
            if message["id"]?.intValue == id || message["id"] == .null { return message }
        }
    }

    /// Sends one line, whole, in one sendmsg with the descriptors, which recd then gets with it.
    public func sendLine(_ line: String, passing descriptors: [Int32] = []) throws {
        do {
            try DescriptorPassing.sendLine(line, passing: descriptors, over: fd)
        } catch {
            throw ClientFailure.io("cannot send to recd at \(path): \(error.message)")
        }
    }

    /// Reads one JSON line; nil timeout waits forever.
    public func readMessage(timeout: Double?) throws -> JSONValue {
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
                if left <= 0 {
                    throw ClientFailure.timedOut(
                        "no reply from recd at \(path) within \(Readable.duration(timeout ?? 0))")
                }
                waitMs = Int32(min(left * 1000, 1_000_000))
            }
            var poller = [PollEntry(descriptor: fd, events: .readable)]
            let ready: Int
            do {
                ready = try Descriptor.poll(&poller, timeoutMilliseconds: waitMs)
            } catch {
                throw ClientFailure.io("poll: \(error.message)")
            }
            if ready <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let outcome: IOOutcome
            do throws(SystemError) {
                outcome = try chunk.withUnsafeMutableBytes { bytes in
                    Result { () throws(SystemError) in try Descriptor.read(fd, into: bytes) }
                }.get()
            } catch {
                throw ClientFailure.io("cannot read from recd at \(path): \(error.message)")
            }
            switch outcome {
            case .endOfFile: throw ClientFailure.io("recd at \(path) closed the connection")
            case .wouldBlock: continue
            case .transferred(let count): buffer += chunk[..<count]
            }
        }
    }
}

/// The connection failed: recd went away, sent something that is not JSON, or did not
/// answer in time. The text says which.
public enum ClientFailure: Error {
    case io(String)
    /// Nothing arrived within the timeout; the connection is still usable.
    case timedOut(String)
}

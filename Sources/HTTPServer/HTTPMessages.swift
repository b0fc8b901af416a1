// What a route handler sees (the request) and gives back (a response): bytes, a file the
// listener serves with Range support, or an event stream the handler feeds.
import Dispatch
import Synchronization

/// One request; a peer off this machine has shown the token or a session's cookie (or asks for
/// `/login`).
public struct HTTPRequest: Sendable {
    /// `GET`, `HEAD` (the listener drops the answer's body) or, for routes added with it, `POST`.
    public var method: String
    /// The path, percent-decoded, without the query.
    public var path: String
    /// The query's arguments (the last of repeated ones).
    public var query: [String: String]
    /// The request's headers, names in lower case.
    public var headers: [String: String]
    /// Whether the peer is on this machine (a loopback address).
    public var fromLoopback: Bool
    /// Whether the request carried the listener's bearer token (the right one): the one
    /// identity a peer off this machine can have.
    public var carriesToken: Bool
    /// The connection's two ends: the peer's and ours (nil when the socket could not say).
    /// On loopback they name the peer's socket in the kernel's tables, and so its owner.
    public var peer: HTTPSocketAddress?
    public var local: HTTPSocketAddress?
    /// The account logged in with the session cookie the request carried (nil: none).
    public var account: String?
    /// A POST's body (at most `HTTPServer.maxBodyBytes`); empty otherwise.
    public var body: [UInt8]

    public init(
        method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
        fromLoopback: Bool = true, carriesToken: Bool = false, peer: HTTPSocketAddress? = nil,
        local: HTTPSocketAddress? = nil, account: String? = nil, body: [UInt8] = []
    ) {
        self.account = account
        self.body = body
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.fromLoopback = fromLoopback
        self.carriesToken = carriesToken
        self.peer = peer
        self.local = local
    }
}

/// One end of a TCP connection: an IP address (4 bytes for IPv4, 16 for IPv6, as on the wire)
/// and a port.
public struct HTTPSocketAddress: Sendable, Equatable {
    public var address: [UInt8]
    public var port: UInt16

    public init(address: [UInt8], port: UInt16) {
        self.address = address
        self.port = port
    }

    /// The address as written: dotted IPv4, or IPv6 in hex groups (without compression).
    public var addressText: String {
        if address.count == 4 { return address.map { String($0) }.joined(separator: ".") }
        guard address.count == 16 else { return "?" }
        return stride(from: 0, to: 16, by: 2).map {
            String(UInt16(address[$0]) << 8 | UInt16(address[$0 + 1]), radix: 16)
        }
        .joined(separator: ":")
    }
}

/// The listener's certificate and key (PEM): HTTPS.
public struct HTTPTLS: Sendable {
    public var certificate: String
    public var key: String

    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }
}

/// A handler's answer.
public struct HTTPResponse: Sendable {
    public enum Body: Sendable {
        /// The whole body.
        case bytes([UInt8])
        /// `size` bytes of an open file, which the listener owns from now on and closes; it
        /// answers `Range: bytes=…` with 206 and Content-Range, an unsatisfiable range with 416.
        case file(descriptor: Int32, size: UInt64)
        /// A `text/event-stream` the handler keeps feeding (`HTTPEventStream.send`) until
        /// it closes it or the client goes.
        case events(HTTPEventStream)
    }

    public var status: Int
    public var contentType: String
    /// More headers (the listener adds Content-Type, Content-Length, and the range ones).
    public var headers: [(String, String)]
    public var body: Body

    public init(status: Int = 200, contentType: String, headers: [(String, String)] = [], body: Body) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }

    /// A text body (UTF-8).
    public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8")
        -> HTTPResponse
    {
        HTTPResponse(status: status, contentType: contentType, body: .bytes(Array(text.utf8)))
    }

    /// An error page: the status and a line that says what to do.
    public static func error(_ status: Int, _ message: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(
            status: status, contentType: "text/plain; charset=utf-8", headers: headers,
            body: .bytes(Array("\(status) \(message)\n".utf8)))
    }

    /// An event stream response around `stream`.
    public static func events(_ stream: HTTPEventStream) -> HTTPResponse {
        HTTPResponse(
            contentType: "text/event-stream", headers: [("Cache-Control", "no-store")], body: .events(stream))
    }
}

/// A server-sent-events stream: any thread `send`s events; the listener's thread for that
/// connection writes them out. Bounded three ways against a client that stops reading (the
/// listener then closes the connection, and `send` answers false): more than `maxQueuedBytes`
/// waiting, the connection could take nothing for `stallSeconds` (its socket buffers, kept
/// small for streams, are full), or the stream is `maxLifetimeSeconds` old. The last one is
/// the only bound on a client that reads nothing: Linux grows a receive buffer that fills
/// (up to `tcp_rmem`'s maximum, megabytes), so such a client can take the meters for many
/// minutes before anything backs up. A reading client sees the stream end and reconnects
/// (EventSource does so by itself, after `retryMilliseconds`). A comment line goes out every
/// `keepAliveSeconds` without events, so proxies keep the connection.
public final class HTTPEventStream: Sendable {
    private struct State {
        var pending: [UInt8] = []
        var closed = false
        /// Closed for falling behind: the listener shuts the connection down.
        var abandoned = false
        /// The connection's thread is in `next`, waiting for events (so not stuck).
        var writerWaiting = false
        /// When the connection's thread last took bytes (or the stream began).
        var lastTaken: Double
    }

    public let maxQueuedBytes: Int
    public let keepAliveSeconds: Double
    public let stallSeconds: Double
    public let maxLifetimeSeconds: Double
    private let began: Double
    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)

    /// `retryMilliseconds`: sent first (`retry:`), how soon the client's EventSource reconnects.
    public init(
        maxQueuedBytes: Int = 256 * 1024, keepAliveSeconds: Double = 5, stallSeconds: Double = 10,
        maxLifetimeSeconds: Double = .infinity, retryMilliseconds: Int? = nil
    ) {
        self.maxQueuedBytes = maxQueuedBytes
        self.keepAliveSeconds = keepAliveSeconds
        self.stallSeconds = stallSeconds
        self.maxLifetimeSeconds = maxLifetimeSeconds
        began = Self.now()
        var first = State(lastTaken: began)
        if let retryMilliseconds { first.pending = Array("retry: \(retryMilliseconds)\n\n".utf8) }
        state = Mutex(first)
    }

    /// Seconds a writer that could not end the stream at its lifetime gets before the
    /// listener cuts the connection.
    static let endGraceSeconds = 1.0

    private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Queues one event (`data` may hold several lines); false once the stream is closed (the
    /// client went, was too slow, or someone called `close`): stop feeding it.
    @discardableResult
    public func send(event: String? = nil, data: String) -> Bool {
        var text = ""
        if let event { text += "event: \(event)\n" }
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
        text += "\n"
        let now = Self.now()
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            let behind = state.pending.count + text.utf8.count > maxQueuedBytes
            let stalled = !state.pending.isEmpty && !state.writerWaiting && now - state.lastTaken > stallSeconds
            if behind || stalled {
                state.closed = true
                state.abandoned = true
                state.pending = []
                return false
            }
            state.pending += text.utf8
            return true
        }
        wake.signal()
        return accepted
    }

    /// Ends the stream: the client sees the end after what is queued.
    public func close() {
        state.withLock { $0.closed = true }
        wake.signal()
    }

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Whether the listener should shut the connection down: the client fell `maxQueuedBytes`
    /// behind, the connection took nothing for `stallSeconds`, or the stream outlived
    /// `maxLifetimeSeconds` without its end being written (the deadlines queue asks).
    func isStuck(now: Double) -> Bool {
        let expired = now - began > maxLifetimeSeconds + Self.endGraceSeconds
        return state.withLock { state in
            expired || state.abandoned || (!state.writerWaiting && now - state.lastTaken > stallSeconds)
        }
    }

    /// What to write next, at most `max` bytes: waits up to `keepAliveSeconds` for events and
    /// returns a comment if none came; nil at the end. The connection's thread only.
    func next(max: Int) -> [UInt8]? {
        func take() -> [UInt8]?? {
            state.withLock { state -> [UInt8]?? in
                if !state.pending.isEmpty {
                    let count = min(max, state.pending.count)
                    let chunk = Array(state.pending[..<count])
                    state.pending.removeFirst(count)
                    return .some(chunk)
                }
                return state.closed ? .some(nil) : nil
            }
        }
        defer {
            let now = Self.now()
            state.withLock {
                $0.writerWaiting = false
                $0.lastTaken = now
            }
        }
        if Self.now() - began > maxLifetimeSeconds { close() }
        if let ready = take() { return ready }
        state.withLock { $0.writerWaiting = true }
        let left = Swift.max(0, maxLifetimeSeconds - (Self.now() - began))
        _ = wake.wait(timeout: .now() + Swift.min(keepAliveSeconds, left))
        if let ready = take() { return ready }
        return Array(": keep-alive\n\n".utf8)
    }
}

/// A handler's helpers may hand back a refusal (a 4xx/5xx response) as a `Result`'s failure.
extension HTTPResponse: Error {}

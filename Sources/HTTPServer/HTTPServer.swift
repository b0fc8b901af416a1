// recd's HTTP listener (libmicrohttpd): GET and HEAD, and POST for the routes that take it
// (behind the CSRF rule, HTTPLogin.swift); loopback by default; for any peer not on this machine
// HTTPS, and a bearer token or an account's session; bounded like the control socket.
//
// Threads: libmicrohttpd's own. One listening thread accepts (the accept policy and the
// connection opened/closed notifications run there); each connection gets a thread
// (MHD_USE_THREAD_PER_CONNECTION, bounded by `Limits.maxConnections`), which runs the route
// handler and writes the response, and for an event stream blocks in `HTTPEventStream.next`.
// Handlers therefore run on those threads, never on recd's control thread; what they need of
// recd's state they must get without touching it (the daemon posts to its control thread and
// waits with a time limit). One more of ours, the "deadlines" queue, sweeps the connections a
// few times a second while there are any (suspended while none is open: an idle listener wakes
// no thread). `start` and `stop`: any one thread (the daemon's main thread).
//
// Why a table of connections beside libmicrohttpd's: its idle timeout restarts at every byte,
// so a peer trickling one header byte every few seconds holds a connection (and its thread) for
// ever, and its per-address limit refuses a newcomer before anyone could make room. recd keeps
// each connection's socket, peer and the time its current request head began; the sweep shuts
// down (shutdown(2), never close: libmicrohttpd closes the descriptor only after telling us the
// connection closed, under the same lock) a connection whose head is late or whose event stream
// stalled, and the accept policy makes room for a newcomer by shutting down the oldest
// connection still waiting for a request head.
internal import CMicroHTTPD
import Dispatch
import Glibc
import Synchronization

/// The listener. Owned by the daemon; `stop` before it goes away.
public final class HTTPServer: Sendable {
    /// Bounds against misbehaving clients, in the manner of the control socket's
    /// (`ControlServer.Limits`).
    public struct Limits: Sendable, Equatable {
        /// Most simultaneous connections; more are closed at once.
        public var maxConnections: Int
        /// Most simultaneous connections from one IP address.
        public var maxConnectionsPerIP: Int
        /// Seconds a connection may be idle (no request byte, nothing written) before it is closed.
        public var idleTimeoutSeconds: Int
        /// Seconds a whole request head (request line, headers, the empty line) may take to
        /// arrive, from the connection's opening or the end of the previous answer: a slower
        /// one gets `408` and the connection is closed, however steadily its bytes trickle in.
        public var headTimeoutSeconds: Double
        /// The largest request head: its bytes, plus 64 for each header line, query argument
        /// and cookie (what libmicrohttpd keeps for each). A larger one gets 431 (414 for a
        /// request line that alone does not fit in memory).
        public var maxRequestHeadBytes: Int

        public init(
            maxConnections: Int = 64, maxConnectionsPerIP: Int = 16, idleTimeoutSeconds: Int = 10,
            headTimeoutSeconds: Double = 5, maxRequestHeadBytes: Int = 16 * 1024
        ) {
            self.maxConnections = maxConnections
            self.maxConnectionsPerIP = maxConnectionsPerIP
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.headTimeoutSeconds = headTimeoutSeconds
            self.maxRequestHeadBytes = maxRequestHeadBytes
        }

        /// The memory libmicrohttpd gets per connection: the largest head and room for the
        /// reply's head beyond it. Without that room, a head just under the limit left none
        /// for the answer, and libmicrohttpd closed the connection without a status.
        var connectionMemoryBytes: Int { maxRequestHeadBytes + HTTPServer.replyHeadRoomBytes }

        /// libmicrohttpd's own connection limit: ours, and room for connections we shut down
        /// that it has not cleaned up yet (a few milliseconds each).
        var listenerConnectionLimit: Int { maxConnections + maxConnections / 4 + 4 }
    }

    /// Answers one request. Runs on the connection's thread.
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    /// Exact paths and path prefixes (e.g. `/archive/`), matched exact first, then the
    /// longest prefix.
    /// Each route answers GET and HEAD unless added with other `methods` (`["POST"]`): a POST
    /// reaches its handler only after the CSRF rule (`HTTPLoginGate.checkUnsafe`).
    public struct Routes: Sendable {
        struct Route: Sendable {
            var methods: Set<String>
            var handler: Handler
        }
        var exact: [String: Route] = [:]
        var prefixes: [(String, Route)] = []

        public init() {}

        public mutating func add(_ path: String, methods: Set<String> = ["GET", "HEAD"], _ handler: @escaping Handler) {
            exact[path] = Route(methods: methods, handler: handler)
        }

        public mutating func addPrefix(
            _ prefix: String, methods: Set<String> = ["GET", "HEAD"], _ handler: @escaping Handler
        ) {
            prefixes.append((prefix, Route(methods: methods, handler: handler)))
            prefixes.sort { $0.0.count > $1.0.count }
        }

        func route(for path: String) -> Route? {
            exact[path] ?? prefixes.first { path.hasPrefix($0.0) }?.1
        }
    }

    /// The largest request body read (a POST's form); a larger one gets 413 unread.
    public static let maxBodyBytes = 16 * 1024

    /// Per-connection memory kept beyond `maxRequestHeadBytes` for the reply's head.
    static let replyHeadRoomBytes = 4096
    /// What libmicrohttpd keeps for each header line, query argument or cookie of a request
    /// (a 56-byte record, aligned to 16).
    static let bytesPerRequestValue = 64
    /// The kernel send buffer of an event stream's socket (the kernel doubles it): small, so
    /// that a client that stops reading is noticed in seconds, not after megabytes.
    static let eventStreamSendBufferBytes: Int32 = 4096

    public let address: HTTPListenAddress
    public let limits: Limits
    let token: [UInt8]?
    let routes: Routes
    /// Accounts and sessions, when the daemon has them.
    let gate: HTTPLoginGate?
    /// Whether the listener speaks TLS.
    public let isTLS: Bool

    /// One open connection, from libmicrohttpd's opened notification to its closed one.
    struct Connection {
        /// Its socket: valid until the closed notification (libmicrohttpd closes it after).
        let fd: Int32
        /// The peer's IP address (4 or 16 bytes).
        let peer: [UInt8]
        /// When the request head now awaited began: the connection's opening, or the end of
        /// the previous answer.
        var headSince: Double
        /// Whether a request head is awaited (false while a request is answered).
        var awaitingHead = true
        /// Shut down by us (late head, room for a newcomer, stalled stream); its thread is
        /// closing it and it no longer counts.
        var dropped = false
        /// The event stream it serves, if any.
        var stream: HTTPEventStream?
    }
    struct State {
        /// The MHD_Daemon's address (a plain integer: the pointer is not Sendable); 0 once stopped.
        var daemon: UInt = 0
        /// Keyed by the MHD_Connection's address.
        var connections: [UInt: Connection] = [:]
        var sweep: (any DispatchSourceTimer)?
        /// Whether `sweep` runs (resumed): only while `connections` holds any.
        var sweeping = false
    }
    let state = Mutex(State())
    private let boundPort = Atomic<UInt16>(0)
    /// The port bound (differs from `address.port` when that is 0).
    public var port: UInt16 { boundPort.load(ordering: .relaxed) }

    /// Binds and starts serving. `token`: what `Authorization: Bearer` must carry for peers
    /// not on this machine; nil is allowed only on a loopback address.
    /// `tls`: HTTPS with that certificate; required for an address other machines reach.
    /// `login`: browser logins with accounts (`/login`, sessions, throttling).
    public init(
        address: HTTPListenAddress, token: String?, routes: Routes, limits: Limits = Limits(), tls: HTTPTLS? = nil,
        login: HTTPLogin? = nil
    ) throws(HTTPServerError) {
        // With logins (over TLS) the address may wait for its first account: until then every
        // request from elsewhere gets 401.
        try Self.requireToken(for: address, hasToken: !(token ?? "").isEmpty || (login != nil && tls != nil))
        // Passwords never cross a network in clear: logins beyond loopback only over TLS.
        guard address.isLoopback || tls != nil || login == nil else {
            throw HTTPServerError(
                "listen = \(address) reaches other machines and offers logins without a TLS certificate; recd "
                    + "makes one at start unless [http] tls_certificate and tls_key name one")
        }
        self.address = address
        self.limits = limits
        self.token = token.map { Array($0.utf8) }
        self.routes = routes
        self.gate = login.map(HTTPLoginGate.init)
        self.isTLS = tls != nil
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_THREAD_PER_CONNECTION.rawValue
        flags |= MHD_USE_POLL.rawValue
        if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        guard
            let bytes = HTTPListenAddress.socketAddress(host: address.host, port: address.port, isIPv6: address.isIPv6)
        else { throw HTTPServerError("\(address) is not an IP address") }
        let daemon = bytes.withUnsafeBytes { raw in
            recd_mhd_start(
                UInt32(flags), raw.baseAddress!.assumingMemoryBound(to: sockaddr.self),
                Unmanaged.passUnretained(self).toOpaque(), accessHandler, UInt32(limits.listenerConnectionLimit),
                limits.connectionMemoryBytes, UInt32(limits.idleTimeoutSeconds), requestCompleted, acceptPolicy,
                connectionNotice, uriLogger, tls?.key, tls?.certificate)
        }
        guard let daemon else {
            let cause = String(cString: strerror(errno))
            throw HTTPServerError(
                "cannot listen on \(address) (\(cause): the port is taken, the address is not this machine's, or a sandbox such as recd.service's RestrictAddressFamilies=AF_UNIX allows no IP sockets); choose another [http] listen, widen the sandbox (docs/http.md), or set listen = no",
                isConfiguration: false)
        }
        boundPort.store(recd_mhd_bound_port(daemon), ordering: .relaxed)
        let bits = UInt(bitPattern: daemon)
        let period = min(0.25, max(0.02, limits.headTimeoutSeconds / 4))
        state.withLock { state in
            state.daemon = bits
            // Made here: the timer is not Sendable, and the state owns it from the start.
            let sweep = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "recd.http.deadlines"))
            sweep.schedule(deadline: .now() + period, repeating: period, leeway: .milliseconds(20))
            sweep.setEventHandler { [weak self] in self?.sweepConnections() }
            // Left suspended (as made) until a connection opens.
            state.sweep = sweep
        }
    }

    /// The identity rule: an address other machines reach needs a token or logins (which come
    /// with TLS). Also `--check-config`'s.
    public static func requireToken(for address: HTTPListenAddress, hasToken: Bool) throws(HTTPServerError) {
        guard address.isLoopback || hasToken else {
            throw HTTPServerError(
                "listen = \(address) reaches other machines: set [http] token_file to a file holding a secret token, add accounts (recctl web user add), or listen on 127.0.0.1"
            )
        }
    }

    /// Closes open event streams, then stops the listener and its threads (waits for them).
    public func stop() {
        let (bits, streams, sweep) = state.withLock { state in
            defer {
                state.daemon = 0
                state.sweep = nil
            }
            // A suspended source must be resumed before it is cancelled and released.
            if !state.sweeping { state.sweep?.resume() }
            state.sweeping = true
            return (state.daemon, state.connections.values.compactMap(\.stream), state.sweep)
        }
        sweep?.cancel()
        for stream in streams { stream.close() }
        if let daemon = OpaquePointer(bitPattern: bits) { MHD_stop_daemon(daemon) }
    }

    deinit { stop() }

    // MARK: - Connections (the listening thread, the deadlines queue)

    /// Monotonic seconds.
    private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// The accept policy: room for a connection from `address`. When its address already has
    /// `maxConnectionsPerIP`, or the listener `maxConnections`, the oldest connection of that
    /// address (or of all) still waiting for a request head makes room: it has sent nothing
    /// worth keeping. When every one is busy answering, the newcomer is refused (closed unanswered).
    fileprivate func admit(_ address: UnsafePointer<sockaddr>) -> Bool {
        let peer = HTTPListenAddress.peerKey(address)
        let limits = limits
        return state.withLock { state in
            let fromPeer = state.connections.filter { !$0.value.dropped && $0.value.peer == peer }
            if fromPeer.count >= limits.maxConnectionsPerIP && !Self.dropOldestAwaitingHead(fromPeer, in: &state) {
                return false
            }
            let open = state.connections.filter { !$0.value.dropped }
            if open.count >= limits.maxConnections && !Self.dropOldestAwaitingHead(open, in: &state) {
                return false
            }
            return true
        }
    }

    private static func dropOldestAwaitingHead(_ candidates: [UInt: Connection], in state: inout State) -> Bool {
        guard
            let oldest = candidates.filter({ $0.value.awaitingHead }).min(by: {
                $0.value.headSince < $1.value.headSince
            })
        else { return false }
        drop(oldest.key, in: &state, answer: nil)
        return true
    }

    /// Shuts a connection down: its thread sees the end and closes it. `answer`, a whole
    /// response, goes out first when the socket takes it at once. Under the state's lock, which
    /// keeps the descriptor from being closed (and reused) meanwhile.
    private static func drop(_ key: UInt, in state: inout State, answer: [UInt8]?) {
        guard let connection = state.connections[key], !connection.dropped, connection.fd >= 0 else { return }
        state.connections[key]?.dropped = true
        if let answer {
            _ = answer.withUnsafeBytes {
                send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
        }
        connection.stream?.close()
        shutdown(connection.fd, Int32(SHUT_RDWR))
    }

    fileprivate func opened(_ connection: OpaquePointer) {
        let fd = recd_mhd_connection_fd(connection)
        let peer = recd_mhd_peer_address(connection).map { HTTPListenAddress.peerKey($0) } ?? []
        let now = Self.now()
        state.withLock { state in
            state.connections[UInt(bitPattern: connection)] = Connection(fd: fd, peer: peer, headSince: now)
            Self.sweepWhileOpen(&state)
        }
    }

    fileprivate func closed(_ connection: OpaquePointer) {
        state.withLock { state in
            state.connections.removeValue(forKey: UInt(bitPattern: connection))
            Self.sweepWhileOpen(&state)
        }
    }

    /// The sweep runs while a connection is open and is suspended while none is (after `stop`,
    /// `sweep` is gone and nothing changes).
    private static func sweepWhileOpen(_ state: inout State) {
        guard let sweep = state.sweep else { return }
        let wanted = !state.connections.isEmpty
        guard wanted != state.sweeping else { return }
        if wanted { sweep.resume() } else { sweep.suspend() }
        state.sweeping = wanted
    }

    /// A request's answer ended (or the connection did): the next head's time starts now.
    fileprivate func answered(_ connection: OpaquePointer) {
        let now = Self.now()
        state.withLock { state in
            let key = UInt(bitPattern: connection)
            guard state.connections[key] != nil else { return }
            state.connections[key]!.awaitingHead = true
            state.connections[key]!.headSince = now
            state.connections[key]!.stream = nil
        }
    }

    /// The deadlines: a head later than `headTimeoutSeconds` gets 408 and its connection is
    /// shut down; so is an event stream that fell too far behind or could write nothing for
    /// its `stallSeconds`.
    private func sweepConnections() {
        let now = Self.now()
        let timeout = limits.headTimeoutSeconds
        let late = Self.requestTimeout(seconds: timeout)
        state.withLock { state in
            for (key, connection) in state.connections where !connection.dropped {
                if connection.awaitingHead && now - connection.headSince > timeout {
                    Self.drop(key, in: &state, answer: late)
                } else if let stream = connection.stream, stream.isStuck(now: now) {
                    Self.drop(key, in: &state, answer: nil)
                }
            }
        }
    }

    private static func requestTimeout(seconds: Double) -> [UInt8] {
        let shown = seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
        return rawResponse(
            408, "Request Timeout",
            "the request head did not arrive within \(shown) s; send the request line and headers at once")
    }

    /// A whole response with `Connection: close`, for answers written straight to the socket.
    static func rawResponse(_ status: Int, _ reason: String, _ advice: String, body: Bool = true) -> [UInt8] {
        let text = "\(status) \(reason): \(advice)\n"
        return Array(
            ("HTTP/1.1 \(status) \(reason)\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n"
                + "Content-Length: \(text.utf8.count)\r\n\r\n" + (body ? text : "")).utf8)
    }

}

/// `Range: bytes=…` against a file of `size` bytes: one range (first-last, first-, -suffix);
/// anything else (several ranges, other units, nonsense) serves the whole file, as RFC 9110
/// allows.
enum ByteRange: Equatable {
    case whole
    case part(first: UInt64, last: UInt64)
    case unsatisfiable

    static func parse(_ header: String?, size: UInt64) -> ByteRange {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return .whole }
        let spec = header.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return .whole }
        let firstText = spec[0].trimmingSpaces, lastText = spec[1].trimmingSpaces
        if firstText.isEmpty {
            guard let suffix = UInt64(lastText) else { return .whole }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .part(first: size - min(suffix, size), last: size - 1)
        }
        guard let first = UInt64(firstText) else { return .whole }
        let last: UInt64
        if lastText.isEmpty {
            last = size &- 1
        } else {
            guard let value = UInt64(lastText), value >= first else { return .whole }
            last = min(value, size &- 1)
        }
        guard first < size else { return .unsatisfiable }
        return .part(first: first, last: last)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return text
    }
}

/// libmicrohttpd's access handler: called for each request once its head is in. Answers at
/// once (no request has a body worth reading: a POST gets 405 without its body being read).
/// `requestContext` is what `uriLogger` returned for this request.
private let accessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, upload, uploadSize, requestContext in
    guard let cls, let connection, let requestContext else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return server.handle(
        connection, url: url.map { String(cString: $0) } ?? "/", method: method.map { String(cString: $0) } ?? "",
        context: requestContext, upload: upload, uploadSize: uploadSize)
}

/// A POST's body as it arrives (the request context; released when the request completes).
final class RequestBody {
    var bytes: [UInt8] = []
    var overflowed = false
}

/// The request context (as an address, never dereferenced) meaning "the target held %00".
let nulMarker: UInt = 1

/// Sees each request target as it came, before libmicrohttpd decodes (and cuts) it.
private let uriLogger: recd_mhd_uri_logger = { _, target, _ in
    guard let target, HTTPServer.holdsEncodedNUL(target) else { return nil }
    return UnsafeMutableRawPointer(bitPattern: nulMarker)
}

/// The listening thread, before libmicrohttpd takes a connection on.
private let acceptPolicy: MHD_AcceptPolicyCallback = { cls, address, _ in
    guard let cls, let address else { return .NO }
    return Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().admit(address) ? .YES : .NO
}

/// The listening thread: a connection opened (its thread is about to start) or was cleaned up
/// (its socket is closed right after).
private let connectionNotice: MHD_NotifyConnectionCallback = { cls, connection, _, code in
    guard let cls, let connection else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    if code == .CONNECTION_NOTIFY_STARTED { server.opened(connection) } else { server.closed(connection) }
}

/// The connection's thread: a request's answer is done (or the connection ended mid-request).
private let requestCompleted: MHD_RequestCompletedCallback = { cls, connection, requestContext, _ in
    if let raw = requestContext?.pointee, UInt(bitPattern: raw) != nulMarker {
        Unmanaged<RequestBody>.fromOpaque(raw).release()
        requestContext?.pointee = nil
    }
    guard let cls, let connection else { return }
    Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().answered(connection)
}

// recd's HTTP listener (libmicrohttpd): read-only (GET and HEAD), loopback by default, a
// bearer token for any peer not on this machine, bounded like the control socket.
//
// Threads: libmicrohttpd's own. One listening thread accepts; each connection gets a thread
// (MHD_USE_THREAD_PER_CONNECTION, bounded by `Limits.maxConnections`), which runs the route
// handler and writes the response, and for an event stream blocks in `HTTPEventStream.next`.
// Handlers therefore run on those threads, never on recd's control thread; what they need of
// recd's state they must get without touching it (the daemon posts to its control thread and
// waits with a time limit). `start` and `stop`: any one thread (the daemon's main thread).
internal import CMicroHTTPD
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
        /// Memory for one connection's request head and buffers: a longer request line or
        /// more headers get 431 (or 414 for the line).
        public var maxRequestHeadBytes: Int

        public init(
            maxConnections: Int = 64, maxConnectionsPerIP: Int = 16, idleTimeoutSeconds: Int = 10,
            maxRequestHeadBytes: Int = 16 * 1024
        ) {
            self.maxConnections = maxConnections
            self.maxConnectionsPerIP = maxConnectionsPerIP
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.maxRequestHeadBytes = maxRequestHeadBytes
        }
    }

    /// Answers one request. Runs on the connection's thread.
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    /// Exact paths and path prefixes (e.g. `/archive/`), matched exact first, then the
    /// longest prefix.
    public struct Routes: Sendable {
        var exact: [String: Handler] = [:]
        var prefixes: [(String, Handler)] = []

        public init() {}

        public mutating func add(_ path: String, _ handler: @escaping Handler) { exact[path] = handler }

        public mutating func addPrefix(_ prefix: String, _ handler: @escaping Handler) {
            prefixes.append((prefix, handler))
            prefixes.sort { $0.0.count > $1.0.count }
        }

        func handler(for path: String) -> Handler? {
            exact[path] ?? prefixes.first { path.hasPrefix($0.0) }?.1
        }
    }

    public let address: HTTPListenAddress
    public let limits: Limits
    private let token: [UInt8]?
    private let routes: Routes
    private struct State {
        /// The MHD_Daemon's address (a plain integer: the pointer is not Sendable); 0 once stopped.
        var daemon: UInt = 0
        var streams: [ObjectIdentifier: HTTPEventStream] = [:]
    }
    private let state = Mutex(State())
    private let boundPort = Atomic<UInt16>(0)
    /// The port bound (differs from `address.port` when that is 0).
    public var port: UInt16 { boundPort.load(ordering: .relaxed) }

    /// Binds and starts serving. `token`: what `Authorization: Bearer` must carry for peers
    /// not on this machine; nil is allowed only on a loopback address.
    public init(address: HTTPListenAddress, token: String?, routes: Routes, limits: Limits = Limits())
        throws(HTTPServerError)
    {
        try Self.requireToken(for: address, hasToken: !(token ?? "").isEmpty)
        self.address = address
        self.limits = limits
        self.token = token.map { Array($0.utf8) }
        self.routes = routes
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_THREAD_PER_CONNECTION.rawValue
        flags |= MHD_USE_POLL.rawValue
        if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        guard
            let bytes = HTTPListenAddress.socketAddress(host: address.host, port: address.port, isIPv6: address.isIPv6)
        else { throw HTTPServerError("\(address) is not an IP address") }
        let daemon = bytes.withUnsafeBytes { raw in
            recd_mhd_start(
                UInt32(flags), raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), accessHandler,
                Unmanaged.passUnretained(self).toOpaque(),
                UInt32(limits.maxConnections), UInt32(limits.maxConnectionsPerIP), limits.maxRequestHeadBytes,
                UInt32(limits.idleTimeoutSeconds), nil, nil, nil, nil)
        }
        guard let daemon else {
            let cause = String(cString: strerror(errno))
            throw HTTPServerError(
                "cannot listen on \(address) (\(cause): the port is taken, the address is not this machine's, or a sandbox such as recd.service's RestrictAddressFamilies=AF_UNIX allows no IP sockets); choose another [http] listen, widen the sandbox (docs/http.md), or set listen = no",
                isConfiguration: false)
        }
        boundPort.store(recd_mhd_bound_port(daemon), ordering: .relaxed)
        let bits = UInt(bitPattern: daemon)
        state.withLock { $0.daemon = bits }
    }

    /// The token rule: an address other machines reach needs a token. Also `--check-config`'s.
    public static func requireToken(for address: HTTPListenAddress, hasToken: Bool) throws(HTTPServerError) {
        guard address.isLoopback || hasToken else {
            throw HTTPServerError(
                "listen = \(address) reaches other machines: set [http] token_file to a file holding a secret token, or listen on 127.0.0.1"
            )
        }
    }

    /// Closes open event streams, then stops the listener and its threads (waits for them).
    public func stop() {
        let (bits, streams) = state.withLock { state in
            defer { state.daemon = 0 }
            return (state.daemon, Array(state.streams.values))
        }
        for stream in streams { stream.close() }
        if let daemon = OpaquePointer(bitPattern: bits) { MHD_stop_daemon(daemon) }
    }

    deinit { stop() }

    // MARK: - Requests (a connection's thread)

    fileprivate func handle(_ connection: OpaquePointer, url: String, method: String) -> MHD_Result {
        guard method == "GET" || method == "HEAD" else {
            return queue(
                connection,
                .error(
                    405, "Method Not Allowed: this server is read-only (GET, HEAD)", headers: [("Allow", "GET, HEAD")]))
        }
        let peer = recd_mhd_peer_address(connection)
        let fromLoopback = peer.map { HTTPListenAddress.isLoopback($0) } ?? false
        let headers = values(connection, kind: .HEADER_KIND)
        if !fromLoopback && !authorized(headers["authorization"]) {
            return queue(
                connection,
                .error(
                    401, "Unauthorized: send Authorization: Bearer TOKEN (the contents of recd's [http] token_file)",
                    headers: [("WWW-Authenticate", "Bearer realm=\"recd\"")]))
        }
        let request = HTTPRequest(
            method: method, path: url, query: values(connection, kind: .GET_ARGUMENT_KIND), headers: headers,
            fromLoopback: fromLoopback)
        guard let handler = routes.handler(for: url) else {
            return queue(connection, .error(404, "Not Found: \(url) is not one of recd's pages"))
        }
        return queue(connection, handler(request), range: headers["range"])
    }

    /// Compares the bearer token in constant time (for its length).
    private func authorized(_ header: String?) -> Bool {
        guard let token, let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.utf8.dropFirst(7))
        guard given.count == token.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(given, token) { difference |= a ^ b }
        return difference == 0
    }

    private func values(_ connection: OpaquePointer, kind: MHD_ValueKind) -> [String: String] {
        final class Box { var values: [String: String] = [:] }
        let box = Box()
        let lowercase = kind == .HEADER_KIND
        _ = withExtendedLifetime(box) {
            MHD_get_connection_values(
                connection, kind,
                { cls, _, key, value in
                    let box = Unmanaged<Box>.fromOpaque(cls!).takeUnretainedValue()
                    if let key {
                        let name = String(cString: key)
                        box.values[name] = value.map { String(cString: $0) } ?? ""
                    }
                    return .YES
                }, Unmanaged.passUnretained(box).toOpaque())
        }
        guard lowercase else { return box.values }
        return Dictionary(box.values.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
    }

    private func queue(_ connection: OpaquePointer, _ response: HTTPResponse, range: String? = nil) -> MHD_Result {
        var status = response.status
        var extra = response.headers
        let made: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            made = bytes.withUnsafeBytes {
                MHD_create_response_from_buffer(
                    bytes.count, UnsafeMutableRawPointer(mutating: $0.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .file(let descriptor, let size):
            extra.append(("Accept-Ranges", "bytes"))
            switch ByteRange.parse(range, size: size) {
            case .whole:
                made = MHD_create_response_from_fd_at_offset64(size, descriptor, 0)
            case .part(let first, let last):
                status = 206
                extra.append(("Content-Range", "bytes \(first)-\(last)/\(size)"))
                made = MHD_create_response_from_fd_at_offset64(last - first + 1, descriptor, first)
            case .unsatisfiable:
                Glibc.close(descriptor)
                return queue(
                    connection,
                    .error(
                        416, "Range Not Satisfiable: the file has \(size) bytes",
                        headers: [("Content-Range", "bytes */\(size)")]))
            }
            // libmicrohttpd owns the descriptor only once the response exists.
            if made == nil { Glibc.close(descriptor) }
        case .events(let stream):
            let context = Unmanaged.passRetained(StreamContext(stream: stream, server: self)).toOpaque()
            state.withLock { $0.streams[ObjectIdentifier(stream)] = stream }
            made = MHD_create_response_from_callback(
                recd_mhd_size_unknown(), 16 * 1024,
                { cls, _, buffer, max in
                    let context = Unmanaged<StreamContext>.fromOpaque(cls!).takeUnretainedValue()
                    guard let bytes = context.stream.next(max: max) else { return recd_mhd_end_of_stream() }
                    bytes.withUnsafeBytes {
                        UnsafeMutableRawPointer(buffer!).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
                    }
                    return bytes.count
                },
                context,
                { cls in
                    let context = Unmanaged<StreamContext>.fromOpaque(cls!).takeRetainedValue()
                    context.stream.close()
                    context.server.forget(context.stream)
                })
            if made == nil {
                Unmanaged<StreamContext>.fromOpaque(context).release()
                forget(stream)
            }
        }
        guard let made else { return .NO }
        defer { MHD_destroy_response(made) }
        MHD_add_response_header(made, "Content-Type", response.contentType)
        MHD_add_response_header(made, "X-Content-Type-Options", "nosniff")
        for (name, value) in extra { MHD_add_response_header(made, name, value) }
        return MHD_queue_response(connection, UInt32(status), made)
    }

    fileprivate func forget(_ stream: HTTPEventStream) {
        _ = state.withLock { $0.streams.removeValue(forKey: ObjectIdentifier(stream)) }
    }
}

/// What an event stream's callbacks need.
private final class StreamContext {
    let stream: HTTPEventStream
    let server: HTTPServer

    init(stream: HTTPEventStream, server: HTTPServer) {
        self.stream = stream
        self.server = server
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
private let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, _, _, _ in
    guard let cls, let connection else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return server.handle(
        connection, url: url.map { String(cString: $0) } ?? "/", method: method.map { String(cString: $0) } ?? "")
}

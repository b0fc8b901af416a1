// The HTTP listener's requests, on a connection's thread: the head's checks, a POST's body, who
// asks (token, session, loopback), the CSRF rule (HTTPLogin.swift), the route, and the answer
// queued to libmicrohttpd (bytes, a file with Range, an event stream).
internal import CMicroHTTPD
import Glibc

extension HTTPServer {
    // MARK: - Requests (a connection's thread)

    /// Marks the head in (the deadline no longer applies); false when the sweep shut the
    /// connection down meanwhile (nothing may be written then).
    private func isDropped(_ connection: OpaquePointer) -> Bool {
        state.withLock { $0.connections[UInt(bitPattern: connection)]?.dropped ?? false }
    }

    private func headArrived(_ connection: OpaquePointer) -> Bool {
        state.withLock { state in
            let key = UInt(bitPattern: connection)
            guard let entry = state.connections[key] else { return true }
            guard !entry.dropped else { return false }
            state.connections[key]!.awaitingHead = false
            return true
        }
    }

    /// Whether the head, as libmicrohttpd holds it, leaves room for the reply's head within
    /// the connection's memory (`maxRequestHeadBytes`; see there).
    private func headFits(_ connection: OpaquePointer) -> Bool {
        var used = recd_mhd_request_head_size(connection)
        for kind in [MHD_ValueKind.HEADER_KIND, .GET_ARGUMENT_KIND, .COOKIE_KIND] {
            used += Int(MHD_get_connection_values(connection, kind, nil, nil)) * Self.bytesPerRequestValue
        }
        // libmicrohttpd copies the Cookie header to split it.
        if let cookie = MHD_lookup_connection_value(connection, .HEADER_KIND, "Cookie") { used += strlen(cookie) + 1 }
        return used <= limits.maxRequestHeadBytes
    }

    /// One call of the access handler. A POST's first call (its head) keeps a box for its body;
    /// the calls with body bytes fill it (up to `maxBodyBytes`); the last (no bytes) answers.
    func handle(
        _ connection: OpaquePointer, url: String, method: String,
        context: UnsafeMutablePointer<UnsafeMutableRawPointer?>,
        upload: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>?
    ) -> MHD_Result {
        if let raw = context.pointee, UInt(bitPattern: raw) != nulMarker {
            let box = Unmanaged<RequestBody>.fromOpaque(raw).takeUnretainedValue()
            if let uploadSize, uploadSize.pointee > 0 {
                if let upload, box.bytes.count + uploadSize.pointee <= Self.maxBodyBytes {
                    upload.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) {
                        box.bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: uploadSize.pointee))
                    }
                } else {
                    box.overflowed = true
                }
                uploadSize.pointee = 0
                return .YES
            }
            guard !box.overflowed else {
                return queue(
                    connection,
                    .error(
                        413, "Content Too Large: a request body is at most \(Self.maxBodyBytes) bytes",
                        headers: [("Connection", "close")]))
            }
            // The body is in: from now on the head deadline no longer applies.
            // A POST's body comes under the head's deadline too (a body trickled byte by byte would
            // otherwise hold the connection for ever): its head counts as arrived with the body.
            guard method == "POST" ? !isDropped(connection) : headArrived(connection) else { return .NO }
            return answer(connection, url: url, method: method, body: box.bytes)
        }
        let targetHeldNUL = context.pointee.map { UInt(bitPattern: $0) } == nulMarker
        guard headArrived(connection) else { return .NO }
        guard headFits(connection) else {
            // Written here, not queued: a queued answer needs memory this head has taken.
            let answer = Self.rawResponse(
                431, "Request Header Fields Too Large",
                "the request head is over \(limits.maxRequestHeadBytes) bytes (64 more for each header); send fewer or shorter headers",
                body: method != "HEAD")
            let fd = recd_mhd_connection_fd(connection)
            if fd >= 0 {
                _ = answer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            }
            return .NO
        }
        guard !targetHeldNUL else {
            return queue(
                connection, .error(400, "Bad Request: the path holds %00 (a NUL byte), which no name of recd's has"))
        }
        let builtIn = gate != nil && ["/login", "/logout", "/api/session"].contains(url)
        let allowed = builtIn ? ["GET", "HEAD", "POST"] : routes.route(for: url)?.methods ?? ["GET", "HEAD"]
        guard allowed.contains(method) else {
            let list = allowed.sorted().joined(separator: ", ")
            return queue(
                connection,
                .error(405, "Method Not Allowed: \(url) answers \(list)", headers: [("Allow", list)]))
        }
        if method == "POST" {
            if let length = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
                (Int(String(cString: length)) ?? Int.max) > Self.maxBodyBytes
            {
                return queue(
                    connection,
                    .error(
                        413, "Content Too Large: a request body is at most \(Self.maxBodyBytes) bytes",
                        headers: [("Connection", "close")]))
            }
            context.pointee = Unmanaged.passRetained(RequestBody()).toOpaque()
            return .YES
        }
        return answer(connection, url: url, method: method, body: [])
    }

    /// A whole request in: who asks, the CSRF rule, then the route.
    private func answer(_ connection: OpaquePointer, url: String, method: String, body: [UInt8]) -> MHD_Result {
        let peer = recd_mhd_peer_address(connection)
        let fromLoopback = peer.map { HTTPListenAddress.isLoopback($0) } ?? false
        let headers = values(connection, kind: .HEADER_KIND)
        let cookies = values(connection, kind: .COOKIE_KIND)
        let carriesToken = authorized(headers["authorization"])
        let session = gate?.session(cookies: cookies)
        let socket = recd_mhd_connection_fd(connection)
        let request = HTTPRequest(
            method: method, path: url, query: values(connection, kind: .GET_ARGUMENT_KIND), headers: headers,
            fromLoopback: fromLoopback, carriesToken: carriesToken, peer: peer.flatMap(HTTPListenAddress.endpoint),
            local: socket >= 0 ? HTTPListenAddress.localEndpoint(of: socket) : nil, account: session?.account,
            body: body)
        if method != "GET" && method != "HEAD" {
            if let refusal = gate.map({ $0.checkUnsafe(request, session: session, cookies: cookies) })
                ?? Self.unsafeWithoutAccounts(request)
            {
                return queue(connection, refusal)
            }
        }
        if let gate, let answer = gate.answer(request, session: session, peer: request.peer?.addressText ?? "?") {
            return queue(connection, answer)
        }
        if !fromLoopback && !carriesToken && session == nil {
            if gate != nil && method == "GET" && (headers["accept"] ?? "").contains("text/html") {
                return queue(connection, HTTPLoginGate.redirect("/login?next=" + Self.queryEscaped(url)))
            }
            // Closed after the answer: a peer without the token keeps no connection (nor its thread).
            return queue(
                connection,
                .error(
                    401,
                    "Unauthorized: log in at /login, or send Authorization: Bearer TOKEN (the contents of recd's [http] token_file)",
                    headers: [("WWW-Authenticate", "Bearer realm=\"recd\""), ("Connection", "close")]))
        }
        guard let route = routes.route(for: url) else {
            return queue(connection, .error(404, "Not Found: \(url) is not one of recd's pages"))
        }
        return queue(connection, route.handler(request), range: headers["range"])
    }

    /// The CSRF rule without accounts: only the token's holders and this machine's non-browser
    /// clients change anything.
    private static func unsafeWithoutAccounts(_ request: HTTPRequest) -> HTTPResponse? {
        if request.carriesToken || (request.fromLoopback && request.headers["origin"] == nil) { return nil }
        return .error(403, "Forbidden: only a request with the bearer token, or from this machine, changes anything")
    }

    private static func queryEscaped(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            let keep =
                (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7a) || byte == 0x2f
                || byte == 0x2d || byte == 0x2e || byte == 0x5f
            out += keep ? String(UnicodeScalar(byte)) : "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }
        return out
    }

    /// Compares the bearer token in constant time (for its length). The scheme is
    /// case-insensitive (RFC 9110 §11.1): `Bearer`, `bearer`, `BEARER`.
    private func authorized(_ header: String?) -> Bool {
        guard let token, let given = header.flatMap(Self.bearerCredentials) else { return false }
        guard given.count == token.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(given, token) { difference |= a ^ b }
        return difference == 0
    }

    /// The credentials of `Authorization: Bearer TOKEN` (the scheme in any case, spaces around
    /// the token ignored); nil for any other scheme.
    static func bearerCredentials(_ header: String) -> [UInt8]? {
        let bytes = Array(header.utf8)
        let space = UInt8(ascii: " ")
        let start = bytes.firstIndex { $0 != space } ?? bytes.endIndex
        guard let gap = bytes[start...].firstIndex(of: space) else { return nil }
        let scheme = bytes[start..<gap].map { $0 | 0x20 }  // ASCII lower case (letters only matter)
        guard scheme == Array("bearer".utf8) else { return nil }
        var credentials = bytes[gap...].drop { $0 == space }
        while credentials.last == space { credentials = credentials.dropLast() }
        return Array(credentials)
    }

    /// Whether a request target holds `%00` (a NUL once decoded): libmicrohttpd's decoding cuts
    /// the path there, so `/a%00.txt` would reach a handler as `/a`.
    static func holdsEncodedNUL(_ target: UnsafePointer<CChar>) -> Bool {
        var cursor = target
        while cursor.pointee != 0 {
            if cursor.pointee == CChar(UInt8(ascii: "%")) && cursor[1] == CChar(UInt8(ascii: "0"))
                && cursor[2] == CChar(UInt8(ascii: "0"))
            {
                return true
            }
            cursor += 1
        }
        return false
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
            watch(stream, on: connection)
            made = MHD_create_response_from_callback(
                recd_mhd_size_unknown(), 4 * 1024,
                { cls, _, buffer, max in
                    let stream = Unmanaged<HTTPEventStream>.fromOpaque(cls!).takeUnretainedValue()
                    guard let bytes = stream.next(max: max) else { return recd_mhd_end_of_stream() }
                    bytes.withUnsafeBytes {
                        UnsafeMutableRawPointer(buffer!).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
                    }
                    return bytes.count
                },
                Unmanaged.passRetained(stream).toOpaque(),
                { cls in
                    let stream = Unmanaged<HTTPEventStream>.fromOpaque(cls!).takeRetainedValue()
                    stream.close()
                })
            if made == nil {
                Unmanaged.passUnretained(stream).release()
                stream.close()
            }
        }
        guard let made else { return .NO }
        defer { MHD_destroy_response(made) }
        MHD_add_response_header(made, "Content-Type", response.contentType)
        MHD_add_response_header(made, "X-Content-Type-Options", "nosniff")
        for (name, value) in extra { MHD_add_response_header(made, name, value) }
        return MHD_queue_response(connection, UInt32(status), made)
    }

    /// Puts an event stream under the sweep's watch and shrinks its socket's send buffer: a
    /// client that stops reading must fill recd's buffers in seconds, not after megabytes of
    /// kernel buffer (which took minutes at the meters' rate).
    private func watch(_ stream: HTTPEventStream, on connection: OpaquePointer) {
        state.withLock { state in
            let key = UInt(bitPattern: connection)
            guard let fd = state.connections[key]?.fd, fd >= 0 else { return }
            state.connections[key]!.stream = stream
            var size = Self.eventStreamSendBufferBytes
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }
}

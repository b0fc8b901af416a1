// libFuzzer target: request bytes against recd's real HTTP listener (HTTPServer over
// libmicrohttpd on 127.0.0.1, with its own threads, started once). Each input goes over a new
// TCP connection, which is then half-closed; whatever comes back must be HTTP answers with a
// status line, a 206 must carry a Content-Range inside the file and a body of its length, and
// the listener must answer a plain GET afterwards. The parsers the listener runs in Swift
// (Range, the bearer credentials, the %00 scan) also get the input directly. `/who` looks up
// the peer's socket owner as recd's `/archive/` route does (Platform's TCPConnectionOwner, the
// real /proc/self/net/tcp): every connection is the fuzzer's own, so an owner found must be
// the fuzzer's uid.
// Built and run by fuzz/run (swiftc -sanitize=fuzzer,address); not part of the package.
import Glibc
import Platform

@testable import HTTPServer

/// A failed check stops the fuzzer with its message (precondition's is dropped at -O).
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// The file `/files/` serves: 1000 known bytes.
let filePath: String = {
    let path = "/tmp/recd-http-fuzz-\(getpid()).bin"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    let bytes = (0..<1000).map { UInt8($0 % 251) }
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    return path
}()

let server: HTTPServer = {
    var routes = HTTPServer.Routes()
    routes.add("/") { _ in .text("hi") }
    routes.add("/events") { _ in
        let stream = HTTPEventStream(maxQueuedBytes: 4096, keepAliveSeconds: 0.1, stallSeconds: 1)
        stream.send(event: "meters", data: "{\"peak\":-12}\nsecond line")
        stream.close()
        return .events(stream)
    }
    routes.add("/who") { request in
        guard let peer = request.peer, let local = request.local else { fatalError("a request without its two ends") }
        check(request.fromLoopback && peer.address.first == 127, "a peer off loopback: \(peer)")
        let answer = TCPConnectionOwner.owner(
            ofClient: TCPEndpoint(address: peer.address, port: peer.port),
            connectedTo: TCPEndpoint(address: local.address, port: local.port))
        switch answer {
        case .owner(let uid):
            check(uid == getuid(), "the fuzzer's own connection owned by uid \(uid)")
            return .text("\(uid)")
        case .notFound:
            // The fuzzer gave up on the answer and closed its socket (a slow, pipelined input).
            return .error(403, "Forbidden: not found")
        case .unreadable(let why):
            fatalError("the kernel's table unreadable: \(why)")
        }
    }
    routes.addPrefix("/files/") { request in
        check(!request.path.isEmpty, "a handler saw an empty path")
        let fd = open(filePath, O_RDONLY | O_CLOEXEC)
        return HTTPResponse(contentType: "application/octet-stream", body: .file(descriptor: fd, size: 1000))
    }
    do {
        return try HTTPServer(
            address: HTTPListenAddress(parsing: "127.0.0.1:0"), token: nil, routes: routes,
            limits: .init(idleTimeoutSeconds: 2, headTimeoutSeconds: 1))
    } catch {
        fatalError("cannot start the listener: \(error)")
    }
}()

/// Connections made so far (the fuzzer runs one input at a time).
nonisolated(unsafe) var connectionCount: UInt32 = 0

/// A TCP connection to the listener (blocking, with a receive timeout).
func connectToServer() -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    check(fd >= 0, "socket: errno \(errno)")
    // Each connection from another loopback address (127.1.0.0/16 and up): the half-close
    // leaves the client in TIME_WAIT, and at hundreds of connections a second one source
    // address would run out of ephemeral ports within a minute.
    connectionCount &+= 1
    var source = sockaddr_in()
    source.sin_family = sa_family_t(AF_INET)
    source.sin_addr.s_addr = (UInt32(0x7f01_0000) &+ (connectionCount % 0x00fe_0000)).bigEndian
    var noPort: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_IP), IP_BIND_ADDRESS_NO_PORT, &noPort, socklen_t(MemoryLayout<Int32>.size))
    let bound = withUnsafePointer(to: &source) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    check(bound == 0, "bind: errno \(errno)")
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = server.port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    // libFuzzer's timer signal can interrupt connect; the connection then completes on its own.
    if connected != 0 && errno == EINTR {
        var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        _ = poll(&entry, 1, 3000)
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
        check(failure == 0, "the listener refused a connection: errno \(failure)")
    } else {
        check(connected == 0, "the listener refused a connection: errno \(errno)")
    }
    var timeout = timeval(tv_sec: 3, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    return fd
}

/// Sends `bytes`, half-closes, and reads until the listener closes (or 3 s pass).
func exchange(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
    let fd = connectToServer()
    defer { close(fd) }
    var sent = 0
    while sent < bytes.count {
        let n = send(fd, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }  // the listener may close early (a 431, a refused request)
        sent += n
    }
    shutdown(fd, Int32(SHUT_WR))
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while answer.count < 1 << 20 {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        answer += buffer[..<n]
    }
    return answer
}

/// Where `pattern` first occurs in `bytes`.
func find(_ pattern: [UInt8], in bytes: ArraySlice<UInt8>) -> Int? {
    guard bytes.count >= pattern.count else { return nil }
    return (bytes.startIndex...(bytes.endIndex - pattern.count)).first {
        bytes[$0..<($0 + pattern.count)].elementsEqual(pattern)
    }
}

/// The first answer's status, headers (lower-case names) and the bytes after its head.
func firstAnswer(_ bytes: [UInt8]) -> (status: Int, headers: [String: String], rest: ArraySlice<UInt8>)? {
    guard let end = find(Array("\r\n\r\n".utf8), in: bytes[...]) else { return nil }
    var lines: [String] = []
    var start = 0
    while let lineEnd = find([13, 10], in: bytes[start..<(end + 2)]) {
        lines.append(String(decoding: bytes[start..<lineEnd], as: UTF8.self))
        start = lineEnd + 2
    }
    let statusLine = lines.first ?? ""
    check(
        statusLine.hasPrefix("HTTP/1.1 ") || statusLine.hasPrefix("HTTP/1.0 "), "no status line: \(statusLine)")
    let code = statusLine.dropFirst(9).prefix(3)
    guard let status = Int(code), (100...599).contains(status) else {
        fatalError("a status line without a status: \(statusLine)")
    }
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...].drop { $0 == " " })
    }
    return (status, headers, bytes[(end + 4)...])
}

@_cdecl("LLVMFuzzerTestOneInput")
public func httpFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let text = String(decoding: input, as: UTF8.self)

    // The parsers, in process.
    switch ByteRange.parse(text, size: 1000) {
    case .part(let first, let last): check(first <= last && last < 1000, "range \(first)-\(last)")
    case .whole, .unsatisfiable: break
    }
    if let credentials = HTTPServer.bearerCredentials(text) {
        check(credentials.count <= text.utf8.count, "credentials longer than the header")
    }
    let nul = text.utf8CString.withUnsafeBufferPointer { HTTPServer.holdsEncodedNUL($0.baseAddress!) }
    check(
        nul == text.prefix { $0 != "\0" }.contains("%00"), "the %00 scan disagrees on \(text.debugDescription)")

    // The listener.
    let answer = exchange(input)
    if !answer.isEmpty {
        guard let (status, headers, rest) = firstAnswer(answer) else {
            check(
                answer.starts(with: Array("HTTP/1.".utf8)),
                "an answer that is not HTTP: \(String(decoding: answer.prefix(200), as: UTF8.self).debugDescription)")
            return 0
        }
        check(status != 500, "the listener answered 500 to \(text.prefix(300).debugDescription)")
        if status == 206 {
            let range = headers["content-range"] ?? ""
            let parts = range.dropFirst("bytes ".count).split(whereSeparator: { $0 == "-" || $0 == "/" })
            check(
                range.hasPrefix("bytes ") && parts.count == 3 && parts[2] == "1000", "a 206 with Content-Range \(range)"
            )
            let first = Int(parts[0])!, last = Int(parts[1])!
            check(first <= last && last < 1000, "a 206 outside the file: \(range)")
            check(headers["content-length"] == String(last - first + 1), "a 206 whose length is not its range")
            if headers["transfer-encoding"] == nil && rest.count >= last - first + 1 {
                let expected = (first...last).map { UInt8($0 % 251) }
                check(Array(rest.prefix(last - first + 1)) == expected, "a 206 with the wrong bytes")
            }
        }
    }

    // Still serving: a plain GET is answered (three tries, 3 s each: a loaded machine can be slow).
    let probe = Array("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
    var answers: [String] = []
    for _ in 0..<3 {
        let check = probe.withUnsafeBytes { exchange($0) }
        if firstAnswer(check)?.status == 200 { return 0 }
        answers.append(String(decoding: check.prefix(200), as: UTF8.self).debugDescription)
    }
    fatalError("the listener stopped serving after \(text.prefix(300).debugDescription): \(answers)")
}

// The HTTP listener on its own (real libmicrohttpd, real TCP sockets on 127.0.0.1): address
// parsing, files with Range requests, event streams. The limits and the token are tested
// against the real recd (EndToEndTests/HTTPTests.swift).
import Foundation
import TestSupport
import Testing

@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

@Suite("HTTP listener: addresses, files with Range, event streams")
struct HTTPServerTests {
    @Test(
        "listen addresses: IPv4 and bracketed IPv6 literals with a port; names, missing ports and bad ports are refused with what to write"
    )
    func addresses() throws {
        let loopback = try HTTPListenAddress(parsing: "127.0.0.1:9720")
        #expect(loopback.host == "127.0.0.1" && loopback.port == 9720 && loopback.isLoopback && !loopback.isIPv6)
        #expect(try HTTPListenAddress(parsing: "127.3.4.5:1").isLoopback)
        #expect(try !HTTPListenAddress(parsing: "0.0.0.0:9720").isLoopback)
        let six = try HTTPListenAddress(parsing: "[::1]:9720")
        #expect(six.isIPv6 && six.isLoopback && six.description == "[::1]:9720")
        #expect(try !HTTPListenAddress(parsing: "[::]:80").isLoopback)
        for bad in [
            "localhost:9720", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "::1:9720", "[::1]9720", "1.2.3:80", "",
        ] {
            #expect(throws: HTTPServerError.self, "\(bad)") { try HTTPListenAddress(parsing: bad) }
        }
        do {
            _ = try HTTPListenAddress(parsing: "localhost:9720")
        } catch {
            #expect(error.message.contains("listen = 127.0.0.1:9720"), "says what to write: \(error.message)")
        }
    }

    @Test("a non-loopback address without a token is refused before anything listens")
    func tokenRequiredOffLoopback() throws {
        #expect(throws: HTTPServerError.self) {
            _ = try HTTPServer(address: HTTPListenAddress(parsing: "0.0.0.0:0"), token: nil, routes: .init())
        }
    }

    @Test(
        "Range parsing: one range, open and suffix forms, clamped; past the end unsatisfiable; several ranges serve the whole"
    )
    func ranges() {
        #expect(ByteRange.parse(nil, size: 100) == .whole)
        #expect(ByteRange.parse("bytes=0-9", size: 100) == .part(first: 0, last: 9))
        #expect(ByteRange.parse("bytes=90-", size: 100) == .part(first: 90, last: 99))
        #expect(ByteRange.parse("bytes=-10", size: 100) == .part(first: 90, last: 99))
        #expect(ByteRange.parse("bytes=-1000", size: 100) == .part(first: 0, last: 99))
        #expect(ByteRange.parse("bytes=50-1000", size: 100) == .part(first: 50, last: 99))
        #expect(ByteRange.parse("bytes=100-", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-0", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=0-1,5-6", size: 100) == .whole)
        #expect(ByteRange.parse("items=0-1", size: 100) == .whole)
        #expect(ByteRange.parse("bytes=9-3", size: 100) == .whole)
    }

    /// A file of `count` known bytes (i % 251).
    private static func knownFile(_ count: Int) throws -> (String, [UInt8]) {
        let path = NSTemporaryDirectory() + "recd-http-\(UUID().uuidString)"
        let bytes = (0..<count).map { UInt8($0 % 251) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (path, bytes)
    }

    @Test("a file: whole with Accept-Ranges, 206 with Content-Range for a range, 416 past the end; HEAD has no body")
    func files() throws {
        let (path, bytes) = try Self.knownFile(100_000)
        defer { unlink(path) }
        var routes = HTTPServer.Routes()
        routes.addPrefix("/files/") { _ in
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            return HTTPResponse(contentType: "audio/flac", body: .file(descriptor: fd, size: UInt64(bytes.count)))
        }
        let server = try HTTPServer(address: HTTPListenAddress(parsing: "127.0.0.1:0"), token: nil, routes: routes)
        defer { server.stop() }
        let whole = try HTTPTestClient.get(port: server.port, path: "/files/a.flac")
        #expect(whole.status == 200 && whole.body == bytes && whole.headers["accept-ranges"] == "bytes")
        #expect(whole.headers["content-type"] == "audio/flac")
        let part = try HTTPTestClient.get(
            port: server.port, path: "/files/a.flac", headers: ["Range": "bytes=1000-1999"])
        #expect(part.status == 206 && part.body == Array(bytes[1000...1999]))
        #expect(part.headers["content-range"] == "bytes 1000-1999/100000")
        let tail = try HTTPTestClient.get(port: server.port, path: "/files/a.flac", headers: ["Range": "bytes=-10"])
        #expect(tail.status == 206 && tail.body == Array(bytes[99_990...]))
        let past = try HTTPTestClient.get(port: server.port, path: "/files/a.flac", headers: ["Range": "bytes=100000-"])
        #expect(past.status == 416 && past.headers["content-range"] == "bytes */100000")
        let head = try HTTPTestClient.get(port: server.port, path: "/files/a.flac", method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] == "100000")
        let missing = try HTTPTestClient.get(port: server.port, path: "/other")
        #expect(missing.status == 404)
    }

    @Test(
        "an event stream: events arrive as they are sent, keep-alive comments in between, the stream ends when the client goes"
    )
    func eventStream() throws {
        let opened = Locked<HTTPEventStream?>(nil)
        var routes = HTTPServer.Routes()
        routes.add("/events") { _ in
            let stream = HTTPEventStream(keepAliveSeconds: 0.3)
            opened.set(stream)
            return .events(stream)
        }
        let server = try HTTPServer(address: HTTPListenAddress(parsing: "127.0.0.1:0"), token: nil, routes: routes)
        defer { server.stop() }
        let connection = try HTTPTestConnection(host: "127.0.0.1", port: server.port)
        connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = connection.read(until: "\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.1 200") && head.contains("Content-Type: text/event-stream"), "\(head)")
        var stream: HTTPEventStream?
        for _ in 0..<100 where stream == nil {
            stream = opened.get()
            usleep(10_000)
        }
        let feed = try #require(stream)
        #expect(feed.send(event: "meter", data: "{\"peak\":-12}"))
        #expect(connection.read(until: "\n\n").contains("event: meter\ndata: {\"peak\":-12}\n\n"))
        #expect(connection.read(until: ": keep-alive", timeout: 2).contains(": keep-alive"))
        #expect(feed.send(data: "two\nlines"))
        #expect(connection.read(until: "lines").contains("data: two\ndata: lines"))
        connection.hangUp()
        // The next keep-alive finds the client gone; the stream closes and refuses events.
        var closed = false
        for _ in 0..<50 where !closed {
            _ = feed.send(data: "x")
            closed = feed.isClosed
            usleep(100_000)
        }
        #expect(closed, "the stream saw its client go")
    }

    @Test("an idle connection (a request head never finished) is closed after the idle limit")
    func idleTimeout() throws {
        var routes = HTTPServer.Routes()
        routes.add("/") { _ in .text("hi") }
        let server = try HTTPServer(
            address: HTTPListenAddress(parsing: "127.0.0.1:0"), token: nil, routes: routes,
            limits: .init(idleTimeoutSeconds: 1))
        defer { server.stop() }
        let connection = try HTTPTestConnection(host: "127.0.0.1", port: server.port)
        connection.send("GET / HTTP/1.1\r\nHost: x\r\n")
        let began = Date()
        let rest = connection.readAll(timeout: 4)
        let waited = Date().timeIntervalSince(began)
        #expect(rest.isEmpty && waited > 0.5 && waited < 3, "closed after \(waited) s with \(rest.count) bytes")
    }
}

/// A value shared with a handler's thread.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) { self.value = value }

    func get() -> Value { lock.withLock { value } }

    func set(_ newValue: Value) { lock.withLock { value = newValue } }

    /// Reads and changes the value in one step.
    func update<Result>(_ change: (inout Value) -> Result) -> Result { lock.withLock { change(&value) } }
}

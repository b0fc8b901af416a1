// The listener's logins on loopback (Sources/HTTPServer/HTTPLogin.swift), with short times so
// that expiry and the throttle's end are seen: sessions end at their time, the throttle lifts
// after its time, the CSRF rule for POST routes, bodies bounded.
import Foundation
import HTTPServer
import TestSupport
import Testing

@Suite("HTTP logins: sessions, throttle, CSRF, bodies", .serialized)
struct HTTPLoginTests {
    static func server(sessionSeconds: Double = 60, maxFailures: Int = 3, throttleSeconds: Double = 1) throws
        -> HTTPServer
    {
        var routes = HTTPServer.Routes()
        routes.add("/who") { .text($0.account ?? "-") }
        routes.add("/change", methods: ["POST"]) { .text("changed " + String(decoding: $0.body, as: UTF8.self)) }
        let login = HTTPLogin(
            verify: { $0 == "anna" && $1 == "right" }, accountExists: { $0 == "anna" },
            newSecret: {
                UUID().uuidString.replacingOccurrences(of: "-", with: "") + String(repeating: "0", count: 32)
            },
            loginPage: { message, _ in "login \(message ?? "")" }, logoutPage: { account, _ in "logout \(account)" },
            audit: { _ in }, sessionSeconds: sessionSeconds, maxFailures: maxFailures,
            throttleSeconds: throttleSeconds)
        return try HTTPServer(
            address: HTTPListenAddress(parsing: "127.0.0.1:0"), token: nil, routes: routes, login: login)
    }

    /// One request with a body; the answer parsed.
    static func send(
        _ port: UInt16, _ method: String, _ path: String, body: String = "", headers: [String: String] = [:]
    ) throws -> HTTPTestResponse {
        let connection = try HTTPTestConnection(host: "127.0.0.1", port: port)
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if method == "POST" {
            request += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n"
        }
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        _ = connection.send(request + "\r\n" + body)
        let bytes = connection.readAll(timeout: 10)
        return try #require(HTTPTestConnection.parse(bytes), "no answer to \(method) \(path)")
    }

    /// Logs anna in; the Cookie header value and the CSRF token.
    static func logIn(_ port: UInt16) throws -> (cookie: String, csrf: String) {
        let answer = try send(port, "POST", "/login", body: "account=anna&password=right&next=/who")
        #expect(answer.status == 303 && answer.headers["location"] == "/who", "\(answer.status)")
        // The parser keeps the last Set-Cookie: the CSRF one; the session's id is asked of /api/session below.
        let raw = answer.headers["set-cookie"] ?? ""
        let csrf = String(raw.split(separator: ";")[0].split(separator: "=")[1])
        return (csrf, csrf)
    }

    @Test("a session ends at its time; a removed or unknown cookie is no session")
    func sessionExpires() throws {
        let server = try Self.server(sessionSeconds: 1)
        defer { server.stop() }
        let connection = try HTTPTestConnection(host: "127.0.0.1", port: server.port)
        _ = connection.send(
            "POST /login HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 27\r\n\r\naccount=anna&password=right"
        )
        let raw = String(decoding: connection.readAll(timeout: 10), as: UTF8.self)
        let session = try #require(
            raw.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("set-cookie: recd_session=") }
        ).dropFirst("set-cookie: ".count).split(separator: ";")[0]
        #expect(try Self.send(server.port, "GET", "/who", headers: ["Cookie": String(session)]).text == "anna")
        #expect(
            try Self.send(
                server.port, "GET", "/who", headers: ["Cookie": "recd_session=" + String(repeating: "a", count: 64)]
            ).text == "-")
        #expect(
            try eventually(timeout: 5) {
                try Self.send(server.port, "GET", "/who", headers: ["Cookie": String(session)]).text == "-"
            }, "the session outlived its 1 s")
    }

    @Test("3 wrong passwords: 429 with Retry-After, the right one too; after the throttle's 1 s the right one logs in")
    func throttleLifts() throws {
        let server = try Self.server()
        defer { server.stop() }
        for _ in 1...3 {
            #expect(try Self.send(server.port, "POST", "/login", body: "account=anna&password=wrong").status == 401)
        }
        let blocked = try Self.send(server.port, "POST", "/login", body: "account=anna&password=right")
        #expect(blocked.status == 429 && blocked.headers["retry-after"] == "1", "\(blocked.status) \(blocked.headers)")
        #expect(
            try eventually(timeout: 5) {
                try Self.send(server.port, "POST", "/login", body: "account=anna&password=right").status == 303
            })
    }

    @Test(
        "POST routes: the CSRF rule; a foreign Origin refused; 405 for POST to a GET route; 413 past 16 KiB; a late body cut at the head deadline"
    )
    func csrfAndBodies() throws {
        let server = try Self.server()
        defer { server.stop() }
        let port = server.port
        // This machine's shell (no Origin, no cookie): allowed.
        let shell = try Self.send(port, "POST", "/change", body: "x=1")
        #expect(shell.status == 200 && shell.text == "changed x=1", "\(shell.status) \(shell.text)")
        #expect(
            try Self.send(port, "POST", "/change", body: "x=1", headers: ["Origin": "https://evil.example"]).status
                == 403)
        let (csrf, _) = try Self.logIn(port)
        let withCookie = ["Cookie": "recd_csrf=\(csrf)"]
        // A cookie but no session (the CSRF cookie alone): a browser's mark, so refused.
        #expect(try Self.send(port, "POST", "/change", body: "x=1", headers: withCookie).status == 403)
        #expect(try Self.send(port, "POST", "/who", body: "x=1").status == 405)
        let big = try Self.send(port, "POST", "/change", body: String(repeating: "a", count: 17 * 1024))
        #expect(big.status == 413, "\(big.status)")
        // A body trickled (or never sent) is under the head's 5 s deadline: the connection is shut
        // down then (its 408 may be lost to the reset of the unread body), not held for ever.
        let slow = try HTTPTestConnection(host: "127.0.0.1", port: port)
        _ = slow.send("POST /change HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nx=")
        let began = Date()
        let late = HTTPTestConnection.parse(slow.readAll(timeout: 30))
        let held = Date().timeIntervalSince(began)
        #expect((late == nil || late?.status == 408) && held < 8, "\(String(describing: late?.status)) after \(held) s")
        #expect(try Self.send(port, "GET", "/who").status == 200, "still serving")
    }
}

// Who asks over HTTP (HTTPCallerRule): the token's token_user, the owner of a loopback peer's
// socket in the kernel's table (crafted tables here; the real ones in SystemSupportTests'
// TCPConnectionOwnerTests and end to end in HTTPCallerRightsTests), and a 403 that says what
// to do when there is none.
import Foundation
import HTTPServer
import Platform
import Testing

@testable import Daemon

@Suite("HTTP callers")
struct HTTPCallerTests {
    static let peer = HTTPSocketAddress(address: [127, 0, 0, 1], port: 40000)
    static let local = HTTPSocketAddress(address: [127, 0, 0, 1], port: 9720)

    /// A table holding one socket of `uid` at 127.0.0.1:40000 connected to 127.0.0.1:9720.
    static func table(uid: UInt32) throws -> String {
        let path = NSTemporaryDirectory() + "recd-http-caller-\(getpid())-\(uid)"
        try """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           7: 0100007F:9C40 0100007F:25F8 01 00000000:00000000 00:00000000 00000000 \(uid)        0 4242 1 0 20 4 30 10 -1

        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func request(fromLoopback: Bool = true, carriesToken: Bool = false) -> HTTPRequest {
        HTTPRequest(
            method: "GET", path: "/archive/x.flac", fromLoopback: fromLoopback, carriesToken: carriesToken,
            peer: peer, local: local)
    }

    @Test("loopback: the owner of the peer's socket, with the groups the user database gives it")
    func loopbackOwner() throws {
        let path = try Self.table(uid: 65534)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let rule = HTTPCallerRule(tokenUser: nil, tables: [path])
        guard case .caller(let caller) = rule.caller(of: Self.request()) else {
            Issue.record("no caller")
            return
        }
        #expect(caller.uid == 65534)
        if let nobody = UserDatabase.user(uid: 65534) {
            #expect(caller.groups.contains(nobody.gid))
            #expect(caller.shown == "uid 65534 (\(nobody.name))")
        }
    }

    @Test("loopback without a socket in the table: 403 saying recd cannot tell who asks, and what to do")
    func loopbackUnknown() throws {
        let path = try Self.table(uid: 0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let rule = HTTPCallerRule(tokenUser: nil, tables: [path])
        var request = Self.request()
        request.peer = HTTPSocketAddress(address: [127, 0, 0, 1], port: 40001)
        guard case .refused(let answer) = rule.caller(of: request), case .bytes(let body) = answer.body else {
            Issue.record("a caller was found for a socket the table does not hold")
            return
        }
        let text = String(decoding: body, as: UTF8.self)
        #expect(answer.status == 403)
        #expect(text.contains("cannot tell which user") && text.contains("127.0.0.1:40001"), "\(text)")
        #expect(text.contains("recctl archive export"), "\(text)")
        // A table that cannot be read says so.
        let unreadable = HTTPCallerRule(tokenUser: nil, tables: [path + "-missing-dir/tcp", "/proc/self/mem"])
        guard case .refused(let refusal) = unreadable.caller(of: Self.request()) else {
            Issue.record("a caller from unreadable tables")
            return
        }
        #expect(refusal.status == 403)
    }

    @Test("the token: token_user's rights wherever the request came from; without token_user, 403 naming it")
    func token() throws {
        let path = try Self.table(uid: 65534)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let none = HTTPCallerRule(tokenUser: nil, tables: [path])
        for fromLoopback in [false, true] {
            guard
                case .refused(let answer) = none.caller(
                    of: Self.request(fromLoopback: fromLoopback, carriesToken: true)),
                case .bytes(let body) = answer.body
            else {
                Issue.record("the token read without token_user")
                return
            }
            #expect(answer.status == 403 && String(decoding: body, as: UTF8.self).contains("token_user"))
        }
        let root = try #require(UserDatabase.user(named: "root"))
        let rule = HTTPCallerRule(tokenUser: root, tables: [path])
        for fromLoopback in [false, true] {
            guard
                case .caller(let caller) = rule.caller(of: Self.request(fromLoopback: fromLoopback, carriesToken: true))
            else {
                Issue.record("no caller with the token")
                return
            }
            #expect(caller.uid == 0 && caller.shown == "token_user root (uid 0)")
        }
        // Off the box without the token the listener has answered 401 already; a handler that
        // saw one anyway finds no caller.
        guard case .refused = rule.caller(of: Self.request(fromLoopback: false)) else {
            Issue.record("a caller off the box without the token")
            return
        }
    }
}

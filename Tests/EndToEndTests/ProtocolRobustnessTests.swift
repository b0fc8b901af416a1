// Bad clients against a real recd: each gets an error or is dropped; the daemon and the
// other clients go on.
import ControlProtocol
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("control socket robustness")
struct ProtocolRobustnessTests {
    @Test("malformed requests get badParam replies with the request id where readable")
    func malformed() throws {
        let daemon = try Daemon()
        let client = try RawClient(path: daemon.socket)
        let cases: [(String, JSONValue)] = [
            ("this is not json", .null),
            ("[1,2,3]", .null),
            ("{\"id\":7}", 7),
            ("{\"id\":8,\"op\":\"no.such.op\"}", 8),
            ("{\"id\":9,\"op\":\"status\",\"v\":99}", 9),
            ("{\"id\":10,\"op\":\"session.set\",\"app\":\"x\",\"category\":5}", 10),
            ("{\"id\":11,\"op\":\"session.set\",\"app\":\"../../etc\",\"category\":\"playback\"}", 11),
            ("{\"id\":{\"nested\":1},\"op\":\"status\"}", .null),
        ]
        for (line, id) in cases {
            client.send(line + "\n")
            let reply = try #require(client.readJSON(), "no reply to \(line)")
            #expect(reply["ok"] == false && reply["id"] == id, "\(line) → \(reply.jsonText)")
            #expect(reply["error"]?["name"] == "badParam" && reply["error"]?["code"]?.intValue == -50)
            #expect((reply["error"]?["message"]?.stringValue ?? "").count > 10)
        }
        client.send("{\"id\":12,\"op\":\"hello\"}\n")
        #expect(client.readJSON()?["protocol"]?.intValue == protocolVersion)
    }

    @Test("binary garbage, oversized lines, slow and half-closed clients never stop the daemon")
    func hostileClients() throws {
        let daemon = try Daemon()
        let bystander = try RawClient(path: daemon.socket)

        let garbage = try RawClient(path: daemon.socket)
        var generator = SystemRandomNumberGenerator()
        garbage.send((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) } + [0x0A])

        let oversized = try RawClient(path: daemon.socket)
        oversized.send([UInt8](repeating: 0x41, count: maxRequestLineBytes + 10))
        let rejection = oversized.readJSON()
        #expect(rejection?["error"]?["name"] == "badParam")
        #expect(oversized.readLine() == nil, "an oversized client is dropped")

        // Half-closed: send requests, shut down the write side, still get every reply.
        let halfClosed = try RawClient(path: daemon.socket)
        halfClosed.send("{\"id\":1,\"op\":\"hello\"}\n{\"id\":2,\"op\":\"session.list\"}\n")
        shutdown(halfClosed.fd, Int32(SHUT_WR))
        #expect(halfClosed.readJSON()?["id"] == 1)
        #expect(halfClosed.readJSON()?["id"] == 2)

        // A request split across writes is reassembled.
        let slow = try RawClient(path: daemon.socket)
        for piece in ["{\"id\":3,", "\"op\":", "\"hello\"}", "\n"] {
            slow.send(piece)
            usleep(20_000)
        }
        #expect(slow.readJSON()?["id"] == 3)

        bystander.send("{\"id\":99,\"op\":\"status\"}\n")
        #expect(bystander.readJSON()?["ok"] == true)
        #expect(try daemon.recctl("status").status == 0)
        #expect(daemon.process?.isRunning == true)
    }

    @Test("100 concurrent clients are all served")
    func concurrentClients() throws {
        let daemon = try Daemon()
        let served = Locked(0)
        let group = DispatchGroup()
        for index in 0..<100 {
            group.enter()
            let socket = daemon.socket
            Thread.detachNewThread {
                defer { group.leave() }
                guard let client = try? RawClient(path: socket) else { return }
                var ok = 0
                for request in 0..<10 {
                    client.send("{\"id\":\(request),\"op\":\"session.set\",\"app\":\"c\(index)\",\"category\":\"ambient\"}\n")
                    if client.readJSON()?["ok"] == true { ok += 1 }
                }
                if ok == 10 { served.withLock { $0 += 1 } }
            }
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(served.withLock { $0 } == 100)
        let list = try #require(daemon.recctl("--json", "session", "list").json?.arrayValue)
        #expect(list.count == 100)
    }
}

// One key case on the wire: version 2 replies and events are camelCase throughout; a client
// that speaks version 1 (no "v", or "v":1) still gets version 1's spellings.
import ControlProtocol
import Foundation
import Testing

/// Every key of a JSON value, at any depth.
func allKeys(_ value: JSONValue) -> [String] {
    switch value {
    case .object(let pairs): pairs.flatMap { [$0.0] + allKeys($0.1) }
    case .array(let items): items.flatMap(allKeys)
    default: []
    }
}

@Suite("protocol versions and key spelling", .serialized)
struct ProtocolVersionTests {
    @Test("version 2 replies and events carry no snake_case key; version 1 clients get their old spellings")
    func oneKeyCase() throws {
        let daemon = try Daemon()
        try #require(
            daemon.recctl("session", "set", "radio", "--category", "playback", "--options", "duckOthers", "--mic-usage", "m")
                .status == 0)
        try #require(daemon.recctl("session", "set", "music", "--category", "playback", "--options", "mixWithOthers").status == 0)
        let modern = try RawClient(path: daemon.socket)
        let legacy = try RawClient(path: daemon.socket)
        var id = 0
        func ask(_ client: RawClient, _ version: Int?, _ body: String) throws -> JSONValue {
            id += 1
            let v = version.map { #","v":\#($0)"# } ?? ""
            client.send(#"{"id":\#(id)\#(v),"#  + body.dropFirst() + "\n")
            while true {
                let line = try #require(client.readJSON(), "no reply to \(body)")
                if line["id"]?.intValue == id { return line }
            }
        }
        let requests = [
            #"{"op":"status"}"#, #"{"op":"session.show","app":"radio"}"#, #"{"op":"session.list"}"#, #"{"op":"routes"}"#,
            #"{"op":"meter"}"#, #"{"op":"archive.list"}"#, #"{"op":"permission.list"}"#, #"{"op":"hello"}"#,
        ]
        var snakeSeenInVersion1 = Set<String>()
        for request in requests {
            let reply = try ask(modern, 2, request)
            #expect(reply["ok"] == true, "\(request): \(reply)")
            let snake = allKeys(reply).filter { $0.contains("_") }
            #expect(snake.isEmpty, "\(request) answered version 2 with \(snake)")
            let old = try ask(legacy, nil, request)
            snakeSeenInVersion1.formUnion(allKeys(old).filter { $0.contains("_") })
            // The same content, keys renamed back: nothing but spelling differs.
            let renamed = WireKeys.line(reply.jsonText, forVersion: 1)
            #expect(Set(allKeys(try JSONValue.parse(renamed))) == Set(allKeys(old)), "\(request): \(renamed) vs \(old)")
        }
        #expect(snakeSeenInVersion1.isSuperset(of: ["owner_uid", "mic_usage", "requested_options", "streams_running"]))
        let show = try ask(modern, 2, #"{"op":"session.show","app":"radio"}"#)
        #expect(show["session"]?["ownerUID"]?.intValue == 0 && show["session"]?["micUsage"] == "m")
        #expect(try ask(legacy, 1, #"{"op":"session.show","app":"radio"}"#)["session"]?["owner_uid"]?.intValue == 0)

        // Events follow the watcher's version too: a ducking event.
        let watcherModern = try RawClient(path: daemon.socket)
        let watcherLegacy = try RawClient(path: daemon.socket)
        _ = try ask(watcherModern, 2, #"{"op":"watch"}"#)
        _ = try ask(watcherLegacy, nil, #"{"op":"watch"}"#)
        try #require(daemon.recctl("session", "activate", "music").status == 0)
        try #require(daemon.recctl("session", "activate", "radio").status == 0)
        var modernEventKeys: [String] = []
        func ducked(_ client: RawClient) -> JSONValue? {
            for _ in 0..<20 {
                guard let line = client.readJSON() else { return nil }
                if client === watcherModern { modernEventKeys += allKeys(line) }
                if line["event"] == "ducked" { return line }
            }
            return nil
        }
        let modernEvent = try #require(ducked(watcherModern))
        let legacyEvent = try #require(ducked(watcherLegacy))
        #expect(modernEvent["levelDB"] != nil && modernEvent["level_db"] == nil, "\(modernEvent)")
        #expect(legacyEvent["level_db"] != nil && legacyEvent["levelDB"] == nil, "\(legacyEvent)")
        #expect(modernEventKeys.count > 5 && modernEventKeys.allSatisfy { !$0.contains("_") }, "\(modernEventKeys)")
    }
}

// Typed requests: every op survives encode → line → decode; arguments are checked by type
// with errors naming the key; version-1 spellings still decode; the fixed validation order.

import Foundation
import Testing

@testable import ControlProtocol
@testable import SessionPolicy

/// One command of every op, with its optional arguments set where it has any.
let everyCommand: [Command] = [
    .hello, .status, .sessionList(offset: 0, limit: nil), .sessionList(offset: 512, limit: 100),
    .sessionShow(app: "radio"),
    .sessionSet(
        SessionSettings(
            app: "radio", category: .playAndRecord, mode: .voiceChat, options: [.allowBluetoothHFP, .duckOthers],
            policy: .default, micUsage: .some("calls"), prefersInterruptionOnRouteDisconnect: true,
            prefersNoInterruptionsFromSystemAlerts: false)),
    .sessionSet(SessionSettings(app: "plain", category: .ambient)),
    .sessionSet(SessionSettings(app: "quiet", category: .playback, prefersNoInterruptionsFromSystemAlerts: true)),
    .sessionSet(SessionSettings(app: "cleared", category: .record, micUsage: .some(nil))),
    .sessionActivate(app: "radio"), .sessionActivate(app: "radio", hold: true),
    .sessionDeactivate(app: "radio", notifyOthers: true, force: false),
    .sessionPrefer(
        PreferenceChange(
            app: "radio", clear: true, input: "usb", sampleRate: 48_000, ioBuffer: 0.005, inputChannels: 2,
            outputChannels: 4)),
    .sessionPrefer(PreferenceChange(app: "radio", prefersNoInterruptionsFromSystemAlerts: true)),
    .sessionPrefer(PreferenceChange(app: "call", prefersEchoCancelledInput: true)),
    .sessionOverride(app: "radio", speaker: true), .sessionOverride(app: "radio", speaker: false),
    .sessionDelete(app: "radio"), .permissionList, .permissionRequest(app: "logger"),
    .permissionDecide(app: "logger", .granted), .permissionDecide(app: "logger", .denied),
    .permissionDecide(app: "logger", .undetermined), .mute(app: "radio", muted: true), .watch(app: nil),
    .watch(app: "radio"), .unwatch, .routes,
    .play(PlayRequest(app: "dj", file: "/music/a.flac", stream: "deckA", to: PlayTarget(port: "pa", channels: [1, 2]))),
    .play(PlayRequest(app: "dj")), .pause(app: "dj", stream: "deckA"), .stop(app: "dj", stream: nil),
    .recordStart(RecordStartRequest(app: "logger", stream: "mic", input: "mic", bus: nil)),
    .recordStart(RecordStartRequest(app: "dj", bus: "main")), .recordStop(app: "logger", stream: nil),
    .recordStart(RecordStartRequest(app: "taker", triggerDB: -30, holdSeconds: 2.5)),
    .archiveList(app: "logger", since: "2026-11-29"), .archiveList(app: nil, since: nil),
    .archiveList(app: nil, since: nil, offset: 2000, limit: 10),
    .archiveVerify(path: "2026/12/01/x.flac", progress: false), .archiveVerify(path: nil, progress: true),
    .archiveReindex, .meter(app: nil),
    .archiveExport(ExportRequest(app: "radio", from: "2026-12-01T10:02:00Z", to: "2026-12-01T11:07:00+01:00", format: "flac", file: "/tmp/clip.flac")),
    .archiveExport(ExportRequest(app: "radio", stream: "mic", from: "a", to: "b", format: "wav", file: "-")),
    .archiveExport(ExportRequest(app: "radio", from: "a", to: "b", format: "flac", file: "/tmp/c.flac", proof: true)),
    .archiveExport(
        ExportRequest(app: "radio", from: "a", to: "b", format: "wav", file: "/tmp/c.wav", proof: true, credentials: true)),
    .cueOutputs(app: "dj", main: "pa", cue: "phones"), .cueAssign(app: "dj", source: "deckB", bus: "cue", gainDB: -3),
    .cueMix(app: "dj", mix: 0.25), .cueSplit(app: "dj", on: true), .cueShow(app: "dj"),
    .devicesInject([
        .jackSense(card: "0", control: "Headphone Jack", plugged: true),
        .captureSwitch(card: "1", control: "Mic", on: false), .cardRemoved(card: "2"),
    ]),
    .sessionAttach(
        AttachRequest(app: "voip", client: "phone", playPorts: ["phone:out_1"], capturePorts: ["phone:in_1"])),
    .sessionAttach(AttachRequest(app: "voip", client: "phone")), .sessionDetach(app: "voip", client: "phone"),
]

/// Decodes one request line into a command, as recd does.
func decodeCommand(_ line: String) throws(SessionError) -> Command {
    switch Request.decode(line) {
    case .success(let request): return try Command(request)
    case .failure(let failure): throw failure.error
    }
}

@Suite("typed commands")
struct CommandTests {
    @Test("the samples cover every op")
    func everyOpIsCovered() {
        #expect(Set(everyCommand.map(\.op)) == Set(Op.allCases))
    }

    @Test("every command survives encode → JSON line → decode", arguments: everyCommand.indices)
    func roundTrip(_ index: Int) throws {
        let command = everyCommand[index]
        let line = command.request(id: 7).body.jsonText
        #expect(!line.contains("\n"))
        #expect(try decodeCommand(line) == command, "\(line)")
    }

    @Test("arguments go out camelCase, one key case on the wire")
    func camelCaseOnTheWire() {
        for command in everyCommand {
            for (key, _) in command.arguments {
                #expect(!key.contains("_"), "\(command.op.rawValue) sends \(key)")
            }
        }
    }

    @Test("version-1 snake_case keys still decode; the camelCase key wins when both are sent")
    func legacyKeys() throws {
        let old = try decodeCommand(#"{"id":1,"op":"session.deactivate","app":"a","notify_others":true}"#)
        #expect(old == .sessionDeactivate(app: "a", notifyOthers: true, force: false))
        let prefer = try decodeCommand(
            #"{"id":1,"op":"session.prefer","app":"a","sample_rate":44100,"io_buffer":0.01,"input_channels":1,"output_channels":2}"#
        )
        #expect(
            prefer
                == .sessionPrefer(
                    PreferenceChange(app: "a", sampleRate: 44_100, ioBuffer: 0.01, inputChannels: 1, outputChannels: 2)))
        let set = try decodeCommand(
            #"{"id":1,"op":"session.set","app":"a","category":"record","mic_usage":"x","prefers_interruption_on_route_disconnect":false}"#
        )
        #expect(
            set
                == .sessionSet(
                    SessionSettings(
                        app: "a", category: .record, micUsage: .some("x"), prefersInterruptionOnRouteDisconnect: false)))
        let gain = try decodeCommand(#"{"id":1,"op":"cue.assign","app":"a","source":"s","bus":"cue","gain_db":-6}"#)
        #expect(gain == .cueAssign(app: "a", source: "s", bus: "cue", gainDB: -6))
        let armed = try decodeCommand(#"{"id":1,"op":"record.start","app":"a","trigger_db":-30,"hold_seconds":4}"#)
        #expect(armed == .recordStart(RecordStartRequest(app: "a", triggerDB: -30, holdSeconds: 4)))
        let both = try decodeCommand(
            #"{"id":1,"op":"session.deactivate","app":"a","notify_others":false,"notifyOthers":true}"#)
        #expect(both == .sessionDeactivate(app: "a", notifyOthers: true, force: false))
        #expect(Command.legacyKeys.allSatisfy { $0.value.contains("_") && !$0.key.contains("_") })
    }

    @Test("a play target is a structured object; version 1's string form still decodes")
    func playTargets() throws {
        func target(_ json: String) throws(SessionError) -> PlayTarget? {
            guard case .play(let play) = try decodeCommand(#"{"id":1,"op":"play","app":"a","to":"# + json + "}") else {
                return nil
            }
            return play.to
        }
        #expect(try target(#"{"port":"pa"}"#) == PlayTarget(port: "pa"))
        #expect(try target(#"{"port":"pa","channels":[3,4]}"#) == PlayTarget(port: "pa", channels: [3, 4]))
        #expect(try target(#""pa""#) == PlayTarget(port: "pa"))
        #expect(try target(#""pa:1, 2""#) == PlayTarget(port: "pa", channels: [1, 2]))
        let bad = [
            #"{"channels":[1]}"#, #"{"port":"pa","channels":[]}"#, #"{"port":"pa","channels":["x"]}"#, #""pa:1,x""#, "3",
        ]
        for json in bad {
            #expect(throws: SessionError.self, "\(json)") { _ = try target(json) }
        }
        #expect(try PlayTarget(commandLine: "phones:2") == PlayTarget(port: "phones", channels: [2]))
    }

    @Test("a missing or mistyped argument is badParam naming its key")
    func typeErrorsNameTheKey() {
        let cases: [(String, String)] = [
            (#"{"id":1,"op":"session.show"}"#, "\"app\""),
            (#"{"id":1,"op":"session.show","app":3}"#, "\"app\""),
            (#"{"id":1,"op":"mute","app":"a","muted":"yes"}"#, "\"muted\""),
            (#"{"id":1,"op":"mute","app":"a"}"#, "muted"),
            (#"{"id":1,"op":"session.prefer","app":"a","inputChannels":1.5}"#, "\"inputChannels\""),
            (#"{"id":1,"op":"session.prefer","app":"a","input_channels":"two"}"#, "\"input_channels\""),
            (#"{"id":1,"op":"session.set","app":"a","category":"record","options":"duckOthers"}"#, "\"options\""),
            (#"{"id":1,"op":"session.set","app":"a","category":"loud"}"#, "loud"),
            (#"{"id":1,"op":"session.set","app":"a","category":"record","options":["sparkle"]}"#, "sparkle"),
            (#"{"id":1,"op":"session.override","app":"a","port":"hdmi"}"#, "hdmi"),
            (#"{"id":1,"op":"cue.mix","app":"a"}"#, "cue mix"),
            (#"{"id":1,"op":"cue.split","app":"a","on":1}"#, "\"on\""),
            (#"{"id":1,"op":"devices.inject","events":[{"type":"explode"}]}"#, "explode"),
            (#"{"id":1,"op":"devices.inject"}"#, "events"),
        ]
        for (line, named) in cases {
            do {
                let command = try decodeCommand(line)
                Issue.record("\(line) decoded as \(command)")
            } catch {
                #expect(error.code == .badParam, "\(line): \(error)")
                #expect(error.message.contains(named), "\(line): \(error.message) does not name \(named)")
            }
        }
    }

    @Test("requests are checked in a fixed order: JSON, object, id, version, op")
    func fixedOrder() {
        func failure(_ line: String) -> RequestFailure? {
            if case .failure(let failure) = Request.decode(line) { return failure }
            return nil
        }
        #expect(failure("{nope")?.error.code == .badParam)
        #expect(failure("[1,2]")?.error.message.contains("JSON object") == true)
        #expect(failure(#"{"id":[1],"op":"status"}"#)?.error.message.contains("\"id\"") == true)
        let version = failure(#"{"id":5,"v":99,"op":"status"}"#)
        #expect(version?.id == .number(5) && version?.error.message.contains("version 99") == true)
        #expect(failure(#"{"id":"x","op":"status","v":"one"}"#)?.error.message.contains("\"v\"") == true)
        #expect(failure(#"{"id":6}"#)?.error.message.contains("missing \"op\"") == true)
        let unknown = failure(#"{"id":6,"op":"explode"}"#)
        #expect(unknown?.id == .number(6) && unknown?.error.message.contains("unknown op \"explode\"") == true)
        // A version beyond this build is refused before an unknown op is looked at.
        #expect(failure(#"{"id":1,"v":99,"op":"explode"}"#)?.error.message.contains("version 99") == true)
        if case .success(let request) = Request.decode(#"{"id":"abc","v":1,"op":"routes"}"#) {
            #expect(request.id == .string("abc") && request.op == .routes)
        } else {
            Issue.record("a valid request was refused")
        }
    }

    @Test("replies carry id, ok and the error's name, code and message; clients decode them back")
    func replies() throws {
        let error = SessionError(.notSessionOwner, "session a belongs to uid 0")
        let failure = try JSONValue.parse(Wire.failure(id: .number(3), error, for: .recctl))
        #expect(failure["id"] == .number(3) && failure["ok"] == .bool(false))
        #expect(failure["error"]?["name"] == "notSessionOwner")
        #expect(failure["error"]?["code"]?.intValue == Int(ErrorCode.notSessionOwner.rawValue))
        #expect(Wire.error(from: failure) == error)
        // Name only (a client that dropped the code) and neither both decode.
        #expect(Wire.error(from: try JSONValue.parse(#"{"error":{"name":"isBusy","message":"m"}}"#))?.code == .isBusy)
        #expect(Wire.error(from: try JSONValue.parse(#"{"error":{"message":"m"}}"#))?.code == .unspecified)
        let success = try JSONValue.parse(Wire.success(id: .string("q"), [("app", "a")]))
        #expect(success["ok"] == .bool(true) && success["app"] == "a" && success["id"] == "q")
        #expect(Wire.error(from: success) == nil)
    }

    @Test("every command names its app where the op has one")
    func appOfCommand() {
        #expect(Command.sessionSet(SessionSettings(app: "x", category: .ambient)).app == "x")
        #expect(Command.play(PlayRequest(app: "dj")).app == "dj")
        #expect(Command.status.app == nil)
        #expect(Command.archiveVerify(path: "p", progress: false).app == nil)
        #expect(Command.watch(app: "w").app == "w")
    }
}

@Suite("key spelling by protocol version")
struct WireKeysTests {
    @Test("version 1 clients get snake_case keys back; string values that look like keys stay as they are")
    func renames() throws {
        let line = #"{"id":1,"ok":true,"session":{"ownerUID":0,"micUsage":"\"ownerUID\": text","requestedOptions":[]},"allOK":true}"#
        let old = try JSONValue.parse(WireKeys.line(line, forVersion: 1))
        #expect(old["session"]?["owner_uid"] == 0 && old["session"]?["requested_options"] == .array([]))
        #expect(old["session"]?["mic_usage"] == #""ownerUID": text"#, "a value is never renamed")
        #expect(old["all_ok"] == true && old["allOK"] == nil)
        #expect(WireKeys.line(line, forVersion: 2) == line)
    }

    @Test("every key of the table is renamed wherever it stands as a key, and nothing else changes")
    func everyKey() throws {
        // Values that end in an escaped backslash, hold escaped quotes, or are non-ASCII must
        // not throw the key scan off.
        let values: [JSONValue] = [.string("a\\"), .string("\"endReason\":"), .string("zürich ⏺"), .number(1), .null]
        var fields: [(String, JSONValue)] = []
        for (index, camel) in WireKeys.version1Spellings.keys.sorted().enumerated() {
            fields.append((camel, .array([.object([(camel, values[index % values.count])]), values[index % values.count]])))
        }
        let line = JSONValue.object(fields).jsonText
        let renamed = try JSONValue.parse(WireKeys.line(line, forVersion: 1))
        for (camel, snake) in WireKeys.version1Spellings {
            let entry = try #require(renamed[snake], "\(snake) missing")
            #expect(renamed[camel] == nil)
            guard case .array(let items) = entry, case .object = items[0] else {
                Issue.record("\(snake): \(entry)")
                continue
            }
            #expect(items[0][snake] != nil && items[0][camel] == nil, "nested \(camel)")
        }
        // The values came through untouched.
        var reference = line
        for (camel, snake) in WireKeys.version1Spellings {
            reference = reference.replacingOccurrences(of: "\"\(camel)\":", with: "\"\(snake)\":")
        }
        #expect(WireKeys.line(line, forVersion: 1) == reference)
    }

    @Test("the table maps camelCase keys to distinct snake_case spellings")
    func table() {
        #expect(WireKeys.version1Spellings.keys.allSatisfy { !$0.contains("_") })
        #expect(WireKeys.version1Spellings.values.allSatisfy { $0.contains("_") })
        #expect(Set(WireKeys.version1Spellings.values).count == WireKeys.version1Spellings.count)
    }

    @Test("a request's version is its v, or 1 without one")
    func requestVersion() throws {
        guard case .success(let none) = Request.decode(#"{"id":1,"op":"status"}"#),
            case .success(let two) = Request.decode(#"{"id":1,"v":2,"op":"status"}"#)
        else {
            Issue.record("valid requests refused")
            return
        }
        #expect(none.version == 1 && two.version == 2)
        #expect(Command.status.request(id: 1).version == protocolVersion)
    }
}

// Whole replies, tolerant readers (docs/protocol.md): recd sends every key of every reply object
// and event; a client refuses one only when a required key is missing, reads a missing optional
// key as unknown, and passes over keys it does not know. Generated from real replies: a real recd
// is asked for every kind of reply and watched for its events, and each reply and event, with
// each of its keys (at every depth) removed in turn and with an unknown key added to each of its
// objects, is decoded as recctl and the AudioSession library decode it. The kinds a test recd
// cannot be made to send (an attached JACK client, replication, a sound card, a route change,
// a clock-stall gap, monitoring sources) are the encoders' output, put into the real replies
// where recd would put them.
import ControlProtocol
import Foundation
import SessionPolicy
import TestSupport
import Testing

/// How a client decodes one kind of reply or event (back to JSON, to compare), and which keys
/// it requires: the decision docs/protocol.md's "Whole replies, tolerant readers" lists. Paths
/// are `key`, `parent.key` and, inside a list's items, `list[].key`.
private struct ReaderKind: Sendable {
    var name: String
    var required: Set<String>
    var decode: @Sendable (JSONValue) throws -> JSONValue
}

/// The key paths of `groups`, as one set (plain lists of strings: quick for the type checker).
private func keys(_ groups: [String]...) -> Set<String> { Set(groups.joined()) }

/// `names` inside the object at `prefix`.
private func under(_ prefix: String, _ names: [String]) -> [String] { names.map { prefix + "." + $0 } }

private func under(_ prefix: String, _ names: Set<String>) -> [String] { names.map { prefix + "." + $0 } }

private let portDescription: [String] = ["name", "type", "channels"]
private let routeDescription: Set<String> = keys(
    ["inputs", "outputs"], under("inputs[]", portDescription), under("outputs[]", portDescription))
private let session: Set<String> = keys(
    ["app", "category", "mode", "options", "state", "route", "route.inputs", "route.outputs"],
    under("routeDescription", routeDescription), under("availableInputs[]", portDescription),
    ["ignoredOptions[].option", "ignoredOptions[].why", "interruption.reason", "bandwidth[].port"],
    ["bandwidth[].bandwidth"])
private let cycle: [String] = [
    "boundsMicros", "startDelay", "duration", "maxStartDelayMicros", "maxDurationMicros", "late", "overlong", "cycles",
    "startDelayMicrosTotal", "durationMicrosTotal",
]
private let healthReason: [String] = ["state", "reason", "text"]
private let health: Set<String> = keys(
    ["state"], under("reasons[]", healthReason), under("feeds[]", ["feed", "state"]),
    under("feeds[].reasons[]", healthReason))
private let player: [String] = ["app", "stream", "state"]
private let recorder: [String] = ["app", "stream"]
private let status: Set<String> = keys(
    ["daemon", "jack", "sessions", "active", "players", "recorders", "archive"],
    under("daemon", ["version", "protocol", "pid"]), ["jack.connected"], under("jack.cycle", cycle),
    under("sessions[]", session), under("players[]", player), under("recorders[]", recorder),
    under("waiting[]", ["app", "stream", "reason"]), under("cards[]", ["index", "id"]),
    ["archive.dir", "replication.remote", "replication.backlog", "clock.synchronized"],
    under("attachments[]", ["app", "client"]), under("health", Array(health)))

private func reply<T: ReplyObject>(_ type: T.Type) -> @Sendable (JSONValue) throws -> JSONValue {
    { try T(json: $0).json }
}

private func field<T: ReplyObject>(_ key: String, _ type: T.Type) -> @Sendable (JSONValue) throws -> JSONValue {
    { .object([(key, try T(reply: $0, key: key).json)]) }
}

private func list<T: ReplyObject>(_ key: String, _ type: T.Type) -> @Sendable (JSONValue) throws -> JSONValue {
    { .object([(key, .array(try T.list(reply: $0, key: key).map(\.json)))]) }
}

private let replyKinds: [ReaderKind] = [
    ReaderKind(name: "hello", required: keys(["protocol", "uid", "admin"]), decode: reply(HelloInfo.self)),
    ReaderKind(name: "status", required: status, decode: reply(StatusInfo.self)),
    ReaderKind(
        name: "session", required: keys(["session"], under("session", session)),
        decode: field("session", SessionInfo.self)),
    ReaderKind(
        name: "session.list", required: keys(["sessions"], under("sessions[]", session)),
        decode: reply(SessionPage.self)),
    ReaderKind(
        name: "routes",
        required: keys(
            ["ports", "sessions", "ports[].name", "ports[].origins[].jack", "ports[].origins[].origin"],
            under("sessions[]", ["app", "state", "route", "route.inputs", "route.outputs"])),
        decode: reply(RoutesInfo.self)),
    ReaderKind(
        name: "archive.list", required: keys(["segments"], under("segments[]", ["path", "app", "stream", "start"])),
        decode: list("segments", SegmentInfo.self)),
    ReaderKind(
        name: "archive.verify", required: keys(["results", "allOK", "results[].path", "results[].ok"]),
        decode: reply(VerifyInfo.self)),
    ReaderKind(
        name: "archive.export", required: keys(["file", "start", "end", "frames"]), decode: reply(ExportInfo.self)),
    ReaderKind(name: "archive.reindex", required: keys(["indexed"]), decode: reply(ReindexInfo.self)),
    ReaderKind(
        name: "meter",
        required: keys(
            ["meters"], under("meters[]", ["name", "group", "channel", "direction", "peakDB", "rmsDB"]),
            under("recordings[]", ["app", "stream"])),
        decode: reply(MetersInfo.self)),
    ReaderKind(
        name: "monitoring",
        required: keys(
            ["monitoring", "monitoring.mix", "monitoring.split", "monitoring.sources"],
            under("monitoring.sources[]", ["name", "kind", "bus", "gainDB"])),
        decode: field("monitoring", MonitoringInfo.self)),
    ReaderKind(
        name: "recorder", required: keys(["recorder"], under("recorder", recorder)),
        decode: field("recorder", RecorderInfo.self)),
    ReaderKind(
        name: "recorders", required: keys(["recorders"], under("recorders[]", recorder)),
        decode: list("recorders", RecorderInfo.self)),
    ReaderKind(
        name: "player", required: keys(["player"], under("player", player)), decode: field("player", PlayerInfo.self)),
    ReaderKind(
        name: "players", required: keys(["players"], under("players[]", player)),
        decode: list("players", PlayerInfo.self)),
    ReaderKind(name: "permission", required: keys(["app", "state"]), decode: reply(PermissionInfo.self)),
    ReaderKind(
        name: "permissions", required: keys(["permissions", "permissions[].app", "permissions[].state"]),
        decode: list("permissions", PermissionInfo.self)),
    ReaderKind(name: "mute", required: keys(["app", "muted"]), decode: reply(MuteInfo.self)),
    ReaderKind(
        name: "attachment", required: keys(["attachment", "attachment.app", "attachment.client"]),
        decode: field("attachment", AttachmentInfo.self)),
]

/// Every event: `event`, `app` and the keys its meaning rests on.
private let eventRequired: [String: Set<String>] = [
    "interruption": keys(["app", "type", "typeCode", "reason", "reasonCode"]),
    "routeChange": keys(
        ["app", "reason", "reasonCode", "previousRoute", "route", "previousRoute.inputs", "previousRoute.outputs"],
        ["route.inputs", "route.outputs"], under("previousRouteDescription", routeDescription),
        under("routeDescription", routeDescription)),
    "silenceSecondaryAudioHint": keys(["app", "type"]),
    "ducked": keys(["app", "by", "levelDB"]),
    "unducked": keys(["app"]),
    "inputMuteStateChange": keys(["app", "muted"]),
    "permission": keys(["app", "state"]),
    "session": keys(["app", "state"]),
    "player": keys(["app", "stream", "state"]),
    "recording": keys(["app", "state"]),
    "silence": keys(["app", "stream", "state"]),
    "attachment": keys(["app", "client", "state", "reason"]),
    "mediaServicesWereLost": keys([]),
    "health": health,
    "mediaServicesWereReset": keys([]),
]

private let eventKinds: [ReaderKind] = eventRequired.map { name, required in
    ReaderKind(name: "event " + name, required: required.union(["event"]), decode: { try Event(json: $0).json })
}

// MARK: Key paths

/// Every key path of `value`: each object's keys, and in lists their items' keys (`list[]`).
private func keyPaths(_ value: JSONValue, _ prefix: [String] = []) -> Set<[String]> {
    var paths: Set<[String]> = []
    switch value {
    case .object(let pairs):
        for (key, item) in pairs {
            paths.insert(prefix + [key])
            paths.formUnion(keyPaths(item, prefix + [key]))
        }
    case .array(let items):
        for item in items { paths.formUnion(keyPaths(item, prefix + ["[]"])) }
    default:
        break
    }
    return paths
}

private func text(_ path: [String]) -> String {
    var result = ""
    for step in path {
        if step == "[]" {
            result += "[]"
        } else {
            result += result.isEmpty ? step : "." + step
        }
    }
    return result
}

/// `value` without the key at `path` (in every item of the lists on the way).
private func removing(_ path: ArraySlice<String>, from value: JSONValue) -> JSONValue {
    guard let head = path.first else { return value }
    switch value {
    case .object(let pairs):
        if path.count == 1 { return .object(pairs.filter { $0.0 != head }) }
        return .object(pairs.map { $0.0 == head ? ($0.0, removing(path.dropFirst(), from: $0.1)) : $0 })
    case .array(let items) where head == "[]":
        return .array(items.map { removing(path.dropFirst(), from: $0) })
    default:
        return value
    }
}

/// `value` with a key no client knows added to each of its objects.
private func addingUnknownKeys(_ value: JSONValue) -> JSONValue {
    switch value {
    case .object(let pairs):
        let unknown: JSONValue = ["nested": [1, "two"]]
        return .object(pairs.map { ($0.0, addingUnknownKeys($0.1)) } + [("zzNewerKey", unknown)])
    case .array(let items):
        return .array(items.map(addingUnknownKeys))
    default:
        return value
    }
}

/// The key paths the checks tried, per kind.
private final class Coverage: @unchecked Sendable {
    var paths: [String: Set<String>] = [:]
}

/// Checks one real reply or event of `kind`: it decodes; re-encoded it has exactly the keys recd
/// sent (recd left none out); without each key it decodes, or, for a required key only, fails
/// naming it; with unknown keys it decodes to the same value.
private func check(_ sample: JSONValue, _ kind: ReaderKind, _ coverage: Coverage) {
    let original: JSONValue
    do {
        original = try kind.decode(sample)
    } catch {
        Issue.record("\(kind.name): \(sample.jsonText) does not decode: \(error)")
        return
    }
    let sent = Set(keyPaths(sample).map(text))
    let whole = Set(keyPaths(original).map(text))
    #expect(
        sent == whole, "\(kind.name): recd sent \(sent.subtracting(whole)) beyond, left out \(whole.subtracting(sent))")
    for path in keyPaths(sample) {
        let name = text(path)
        coverage.paths[kind.name, default: []].insert(name)
        let without = removing(path[...], from: sample)
        do {
            _ = try kind.decode(without)
            #expect(!kind.required.contains(name), "\(kind.name) decodes without the required \(name)")
        } catch let error as ReplyDecodingError {
            #expect(kind.required.contains(name), "\(kind.name) refuses a reply without the optional \(name): \(error)")
            #expect(error.message.contains("\"\(path.last ?? "")\""), "\(kind.name) without \(name): \(error)")
        } catch {
            Issue.record("\(kind.name) without \(name): \(error)")
        }
    }
    do {
        let decoded = try kind.decode(addingUnknownKeys(sample))
        #expect(decoded == original, "\(kind.name) with unknown keys")
    } catch {
        Issue.record("\(kind.name) refuses unknown keys: \(error)")
    }
}

// MARK: The real daemon

/// A control connection that sends version-2 requests and returns their replies as recd wrote
/// them, without `id` and `ok`.
private final class Asker {
    let client: RawClient
    var next = 1

    init(_ daemon: Daemon) throws { client = try RawClient(path: daemon.socket) }

    func ask(_ op: String, _ arguments: [(String, JSONValue)] = [], sourceLocation: SourceLocation = #_sourceLocation)
        -> JSONValue
    {
        let id = next
        next += 1
        let head: [(String, JSONValue)] = [("id", .number(Double(id))), ("v", 2), ("op", .string(op))]
        client.send(JSONValue.object(head + arguments).jsonText + "\n")
        for _ in 0..<12 {
            guard let line = client.readJSON() else { continue }
            guard line["id"]?.intValue == id, line["ok"] != nil else { continue }
            #expect(line["ok"] == true, "\(op): \(line.jsonText)", sourceLocation: sourceLocation)
            return .object((line.objectValue ?? []).filter { $0.0 != "id" && $0.0 != "ok" })
        }
        Issue.record("no reply to \(op)", sourceLocation: sourceLocation)
        return .object([])
    }
}

@Suite("whole replies, tolerant readers", .serialized)
struct TolerantReaderTests {
    @Test(
        "every reply and event of a real recd has all its keys; without an optional key it reads as unknown, without a required one it is refused naming it, and unknown keys are passed over"
    )
    func everyReplyAndEvent() throws {
        // The logger's input, the dummy server's capture, is digital silence.
        let daemon = try Daemon(
            extraConfig: "\n[session logger]\ncategory = record\nmic_usage = archive\nsilence_seconds = 1\n")
        let watcher = try daemon.watch()
        let wire = try Asker(daemon)
        var replies: [(String, JSONValue)] = []
        func keep(_ kind: String, _ reply: JSONValue) { replies.append((kind, reply)) }

        keep("hello", wire.ask("hello"))
        keep("permission", wire.ask("permission.grant", [("app", "logger")]))
        keep("permissions", wire.ask("permission.list"))
        keep("recorder", wire.ask("record.start", [("app", "logger")]))
        keep("mute", wire.ask("mute", [("app", "logger"), ("muted", true)]))
        keep("mute", wire.ask("mute", [("app", "logger"), ("muted", false)]))
        #expect(watcher.waitFor(timeout: 10) { $0["event"] == "silence" }.contains { $0["event"] == "silence" })
        keep("meter", wire.ask("meter", [("app", "logger")]))
        keep("status", wire.ask("status"))
        keep("recorders", wire.ask("record.stop", [("app", "logger")]))
        watcher.waitFor { $0["event"] == "recording" && $0["state"] == "finished" }
        // `next` is recctl's paging, read before any object is.
        let listed = wire.ask("archive.list")
        let segments = JSONValue.object((listed.objectValue ?? []).filter { $0.0 != "next" })
        keep("archive.list", segments)
        let path = try #require(segments["segments"]?.arrayValue?.first?["path"]?.stringValue)
        keep("archive.verify", wire.ask("archive.verify", [("path", .string(path))]))
        keep("archive.reindex", wire.ask("archive.reindex"))
        let clip = daemon.directory + "/clip.flac"
        let export = try daemon.recctl(
            "--json", "archive", "export", "--app", "logger", "--from", "now-10s", "--to", "now", "--output", clip)
        try #require(export.status == 0, "\(export.stderr)")
        keep("archive.export", try #require(export.json))

        keep("session", wire.ask("session.set", [("app", "radio"), ("category", "playback")]))
        let mixable: [(String, JSONValue)] = [
            ("app", "music"), ("category", "playback"), ("options", ["mixWithOthers"]),
        ]
        keep("session", wire.ask("session.set", mixable))
        let voice: [(String, JSONValue)] = [
            ("app", "voice"), ("category", "playAndRecord"), ("mode", "voiceChat"), ("micUsage", "calls"),
            ("options", ["duckOthers", "bluetoothHighQualityRecording"]),
        ]
        keep("session", wire.ask("session.set", voice))
        // Players: radio's, interrupted by the activation of another non-mixable session; music's,
        // ducked by it.
        let wav = daemon.directory + "/tone.wav"
        try writeWAV(path: wav, sampleRate: 48_000, channels: 2, samples: [Int16](repeating: 64, count: 48_000 * 60))
        for app in ["radio", "music"] {
            let play = try daemon.recctl("--json", "play", app, wav)
            try #require(play.status == 0, "\(play.stderr)")
            keep("player", .object([("player", try #require(play.json))]))
            if app == "radio" { keep("players", wire.ask("pause", [("app", "radio")])) }
        }
        keep("session", wire.ask("session.activate", [("app", "voice")]))
        keep("session", wire.ask("session.set", [("app", "dj"), ("category", "multiRoute")]))
        keep("monitoring", wire.ask("cue.show", [("app", "dj")]))
        keep("routes", wire.ask("routes"))
        let status = wire.ask("status")
        keep("status", status)
        keep("session.list", wire.ask("session.list"))
        // The session the activation interrupted, with its interruption.
        let interrupted = status["sessions"]?.arrayValue?.first { $0["interruption"] != .null }?["app"]
        keep("session", wire.ask("session.show", [("app", try #require(interrupted, "\(status.jsonText)"))]))
        keep("players", wire.ask("stop", [("app", "music")]))
        keep("session", wire.ask("session.deactivate", [("app", "voice")]))
        _ = wire.ask("session.delete", [("app", "radio")])
        watcher.waitFor { $0["event"] == "session" && $0["state"] == "deleted" }

        // What a test recd does not send, from the encoders, where recd would put it.
        let attachment = AttachmentInfo(
            app: "voice", client: "phone", playPorts: ["phone:out_1"], capturePorts: ["phone:in_1"],
            recdPlayPorts: ["recd:phone-1-play_1"], recdCapturePorts: ["recd:phone-1-capture_1"], processing: "voice",
            processingLatency: 0.0453, underruns: 0)
        keep("attachment", .object([("attachment", attachment.json)]))
        let monitoring = MonitoringInfo(
            app: "dj", main: "out", cue: nil, mix: 0.5, split: false,
            sources: [.init(name: "mic", kind: "input", bus: "main", gainDB: -3)])
        keep("monitoring", .object([("monitoring", monitoring.json)]))
        var full = try #require(replies.last { $0.0 == "status" }?.1)
        full.set("attachments", [attachment.json])
        let replication = StatusInfo.Replication(remote: "box:recd", backlog: 3, lastSuccess: 1.7e9, lastError: nil)
        full.set("replication", replication.json)
        full.set("cards", [StatusInfo.Card(index: 1, id: "USB", name: "Scarlett 2i2", usb: true).json])
        let waiting = WaitingRecorderInfo(
            app: "logger", stream: "mic", port: "mic", reason: "diskFull", since: "2026-12-01T10:42:03Z",
            declared: true, resumesWhen: "512 MiB are free", resumeFreeBytes: 536_870_912)
        full.set("waiting", [waiting.json])
        // A box in alarm, with a reason of its own and a feed's: every key of the health.
        let stall = HealthInfo.Reason(
            state: "alarm", reason: "jack-stalled", feed: nil, text: "JACK server 'x' stalled: no process cycle for 3 s",
            since: "2026-12-01T10:42:03Z")
        let silent = HealthInfo.Reason(
            state: "warning", reason: "silent", feed: "logger/mic", text: "logger/mic silent for 6 min",
            since: "2026-12-01T10:36:03Z")
        let alarm = HealthInfo(
            state: "alarm", since: "2026-12-01T10:42:03Z", reasons: [stall, silent],
            feeds: [.init(feed: "logger/mic", state: "warning", reasons: [silent])])
        full.set("health", alarm.json)
        keep("status", full)
        let route = RouteDescriptionInfo(
            inputs: [.init(name: "mic", type: "builtInMic", channels: 2)],
            outputs: [.init(name: "out", type: "lineOut", channels: 2)])
        let change = RouteChangeEvent(
            app: "radio", reason: .oldDeviceUnavailable, previousRoute: RouteInfo(inputs: ["mic"], outputs: ["out"]),
            route: RouteInfo(inputs: ["mic"]), previousRouteDescription: route, routeDescription: route)
        let gap = RecordingEvent(
            app: "logger", stream: "mic", state: .gap, file: "/a/b.flac.partial", reason: "clockStall", port: "mic",
            position: 793_882, length: 1744, sampleRate: 48_000)
        let moved = PlayerEvent(
            app: "radio", stream: "main", state: .paused, file: wav, port: "out", reason: "oldDeviceUnavailable",
            previousPort: "phones", reaction: PortReaction(frames: 212, periodFrames: 1024, microseconds: 4416))
        let encoded: [Event] = [
            .routeChange(change), .attachmentDetached(app: "voice", client: "phone", reason: .clientGone),
            .silenceSecondaryAudioHint(app: "radio", begin: true), .mediaServicesWereLost, .mediaServicesWereReset,
            .recording(gap), .player(moved), .health(alarm),
        ]
        let events = watcher.events + encoded.map(\.json)

        let coverage = Coverage()
        var kinds: [String: ReaderKind] = [:]
        for kind in replyKinds + eventKinds { kinds[kind.name] = kind }
        for (name, sample) in replies { check(sample, try #require(kinds[name], "\(name)"), coverage) }
        let seen = Set(events.compactMap { $0["event"]?.stringValue })
        for event in events {
            let name = "event " + (event["event"]?.stringValue ?? "?")
            check(event, try #require(kinds[name], "\(name)"), coverage)
        }
        // Every kind was tried, and every key the table requires was there to be taken away.
        for kind in replyKinds + eventKinds {
            let missing = kind.required.subtracting(coverage.paths[kind.name] ?? [])
            #expect(missing.isEmpty, "\(kind.name): required keys no sample had: \(missing); events seen: \(seen)")
        }
    }
}

// Commands on the wire for clients: each command's op and its arguments as JSON, camelCase
// keys, optional fields only when set. recd decodes them in Command.swift.
import Foundation
import SessionPolicy

extension Command {
    /// The wire op.
    public var op: Op {
        switch self {
        case .hello: .hello
        case .status: .status
        case .sessionList: .sessionList
        case .sessionShow: .sessionShow
        case .sessionSet: .sessionSet
        case .sessionActivate: .sessionActivate
        case .sessionDeactivate: .sessionDeactivate
        case .sessionPrefer: .sessionPrefer
        case .sessionOverride: .sessionOverride
        case .sessionDelete: .sessionDelete
        case .permissionList: .permissionList
        case .permissionRequest: .permissionRequest
        case .permissionDecide(_, .granted): .permissionGrant
        case .permissionDecide(_, .denied): .permissionDeny
        case .permissionDecide(_, .undetermined): .permissionReset
        case .mute: .mute
        case .watch: .watch
        case .unwatch: .unwatch
        case .routes: .routes
        case .play: .play
        case .pause: .pause
        case .stop: .stop
        case .recordStart: .recordStart
        case .recordStop: .recordStop
        case .archiveList: .archiveList
        case .archiveVerify: .archiveVerify
        case .archiveReindex: .archiveReindex
        case .archiveExport: .archiveExport
        case .meter: .meter
        case .cueOutputs: .cueOutputs
        case .cueAssign: .cueAssign
        case .cueMix: .cueMix
        case .cueSplit: .cueSplit
        case .cueShow: .cueShow
        case .devicesInject: .devicesInject
        case .sessionAttach: .sessionAttach
        case .sessionDetach: .sessionDetach
        }
    }

    /// The arguments as wire fields, camelCase, optional ones only when set.
    public var arguments: [(String, JSONValue)] {
        var fields = Fields()
        switch self {
        case .hello, .status, .permissionList, .unwatch, .routes, .archiveReindex: break
        case .sessionList(let offset, let limit):
            if offset != 0 { fields.add("offset", Double(offset)) }
            fields.add("limit", limit.map(Double.init))
        case .sessionShow(let app), .sessionDelete(let app), .permissionRequest(let app),
            .permissionDecide(let app, _), .cueShow(let app):
            fields.add("app", app)
        case .sessionActivate(let app, let hold):
            fields.add("app", app)
            if hold { fields.add("hold", true) }
        case .sessionSet(let settings):
            fields.add("app", settings.app)
            fields.add("category", settings.category.rawValue)
            fields.add("mode", settings.mode.rawValue)
            fields.add("options", JSONValue.array(settings.options.sorted().map { .string($0.rawValue) }))
            fields.add("policy", settings.policy.rawValue)
            if case .some(let text) = settings.micUsage {
                fields.add("micUsage", text.map { JSONValue.string($0) } ?? .null)
            }
            fields.add("prefersInterruptionOnRouteDisconnect", settings.prefersInterruptionOnRouteDisconnect)
            fields.add("prefersNoInterruptionsFromSystemAlerts", settings.prefersNoInterruptionsFromSystemAlerts)
        case .sessionDeactivate(let app, let notifyOthers, let force):
            fields.add("app", app)
            fields.add("notifyOthers", notifyOthers)
            fields.add("force", force)
        case .sessionPrefer(let change):
            fields.add("app", change.app)
            if change.clear { fields.add("clear", true) }
            fields.add("input", change.input)
            fields.add("sampleRate", change.sampleRate)
            fields.add("ioBuffer", change.ioBuffer)
            fields.add("inputChannels", change.inputChannels.map(Double.init))
            fields.add("outputChannels", change.outputChannels.map(Double.init))
            fields.add("prefersNoInterruptionsFromSystemAlerts", change.prefersNoInterruptionsFromSystemAlerts)
            fields.add("prefersEchoCancelledInput", change.prefersEchoCancelledInput)
        case .sessionOverride(let app, let speaker):
            fields.add("app", app)
            fields.add("port", speaker ? "speaker" : "none")
        case .mute(let app, let muted):
            fields.add("app", app)
            fields.add("muted", muted)
        case .watch(let app), .meter(let app):
            fields.add("app", app)
        case .archiveList(let app, let since, let offset, let limit):
            fields.add("app", app)
            fields.add("since", since)
            if offset != 0 { fields.add("offset", Double(offset)) }
            fields.add("limit", limit.map(Double.init))
        case .play(let play):
            fields.add("app", play.app)
            fields.add("file", play.file)
            fields.add("stream", play.stream)
            if let to = play.to { fields.add("to", to.json) }
        case .pause(let app, let stream), .stop(let app, let stream), .recordStop(let app, let stream):
            fields.add("app", app)
            fields.add("stream", stream)
        case .recordStart(let start):
            fields.add("app", start.app)
            fields.add("stream", start.stream)
            fields.add("input", start.input)
            fields.add("bus", start.bus)
            fields.add("triggerDB", start.triggerDB)
            fields.add("holdSeconds", start.holdSeconds)
        case .archiveExport(let export):
            fields.add("app", export.app)
            fields.add("stream", export.stream)
            fields.add("from", export.from)
            fields.add("to", export.to)
            fields.add("format", export.format)
            fields.add("file", export.file)
            if export.proof { fields.add("proof", true) }
            if export.credentials { fields.add("credentials", true) }
        case .archiveVerify(let path, let progress):
            fields.add("path", path)
            if progress { fields.add("progress", true) }
        case .cueOutputs(let app, let main, let cue):
            fields.add("app", app)
            fields.add("main", main)
            fields.add("cue", cue)
        case .cueAssign(let app, let source, let bus, let gainDB):
            fields.add("app", app)
            fields.add("source", source)
            fields.add("bus", bus)
            fields.add("gainDB", gainDB)
        case .sessionAttach(let attach):
            fields.add("app", attach.app)
            fields.add("client", attach.client)
            fields.add("playPorts", JSONValue(attach.playPorts))
            fields.add("capturePorts", JSONValue(attach.capturePorts))
        case .sessionDetach(let app, let client):
            fields.add("app", app)
            fields.add("client", client)
        case .cueMix(let app, let mix):
            fields.add("app", app)
            fields.add("mix", mix)
        case .cueSplit(let app, let on):
            fields.add("app", app)
            fields.add("on", on)
        case .devicesInject(let events):
            fields.add("events", JSONValue.array(events.map(\.json)))
        }
        return fields.pairs
    }

    /// The request a client sends: this command with `id`, the protocol version and the
    /// caller's interface.
    public func request(id: Int, interface: CallerInterface? = nil) -> Request {
        Request(id: id, op: op, arguments: arguments, interface: interface)
    }
}

/// Optional wire fields, added only when set.
private struct Fields {
    var pairs: [(String, JSONValue)] = []

    mutating func add(_ key: String, _ value: JSONValue?) {
        if let value { pairs.append((key, value)) }
    }
    mutating func add(_ key: String, _ value: String?) { add(key, value.map { JSONValue.string($0) }) }
    mutating func add(_ key: String, _ value: Bool?) { add(key, value.map { JSONValue.bool($0) }) }
    mutating func add(_ key: String, _ value: Double?) { add(key, value.map { JSONValue.number($0) }) }
}

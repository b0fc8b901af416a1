// The coordinator's commands: one typed `Command` from the front end (decoded, its passed
// descriptors checked and the caller authorized there) run against the store, its effects
// applied, and an answer: now, later (the reply closure the front end made), or once an
// administrator decides a permission. The sessions' own commands are here; players and
// recorders are in SessionCoordinator+Streams.swift.
//
// Threads: the control thread.
import ControlProtocol
import Platform
import SessionPolicy
import SystemSupport

/// Who sent a command, and how to answer it later.
struct Caller {
    let client: ClientID
    let peer: PeerCredentials
    /// The front end's checks, for a change checked again when it happens later (`play`).
    let gate: RequestGate
    /// The reply that comes later, made by the front end (dropped when the client has gone).
    let reply: LaterReply
    /// Progress lines of a long request (`archive.verify --progress`).
    let progress: @Sendable (Int, Int) -> Void

    var isAdministrator: Bool { gate.isAdministrator(peer) }
    var requester: SessionStore.Requester { .init(uid: peer.uid, isAdministrator: isAdministrator) }
}

/// A command's answer.
enum Answer {
    /// The reply's fields, now.
    case now([(String, JSONValue)])
    /// Through `Caller.reply`, once the work is done.
    case later
    /// When the app's record permission is decided (`permission.request` while undetermined):
    /// the front end answers from the `permission` event.
    case whenPermissionDecided(app: String)
}

extension SessionCoordinator {
    func run(_ command: Command, from caller: Caller, descriptors: inout PassedDescriptors) throws -> Answer {
        // Its application is there, whatever the request does (set creates the session first).
        defer { noteUse(of: command.app) }
        switch command {
        case .hello:
            return .now(
                HelloInfo(
                    protocolVersion: protocolVersion, version: recdVersion, uid: Int(caller.peer.uid),
                    admin: caller.isAdministrator
                ).fields)
        case .status:
            return .now(statusInfo().fields)
        case .sessionList(let offset, let limit):
            return .now(try sessionPage(offset: offset, limit: limit).fields)
        case .sessionShow(let app):
            return .now(try sessionFields(app))
        case .sessionSet(let settings):
            return .now(try sessionSet(settings, by: caller))
        case .sessionActivate(let app, let hold):
            // pid 0: the peer is in another pid namespace; nothing to follow.
            let effects = try store.activate(app: app, holder: hold && caller.peer.pid > 0 ? caller.peer.pid : nil)
            attachments.allowAgain(of: app)
            apply(effects)
            announceState(app)
            return .now(try sessionFields(app))
        case .sessionDeactivate(let app, let notifyOthers, let force):
            apply(try store.deactivate(app: app, notifyOthers: notifyOthers, force: force))
            announceState(app)
            return .now(try sessionFields(app))
        case .sessionPrefer(let change):
            return .now(try sessionPrefer(change))
        case .sessionOverride(let app, let speaker):
            apply(try store.overrideOutput(app: app, speaker: speaker))
            return .now(try sessionFields(app))
        case .sessionDelete(let app):
            apply(try store.delete(app: app))
            return .now([])
        case .permissionList:
            let apps = Set(store.permissions.keys).union(store.sessions.keys).sorted()
            return .now([
                (
                    "permissions",
                    .array(apps.map { PermissionInfo(app: $0, state: store.permission($0).rawValue).json })
                )
            ])
        case .permissionRequest(let app):
            let app = try RequestGate.checkedAppName(app)
            let state = store.permission(app)
            if state == .undetermined { return .whenPermissionDecided(app: app) }
            return .now(PermissionInfo(app: app, state: state.rawValue).fields)
        case .permissionDecide(let app, let state):
            let app = try RequestGate.checkedAppName(app)
            apply(try store.decidePermission(app: app, state))
            return .now(PermissionInfo(app: app, state: state.rawValue).fields)
        case .mute(let app, let muted):
            apply(try store.setInputMuted(app: app, muted))
            return .now(MuteInfo(app: app, muted: muted).fields)
        case .watch, .unwatch:
            // The front end's: watches are the clients'.
            return .now([])
        case .routes:
            return .now(routesFields())
        case .play(let play):
            return try self.play(play, from: caller, descriptors: &descriptors)
        case .pause(let app, let stream), .stop(let app, let stream):
            return .now(try pauseOrStop(app: app, stream: stream, stop: command.op == .stop))
        case .recordStart(let start):
            return .now(try recordStart(start))
        case .recordStop(let app, let stream):
            return try recordStop(app: app, stream: stream, from: caller)
        case .archiveList(let app, let since, let offset, let limit):
            return .now(try archive.archiveList(app: app, since: since, offset: offset, limit: limit))
        case .archiveVerify(let path, let progress):
            try archive.verify(
                path: path, uid: caller.peer.uid, groups: Set(caller.peer.groups + [caller.peer.gid]),
                administrator: caller.isAdministrator, for: caller.client, progress: progress ? caller.progress : nil,
                reply: caller.reply)
            return .later
        case .archiveReindex:
            archive.reindex(for: caller.client, uid: caller.peer.uid, reply: caller.reply)
            return .later
        case .archiveExport(let export):
            try archive.export(
                export, output: descriptors.take(), uid: caller.peer.uid,
                groups: Set(caller.peer.groups + [caller.peer.gid]), administrator: caller.isAdministrator,
                for: caller.client, reply: caller.reply)
            return .later
        case .meter(let app):
            return try meters.request(app: app, reply: caller.reply).map(Answer.now) ?? .later
        case .cueShow(let app):
            try checkMultiRoute(try store.session(app))
            return .now([("monitoring", monitoring.json)])
        case .cueOutputs(let app, _, _), .cueAssign(let app, _, _, _), .cueMix(let app, _), .cueSplit(let app, _):
            return .now(try cue(command, app: app))
        case .devicesInject(let events):
            return .now([("injected", .number(Double(try devices.inject(events))))])
        case .sessionAttach(let request):
            try attach(request, by: caller)
            return .later
        case .sessionDetach(let app, let client):
            _ = try store.session(app)
            try attachments.detach(app: app, client: client)
            return .now([])
        }
    }

    /// The session's reply field; expiredSession when there is no such session.
    private func sessionFields(_ app: String) throws -> [(String, JSONValue)] {
        [("session", sessionInfo(try store.session(app)).json)]
    }

    /// `session.attach`: the caller changes the session (checked by the front end) and must own
    /// the JACK client (administrators may attach any). Answered once the engine has registered
    /// recd's ports for it (off the control thread).
    private func attach(_ request: AttachRequest, by caller: Caller) throws {
        let session = try store.session(request.app)
        if !caller.isAdministrator {
            guard let uid = attachments.clientUID(request.client) else {
                throw SessionError(
                    .notSessionOwner,
                    "recd cannot tell whose JACK client \(request.client) is; ask an administrator to attach it")
            }
            guard uid == caller.peer.uid else {
                throw SessionError(
                    .notSessionOwner,
                    "JACK client \(request.client) runs as uid \(uid), not as you (uid \(caller.peer.uid)); attach "
                        + "your own application's client, or ask an administrator")
            }
        }
        try attachments.attach(
            request, category: session.configuration.category, owner: caller.client, session: attachmentView(session),
            reply: caller.reply)
    }

    private func sessionSet(_ settings: SessionSettings, by caller: Caller) throws -> [(String, JSONValue)] {
        let app = try RequestGate.checkedAppName(settings.app)
        let configuration = try SessionConfiguration.validated(
            category: settings.category, mode: settings.mode, options: settings.options, policy: settings.policy)
        try store.checkRoom(for: app, micUsage: settings.micUsage, by: caller.requester)
        // On an active session this is arbitrated like an activation: a refusal changes nothing.
        let effects = try store.configure(
            app: app, ownerUID: caller.peer.uid, configuration: configuration, micUsage: settings.micUsage)
        apply(effects)
        if let prefers = settings.prefersInterruptionOnRouteDisconnect {
            apply(try store.setPrefersInterruptionOnRouteDisconnect(app: app, prefers))
        }
        if let prefers = settings.prefersNoInterruptionsFromSystemAlerts {
            apply(try store.setPrefersNoInterruptionsFromSystemAlerts(app: app, prefers))
        }
        return try sessionFields(app)
    }

    private func sessionPrefer(_ change: PreferenceChange) throws -> [(String, JSONValue)] {
        let app = change.app
        // Checked first: a refused preference changes nothing.
        if let prefers = change.prefersEchoCancelledInput {
            try CaptureProcessing.validatePreference(prefers, category: try store.session(app).configuration.category)
        }
        var prefs = change.clear ? HardwarePreferences() : try store.session(app).preferences
        if let input = change.input { prefs.preferredInput = input == "none" ? nil : input }
        if let rate = change.sampleRate { prefs.sampleRate = rate }
        if let duration = change.ioBuffer { prefs.ioBufferDuration = duration }
        if let count = change.inputChannels { prefs.inputChannels = count }
        if let count = change.outputChannels { prefs.outputChannels = count }
        let before = try store.session(app).preferences
        apply(try store.setPreferences(app: app, prefs))
        if let prefers = change.prefersNoInterruptionsFromSystemAlerts {
            apply(try store.setPrefersNoInterruptionsFromSystemAlerts(app: app, prefers))
        }
        if let prefers = change.prefersEchoCancelledInput {
            apply(try store.setPrefersEchoCancelledInput(app: app, prefers))
        }
        applyChannelPreferences(of: app, before: before, after: prefs)
        var fields: [(String, JSONValue)] = []
        if let duration = change.ioBuffer, engine.audio.isRunning, let note = engine.applyBufferPreference(duration) {
            Log.info("\(app) prefers an IO buffer of \(Readable.duration(duration)): \(note)")
            fields.append(("note", .string(note)))
        }
        return try sessionFields(app) + fields
    }

    // MARK: Monitoring

    func checkMultiRoute(_ session: Session) throws {
        guard session.configuration.category == .multiRoute else {
            throw SessionError(
                .incompatibleCategory,
                "main/cue monitoring needs category multiRoute (\(session.app) is "
                    + "\(session.configuration.category.rawValue)); `recctl session set \(session.app) --category "
                    + "multiRoute`"
            )
        }
    }

    /// `cue.outputs`, `cue.assign`, `cue.mix`, `cue.split`: the owner's changes to the buses.
    private func cue(_ command: Command, app: String) throws -> [(String, JSONValue)] {
        let session = try store.session(app)
        try checkMultiRoute(session)
        try monitoring.checkOwner(app)
        switch command {
        case .cueOutputs(_, let main, let cue):
            try monitoring.setOutputs(app: app, main: main, cue: cue, routeOutputs: session.route.outputs)
        case .cueAssign(_, let source, let bus, let gainDB):
            try monitoring.assign(app: app, source: source, bus: bus, gainDB: gainDB)
        case .cueMix(_, let mix):
            try monitoring.setMix(app: app, mix)
        case .cueSplit(_, let on):
            monitoring.setSplit(app: app, on)
        default:
            break
        }
        if !session.isActive { apply(try store.activate(app: app, forInput: false)) }
        try monitoring.publish()
        return [("monitoring", monitoring.json)]
    }
}

extension Command {
    /// Whether the command changes a session: only its owner or an administrator may.
    var changesSession: Bool {
        switch self {
        case .sessionSet, .sessionActivate, .sessionDeactivate, .sessionPrefer, .sessionOverride, .sessionDelete, .mute,
            .play, .pause, .stop, .recordStart, .recordStop, .cueOutputs, .cueAssign, .cueMix, .cueSplit,
            .sessionAttach, .sessionDetach:
            true
        // Rights to export are the caller's rights to read the source segments (checked on
        // the worker, file by file), not ownership of the session.
        case .archiveExport:
            false
        case .hello, .status, .sessionList, .sessionShow, .permissionList, .permissionRequest, .permissionDecide,
            .watch,
            .unwatch, .routes, .archiveList, .archiveVerify, .archiveReindex, .meter, .cueShow, .devicesInject:
            false
        }
    }
}


// The control loop's request handling: decode, authorize, run against the policy store,
// apply effects (events, persistence), reply.
//
// Threads: the control thread only, which feeds systemd's watchdog from `tick` and so must
// never wait long. What may take long goes to the worker (`SlowRequestWorker`: archive
// verify, reindex and retention) and state.json to the state writer (`StateWriter`); their
// completions come back here through `server.post`.
import AudioEngine
import ControlProtocol
import Platform
import SessionPolicy
import SystemSupport

#if canImport(Glibc)
    import Glibc  // log10
#endif

/// Serves the control protocol over the policy store and drives the engine.
///
/// Confined to the control thread: every method runs there (the server calls the handler
/// methods on it, and other threads only `post` closures to it), hence `@unchecked Sendable`.
final class ControlService: ControlServerHandler, @unchecked Sendable {
    var store: SessionStore
    let config: RecdConfig
    let startedAt: Double
    let adminGID: UInt32?
    weak var server: ControlServer?
    var engine: EngineController!
    let players = PlayerTable()
    let archive = ArchiveState()
    /// Runs slow requests off the control thread; set at start-up, stopped at shutdown.
    var worker: SlowRequestWorker!
    /// Writes state.json off the control thread; set at start-up, finished at shutdown.
    var stateWriter: StateWriter!
    /// The archive as worker jobs see it (used on the worker thread only).
    let maintenance: ArchiveMaintenance
    var monitoring = MonitoringState()
    var devices: DeviceState!
    /// The engine's meters over the last tick (about 100 ms), for every `meter` request alike.
    var latestMeters: [MeterReading] = []
    var meterWindow = 0.0
    private var lastMeterTime = 0.0

    private struct Client {
        var peer: PeerCredentials
        var watching = false
        var watchApp: String?
    }

    private struct PendingPermission {
        var client: ClientID
        var id: JSONValue
        var app: String
    }

    private var clients: [ClientID: Client] = [:]
    private let watchdogInterval = SystemdNotify.watchdogInterval
    private var nextWatchdog = 0.0
    private var pendingPermissions: [PendingPermission] = []

    init(config: RecdConfig, store: SessionStore, startedAt: Double) {
        self.config = config
        self.store = store
        self.startedAt = startedAt
        maintenance = ArchiveMaintenance(directory: config.archive.dir)
        self.adminGID = config.daemon.adminGroup.flatMap { name in
            UserDatabase.groupID(named: name)
        }
    }

    // MARK: ControlServerHandler

    func clientConnected(_ client: ClientID, peer: PeerCredentials) {
        clients[client] = Client(peer: peer)
    }

    func clientDisconnected(_ client: ClientID) {
        clients[client] = nil
        pendingPermissions.removeAll { $0.client == client }
        worker.clientGone(client)
        archive.pendingStops.removeAll { $0.client == client }
    }

    func clientRejected(_ client: ClientID, reason: ClientRejection) -> String? {
        let message: String
        switch reason {
        case .lineTooLong(let limit):
            message = "request line longer than \(limit) bytes; send one JSON object per line, each under \(limit) bytes"
        case .tooSlow:
            message = "client too slow (incomplete line or unread replies); reconnect and read what you ask for"
        case .tooManyClients:
            message = "too many control clients connected; close idle ones and retry"
        }
        return Wire.failure(id: .null, SessionError(.badParam, message))
    }

    /// Descriptors the client passed and the request does not take are closed by the server
    /// when this returns; `play` takes its file's.
    func clientSentLine(_ client: ClientID, line: String, descriptors: inout PassedDescriptors) {
        guard let peer = clients[client]?.peer else { return }
        switch Request.decode(line) {
        case .failure(let failure):
            send(Wire.failure(id: failure.id, failure.error), to: client)
        case .success(let request):
            let began = SystemClock.monotonicSeconds()
            defer { noteIfSlow(since: began, request.op.rawValue) }
            do {
                try Self.checkPassed(descriptors, for: request.op)
                if let fields = try handle(request, from: client, peer: peer, descriptors: &descriptors) {
                    send(Wire.success(id: request.id, fields), to: client)
                }
            } catch {
                send(Wire.failure(id: request.id, Self.replyError(error)), to: client)
            }
        }
    }

    /// Longest the control thread may spend on one request or tick before recd logs it: it
    /// feeds systemd's watchdog and answers every client, so slow work belongs on the worker.
    static let slowThreshold = 0.1

    private func noteIfSlow(since began: Double, _ what: String) {
        let busy = SystemClock.monotonicSeconds() - began
        guard busy > Self.slowThreshold else { return }
        Log.warning("control thread busy \(Int(busy * 1000)) ms in \(what); other clients and the watchdog waited")
    }

    func tick(now: Double) {
        let began = SystemClock.monotonicSeconds()
        defer { noteIfSlow(since: began, "the tick") }
        engineWoke()
        reapPlayers()
        serviceRecorders(now: now)
        if engine.isRunning {
            latestMeters = engine.engine.meters()
            meterWindow = now - lastMeterTime
            lastMeterTime = now
        }
        // WATCHDOG=1 at half the interval systemd gave: the control loop is alive.
        if let interval = watchdogInterval, now >= nextWatchdog {
            try? SystemdNotify.watchdog()
            nextWatchdog = now + interval / 2
        }
        if !store.mediaServicesAvailable, engine.tryReconnect(now: now) {
            Log.notice("JACK server is back; ports registered again")
            apply(store.updatePorts(engine.portStates))
            apply(store.mediaServicesReset())
            do { try publishMonitoring() } catch { Log.warning("monitoring after reset: \(error)") }
            startDeclaredRecorders()
        }
    }

    /// Starts the engine at daemon start; without a JACK server, media services start lost.
    func startEngine() {
        if engine.start() {
            Log.notice("connected to JACK as \(engine.engine.clientName ?? "?") (\(engine.engine.sampleRate ?? 0) Hz, \(engine.engine.bufferSize ?? 0) frames)")
            apply(store.updatePorts(engine.portStates))
            startDeclaredRecorders()
        } else {
            Log.warning("no JACK server (\(engine.lastError ?? "unknown")); sessions cannot activate until one runs. Start one with `jackd -d dummy` or the JACK unit; recd retries every 250 ms")
            apply(store.mediaServicesLost())
        }
    }

    /// The engine has news (its wake closure posted here), or the tick polls it.
    func engineWoke() {
        guard engine.isRunning || engine.engine.isServerLost else { return }
        let news = engine.drain()
        if let reason = news.serverLost ?? (engine.engine.isServerLost ? "server gone" : nil) {
            Log.error("JACK server lost (\(reason)); recordings finalized, sessions deactivated. recd reconnects when it returns")
            apply(store.mediaServicesLost())
            for player in players.all { stopPlayer(player, reason: "mediaServicesLost") }
            for stream in archive.recorders {
                archive.suspended.append(stream.spec)
                stopRecorder(stream, reason: .mediaServicesLost)
            }
            engine.engine.stop()
            engine.markAllUnavailable()
            apply(store.updatePorts(engine.portStates))
            return
        }
        if news.availabilityChanged {
            apply(store.updatePorts(engine.portStates))
        }
        engine.repairConnections()
    }

    func signalReceived(_ signo: Int32) {
        if signo == SignalMask.hangUp {
            Log.notice("SIGHUP: recd does not reload its config in place; restart it (systemctl restart recd) to apply changes")
            return
        }
        Log.notice("\(Signals.name(signo)) received; stopping")
        server?.stop()
    }

    // MARK: Requests

    private func isAdministrator(_ peer: PeerCredentials) -> Bool {
        if peer.uid == 0 { return true }
        guard let gid = adminGID else { return false }
        return peer.gid == gid || peer.groups.contains(gid)
    }

    private var adminHint: String {
        config.daemon.adminGroup.map { "run it as root or as a member of group \($0)" } ?? "run it as root (no admin_group is configured)"
    }

    /// Owners and administrators may change a session; everyone may read it.
    func authorizeChange(of app: String, by peer: PeerCredentials) throws {
        guard let session = store.sessions[app], session.ownerUID != peer.uid, !isAdministrator(peer) else { return }
        throw SessionError(.notSessionOwner, "session \(app) belongs to uid \(session.ownerUID); only its owner or an administrator may change it (\(adminHint))")
    }

    /// Descriptors passed with a request (SCM_RIGHTS) are checked after its op: only `play`
    /// takes one, its file's.
    private static func checkPassed(_ descriptors: borrowing PassedDescriptors, for op: Op) throws {
        if descriptors.refused {
            throw SessionError(
                .badParam, "too many descriptors passed with one request line; pass one, the open file, with `play`")
        }
        let allowed = op == .play ? 1 : 0
        guard descriptors.count > allowed else { return }
        throw SessionError(.badParam, op == .play
            ? "play takes one descriptor (the open file), not \(descriptors.count)"
            : "\(op.rawValue) takes no descriptor; only play does (the open file)")
    }

    /// What a failed request replies: its SessionError, or any other error as unspecified.
    static func replyError(_ error: any Error) -> SessionError {
        (error as? SessionError) ?? SessionError(.unspecified, "\(error)")
    }

    /// Returns the reply fields, or nil when the reply comes later: permission.request, and
    /// the requests done on the worker (archive.verify, archive.reindex, record.stop).
    private func handle(
        _ request: Request, from client: ClientID, peer: PeerCredentials, descriptors: inout PassedDescriptors
    ) throws -> [(String, JSONValue)]? {
        if request.op.requiresAdministrator && !isAdministrator(peer) {
            throw SessionError(.notAdministrator, "\(request.op.rawValue) needs an administrator; \(adminHint)")
        }
        switch request.op {
        case .hello:
            return [("protocol", .number(Double(protocolVersion))), ("version", .string(recdVersion)),
                    ("uid", .number(Double(peer.uid))), ("admin", .bool(isAdministrator(peer)))]
        case .status:
            return statusFields()
        case .sessionList:
            return [("sessions", .array(store.sortedSessions.map(sessionJSON)))]
        case .sessionShow:
            return [("session", sessionJSON(try store.session(try request.string("app"))))]
        case .sessionSet:
            return try sessionSet(request, peer: peer)
        case .sessionActivate:
            let app = try request.string("app")
            try authorizeChange(of: app, by: peer)
            apply(try store.activate(app: app))
            announceState(app)
            return [("session", sessionJSON(try store.session(app)))]
        case .sessionDeactivate:
            let app = try request.string("app")
            try authorizeChange(of: app, by: peer)
            apply(try store.deactivate(
                app: app, notifyOthers: try request.optionalBool("notify_others") ?? false,
                force: try request.optionalBool("force") ?? false))
            announceState(app)
            return [("session", sessionJSON(try store.session(app)))]
        case .sessionPrefer:
            return try sessionPrefer(request, peer: peer)
        case .sessionOverride:
            let app = try request.string("app")
            try authorizeChange(of: app, by: peer)
            let port = try request.string("port")
            guard port == "speaker" || port == "none" else {
                throw SessionError(.badParam, "override port \"\(port)\" is not speaker or none")
            }
            apply(try store.overrideOutput(app: app, speaker: port == "speaker"))
            return [("session", sessionJSON(try store.session(app)))]
        case .sessionDelete:
            let app = try request.string("app")
            try authorizeChange(of: app, by: peer)
            apply(try store.delete(app: app))
            return []
        case .permissionList:
            let apps = Set(store.permissions.keys).union(store.sessions.keys).sorted()
            return [("permissions", .array(apps.map { ["app": .string($0), "state": .string(store.permission($0).rawValue)] }))]
        case .permissionRequest:
            let app = try Self.checkedAppName(try request.string("app"))
            let state = store.permission(app)
            if state == .undetermined {
                pendingPermissions.append(PendingPermission(client: client, id: request.id, app: app))
                return nil
            }
            return [("app", .string(app)), ("state", .string(state.rawValue))]
        case .permissionGrant, .permissionDeny, .permissionReset:
            let app = try Self.checkedAppName(try request.string("app"))
            let state: RecordPermission = request.op == .permissionGrant ? .granted : request.op == .permissionDeny ? .denied : .undetermined
            apply(try store.decidePermission(app: app, state))
            return [("app", .string(app)), ("state", .string(state.rawValue))]
        case .mute:
            let app = try request.string("app")
            try authorizeChange(of: app, by: peer)
            guard let muted = try request.optionalBool("muted") else { throw SessionError(.badParam, "mute needs \"muted\": true or false") }
            apply(try store.setInputMuted(app: app, muted))
            return [("app", .string(app)), ("muted", .bool(muted))]
        case .watch:
            clients[client]?.watching = true
            clients[client]?.watchApp = try request.optionalString("app")
            return []
        case .unwatch:
            clients[client]?.watching = false
            return []
        case .routes:
            return routesFields()
        case .play:
            return try play(request, peer: peer, descriptors: &descriptors)
        case .recordStart:
            return try recordStart(request, peer: peer)
        case .recordStop:
            return try recordStop(request, from: client, peer: peer)
        case .archiveList:
            return try archiveList(request)
        case .archiveVerify:
            return try archiveVerify(request, from: client, peer: peer)
        case .archiveReindex:
            return archiveReindex(request, from: client)
        case .meter:
            return try meterFields(app: try request.optionalString("app"))
        case .cueOutputs, .cueAssign, .cueMix, .cueSplit, .cueShow:
            return try cue(request, peer: peer)
        case .devicesInject:
            return try injectDeviceEvents(request)
        case .pause, .stop:
            let app = try request.string("app")
            try authorizeChange(of: app, by: peer)
            _ = try store.session(app)
            let stream = try request.optionalString("stream")
            let targets = players.of(app).filter { stream == nil || $0.stream == stream }
            guard !targets.isEmpty else {
                throw SessionError(.badParam, "\(app) has no player\(stream.map { " named \($0)" } ?? ""); start one with `recctl play \(app) FILE`")
            }
            for player in targets {
                if request.op == .pause { pausePlayer(player, cause: .user) } else { stopPlayer(player, reason: "stop") }
            }
            syncStreams(app)
            return [("players", .array(players.of(app).map(\.json)))]
        }
    }

    static func checkedAppName(_ app: String) throws -> String {
        let allowed = app.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F || c == 0x2D
        }
        guard (1...64).contains(app.utf8.count), allowed, app.first != "." else {
            throw SessionError(.badParam, "app name \"\(app)\" is not valid; use 1-64 letters, digits, '.', '_' or '-', not starting with '.'")
        }
        return app
    }

    private func sessionSet(_ request: Request, peer: PeerCredentials) throws -> [(String, JSONValue)] {
        let app = try Self.checkedAppName(try request.string("app"))
        try authorizeChange(of: app, by: peer)
        let category = try Vocabulary.category(try request.string("category"))
        let mode = try Vocabulary.mode(try request.optionalString("mode") ?? "default")
        var options: Set<CategoryOption> = []
        for name in try request.optionalStrings("options") ?? [] { options.insert(try Vocabulary.option(name)) }
        let policy = try Vocabulary.policy(try request.optionalString("policy") ?? "default")
        let configuration = try SessionConfiguration.validated(category: category, mode: mode, options: options, policy: policy)
        let micUsage: String?? = request.has("mic_usage") ? .some(try request.optionalString("mic_usage")) : .none
        let prefersInterruption = try request.optionalBool("prefers_interruption_on_route_disconnect")
        try store.checkRoom(for: app)
        apply(store.configure(app: app, ownerUID: peer.uid, configuration: configuration, micUsage: micUsage))
        if let prefersInterruption {
            apply(try store.setPrefersInterruptionOnRouteDisconnect(app: app, prefersInterruption))
        }
        return [("session", sessionJSON(try store.session(app)))]
    }

    private func sessionPrefer(_ request: Request, peer: PeerCredentials) throws -> [(String, JSONValue)] {
        let app = try request.string("app")
        try authorizeChange(of: app, by: peer)
        var prefs = try request.optionalBool("clear") == true ? HardwarePreferences() : try store.session(app).preferences
        if let input = try request.optionalString("input") { prefs.preferredInput = input == "none" ? nil : input }
        if let rate = try request.optionalDouble("sample_rate") { prefs.sampleRate = rate }
        if let duration = try request.optionalDouble("io_buffer") { prefs.ioBufferDuration = duration }
        if let count = try request.optionalInt("input_channels") { prefs.inputChannels = count }
        if let count = try request.optionalInt("output_channels") { prefs.outputChannels = count }
        apply(try store.setPreferences(app: app, prefs))
        var fields: [(String, JSONValue)] = []
        if let duration = try request.optionalDouble("io_buffer"), engine.isRunning, let note = engine.applyBufferPreference(duration) {
            Log.info("\(app) prefers an IO buffer of \(duration) s: \(note)")
            fields.append(("note", .string(note)))
        }
        return [("session", sessionJSON(try store.session(app)))] + fields
    }

    private func sessionJSON(_ session: Session) -> JSONValue {
        WireFormat.session(session, store: store, actual: engine.actualHardware(route: session.route))
    }

    /// Peak and RMS in dBFS (floor -120) per channel: of an app's route ports, or of all.
    private func meterFields(app: String?) throws -> [(String, JSONValue)] {
        guard engine.isRunning else {
            throw SessionError(.mediaServicesFailed, "the JACK server is gone; meters return with mediaServicesWereReset")
        }
        var groups: Set<String>?
        if let app {
            let route = try store.session(app).route
            var names = route.inputs + route.outputs
            if monitoring.owner == app { names += monitoring.sources.keys }
            groups = Set(names.compactMap { config.port(named: $0) }.flatMap {
                [EngineController.inputGroup($0), EngineController.outputGroup($0)].compactMap { $0 }
            })
            // The DJ's own buses (the engine names their groups main and cue).
            if monitoring.owner == app { groups?.formUnion(Bus.allCases.map(\.rawValue)) }
        }
        func db(_ value: Float) -> JSONValue { .number(value > 0 ? max(-120, (20 * log10(Double(value)) * 100).rounded() / 100) : -120) }
        let readings = latestMeters.filter { groups?.contains($0.group) ?? true }.map { reading -> JSONValue in
            [
                "name": .string(reading.name), "group": .string(reading.group), "channel": .number(Double(reading.channel + 1)),
                "direction": .string(reading.direction.rawValue), "peak_db": db(reading.peak), "rms_db": db(reading.rms),
            ]
        }
        return [("meters", .array(readings)), ("window_ms", .number((meterWindow * 1000).rounded()))]
    }

    private func routesFields() -> [(String, JSONValue)] {
        let ports: [JSONValue] = engine.describePorts().map { entry in
            let port = entry.port
            return [
                "name": .string(port.name), "type": .string(port.type.rawValue), "direction": .string(port.direction.rawValue),
                "channels": .number(Double(port.channels)), "available": .bool(entry.available),
                "jack": JSONValue(port.direction == .duplex ? port.jackIn + port.jackOut : port.jack),
                "recd_ports": JSONValue(entry.recdPorts), "capabilities": JSONValue(port.capabilities.map(\.rawValue).sorted()),
                "codec": JSONValue(port.codec?.rawValue), "sense": JSONValue(port.sense), "connected_order": .number(Double(entry.order)),
            ]
        }
        let sessions: [JSONValue] = store.sortedSessions.map {
            ["app": .string($0.app), "state": .string($0.state.rawValue), "route": WireFormat.route($0.route)]
        }
        return [("ports", .array(ports)), ("sessions", .array(sessions))]
    }

    private func statusFields() -> [(String, JSONValue)] {
        let active = store.sortedSessions.filter(\.isActive).map(\.app)
        return [
            ("daemon", [
                "version": .string(recdVersion), "protocol": .number(Double(protocolVersion)),
                "pid": .number(Double(CurrentProcess.id)), "uptime": .number((SystemClock.monotonicSeconds() - startedAt).rounded()),
                "config": .string(config.source), "socket": .string(config.daemon.socket),
                "state_dir": .string(config.daemon.stateDir), "archive_dir": .string(config.archive.dir),
            ]),
            ("jack", [
                "connected": .bool(engine.isRunning), "client": JSONValue(engine.engine.clientName),
                "server": JSONValue(config.jack.server ?? "default"),
                "sampleRate": JSONValue(engine.engine.sampleRate), "bufferSize": JSONValue(engine.engine.bufferSize),
                "xruns": .number(Double(engine.engine.xruns)), "mediaServicesAvailable": .bool(store.mediaServicesAvailable),
                "error": JSONValue(engine.isRunning ? nil : engine.lastError),
            ]),
            ("sessions", .array(store.sortedSessions.map(sessionJSON))),
            ("active", JSONValue(active)),
            ("players", .array(players.all.map(\.json))),
            ("recorders", .array(archive.recorders.map(\.json))),
            ("cards", .array(devices.cards.map { ["index": .number(Double($0.index)), "id": .string($0.id), "name": .string($0.name), "usb": .bool($0.isUSB)] })),
            ("archive", archiveStatus()),
        ]
    }

    // MARK: Effects

    private func announceState(_ app: String) {
        guard let session = store.sessions[app] else { return }
        broadcast(app: app, ["event": "session", "app": .string(app), "state": .string(session.state.rawValue)])
    }

    /// Applies policy effects: events to watchers, persistence, pending permission replies.
    func apply(_ effects: [PolicyEffect]) {
        var persist = false
        for effect in effects {
            applyStreamEffect(effect)
            applyRecorderEffect(effect)
            switch effect {
            case .sessionDeleted(let app):
                persist = true
                releaseMonitoring(app: app)
            case .sessionChanged(let app):
                persist = true
                if store.sessions[app]?.configuration.category != .multiRoute { releaseMonitoring(app: app) }
            case .recordPermission(let app, let state):
                persist = true
                resolvePermissionRequests(app: app, state: state)
            default: break
            }
            if let (app, event) = WireFormat.event(effect, store: store) {
                broadcast(app: app, event)
            }
        }
        if persist { save() }
    }

    private func resolvePermissionRequests(app: String, state: RecordPermission) {
        guard state != .undetermined else { return }
        let ready = pendingPermissions.filter { $0.app == app }
        pendingPermissions.removeAll { $0.app == app }
        for pending in ready {
            send(Wire.success(id: pending.id, [("app", .string(app)), ("state", .string(state.rawValue))]), to: pending.client)
        }
    }

    func broadcastEvent(app: String?, _ event: JSONValue) { broadcast(app: app, event) }

    private func broadcast(app: String?, _ event: JSONValue) {
        let line = event.jsonText
        for (id, client) in clients where client.watching {
            if let filter = client.watchApp, let app, filter != app { continue }
            send(line, to: id)
        }
    }

    func send(_ line: String, to client: ClientID) {
        server?.send(line, to: client)
    }

    /// Stops streams, leaves JACK cleanly and writes the final state (SIGTERM, end of the
    /// control loop).
    func shutdown() {
        stopDevices()
        for player in players.all { stopPlayer(player, reason: "stop") }
        stopAllRecordersAndWait()
        engine.engine.stop()
        // Last: a verify still decoding ends after its current file; recordings are safe by now.
        worker.stop()
        stateWriter.finish(PersistedState(store: store))
    }

    /// Persists sessions and permissions (written on the state writer's thread).
    func save() { stateWriter.save(PersistedState(store: store)) }
}

/// This build's version, reported by `hello` and `status`.
public let recdVersion = "0.1.0"

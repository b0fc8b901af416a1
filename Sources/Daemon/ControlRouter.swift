// The router: every request is decoded into a typed `Command`, authorized, run against the
// policy store, and its effects handed to the services that care; then it is answered. The
// router owns the clients and their watches, the replies that come later, the `SessionStore`
// (it alone changes it) and persistence; the services own players, recorders, the buses and
// the devices (see docs/architecture.md, "Daemon: router and services").
//
// Threads: the control thread only, which feeds systemd's watchdog from `tick` and so must
// never wait long. What may take long goes elsewhere and comes back through `link.post`: the
// worker (`SlowRequestWorker`: archive verify, reindex and retention), the state writer
// (`StateWriter`), and the players' starter (file headers and pre-roll, `PlayerService`).
import Archive
import AudioEngine
import Codec
import ControlProtocol
import Devices
import Platform
import SessionPolicy
import SystemSupport

/// What the router needs of the control server: lines to clients, and work brought to the
/// control thread. `ControlServer` is the one implementation; its rules apply (send on the
/// control thread, post from any thread).
protocol ClientLink: AnyObject, Sendable {
    func send(_ line: String, to client: ClientID)
    func post(_ work: @escaping @Sendable () -> Void)
    /// Ends the control loop after the current iteration.
    func stop()
}

extension ControlServer: ClientLink {}

/// Serves the control protocol: decode → authorize → policy → effects → reply.
///
/// Confined to the control thread: every method runs there (the server calls the handler
/// methods on it, and other threads only `post` closures to it), hence `@unchecked Sendable`.
final class ControlRouter: ControlServerHandler, EventSink, @unchecked Sendable {
    private(set) var store: SessionStore
    let config: RecdConfig
    let startedAt: Double
    /// Who may do what: administrators, session owners, passed descriptors, names.
    let gate: RequestGate
    let link: any ClientLink
    let engine: EngineController
    let players: PlayerService
    let recorders: RecorderService
    let monitoring: MonitoringService
    let devices: DeviceService
    let attachments: AttachmentService
    /// Runs slow requests off the control thread (archive verify, reindex, retention).
    let worker: SlowRequestWorker
    /// Writes state.json off the control thread.
    let stateWriter: StateWriter
    /// Off-box copies of finished segments; nil without `[replicate] remote`.
    let replication: ReplicationService?
    /// The meters: measured while someone reads them (`meter`, the status page, the metrics).
    let meters: MeterService

    private struct Client {
        var peer: PeerCredentials
        var watching = false
        var watchApp: String?
        /// The protocol version of the client's latest request: how its lines are spelled.
        var version = 1
    }

    /// A `permission.request` waiting for an administrator's decision.
    private struct PendingPermission {
        var client: ClientID
        var id: JSONValue
        var app: String
    }

    /// A `record.stop` reply waiting for the recorders it stopped to finish their files.
    private struct PendingStop {
        var client: ClientID
        var id: JSONValue
        var waitingFor: [ObjectIdentifier]
        /// The recorders as they were when asked to stop: the reply's `recorders`.
        var recorders: [JSONValue]
    }

    private var clients: [ClientID: Client] = [:]
    private let watchdogInterval = SystemdNotify.watchdogInterval
    private var nextWatchdog = 0.0
    private var pendingPermissions: [PendingPermission] = []
    private var pendingStops: [PendingStop] = []

    /// The router as the services and the engine's wake know it: they are made before the
    /// router exists, and must not keep it alive.
    private final class Handle: EventSink, @unchecked Sendable {
        weak var router: ControlRouter?

        func broadcast(_ event: Event) { router?.broadcast(event) }
    }

    /// Makes the engine controller, the worker threads and the services; nothing starts
    /// talking to JACK or ALSA until `startEngine` and `startDevices`.
    init(config: RecdConfig, store: SessionStore, stateFile: StateFile, startedAt: Double, link: any ClientLink)
        throws(SystemError)
    {
        self.config = config
        self.store = store
        self.startedAt = startedAt
        self.link = link
        self.gate = RequestGate(adminGroup: config.daemon.adminGroup)
        let handle = Handle()
        let deliver: SlowRequestWorker.Deliver = { [link] work in link.post(work) }
        engine = EngineController(config: config) { [link] in link.post { handle.router?.engineWoke() } }
        worker = try SlowRequestWorker(name: "slow worker", deliver: deliver)
        stateWriter = try StateWriter(file: stateFile, deliver: deliver)
        let players = try PlayerService(engine: engine, sink: handle, deliver: deliver)
        recorders = RecorderService(
            settings: config.archive, declared: config.sessions.map { ($0.app, $0.record) }, engine: engine,
            sink: handle, worker: worker, wake: { [link] in link.post { handle.router?.recordersWoke() } },
            sessionSilence: Dictionary(uniqueKeysWithValues: config.sessions.map { ($0.app, $0.silence) }),
            silenceRunner: try SilenceAlarms.makeRunner(for: config, deliver: deliver))
        let monitoring = MonitoringService(engine: engine) { [unowned players] app, stream in
            players.get(app, stream)?.handle.id
        }
        players.playersChanged = { [unowned monitoring] app in monitoring.playersChanged(app: app) }
        let bindings =
            (try? DeviceService.bindings(for: config).get()) ?? (try! DeviceBindings([DeviceBindings.Declaration]()))
        devices = DeviceService(bindings: bindings, engine: engine)
        attachments = AttachmentService(engine: engine, sink: handle)
        meters = MeterService(
            engine: engine,
            sources: MeterService.Sources(
                groups: { app in try handle.router?.meterGroups(of: app) ?? [] },
                loudness: { app in handle.router?.recordingLoudness(of: app) ?? [] }))
        replication = try ReplicationService(config: config, deliver: deliver)
        if let replication {
            recorders.replicationRemote = replication.remote
            recorders.onSegmentFinished = { [unowned replication] in replication.segmentFinished($0) }
        }
        self.players = players
        self.monitoring = monitoring
        handle.router = self
    }

    // MARK: ControlServerHandler

    func clientConnected(_ client: ClientID, peer: PeerCredentials) {
        clients[client] = Client(peer: peer)
    }

    func clientDisconnected(_ client: ClientID) {
        let pid = clients[client]?.peer.pid
        clients[client] = nil
        pendingPermissions.removeAll { $0.client == client }
        worker.clientGone(client)
        players.clientGone(client)
        attachments.clientGone(client)
        pendingStops.removeAll { $0.client == client }
        // A process's last connection closed: it ended (exit, crash, SIGKILL), or let go of
        // recd. Whatever it held active is deactivated as with notifyOthers.
        if let pid, pid > 0, !clients.values.contains(where: { $0.peer.pid == pid }) { holderEnded(pid) }
    }

    /// Deactivates the sessions process `pid` held (`session.activate` with `hold`).
    private func holderEnded(_ pid: Int32) {
        let held = store.sessions.values.filter { $0.holder == pid && $0.state != .inactive }.map(\.app).sorted()
        guard !held.isEmpty else { return }
        Log.notice(
            "process \(pid) ended holding \(held.joined(separator: ", ")): deactivated as with notifyOthers "
                + "(an application's activation lasts as long as the application)")
        apply(store.holderEnded(pid))
        for app in held { announceState(app) }
    }

    func clientRejected(_ client: ClientID, reason: ClientRejection) -> String? {
        let message: String
        switch reason {
        case .lineTooLong(let limit):
            message =
                "request line longer than \(limit) bytes; send one JSON object per line, each under \(limit) bytes"
        case .tooSlow:
            message = "client too slow (incomplete line or unread replies); reconnect and read what you ask for"
        case .tooManyClients:
            message = "too many control clients connected; close idle ones and retry"
        }
        return Wire.failure(id: .null, SessionError(.badParam, message))
    }

    /// Checks in the protocol's fixed order (the line's shape, id, version and op in
    /// `Request.decode`, then passed descriptors, arguments, authorization), then runs the
    /// command. Descriptors the client passed and the command does not take are closed by the
    /// server when this returns; `play` takes its file's.
    func clientSentLine(_ client: ClientID, line: String, descriptors: inout PassedDescriptors) {
        guard let peer = clients[client]?.peer else { return }
        switch Request.decode(line) {
        case .failure(let failure):
            send(Wire.failure(id: failure.id, failure.error), to: client)
        case .success(let request):
            clients[client]?.version = request.version
            let began = SystemClock.monotonicSeconds()
            defer { noteIfSlow(since: began, request.op.rawValue) }
            do {
                try RequestGate.checkPassed(descriptors, for: request.op)
                let command = try Command(request)
                try gate.authorize(command, peer: peer) { store.sessions[$0]?.ownerUID }
                if let fields = try run(command, id: request.id, from: client, peer: peer, descriptors: &descriptors) {
                    send(Wire.success(id: request.id, fields), to: client)
                }
            } catch {
                send(Wire.failure(id: request.id, RequestGate.replyError(error)), to: client)
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
        for app in players.reap() { syncStreams(app) }
        // Whatever path started, paused or stopped a player, the hint follows within a tick.
        syncPlayers()
        handle(recorders.service(now: now))
        replication?.service(now: now)
        keepPreRolls()
        meters.tick(now: now)
        // WATCHDOG=1 at half the interval systemd gave: the control loop is alive.
        if let interval = watchdogInterval, now >= nextWatchdog {
            try? SystemdNotify.watchdog()
            nextWatchdog = now + interval / 2
        }
        if !store.mediaServicesAvailable, engine.tryReconnect(now: now) {
            Log.notice("JACK server is back; ports registered again")
            apply(store.updatePorts(engine.portStates))
            apply(store.mediaServicesReset())
            do { try monitoring.publish() } catch { Log.warning("monitoring after reset: \(error)") }
            startDeclaredRecorders()
        }
        resumeWaitingRecorders(now: now)
    }

    /// Ticks come every 100 ms while anything here is polled: meters someone reads, players
    /// (their ends are reaped), attachments, level triggers, a recorder whose start time is not
    /// placed yet, a lost JACK server (retried every 250 ms). Otherwise (a logger recording
    /// with nobody connected, or idle) every 500 ms: retention, replication and the watchdog
    /// need no more, and everything else arrives as posted work, which brings the tick back.
    var wantsFrequentTicks: Bool {
        !store.mediaServicesAvailable || meters.isOn || meters.isWanted || !players.all.isEmpty
            || !attachments.attachments.isEmpty
            || !recorders.triggers.armed.isEmpty || recorders.recorders.contains { $0.source.startTime == nil }
    }

    func signalReceived(_ signo: Int32) {
        if signo == SignalMask.hangUp {
            Log.notice(
                "SIGHUP: recd does not reload its config in place; restart it (systemctl restart recd) to apply changes"
            )
            return
        }
        Log.notice("\(Signals.name(signo)) received; stopping")
        link.stop()
    }

    // MARK: Start-up and the engine

    /// Recovers partial files left by a crash and opens the archive index.
    func openArchive() {
        recorders.openArchive()
        replication?.start()
    }

    /// Starts the engine at daemon start; without a JACK server, media services start lost.
    func startEngine() {
        if engine.start() {
            Log.notice(
                "connected to JACK server '\(engine.serverName)' (\(engine.implementation.kind.rawValue), libjack "
                    + "\(engine.implementation.version)) as \(engine.clientName ?? "?") (\(engine.sampleRate ?? 0) Hz, "
                    + "\(engine.bufferSize ?? 0) frames)"
            )
            apply(store.updatePorts(engine.portStates))
            startDeclaredRecorders()
        } else {
            let howToStart =
                engine.implementation.kind == .pipewire
                ? "start PipeWire (PIPEWIRE_REMOTE, else [jack] server, names its socket in PIPEWIRE_RUNTIME_DIR or "
                    + "XDG_RUNTIME_DIR)"
                : "start one with `jackd -d dummy` or the JACK unit"
            Log.warning(
                "no JACK server '\(engine.serverName)' (\(engine.lastError ?? "unknown")); sessions cannot activate "
                    + "until one runs: \(howToStart); recd retries every 250 ms"
            )
            apply(store.mediaServicesLost())
        }
    }

    /// Starts the device event source (ALSA, or the scripted one); its events come here.
    func startDevices(environment: [String: String]) {
        devices.start(environment: environment) { [link] events in
            link.post { [weak self] in self?.deviceEvents(events) }
        }
    }

    /// The engine has news (its wake closure posted here), or the tick polls it.
    func engineWoke() {
        guard engine.isRunning || engine.isServerLost else { return }
        let news = engine.drain()
        if let reason = news.serverLost ?? (engine.isServerLost ? "server gone" : nil) {
            Log.error(
                "JACK server lost (\(reason)); recordings finalized, sessions deactivated. recd reconnects when it "
                    + "returns"
            )
            apply(store.mediaServicesLost())
            players.stopAll(reason: "mediaServicesLost")
            attachments.endAll(reason: .mediaServicesLost)
            recorders.suspendAllForMediaServicesLoss()
            engine.stop()
            apply(store.updatePorts(engine.portStates))
            return
        }
        if news.availabilityChanged {
            apply(store.updatePorts(engine.portStates))
        }
        if let rate = news.sampleRate { followSampleRate(rate) }
        if news.configurationChanged {
            Log.notice(
                "JACK's configuration changed: \(engine.bufferSize ?? 0) frames a period at \(engine.sampleRate ?? 0) Hz; "
                    + "active sessions get routeConfigurationChange")
            apply(store.routeConfigurationChanged())
        }
        engine.repairConnections()
        attachments.engineWoke()
    }

    /// The sample rate changed under the running client (PipeWire's JACK can do that; jackd2
    /// only with a new server). Players stop (their files were converted to the old rate; a
    /// stream that played on would be off pitch, so, like AVAudioEngine after a configuration
    /// change, the app starts it again); recorders end their segment and go on in a new one at
    /// the new rate.
    private func followSampleRate(_ rate: Int) {
        let reason = "sampleRateChange"
        var apps = Set(players.all.map(\.app))
        if !players.all.isEmpty {
            Log.notice("JACK's sample rate is now \(rate) Hz: players stopped (\(reason)); play them again")
        }
        players.stopAll(reason: reason)
        for spec in recorders.endAllForNewRate(reason: EndReason(rawValue: reason)) {
            apps.insert(spec.app)
            do {
                _ = try startRecorder(spec)
            } catch {
                Log.error("\(spec.app): could not go on recording \(spec.stream) at \(rate) Hz: \(error)")
                recorders.couldNotResume(spec, error: error)
            }
        }
        for app in apps.sorted() { syncStreams(app) }
    }

    /// Device events (posted by the event source): availability and hardware mutes to the policy.
    func deviceEvents(_ events: [DeviceEvent]) {
        let news = devices.handle(events)
        for mute in news.hardwareMutes { apply(store.setHardwareMuted(port: mute.port, mute.muted)) }
        if news.availabilityChanged { apply(store.updatePorts(engine.portStates)) }
    }

    /// A recorder has events (posted from its archiver thread).
    func recordersWoke() { handle(recorders.handleEvents()) }

    /// Answers the `record.stop` requests whose recorders are all finished; tells the policy
    /// about recorders that stopped by themselves.
    private func handle(_ news: RecorderNews) {
        for finished in news.finished {
            for index in pendingStops.indices { pendingStops[index].waitingFor.removeAll { $0 == finished } }
        }
        for stop in pendingStops where stop.waitingFor.isEmpty {
            send(Wire.success(id: stop.id, [("recorders", .array(stop.recorders))]), to: stop.client)
        }
        pendingStops.removeAll { $0.waitingFor.isEmpty }
        for app in news.stoppedByThemselves.sorted() { syncStreams(app) }
    }

    // MARK: Authorization

    private func isAdministrator(_ peer: PeerCredentials) -> Bool { gate.isAdministrator(peer) }

    /// Owners and administrators may change a session; everyone may read it.
    private func authorizeChange(of app: String, by peer: PeerCredentials) throws {
        try gate.authorizeChange(of: app, ownedBy: store.sessions[app]?.ownerUID, by: peer)
    }

    /// A stream name a client gives (`play`, `record.start`): it is kept in the players and
    /// recorders, shown in every `status` and event, and part of segment file names, so it is
    /// bounded like an app name: 1-64 bytes, no control characters.
    static func checkStreamName(_ stream: String?) throws {
        guard let stream else { return }
        let printable = stream.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
        guard (1...64).contains(stream.utf8.count), printable else {
            throw SessionError(
                .badParam,
                "stream name \"\(stream.prefix(64))\(stream.utf8.count > 64 ? "..." : "")\" is not valid; use 1-64 "
                    + "bytes without control characters")
        }
    }

    // MARK: Commands

    /// Returns the reply fields, or nil when the reply comes later: permission.request,
    /// play with a file (once the player really plays), record.stop (once the files are
    /// finished), and the requests done on the worker (archive.verify, archive.reindex).
    private func run(
        _ command: Command, id: JSONValue, from client: ClientID, peer: PeerCredentials,
        descriptors: inout PassedDescriptors
    ) throws -> [(String, JSONValue)]? {
        switch command {
        case .hello:
            return HelloInfo(
                protocolVersion: protocolVersion, version: recdVersion, uid: Int(peer.uid), admin: isAdministrator(peer)
            ).fields
        case .status:
            return statusFields()
        case .sessionList(let offset, let limit):
            return try sessionPage(offset: offset, limit: limit).fields
        case .sessionShow(let app):
            return [("session", sessionJSON(try store.session(app)))]
        case .sessionSet(let settings):
            return try sessionSet(settings, peer: peer)
        case .sessionActivate(let app, let hold):
            // pid 0: the peer is in another pid namespace; nothing to follow.
            let effects = try store.activate(app: app, holder: hold && peer.pid > 0 ? peer.pid : nil)
            attachments.allowAgain(of: app)
            apply(effects)
            announceState(app)
            return [("session", sessionJSON(try store.session(app)))]
        case .sessionDeactivate(let app, let notifyOthers, let force):
            apply(try store.deactivate(app: app, notifyOthers: notifyOthers, force: force))
            announceState(app)
            return [("session", sessionJSON(try store.session(app)))]
        case .sessionPrefer(let change):
            return try sessionPrefer(change)
        case .sessionOverride(let app, let speaker):
            apply(try store.overrideOutput(app: app, speaker: speaker))
            return [("session", sessionJSON(try store.session(app)))]
        case .sessionDelete(let app):
            apply(try store.delete(app: app))
            return []
        case .permissionList:
            let apps = Set(store.permissions.keys).union(store.sessions.keys).sorted()
            return [
                (
                    "permissions",
                    .array(apps.map { PermissionInfo(app: $0, state: store.permission($0).rawValue).json })
                )
            ]
        case .permissionRequest(let app):
            let app = try RequestGate.checkedAppName(app)
            let state = store.permission(app)
            if state == .undetermined {
                pendingPermissions.append(PendingPermission(client: client, id: id, app: app))
                return nil
            }
            return PermissionInfo(app: app, state: state.rawValue).fields
        case .permissionDecide(let app, let state):
            let app = try RequestGate.checkedAppName(app)
            apply(try store.decidePermission(app: app, state))
            return PermissionInfo(app: app, state: state.rawValue).fields
        case .mute(let app, let muted):
            apply(try store.setInputMuted(app: app, muted))
            return MuteInfo(app: app, muted: muted).fields
        case .watch(let app):
            clients[client]?.watching = true
            clients[client]?.watchApp = app
            return []
        case .unwatch:
            clients[client]?.watching = false
            return []
        case .routes:
            return routesFields()
        case .play(let play):
            return try self.play(play, id: id, from: client, peer: peer, descriptors: &descriptors)
        case .pause(let app, let stream), .stop(let app, let stream):
            _ = try store.session(app)
            let targets = players.of(app).filter { stream == nil || $0.stream == stream }
            guard !targets.isEmpty else {
                throw SessionError(
                    .badParam,
                    "\(app) has no player\(stream.map { " named \($0)" } ?? ""); start one with `recctl play \(app) "
                        + "FILE`"
                )
            }
            for player in targets {
                if command.op == .pause {
                    players.pause(player, cause: .user)
                } else {
                    players.stop(player, reason: "stop")
                }
            }
            syncStreams(app)
            return [("players", .array(players.of(app).map(\.json)))]
        case .recordStart(let start):
            return try recordStart(start)
        case .recordStop(let app, let stream):
            _ = try store.session(app)
            // An armed recorder is disarmed (its take, if one runs, stops below).
            if disarmTrigger(app), !recorders.isRecording(app) {
                return [("recorders", .array([])), ("disarmed", true)]
            }
            let stopped = try recorders.stopRecording(app: app, stream: stream)
            syncStreams(app)
            pendingStops.append(
                PendingStop(client: client, id: id, waitingFor: stopped.map(\.id), recorders: stopped.map(\.json)))
            return nil
        case .archiveList(let app, let since, let offset, let limit):
            return try recorders.archiveList(app: app, since: since, offset: offset, limit: limit)
        case .archiveVerify(let path, let progress):
            try recorders.verify(
                path: path, uid: peer.uid, groups: Set(peer.groups + [peer.gid]), for: client,
                progress: progress ? progressSender(to: client, id: id) : nil, reply: replier(to: client, id: id))
            return nil
        case .archiveReindex:
            recorders.reindex(for: client, reply: replier(to: client, id: id))
            return nil
        case .archiveExport(let export):
            try recorders.export(
                export, output: descriptors.take(), uid: peer.uid, groups: Set(peer.groups + [peer.gid]), for: client,
                reply: replier(to: client, id: id))
            return nil
        case .meter(let app):
            return try meters.request(app: app, reply: replier(to: client, id: id))
        case .cueShow(let app):
            try checkMultiRoute(try store.session(app))
            return [("monitoring", monitoring.json)]
        case .cueOutputs(let app, _, _), .cueAssign(let app, _, _, _), .cueMix(let app, _), .cueSplit(let app, _):
            return try cue(command, app: app)
        case .devicesInject(let events):
            return [("injected", .number(Double(try devices.inject(events))))]
        case .sessionAttach(let request):
            return try attach(request, from: client, peer: peer)
        case .sessionDetach(let app, let client):
            _ = try store.session(app)
            try attachments.detach(app: app, client: client)
            return []
        }
    }

    /// `session.attach`: the caller changes the session (checked by `authorize`) and must own
    /// the JACK client (administrators may attach any).
    private func attach(_ request: AttachRequest, from client: ClientID, peer: PeerCredentials) throws
        -> [(String, JSONValue)]
    {
        let session = try store.session(request.app)
        if !isAdministrator(peer) {
            guard let uid = attachments.clientUID(request.client) else {
                throw SessionError(
                    .notSessionOwner,
                    "recd cannot tell whose JACK client \(request.client) is; ask an administrator to attach it")
            }
            guard uid == peer.uid else {
                throw SessionError(
                    .notSessionOwner,
                    "JACK client \(request.client) runs as uid \(uid), not as you (uid \(peer.uid)); attach your own "
                        + "application's client, or ask an administrator")
            }
        }
        let info = try attachments.attach(
            request, category: session.configuration.category, owner: client, session: attachmentView(session))
        return [("attachment", info.json)]
    }

    /// What the attachments need to know of a session.
    private func attachmentView(_ session: Session) -> AttachmentService.SessionView {
        AttachmentService.SessionView(
            isActive: session.isActive, outputs: session.route.outputs, input: session.route.inputs.first,
            duckDB: session.duckedBy == nil ? 0 : store.duckLevelDB,
            capturesSilenced: store.capturesSilenced(app: session.app),
            canPlay: session.configuration.category.hasOutput, canRecord: session.configuration.category.hasInput)
    }

    /// Brings every attachment in line with the policy.
    private func syncAttachments() {
        for app in attachments.apps {
            guard let session = store.sessions[app] else { continue }
            attachments.sync(app: app, attachmentView(session))
        }
    }

    /// A reply that comes later, from the control thread: `fields`, or the error.
    private func replier(to client: ClientID, id: JSONValue) -> RecorderService.Reply {
        { [weak self] result in
            switch result {
            case .success(let fields): self?.send(Wire.success(id: id, fields), to: client)
            case .failure(let error): self?.send(Wire.failure(id: id, error), to: client)
            }
        }
    }

    private func progressSender(to client: ClientID, id: JSONValue) -> @Sendable (Int, Int) -> Void {
        { [weak self] done, total in self?.send(Wire.progress(id: id, done: done, total: total), to: client) }
    }

    private func sessionSet(_ settings: SessionSettings, peer: PeerCredentials) throws -> [(String, JSONValue)] {
        let app = try RequestGate.checkedAppName(settings.app)
        let configuration = try SessionConfiguration.validated(
            category: settings.category, mode: settings.mode, options: settings.options, policy: settings.policy)
        try store.checkRoom(
            for: app, micUsage: settings.micUsage, by: .init(uid: peer.uid, isAdministrator: isAdministrator(peer)))
        // On an active session this is arbitrated like an activation: a refusal changes nothing.
        let effects = try store.configure(
            app: app, ownerUID: peer.uid, configuration: configuration, micUsage: settings.micUsage)
        apply(effects)
        if let prefers = settings.prefersInterruptionOnRouteDisconnect {
            apply(try store.setPrefersInterruptionOnRouteDisconnect(app: app, prefers))
        }
        return [("session", sessionJSON(try store.session(app)))]
    }

    private func sessionPrefer(_ change: PreferenceChange) throws -> [(String, JSONValue)] {
        let app = change.app
        var prefs = change.clear ? HardwarePreferences() : try store.session(app).preferences
        if let input = change.input { prefs.preferredInput = input == "none" ? nil : input }
        if let rate = change.sampleRate { prefs.sampleRate = rate }
        if let duration = change.ioBuffer { prefs.ioBufferDuration = duration }
        if let count = change.inputChannels { prefs.inputChannels = count }
        if let count = change.outputChannels { prefs.outputChannels = count }
        let before = try store.session(app).preferences
        apply(try store.setPreferences(app: app, prefs))
        applyChannelPreferences(of: app, before: before, after: prefs)
        var fields: [(String, JSONValue)] = []
        if let duration = change.ioBuffer, engine.isRunning, let note = engine.applyBufferPreference(duration) {
            Log.info("\(app) prefers an IO buffer of \(duration) s: \(note)")
            fields.append(("note", .string(note)))
        }
        return [("session", sessionJSON(try store.session(app)))] + fields
    }

    /// Preferred channel counts take effect at once on running streams (SPEC §5): players that
    /// follow the route re-route to the port's first N channels (crossfaded); an input
    /// recorder whose channel count changes goes on in a new segment with the new count
    /// (END_REASON=routeChange, continuous in time, as for an input switch).
    private func applyChannelPreferences(of app: String, before: HardwarePreferences, after: HardwarePreferences) {
        if before.outputChannels != after.outputChannels {
            players.applyChannelLimit(of: app, channelLimit: after.outputChannels(ofPort:))
        }
        guard before.inputChannels != after.inputChannels else { return }
        for stream in recorders.of(app) where stream.spec.bus == nil {
            guard let port = config.port(named: stream.spec.port),
                after.inputChannels(ofPort: port.channels) != stream.tap.channels
            else { continue }
            do {
                try startRecorder(stream.spec, replacing: stream)
            } catch {
                Log.error("\(app): \(stream.spec.stream) keeps \(stream.tap.channels) channels: \(error)")
            }
        }
    }

    /// How many of a port's first channels `app`'s players use (its preferred output channels).
    private func channelLimit(of app: String) -> PlayerService.ChannelLimit {
        store.sessions[app]?.preferences.outputChannels(ofPort:) ?? { $0 }
    }

    // MARK: Players

    private func checkCanPlay(_ session: Session) throws {
        guard session.configuration.category.hasOutput else {
            throw SessionError(
                .incompatibleCategory,
                "category \(session.configuration.category.rawValue) cannot play; set playback, playAndRecord or "
                    + "multiRoute"
            )
        }
    }

    /// `play`: a new file on a stream (replacing what that stream played), or, without a file,
    /// resuming the session's paused players. Activates the session (arbitration applies).
    ///
    /// recd never opens the path a request names: the client opens the file with its own
    /// rights and passes the descriptor with the request line (`descriptors`, SCM_RIGHTS);
    /// `file` is only its display name. A `ReadOnlyFile` owns the descriptor from here on and
    /// closes it when the player (and the probe) are gone.
    ///
    /// The file's header is read on the player starter's thread first: a bad file changes
    /// nothing (no activation). Then, back here, `startPlayer`; the reply comes when the
    /// player plays. Meanwhile the control thread serves everyone else.
    private func play(
        _ play: PlayRequest, id: JSONValue, from client: ClientID, peer: PeerCredentials,
        descriptors: inout PassedDescriptors
    ) throws -> [(String, JSONValue)]? {
        let app = play.app
        try Self.checkStreamName(play.stream)
        let session = try store.session(app)
        try checkCanPlay(session)
        guard let path = play.file else {
            guard descriptors.isEmpty else {
                throw SessionError(
                    .badParam,
                    "a descriptor passed with play needs \"file\", the file's name for events and status "
                        + "(its absolute path)")
            }
            let paused = players.of(app).filter {
                $0.pausedBy != nil && (play.stream == nil || $0.stream == play.stream)
            }
            guard !paused.isEmpty else {
                throw SessionError(
                    .cannotStartPlaying, "\(app) has no paused player to resume; give a file: `recctl play \(app) FILE`"
                )
            }
            if !session.isActive { apply(try store.activate(app: app, forInput: false)) }
            let outputs = try store.session(app).route.outputs
            let limit = try store.session(app).preferences.outputChannels(ofPort:)
            for player in paused { try players.resume(player, routeOutputs: outputs, channelLimit: limit) }
            syncStreams(app)
            return [("players", .array(players.of(app).map(\.json)))]
        }
        guard let descriptor = descriptors.take() else {
            throw SessionError(
                .badParam,
                "recd does not open files named in requests; open \(path) yourself and pass the descriptor "
                    + "with the request line (SCM_RIGHTS), as `recctl play` does")
        }
        let file: ReadOnlyFile
        do {
            file = try ReadOnlyFile(adopting: descriptor, name: path)
        } catch {
            throw SessionError(.cannotStartPlaying, "cannot play \(path): \(error.message)")
        }
        players.probe(file, for: client) { [weak self] probed in
            guard let self else { return }
            let started: PlayerService.Started = { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let player):
                    syncStreams(app)
                    send(Wire.success(id: id, [("player", player)]), to: client)
                case .failure(let error):
                    send(Wire.failure(id: id, error), to: client)
                }
            }
            do {
                try startPlayer(play, file: try probed.get(), peer: peer, started: started)
            } catch {
                started(.failure(RequestGate.replyError(error)))
            }
        }
        return nil
    }

    /// The policy part of starting a player, once its file's header is known to be good: the
    /// session may have changed meanwhile, so it is checked again; then activation, the route
    /// and the port, and the player service starts the player.
    private func startPlayer(
        _ play: PlayRequest, file: ProbedFile, peer: PeerCredentials, started: @escaping PlayerService.Started
    ) throws {
        let app = play.app
        try authorizeChange(of: app, by: peer)
        let session = try store.session(app)
        try checkCanPlay(session)
        try store.checkPlayerRoom(
            app: app, newStream: players.get(app, play.stream ?? "main") == nil, players: players.countsByApp,
            by: .init(uid: peer.uid, isAdministrator: isAdministrator(peer)))
        guard engine.isRunning else {
            throw SessionError(
                .mediaServicesFailed, "the JACK server is gone; wait for mediaServicesWereReset and play again")
        }
        if !session.isActive { apply(try store.activate(app: app, forInput: false)) }
        let route = try store.session(app).route
        guard let port = play.to?.port ?? route.outputs.first else {
            throw SessionError(
                .cannotStartPlaying,
                "\(app) has no output route (no available output port suits category "
                    + "\(session.configuration.category.rawValue)); see `recctl routes`"
            )
        }
        guard route.outputs.contains(port) else {
            throw SessionError(
                .cannotStartPlaying,
                "port \(port) is not in \(app)'s output route (\(route.outputs.joined(separator: ", "))); pick one "
                    + "of those with --to"
            )
        }
        let duck = store.sessions[app]?.duckedBy != nil ? store.duckLevelDB : 0
        // Without channels named in `to`: the port's first N, N the preferred output channels.
        let portChannels = engine.output(port: port)?.channels ?? 0
        let preferred = session.preferences.outputChannels(ofPort: portChannels)
        let channels = play.to?.channels ?? (preferred < portChannels ? Array(1...max(preferred, 1)) : nil)
        try players.start(
            PlayOrder(
                app: app, stream: play.stream ?? "main", file: file, port: port, channels: channels,
                followsRoute: play.to == nil, gainDB: duck),
            started: started)
    }

    /// Tells the policy whether the app has running streams (for isBusy and interruptions).
    func syncStreams(_ app: String) {
        store.setStreamsRunning(app: app, players.isPlaying(app) || recorders.isRecording(app))
        syncPlayers()
    }

    /// Tells the policy which apps' players play (isOtherAudioPlaying and the secondary-audio
    /// hint); mixable sessions whose hint changed hear of it. Only events: nothing to dispatch.
    private func syncPlayers() {
        // An attached app that is heard plays, for isOtherAudioPlaying and the hint, like a player.
        for effect in store.setPlayersRunning(players.playingApps.union(attachments.playingApps)) {
            if let event = WireFormat.event(effect, store: store) { broadcast(event) }
        }
    }

    // MARK: Recorders

    /// `record.start`: permission-gated (SPEC §8), implicit activation, one tap + one recorder.
    private func recordStart(_ start: RecordStartRequest) throws -> [(String, JSONValue)] {
        let app = start.app
        try Self.checkStreamName(start.stream)
        try store.checkCanRecord(app: app)
        if let triggerDB = start.triggerDB {
            return try armTrigger(start, triggerDB: triggerDB) { apply(try store.activate(app: app)) }
        }
        if let busName = start.bus {
            // What the room heard (main) or the DJ's pre-listen (cue): both carry input samples,
            // so the same permission gate applies.
            guard let bus = Bus(rawValue: busName) else {
                throw SessionError(.badParam, "bus \(busName) is not main or cue")
            }
            guard monitoring.owner == app else {
                throw SessionError(
                    .incompatibleCategory,
                    "\(app) has no monitoring buses; set them up with `recctl cue \(app) outputs --main PORT --cue "
                        + "PORT`"
                )
            }
            let stream = start.stream ?? bus.rawValue
            if recorders.isRecording(app, stream: stream) {
                throw SessionError(
                    .badParam, "\(app) already records stream \(stream); stop it first or use --stream NAME")
            }
            let started = try startRecorder(RecorderSpec(app: app, stream: stream, port: "bus:" + bus.rawValue))
            syncStreams(app)
            return [("recorder", started.json)]
        }
        let session = try store.session(app)
        if !session.isActive { apply(try store.activate(app: app)) }
        let route = try store.session(app).route
        guard let portName = start.input ?? route.inputs.first else {
            throw SessionError(
                .resourceNotAvailable, "\(app) has no input route (no available input suits it); see `recctl routes`")
        }
        try store.checkRecordInput(app: app, port: portName)
        let stream = start.stream ?? portName
        if recorders.isRecording(app, stream: stream) {
            throw SessionError(.badParam, "\(app) already records stream \(stream); stop it first or use --stream NAME")
        }
        let started = try startRecorder(
            RecorderSpec(app: app, stream: stream, port: portName, followsRoute: start.input == nil))
        syncStreams(app)
        return [("recorder", started.json)]
    }

    /// The policy part of starting a recorder (an input: it captures, is available now and
    /// may be used by the session; its bandwidth), then the recorder service starts it.
    ///
    /// A recorder that follows the route records the session's route input now (a suspended
    /// one may come back after the route changed); with `replacing`, it goes on from there in
    /// the stream of that recorder (`RecorderService.startInput`).
    @discardableResult
    func startRecorder(_ spec: RecorderSpec, replacing old: RecorderStream? = nil) throws -> RecorderStream {
        var spec = spec
        let session = try store.session(spec.app)
        if spec.followsRoute, spec.bus == nil {
            guard let input = session.route.inputs.first else {
                throw SessionError(
                    .resourceNotAvailable,
                    "\(spec.app) has no input route (no available input suits it); see `recctl routes`")
            }
            spec.port = input
        }
        let context = RecordingContext(
            category: session.configuration.category.rawValue, mode: session.configuration.mode.rawValue,
            silenced: store.capturesSilenced(app: spec.app))
        if spec.port.hasPrefix("bus:") { return try recorders.startBus(spec, context: context) }
        guard let port = config.port(named: spec.port), port.direction.canCapture else {
            throw SessionError(
                .resourceNotAvailable,
                "\(spec.port) is not an input port; inputs are: \(engine.inputPortNames.joined(separator: ", "))")
        }
        guard let state = engine.portState(named: spec.port), state.available else {
            throw SessionError(
                .resourceNotAvailable,
                "input \(spec.port) is not available now (its JACK ports are missing); see `recctl routes`")
        }
        let request = RouteRequest(
            configuration: session.configuration, preferredInput: spec.port, region: store.region)
        guard RouteChooser.isEligibleInput(state, request: request) else {
            throw SessionError(
                .resourceNotAvailable,
                "\(spec.app) may not use \(spec.port) (\(port.type.rawValue)); Bluetooth microphones need "
                    + "allowBluetoothHFP or bluetoothHighQualityRecording"
            )
        }
        // The first N channels of the port, N the session's preferred input channels (SPEC §5).
        return try recorders.startInput(
            spec, channels: session.preferences.inputChannels(ofPort: port.channels), type: port.type,
            bandwidth: RouteChooser.bandwidth(of: state, for: request),
            context: context, replacing: old)
    }

    /// The session's input route changed: each recorder that follows the route goes on from
    /// `input` in a new segment (the old one ends with END_REASON=routeChange); with no input
    /// left it stops (reason routeChange). Recorders with an explicit input are left to
    /// `stopUnavailable`.
    private func followInputRoute(of app: String, input: String?, reason: RouteChangeReason) {
        for stream in recorders.of(app) where stream.spec.followsRoute && stream.spec.port != input {
            guard let input, engine.isAvailable(port: input) else {
                recorders.stopForLostInput(stream)
                continue
            }
            do {
                try startRecorder(stream.spec, replacing: stream)
            } catch {
                Log.error("\(app): \(stream.spec.stream) could not go on from \(input) (\(reason.name)): \(error)")
            }
        }
        syncStreams(app)
    }

    /// Sessions declared with `record = ...` record whenever they can (the broadcast logger).
    private func startDeclaredRecorders() {
        for (app, declaredPort) in recorders.declaredToStart() {
            guard !recorders.isRecording(app), !recorders.hasSuspended(app) else { continue }
            do {
                _ = try startDeclared(app: app, port: declaredPort)
            } catch {
                recorders.declaredNotStarted(app: app, port: declaredPort, error: error)
            }
        }
    }

    /// Starts `app`'s declared recorder of `port` (nil: the session's input route), activating
    /// its session when inactive. False when it is armed for triggered takes instead (a
    /// `trigger_db`). Throws what kept it from starting.
    func startDeclared(app: String, port declaredPort: String?) throws -> Bool {
        let session = try store.session(app)
        if !session.isActive { apply(try store.activate(app: app)) }
        try store.checkCanRecord(app: app)
        guard let port = try declaredPort ?? store.session(app).route.inputs.first else {
            throw SessionError(
                .resourceNotAvailable, "\(app) has no input route (no available input suits it); see `recctl routes`")
        }
        if try armDeclaredTrigger(app: app, input: declaredPort) { return false }
        try startRecorder(RecorderSpec(app: app, stream: port, port: port, followsRoute: declaredPort == nil))
        syncStreams(app)
        return true
    }

    // MARK: Monitoring

    private func checkMultiRoute(_ session: Session) throws {
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

    // MARK: Read-only replies

    private func sessionJSON(_ session: Session) -> JSONValue {
        sessionInfo(session).json
    }

    private func sessionInfo(_ session: Session) -> SessionInfo {
        let actual = engine.actualHardware(route: session.route, preferences: session.preferences)
        return WireFormat.session(session, store: store, actual: actual)
    }

    /// The engine groups of `app`'s route ports and, for the monitoring buses' owner, its
    /// sources and buses: what `meter APP` reads.
    func meterGroups(of app: String) throws -> Set<String> {
        let route = try store.session(app).route
        var names = route.inputs + route.outputs
        if monitoring.owner == app { names += monitoring.sources.keys }
        var groups = Set(names.flatMap(engine.groups(ofPort:)))
        // The DJ's own buses (the engine names their groups main and cue).
        if monitoring.owner == app { groups.formUnion(Bus.allCases.map(\.rawValue)) }
        return groups
    }

    /// The live loudness of `app`'s recordings (nil: every recording), rounded to 0.01 LU.
    func recordingLoudness(of app: String?) -> [RecordingLoudnessInfo] {
        func lufs(_ value: Double?) -> Double? { value.map { ($0 * 100).rounded() / 100 } }
        return recorders.recorders.filter { app == nil || $0.spec.app == app }.map { stream in
            let live = stream.recorder.loudness
            return RecordingLoudnessInfo(
                app: stream.spec.app, stream: stream.spec.stream, momentaryLufs: lufs(live.momentaryLUFS),
                shortTermLufs: lufs(live.shortTermLUFS))
        }
    }

    func routesFields() -> [(String, JSONValue)] {
        let ports = engine.describePorts().map { entry in
            let port = entry.port
            return PortInfo(
                name: port.name, type: port.type.rawValue, direction: port.direction.rawValue, channels: port.channels,
                available: entry.available, jack: port.direction == .duplex ? port.jackIn + port.jackOut : port.jack,
                recdPorts: entry.recdPorts, capabilities: port.capabilities.map(\.rawValue).sorted(),
                codec: port.codec?.rawValue, sense: port.sense, connectedOrder: entry.order)
        }
        let sessions = store.sortedSessions.map {
            RoutesInfo.SessionRoute(app: $0.app, state: $0.state.rawValue, route: WireFormat.routeInfo($0.route))
        }
        return RoutesInfo(ports: ports, sessions: sessions).fields
    }

    private func statusFields() -> [(String, JSONValue)] {
        statusInfo().fields
    }

    /// `status`'s reply; also what the HTTP listener's metrics are made of. Control thread.
    func statusInfo() -> StatusInfo {
        let daemon = StatusInfo.Daemon(
            version: recdVersion, protocolVersion: protocolVersion, pid: Int(CurrentProcess.id),
            uptime: (SystemClock.monotonicSeconds() - startedAt).rounded(), config: config.source,
            socket: config.daemon.socket, stateDir: config.daemon.stateDir, archiveDir: config.archive.dir)
        let jack = StatusInfo.Jack(
            connected: engine.isRunning, client: engine.clientName,
            server: engine.serverName,
            sampleRate: engine.sampleRate, bufferSize: engine.bufferSize, xruns: engine.xruns,
            mediaServicesAvailable: store.mediaServicesAvailable, error: engine.isRunning ? nil : engine.lastError,
            implementation: engine.implementation.kind.rawValue, churning: engine.churningConnections)
        return StatusInfo(
            daemon: daemon, jack: jack, sessions: listedSessions().map(sessionInfo),
            active: store.sortedSessions.filter(\.isActive).map(\.app), players: players.all.map(\.info),
            recorders: recorders.recorders.map(\.info),
            cards: devices.cards.map { .init(index: $0.index, id: $0.id, name: $0.name, usb: $0.isUSB) },
            archive: recorders.archiveStatus(), attachments: attachments.infos, replication: replication?.status,
            waiting: recorders.waitingInfos, sessionCount: store.sessions.count
        )
    }

    /// The sessions `status` lists: all of them up to `StatusInfo.maxListedSessions`; past it
    /// the active ones first, then the rest by app name (shown by app name), so that a reply
    /// stays small however many sessions there are and still shows what is going on.
    private func listedSessions() -> [Session] {
        let sorted = store.sortedSessions
        guard sorted.count > StatusInfo.maxListedSessions else { return sorted }
        let chosen = (sorted.filter(\.isActive) + sorted.filter { !$0.isActive }).prefix(StatusInfo.maxListedSessions)
        return chosen.sorted { $0.app < $1.app }
    }

    /// `session.list`: one page of the sessions by app name (SessionPage).
    private func sessionPage(offset: Int, limit: Int?) throws -> SessionPage {
        let limit = try RequestGate.checkedPageLimit(
            .sessionList, offset: offset, limit: limit, max: SessionPage.maxLimit)
        let sorted = store.sortedSessions
        let page = sorted.dropFirst(offset).prefix(limit)
        let end = min(sorted.count, offset + page.count)
        return SessionPage(
            sessions: page.map(sessionInfo), total: sorted.count, offset: offset, next: end < sorted.count ? end : nil)
    }

    // MARK: Effects

    private func announceState(_ app: String) {
        guard let session = store.sessions[app] else { return }
        broadcast(.session(app: app, state: session.state))
    }

    /// Applies policy effects in order: each goes to the services that care, then to the
    /// watchers as an event; persistence and pending permission replies follow.
    func apply(_ effects: [PolicyEffect]) {
        var persist = false
        for effect in effects {
            dispatch(effect)
            switch effect {
            case .sessionDeleted, .sessionChanged, .recordPermission: persist = true
            default: break
            }
            if let event = WireFormat.event(effect, store: store) { broadcast(event) }
        }
        // The effects may have paused, stopped or resumed players.
        syncAttachments()
        syncPlayers()
        if persist { save() }
    }

    /// What one effect means for the services (and for waiting permission requests).
    private func dispatch(_ effect: PolicyEffect) {
        switch effect {
        case .pauseStreams(let app, _):
            players.pauseAll(of: app, cause: .interruption)
            recorders.suspendAll(of: app)
        case .stopStreams(let app, let reason):
            players.stopAll(of: app, reason: reason.rawValue)
            recorders.stopAll(of: app, reason: reason)
        case .pausePlayers(let app):
            players.pauseDisconnected(of: app)
        case .stopPlayers(let app, let reason):
            players.stopAll(of: app, reason: reason.rawValue)
            syncStreams(app)
        case .stopRecorders(let app, let reason):
            recorders.stopAll(of: app, reason: reason)
            syncStreams(app)
        case .resumeStreams(let app):
            players.resumeInterrupted(
                of: app, routeOutputs: store.sessions[app]?.route.outputs ?? [], channelLimit: channelLimit(of: app))
            for spec in recorders.takeSuspended(of: app) {
                do {
                    try startRecorder(spec)
                } catch {
                    Log.error("\(app): could not resume recording \(spec.stream): \(error)")
                    recorders.couldNotResume(spec, error: error)
                }
            }
            // What the interruption paused may be gone meanwhile (a category change stopped it).
            syncStreams(app)
        case .ducked(let app, _, let level):
            players.setGain(of: app, decibels: level)
        case .unducked(let app):
            players.setGain(of: app, decibels: 0)
        case .inputMuteStateChange(let app, _):
            recorders.setSilenced(of: app, store.capturesSilenced(app: app))
        case .recordPermission(let app, let state):
            if state != .granted { recorders.permissionRevoked(of: app) }
            resolvePermissionRequests(app: app, state: state)
        case .routeChange(let app, let reason, _, let current):
            if reason == .newDeviceAvailable { attachments.allowAgain(of: app) }
            players.follow(of: app, outputs: current.outputs, reason: reason, channelLimit: channelLimit(of: app))
            followInputRoute(of: app, input: current.inputs.first, reason: reason)
            recorders.stopUnavailable(of: app)
        case .sessionDeleted(let app):
            monitoring.release(app: app)
            attachments.sessionGone(app)
        case .sessionChanged(let app):
            if store.sessions[app]?.configuration.category != .multiRoute { monitoring.release(app: app) }
        case .interruption, .mediaServicesWereLost, .mediaServicesWereReset, .silenceSecondaryAudioHint:
            break
        }
    }

    private func resolvePermissionRequests(app: String, state: RecordPermission) {
        guard state != .undetermined else { return }
        let ready = pendingPermissions.filter { $0.app == app }
        pendingPermissions.removeAll { $0.app == app }
        for pending in ready {
            send(
                Wire.success(id: pending.id, PermissionInfo(app: app, state: state.rawValue).fields),
                to: pending.client)
        }
    }

    // MARK: EventSink

    func broadcast(_ event: Event) {
        let line = event.json.jsonText
        let app = event.app
        for (id, client) in clients where client.watching {
            if let filter = client.watchApp, let app, filter != app { continue }
            send(line, to: id)
        }
    }

    /// Sends one line (built with version 2's camelCase keys) as the client's version spells it.
    func send(_ line: String, to client: ClientID) {
        link.send(WireKeys.line(line, forVersion: clients[client]?.version ?? protocolVersion), to: client)
    }

    /// Stops streams, leaves JACK cleanly and writes the final state (SIGTERM, end of the
    /// control loop).
    func shutdown() {
        devices.stop()
        players.shutdown()
        recorders.stopAllAndWait()
        engine.stop()
        // Last: a verify still decoding ends after its current file; recordings are safe by now.
        worker.stop()
        replication?.stop()
        recorders.silenceAlarms.stop()
        stateWriter.finish(PersistedState(store: store))
    }

    /// Persists sessions and permissions (written on the state writer's thread).
    func save() { stateWriter.save(PersistedState(store: store)) }
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

/// This build's version, reported by `hello` and `status`.
public let recdVersion = "0.1.0"

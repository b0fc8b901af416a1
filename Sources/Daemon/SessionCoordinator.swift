// The session coordinator: the one owner of the policy store and of the loop between the
// policy and the services. Facts come in through one input (`report`, from the services, the
// engine, the devices and the front end); commands come from the front end (`run`,
// SessionCoordinator+Commands.swift); the policy's answer, a list of `PolicyEffect`s, goes out
// through one path (`dispatch`, then to the features, then to the watchers as events). No one
// else changes the store, and nothing is copied into it on a timer.
//
// Threads: the control thread only, which feeds systemd's watchdog from the tick and so must
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

/// What the daemon needs of the control server: lines to clients, and work brought to the
/// control thread. `ControlServer` is the one implementation; its rules apply (send on the
/// control thread, post from any thread).
protocol ClientLink: AnyObject, Sendable {
    func send(_ line: String, to client: ClientID)
    func post(_ work: @escaping @Sendable () -> Void)
    /// Closes `client` (after its queued output, with `afterFlush`).
    func close(_ client: ClientID, afterFlush: Bool)
    /// Ends the control loop after the current iteration.
    func stop()
}

extension ControlServer: ClientLink {}

/// Owns the `SessionStore` and runs facts → policy → effects. Confined to the control thread
/// (hence `@unchecked Sendable`: other threads only `post` closures that call it there).
final class SessionCoordinator: FactSink, TakeHost, @unchecked Sendable {
    /// The policy's state. Changed only by the coordinator's own files (SessionCoordinator*.swift:
    /// its commands, facts and effects); everyone else reads it.
    var store: SessionStore
    let config: RecdConfig
    let startedAt: Double
    let link: any ClientLink
    /// Where events go: the front end, which sends them to the watchers (it owns the coordinator).
    private weak var events: (any EventSink)?
    let engine: EngineController
    let players: PlayerService
    let recorders: RecorderService
    /// The recorders that wait to start again, and the declared ones (the recorder service's).
    var recovery: RecorderRecovery { recorders.recovery }
    let monitoring: MonitoringService
    let devices: DeviceService
    let attachments: AttachmentService
    /// Runs slow requests off the control thread (archive verify, reindex, retention).
    let worker: SlowRequestWorker
    /// Writes state.json off the control thread.
    let stateWriter: StateWriter
    /// The archive's index, `archive.list`, verify, reindex and export.
    let archive: ArchiveService
    /// The meters: measured while someone reads them (`meter`, the status page, the metrics).
    let meters: MeterService
    /// Every feature: ticked, told every effect, asked for its part of `status`.
    private(set) var features: [any DaemonFeature] = []
    /// Armed recorders and the sessions' pre-rolls: the feature among `features` that keeps them.
    var triggers: TakeTriggerFeature! { features.lazy.compactMap { $0 as? TakeTriggerFeature }.first }

    /// A `record.stop` reply waiting for the recorders it stopped to finish their files.
    struct PendingStop {
        var client: ClientID
        var reply: LaterReply
        var waitingFor: [ObjectIdentifier]
        /// The recorders as they were when asked to stop: the reply's `recorders`.
        var recorders: [JSONValue]
    }
    var pendingStops: [PendingStop] = []
    /// When each interrupted session's interruption began (ISO 8601, UTC): the policy keeps no
    /// clock, so the coordinator notes the time as the `began` goes out. Read only while the
    /// policy says the session is interrupted; a later `began` replaces it.
    private(set) var interruptedSince: [String: String] = [:]
    /// When state.json was last queued (wall-clock seconds): `expireSessions` writes the
    /// sessions' newer uses at most an hour later.
    private(set) var lastUseSaved = 0.0

    /// The loop between facts and effects (`settle`): what is still to go through it, and
    /// whether it runs (a fact or effect that arrives meanwhile waits in the queue).
    private struct Queues {
        var effects: [PolicyEffect] = []
        var facts: [ServiceFact] = []
        var settling = false
        var isEmpty: Bool { effects.isEmpty && facts.isEmpty }
    }
    private var queues = Queues()

    /// Made by the composition root (`Recd.compose`) once the services exist.
    init(
        config: RecdConfig, store: SessionStore, startedAt: Double, link: any ClientLink, events: any EventSink,
        engine: EngineController, players: PlayerService, recorders: RecorderService, monitoring: MonitoringService,
        devices: DeviceService, attachments: AttachmentService, worker: SlowRequestWorker, stateWriter: StateWriter,
        archive: ArchiveService, meters: MeterService
    ) {
        (self.config, self.store, self.startedAt, self.link, self.events) = (config, store, startedAt, link, events)
        (self.engine, self.players, self.recorders, self.monitoring) = (engine, players, recorders, monitoring)
        (self.devices, self.attachments, self.worker, self.stateWriter) = (devices, attachments, worker, stateWriter)
        (self.archive, self.meters) = (archive, meters)
    }

    /// The features, in tick order; the trigger feature is one of them.
    func install(features: [any DaemonFeature]) {
        precondition(features.contains { $0 is TakeTriggerFeature }, "the trigger feature is missing")
        self.features = features
    }

    func broadcast(_ event: Event) { events?.broadcast(event) }

    /// Whether closing `client` (of process `pid`) would lose something: a reply still to come
    /// (a request on a worker, a `stop` waiting for its segments), an attachment made or being
    /// made over it, or an activation its process holds (it ends with the process's last
    /// connection). Such a connection is never closed for idling.
    func holdsSomething(_ client: ClientID, pid: Int32) -> Bool {
        worker.hasOutstanding(for: client) || players.isStarting(for: client) || attachments.holds(client)
            || pendingStops.contains { $0.client == client }
            || store.sessions.values.contains { $0.holder == pid && $0.state != .inactive }
    }

    /// A control connection closed: what was waiting for it is forgotten.
    func clientGone(_ client: ClientID) {
        worker.clientGone(client)
        players.clientGone(client)
        attachments.clientGone(client)
        pendingStops.removeAll { $0.client == client }
    }

    // MARK: Facts in, effects out

    /// The one input of facts. Taken in at once, or, while the coordinator is already settling
    /// (a service reports from inside an effect), after what is under way.
    func report(_ fact: ServiceFact) {
        if !queues.facts.contains(fact) { queues.facts.append(fact) }
        settle()
    }

    /// Hands the policy's effects out (`dispatch`), in order, with whatever they bring.
    func apply(_ effects: [PolicyEffect]) {
        queues.effects += effects
        settle()
    }

    /// Runs the loop until nothing is left: each effect goes to the services (`dispatch`), the
    /// features and the watchers; each fact to the policy, whose effects join the queue; after
    /// every batch the attachments follow the policy (they may report facts again). One effect
    /// at a time, one path: nothing is dispatched from anywhere else.
    private func settle() {
        guard !queues.settling else { return }
        queues.settling = true
        defer { queues.settling = false }
        var persist = false
        repeat {
            while !queues.isEmpty {
                if !queues.effects.isEmpty {
                    let effect = queues.effects.removeFirst()
                    dispatch(effect)
                    for feature in features { feature.handle(effect) }
                    switch effect {
                    case .sessionDeleted, .sessionChanged, .recordPermission: persist = true
                    default: break
                    }
                    if case .interruption(let app, .began, let reason, _) = effect { noteInterruption(of: app, reason) }
                    if let event = WireFormat.event(effect, store: store) { broadcast(event) }
                } else {
                    queues.effects += absorb(queues.facts.removeFirst())
                }
            }
            syncAttachments()
        } while !queues.isEmpty
        if persist { save() }
    }

    /// A fact as the policy's input, read from the services now.
    private func absorb(_ fact: ServiceFact) -> [PolicyEffect] {
        switch fact {
        case .streams:
            let running = players.playingApps.union(recorders.recordingApps)
            // An attached app that is heard plays, for isOtherAudioPlaying and the hint, like a player.
            return store.report(.streams(running: running, audible: players.playingApps.union(attachments.playingApps)))
        case .ports:
            let effects = store.report(.ports(engine.portStates))
            recorders.stopExplicitUnavailable()
            // Which of the ports now there are RTP streams (routes' FROM), read off this thread.
            engine.refreshAnnouncedRTPStreams(worker: worker)
            return effects
        case .hardwareMute(let port, let muted):
            return store.report(.hardwareMute(port: port, muted: muted))
        case .processEnded(let pid):
            let held = store.sessions.values.filter { $0.holder == pid && $0.state != .inactive }.map(\.app).sorted()
            guard !held.isEmpty else { return [] }
            Log.notice(
                "process \(pid) ended holding \(held.joined(separator: ", ")): deactivated as with notifyOthers "
                    + "(an application's activation lasts as long as the application)")
            let effects = store.report(.holderEnded(pid: pid))
            for app in held { announceState(app) }
            return effects
        }
    }

    /// What one effect means for the services.
    private func dispatch(_ effect: PolicyEffect) {
        switch effect {
        case .pauseStreams(let app, _):
            players.pauseAll(of: app, cause: .interruption)
            recorders.suspendAll(of: app, by: store.sessions[app]?.interruption?.by)
        case .stopStreams(let app, let reason):
            players.stopAll(of: app, reason: reason.rawValue)
            recorders.stopAll(of: app, reason: reason)
        case .pausePlayers(let app):
            players.pauseDisconnected(of: app)
        case .stopPlayers(let app, let reason):
            players.stopAll(of: app, reason: reason.rawValue)
        case .stopRecorders(let app, let reason):
            recorders.stopAll(of: app, reason: reason)
        case .resumeStreams(let app):
            players.resumeInterrupted(
                of: app, routeOutputs: store.sessions[app]?.route.outputs ?? [], channelLimit: channelLimit(of: app))
            for spec in recovery.takeSuspended(of: app) {
                do {
                    try startRecorder(spec)
                } catch {
                    Log.error("\(app): could not resume recording \(spec.stream): \(error)")
                    recovery.couldNotResume(spec, error: error)
                }
            }
        case .ducked(let app, _, _), .unducked(let app):
            players.setGain(of: app, decibels: store.duckGainDB(of: app))
        case .inputMuteStateChange(let app, _):
            recorders.setSilenced(of: app, store.capturesSilenced(app: app))
        case .recordPermission(let app, let state):
            if state != .granted { recorders.permissionRevoked(of: app) }
        case .routeChange(let app, let reason, _, let current):
            if reason == .newDeviceAvailable { attachments.allowAgain(of: app) }
            players.follow(of: app, outputs: current.outputs, reason: reason, channelLimit: channelLimit(of: app))
            followInputRoute(of: app, input: current.inputs.first, reason: reason)
            recorders.stopUnavailable(of: app)
            // Its output may have moved (a processed capture's far end) with the processing the same.
            followCaptureProcessing(of: app)
        case .captureProcessingChange(let app, _, _):
            followCaptureProcessing(of: app)
        case .sessionDeleted(let app):
            monitoring.release(app: app)
            attachments.sessionGone(app)
        case .sessionChanged(let app):
            if store.sessions[app]?.configuration.category != .multiRoute { monitoring.release(app: app) }
        case .interruption, .mediaServicesWereLost, .mediaServicesWereReset, .silenceSecondaryAudioHint:
            break
        }
    }

    /// An interruption began: note since when, and say in the log who interrupted and what it
    /// stopped (an operator reading the journal after a gap in a logger's archive finds it).
    private func noteInterruption(of app: String, _ reason: InterruptionReason) {
        let now = UTCTime.now()
        interruptedSince[app] = now.iso8601
        let by = store.sessions[app]?.interruption?.by
        let recording = recorders.recorders.filter { $0.spec.app == app }.map(\.spec.stream)
        let who = by.map { " by \($0)" } ?? ""
        let stops =
            recording.isEmpty ? "" : "; its recording of \(recording.joined(separator: ", ")) stops until it ends"
        Log.notice("\(app) interrupted\(who) (reason \(reason.name)) at \(now.iso8601)\(stops)")
    }

    func announceState(_ app: String) {
        guard let session = store.sessions[app] else { return }
        broadcast(.session(app: app, state: session.state))
    }

    /// What the attachments need to know of a session: the policy's numbers, not recomputed.
    func attachmentView(_ session: Session) -> AttachmentService.SessionView {
        AttachmentService.SessionView(
            isActive: session.isActive, outputs: session.route.outputs, input: session.route.inputs.first,
            duckDB: store.duckGainDB(of: session.app), capturesSilenced: store.capturesSilenced(app: session.app),
            canPlay: session.configuration.category.hasOutput, canRecord: session.configuration.category.hasInput,
            processing: session.captureProcessing)
    }

    /// Brings every attachment in line with the policy.
    private func syncAttachments() {
        for app in attachments.apps {
            guard let session = store.sessions[app] else { continue }
            attachments.sync(app: app, attachmentView(session))
        }
    }

    /// How many of a port's first channels `app`'s players use (its preferred output channels).
    func channelLimit(of app: String) -> PlayerService.ChannelLimit {
        store.sessions[app]?.preferences.outputChannels(ofPort:) ?? { $0 }
    }

    // MARK: The tick

    func tick(now: Double) {
        engineWoke()
        players.reap()
        handle(recorders.service(now: now))
        for feature in features { feature.tick(now: now) }
        if !store.mediaServicesAvailable, engine.tryReconnect(now: now) {
            Log.notice("JACK server is back; ports registered again")
            report(.ports)
            apply(store.mediaServicesReset())
            do { try monitoring.publish() } catch { Log.warning("monitoring after reset: \(error)") }
            startDeclaredRecorders()
        }
        resumeWaitingRecorders(now: now)
    }

    /// Ticks come every 100 ms while anything here is polled: players (their ends are reaped),
    /// attachments, a recorder whose start time is not placed yet, a lost JACK server (retried
    /// every 250 ms), or a feature's (meters someone reads, level triggers). Otherwise (a
    /// logger recording with nobody connected, or idle) every 500 ms: retention, replication
    /// and the watchdog need no more, and everything else arrives as posted work, which brings
    /// the tick back.
    var wantsFrequentTicks: Bool {
        !store.mediaServicesAvailable || !players.all.isEmpty || !attachments.attachments.isEmpty
            || recorders.recorders.contains { $0.source.startTime == nil }
            || features.contains(where: \.wantsFrequentTicks)
    }

    // MARK: Start-up, the engine, the devices

    /// Recovers partial files left by a crash and opens the archive index.
    func openArchive() { recorders.openArchive() }

    /// Starts the engine at daemon start; without a JACK server, media services start lost.
    func startEngine() {
        if engine.start() {
            Log.notice(
                "connected to JACK server '\(engine.serverName)' (\(engine.implementation.kind.rawValue), libjack "
                    + "\(engine.implementation.version)) as \(engine.audio.clientName ?? "?") (\(engine.audio.sampleRate ?? 0) Hz, "
                    + "\(engine.audio.bufferSize ?? 0) frames)"
            )
            report(.ports)
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
        guard engine.audio.isRunning || engine.audio.isServerLost else { return }
        let news = engine.drain()
        if let reason = news.serverLost ?? (engine.audio.isServerLost ? "server gone" : nil) {
            Log.error(
                "JACK server lost (\(reason)); recordings finalized, sessions deactivated. recd reconnects when it "
                    + "returns"
            )
            apply(store.mediaServicesLost())
            players.stopAll(reason: "mediaServicesLost")
            attachments.endAll(reason: .mediaServicesLost)
            recorders.suspendAllForMediaServicesLoss()
            engine.stop()
            report(.ports)
            return
        }
        if news.availabilityChanged { report(.ports) }
        if let rate = news.sampleRate { followSampleRate(rate) }
        if news.configurationChanged {
            Log.notice(
                "JACK's configuration changed: \(engine.audio.bufferSize ?? 0) frames a period at \(engine.audio.sampleRate ?? 0) Hz; "
                    + "active sessions get routeConfigurationChange")
            apply(store.routeConfigurationChanged())
        }
        engine.repairConnections()
        attachments.finishAttaches { [store] app in store.sessions[app].map(attachmentView) }
        attachments.engineWoke()
    }

    /// The sample rate changed under the running client (PipeWire's JACK can do that; jackd2
    /// only with a new server). Players stop (their files were converted to the old rate; a
    /// stream that played on would be off pitch, so, like AVAudioEngine after a configuration
    /// change, the app starts it again); recorders end their segment and go on in a new one at
    /// the new rate.
    private func followSampleRate(_ rate: Int) {
        let reason = "sampleRateChange"
        if !players.all.isEmpty {
            Log.notice("JACK's sample rate is now \(rate) Hz: players stopped (\(reason)); play them again")
        }
        players.stopAll(reason: reason)
        for spec in recorders.endAllForNewRate(reason: EndReason(rawValue: reason)) {
            do {
                _ = try startRecorder(spec)
            } catch {
                Log.error("\(spec.app): could not go on recording \(spec.stream) at \(rate) Hz: \(error)")
                recovery.couldNotResume(spec, error: error)
            }
        }
    }

    /// Device events (posted by the event source): hardware mutes and availability, as facts.
    func deviceEvents(_ events: [DeviceEvent]) {
        let news = devices.handle(events)
        for mute in news.hardwareMutes { report(.hardwareMute(port: mute.port, muted: mute.muted)) }
        if news.availabilityChanged { report(.ports) }
    }

    /// A recorder has events (posted from its archiver thread).
    func recordersWoke() { handle(recorders.handleEvents()) }

    /// Answers the `record.stop` requests whose recorders are all finished.
    private func handle(_ news: RecorderNews) {
        for finished in news.finished {
            for index in pendingStops.indices { pendingStops[index].waitingFor.removeAll { $0 == finished } }
        }
        for stop in pendingStops where stop.waitingFor.isEmpty {
            stop.reply(.success([("recorders", .array(stop.recorders))]))
        }
        pendingStops.removeAll { $0.waitingFor.isEmpty }
    }

    // MARK: Persistence and shutdown

    /// Ends every player and recorder and waits for the recorders' last segments, their events
    /// sent: at SIGTERM, before the control loop ends, so the watchers get them.
    func finishStreams() {
        archive.journal(EventJournal.daemon("recd stopping", at: .now()))
        players.stopAll(reason: "stop")
        recorders.stopAllAndWait()
    }

    /// Stops streams (those `finishStreams` left), leaves JACK cleanly and writes the final
    /// state (SIGTERM, end of the control loop).
    func shutdown() {
        devices.stop()
        players.shutdown()
        recorders.stopAllAndWait()
        // The features in the reverse order of start: the prover chains the last segments now
        // rather than at the next start; replication, silence programs and the time source end.
        for feature in features.reversed() { feature.stop() }
        engine.stop()
        engine.rtp.stop()
        // Last: a verify still decoding ends after its current file; recordings are safe by now.
        worker.stop()
        stateWriter.finish(PersistedState(store: store))
    }

    /// Persists sessions and permissions (written on the state writer's thread).
    func save() {
        lastUseSaved = Self.wallSeconds()
        stateWriter.save(PersistedState(store: store))
    }
}

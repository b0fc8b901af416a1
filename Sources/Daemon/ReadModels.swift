// What recd shows: `status`, `session.show`/`session.list`, `routes`, the meters' groups and
// the recordings' live loudness, `/metrics` and the status page's `/api/status` — each a value
// built on the control thread from the store and the services, and nothing more (no state).
//
// Threads: the control thread (the HTTP threads get these through `ControlThreadQuery.ask`).
import AudioEngine
import ControlProtocol
import Platform
import SessionPolicy

extension SessionCoordinator {
    func sessionInfo(_ session: Session) -> SessionInfo {
        var actual = engine.actualHardware(route: session.route, preferences: session.preferences)
        // A processed capture comes later by the processing's latency (docs/voice-processing.md):
        // a recorder's, or an attached application's (with its ring's slack); the longest.
        let recorderLatency = recorders.of(session.app).compactMap { $0.voice?.latencySeconds }.max()
        let attachmentLatency = attachments.processingLatency(of: session.app)
        if let added = [recorderLatency, attachmentLatency].compactMap({ $0 }).max(),
            let latency = actual.inputLatency
        {
            actual.inputLatency = latency + added
        }
        return WireFormat.session(
            session, store: store, actual: actual,
            interruptedSince: session.interruption == nil ? nil : interruptedSince[session.app])
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
                codec: port.codec?.rawValue, sense: port.sense, connectedOrder: entry.order,
                origins: entry.origins.map { jack, origin in
                    guard case .rtp(let session, let address, let client) = origin else {
                        return PortOriginInfo(jack: jack, origin: origin.kind, client: origin.client)
                    }
                    return PortOriginInfo(
                        jack: jack, origin: origin.kind, client: client, session: session, address: address)
                })
        }
        let sessions = store.sortedSessions.map {
            RoutesInfo.SessionRoute(app: $0.app, state: $0.state.rawValue, route: WireFormat.routeInfo($0.route))
        }
        return RoutesInfo(ports: ports, sessions: sessions).fields
    }

    /// `status`'s reply; also what the HTTP listener's metrics are made of. The features add
    /// their parts (the clock, chain alarms, replication).
    func statusInfo() -> StatusInfo {
        let daemon = StatusInfo.Daemon(
            version: recdVersion, protocolVersion: protocolVersion, pid: Int(CurrentProcess.id),
            uptime: (SystemClock.monotonicSeconds() - startedAt).rounded(), config: config.source,
            socket: config.daemon.socket, stateDir: config.daemon.stateDir, archiveDir: config.archive.dir,
            httpUsersFile: HTTPEndpoints.usersFile(config), httpCertificate: HTTPEndpoints.certificateFile(config))
        let jack = StatusInfo.Jack(
            connected: engine.audio.isRunning, client: engine.audio.clientName,
            server: engine.serverName,
            sampleRate: engine.audio.sampleRate, bufferSize: engine.audio.bufferSize, xruns: engine.audio.xruns,
            mediaServicesAvailable: store.mediaServicesAvailable, error: engine.audio.isRunning ? nil : engine.lastError,
            implementation: engine.implementation.kind.rawValue, churning: engine.audio.churningConnections.map(\.description),
            cycle: engine.audio.cycleTimes.map(WireFormat.cycleTimes))
        var status = StatusInfo(
            daemon: daemon, jack: jack, sessions: listedSessions().map(sessionInfo),
            active: store.sortedSessions.filter(\.isActive).map(\.app), players: players.all.map(\.info),
            recorders: recorders.recorders.map(recorders.info(of:)),
            cards: devices.cards.map { .init(index: $0.index, id: $0.id, name: $0.name, usb: $0.isUSB) },
            archive: archive.archiveStatus(), attachments: attachments.infos,
            waiting: recovery.waitingInfos, sessionCount: store.sessions.count
        )
        for feature in features { feature.contribute(to: &status) }
        return status
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
    func sessionPage(offset: Int, limit: Int?) throws -> SessionPage {
        let limit = try RequestGate.checkedPageLimit(
            .sessionList, offset: offset, limit: limit, max: SessionPage.maxLimit)
        let sorted = store.sortedSessions
        let page = sorted.dropFirst(offset).prefix(limit)
        let end = min(sorted.count, offset + page.count)
        return SessionPage(
            sessions: page.map(sessionInfo), total: sorted.count, offset: offset, next: end < sorted.count ? end : nil)
    }

    /// `/api/status`: `status`'s reply (JACK, sessions, recorders with their silence, the
    /// archive) and `routes`'s (the ports), each under its own key. Handed to the HTTP thread
    /// as a value.
    func statusPageSnapshot() -> JSONValue {
        ["status": statusInfo().json, "routes": .object(routesFields())]
    }

    /// Runs `then` once the meters hold a whole window (at once while they are on; else they are
    /// turned on and it follows within two ticks), or at once without a JACK server. Control thread.
    func whenMetersRead(_ then: @escaping @Sendable () -> Void) {
        guard engine.audio.isRunning else { return then() }
        do {
            if try meters.request(app: nil, reply: { _ in then() }) != nil { then() }
        } catch {
            then()
        }
    }

    /// What `/metrics` shows, copied now.
    func metricsSnapshot() -> MetricsSnapshot {
        // Meter groups are engine names (a duplex port's input is NAME_in): back to config ports.
        var portOfGroup: [String: String] = [:]
        for port in config.ports {
            if let group = EngineController.inputGroup(port) { portOfGroup[group] = port.name }
        }
        let meters = (try? meters.info(app: nil).meters) ?? []
        let peaks = meters.compactMap { meter -> MetricsSnapshot.InputPeak? in
            guard meter.direction == "input", let port = portOfGroup[meter.group] else { return nil }
            return MetricsSnapshot.InputPeak(port: port, channel: meter.channel, peakDB: meter.peakDB)
        }
        let status = statusInfo()
        let replication = status.replication.map {
            MetricsSnapshot.Replication(backlogSegments: $0.backlog, lastSuccessUnixSeconds: $0.lastSuccess)
        }
        return MetricsSnapshot(
            status: status, inputPeaks: peaks, replication: replication,
            rtpStreams: engine.rtp.streams())
    }
}

// recd's start-up: arguments, config, state, socket, then the control loop.
//
// Threads: the main thread, which blocks signals before any other thread exists, starts the
// worker threads ("slow worker", "state writer", "player starter"), the engine and the devices, then becomes
// the control thread in `server.run`; after it returns, `shutdown` stops them all.
import Archive
import AudioEngine
import Codec
import ControlProtocol
import Devices
import HTTPServer
import NetworkAudio
import Platform
import SessionPolicy
import SystemSupport

/// The `recd` command.
public enum Recd {
    static let usage = """
        usage: recd [--config PATH] [--socket PATH]
               recd --check-config [PATH]
               recd --help | --version

        Runs the recd daemon on the JACK server. With no --config (and no RECD_CONFIG),
        recd uses its embedded default config (`recd --print-default-config` shows it).
          --config PATH        config file (INI); RECD_CONFIG also works
          --socket PATH        control socket, overriding [daemon] socket
          --check-config [PATH]  validate a config file (without PATH: --config's, RECD_CONFIG's or the
                               embedded one) and exit (non-zero with FILE:LINE errors)
          --print-default-config  print the embedded default config
        """

    /// Runs recd with command-line arguments (without the program name); returns the exit status.
    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        var configPath = environment["RECD_CONFIG"]
        var socketOverride: String?
        var checkOnly = false
        var index = 0
        func value(_ flag: String) -> String? {
            index += 1
            guard index < arguments.count else {
                standardError("recd: \(flag) needs a value\n\(usage)\n")
                return nil
            }
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--config", "-c":
                guard let path = value("--config") else { return 2 }
                configPath = path
            case "--socket":
                guard let path = value("--socket") else { return 2 }
                socketOverride = path
            case "--check-config":
                checkOnly = true
                if index + 1 < arguments.count, !arguments[index + 1].hasPrefix("-") {
                    index += 1
                    configPath = arguments[index]
                }
            case "--print-default-config":
                print(ConfigLoader.embeddedDefaultText, terminator: "")
                return 0
            case "--help", "-h":
                print(usage)
                return 0
            case "--version":
                print("recd \(recdVersion) (protocol \(protocolVersion))")
                return 0
            default:
                standardError("recd: unknown argument \(arguments[index])\n\(usage)\n")
                return 2
            }
            index += 1
        }

        let (loaded, errors) = loadConfig(path: configPath, environment: environment)
        guard var config = loaded else {
            for error in errors { standardError("\(error)\n") }
            return checkOnly ? 1 : 78  // EX_CONFIG: systemd will not restart into a bad config
        }
        if checkOnly {
            print(
                "\(config.source): OK (\(Readable.count(config.ports.count, "port")), "
                    + "\(Readable.count(config.sessions.count, "session")))")
            for port in config.ports { print(resolvedJackPorts(port)) }
            if !config.evidence.tsaURLs.isEmpty { print(config.evidence.summary) }
            if config.replicate.remote != nil {
                print(config.replicate.summary)
                if !FileSystem.isExecutableFile(config.replicate.rclone) {
                    print(
                        "warning: \(config.replicate.rclone) is not an executable; install rclone (Debian package "
                            + "rclone) or set [replicate] rclone: until then segments wait and retention keeps them")
                }
            }
            let token = config.http.tokenFile.map { ", token_file \($0)" } ?? ""
            print(config.http.listen.map { "http: listen \($0)" + token } ?? "http: off (\(httpOffReason(config)))")
            return 0
        }
        if let socketOverride { config.daemon.socket = socketOverride }
        return run(config: config, environment: environment)
    }

    /// One line of `--check-config`: the JACK ports a port resolved to, ranges expanded, so an
    /// operator sees what `capture_{1..32}` became.
    static func resolvedJackPorts(_ port: PortDecl) -> String {
        func list(_ names: [String], channels: Int? = nil) -> String {
            let count =
                !names.contains(where: { $0.contains("*") })
                ? "\(names.count)" : channels.map { "pattern, \($0) channels" } ?? "pattern"
            return "\(names.joined(separator: ", ")) (\(count))"
        }
        if port.direction == .duplex {
            return
                "port \(port.name): in \(list(port.jackIn, channels: port.channels)); out \(list(port.jackOut))"
        }
        return "port \(port.name): \(list(port.jack, channels: port.channels))"
    }

    /// Loads the config and checks what the loader leaves to the policy (session tables).
    /// Why there is no HTTP listener: the config said no, or a user's recd opens one only when asked.
    static func httpOffReason(_ config: RecdConfig) -> String {
        config.http.listenLine > 0
            ? "listen = no" : "a user's recd listens only when [http] listen = 127.0.0.1:PORT asks"
    }

    static func loadConfig(path: String?, environment: [String: String]) -> (RecdConfig?, [String]) {
        let config: RecdConfig
        do {
            config = try path.map { try ConfigLoader.load(path: $0, environment: environment) }
                ?? ConfigLoader.embeddedDefault(environment: environment, isRoot: CurrentProcess.isRoot)
        } catch {
            return (nil, ["\(error)"])
        }
        var errors = SessionDeclarations.check(config).compactMap { result -> String? in
            if case .failure(let error) = result { return "\(error)" }
            return nil
        }
        if case .failure(let error) = DeviceService.bindings(for: config) { errors.append("\(error)") }
        if let error = HTTPEndpoints.check(config) { errors.append("\(error)") }
        errors += systemChecks(config).map { "\($0)" }
        return errors.isEmpty ? (config, []) : (nil, errors)
    }

    /// What the config names on this machine, checked before the daemon starts and by
    /// `--check-config` alike (both come through `loadConfig`): hook programs (`on_silence`)
    /// are executable regular files, and the state and archive directories, where they exist
    /// already, are directories. (`[http] token_file` is `HTTPEndpoints.check`'s.)
    static func systemChecks(_ config: RecdConfig) -> [ConfigError] {
        var errors: [ConfigError] = []
        var hooks: [(section: String, path: String, line: Int)] = []
        if let program = config.archive.silence.program { hooks.append(("[archive]", program, 0)) }
        for decl in config.sessions {
            if let program = decl.silence.program { hooks.append(("[session \(decl.app)]", program, decl.line)) }
        }
        for hook in hooks where !FileSystem.isExecutableFile(hook.path) {
            errors.append(
                ConfigError(
                    file: config.source, line: hook.line,
                    message: "\(hook.section) on_silence = \(hook.path) is not an executable regular file; name a "
                        + "program recd may run (chmod +x it), or remove the key"))
        }
        for (key, path) in [("[daemon] state_dir", config.daemon.stateDir), ("[archive] dir", config.archive.dir)] {
            if let status = FileSystem.status(of: path), status.kind != .directory {
                errors.append(
                    ConfigError(
                        file: config.source, line: 0,
                        message: "\(key) = \(path) is not a directory; name a directory (recd creates a missing one)"))
            }
        }
        return errors
    }

    static func run(config: RecdConfig, environment: [String: String]) -> Int32 {
        // Before any other thread exists, so every thread inherits the mask and signals reach
        // the control loop through its signalfd.
        Signals.ignoreBrokenPipe()
        do {
            try Signals.block(Signals.shutdownAndReload)
        } catch {
            Log.error("cannot block signals: \(error)")
            return 71  // EX_OSERR
        }
        do {
            try FileSystem.makeDirectories(config.daemon.stateDir, mode: 0o750)
        } catch {
            Log.error("cannot create state dir \(config.daemon.stateDir): \(error.message); set [daemon] state_dir to a writable directory")
            return 73  // EX_CANTCREAT
        }
        let stateFile = StateFile(stateDir: config.daemon.stateDir)
        let store = SessionDeclarations.makeStore(config: config, persisted: stateFile.load())

        let listener: Int32
        var config = config
        do {
            if let inherited = ControlServer.listenerFromSystemd() {
                listener = inherited
                config.daemon.socket = "fd \(inherited) from systemd (LISTEN_FDS)"
                Log.info("using the control socket passed by systemd (LISTEN_FDS)")
            } else {
                listener = try ControlServer.bindListener(path: config.daemon.socket)
            }
        } catch {
            Log.error("cannot listen on \(config.daemon.socket): \(error)")
            return 69  // EX_UNAVAILABLE
        }

        let server: ControlServer
        do {
            server = try ControlServer(
                listeningFD: listener, limits: ControlServer.Limits(quietTickInterval: 0.5),
                watchingSignals: Signals.shutdownAndReload)
        } catch {
            Log.error("cannot start the control loop: \(error)")
            return 71
        }
        let frontEnd: ControlFrontEnd
        do {
            frontEnd = try compose(
                config: config, store: store, stateFile: stateFile, startedAt: SystemClock.monotonicSeconds(), link: server,
                slowThreshold: slowThreshold(environment))
        } catch {
            Log.error("cannot start the worker threads: \(error)")
            return 71
        }
        let coordinator = frontEnd.coordinator!
        coordinator.openArchive()
        coordinator.startEngine()
        coordinator.startDevices(environment: environment)
        coordinator.save()
        // A config that asks for what cannot be (an address, a missing token) stops recd; a port
        // the system refuses does not stop the recordings: recd runs without HTTP and says so
        // (Prometheus sees the box down and alerts).
        var http: HTTPServer?
        do {
            http = try HTTPEndpoints.start(config: config, coordinator: coordinator)
        } catch where error.isConfiguration {
            Log.error("cannot start the HTTP listener: \(error.message)")
            coordinator.shutdown()
            return 78  // EX_CONFIG
        } catch {
            Log.warning("HTTP listener off: \(error.message)")
        }
        if let http { Log.notice("HTTP listener on \(http.address.isIPv6 ? "[\(http.address.host)]" : http.address.host):\(http.port)") }
        if config.http.listen == nil { Log.notice("HTTP listener off (\(httpOffReason(config)))") }
        Log.notice("recd \(recdVersion) listening on \(config.daemon.socket) (config: \(config.source), state: \(config.daemon.stateDir))")
        Log.info("sample walks (quantizing, loudness, silence, levels): the \(Walks.name) build")
        try? SystemdNotify.ready(status: "listening on \(config.daemon.socket)")
        server.run(handler: frontEnd)
        try? SystemdNotify.stopping()
        http?.stop()
        coordinator.shutdown()
        Log.notice("recd stopped")
        return 0
    }
}

extension Recd {
    /// The services and the features as the coordinator and the engine's wake know them: made
    /// before the coordinator exists, they must not keep it (or the front end) alive.
    private final class Handle: ServiceSink, @unchecked Sendable {
        weak var frontEnd: ControlFrontEnd?
        weak var coordinator: SessionCoordinator?

        func broadcast(_ event: Event) { frontEnd?.broadcast(event) }
        func report(_ fact: ServiceFact) { coordinator?.report(fact) }
    }

    /// The composition root: the engine controller, the worker threads, the services, the
    /// features, the coordinator and the front end, wired together here and nowhere else.
    /// Nothing talks to JACK or ALSA until `startEngine` and `startDevices`.
    static func compose(
        config: RecdConfig, store: SessionStore, stateFile: StateFile, startedAt: Double, link: any ClientLink,
        slowThreshold: Double = ControlFrontEnd.defaultSlowThreshold
    ) throws(SystemError) -> ControlFrontEnd {
        let handle = Handle()
        let deliver: SlowRequestWorker.Deliver = { [link] work in link.post(work) }
        let audio = AudioEngine { [link] in
            link.post { handle.frontEnd?.measured("JACK's news") { handle.coordinator?.engineWoke() } }
        }
        let engine = EngineController(
            config: config, audio: audio, rtp: RTPStreamDirectory(monitor: RTPMonitor.forRecd()))
        let worker = try SlowRequestWorker(name: "slow worker", deliver: deliver)
        let stateWriter = try StateWriter(file: stateFile, deliver: deliver)
        let players = try PlayerService(engine: audio, ports: engine, sink: handle, deliver: deliver)
        let recorders = RecorderService(
            settings: config.archive, declared: config.sessions.map { ($0.app, $0.record) }, engine: audio,
            ports: engine, sink: handle, worker: worker, wake: { [link] in link.post { handle.coordinator?.recordersWoke() } })
        let archive = ArchiveService(directory: config.archive.dir, worker: worker, recorders: recorders)
        let prover = SegmentProver.make(
            stateDir: config.daemon.stateDir, archiveDir: config.archive.dir, deliver: deliver,
            index: { [weak archive] in archive?.index })
        let chains = prover?.keeper
        archive.chains = chains
        archive.credentials = chains.flatMap {
            ClipCredentials.make(key: $0.key, stateDir: config.daemon.stateDir, archiveDir: config.archive.dir)
        }
        let silence = SilenceAlarms(
            sink: handle, runner: try SilenceAlarms.makeRunner(for: config, deliver: deliver),
            defaults: config.archive.silence,
            sessions: Dictionary(uniqueKeysWithValues: config.sessions.map { ($0.app, $0.silence) }))
        let timeSource = TimeSourceFeature(monitor: TimeSourceMonitor(), worker: worker)
        let monitoring = MonitoringService(engine: audio, ports: engine) { [unowned players] app, stream in
            players.get(app, stream)?.handle.id
        }
        players.playersChanged = { [unowned monitoring] app in monitoring.playersChanged(app: app) }
        let bindings =
            (try? DeviceService.bindings(for: config).get()) ?? (try! DeviceBindings([DeviceBindings.Declaration]()))
        let meters = MeterService(
            engine: audio,
            sources: MeterService.Sources(
                groups: { app in try handle.coordinator?.meterGroups(of: app) ?? [] },
                loudness: { app in handle.coordinator?.recordingLoudness(of: app) ?? [] }))
        let replication = try ReplicationService(config: config, deliver: deliver)
        let retention = ArchiveRetention(
            settings: config.archive, replicationRemote: replication?.remote, worker: worker,
            maintenance: archive.maintenance, recorders: recorders, chains: chains)
        let frontEnd = ControlFrontEnd(
            link: link, gate: RequestGate(adminGroup: config.daemon.adminGroup), slowThreshold: slowThreshold,
            idleTimeout: Double(config.daemon.idleClientTimeout))
        let coordinator = SessionCoordinator(
            config: config, store: store, startedAt: startedAt, link: link, events: frontEnd, engine: engine,
            players: players, recorders: recorders, monitoring: monitoring,
            devices: DeviceService(bindings: bindings, engine: engine),
            attachments: AttachmentService(engine: audio, ports: engine, sink: handle, voice: config.voice),
            worker: worker, stateWriter: stateWriter,
            archive: archive, meters: meters)
        let triggers = TakeTriggerFeature(
            host: coordinator, config: config, engine: engine, recorders: recorders, events: handle)
        recorders.takes = triggers
        // What hears the segments, in order: the index first (the prover writes its proof
        // columns there), then the prover, which passes each segment on to replication once it
        // is chained (without a key, replication hears it at once).
        let timeStamps = Self.makeTimeStamps(config: config, prover: prover, deliver: deliver)
        let replicas: [any SegmentFeature] = (replication.map { [$0] } ?? []) + (timeStamps.map { [$0] } ?? [])
        prover?.next = replicas
        recorders.features =
            [archive, timeSource, silence, retention] + (prover.map { [$0] } ?? replicas)
        // The health comes last: its part of `status` reads every other part.
        let health = HealthFeature(engine: engine, events: handle, config: config)
        health.status = { handle.coordinator?.statusInfo() }
        // Ticked in this order, stopped in the reverse one.
        let features: [any DaemonFeature] =
            [timeSource, silence, FeedWatcher(recorders: recorders, alarms: silence), retention]
            + (prover.map { [$0] } ?? []) + (replication.map { [$0] } ?? []) + (timeStamps.map { [$0] } ?? [])
            + [triggers, meters, health]
        coordinator.install(features: features)
        frontEnd.connect(coordinator)
        handle.frontEnd = frontEnd
        handle.coordinator = coordinator
        return frontEnd
    }
}

extension Recd {
    /// `RECD_CONTROL_SLOW_MS` (1-10000): a diagnostic threshold for "control thread busy" log
    /// lines, in milliseconds; the default is 100.
    static func slowThreshold(_ environment: [String: String]) -> Double {
        guard let text = environment["RECD_CONTROL_SLOW_MS"], let ms = Double(text), (1...10_000).contains(ms) else {
            return ControlFrontEnd.defaultSlowThreshold
        }
        return ms / 1000
    }
}

/// Turns config `[session]` declarations into policy sessions, checking the SPEC §1 tables
/// with the declaration's file:line.
enum SessionDeclarations {
    static func check(_ config: RecdConfig) -> [Result<(SessionDecl, SessionConfiguration), ConfigError>] {
        config.sessions.map { decl in
            do throws(SessionError) {
                let configuration = try SessionConfiguration.validated(
                    category: decl.category, mode: decl.mode, options: Set(decl.options))
                if decl.category.hasInput && (decl.micUsage ?? "").isEmpty && decl.record != .no {
                    throw SessionError(.missingEntitlement, "a recording session needs mic_usage (a microphone usage description)")
                }
                return .success((decl, configuration))
            } catch {
                return .failure(ConfigError(file: config.source, line: decl.line, message: "[session \(decl.app)] \(error.message)"))
            }
        }
    }

    static func portStates(_ config: RecdConfig) -> [PortState] {
        config.ports.map {
            PortState(
                name: $0.name, type: $0.type, direction: $0.direction, channels: $0.channels,
                capabilities: $0.capabilities, codec: $0.codec, available: false, connectedOrder: 0,
                outputChannels: EngineController.outputChannels($0))
        }
    }

    /// The store at start-up: config ports (unavailable until the engine sees them),
    /// persisted sessions and permissions, then config declarations on top. A persisted session
    /// was last used when its record says, or (a state file of an older recd) `now`.
    static func makeStore(
        config: RecdConfig, persisted: PersistedState, now: Double = SessionCoordinator.wallSeconds()
    ) -> SessionStore {
        var store = SessionStore(duckLevelDB: config.policy.duckLevelDB, region: config.daemon.region, ports: portStates(config))
        for record in persisted.sessions {
            var session = Session(app: record.app, ownerUID: record.ownerUID)
            session.micUsage = record.micUsage
            // An older recd took descriptions of any length; one past today's limit would
            // make every status and state write carry it again.
            if let text = record.micUsage, text.utf8.count > SessionStore.maxMicUsageBytes {
                Log.warning(
                    "\(record.app): its microphone usage description of \(text.utf8.count) bytes (saved by an older "
                        + "recd) is dropped; set one of at most \(SessionStore.maxMicUsageBytes) bytes with "
                        + "`recctl session set \(record.app) ... --mic-usage TEXT`")
                session.micUsage = nil
            }
            session.prefersInterruptionOnRouteDisconnect = record.prefersInterruption
            session.prefersNoInterruptionsFromSystemAlerts = record.prefersNoSystemAlerts
            session.prefersEchoCancelledInput = record.prefersEchoCancelledInput
            store.insert(session, configuration: record.configuration, preferences: record.preferences, inputMuted: record.inputMuted)
            store.noteUse(of: record.app, at: record.lastUsed ?? now)
        }
        for (app, permission) in persisted.permissions { _ = store.setPermission(app: app, permission) }
        for case .success(let (decl, configuration)) in check(config) {
            var session = store.sessions[decl.app] ?? Session(app: decl.app, ownerUID: 0)
            session.ownerUID = 0
            session.micUsage = decl.micUsage ?? session.micUsage
            session.priority = decl.priority
            session.background = decl.background
            session.autoResume = decl.autoResume
            session.declaredInConfig = true
            if case .port(let name) = decl.record { session.declaredInput = name } else { session.declaredInput = nil }
            store.insert(session, configuration: configuration, preferences: session.preferences, inputMuted: session.inputMuted)
            if let permission = decl.permission, store.permission(decl.app) == .undetermined {
                _ = store.setPermission(app: decl.app, permission)
            }
        }
        return store
    }
}

/// Writes to standard error in one write(2) (no shared FILE state).
func standardError(_ message: String) {
    let bytes = Array(message.utf8)
    bytes.withUnsafeBytes { try? Descriptor.writeAll(Descriptor.standardError, $0, path: nil) }
}

extension Recd {
    /// The time-stamps of the chains (`[evidence] tsa_url`): nil without a TSA, or without a key
    /// (no chain to stamp: said in the log), or when the pinned certificate cannot be read.
    static func makeTimeStamps(
        config: RecdConfig, prover: SegmentProver?, deliver: @escaping SlowRequestWorker.Deliver
    ) -> TimeStampService? {
        guard !config.evidence.tsaURLs.isEmpty else { return nil }
        guard let prover else {
            Log.error("[evidence] tsa_url is set, but the archive does not prove itself (no key): nothing is stamped")
            return nil
        }
        do {
            let pin = try TimeStampService.pin(of: config.evidence)
            return try TimeStampService(
                settings: config.evidence, pinnedFingerprint: pin, archiveDirectory: config.archive.dir,
                heads: prover.keeper.heads, deliver: deliver)
        } catch {
            Log.error("time-stamps are off: \(error); fix [evidence] and restart")
            return nil
        }
    }
}

// Recorders (SPEC §7, §8, §9): a session's input captured by an engine tap, band-limited for
// HFP links, and archived as FLAC segments by an archiver thread. Control thread only, except
// where a type says otherwise. `archive.index` is the control thread's own connection to the
// index (adds on segmentFinished, archive.list, the status count); verify, reindex and
// retention run on the worker with its own (ArchiveMaintenance.swift). Stopping never waits
// for an archiver: `stopRecorder` asks and returns, the `.stopped` event finishes the job
// (`recorderWake` posts event handling to the control thread from the archiver thread).
import Archive
import AudioEngine
import Codec
import ControlProtocol
import Foundation
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

/// A capture tap as the archive's sample source.
///
/// Threads: `read` and `drainGaps` run on the archiver thread; `resolveStartTime` on the
/// control thread, which alone can ask JACK what UTC time the first frame was.
final class TapSource: SampleSource, @unchecked Sendable {
    let tap: CaptureTap
    private let start = Mutex<UTCTime?>(nil)

    init(tap: CaptureTap) { self.tap = tap }

    var channels: Int { tap.channels }
    var startTime: UTCTime? { start.withLock { $0 } }

    /// Control thread: fixes the start time once the tap has its first frame.
    func resolveStartTime(_ engine: AudioEngine) {
        guard startTime == nil, let frameTime = tap.firstFrameTime,
            let nanoseconds = engine.utcNanoseconds(forFrameTime: frameTime)
        else { return }
        start.withLock { $0 = UTCTime(nanosecondsSinceEpoch: nanoseconds) }
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        // Nothing until the first frame's UTC time is known: names and rotation depend on it.
        guard startTime != nil else { return 0 }
        return tap.read(into: buffer)
    }

    func drainGaps() -> [SourceGap] {
        tap.drainGaps().map { SourceGap(position: $0.position, length: $0.length) }
    }
}

/// What a recorder was asked to record: enough to start it again (auto_resume).
struct RecorderSpec: Equatable {
    var app: String
    var stream: String
    var port: String
}

/// One running recorder of a session.
final class RecorderStream {
    let spec: RecorderSpec
    let tap: CaptureTap
    let source: TapSource
    let recorder: Recorder
    let bandwidth: CaptureBandwidth
    let sampleRate: Int
    let startedAt = Date()
    var currentFiles: [String] = []
    var segments = 0
    var gaps = 0
    var stopping = false

    init(spec: RecorderSpec, tap: CaptureTap, source: TapSource, recorder: Recorder, bandwidth: CaptureBandwidth, sampleRate: Int) {
        self.spec = spec
        self.tap = tap
        self.source = source
        self.recorder = recorder
        self.bandwidth = bandwidth
        self.sampleRate = sampleRate
    }

    var json: JSONValue {
        [
            "app": .string(spec.app), "stream": .string(spec.stream), "port": .string(spec.port),
            "bandwidth": .string(bandwidth.name), "sampleRate": .number(Double(sampleRate)),
            "files": JSONValue(currentFiles), "seconds": .number(Date().timeIntervalSince(startedAt).rounded()),
            "segments": .number(Double(segments)), "gaps": .number(Double(gaps)),
            "overruns": .number(Double(tap.overruns)), "dropped_frames": .number(Double(tap.droppedFrames)),
            "zeroed": .bool(tap.isZeroed),
        ]
    }
}

/// A `record.stop` reply waiting for the recorders it stopped to finish their files.
struct PendingStop {
    var client: ClientID
    var id: JSONValue
    var waitingFor: [ObjectIdentifier]
    /// The recorders as they were when asked to stop: the reply's `recorders`.
    var recorders: [JSONValue]
}

/// The archive as the daemon sees it: recorders, suspended specs, the index.
final class ArchiveState {
    var recorders: [RecorderStream] = []
    /// Recorders asked to stop whose archiver still finishes its files; they leave with their
    /// `.stopped` event.
    var stopping: [RecorderStream] = []
    /// `record.stop` requests that reply once their recorders have finished their files.
    var pendingStops: [PendingStop] = []
    /// Recorders stopped by an interruption or a media-services loss, to start again on resume.
    var suspended: [RecorderSpec] = []
    /// The control thread's connection to the index (the worker has its own).
    var index: ArchiveIndex?
    var lastRetention = 0.0
    /// A retention run is queued or running on the worker.
    var retentionRunning = false
    /// `archive.reindex` requests on the worker, and the segments finished meanwhile, which
    /// the rebuild may have missed (added again when the last one is done).
    var reindexesRunning = 0
    var finishedDuringReindex: [SegmentRecord] = []

    func of(_ app: String) -> [RecorderStream] { recorders.filter { $0.spec.app == app } }
}

extension ControlService {
    var archiveDir: String { config.archive.dir }
    var archiveIndexPath: String { maintenance.indexPath }

    /// Start-up: recover partial files left by a crash, open the index.
    func openArchive() {
        if (try? FileSystem.makeDirectories(archiveDir, mode: 0o750)) == nil {
            Log.error("cannot create archive dir \(archiveDir); recordings will fail until [archive] dir is writable")
        }
        do {
            archive.index = try ArchiveIndex(path: archiveIndexPath)
        } catch {
            Log.error("cannot open the archive index: \(error); `recctl archive reindex` rebuilds it")
        }
        for result in PartialRecovery.recoverAll(in: archiveDir) {
            Log.notice("recovery of \(result.partialPath): \(result.outcome)")
            if case .recovered(let record) = result.outcome {
                try? archive.index?.add(record)
            }
        }
    }

    /// `record.start`: permission-gated (SPEC §8), implicit activation, one tap + one recorder.
    func recordStart(_ request: Request, peer: PeerCredentials) throws -> [(String, JSONValue)] {
        let app = try request.string("app")
        try authorizeChange(of: app, by: peer)
        try store.checkCanRecord(app: app)
        if let busName = try request.optionalString("bus") {
            // What the room heard (main) or the DJ's pre-listen (cue): both carry input samples,
            // so the same permission gate applies.
            guard let bus = Bus(rawValue: busName) else { throw SessionError(.badParam, "bus \(busName) is not main or cue") }
            guard monitoring.owner == app else {
                throw SessionError(.incompatibleCategory, "\(app) has no monitoring buses; set them up with `recctl cue \(app) outputs --main PORT --cue PORT`")
            }
            let stream = try request.optionalString("stream") ?? bus.rawValue
            if archive.of(app).contains(where: { $0.spec.stream == stream }) {
                throw SessionError(.badParam, "\(app) already records stream \(stream); stop it first or use --stream NAME")
            }
            let started = try startRecorder(RecorderSpec(app: app, stream: stream, port: "bus:" + bus.rawValue))
            syncStreams(app)
            return [("recorder", started.json)]
        }
        let session = try store.session(app)
        if !session.isActive { apply(try store.activate(app: app)) }
        let route = try store.session(app).route
        guard let portName = try request.optionalString("input") ?? route.inputs.first else {
            throw SessionError(.resourceNotAvailable, "\(app) has no input route (no available input suits it); see `recctl routes`")
        }
        try store.checkRecordInput(app: app, port: portName)
        let stream = try request.optionalString("stream") ?? portName
        if archive.of(app).contains(where: { $0.spec.stream == stream }) {
            throw SessionError(.badParam, "\(app) already records stream \(stream); stop it first or use --stream NAME")
        }
        let started = try startRecorder(RecorderSpec(app: app, stream: stream, port: portName))
        syncStreams(app)
        return [("recorder", started.json)]
    }

    @discardableResult
    func startRecorder(_ spec: RecorderSpec) throws -> RecorderStream {
        if spec.port.hasPrefix("bus:") { return try startBusRecorder(spec) }
        let session = try store.session(spec.app)
        guard let port = config.port(named: spec.port), port.direction.canCapture, let group = EngineController.inputGroup(port) else {
            throw SessionError(.resourceNotAvailable, "\(spec.port) is not an input port; inputs are: \(config.ports.filter(\.direction.canCapture).map(\.name).joined(separator: ", "))")
        }
        guard let state = store.ports.first(where: { $0.name == spec.port }), state.available else {
            throw SessionError(.resourceNotAvailable, "input \(spec.port) is not available now (its JACK ports are missing); see `recctl routes`")
        }
        let request = RouteRequest(configuration: session.configuration, preferredInput: spec.port, region: store.region)
        guard RouteChooser.isEligibleInput(state, request: request) else {
            throw SessionError(.resourceNotAvailable, "\(spec.app) may not use \(spec.port) (\(port.type.rawValue)); Bluetooth microphones need allowBluetoothHFP or bluetoothHighQualityRecording")
        }
        guard engine.isRunning, let jackRate = engine.engine.sampleRate else {
            throw SessionError(.mediaServicesFailed, "the JACK server is gone; wait for mediaServicesWereReset and start the recorder again")
        }
        let bandwidth = RouteChooser.bandwidth(of: state, for: request)
        let tap: CaptureTap
        do {
            tap = try engine.engine.addCaptureTap(inputGroup: group, zeroed: store.capturesSilenced(app: spec.app))
        } catch {
            throw SessionError(.resourceNotAvailable, "the engine refused a capture of \(spec.port): \(error)")
        }
        let source = TapSource(tap: tap)
        var transform: HFPTransform?
        var bits = 24
        var rate = jackRate
        if case .hfp(let codec) = bandwidth {
            transform = try HFPTransform(jackRate: jackRate, linkRate: codec.sampleRate, channels: port.channels)
            bits = 16
            rate = codec.sampleRate
        }
        let configuration = RecorderConfiguration(
            archiveDirectory: archiveDir, app: spec.app, stream: spec.stream, channels: port.channels, sampleRate: jackRate,
            bitsPerSample: bits, segmentSeconds: config.archive.segmentSeconds, compressionLevel: config.archive.compressionLevel,
            category: session.configuration.category.rawValue, mode: session.configuration.mode.rawValue,
            inputPort: port.name, inputType: port.type.rawValue, bandwidth: bandwidth.name, recdVersion: recdVersion)
        let recorder: Recorder
        do {
            recorder = try Recorder(
                configuration: configuration, source: source, transform: transform, wake: recorderWake)
            try recorder.start()
        } catch {
            engine.engine.removeCaptureTap(tap)
            throw error.sessionError
        }
        let stream = RecorderStream(spec: spec, tap: tap, source: source, recorder: recorder, bandwidth: bandwidth, sampleRate: rate)
        archive.recorders.append(stream)
        source.resolveStartTime(engine.engine)
        Log.info("\(spec.app): recording \(spec.port) as \(spec.stream) (\(bandwidth.name), \(rate) Hz, \(bits)-bit)")
        announceRecording(stream, state: "started", file: nil, reason: nil)
        return stream
    }

    /// A recorder of a monitoring bus: full bandwidth at the JACK rate, 24-bit.
    func startBusRecorder(_ spec: RecorderSpec) throws -> RecorderStream {
        let session = try store.session(spec.app)
        guard let bus = Bus(rawValue: String(spec.port.dropFirst(4))), engine.isRunning, let rate = engine.engine.sampleRate else {
            throw SessionError(.mediaServicesFailed, "the JACK server is gone; wait for mediaServicesWereReset and start the recorder again")
        }
        let tap: CaptureTap
        do {
            tap = try engine.engine.addBusTap(bus)
        } catch {
            throw SessionError(.resourceNotAvailable, "the engine refused a tap on the \(bus.rawValue) bus: \(error)")
        }
        if store.capturesSilenced(app: spec.app) { engine.engine.setZeroed(tap, true) }
        let source = TapSource(tap: tap)
        let configuration = RecorderConfiguration(
            archiveDirectory: archiveDir, app: spec.app, stream: spec.stream, channels: tap.channels, sampleRate: rate,
            bitsPerSample: 24, segmentSeconds: config.archive.segmentSeconds, compressionLevel: config.archive.compressionLevel,
            category: session.configuration.category.rawValue, mode: session.configuration.mode.rawValue,
            inputPort: spec.port, inputType: "bus", bandwidth: CaptureBandwidth.full.name, recdVersion: recdVersion)
        let recorder: Recorder
        do {
            recorder = try Recorder(configuration: configuration, source: source, wake: recorderWake)
            try recorder.start()
        } catch {
            engine.engine.removeCaptureTap(tap)
            throw error.sessionError
        }
        let stream = RecorderStream(spec: spec, tap: tap, source: source, recorder: recorder, bandwidth: .full, sampleRate: rate)
        archive.recorders.append(stream)
        source.resolveStartTime(engine.engine)
        Log.info("\(spec.app): recording the \(bus.rawValue) bus as \(spec.stream)")
        announceRecording(stream, state: "started", file: nil, reason: nil)
        return stream
    }

    /// `record.stop`: replies once the recorders have finished their files (nil: later).
    func recordStop(_ request: Request, from client: ClientID, peer: PeerCredentials) throws -> [(String, JSONValue)]? {
        let app = try request.string("app")
        try authorizeChange(of: app, by: peer)
        _ = try store.session(app)
        let stream = try request.optionalString("stream")
        let targets = archive.of(app).filter { stream == nil || $0.spec.stream == stream }
        guard !targets.isEmpty else {
            throw SessionError(.badParam, "\(app) is not recording\(stream.map { " stream \($0)" } ?? ""); start with `recctl record start \(app)`")
        }
        var stopped: [JSONValue] = []
        for recorder in targets {
            stopped.append(recorder.json)
            stopRecorder(recorder, reason: .stop)
        }
        archive.suspended.removeAll { $0.app == app && (stream == nil || $0.stream == stream) }
        syncStreams(app)
        let pending = PendingStop(
            client: client, id: request.id, waitingFor: targets.map(ObjectIdentifier.init), recorders: stopped)
        archive.pendingStops.append(pending)
        return nil
    }

    /// Asks a recorder to stop and detaches it from the engine, then returns: its archiver
    /// drains what was captured and finishes the open segment on its own thread (a final
    /// flush and fdatasync, which take long on a busy disk), and `finishStop` follows its
    /// `.stopped` event.
    func stopRecorder(_ stream: RecorderStream, reason: EndReason) {
        guard !stream.stopping else { return }
        stream.stopping = true
        stream.recorder.requestStop(reason: reason)
        engine.engine.removeCaptureTap(stream.tap)
        archive.recorders.removeAll { $0 === stream }
        archive.stopping.append(stream)
    }

    /// A stopped recorder's files are finished: announce it, answer the `record.stop`
    /// requests that were waiting for it.
    private func finishStop(_ stream: RecorderStream, reason: EndReason, error: ArchiveError?) {
        stream.recorder.waitUntilStopped()  // its thread has ended: this only joins it
        archive.stopping.removeAll { $0 === stream }
        announceRecording(
            stream, state: "stopped", file: stream.currentFiles.first, reason: reason.rawValue,
            extra: error.map { [("error", Wire.errorObject($0.sessionError))] } ?? [])
        let finished = ObjectIdentifier(stream)
        for index in archive.pendingStops.indices {
            archive.pendingStops[index].waitingFor.removeAll { $0 == finished }
        }
        for stop in archive.pendingStops where stop.waitingFor.isEmpty {
            send(Wire.success(id: stop.id, [("recorders", .array(stop.recorders))]), to: stop.client)
        }
        archive.pendingStops.removeAll { $0.waitingFor.isEmpty }
    }

    /// Stops every recorder and waits until each has finished its files: at shutdown, when the
    /// control loop no longer runs.
    func stopAllRecordersAndWait() {
        for stream in archive.recorders { stopRecorder(stream, reason: .stop) }
        for stream in archive.stopping {
            stream.recorder.waitUntilStopped()
            handleRecorderEvents(stream)
        }
    }

    /// Wakes the control thread to handle a recorder's events (called on its archiver thread).
    var recorderWake: @Sendable () -> Void {
        { [weak server, weak self] in
            server?.post { [weak self] in self?.handleAllRecorderEvents() }
        }
    }

    /// Events of running and stopping recorders.
    func handleAllRecorderEvents() {
        for stream in archive.recorders + archive.stopping { handleRecorderEvents(stream) }
    }

    /// Control thread, from the tick and wake-ups: start times, events, disk full, retention.
    func serviceRecorders(now: Double) {
        for stream in archive.recorders { stream.source.resolveStartTime(engine.engine) }
        handleAllRecorderEvents()
        if now - archive.lastRetention >= 60 {
            archive.lastRetention = now
            enforceRetention()
        }
    }

    func handleRecorderEvents(_ stream: RecorderStream) {
        for event in stream.recorder.drainEvents() {
            switch event {
            case .segmentStarted(let path, _, _, _):
                stream.currentFiles.append(path)
                announceRecording(stream, state: "segment", file: path, reason: nil)
            case .segmentFinished(let record):
                stream.currentFiles.removeAll { $0 == record.path }
                stream.segments += 1
                do { try archive.index?.add(record) } catch { Log.warning("index: \(error)") }
                if archive.reindexesRunning > 0 { archive.finishedDuringReindex.append(record) }
                announceRecording(stream, state: "finished", file: record.path, reason: record.endReason?.rawValue,
                                  extra: [("frames", .number(Double(record.frames))), ("gaps", .number(Double(record.gaps.count)))])
            case .segmentAbandoned(let partial, let error):
                Log.error("\(stream.spec.app): segment \(partial) left for recovery: \(error)")
                announceRecording(stream, state: "abandoned", file: partial, reason: "\(error)")
            case .gap(let gap):
                stream.gaps += 1
                Log.warning("\(stream.spec.app)/\(stream.spec.stream): ring overrun, \(gap.length) frames missing at frame \(gap.position)")
                announceRecording(stream, state: "gap", file: nil, reason: "overrun",
                                  extra: [("position", .number(Double(gap.position))), ("length", .number(Double(gap.length)))])
            case .stopped(let reason, let error):
                if stream.stopping {
                    finishStop(stream, reason: reason, error: error)
                    continue
                }
                // The recorder stopped by itself: disk full or a write error.
                stream.stopping = true
                engine.engine.removeCaptureTap(stream.tap)
                archive.recorders.removeAll { $0 === stream }
                let message = error.map { "\($0)" } ?? reason.rawValue
                Log.error("\(stream.spec.app): recorder stopped: \(message)")
                announceRecording(stream, state: "stopped", file: nil, reason: reason.rawValue, extra: error.map {
                    [("error", Wire.errorObject($0.sessionError))]
                } ?? [])
                syncStreams(stream.spec.app)
            }
        }
    }

    func announceRecording(_ stream: RecorderStream, state: String, file: String?, reason: String?, extra: [(String, JSONValue)] = []) {
        broadcastEvent(app: stream.spec.app, .object([
            ("event", "recording"), ("app", .string(stream.spec.app)), ("stream", .string(stream.spec.stream)),
            ("state", .string(state)), ("file", JSONValue(file)), ("reason", JSONValue(reason)), ("port", .string(stream.spec.port)),
        ] + extra))
    }

    /// What the policy's effects mean for recorders.
    func applyRecorderEffect(_ effect: PolicyEffect) {
        switch effect {
        case .pauseStreams(let app, _):
            for stream in archive.of(app) {
                archive.suspended.append(stream.spec)
                stopRecorder(stream, reason: .interruption)
            }
        case .stopStreams(let app, let reason):
            for stream in archive.of(app) {
                if reason == .mediaServicesLost { archive.suspended.append(stream.spec) }
                stopRecorder(stream, reason: reason == .mediaServicesLost ? .mediaServicesLost : .stop)
            }
            if reason != .mediaServicesLost { archive.suspended.removeAll { $0.app == app } }
        case .resumeStreams(let app):
            let specs = archive.suspended.filter { $0.app == app }
            archive.suspended.removeAll { $0.app == app }
            for spec in specs {
                do {
                    try startRecorder(spec)
                } catch {
                    Log.error("\(app): could not resume recording \(spec.stream): \(error)")
                }
            }
        case .inputMuteStateChange(let app, _):
            for stream in archive.of(app) { engine.engine.setZeroed(stream.tap, store.capturesSilenced(app: app)) }
        case .recordPermission(let app, let state) where state != .granted:
            // No sample of an input reaches a file of an app that is not granted (SPEC §8).
            for stream in archive.of(app) {
                engine.engine.setZeroed(stream.tap, true)
                stopRecorder(stream, reason: EndReason(rawValue: "permissionRevoked"))
            }
        case .routeChange(let app, _, _, let current):
            for stream in archive.of(app) where !stream.spec.port.hasPrefix("bus:") && !(store.ports.first { $0.name == stream.spec.port }?.available ?? false) {
                stopRecorder(stream, reason: .routeChange)
                _ = current
            }
        default:
            return
        }
    }

    /// Sessions declared with `record = ...` record whenever they can (the broadcast logger).
    func startDeclaredRecorders() {
        for decl in config.sessions where decl.record != .no {
            guard archive.of(decl.app).isEmpty, !archive.suspended.contains(where: { $0.app == decl.app }) else { continue }
            do {
                let session = try store.session(decl.app)
                if !session.isActive { apply(try store.activate(app: decl.app)) }
                try store.checkCanRecord(app: decl.app)
                let port: String?
                switch decl.record {
                case .port(let name): port = name
                default: port = try store.session(decl.app).route.inputs.first
                }
                guard let port else { throw SessionError(.resourceNotAvailable, "no input route") }
                try startRecorder(RecorderSpec(app: decl.app, stream: port, port: port))
                syncStreams(decl.app)
            } catch {
                Log.warning("\(decl.app): declared recording not started: \(error)")
            }
        }
    }

    // MARK: Archive queries

    func archiveList(_ request: Request) throws -> [(String, JSONValue)] {
        guard let index = archive.index else {
            throw SessionError(.unspecified, "the archive index is not open; run `recctl archive reindex`")
        }
        var since: UTCTime?
        if let text = try request.optionalString("since") {
            guard let time = UTCTime(iso8601: text) ?? UTCTime(iso8601: text + "T00:00:00Z") else {
                throw SessionError(.badParam, "--since \(text) is not a time; use ISO 8601 like 2026-11-29T23:00:00Z or 2026-11-29")
            }
            since = time
        }
        let records = try index.list(app: try request.optionalString("app"), since: since)
        return [("segments", .array(records.map(segmentJSON)))]
    }

    func segmentJSON(_ record: SegmentRecord) -> JSONValue {
        [
            "path": .string(record.path), "app": .string(record.app), "stream": .string(record.stream),
            "group": .number(Double(record.group)), "segment": .number(Double(record.segment)),
            "start": .string(record.startTime.iso8601), "seconds": .number(record.duration),
            "frames": .number(Double(record.frames)), "sampleRate": .number(Double(record.sampleRate)),
            "channels": .number(Double(record.channels)), "bits": .number(Double(record.bitsPerSample)),
            "end_reason": JSONValue(record.endReason?.rawValue), "gaps": .number(Double(record.gaps.count)),
            "recovered": .bool(record.recovered), "bytes": .number(Double(record.bytes)),
        ]
    }
}

extension ControlService {
    /// Disk space of the archive, for `recctl status`.
    func archiveStatus() -> JSONValue {
        var stats = statvfs()
        guard statvfs(archiveDir, &stats) == 0 else { return ["dir": .string(archiveDir)] }
        let free = Double(stats.f_bavail) * Double(stats.f_frsize)
        let total = Double(stats.f_blocks) * Double(stats.f_frsize)
        return [
            "dir": .string(archiveDir), "free_bytes": .number(free.rounded()),
            "free_percent": .number(total > 0 ? (free / total * 1000).rounded() / 10 : 0),
            "segments": JSONValue((try? archive.index?.count()) ?? nil),
        ]
    }
}

// Recorders (SPEC §7, §8, §9): a session's input, or a monitoring bus, captured by an engine
// tap, band-limited for HFP links, and archived as FLAC segments by an archiver thread.
//
// Threads: the control thread, except where a type says otherwise. `index` is the control
// thread's own connection to the archive index (adds on segmentFinished, archive.list, the
// status count); verify, reindex and retention run on the worker with its own
// (ArchiveMaintenance.swift). Stopping never waits for an archiver: `stop` asks and returns,
// the recorder's `.stopped` event finishes the job (the archiver thread calls `wake`, which
// brings `handleEvents` to the control thread).
import Archive
import AudioEngine
import Codec
import ControlProtocol
import Foundation
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

/// The recorders of every session and the archive they write: taps, archivers, segment
/// events, suspended recorders, the declared ones, and the archive's index and jobs.
///
/// Confined to the control thread (hence `@unchecked Sendable`: worker completions that
/// capture it run there too).
final class RecorderService: @unchecked Sendable {
    let settings: ArchiveSection
    let engine: any RecorderEngine
    private let sink: any ServiceSink
    /// The daemon's worker for slow requests: verify, reindex and retention.
    let worker: SlowRequestWorker
    /// The archive as worker jobs see it (used on the worker thread only).
    let maintenance: ArchiveMaintenance
    /// Called on an archiver thread when its recorder has events; must bring `handleEvents`
    /// to the control thread.
    private let wake: @Sendable () -> Void
    /// `[session] record = ...` of the config: sessions that record whenever they can.
    let declared: [(app: String, record: RecordAtStart)]
    /// The silence keys of `[session APP]` sections (the rest come from `settings.silence`).
    private let sessionSilence: [String: SilenceOverride]
    /// Silent streams, `silence` events and the `on_silence` programs.
    let silenceAlarms: SilenceAlarms

    /// The running recorders. Every change is a fact for the policy (isBusy).
    private(set) var recorders: [RecorderStream] = [] {
        didSet { sink.report(.streams) }
    }
    /// Recorders asked to stop whose archiver still finishes its files; they leave with their
    /// `.stopped` event.
    private(set) var stopping: [RecorderStream] = []
    /// Recorders that are not running and why: those an interruption or a media-services loss
    /// stopped (to start again on resume), those a fault stopped (they start again by
    /// themselves when it goes: `resumeWaiting`), and declared ones that do not record.
    var recovery: RecorderRecovery
    /// The entry being started again by `resumeWaiting`: its start is announced `resumed`.
    var resuming: WaitingRecorder?
    /// The control thread's connection to the index (the worker has its own).
    var index: ArchiveIndex?
    var lastRetention = 0.0
    /// A retention run is queued or running on the worker.
    var retentionRunning = false
    /// `archive.reindex` requests on the worker, and the segments finished meanwhile, which
    /// the rebuild may have missed (added again when the last one is done).
    var reindexesRunning = 0
    var finishedDuringReindex: [SegmentRecord] = []
    /// Sessions' pre-roll taps (the trigger feature says which to keep; `startInput` takes them over).
    let preRolls: PreRollKeeper
    /// Armed recorders of level-triggered takes (`TakeTriggerFeature` runs them).
    let triggers = TakeTriggers()
    /// `[replicate] remote`: retention spares segments not yet copied there.
    var replicationRemote: String?
    /// Told of every finished segment once it is in the index (replication's queue).
    var onSegmentFinished: ((SegmentRecord) -> Void)?
    /// Puts finished and recovered segments into their hash chains (nil: no key, unproven).
    var prover: SegmentProver?
    /// Partials whose recovery failed, tried again on the worker when their cause is gone.
    var unrecovered = UnrecoveredPartials()
    /// Who keeps the clock, asked on the slow worker: each segment's CLOCK_SOURCE and
    /// `status.clock.source` (set by `Recd.compose`; nil in tests without one).
    var timeSource: TimeSourceMonitor?

    init(
        settings: ArchiveSection, declared: [(app: String, record: RecordAtStart)], engine: any RecorderEngine,
        sink: any ServiceSink, worker: SlowRequestWorker, wake: @escaping @Sendable () -> Void,
        sessionSilence: [String: SilenceOverride] = [:], silenceRunner: SlowRequestWorker? = nil
    ) {
        self.sessionSilence = sessionSilence
        silenceAlarms = SilenceAlarms(sink: sink, runner: silenceRunner)
        self.settings = settings
        self.declared = declared
        self.engine = engine
        self.sink = sink
        self.worker = worker
        self.wake = wake
        preRolls = PreRollKeeper(engine: engine)
        maintenance = ArchiveMaintenance(directory: settings.dir)
        recovery = RecorderRecovery(archiveDir: settings.dir, minFreePercent: settings.minFreePercent)
    }

    var archiveDir: String { settings.dir }

    func of(_ app: String) -> [RecorderStream] { recorders.filter { $0.spec.app == app } }

    /// The apps that record anything: part of the policy's isBusy fact (`ServiceFact.streams`).
    var recordingApps: Set<String> { Set(recorders.map(\.spec.app)) }

    /// Whether `app` records anything, or the stream `stream`.
    func isRecording(_ app: String, stream: String? = nil) -> Bool {
        recorders.contains { $0.spec.app == app && (stream == nil || $0.spec.stream == stream) }
    }

    /// Start-up: recover partial files left by a crash, open the index.
    func openArchive() {
        if (try? FileSystem.makeDirectories(archiveDir, mode: 0o750)) == nil {
            Log.error("cannot create archive dir \(archiveDir); recordings will fail until [archive] dir is writable")
        }
        do {
            index = try ArchiveIndex(path: maintenance.indexPath)
        } catch {
            Log.error("cannot open the archive index: \(error); `recctl archive reindex` rebuilds it")
        }
        var recovered: [SegmentRecord] = []
        for result in PartialRecovery.recoverAll(in: archiveDir) {
            Log.notice("recovery of \(result.partialPath): \(result.outcome)")
            switch result.outcome {
            case .recovered(let record):
                try? index?.add(record)
                recovered.append(record)
            case .failed(let error):
                Log.error("\(result.partialPath) is not recovered: \(error); recd tries again when that is mended")
                unrecovered.failed(result.partialPath, error: error, now: SystemClock.monotonicSeconds())
            case .alreadyRecovered, .unrecoverable, .inUse: break
            }
        }
        guard let prover else { return }
        // Recovered segments, and those a crash finished before they were chained; in the
        // order they started, before any new segment (the prover's queue is in order).
        // Only those recd noted in its ledger before it wrote them: a row or a partial someone else
        // put in the archive is never chained (the prover checks each on its thread).
        let unchained = (try? index?.unchained(since: prover.since)) ?? nil
        for record in unchained ?? recovered {
            prover.chain(record, index: { [weak self] in self?.index }, onlyIfOwed: true)
        }
        prover.pruneLedger()
    }

    // MARK: Starting

    /// Starts recording an input port, whose policy checks (capture, availability,
    /// eligibility) the router has made. It records the port's first `channels` channels
    /// (the session's preferred input channels, at most the port's); `type` is the port's.
    ///
    /// With `replacing`, the stream goes on from this input (its input route changed): the
    /// old recorder's tap and the new one swap in one graph snapshot, so the old segment's
    /// last frame and the new one's first are adjacent; the old segment ends with `endReason`
    /// (routeChange, or processingChange when it goes on with other capture processing) and
    /// the new one starts at its end time, to the frame.
    @discardableResult
    func startInput(
        _ spec: RecorderSpec, channels: Int, type: PortType, bandwidth: CaptureBandwidth, context: RecordingContext,
        replacing old: RecorderStream? = nil, endReason: EndReason = .routeChange
    ) throws -> RecorderStream {
        guard let group = engine.inputGroup(port: spec.port) else {
            throw SessionError(.resourceNotAvailable, "\(spec.port) is not an input port; see `recctl routes`")
        }
        guard engine.isRunning, let jackRate = engine.sampleRate else {
            throw SessionError(
                .mediaServicesFailed,
                "the JACK server is gone; wait for mediaServicesWereReset and start the recorder again")
        }
        let tap: CaptureTap
        // A session with a pre-roll starts from the input it kept (not when going on from another input).
        let preRolled = old == nil ? preRolls.take(app: spec.app, port: spec.port, channels: channels) : nil
        // A processed capture's far end: the session's route output (a pre-roll tap of a
        // processed session keeps its own; one without is recorded as captured).
        let voice = VoiceSetup(context, inputGroup: group, engine: engine)
        do {
            if let preRolled {
                tap = preRolled.tap
                if context.silenced { engine.setZeroed(tap, true) }
            } else if let old {
                tap = try engine.replaceCaptureTap(
                    old.tap, inputGroup: group, channels: channels, zeroed: context.silenced,
                    reference: voice?.outputGroup)
            } else {
                tap = try engine.addCaptureTap(
                    inputGroup: group, channels: channels, zeroed: context.silenced, reference: voice?.outputGroup)
            }
        } catch {
            throw SessionError(.resourceNotAvailable, "the engine refused a capture of \(spec.port): \(error)")
        }
        // From here the old tap is out of the graph: whatever happens, the old recorder ends
        // (the stream goes on only if the new one started).
        var wentOn = false
        defer { if let old { stop(old, reason: endReason, continued: wentOn) } }
        var transform: HFPTransform?
        var bits = 24
        var rate = jackRate
        if case .hfp(let codec) = bandwidth {
            do {
                transform = try HFPTransform(jackRate: jackRate, linkRate: codec.sampleRate, channels: channels)
            } catch {
                engine.removeCaptureTap(tap)
                throw error
            }
            bits = 16
            rate = codec.sampleRate
        }
        let configuration = RecorderConfiguration(
            archiveDirectory: archiveDir, app: spec.app, stream: spec.stream, channels: channels, sampleRate: jackRate,
            bitsPerSample: bits, segmentSeconds: settings.segmentSeconds, compressionLevel: settings.compressionLevel,
            category: context.category, mode: context.mode,
            inputPort: spec.port, inputType: type.rawValue, bandwidth: bandwidth.name, recdVersion: recdVersion)
        let stream = try start(
            spec, tap: tap, configuration: configuration, transform: transform, bandwidth: bandwidth, rate: rate,
            continuing: old, endReason: endReason, preRolled: preRolled, voice: voice)
        stream.processing = context.processing
        stream.referencePort = context.processing == .none ? nil : context.referencePort
        wentOn = true
        let processed = stream.voice == nil ? "" : ", \(context.processing.rawValue) processing"
        let format = "\(bandwidth.name), \(rate) Hz, \(bits)-bit\(processed)"
        Log.info("\(spec.app): recording \(spec.port) as \(spec.stream) (\(format))")
        return stream
    }

    /// Starts recording a monitoring bus: full bandwidth at the JACK rate, 24-bit.
    @discardableResult
    func startBus(_ spec: RecorderSpec, context: RecordingContext) throws -> RecorderStream {
        guard let bus = spec.bus, engine.isRunning, let rate = engine.sampleRate else {
            throw SessionError(
                .mediaServicesFailed,
                "the JACK server is gone; wait for mediaServicesWereReset and start the recorder again")
        }
        let tap: CaptureTap
        do {
            tap = try engine.addBusTap(bus)
        } catch {
            throw SessionError(.resourceNotAvailable, "the engine refused a tap on the \(bus.rawValue) bus: \(error)")
        }
        if context.silenced { engine.setZeroed(tap, true) }
        let configuration = RecorderConfiguration(
            archiveDirectory: archiveDir, app: spec.app, stream: spec.stream, channels: tap.channels, sampleRate: rate,
            bitsPerSample: 24, segmentSeconds: settings.segmentSeconds, compressionLevel: settings.compressionLevel,
            category: context.category, mode: context.mode,
            inputPort: spec.port, inputType: "bus", bandwidth: CaptureBandwidth.full.name, recdVersion: recdVersion)
        let stream = try start(
            spec, tap: tap, configuration: configuration, transform: nil, bandwidth: .full, rate: rate)
        Log.info("\(spec.app): recording the \(bus.rawValue) bus as \(spec.stream)")
        return stream
    }

    private func start(
        _ spec: RecorderSpec, tap: CaptureTap, configuration: RecorderConfiguration, transform: HFPTransform?,
        bandwidth: CaptureBandwidth, rate: Int, continuing old: RecorderStream? = nil,
        endReason: EndReason = .routeChange, preRolled: PreRollKeeper.Taken? = nil, voice: VoiceSetup? = nil
    ) throws -> RecorderStream {
        var configuration = configuration
        configuration.ledger = prover?.ledger
        configuration.measuresLoudness = settings.loudness != .no
        configuration.loudnessEngine = settings.loudness == .libebur128 ? .libebur128 : .vectorized
        let inputs = SegmentInputs(
            timeSource: timeSource, network: configuration.inputPort.flatMap { engine.networkReception(port: $0) })
        configuration.silence = silenceAlarms.detection(
            app: spec.app, stream: spec.stream, settings: silenceSettings(of: spec.app))
        if let resuming = resuming(spec) {
            configuration.extraComments += [
                VorbisComment(CommentName.resumedAfter, resuming.cause.rawValue),
                VorbisComment(CommentName.stoppedAt, resuming.since.iso8601),
            ]
        }
        var anchor: (time: UTCTime, previous: CaptureTap, sampleRate: Int)?
        if let old {
            configuration.firstSegmentNumber = (old.lastSegmentNumber ?? 0) + 1
            if let known = old.source.anchorForSuccessor {
                anchor = (known, old.tap, configuration.sampleRate)
            }
        }
        let source: TapSource
        if let preRolled {
            source = TapSource(
                preRolled: tap, position: preRolled.position, sampleRate: configuration.sampleRate,
                drained: preRolled.gaps)
            let seconds = Double(preRolled.frames) / Double(configuration.sampleRate)
            configuration.extraComments.append(
                VorbisComment(CommentName.preRollSeconds, String(format: "%.3f", seconds)))
        } else {
            source = TapSource(tap: tap, anchor: anchor)
        }
        // The archiver reads the processed capture; everything else asks the tap's source.
        let processed = voice.flatMap {
            $0.source(capturing: source, tap: tap, sampleRate: configuration.sampleRate, continuing: anchor != nil)
        }
        if let voice, processed != nil {
            configuration.extraComments.append(VorbisComment(CommentName.voiceProcessing, voice.processing.rawValue))
        }
        let recorder: Recorder
        do {
            recorder = try Recorder(
                configuration: configuration, inputs: inputs, source: processed ?? source, transform: transform,
                wake: wake)
            try recorder.start()
        } catch {
            engine.removeCaptureTap(tap)
            throw error.sessionError
        }
        let stream = RecorderStream(
            spec: spec, tap: tap, source: source, recorder: recorder, bandwidth: bandwidth, sampleRate: rate,
            startedAt: old?.startedAt ?? Date())
        stream.silenceAlarms = silenceAlarms
        stream.voice = processed
        recorders.append(stream)
        source.resolveStartTime(engine)
        if let old {
            stream.segments = old.segments
            stream.gaps = old.gaps
            old.successor = stream
            Log.info("\(spec.app): \(spec.stream) goes on from \(spec.port) (was \(old.spec.port); \(endReason))")
            announce(stream, .switched, reason: endReason.rawValue) { $0.previousPort = old.spec.port }
        } else if let resuming = resuming(spec) {
            announce(stream, .resumed, reason: resuming.cause.rawValue) { $0.since = resuming.since.iso8601 }
        } else {
            announce(stream, .started)
        }
        // It records: it waits no more. A declared app has one recorder: whatever kept it from
        // recording is over.
        let declaredApp = isDeclared(spec.app)
        recovery.remove { $0.spec.app == spec.app && ($0.spec.stream == spec.stream || declaredApp) }
        return stream
    }

    // MARK: Stopping

    /// `record.stop`: asks `app`'s recorders (one stream, or all) to stop and forgets their
    /// suspended specs. Returns each as it was (the reply's `recorders`) with the id its
    /// finish will carry in `RecorderNews.finished`.
    func stopRecording(app: String, stream: String?) throws -> [(id: ObjectIdentifier, json: JSONValue)] {
        let targets = of(app).filter { stream == nil || $0.spec.stream == stream }
        let matches = { (entry: WaitingRecorder) in
            entry.spec.app == app && (stream == nil || entry.spec.stream == stream)
        }
        let waited = recovery.waiting.filter { matches($0) && $0.cause != .stop }
        guard !targets.isEmpty || !waited.isEmpty else {
            throw SessionError(
                .badParam,
                "\(app) is not recording\(stream.map { " stream \($0)" } ?? ""); start with `recctl record start "
                    + "\(app)`"
            )
        }
        var stopped: [(id: ObjectIdentifier, json: JSONValue)] = []
        for recorder in targets {
            stopped.append((recorder.id, recorder.json))
            stop(recorder, reason: .stop)
        }
        recovery.remove(where: matches)
        // A declared recorder stopped by request stays stopped (not started again at a reset)
        // until `record.start`; status says so.
        if isDeclared(app) {
            for spec in targets.map(\.spec) + waited.map(\.spec) {
                recovery.wait(spec, cause: .stop, declared: true)
            }
        }
        if !waited.isEmpty {
            Log.notice("\(app): \(waited.map(\.spec.stream).joined(separator: ", ")) no longer waits to record again")
        }
        return stopped
    }

    /// The entry `resumeWaiting` is starting again, when `spec` is its recorder (a declared one
    /// may start under another stream name: the route's input now).
    private func resuming(_ spec: RecorderSpec) -> WaitingRecorder? {
        guard let resuming, resuming.spec.app == spec.app, resuming.spec.stream == spec.stream || resuming.declared
        else { return nil }
        return resuming
    }

    /// Whether `app`'s session declares a recorder (`record = route` or a port).
    func isDeclared(_ app: String) -> Bool {
        declared.contains { $0.app == app && $0.record != .no }
    }

    /// Asks a recorder to stop and detaches it from the engine, then returns: its archiver
    /// drains what was captured and finishes the open segment on its own thread (a final
    /// flush and fdatasync, which take long on a busy disk), and `finishStop` follows its
    /// `.stopped` event.
    func stop(_ stream: RecorderStream, reason: EndReason, continued: Bool = false, comments: [VorbisComment] = []) {
        guard !stream.stopping else { return }
        stream.stopping = true
        stream.continued = continued
        if stream.feed.stalledSince != nil {
            // Its last frame came long before the stop: the time between is missing too.
            stream.source.stopsStalled(
                atMicros: Int(SystemClock.monotonicSeconds() * 1e6),
                sampleRate: stream.recorder.configuration.sampleRate)
        }
        stream.recorder.requestStop(reason: reason, comments: comments)
        engine.removeCaptureTap(stream.tap)
        recorders.removeAll { $0 === stream }
        stopping.append(stream)
    }

    /// A stopped recorder's files are finished: announce it.
    private func finishStop(_ stream: RecorderStream, reason: EndReason, error: ArchiveError?) {
        stream.recorder.waitUntilStopped()  // its thread has ended: this only joins it
        stopping.removeAll { $0 === stream }
        if stream.continued { return }
        forgetSilenceIfGone(stream.spec)
        announce(stream, .stopped, file: stream.currentFiles.first, reason: reason.rawValue) {
            $0.error = error?.sessionError
            $0.resumesWhen = resumesWhen(of: stream.spec)
        }
    }

    /// `resumesWhen` for the `stopped` event of a stream that waits to start again by itself.
    private func resumesWhen(of spec: RecorderSpec) -> String? {
        guard let entry = recovery.entry(app: spec.app, stream: spec.stream), entry.cause.heals else { return nil }
        return recovery.resumesWhen(entry)
    }

    /// Stops every recorder and waits until each has finished its files: at shutdown, when the
    /// control loop no longer runs.
    func stopAllAndWait() {
        for stream in recorders { stop(stream, reason: .stop) }
        for stream in stopping {
            stream.recorder.waitUntilStopped()
            _ = handleEvents(of: stream)
        }
    }

    // MARK: Events

    /// Events of running and stopping recorders (after `wake`, and from the tick).
    func handleEvents() -> RecorderNews {
        var news = RecorderNews()
        for stream in recorders + stopping {
            let more = handleEvents(of: stream)
            news.finished += more.finished
        }
        return news
    }

    /// From the tick: start times, events, retention every 60 s.
    func service(now: Double) -> RecorderNews {
        for stream in recorders { stream.source.resolveStartTime(engine) }
        let news = handleEvents()
        watchFeeds(now: now)
        if now - lastRetention >= 60 {
            lastRetention = now
            enforceRetention()
        }
        if !unrecovered.isEmpty { retryRecoveries(now: now) }
        return news
    }

    private func handleEvents(of stream: RecorderStream) -> RecorderNews {
        var news = RecorderNews()
        for event in stream.recorder.drainEvents() {
            switch event {
            case .segmentStarted(let path, _, let segment, _):
                stream.currentFiles.append(path)
                stream.lastSegmentNumber = max(stream.lastSegmentNumber ?? 0, segment)
                announce(stream, .segment, file: path)
            case .segmentFinished(let record):
                stream.currentFiles.removeAll { $0 == record.path }
                stream.segments += 1
                stream.successor?.segments += 1
                do { try index?.add(record) } catch { Log.warning("index: \(error)") }
                if reindexesRunning > 0 { finishedDuringReindex.append(record) }
                if let prover {
                    // Replicated once chained: the copy carries the chain that names it.
                    prover.chain(record, index: { [weak self] in self?.index }) { [weak self] in
                        self?.onSegmentFinished?(record)
                    }
                } else {
                    onSegmentFinished?(record)
                }
                announce(stream, .finished, file: record.path, reason: record.endReason?.rawValue) {
                    $0.frames = record.frames
                    $0.gaps = record.gaps.count
                }
            case .segmentAbandoned(let partial, let error):
                Log.error("\(stream.spec.app): segment \(partial) left for recovery: \(error)")
                unrecovered.failed(partial, error: error, now: SystemClock.monotonicSeconds())
                announce(stream, .abandoned, file: partial, reason: "\(error)")
            case .gap(let gap):
                stream.gaps += 1
                stream.successor?.gaps += 1
                logGap(gap, of: stream)
                // The segment being written holds the gap (its GAPS tag); the position counts
                // from the recording's start, across its segments, so the rate comes with it.
                announce(stream, .gap, file: stream.currentFiles.last, reason: gap.cause.rawValue) {
                    $0.position = gap.position
                    $0.length = gap.length
                    $0.sampleRate = stream.sampleRate
                }
            case .silence(let change):
                silenceAlarms.handle(
                    change, app: stream.spec.app, stream: stream.spec.stream,
                    settings: silenceSettings(of: stream.spec.app))
            case .stopped(let reason, let error):
                if stream.stopping {
                    finishStop(stream, reason: reason, error: error)
                    news.finished.append(stream.id)
                    continue
                }
                // The recorder stopped by itself: disk full or a write error.
                stream.stopping = true
                engine.removeCaptureTap(stream.tap)
                recorders.removeAll { $0 === stream }
                let message = error.map { "\($0)" } ?? reason.rawValue
                Log.error("\(stream.spec.app): recorder stopped: \(message)")
                stoppedByItself(stream.spec, reason: reason, message: message)
                announce(stream, .stopped, reason: reason.rawValue) {
                    $0.error = error?.sessionError
                    $0.resumesWhen = resumesWhen(of: stream.spec)
                }
                forgetSilenceIfGone(stream.spec)
            }
        }
        return news
    }

    /// A recorder that stopped by itself waits: for space after a full disk (retention runs at
    /// the next tick rather than within the minute), or, declared, says why it stopped. A
    /// triggered take is not (its trigger stays armed and starts the next take).
    private func stoppedByItself(_ spec: RecorderSpec, reason: EndReason, message: String) {
        guard triggers.armed[spec.app] == nil else { return }
        if reason == .diskFull {
            recovery.wait(spec, cause: .diskFull, declared: isDeclared(spec.app))
            lastRetention = -.infinity
            _ = recovery.currentLowWater()
            if let entry = recovery.entry(app: spec.app, stream: spec.stream), let when = recovery.resumesWhen(entry) {
                Log.warning("\(spec.app)/\(spec.stream): waits for disk space; records again when \(when)")
            }
        } else if isDeclared(spec.app) {
            recovery.wait(spec, cause: .failed, declared: true, detail: message)
        }
    }

    private func logGap(_ gap: SourceGap, of stream: RecorderStream) {
        let name = "\(stream.spec.app)/\(stream.spec.stream)"
        switch gap.cause {
        case .overrun:
            Log.warning(
                "\(name): ring overrun, \(Readable.length(frames: gap.length, sampleRate: stream.sampleRate)) missing "
                    + "at \(Readable.position(frames: gap.position, sampleRate: stream.sampleRate)) of the recording")
        case .clockStall:
            Log.warning(
                "\(name): JACK delivered no audio for \(Readable.length(frames: gap.length, sampleRate: stream.sampleRate)) "
                    + "of wall-clock time (a stalled or stopped server, or a driver that lost sync); recorded as a gap "
                    + "at \(Readable.position(frames: gap.position, sampleRate: stream.sampleRate)) of the recording, so "
                    + "later samples keep their true time")
        }
    }

    /// Sends a `recording` event of `stream`; `details` fills in the fields its step carries.
    func announce(
        _ stream: RecorderStream, _ state: RecordingEvent.State, file: String? = nil, reason: String? = nil,
        details: (inout RecordingEvent) -> Void = { _ in }
    ) {
        var event = RecordingEvent(
            app: stream.spec.app, stream: stream.spec.stream, state: state, file: file, reason: reason,
            port: stream.spec.port)
        details(&event)
        sink.broadcast(.recording(event))
    }

    // MARK: Silence

    /// The silence settings of `app`'s recorders: `[archive]`'s with its session section's.
    func silenceSettings(of app: String) -> SilenceSettings {
        settings.silence.applying(sessionSilence[app] ?? SilenceOverride())
    }

    /// A recorder of `spec`'s stream ended: unless another records it or it waits to start
    /// again, its silence alarm goes.
    private func forgetSilenceIfGone(_ spec: RecorderSpec) {
        let same = { (other: RecorderSpec) in other.app == spec.app && other.stream == spec.stream }
        guard !recorders.contains(where: { same($0.spec) }), !recovery.waiting.contains(where: { same($0.spec) }) else {
            return
        }
        silenceAlarms.forget(app: spec.app, stream: spec.stream)
    }
}

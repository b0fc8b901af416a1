// Recorders (SPEC §7, §8, §9): a session's input, or a monitoring bus, captured by an engine
// tap, band-limited for HFP links, and archived as FLAC segments by an archiver thread.
//
// The service keeps the recorders, their taps and their recovery (`RecorderRecovery`; partials
// left unrecovered, retried on the worker). What segments and streams mean to others (the index,
// the prover, replication, silence alarms, retention) is theirs: each fact goes to the
// `SegmentFeature`s (SegmentFeatures.swift), none known by name. The policy's effects on
// recorders are carried out here; the coordinator decides.
//
// Threads: the control thread, except where a type says otherwise. Stopping never waits for an
// archiver: `stop` asks and returns, the recorder's `.stopped` event finishes the job (the
// archiver thread calls `wake`, which brings `handleEvents` to the control thread).
import Archive
import AudioEngine
import Codec
import ControlProtocol
import Foundation
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

/// The recorders of every session: taps, archivers, segment events, suspended recorders and
/// the declared ones, and the partials left to recover.
///
/// Confined to the control thread (hence `@unchecked Sendable`: worker completions that
/// capture it run there too).
final class RecorderService: @unchecked Sendable {
    let settings: ArchiveSection
    let engine: any RecorderEngine
    /// The configured ports: their input groups, availability, the network behind them.
    let ports: any EnginePorts
    private let sink: any ServiceSink
    private let worker: SlowRequestWorker  // partials recovered again
    /// Called on an archiver thread when its recorder has events; must bring `handleEvents`
    /// to the control thread.
    private let wake: @Sendable () -> Void
    /// Told of every segment and stream fact, in order; and the level-triggered takes' owner
    /// (pre-roll taps, armed apps). Both set once by the composition root.
    var features: [any SegmentFeature] = []
    weak var takes: (any TakeSource)?

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
    let recovery: RecorderRecovery
    /// Partials whose recovery failed, tried again on the worker when their cause is gone.
    private(set) var unrecovered = UnrecoveredPartials()

    init(
        settings: ArchiveSection, declared: [(app: String, record: RecordAtStart)], engine: any RecorderEngine,
        ports: any EnginePorts, sink: any ServiceSink, worker: SlowRequestWorker, wake: @escaping @Sendable () -> Void
    ) {
        self.settings = settings
        self.engine = engine
        self.ports = ports
        self.sink = sink
        self.worker = worker
        self.wake = wake
        recovery = RecorderRecovery(
            archiveDir: settings.dir, minFreePercent: settings.minFreePercent, declared: declared)
    }

    var archiveDir: String { settings.dir }

    func of(_ app: String) -> [RecorderStream] { recorders.filter { $0.spec.app == app } }

    /// The apps that record anything: part of the policy's isBusy fact (`ServiceFact.streams`).
    var recordingApps: Set<String> { Set(recorders.map(\.spec.app)) }

    /// Whether `app` records anything, or the stream `stream`; whether `stream` runs.
    func isRecording(_ app: String, stream: String? = nil) -> Bool {
        recorders.contains { $0.spec.app == app && (stream == nil || $0.spec.stream == stream) }
    }
    func isRunning(_ stream: RecorderStream) -> Bool { recorders.contains { $0 === stream } }

    var unrecoveredInfos: [StatusInfo.UnrecoveredPartial] { unrecovered.infos(archiveDir: archiveDir) }

    /// The recorders running and finishing: what the archive as written now is read from.
    var live: [RecorderStream] { recorders + stopping }

    /// Start-up: recover partial files left by a crash, then the features hear of the archive
    /// (the catalog opens the index and adds what was recovered, the prover chains what it owes).
    func openArchive() {
        if (try? FileSystem.makeDirectories(archiveDir, mode: 0o750)) == nil {
            Log.error("cannot create archive dir \(archiveDir); recordings will fail until [archive] dir is writable")
        }
        var recovered: [SegmentRecord] = []
        for result in PartialRecovery.recoverAll(in: archiveDir) {
            Log.notice("recovery of \(result.partialPath): \(result.outcome)")
            switch result.outcome {
            case .recovered(let record):
                recovered.append(record)
            case .failed(let error):
                Log.error("\(result.partialPath) is not recovered: \(error); recd tries again when that is mended")
                unrecovered.failed(result.partialPath, error: error, now: SystemClock.monotonicSeconds())
            case .alreadyRecovered, .unrecoverable, .inUse: break
            }
        }
        for feature in features { feature.archiveOpened(recovered: recovered) }
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
        guard let group = ports.inputGroup(port: spec.port) else {
            throw SessionError(.resourceNotAvailable, "\(spec.port) is not an input port; see `recctl routes`")
        }
        guard engine.isRunning, let jackRate = engine.sampleRate else {
            throw SessionError(
                .mediaServicesFailed,
                "the JACK server is gone; wait for mediaServicesWereReset and start the recorder again")
        }
        let tap: CaptureTap
        // A session with a pre-roll starts from the input it kept (not when going on from another input).
        let preRolled = old == nil ? takes?.takePreRoll(app: spec.app, port: spec.port, channels: channels) : nil
        // A processed capture's far end: the session's route output (a pre-roll tap of a
        // processed session keeps its own; one without is recorded as captured).
        let voice = VoiceSetup(context, inputGroup: group, engine: engine, ports: ports)
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
            comments: SegmentComments(
                category: context.category, mode: context.mode, inputPort: spec.port, inputType: type.rawValue,
                bandwidth: bandwidth.name, recdVersion: recdVersion))
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
            comments: SegmentComments(
                category: context.category, mode: context.mode, inputPort: spec.port, inputType: "bus",
                bandwidth: CaptureBandwidth.full.name, recdVersion: recdVersion))
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
        configuration.measuresLoudness = settings.loudness != .no
        configuration.loudnessEngine = settings.loudness == .libebur128 ? .libebur128 : .vectorized
        var inputs = SegmentInputs(
            network: configuration.comments.inputPort.flatMap { ports.networkReception(port: $0) })
        for feature in features { feature.configure(&configuration, inputs: &inputs, for: spec) }
        if let resuming = recovery.resuming(spec) {
            configuration.comments.extra += [
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
            configuration.comments.extra.append(
                VorbisComment(CommentName.preRollSeconds, String(format: "%.3f", seconds)))
        } else {
            source = TapSource(tap: tap, anchor: anchor)
        }
        // The archiver reads the processed capture; everything else asks the tap's source.
        let processed = voice.flatMap {
            $0.source(capturing: source, tap: tap, sampleRate: configuration.sampleRate, continuing: anchor != nil)
        }
        if let voice, processed != nil {
            configuration.comments.extra.append(VorbisComment(CommentName.voiceProcessing, voice.processing.rawValue))
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
        stream.voice = processed
        recorders.append(stream)
        source.resolveStartTime(engine)
        if let old {
            stream.segments = old.segments
            stream.gaps = old.gaps
            old.successor = stream
            Log.info("\(spec.app): \(spec.stream) goes on from \(spec.port) (was \(old.spec.port); \(endReason))")
            announce(stream, .switched, reason: endReason.rawValue) { $0.previousPort = old.spec.port }
        } else if let resuming = recovery.resuming(spec) {
            announce(stream, .resumed, reason: resuming.cause.rawValue) { $0.since = resuming.since.iso8601 }
        } else {
            announce(stream, .started)
        }
        // It records: it waits no more. A declared app has one recorder: whatever kept it from
        // recording is over.
        let declaredApp = recovery.isDeclared(spec.app)
        recovery.remove { $0.spec.app == spec.app && ($0.spec.stream == spec.stream || declaredApp) }
        return stream
    }

    // MARK: Stopping

    /// `record.stop`: asks `app`'s recorders (one stream, or all) to stop and forgets their
    /// suspended specs. Returns each as it was (the reply's `recorders`) with the id its
    /// finish will carry in `RecorderNews.finished`.
    func stopRecording(app: String, stream: String?) throws -> [(id: ObjectIdentifier, json: JSONValue)] {
        let targets = of(app).filter { stream == nil || $0.spec.stream == stream }
        let waited = recovery.waiting(app: app, stream: stream)
        guard !targets.isEmpty || !waited.isEmpty else {
            throw SessionError(
                .badParam,
                "\(app) is not recording\(stream.map { " stream \($0)" } ?? ""); start with `recctl record start "
                    + "\(app)`"
            )
        }
        var stopped: [(id: ObjectIdentifier, json: JSONValue)] = []
        for recorder in targets {
            stopped.append((recorder.id, info(of: recorder).json))
            stop(recorder, reason: .stop)
        }
        recovery.stopRequested(app: app, stream: stream, stopped: targets.map(\.spec), waited: waited)
        return stopped
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
        streamEndedIfGone(stream.spec)
        announce(stream, .stopped, file: stream.currentFiles.first, reason: reason.rawValue) {
            $0.error = error?.sessionError
            $0.resumesWhen = recovery.resumesWhen(of: stream.spec)
        }
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

    // MARK: The policy's effects

    /// An interruption by `by` (an app, a muted port; nil for a lost output): `app`'s
    /// recorders stop and are kept to start again on resume. Their segments end with
    /// END_REASON=interruption and INTERRUPTED_BY naming who.
    func suspendAll(of app: String, by: String?) {
        let comments = by.map { [VorbisComment(CommentName.interruptedBy, $0)] } ?? []
        for stream in of(app) {
            recovery.wait(stream.spec, cause: .interruption, declared: recovery.isDeclared(app), by: by)
            stop(stream, reason: .interruption, comments: comments)
        }
    }

    /// The policy stopped `app`'s streams; after a media-services loss they start again on reset.
    /// The segment's end reason: mediaServicesLost, categoryChange (the session's new category
    /// has no input), or stop.
    func stopAll(of app: String, reason: StreamStopReason) {
        let endReason: EndReason
        switch reason {
        case .mediaServicesLost: endReason = .mediaServicesLost
        case .categoryChange: endReason = EndReason(rawValue: reason.rawValue)
        default: endReason = .stop
        }
        for stream in of(app) {
            if reason == .mediaServicesLost {
                recovery.wait(stream.spec, cause: .mediaServicesLost, declared: recovery.isDeclared(app))
            }
            stop(stream, reason: endReason)
        }
        guard reason != .mediaServicesLost else { return }
        recovery.stoppedByPolicy(app: app, reason: reason, specs: of(app).map(\.spec))
    }

    /// The JACK server went away: every recorder stops, to start again when it returns.
    func suspendAllForMediaServicesLoss() {
        for stream in recorders {
            recovery.wait(stream.spec, cause: .mediaServicesLost, declared: recovery.isDeclared(stream.spec.app))
            stop(stream, reason: .mediaServicesLost)
        }
    }

    /// Input mute or permission changed: `app`'s taps carry silence or samples from the next period.
    func setSilenced(of app: String, _ silenced: Bool) {
        for stream in of(app) { engine.setZeroed(stream.tap, silenced) }
    }

    /// No sample of an input reaches a file of an app that is not granted (SPEC §8).
    func permissionRevoked(of app: String) {
        for stream in of(app) {
            engine.setZeroed(stream.tap, true)
            stop(stream, reason: EndReason(rawValue: "permissionRevoked"))
            if recovery.isDeclared(app) {
                recovery.wait(
                    stream.spec, cause: .failed, declared: true,
                    detail: "record permission revoked; `recctl permission grant \(app)`, then "
                        + "`recctl record start \(app)`")
            }
        }
    }

    /// The server's sample rate changed under running recorders (PipeWire's JACK can change it
    /// live): each ends its segment with `reason` and is returned, to start again at the new rate.
    func endAllForNewRate(reason: EndReason) -> [RecorderSpec] {
        let running = recorders
        for stream in running { stop(stream, reason: reason) }
        return running.map(\.spec)
    }

    /// A route change: `app`'s input recorders whose port is gone stop (buses stay), to start
    /// again when it is back.
    func stopUnavailable(of app: String) {
        for stream in of(app) where stream.spec.bus == nil && !ports.isAvailable(port: stream.spec.port) {
            stopForLostInput(stream)
        }
    }

    /// The ports' availability changed: every recorder of an explicit input port that went away
    /// stops, whether or not its session's route changed. A session with two inputs records one
    /// by name while its route is on the other (last in wins): no route change comes when the
    /// named one goes (a netjack2 satellite lost), and without this the recorder would go on
    /// writing the silence of an unconnected port. Route-following recorders are left to the
    /// route change, which moves them to the new input.
    func stopExplicitUnavailable() {
        for stream in recorders
        where stream.spec.bus == nil && !stream.spec.followsRoute && !ports.isAvailable(port: stream.spec.port) {
            stopForLostInput(stream)
        }
    }

    /// A recorder whose input went away (its port, or the route's last input for one that
    /// follows the route) stops with END_REASON=routeChange and waits for an input to return.
    func stopForLostInput(_ stream: RecorderStream) {
        // A triggered take ends there; its trigger stays armed and watches the input.
        guard takes?.isArmed(stream.spec.app) != true else { return stop(stream, reason: .routeChange) }
        recovery.wait(stream.spec, cause: .inputGone, declared: recovery.isDeclared(stream.spec.app))
        Log.warning(
            "\(stream.spec.app)/\(stream.spec.stream): input \(stream.spec.port) went away; records again when "
                + (recovery.resumesWhen(recovery.entry(app: stream.spec.app, stream: stream.spec.stream)!) ?? "asked"))
        stop(stream, reason: .routeChange)
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

    /// From the tick: start times, events, partials to recover again.
    func service(now: Double) -> RecorderNews {
        for stream in recorders { stream.source.resolveStartTime(engine) }
        let news = handleEvents()
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
                let opened = OpenedSegment(stream.spec, path: path, number: segment)
                for feature in features { feature.segmentOpened(opened) }
            case .segmentFinished(let record):
                stream.currentFiles.removeAll { $0 == record.path }
                stream.segments += 1
                stream.successor?.segments += 1
                for feature in features { feature.segmentFinished(record) }
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
                stream.log(gap)
                // The segment being written holds the gap (its GAPS tag); the position counts
                // from the recording's start, across its segments, so the rate comes with it.
                announce(stream, .gap, file: stream.currentFiles.last, reason: gap.cause.rawValue) {
                    $0.position = gap.position
                    $0.length = gap.length
                    $0.sampleRate = stream.sampleRate
                }
            case .silence(let change):
                tell(.silence(change), of: stream.spec)
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
                    $0.resumesWhen = recovery.resumesWhen(of: stream.spec)
                }
                streamEndedIfGone(stream.spec)
            }
        }
        return news
    }

    /// A recorder that stopped by itself waits: for space after a full disk, or, declared, says
    /// why it stopped; a triggered take does not (its trigger stays armed for the next take).
    private func stoppedByItself(_ spec: RecorderSpec, reason: EndReason, message: String) {
        tell(.stoppedByItself(reason), of: spec)
        guard takes?.isArmed(spec.app) != true else { return }
        if reason == .diskFull {
            recovery.wait(spec, cause: .diskFull, declared: recovery.isDeclared(spec.app))
            _ = recovery.currentLowWater()
            if let entry = recovery.entry(app: spec.app, stream: spec.stream), let when = recovery.resumesWhen(entry) {
                Log.warning("\(spec.app)/\(spec.stream): waits for disk space; records again when \(when)")
            }
        } else if recovery.isDeclared(spec.app) {
            recovery.wait(spec, cause: .failed, declared: true, detail: message)
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

    /// A partial recovered again is a finished segment to the features (the index, its chain, the replica).
    private func retryRecoveries(now: Double) {
        unrecovered.retry(now: now, in: archiveDir, on: worker) { [weak self] result in
            guard let self, let record = self.unrecovered.settle(result) else { return }
            for feature in self.features { feature.segmentFinished(record) }
        }
    }

    /// `stream` as `status` and the `record.stop` reply show it, with the features' parts.
    func info(of stream: RecorderStream) -> RecorderInfo {
        var info = stream.info
        for feature in features { feature.describe(&info) }
        return info
    }

    /// Hands a change of `spec`'s stream to the features.
    private func tell(_ change: StreamChange, of spec: RecorderSpec) {
        for feature in features { feature.streamChanged(change, app: spec.app, stream: spec.stream) }
    }

    /// A recorder of `spec`'s stream ended: unless another records it or it waits to start
    /// again, the stream has ended (its silence alarm goes).
    private func streamEndedIfGone(_ spec: RecorderSpec) {
        let same = { (other: RecorderSpec) in other.app == spec.app && other.stream == spec.stream }
        guard !recorders.contains(where: { same($0.spec) }), !recovery.waiting.contains(where: { same($0.spec) }) else {
            return
        }
        tell(.ended, of: spec)
    }
}

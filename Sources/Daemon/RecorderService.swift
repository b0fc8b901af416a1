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

/// A capture tap as the archive's sample source.
///
/// Threads: `read` and `drainGaps` run on the archiver thread; `resolveStartTime` on the
/// control thread, which alone can ask JACK what UTC time the first frame was.
final class TapSource: SampleSource, @unchecked Sendable {
    let tap: CaptureTap
    private let start = Mutex<UTCTime?>(nil)
    /// The recording this one continues: its first frame's time and its tap. The two taps
    /// swapped in one graph snapshot, so this source's first frame is the one after the old
    /// tap's last: the start time is the old start plus every frame the old tap saw (captured
    /// or dropped), continuous to the frame — counted, not read from JACK's frame clock, which
    /// PipeWire restarts when the graph changes driver.
    private let anchor: (time: UTCTime, previous: CaptureTap, sampleRate: Int)?
    /// Wall-clock nanoseconds when the tap was made (just before this source): its first frame
    /// cannot be much older.
    private let created = SystemClock.realtimeNanoseconds()

    /// A pre-roll tap taken over (`PreRollKeeper.take`): the stream position of its first
    /// readable frame, frames dropped in overruns before it (JACK's frame clock counted them),
    /// nanoseconds of clock stalls before it (JACK's frame clock stood still), and the pre-roll
    /// in seconds.
    private let preRoll: (position: Int, droppedBefore: Int, stalledNanoseconds: Int64, seconds: Double)?
    /// Overrun gaps of a pre-roll tap after its first readable frame, not yet handed on.
    private let pendingGaps = Mutex<[SourceGap]>([])

    init(tap: CaptureTap, anchor: (time: UTCTime, previous: CaptureTap, sampleRate: Int)? = nil) {
        self.tap = tap
        self.anchor = anchor
        preRoll = nil
    }

    /// Control thread: a source over a pre-roll tap whose first readable frame is at stream
    /// position `position`; its recording's positions count from there. `drained`: the tap's
    /// gaps its keeper already drained (`PreRollKeeper.Held.gaps`).
    init(preRolled tap: CaptureTap, position: Int, sampleRate: Int, drained: [CaptureGap] = []) {
        self.tap = tap
        anchor = nil
        var droppedBefore = 0
        var stalledBefore = 0
        var later: [SourceGap] = []
        for gap in drained + tap.drainGaps() {
            if gap.position <= position {
                if gap.cause == .clockStall { stalledBefore += gap.length } else { droppedBefore += gap.length }
            } else {
                later.append(
                    SourceGap(
                        position: gap.position - position, length: gap.length,
                        cause: gap.cause == .clockStall ? .clockStall : .overrun))
            }
        }
        preRoll = (
            position, droppedBefore, Int64(stalledBefore) * 1_000_000_000 / Int64(max(sampleRate, 1)),
            Double(tap.availableToRead) / Double(sampleRate)
        )
        pendingGaps.withLock { $0 = later }
    }

    /// A triggered take's end: frames past it are not read (the control thread moves it on
    /// while the level stays up, and it is final when the take stops). Frames read so far.
    private let limit = Atomic<Int>(Int.max)
    private let delivered = Atomic<Int>(0)

    /// Control thread: the recording ends at `frames` frames (or later, if moved on).
    func limit(toFrames frames: Int) { limit.store(frames, ordering: .releasing) }

    /// Seconds of pre-roll the recording starts with; nil for a recording without one.
    var preRollSeconds: Double? { preRoll?.seconds }

    /// When this source's first frame was, for a source that continues it (nil until known).
    var anchorForSuccessor: UTCTime? { startTime }

    var channels: Int { tap.channels }
    var startTime: UTCTime? { start.withLock { $0 } }

    /// Control thread: fixes the start time once the tap has its first frame.
    func resolveStartTime(_ engine: any RecorderEngine) {
        guard startTime == nil, var frameTime = tap.firstFrameTime else { return }
        var earliest = created - Self.cycleMargin
        if let preRoll {
            // JACK's frame counter wraps at 2^32 frames; the difference stays right.
            frameTime &+= UInt32(truncatingIfNeeded: preRoll.position + preRoll.droppedBefore)
            earliest -= Int64(preRoll.seconds * 1e9)
        }
        // The first frame was captured after the tap was made (less a period: a cycle already
        // under way) and before now. PipeWire's frame time is its driver's and jumps when the
        // graph changes driver (a device plugged or unplugged), which can place it outside.
        let now = SystemClock.realtimeNanoseconds()
        let window = earliest...(now + Self.cycleMargin)
        if let anchor {
            // The old tap is out of the graph since before this one's first frame: its counts
            // are final.
            let frames =
                anchor.previous.framesCaptured + anchor.previous.droppedFrames + anchor.previous.stalledFrames
            let continued = anchor.time.advanced(byFrames: frames, sampleRate: anchor.sampleRate)
            if window.contains(continued.nanosecondsSinceEpoch) {
                start.withLock { $0 = continued }
                return
            }
            Log.warning(
                "the previous segment's start and length put this one outside the time its tap has existed; its "
                    + "start time is placed afresh, not counted from the previous one")
        }
        guard var placed = engine.utcNanoseconds(forFrameTime: frameTime) else { return }
        if placed.fromJackClock && !window.contains(placed.nanoseconds) {
            Log.warning(
                "JACK's clock placed the first frame \(Double(now - placed.nanoseconds) / 1e9) s before now, outside "
                    + "the time its tap has existed (a frame counter that jumped: PipeWire's changes with the graph's "
                    + "driver); the recording's start time is the wall clock now")
            placed = AudioEngine.FrameWallTime(nanoseconds: now, fromJackClock: false)
        } else if !placed.fromJackClock {
            Log.warning("JACK's clock gave no plausible time for the first frame; the recording's start time is the wall clock now (may be off by the buffered audio)")
        }
        // Placed by JACK's frame clock, which stood still through the stalls before it.
        let stalled = preRoll?.stalledNanoseconds ?? 0
        start.withLock { $0 = UTCTime(nanosecondsSinceEpoch: placed.nanoseconds - stalled) }
    }

    /// Room for a period already under way and for the estimate of JACK's frame clock.
    static let cycleMargin: Int64 = 500_000_000

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        // Nothing until the first frame's UTC time is known: names and rotation depend on it.
        guard startTime != nil else { return 0 }
        let room = limit.load(ordering: .acquiring) - delivered.load(ordering: .relaxed)
        guard room > 0 else { return 0 }
        let count = min(buffer.count / channels, room) * channels
        let got = tap.read(into: UnsafeMutableBufferPointer(rebasing: buffer[0..<count]))
        delivered.add(got, ordering: .relaxed)
        return got
    }

    func drainGaps() -> [SourceGap] {
        let offset = preRoll?.position ?? 0
        let earlier = pendingGaps.withLock { gaps in
            defer { gaps.removeAll() }
            return gaps
        }
        return earlier
            + tap.drainGaps().map {
                SourceGap(
                    position: $0.position - offset, length: $0.length,
                    cause: $0.cause == .clockStall ? .clockStall : .overrun)
            }
    }

    /// The system's wall clock less its monotonic one: the recorder follows a step of it.
    func wallClockOffset() -> Int64? { SystemClock.wallClockOffsetNanoseconds() }

    /// The tap's clock stamp (its timeline counts from the tap's making: the drift fit only
    /// needs differences).
    func clockStamp() -> ClockStamp? {
        tap.clockStamp.map { ClockStamp(frames: $0.frames, micros: $0.micros) }
    }
}

/// What a recorder was asked to record: enough to start it again (auto_resume).
struct RecorderSpec: Equatable {
    var app: String
    var stream: String
    /// An input port's name, or `bus:main` / `bus:cue`.
    var port: String
    /// Started without an explicit input: it records the session's route input and goes on
    /// from the new one when that changes (issue 13).
    var followsRoute = false

    /// The monitoring bus it records, if it records one.
    var bus: Bus? { port.hasPrefix("bus:") ? Bus(rawValue: String(port.dropFirst(4))) : nil }
}

/// What the router knows of the session a recorder belongs to (the file's metadata, and
/// whether its captures carry silence).
struct RecordingContext {
    var category: String
    var mode: String
    /// Muted or not granted: the tap writes zeros (SPEC §8).
    var silenced: Bool
}

/// One running recorder of a session.
final class RecorderStream {
    let spec: RecorderSpec
    let tap: CaptureTap
    let source: TapSource
    let recorder: Recorder
    let bandwidth: CaptureBandwidth
    let sampleRate: Int
    let startedAt: Date
    var currentFiles: [String] = []
    var segments = 0
    var gaps = 0
    var stopping = false
    /// Stopped because another recorder goes on with its stream from a new input (its
    /// `stopped` is not announced: the stream did not stop).
    var continued = false
    /// SEGMENT of the latest segment started (a stream that goes on numbers on from it).
    var lastSegmentNumber: Int?
    /// The recorder that went on with this one's stream (its counts include this one's).
    weak var successor: RecorderStream?
    /// The service's silence alarms, for `info` (nil in streams made without a service).
    weak var silenceAlarms: SilenceAlarms?

    init(
        spec: RecorderSpec, tap: CaptureTap, source: TapSource, recorder: Recorder, bandwidth: CaptureBandwidth,
        sampleRate: Int, startedAt: Date = Date()
    ) {
        self.startedAt = startedAt
        self.spec = spec
        self.tap = tap
        self.source = source
        self.recorder = recorder
        self.bandwidth = bandwidth
        self.sampleRate = sampleRate
    }

    var id: ObjectIdentifier { ObjectIdentifier(self) }

    var info: RecorderInfo {
        RecorderInfo(
            app: spec.app, stream: spec.stream, port: spec.port, bandwidth: bandwidth.name, sampleRate: sampleRate,
            files: currentFiles, seconds: Date().timeIntervalSince(startedAt).rounded(), segments: segments,
            gaps: gaps, overruns: tap.overruns, droppedFrames: tap.droppedFrames, zeroed: tap.isZeroed,
            silentSince: silenceAlarms?.alarm(app: spec.app, stream: spec.stream)?.since.iso8601)
    }

    var json: JSONValue { info.json }
}

/// What recorders did since the router last asked (`handleEvents`).
struct RecorderNews: Equatable {
    /// Recorders that were asked to stop and have finished their files.
    var finished: [ObjectIdentifier] = []
    /// Apps one of whose recorders stopped by itself (disk full, a write error).
    var stoppedByThemselves: Set<String> = []
}

/// The recorders of every session and the archive they write: taps, archivers, segment
/// events, suspended recorders, the declared ones, and the archive's index and jobs.
///
/// Confined to the control thread (hence `@unchecked Sendable`: worker completions that
/// capture it run there too).
final class RecorderService: @unchecked Sendable {
    let settings: ArchiveSection
    private let engine: any RecorderEngine
    private let sink: any EventSink
    /// The daemon's worker for slow requests: verify, reindex and retention.
    let worker: SlowRequestWorker
    /// The archive as worker jobs see it (used on the worker thread only).
    let maintenance: ArchiveMaintenance
    /// Called on an archiver thread when its recorder has events; must bring `handleEvents`
    /// to the control thread.
    private let wake: @Sendable () -> Void
    /// `[session] record = ...` of the config: sessions that record whenever they can.
    private let declared: [(app: String, record: RecordAtStart)]
    /// The silence keys of `[session APP]` sections (the rest come from `settings.silence`).
    private let sessionSilence: [String: SilenceOverride]
    /// Silent streams, `silence` events and the `on_silence` programs.
    let silenceAlarms: SilenceAlarms

    private(set) var recorders: [RecorderStream] = []
    /// Recorders asked to stop whose archiver still finishes its files; they leave with their
    /// `.stopped` event.
    private(set) var stopping: [RecorderStream] = []
    /// Recorders that are not running and why: those an interruption or a media-services loss
    /// stopped (to start again on resume), those a fault stopped (they start again by
    /// themselves when it goes: `resumeWaiting`), and declared ones that do not record.
    private(set) var recovery: RecorderRecovery
    /// The entry being started again by `resumeWaiting`: its start is announced `resumed`.
    private var resuming: WaitingRecorder?
    /// The control thread's connection to the index (the worker has its own).
    var index: ArchiveIndex?
    var lastRetention = 0.0
    /// A retention run is queued or running on the worker.
    var retentionRunning = false
    /// `archive.reindex` requests on the worker, and the segments finished meanwhile, which
    /// the rebuild may have missed (added again when the last one is done).
    var reindexesRunning = 0
    var finishedDuringReindex: [SegmentRecord] = []
    /// Sessions' pre-roll taps (the router says which to keep; `startInput` takes them over).
    let preRolls: PreRollKeeper
    /// Armed recorders of level-triggered takes (the router runs them).
    let triggers = TakeTriggers()
    /// `[replicate] remote`: retention spares segments not yet copied there.
    var replicationRemote: String?
    /// Told of every finished segment once it is in the index (replication's queue).
    var onSegmentFinished: ((SegmentRecord) -> Void)?

    init(
        settings: ArchiveSection, declared: [(app: String, record: RecordAtStart)], engine: any RecorderEngine,
        sink: any EventSink, worker: SlowRequestWorker, wake: @escaping @Sendable () -> Void,
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

    /// Whether `app` records anything (for the policy's isBusy), or the stream `stream`.
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
        for result in PartialRecovery.recoverAll(in: archiveDir) {
            Log.notice("recovery of \(result.partialPath): \(result.outcome)")
            if case .recovered(let record) = result.outcome {
                try? index?.add(record)
            }
        }
    }

    // MARK: Starting

    /// Starts recording an input port, whose policy checks (capture, availability,
    /// eligibility) the router has made. It records the port's first `channels` channels
    /// (the session's preferred input channels, at most the port's); `type` is the port's.
    ///
    /// With `replacing`, the stream goes on from this input (its input route changed): the
    /// old recorder's tap and the new one swap in one graph snapshot, so the old segment's
    /// last frame and the new one's first are adjacent; the old segment ends with
    /// END_REASON=routeChange and the new one starts at its end time, to the frame.
    @discardableResult
    func startInput(
        _ spec: RecorderSpec, channels: Int, type: PortType, bandwidth: CaptureBandwidth, context: RecordingContext,
        replacing old: RecorderStream? = nil
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
        do {
            if let preRolled {
                tap = preRolled.tap
                if context.silenced { engine.setZeroed(tap, true) }
            } else if let old {
                tap = try engine.replaceCaptureTap(
                    old.tap, inputGroup: group, channels: channels, zeroed: context.silenced)
            } else {
                tap = try engine.addCaptureTap(inputGroup: group, channels: channels, zeroed: context.silenced)
            }
        } catch {
            throw SessionError(.resourceNotAvailable, "the engine refused a capture of \(spec.port): \(error)")
        }
        // From here the old tap is out of the graph: whatever happens, the old recorder ends
        // (the stream goes on only if the new one started).
        var wentOn = false
        defer { if let old { stop(old, reason: .routeChange, continued: wentOn) } }
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
            continuing: old, preRolled: preRolled)
        wentOn = true
        Log.info("\(spec.app): recording \(spec.port) as \(spec.stream) (\(bandwidth.name), \(rate) Hz, \(bits)-bit)")
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
        preRolled: PreRollKeeper.Taken? = nil
    ) throws -> RecorderStream {
        var configuration = configuration
        configuration.measuresLoudness = settings.loudness
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
        let recorder: Recorder
        do {
            recorder = try Recorder(configuration: configuration, source: source, transform: transform, wake: wake)
            try recorder.start()
        } catch {
            engine.removeCaptureTap(tap)
            throw error.sessionError
        }
        let stream = RecorderStream(
            spec: spec, tap: tap, source: source, recorder: recorder, bandwidth: bandwidth, sampleRate: rate,
            startedAt: old?.startedAt ?? Date())
        stream.silenceAlarms = silenceAlarms
        recorders.append(stream)
        source.resolveStartTime(engine)
        if let old {
            stream.segments = old.segments
            stream.gaps = old.gaps
            old.successor = stream
            Log.info("\(spec.app): \(spec.stream) goes on from \(spec.port) (was \(old.spec.port))")
            announce(stream, .switched, reason: EndReason.routeChange.rawValue) { $0.previousPort = old.spec.port }
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
    func stop(_ stream: RecorderStream, reason: EndReason, continued: Bool = false) {
        guard !stream.stopping else { return }
        stream.stopping = true
        stream.continued = continued
        stream.recorder.requestStop(reason: reason)
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
            news.stoppedByThemselves.formUnion(more.stoppedByThemselves)
        }
        return news
    }

    /// From the tick: start times, events, retention every 60 s.
    func service(now: Double) -> RecorderNews {
        for stream in recorders { stream.source.resolveStartTime(engine) }
        let news = handleEvents()
        if now - lastRetention >= 60 {
            lastRetention = now
            enforceRetention()
        }
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
                onSegmentFinished?(record)
                announce(stream, .finished, file: record.path, reason: record.endReason?.rawValue) {
                    $0.frames = record.frames
                    $0.gaps = record.gaps.count
                }
            case .segmentAbandoned(let partial, let error):
                Log.error("\(stream.spec.app): segment \(partial) left for recovery: \(error)")
                announce(stream, .abandoned, file: partial, reason: "\(error)")
            case .gap(let gap):
                stream.gaps += 1
                stream.successor?.gaps += 1
                logGap(gap, of: stream)
                announce(stream, .gap, reason: gap.cause.rawValue) {
                    $0.position = gap.position
                    $0.length = gap.length
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
                news.stoppedByThemselves.insert(stream.spec.app)
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
            Log.warning("\(name): ring overrun, \(gap.length) frames missing at frame \(gap.position)")
        case .clockStall:
            Log.warning(
                "\(name): JACK delivered no audio for \(Double(gap.length) / Double(max(stream.sampleRate, 1))) s of "
                    + "wall-clock time (a stalled or stopped server, or a driver that lost sync); recorded as a gap of "
                    + "\(gap.length) frames at frame \(gap.position), so later samples keep their true time")
        }
    }

    /// Sends a `recording` event of `stream`; `details` fills in the fields its step carries.
    private func announce(
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

    // MARK: Policy effects

    /// An interruption: `app`'s recorders stop and are kept to start again on resume.
    func suspendAll(of app: String) {
        for stream in of(app) {
            recovery.wait(stream.spec, cause: .interruption, declared: isDeclared(app))
            stop(stream, reason: .interruption)
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
                recovery.wait(stream.spec, cause: .mediaServicesLost, declared: isDeclared(app))
            }
            stop(stream, reason: endReason)
        }
        guard reason != .mediaServicesLost else { return }
        let specs = of(app).map(\.spec) + recovery.waiting.filter { $0.spec.app == app }.map(\.spec)
        recovery.remove { $0.spec.app == app }
        // A declared recorder the policy stopped says why until it records again.
        if isDeclared(app), reason != .deleted {
            for spec in specs {
                recovery.wait(
                    spec, cause: .failed, declared: true,
                    detail: reason == .categoryChange
                        ? "the session's category cannot record" : "stopped with the session (\(reason.rawValue))")
            }
        }
    }

    /// The JACK server went away: every recorder stops, to start again when it returns.
    func suspendAllForMediaServicesLoss() {
        preRolls.releaseAll(except: [])
        for stream in recorders {
            recovery.wait(stream.spec, cause: .mediaServicesLost, declared: isDeclared(stream.spec.app))
            stop(stream, reason: .mediaServicesLost)
        }
    }

    /// The specs of `app` an interruption or a media-services loss stopped, to start again
    /// (resumeStreams); they are no longer kept.
    func takeSuspended(of app: String) -> [RecorderSpec] {
        let suspended = { (entry: WaitingRecorder) in
            entry.spec.app == app && (entry.cause == .interruption || entry.cause == .mediaServicesLost)
        }
        defer { recovery.remove(where: suspended) }
        return recovery.waiting.filter(suspended).map(\.spec)
    }

    /// Whether something of `app` waits to start again (or was stopped by request): the
    /// declared recorders then are not started afresh.
    func hasSuspended(_ app: String) -> Bool { recovery.waiting.contains { $0.spec.app == app && $0.cause != .failed } }

    /// Input mute or permission changed: `app`'s taps carry silence or samples from the next period.
    func setSilenced(of app: String, _ silenced: Bool) {
        for stream in of(app) { engine.setZeroed(stream.tap, silenced) }
    }

    /// No sample of an input reaches a file of an app that is not granted (SPEC §8).
    func permissionRevoked(of app: String) {
        for stream in of(app) {
            engine.setZeroed(stream.tap, true)
            stop(stream, reason: EndReason(rawValue: "permissionRevoked"))
            if isDeclared(app) {
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
        for stream in of(app) where stream.spec.bus == nil && !engine.isAvailable(port: stream.spec.port) {
            stopForLostInput(stream)
        }
    }

    /// A recorder whose input went away (its port, or the route's last input for one that
    /// follows the route) stops with END_REASON=routeChange and waits for an input to return.
    func stopForLostInput(_ stream: RecorderStream) {
        // A triggered take ends there; its trigger stays armed and watches the input.
        guard triggers.armed[stream.spec.app] == nil else { return stop(stream, reason: .routeChange) }
        recovery.wait(stream.spec, cause: .inputGone, declared: isDeclared(stream.spec.app))
        Log.warning(
            "\(stream.spec.app)/\(stream.spec.stream): input \(stream.spec.port) went away; records again when "
                + (recovery.resumesWhen(recovery.entry(app: stream.spec.app, stream: stream.spec.stream)!) ?? "asked"))
        stop(stream, reason: .routeChange)
    }

    /// What `resumeWaiting`'s caller did with an entry whose cause is gone.
    enum ResumeOutcome {
        /// Started (`startInput`/`startBus` announced it `resumed`).
        case started
        /// Not now (its session is interrupted): asked again at a later tick.
        case notYet
        /// It will not start by itself (its session went inactive, or has no auto_resume after a
        /// reset): forgotten, with why.
        case dropped(String)
        /// It will not start by itself, but it is declared: it stays listed as `failed`, with why.
        case held(String)
    }

    /// From the tick: every waiting recorder whose cause is gone (free space above the
    /// low-water mark, the JACK server back, its input back) is handed to `start` (the
    /// router's policy checks, then `startInput`/`startBus`). One that fails waits on: for
    /// what the error says is missing, tried again after `retryDelay`.
    func resumeWaiting(
        now: Double, servicesAvailable: Bool, inputAvailable: (RecorderSpec) -> Bool,
        start: (WaitingRecorder) throws -> ResumeOutcome
    ) {
        for entry in recovery.ready(now: now, servicesAvailable: servicesAvailable, inputAvailable: inputAvailable) {
            let name = "\(entry.spec.app)/\(entry.spec.stream)"
            resuming = entry
            defer { resuming = nil }
            do {
                switch try start(entry) {
                case .started:
                    let waited = Double(UTCTime.now().nanosecondsSinceEpoch - entry.since.nanosecondsSinceEpoch) / 1e9
                    Log.notice(
                        "\(name): records again (stopped by \(entry.cause.rawValue) at \(entry.since.iso8601), "
                            + "\(Int(waited.rounded())) s ago)")
                case .notYet:
                    break
                case .dropped(let why):
                    recovery.remove { $0 == entry }
                    Log.notice("\(name): not started again after \(entry.cause.rawValue): \(why)")
                case .held(let why):
                    recovery.wait(entry.spec, cause: .failed, declared: true, detail: why)
                    Log.notice("\(name): not started again after \(entry.cause.rawValue): \(why)")
                }
            } catch {
                let failure = Self.sessionError(error)
                let cause = Self.cause(of: failure) ?? entry.cause
                if entry.detail != failure.message {
                    Log.warning("\(name): could not record again (\(failure.message)); waits for \(cause.rawValue)")
                }
                recovery.wait(entry.spec, cause: cause, declared: entry.declared, detail: failure.message)
                // A new cause has its own condition (the input back); the same one is tried later.
                if cause == entry.cause {
                    recovery.delay(app: entry.spec.app, stream: entry.spec.stream, until: now + Self.retryDelay)
                }
            }
        }
    }

    /// A recorder whose cause went but which could not start is tried again this much later
    /// (seconds): it is logged once, not every tick.
    static let retryDelay = 5.0

    /// A declared recorder that could not start (`startDeclaredRecorders`): status says why;
    /// the next start of the engine tries again. One waiting for its input or the server waits
    /// for that instead.
    func declaredNotStarted(app: String, port: String?, error: any Error) {
        let failure = Self.sessionError(error)
        let name = port ?? "route"
        let spec = RecorderSpec(app: app, stream: name, port: name, followsRoute: port == nil)
        let cause = Self.cause(of: failure) ?? .failed
        if recovery.entry(app: app, stream: name)?.detail != failure.message {
            Log.warning("\(app): declared recording not started: \(failure.message)")
        }
        recovery.wait(spec, cause: cause, declared: true, detail: failure.message)
    }

    /// A recorder that was to go on (resumeStreams, a new sample rate) could not start: one
    /// whose input or server is missing waits for it; a declared one says why; another is
    /// dropped (logged by the caller).
    func couldNotResume(_ spec: RecorderSpec, error: any Error) {
        let failure = Self.sessionError(error)
        let declared = isDeclared(spec.app)
        guard let cause = Self.cause(of: failure) ?? (declared ? .failed : nil) else { return }
        recovery.wait(spec, cause: cause, declared: declared, detail: failure.message)
    }

    private static func sessionError(_ error: any Error) -> SessionError {
        (error as? SessionError) ?? SessionError(.unspecified, "\(error)")
    }

    /// What a failed start says is missing: the server, or the input; nil for anything else.
    private static func cause(of failure: SessionError) -> StopCause? {
        switch failure.code {
        case .mediaServicesFailed: return .mediaServicesLost
        case .resourceNotAvailable: return .inputGone
        default: return nil
        }
    }

    /// `status`'s `waiting`.
    var waitingInfos: [WaitingRecorderInfo] { recovery.infos() }

    /// Declared recorders that should start now: their app records nothing and has nothing
    /// suspended. `port` is the declared port, or nil for the session's input route.
    func declaredToStart() -> [(app: String, port: String?)] {
        declared.compactMap { decl in
            guard decl.record != .no, !isRecording(decl.app), !hasSuspended(decl.app) else { return nil }
            if case .port(let name) = decl.record { return (decl.app, name) }
            return (decl.app, nil)
        }
    }

    // MARK: Archive queries

    /// The most segments one `archive.list` reply holds; a client pages on with `next`.
    static let maxListedSegments = 1000

    /// `archive.list`: a page of at most `limit` segments from the `offset`th, and `next`, the
    /// offset of the page after it (null on the last): however large the archive, the reply
    /// stays well inside a client's 4 MiB and the query short on the control thread.
    func archiveList(app: String?, since text: String?, offset: Int = 0, limit: Int? = nil) throws -> [(
        String, JSONValue
    )] {
        let limit = try RequestGate.checkedPageLimit(
            .archiveList, offset: offset, limit: limit, max: Self.maxListedSegments)
        guard let index else {
            throw SessionError(.unspecified, "the archive index is not open; run `recctl archive reindex`")
        }
        var since: UTCTime?
        if let text {
            guard let time = UTCTime(iso8601: text) ?? UTCTime(iso8601: text + "T00:00:00Z") else {
                throw SessionError(
                    .badParam, "--since \(text) is not a time; use ISO 8601 like 2026-11-29T23:00:00Z or 2026-11-29")
            }
            since = time
        }
        // One more than the page: whether a next page exists, without counting them all.
        let records = try index.list(app: app, since: since, offset: offset, limit: limit + 1)
        let next: JSONValue = records.count > limit ? .number(Double(offset + limit)) : .null
        return [("segments", .array(records.prefix(limit).map { Self.segmentInfo($0).json })), ("next", next)]
    }

    static func segmentInfo(_ record: SegmentRecord) -> SegmentInfo {
        SegmentInfo(
            path: record.path, app: record.app, stream: record.stream, group: record.group,
            segment: record.segment, start: record.startTime.iso8601, seconds: record.duration,
            frames: record.frames, sampleRate: record.sampleRate, channels: record.channels,
            bits: record.bitsPerSample, endReason: record.endReason?.rawValue, gaps: record.gaps.count,
            recovered: record.recovered, bytes: Int(record.bytes), loudnessLufs: record.loudness.integratedLUFS,
            loudnessRangeLu: record.loudness.rangeLU, truePeakDbtp: record.loudness.truePeakDBTP,
            clockDriftPpm: record.clockDriftPPM)
    }

    /// Disk space of the archive, for `recctl status`.
    func archiveStatus() -> StatusInfo.Archive {
        guard let bytes = FileSystem.space(at: archiveDir) else {
            return StatusInfo.Archive(dir: archiveDir, space: nil)
        }
        let free = Double(bytes.availableBytes)
        let total = Double(bytes.totalBytes)
        let space = StatusInfo.Archive.Space(
            freeBytes: free.rounded(), freePercent: total > 0 ? (free / total * 1000).rounded() / 10 : 0,
            segments: (try? index?.count()) ?? nil)
        return StatusInfo.Archive(dir: archiveDir, space: space)
    }
}

// The recorder's parts below the service: the tap as the archive's sample source
// (`TapSource`), what a recorder is asked to record (`RecorderSpec`, `RecordingContext`), and
// one running recorder (`RecorderStream`). RecorderService.swift runs them.
//
// Threads: the control thread, except where a type says otherwise.
import Archive
import AudioEngine
import Codec
import ControlProtocol
import Foundation
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

/// A capture tap as the archive's sample source: its planar ring lent in place (`peek`).
///
/// Threads: `peek`, `release`, `read` and `drainGaps` run on the archiver thread; `resolveStartTime` on the
/// control thread, which alone can ask JACK what UTC time the first frame was.
final class TapSource: PlanarSampleSource, @unchecked Sendable {
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
    /// Gaps of the tap not yet handed on (a pre-roll tap's after its first readable frame
    /// among them), and stall gaps held until the tap's `catchUp` verdict on them.
    private let gapHold = Mutex(StallGapHold())

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
        var later = StallGapHold()
        for gap in drained + tap.drainGaps() {
            if gap.position <= position {
                switch gap.cause {
                case .clockStall: stalledBefore += gap.length
                case .catchUp: stalledBefore = max(0, stalledBefore - gap.length)
                case .overrun: droppedBefore += gap.length
                }
            } else {
                later.take(gap, offset: position)
            }
        }
        preRoll = (
            position, droppedBefore, Int64(stalledBefore) * 1_000_000_000 / Int64(max(sampleRate, 1)),
            Double(tap.availableToRead) / Double(sampleRate)
        )
        gapHold.withLock { $0 = later }
    }

    /// A triggered take's end: frames past it are not read (the control thread moves it on
    /// while the level stays up, and it is final when the take stops). Frames read so far.
    private let limit = Atomic<Int>(Int.max)
    private let delivered = Atomic<Int>(0)

    /// Control thread: the recording ends at `frames` frames (or later, if moved on).
    func limit(toFrames frames: Int) { limit.store(frames, ordering: .releasing) }

    /// Archiver thread: nothing more will come: the tap has retired and every frame it holds
    /// up to the recording's end (a take's `limit`) is read.
    var exhausted: Bool {
        let read = delivered.load(ordering: .relaxed)
        return tap.isRetired && min(limit.load(ordering: .acquiring), read + tap.availableToRead) <= read
    }

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
                "JACK's clock placed the first frame \(Readable.duration(Double(now - placed.nanoseconds) / 1e9)) "
                    + "before now, outside "
                    + "the time its tap has existed (a frame counter that jumped: PipeWire's changes with the graph's "
                    + "driver); the recording's start time is the wall clock now")
            placed = AudioEngine.FrameWallTime(nanoseconds: now, fromJackClock: false)
        } else if !placed.fromJackClock {
            Log.warning(
                "JACK's clock gave no plausible time for the first frame; the recording's start time is the wall clock now (may be off by the buffered audio)"
            )
        }
        // Placed by JACK's frame clock, which stood still through the stalls before it.
        let stalled = preRoll?.stalledNanoseconds ?? 0
        start.withLock { $0 = UTCTime(nanosecondsSinceEpoch: placed.nanoseconds - stalled) }
    }

    /// Room for a period already under way and for the estimate of JACK's frame clock.
    static let cycleMargin: Int64 = 500_000_000

    /// Frames the recording may still take: none until the first frame's UTC time is known
    /// (names and rotation depend on it), none past a take's end.
    private var room: Int {
        guard startTime != nil else { return 0 }
        // The frames readable now, before the gaps are pulled: a gap is logged before the frames
        // after it, so every gap among these frames is in the log by then.
        let delivered = delivered.load(ordering: .relaxed)
        var room = min(limit.load(ordering: .acquiring), delivered + tap.availableToRead) - delivered
        // Not past a stall gap whose length is not yet known (the server may still be catching up).
        if let held = pullGaps() { room = min(room, held - delivered) }
        return max(0, room)
    }

    func peek(maxFrames: Int, channelStarts: UnsafeMutablePointer<UnsafePointer<Float>>) -> Int {
        tap.peek(maxFrames: min(maxFrames, room), channelStarts: channelStarts)
    }

    func release(frames: Int) {
        let released = tap.discard(frames: frames)
        delivered.add(released, ordering: .relaxed)
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        let count = min(buffer.count / channels, room) * channels
        let got = tap.read(into: UnsafeMutableBufferPointer(rebasing: buffer[0..<count]))
        delivered.add(got, ordering: .relaxed)
        return got
    }

    /// The tap is out of the graph and past its last cycle.
    var producerRetired: Bool { tap.isRetired }

    func drainGaps() -> [SourceGap] {
        pullGaps()
        return gapHold.withLock { $0.handOn() }
    }

    /// Archiver thread: moves the tap's new gaps into the hold; the position of the first stall
    /// gap still held, if any. Once the tap is out of the graph no verdict can come: what is
    /// held goes on as it is.
    @discardableResult
    private func pullGaps() -> Int? {
        let offset = preRoll?.position ?? 0
        let gaps = tap.drainGaps()
        let attached = tap.isAttached
        return gapHold.withLock { hold in
            for gap in gaps { hold.take(gap, offset: offset) }
            if !attached { hold.releaseAll() }
            return hold.firstHeldPosition(now: SystemClock.monotonicSeconds())
        }
    }

    /// A stop while the feed was stalled: when (JACK's microsecond clock, CLOCK_MONOTONIC), and
    /// the rate of the tap's frames. Set once by the control thread before it asks the
    /// recorder to stop; read by the archiver thread when it finishes.
    private let stalledStop = Mutex<(micros: Int, sampleRate: Int)?>(nil)

    /// Control thread, at a stop while stalled (`RecorderService.stop`).
    func stopsStalled(atMicros micros: Int, sampleRate: Int) {
        stalledStop.withLock { $0 = (micros, sampleRate) }
    }

    /// Archiver thread, after the last read: the time from the end of the tap's last period to
    /// the stop, in frames (nil unless stopped while stalled). The tap is out of the graph by
    /// then, so its counts are final; a period that came after all (the server went on just
    /// before the tap left) ends after the stop and leaves nothing to add.
    func trailingStallFrames() -> Int? {
        guard let stop = stalledStop.withLock({ $0 }), stop.sampleRate > 0, let stamp = tap.clockStamp else {
            return nil
        }
        let timeline = tap.framesCaptured + tap.droppedFrames + tap.stalledFrames
        let lastEnd = stamp.micros + (timeline - stamp.frames) * 1_000_000 / stop.sampleRate
        let missing = stop.micros - lastEnd
        guard missing > 0 else { return nil }
        return missing * stop.sampleRate / 1_000_000
    }

    /// The system's wall clock less its monotonic one: the recorder follows a step of it.
    func wallClockOffset() -> Int64? { SystemClock.wallClockOffsetNanoseconds() }

    /// The tap's clock stamp (its timeline counts from the tap's making: the drift fit only
    /// needs differences).
    func clockStamp() -> ClockStamp? {
        tap.clockStamp.map { ClockStamp(frames: $0.frames, micros: $0.micros) }
    }
}

/// A tap's gaps on their way to the recorder. A `clockStall` gap is held until the tap's
/// `catchUp` verdict on it (the cycles came at their pace again, normally the next period),
/// and goes on shortened by the frames the server delivered early to make up for it, or not
/// at all when they made up all of it (docs/protocol.md, "Time stays true"). A plain value:
/// the archiver thread, under `TapSource`'s lock.
struct StallGapHold {
    /// Gaps ready to hand on.
    private(set) var ready: [SourceGap] = []
    /// Stall gaps waiting for their verdict, and when (monotonic seconds) each came.
    private(set) var held: [(gap: SourceGap, since: Double)] = []
    /// The longest a stall gap waits for its verdict, then goes on whole: the recording reads
    /// nothing past the gap meanwhile, and must not fall behind its 2 s ring (a verdict comes
    /// one period after the cycles are at their pace; PipeWire made up 2 s of a stop in 0.1 s).
    static let maximumHoldSeconds = 1.0

    /// A gap from the tap; positions count from `offset` (a pre-roll's first readable frame).
    mutating func take(_ gap: CaptureGap, offset: Int, now: Double = SystemClock.monotonicSeconds()) {
        let position = gap.position - offset
        switch gap.cause {
        case .overrun:
            ready.append(SourceGap(position: position, length: gap.length, cause: .overrun))
        case .clockStall:
            let stall = SourceGap(position: position, length: gap.length, cause: .clockStall)
            if gap.awaitsVerdict { held.append((stall, now)) } else { ready.append(stall) }
        case .catchUp:
            // The verdict names its gap by position; a stall merged into an overrun has none.
            guard let index = held.lastIndex(where: { $0.gap.position == position }) else { return }
            var stall = held.remove(at: index).gap
            stall.length -= min(gap.length, stall.length)
            if stall.length > 0 { ready.append(stall) }
        }
    }

    /// The first held gap's position; gaps held too long go on as they are.
    mutating func firstHeldPosition(now: Double) -> Int? {
        while let first = held.first, now - first.since > Self.maximumHoldSeconds {
            ready.append(held.removeFirst().gap)
        }
        return held.map { $0.gap.position }.min()
    }

    mutating func releaseAll() {
        ready += held.map { $0.gap }
        held.removeAll()
    }

    /// The gaps ready, oldest first; they leave the hold.
    mutating func handOn() -> [SourceGap] {
        defer { ready.removeAll() }
        return ready.sorted { $0.position < $1.position }
    }
}

/// What a recorder was asked to record: enough to start it again (auto_resume).
struct RecorderSpec: Equatable {
    var app: String
    var stream: String
    /// An input port's name, or `bus:main` / `bus:cue`.
    var port: String
    /// Started without an explicit input: it records the session's route input and goes on
    /// from the new one when that changes (streams follow the route).
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
    /// What the session's mode does to its capture (`CaptureProcessing.of`): anything but
    /// `.none` records it echo-cancelled against `referencePort`.
    var processing: CaptureProcessing = .none
    /// The session's route output: the far end of a processed capture.
    var referencePort: String?
    /// `[voice] echo_suppression`: how a processed capture's canceller treats the echo.
    var echoSuppression = EchoSuppressionSetting.moderate
}

/// One running recorder of a session.
final class RecorderStream {
    let spec: RecorderSpec
    let tap: CaptureTap
    let source: TapSource
    /// The processed source the recorder reads (nil: it reads `source` as captured).
    var voice: VoiceCaptureSource?
    /// The capture processing its session asked for when it started, and the far end's port
    /// (nil without processing): `followCaptureProcessing` compares them with the session's now.
    var processing: CaptureProcessing = .none
    var referencePort: String?
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
    /// Whether its source still delivers frames (`FeedWatcher`, from the tick; its one writer).
    var feed = FeedWatch(now: SystemClock.monotonicSeconds())

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
            stalledSince: feed.stalledSince?.iso8601)
    }

    var json: JSONValue { info.json }

    /// Logs a gap its recorder reported, in words an operator reads.
    func log(_ gap: SourceGap) {
        let name = "\(spec.app)/\(spec.stream)"
        switch gap.cause {
        case .overrun:
            Log.warning(
                "\(name): ring overrun, \(Readable.length(frames: gap.length, sampleRate: sampleRate)) missing "
                    + "at \(Readable.position(frames: gap.position, sampleRate: sampleRate)) of the recording")
        case .clockStall:
            Log.warning(
                "\(name): JACK delivered no audio for \(Readable.length(frames: gap.length, sampleRate: sampleRate)) "
                    + "of wall-clock time (a stalled or stopped server, or a driver that lost sync); recorded as a gap "
                    + "at \(Readable.position(frames: gap.position, sampleRate: sampleRate)) of the recording, so "
                    + "later samples keep their true time")
        }
    }
}

/// What recorders did since the coordinator last asked (`handleEvents`). A recorder that
/// stopped by itself (disk full, a write error) is a fact the service reports (`recorders`).
struct RecorderNews: Equatable {
    /// Recorders that were asked to stop and have finished their files.
    var finished: [ObjectIdentifier] = []
}

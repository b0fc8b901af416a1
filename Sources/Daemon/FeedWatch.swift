// Stalled feeds: a recorder whose source delivers no frames for `stall_seconds` is `stalled`.
// The silence alarm judges the samples that arrive; a graph, driver or server that stopped
// delivers none, and would leave a logger "recording" nothing with green lights. This is its
// alarm: the `recording` event (`stalled`, then `resumed` with reason `stalled`), `status`'s
// `stalledSince`, the `on_silence` program with RECD_STATE=stalled/resumed, the metric
// `recd_recorder_stalled`, and a log line each way. The missing time itself is recorded by the
// tap when the cycles come back (a `clockStall` gap, TapState.observeClock): this file only
// raises and clears the alarm.
//
// Threads: the control thread (the tick), reading the tap's counters, which the process thread
// publishes as atomics; nothing here runs on the process thread.
import Archive
import AudioEngine
import ControlProtocol
import Platform
import SystemSupport

/// Whether one recorder's source still delivers frames. A plain value the tick updates with
/// the tap's counters (`FeedWatcher`); monotonic seconds throughout.
struct FeedWatch: Equatable {
    /// A change the service announces.
    enum Change: Equatable {
        /// No frames since `since` (the last frame's wall-clock time) for `stall_seconds`.
        case stalled(since: UTCTime)
        /// Frames again after a stall that began at `since` and lasted `seconds`.
        case resumed(since: UTCTime, seconds: Double)
    }

    /// The tap's frames (delivered and dropped: a dropped period still came) at the last check.
    private var frames: Int
    /// When, on the monotonic clock, the latest of those frames came.
    private var lastFrameAt: Double
    /// The last frame's wall-clock time while stalled; nil while frames flow.
    private(set) var stalledSince: UTCTime?

    /// A watch from a recorder's start: its first frame is due from `now`.
    init(now: Double) {
        frames = 0
        lastFrameAt = now
    }

    /// Control thread, each tick. `frames`: the tap's count now; `lastPeriodAt`: when (monotonic
    /// seconds) the process thread last ran a period for it (the tap's clock stamp, placed by its
    /// age on JACK's own clock), nil when unknown; `wallNow`: the wall clock now;
    /// `stallSeconds` 0: no alarm.
    mutating func check(
        frames: Int, lastPeriodAt: Double?, now: Double, wallNow: UTCTime, stallSeconds: Double
    ) -> Change? {
        if frames != self.frames {
            self.frames = frames
            // The stamp is the period's start: trusted only between the last check and now (a
            // clock that is not the monotonic one would put it anywhere).
            if let lastPeriodAt, lastPeriodAt <= now, lastPeriodAt >= lastFrameAt {
                lastFrameAt = lastPeriodAt
            } else {
                lastFrameAt = now
            }
            guard let since = stalledSince else { return nil }
            stalledSince = nil
            let seconds = Double(wallNow.nanosecondsSinceEpoch - since.nanosecondsSinceEpoch) / 1e9
            return .resumed(since: since, seconds: (max(0, seconds) * 100).rounded() / 100)
        }
        guard stalledSince == nil, stallSeconds > 0, now - lastFrameAt >= stallSeconds else { return nil }
        let since = UTCTime(nanosecondsSinceEpoch: wallNow.nanosecondsSinceEpoch - Int64((now - lastFrameAt) * 1e9))
        stalledSince = since
        return .stalled(since: since)
    }
}

/// The stall alarm of every running recorder: a feature the coordinator ticks. It is the one
/// writer of each recorder's `feed`. Control thread.
final class FeedWatcher: DaemonFeature {
    private let recorders: RecorderService
    /// Whose `on_silence` program hears a stall, with the stream's `stall_seconds`.
    private let alarms: SilenceAlarms

    init(recorders: RecorderService, alarms: SilenceAlarms) {
        self.recorders = recorders
        self.alarms = alarms
    }

    /// From the tick: each running recorder's feed, its stall raised or cleared (see the file's
    /// head). Reads two atomics per recorder; the program runs on the "silence hook" worker.
    func tick(now: Double) {
        let wallNow = UTCTime(nanosecondsSinceEpoch: SystemClock.realtimeNanoseconds())
        // A clock stamp is JACK's microseconds, which need not be the tick's clock (jackd2 reads
        // CLOCK_MONOTONIC_RAW, measured 265 ms off CLOCK_MONOTONIC on a box up for hours): its age
        // on JACK's clock places it on the tick's. JACK's clock is read only once a stamp exists:
        // jackd2's libjack has no clock before a client of the process opened.
        var jackNow: Int?
        for stream in recorders.recorders where !stream.stopping {
            let settings = alarms.settings(of: stream.spec.app)
            let stamp = stream.tap.clockStamp.map { stamp -> Double in
                let current = jackNow ?? Int(truncatingIfNeeded: AudioEngine.jackMicros)
                jackNow = current
                return now - Double(current - stamp.micros) / 1e6
            }
            let frames = stream.tap.framesCaptured + stream.tap.droppedFrames
            guard
                let change = stream.feed.check(
                    frames: frames, lastPeriodAt: stamp, now: now, wallNow: wallNow,
                    stallSeconds: settings.stallSeconds)
            else { continue }
            let name = "\(stream.spec.app)/\(stream.spec.stream)"
            switch change {
            case .stalled(let since):
                Log.warning(
                    "\(name): STALLED: no audio from \(stream.spec.port) since \(since.iso8601) "
                        + "(\(Readable.duration(settings.stallSeconds)) without a frame: a stopped JACK graph, driver or server); it records on and marks the "
                        + "missing time as a gap when frames come again")
                recorders.announce(stream, .stalled, file: stream.currentFiles.last, reason: "noFrames") {
                    $0.since = since.iso8601
                }
                alarms.stall(
                    "stalled", app: stream.spec.app, stream: stream.spec.stream, since: since,
                    seconds: settings.stallSeconds, settings: settings)
            case .resumed(let since, let seconds):
                Log.notice(
                    "\(name): audio again from \(stream.spec.port) after \(Readable.duration(seconds)) stalled (since "
                        + "\(since.iso8601))")
                let reason = RecordingEvent.State.stalled.rawValue
                recorders.announce(stream, .resumed, file: stream.currentFiles.last, reason: reason) {
                    $0.since = since.iso8601
                }
                alarms.stall(
                    "resumed", app: stream.spec.app, stream: stream.spec.stream, since: since, seconds: seconds,
                    settings: settings)
            }
        }
    }
}

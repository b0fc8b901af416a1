// Silence alarms: which recorded streams are silent, the `silence` events,
// and the `on_silence` program run on each change — of silence, and of a stalled feed
// (FeedWatch.swift raises that alarm; its program runs here, on the same worker).
//
// The archiver threads decide (Archive's SilenceDetector on the samples written); this file
// turns their `RecorderEvent.silence` into the alarm a station engineer sees. An alarm belongs
// to the stream (app and stream name), not to one recorder: a recording that goes on after an
// interruption, a media-services reset or from a new input starts already silent, so it sends
// no second `began`, and its `ended` closes the alarm the earlier recorder raised.
//
// Threads: the control thread, except the programs, which run on the "silence hook" worker.
import Archive
import ControlProtocol
import Foundation
import Platform
import SystemSupport

/// The silent streams and what happens when one goes silent or comes back: a feature that
/// hears the recorded streams (their detection, their changes, their end). Made by the
/// composition root; control thread only.
final class SilenceAlarms: SegmentFeature, DaemonFeature {
    /// A stream that is silent now.
    struct Alarm: Equatable {
        /// When its silence started (the first silent frame).
        var since: UTCTime
        /// The loudest peak of the silence when it began, dBFS.
        var levelDB: Double
    }

    private struct StreamKey: Hashable {
        var app: String
        var stream: String
    }

    /// How long an `on_silence` program may run before it is ended.
    static let programTimeLimit = 30.0
    /// Levels below this read as this (no -inf on the wire; 24-bit's smallest step is about
    /// -144.5 dBFS).
    static let floorDB = -144.0

    private let sink: any EventSink
    /// The "silence hook" worker; nil when no section names an `on_silence` program.
    private let runner: SlowRequestWorker?
    private var alarms: [StreamKey: Alarm] = [:]
    /// `[archive]`'s silence keys, and those of `[session APP]` sections over them.
    private let defaults: SilenceSettings
    private let sessions: [String: SilenceOverride]

    init(
        sink: any EventSink, runner: SlowRequestWorker?, defaults: SilenceSettings = SilenceSettings(),
        sessions: [String: SilenceOverride] = [:]
    ) {
        self.sink = sink
        self.runner = runner
        self.defaults = defaults
        self.sessions = sessions
    }

    /// The silence settings of `app`'s recorders: `[archive]`'s with its session section's.
    func settings(of app: String) -> SilenceSettings {
        defaults.applying(sessions[app] ?? SilenceOverride())
    }

    /// A new recorder detects silence with its app's settings.
    func configure(
        _ configuration: inout RecorderConfiguration, inputs: inout SegmentInputs, for spec: RecorderSpec
    ) {
        configuration.silence = detection(app: spec.app, stream: spec.stream, settings: settings(of: spec.app))
    }

    func streamChanged(_ change: StreamChange, app: String, stream: String) {
        switch change {
        case .silence(let silence): handle(silence, app: app, stream: stream, settings: settings(of: app))
        case .ended: forget(app: app, stream: stream)
        case .stoppedByItself: break
        }
    }

    /// A recorder's `silentSince`.
    func describe(_ info: inout RecorderInfo) {
        info.silentSince = alarm(app: info.app, stream: info.stream)?.since.iso8601
    }

    /// The worker for `config`'s `on_silence` programs, or nil when it names none.
    static func makeRunner(for config: RecdConfig, deliver: @escaping SlowRequestWorker.Deliver) throws(SystemError)
        -> SlowRequestWorker?
    {
        let named = config.archive.silence.program != nil || config.sessions.contains { $0.silence.program != nil }
        return named ? try SlowRequestWorker(name: "silence hook", deliver: deliver) : nil
    }

    /// The alarm of `app`'s `stream`, if it is silent.
    func alarm(app: String, stream: String) -> Alarm? { alarms[StreamKey(app: app, stream: stream)] }

    /// The detection a new recorder of `app`'s `stream` runs with `settings` (nil: off).
    func detection(app: String, stream: String, settings: SilenceSettings) -> SilenceDetection? {
        guard settings.isOn else { return nil }
        return SilenceDetection(
            threshold: Float(pow(10, settings.thresholdDB / 20)), seconds: settings.seconds,
            alreadySilent: alarm(app: app, stream: stream) != nil)
    }

    /// A recorder of `app`'s `stream` reported a change: the alarm, the event, the program.
    func handle(_ change: SilenceChange, app: String, stream: String, settings: SilenceSettings) {
        let key = StreamKey(app: app, stream: stream)
        let levelDB = Self.decibels(change.peak)
        let seconds: Double
        switch change.state {
        case .began:
            // Already raised by the recording this one continues.
            guard alarms[key] == nil else { return }
            alarms[key] = Alarm(since: change.since, levelDB: levelDB)
            seconds = Self.seconds(from: change.since, to: change.decided)
            Log.warning(
                "\(app)/\(stream): silent since \(change.since.iso8601) (peak \(Self.text(levelDB)) dBFS, below "
                    + "\(Self.text(settings.thresholdDB)) dBFS for \(Readable.duration(settings.seconds)))")
        case .ended:
            guard let alarm = alarms.removeValue(forKey: key) else { return }
            seconds = Self.seconds(from: alarm.since, to: change.since)
            Log.notice(
                "\(app)/\(stream): sound again since \(change.since.iso8601) after \(Readable.duration(seconds)) of "
                    + "silence (peak "
                    + "\(Self.text(levelDB)) dBFS)")
        }
        sink.broadcast(
            .silence(
                SilenceEvent(
                    app: app, stream: stream, state: change.state == .began ? .began : .ended, seconds: seconds,
                    levelDB: levelDB, since: change.since.iso8601)))
        if let program = settings.program {
            run(
                program, app: app, stream: stream, state: change.state.rawValue, levelDB: levelDB,
                since: change.since, seconds: seconds)
        }
    }

    /// A recorder of `app`'s `stream` stalled (no frames for `stall_seconds`) or has frames
    /// again (`FeedWatcher`): the `on_silence` program runs with RECD_STATE
    /// `stalled` or `resumed`, RECD_SINCE the last frame's time and RECD_SECONDS how long the
    /// feed has been (`stalled`) or was (`resumed`) without frames. No level: nothing arrived.
    func stall(
        _ state: String, app: String, stream: String, since: UTCTime, seconds: Double, settings: SilenceSettings
    ) {
        guard let program = settings.program else { return }
        run(program, app: app, stream: stream, state: state, levelDB: nil, since: since, seconds: seconds)
    }

    /// `app`'s `stream` no longer records and will not go on (stopped for good): its alarm
    /// goes without an event (the silence did not end; the `recording` event said it stopped).
    func forget(app: String, stream: String) {
        alarms.removeValue(forKey: StreamKey(app: app, stream: stream))
    }

    /// Runs `program` on the worker: no shell, a clean environment, a time limit; its end is
    /// logged on the control thread.
    private func run(
        _ program: String, app: String, stream: String, state: String, levelDB: Double?, since: UTCTime,
        seconds: Double
    ) {
        guard let runner else { return }
        var variables = [
            "PATH": "/usr/local/bin:/usr/bin:/bin", "RECD_APP": app, "RECD_STREAM": stream, "RECD_STATE": state,
            "RECD_SINCE": since.iso8601, "RECD_SECONDS": Self.text(seconds),
        ]
        if let levelDB { variables["RECD_LEVEL_DB"] = Self.text(levelDB) }
        let environment = variables
        let what = "on_silence \(program) (\(app)/\(stream) \(state))"
        runner.submit(for: nil) { job -> Result<ChildOutcome, SystemError> in
            do throws(SystemError) {
                return .success(
                    try ChildProcess.run(
                        path: program, environment: environment, timeLimit: Self.programTimeLimit,
                        isCancelled: { job.isCancelled }))
            } catch {
                return .failure(error)
            }
        } completion: { result in
            switch result {
            case .success(let outcome) where outcome.succeeded:
                Log.info("\(what): \(outcome.termination) after \(Readable.duration(outcome.seconds))")
            case .success(let outcome) where outcome.timedOut:
                Log.warning(
                    "\(what): still running after \(Readable.duration(Self.programTimeLimit)), ended "
                        + "(\(outcome.termination)); make it "
                        + "return sooner, e.g. hand slow work to a queue")
            case .success(let outcome):
                Log.warning("\(what): \(outcome.termination) after \(Readable.duration(outcome.seconds))")
            case .failure(let error):
                Log.error("\(what): cannot run it: \(error); on_silence must name an executable file recd may run")
            }
        }
    }

    /// Stops the worker (a running program is ended). Control thread, at shutdown.
    func stop() { runner?.stop() }

    /// 20·log10(peak) to 0.1 dB, at least `floorDB`.
    static func decibels(_ peak: Float) -> Double {
        guard peak > 0 else { return floorDB }
        return max(floorDB, (20 * log10(Double(peak)) * 10).rounded() / 10)
    }

    private static func seconds(from start: UTCTime, to end: UTCTime) -> Double {
        (Double(end.nanosecondsSinceEpoch - start.nanosecondsSinceEpoch) / 1e7).rounded() / 100
    }

    /// A number as the environment and the log show it: `-62.5`, `30`, `0.05`.
    private static func text(_ value: Double) -> String { JSONValue.format(value) }
}

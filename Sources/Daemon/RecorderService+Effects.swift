// RecorderService's part in the policy's effects: interruptions suspend recorders and
// resumeStreams brings them back; stops for a category change, a revoked permission, a lost
// input or server; a new sample rate; the recorders that wait for their cause to go
// (`RecorderRecovery`) and the declared ones. The coordinator decides; this carries it out.
//
// Threads: the control thread.
import Archive
import AudioEngine
import Codec
import ControlProtocol
import Foundation
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

extension RecorderService {

    /// An interruption by `by` (an app, a muted port; nil for a lost output): `app`'s
    /// recorders stop and are kept to start again on resume. Their segments end with
    /// END_REASON=interruption and INTERRUPTED_BY naming who.
    func suspendAll(of app: String, by: String?) {
        let comments = by.map { [VorbisComment(CommentName.interruptedBy, $0)] } ?? []
        for stream in of(app) {
            recovery.wait(stream.spec, cause: .interruption, declared: isDeclared(app), by: by)
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
                            + "\(Readable.duration(waited.rounded())) ago)")
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
}

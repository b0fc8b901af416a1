// Recorders that are not running and why, and what brings each back (SPEC §13, "faults heal"):
// a full disk (free space above the low-water mark), a lost JACK server (its reset), an input
// that went away (the port back, or an input in the route again), an interruption (the
// policy's resumeStreams). A declared recorder (`[session APP] record = ...`) is never left
// stopped without an entry here, which `status` shows with the time it stopped.
//
// The recorder service owns it (`RecorderService.recovery`) and adds to it as recorders stop;
// the coordinator asks it what to start again (`resumeWaiting`, the declared recorders).
//
// Threads: the control thread (RecorderService's). The free-space check is one statvfs, at
// most once a second and only while a recorder waits for space.
import Archive
import ControlProtocol
import Platform
import SessionPolicy
import SystemSupport

/// Why a recorder is not running: what brings it back.
enum StopCause: String, Equatable {
    /// Interrupted: the policy's resumeStreams (`auto_resume`) starts it again.
    case interruption
    /// The JACK server went away: its reset starts it again (`auto_resume`, or declared).
    case mediaServicesLost
    /// The archive's disk filled: it starts again once the low-water mark is free.
    case diskFull
    /// Its input went away (an explicit port, or the route was left without input): it starts
    /// again when the port is back (or the route has an input again).
    case inputGone
    /// A declared recorder stopped by `record.stop`: it stays stopped until `record.start`.
    case stop
    /// A declared recorder that could not start or was stopped for another reason (no
    /// permission, a write error, a category that cannot record): tried again when JACK
    /// (re)starts; the entry says why.
    case failed

    /// The causes that go away by themselves, checked from the tick.
    var heals: Bool { self == .diskFull || self == .inputGone || self == .mediaServicesLost }
}

/// One recorder that is not running.
struct WaitingRecorder: Equatable {
    var spec: RecorderSpec
    var cause: StopCause
    /// When it stopped (wall clock); kept while the cause changes (a retry that failed).
    var since: UTCTime
    /// Declared in the config: started again after a reset whatever `auto_resume` says, and
    /// activated again when its session is inactive.
    var declared: Bool
    /// Why it could not start, for one that tried.
    var detail: String?
    /// Who interrupted it, for an interruption.
    var by: String?
    /// Not tried again before this (monotonic seconds): a start that failed is not retried
    /// every tick.
    var retryAt = -Double.infinity
}

/// The waiting recorders of a `RecorderService`, the declared ones, and the free-space check
/// for those that wait for space. Owned by the service; control thread.
final class RecorderRecovery {
    private(set) var waiting: [WaitingRecorder] = []
    /// `[session] record = ...` of the config: sessions that record whenever they can.
    let declared: [(app: String, record: RecordAtStart)]
    /// The entry being started again by `resumeWaiting`: its start is announced `resumed`.
    private var resuming: WaitingRecorder?
    let archiveDir: String
    /// `[archive] min_free_percent`: retention frees that much, so a recorder waits for it.
    let minFreePercent: Double?
    /// The archive's file system at the last check: (available, total) bytes.
    private(set) var space: (availableBytes: Int64, totalBytes: Int64)?
    private var lastSpaceCheck = -Double.infinity
    /// The last check found the low-water mark free (false again once a recorder stops for a
    /// full disk, until the next check).
    private var roomy = false

    /// The free space is checked at most this often (seconds) while a recorder waits for it.
    static let spaceCheckInterval = 1.0
    /// A recorder waits for this share of the file system, at least `lowWaterFloor` (but not
    /// more than half the file system) and at most `lowWaterCeiling`: a restart into the few
    /// kilobytes a finished segment gave back would fill the disk again at once, stop, give
    /// them back, and start again, a new file every second.
    static let lowWaterShare = 0.05
    static let lowWaterFloor: Int64 = 16 << 20
    static let lowWaterCeiling: Int64 = 1 << 30

    init(archiveDir: String, minFreePercent: Double?, declared: [(app: String, record: RecordAtStart)] = []) {
        self.archiveDir = archiveDir
        self.minFreePercent = minFreePercent
        self.declared = declared
    }

    /// Bytes that must be free for a recorder stopped by a full disk to start again: 5% of the
    /// file system, at least 16 MiB (at most half of it) and at most 1 GiB; and at least what
    /// retention keeps free (`min_free_percent`).
    func lowWaterBytes(totalBytes: Int64) -> Int64 {
        let share = max(Int64(Double(totalBytes) * Self.lowWaterShare), Self.lowWaterFloor)
        let bounded = min(share, Self.lowWaterCeiling, totalBytes / 2)
        let retained = minFreePercent.map { Int64(Double(totalBytes) * $0 / 100) } ?? 0
        return max(bounded, retained)
    }

    /// The low-water mark of the archive's file system now (nil when statvfs fails).
    func currentLowWater() -> Int64? {
        space = FileSystem.space(at: archiveDir)
        return space.map { lowWaterBytes(totalBytes: $0.totalBytes) }
    }

    func entry(app: String, stream: String) -> WaitingRecorder? {
        waiting.first { $0.spec.app == app && $0.spec.stream == stream }
    }

    /// Records why `spec` is not running. An entry of the same stream is replaced; it keeps
    /// its first time when the stream was already waiting.
    func wait(
        _ spec: RecorderSpec, cause: StopCause, declared: Bool, detail: String? = nil, by: String? = nil
    ) {
        let earlier = entry(app: spec.app, stream: spec.stream)
        if cause == .diskFull { roomy = false }
        waiting.removeAll { $0.spec.app == spec.app && $0.spec.stream == spec.stream }
        waiting.append(
            WaitingRecorder(
                spec: spec, cause: cause, since: earlier?.since ?? UTCTime.now(), declared: declared, detail: detail,
                by: by))
    }

    func remove(where condition: (WaitingRecorder) -> Bool) { waiting.removeAll(where: condition) }

    /// `app`'s `stream` is not tried again before `time` (monotonic seconds).
    func delay(app: String, stream: String, until time: Double) {
        for index in waiting.indices where waiting[index].spec.app == app && waiting[index].spec.stream == stream {
            waiting[index].retryAt = time
        }
    }

    /// The entries whose cause may be gone now (an interruption's is the caller's to judge).
    /// `servicesAvailable`: the JACK server is there and
    /// the policy has had its reset. `inputAvailable`: the entry's input can be recorded (its
    /// port, or the route's input for one that follows the route). Free space is asked at most
    /// once per `spaceCheckInterval` of `now` (monotonic seconds), only for a disk-full entry.
    func ready(now: Double, servicesAvailable: Bool, inputAvailable: (RecorderSpec) -> Bool)
        -> [WaitingRecorder]
    {
        guard servicesAvailable else { return [] }
        if waiting.contains(where: { $0.cause == .diskFull }), now - lastSpaceCheck >= Self.spaceCheckInterval {
            lastSpaceCheck = now
            let lowWater = currentLowWater()
            roomy = lowWater.map { (space?.availableBytes ?? 0) >= $0 } ?? false
        }
        return waiting.filter { entry in
            guard now >= entry.retryAt else { return false }
            switch entry.cause {
            // The caller decides whether its interruption is over (and then forgets it: the
            // policy's resumeStreams would have taken it).
            case .mediaServicesLost, .interruption: return true
            case .diskFull: return roomy && inputAvailable(entry.spec)
            case .inputGone: return inputAvailable(entry.spec)
            case .stop, .failed: return false
            }
        }
    }

    /// What brings `entry` back, in words for status, events and the log; nil for one that
    /// does not come back by itself.
    func resumesWhen(_ entry: WaitingRecorder) -> String? {
        switch entry.cause {
        case .diskFull:
            guard let space else { return "the archive's disk has room again" }
            return "\(Self.mebibytes(lowWaterBytes(totalBytes: space.totalBytes))) are free in \(archiveDir) "
                + "(\(Self.mebibytes(space.availableBytes)) now)"
        case .mediaServicesLost:
            return entry.declared ? "the JACK server is back" : "the JACK server is back (with auto_resume)"
        case .inputGone:
            return entry.spec.followsRoute
                ? "the session's route has an input again" : "input \(entry.spec.port) is available again"
        case .interruption: return "the interruption ends (with auto_resume)"
        case .stop, .failed: return nil
        }
    }

    /// `status`'s `waiting`: every entry, with what brings it back.
    func infos() -> [WaitingRecorderInfo] {
        waiting.map { entry in
            WaitingRecorderInfo(
                app: entry.spec.app, stream: entry.spec.stream, port: entry.spec.port, reason: entry.cause.rawValue,
                since: entry.since.iso8601, declared: entry.declared, resumesWhen: resumesWhen(entry),
                resumeFreeBytes: entry.cause == .diskFull
                    ? space.map { Double(lowWaterBytes(totalBytes: $0.totalBytes)) } : nil,
                detail: entry.detail
                    ?? (entry.cause == .stop ? "`recctl record start \(entry.spec.app)` starts it" : nil),
                by: entry.by)
        }
    }

    /// The specs of `app` an interruption or a media-services loss stopped, to start again
    /// (resumeStreams); they are no longer kept.
    func takeSuspended(of app: String) -> [RecorderSpec] {
        let suspended = { (entry: WaitingRecorder) in
            entry.spec.app == app && (entry.cause == .interruption || entry.cause == .mediaServicesLost)
        }
        defer { remove(where: suspended) }
        return waiting.filter(suspended).map(\.spec)
    }

    /// Whether something of `app` waits to start again (or was stopped by request): the
    /// declared recorders then are not started afresh.
    func hasSuspended(_ app: String) -> Bool { waiting.contains { $0.spec.app == app && $0.cause != .failed } }

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
        for entry in ready(now: now, servicesAvailable: servicesAvailable, inputAvailable: inputAvailable) {
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
                    remove { $0 == entry }
                    Log.notice("\(name): not started again after \(entry.cause.rawValue): \(why)")
                case .held(let why):
                    wait(entry.spec, cause: .failed, declared: true, detail: why)
                    Log.notice("\(name): not started again after \(entry.cause.rawValue): \(why)")
                }
            } catch {
                let failure = Self.sessionError(error)
                let cause = Self.cause(of: failure) ?? entry.cause
                if entry.detail != failure.message {
                    Log.warning("\(name): could not record again (\(failure.message)); waits for \(cause.rawValue)")
                }
                wait(entry.spec, cause: cause, declared: entry.declared, detail: failure.message)
                // A new cause has its own condition (the input back); the same one is tried later.
                if cause == entry.cause {
                    delay(app: entry.spec.app, stream: entry.spec.stream, until: now + Self.retryDelay)
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
        if entry(app: app, stream: name)?.detail != failure.message {
            Log.warning("\(app): declared recording not started: \(failure.message)")
        }
        wait(spec, cause: cause, declared: true, detail: failure.message)
    }

    /// A recorder that was to go on (resumeStreams, a new sample rate) could not start: one
    /// whose input or server is missing waits for it; a declared one says why; another is
    /// dropped (logged by the caller).
    func couldNotResume(_ spec: RecorderSpec, error: any Error) {
        let failure = Self.sessionError(error)
        let declared = isDeclared(spec.app)
        guard let cause = Self.cause(of: failure) ?? (declared ? .failed : nil) else { return }
        wait(spec, cause: cause, declared: declared, detail: failure.message)
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
    var waitingInfos: [WaitingRecorderInfo] { infos() }

    /// Declared recorders that should start now: their app records nothing and has nothing
    /// suspended. `port` is the declared port, or nil for the session's input route.
    func declaredToStart(isRecording: (String) -> Bool) -> [(app: String, port: String?)] {
        declared.compactMap { decl in
            guard decl.record != .no, !isRecording(decl.app), !hasSuspended(decl.app) else { return nil }
            if case .port(let name) = decl.record { return (decl.app, name) }
            return (decl.app, nil)
        }
    }

    /// `app`'s entries (of `stream`, or all) that wait to start again: what `record.stop` forgets.
    func waiting(app: String, stream: String?) -> [WaitingRecorder] {
        waiting.filter { $0.spec.app == app && (stream == nil || $0.spec.stream == stream) && $0.cause != .stop }
    }

    /// `record.stop` of `app` (`stream`, or all) stopped `stopped` and forgets `waited`. A
    /// declared recorder stopped by request stays stopped (not started again at a reset) until
    /// `record.start`; status says so.
    func stopRequested(app: String, stream: String?, stopped: [RecorderSpec], waited: [WaitingRecorder]) {
        remove { $0.spec.app == app && (stream == nil || $0.spec.stream == stream) }
        if isDeclared(app) {
            for spec in stopped + waited.map(\.spec) { wait(spec, cause: .stop, declared: true) }
        }
        if !waited.isEmpty {
            Log.notice("\(app): \(waited.map(\.spec.stream).joined(separator: ", ")) no longer waits to record again")
        }
    }

    /// The policy stopped `app`'s streams for good (not a media-services loss): nothing of it
    /// waits; a declared recorder says why until it records again. `specs`: its recorders still running.
    func stoppedByPolicy(app: String, reason: StreamStopReason, specs running: [RecorderSpec]) {
        let specs = running + waiting.filter { $0.spec.app == app }.map(\.spec)
        remove { $0.spec.app == app }
        guard isDeclared(app), reason != .deleted else { return }
        for spec in specs {
            wait(
                spec, cause: .failed, declared: true,
                detail: reason == .categoryChange
                    ? "the session's category cannot record" : "stopped with the session (\(reason.rawValue))")
        }
    }

    /// Whether `app`'s session declares a recorder (`record = route` or a port).
    func isDeclared(_ app: String) -> Bool {
        declared.contains { $0.app == app && $0.record != .no }
    }

    /// The entry `resumeWaiting` is starting again, when `spec` is its recorder (a declared one
    /// may start under another stream name: the route's input now).
    func resuming(_ spec: RecorderSpec) -> WaitingRecorder? {
        guard let resuming, resuming.spec.app == spec.app, resuming.spec.stream == spec.stream || resuming.declared
        else { return nil }
        return resuming
    }

    /// `resumesWhen` for the `stopped` event of a stream that waits to start again by itself.
    func resumesWhen(of spec: RecorderSpec) -> String? {
        guard let entry = entry(app: spec.app, stream: spec.stream), entry.cause.heals else { return nil }
        return resumesWhen(entry)
    }

    static func mebibytes(_ bytes: Int64) -> String {
        let mebibytes = Double(bytes) / 1_048_576
        return mebibytes >= 10 ? "\(Int(mebibytes.rounded())) MiB" : "\((mebibytes * 10).rounded() / 10) MiB"
    }
}

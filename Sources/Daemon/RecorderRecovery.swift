// Recorders that are not running and why, and what brings each back (SPEC §13, "faults heal"):
// a full disk (free space above the low-water mark), a lost JACK server (its reset), an input
// that went away (the port back, or an input in the route again), an interruption (the
// policy's resumeStreams). A declared recorder (`[session APP] record = ...`) is never left
// stopped without an entry here, which `status` shows with the time it stopped.
//
// Threads: the control thread (RecorderService's). The free-space check is one statvfs, at
// most once a second and only while a recorder waits for space.
import Archive
import ControlProtocol
import Platform

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

/// The waiting recorders of a `RecorderService` and the free-space check for those that wait
/// for space. A value owned by the service; control thread.
struct RecorderRecovery {
    private(set) var waiting: [WaitingRecorder] = []
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

    init(archiveDir: String, minFreePercent: Double?) {
        self.archiveDir = archiveDir
        self.minFreePercent = minFreePercent
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
    mutating func currentLowWater() -> Int64? {
        space = FileSystem.space(at: archiveDir)
        return space.map { lowWaterBytes(totalBytes: $0.totalBytes) }
    }

    func entry(app: String, stream: String) -> WaitingRecorder? {
        waiting.first { $0.spec.app == app && $0.spec.stream == stream }
    }

    /// Records why `spec` is not running. An entry of the same stream is replaced; it keeps
    /// its first time when the stream was already waiting.
    mutating func wait(
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

    mutating func remove(where condition: (WaitingRecorder) -> Bool) { waiting.removeAll(where: condition) }

    /// `app`'s `stream` is not tried again before `time` (monotonic seconds).
    mutating func delay(app: String, stream: String, until time: Double) {
        for index in waiting.indices where waiting[index].spec.app == app && waiting[index].spec.stream == stream {
            waiting[index].retryAt = time
        }
    }

    /// The entries whose cause may be gone now (an interruption's is the caller's to judge).
    /// `servicesAvailable`: the JACK server is there and
    /// the policy has had its reset. `inputAvailable`: the entry's input can be recorded (its
    /// port, or the route's input for one that follows the route). Free space is asked at most
    /// once per `spaceCheckInterval` of `now` (monotonic seconds), only for a disk-full entry.
    mutating func ready(now: Double, servicesAvailable: Bool, inputAvailable: (RecorderSpec) -> Bool)
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

    static func mebibytes(_ bytes: Int64) -> String {
        let mebibytes = Double(bytes) / 1_048_576
        return mebibytes >= 10 ? "\(Int(mebibytes.rounded())) MiB" : "\((mebibytes * 10).rounded() / 10) MiB"
    }
}

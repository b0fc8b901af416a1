// The box's health in the daemon: the JACK server's stall watch, the facts gathered for the
// policy's `HealthTracker` (SessionPolicy/Health.swift: the rules), the report put into
// `status` (and so into `/api/status`, `/api/health`, `/metrics` and `recctl status`: every
// face reads the one value made here), and the `health` event when it changes.
//
// A stopped JACK server (SIGSTOP, a hung driver) keeps its socket open: recd stays "connected"
// and only its recorders' feeds stall. The server's own stall is judged by recd's process
// cycles: none for `stall_seconds` (the `[archive]` value the feeds use) is `jack-stalled`.
//
// Threads: the control thread (the tick, `status`).
import Archive
import AudioEngine
import ControlProtocol
import NetworkAudio
import Platform
import SessionPolicy
import SystemSupport

/// Whether the JACK server still runs recd's process cycles. A plain value the tick updates
/// with the engine's cycle count; monotonic seconds.
struct ServerStallWatch: Equatable {
    private var cycles: UInt64?
    private var lastCycleAt = 0.0
    /// The last cycle's wall-clock time, while none has come for the stall time.
    private(set) var stalledSince: UTCTime?

    /// The change the tick logs: stalled (since), or cycles again after `seconds`.
    enum Change: Equatable {
        case stalled(since: UTCTime)
        case resumed(seconds: Double)
    }

    /// `cycles`: the engine's count now, nil while not connected (the watch starts over).
    mutating func check(cycles: UInt64?, now: Double, wallNow: Int64, stallSeconds: Double) -> Change? {
        guard let cycles else {
            self = ServerStallWatch()
            return nil
        }
        if cycles != self.cycles || self.cycles == nil {
            self.cycles = cycles
            let stalledFor = now - lastCycleAt
            lastCycleAt = now
            guard stalledSince != nil else { return nil }
            stalledSince = nil
            return .resumed(seconds: (stalledFor * 100).rounded() / 100)
        }
        guard stalledSince == nil, stallSeconds > 0, now - lastCycleAt >= stallSeconds else { return nil }
        let since = UTCTime(nanosecondsSinceEpoch: wallNow - Int64((now - lastCycleAt) * 1e9))
        stalledSince = since
        return .stalled(since: since)
    }
}

/// The health feature: ticked to watch the server and to notice changes, last in `status`'s
/// contributions so that it reads every other part. Control thread.
final class HealthFeature: DaemonFeature {
    private let engine: EngineController
    private let events: any EventSink
    private let stallSeconds: Double
    private let minFreePercent: Double?
    /// `status` as the coordinator builds it (which calls `contribute` here last).
    var status: () -> StatusInfo? = { nil }
    private var watch = ServerStallWatch()
    private var tracker = HealthTracker()
    private var packetLoss = PacketLossWindow()
    private var lastEvaluated = -Double.infinity
    /// The last report, as every face shows it.
    private(set) var latest: HealthInfo?

    /// How often the tick evaluates the health when nobody asks (the `health` event's delay).
    static let evaluationInterval = 1.0

    init(engine: EngineController, events: any EventSink, config: RecdConfig) {
        self.engine = engine
        self.events = events
        stallSeconds = config.archive.silence.stallSeconds
        minFreePercent = config.archive.minFreePercent
    }

    func tick(now: Double) {
        let connected = engine.audio.isRunning
        let cycles = connected ? engine.audio.cycleTimes.map(\.cycles) : nil
        let server = "JACK server '\(engine.serverName ?? "default")'"
        switch watch.check(
            cycles: cycles, now: now, wallNow: SystemClock.realtimeNanoseconds(), stallSeconds: stallSeconds)
        {
        case .stalled(let since):
            Log.warning(
                "\(server) STALLED: no process cycle since \(since.iso8601) (\(Readable.duration(stallSeconds)) "
                    + "without one: a stopped or hung server or driver)")
        case .resumed(let seconds):
            Log.notice("\(server) runs process cycles again after \(Readable.duration(seconds))")
        case nil:
            break
        }
        // Evaluated from the tick too, so that the event comes when nobody asks.
        if now - lastEvaluated >= Self.evaluationInterval { _ = status() }
    }

    func contribute(to status: inout StatusInfo) {
        status.jack.stalledSince = status.jack.connected ? watch.stalledSince?.iso8601 : nil
        let health = evaluate(status)
        status.health = health
    }

    /// The report for `status` now; the `health` event when its state or reasons changed.
    private func evaluate(_ status: StatusInfo) -> HealthInfo {
        lastEvaluated = SystemClock.monotonicSeconds()
        let now = Double(SystemClock.realtimeNanoseconds()) / 1e9
        let packetsLost = packetLoss.update(
            Self.networkReadings(status, nowMicros: Int(lastEvaluated * 1e6), stream: engine.networkStream),
            now: lastEvaluated)
        let (report, changed) = tracker.evaluate(
            Self.facts(
                status, minFreePercent: minFreePercent,
                stallSince: watch.stalledSince.map { Double($0.nanosecondsSinceEpoch) / 1e9 }, packetsLost: packetsLost),
            now: now, duration: Readable.duration)
        let info = HealthInfo(report, iso8601: Self.iso8601)
        latest = info
        if changed {
            Log.notice("health: " + info.line)
            events.broadcast(.health(info))
        }
        return info
    }

    /// Each running recorder's RTP input as the monitor knows it at `nowMicros` (CLOCK_MONOTONIC),
    /// by feed: the stream whose node the recorder's configured input port names (`stream`, the
    /// engine controller's lookup). Recorders of no port or of no such stream are absent.
    static func networkReadings(
        _ status: StatusInfo, nowMicros: Int, stream: (String) -> RTPStreamFacts?
    ) -> [String: NetworkLossReading] {
        var readings: [String: NetworkLossReading] = [:]
        for recorder in status.recorders {
            guard let port = recorder.port, let facts = stream(port) else { continue }
            readings["\(recorder.app)/\(recorder.stream)"] = NetworkLossReading(facts, nowMicros: nowMicros)
        }
        return readings
    }

    /// What the policy judges, from `status`; `packetsLost`: packets each feed's network input
    /// lost in the last minute (`PacketLossWindow`), by feed.
    static func facts(
        _ status: StatusInfo, minFreePercent: Double?, stallSince: Double?, packetsLost: [String: Int] = [:]
    ) -> HealthFacts {
        func time(_ iso: String?) -> Double? { iso.flatMap(parseISO8601) }
        var feeds = status.recorders.map { recorder in
            let name = "\(recorder.app)/\(recorder.stream)"
            return HealthFacts.Feed(
                name: name, silentSince: time(recorder.silentSince), stalledSince: time(recorder.stalledSince),
                packetsLostRecently: packetsLost[name] ?? 0)
        }
        let running = Set(feeds.map(\.name))
        for waiting in status.waiting where !running.contains("\(waiting.app)/\(waiting.stream)") {
            feeds.append(
                HealthFacts.Feed(
                    name: "\(waiting.app)/\(waiting.stream)", stoppedReason: waiting.reason,
                    stoppedSince: time(waiting.since), resumesWhen: waiting.resumesWhen))
        }
        let replication = status.replication.map {
            HealthFacts.Replication(
                remote: $0.remote, backlog: $0.backlog, lastSuccess: $0.lastSuccess, lastError: $0.lastError)
        }
        let timeStamps = status.timeStamps.map {
            HealthFacts.TimeStamps(
                backlog: $0.backlog, oldestUnstampedSeconds: $0.oldestUnstampedSeconds, lastError: $0.lastError,
                intervalSeconds: $0.intervalSeconds ?? 600, alarmSeconds: $0.alarmSeconds ?? 3600)
        }
        var facts = HealthFacts(
            jack: HealthFacts.Jack(
                connected: status.jack.connected, server: status.jack.server, error: status.jack.error,
                stalledSince: status.jack.connected ? stallSince : nil),
            feeds: feeds, diskFreePercent: status.archive.space?.freePercent,
            diskFreeBytes: status.archive.space?.freeBytes, minFreePercent: minFreePercent,
            clockSynchronized: status.clock?.synchronized, replication: replication,
            brokenChains: status.archive.chainAlarms.map(\.chain), unrecoveredPartials: status.archive.unrecovered.count
        )
        facts.timeStamps = timeStamps
        return facts
    }

    static func iso8601(_ unixSeconds: Double) -> String {
        guard unixSeconds.isFinite, abs(unixSeconds) < 1e11 else { return "unknown" }
        return UTCTime(nanosecondsSinceEpoch: Int64((unixSeconds * 1e3).rounded()) * 1_000_000).iso8601
    }

    static func parseISO8601(_ text: String) -> Double? {
        UTCTime(iso8601: text).map { Double($0.nanosecondsSinceEpoch) / 1e9 }
    }
}

// The meters feature: the engine measures peak and RMS per channel on its process thread only
// while someone reads them (a `meter` request within the interest time, the status page's
// stream, the metrics); this service turns that on and off from the tick, keeps the last
// tick's window, answers `meter` requests (at once, or from the first whole window after the
// meters came on) and feeds the status page's stream.
//
// Control thread only. It owns its state; what it needs of the sessions (which groups an
// app's route covers, the recordings' loudness) it asks through `Sources`, so it never sees
// the policy store.
import AudioEngine
import ControlProtocol
import SessionPolicy

#if canImport(Glibc)
    import Glibc  // log10
#endif

final class MeterService: DaemonFeature {
    /// What the meters need of the rest of the daemon, asked when a reading is built.
    struct Sources {
        /// The engine groups of `app`'s route (and its monitoring buses); throws for an
        /// unknown app. nil app: every group.
        var groups: (_ app: String) throws -> Set<String>
        /// The loudness of `app`'s recordings (nil: every recording).
        var loudness: (_ app: String?) -> [RecordingLoudnessInfo]
    }

    /// A reading keeps the engine measuring for this long (seconds).
    static let interestSeconds = 60.0

    private let engine: any MeterEngine
    private let sources: Sources
    /// The status page's live meters (`/events`): filled from the tick while a browser listens.
    let pageMeters = MeterFeed()
    /// The engine's meters over the last tick (about 100 ms), for every `meter` request alike.
    private var latest: [MeterReading] = []
    private var window = 0.0
    private var lastTake = 0.0
    /// The engine measures until then (the control loop's monotonic seconds).
    private var interestUntil = 0.0
    /// The latest tick's time (the control loop's clock, which tests may drive).
    private var now = 0.0
    /// Whether the meters are being measured, and ticks taken since they were turned on.
    private(set) var isOn = false
    private var ticksOn = 0
    /// `meter` requests that came while the meters were off: answered once a whole tick's
    /// window has been measured.
    private var waiting: [(app: String?, reply: LaterReply)] = []

    init(engine: any MeterEngine, sources: Sources) {
        self.engine = engine
        self.sources = sources
    }

    /// Whether someone reads the meters: a reading within the interest time, a status page
    /// stream, or a `meter` request waiting for its window. The tick stays frequent meanwhile.
    var isWanted: Bool { now < interestUntil || pageMeters.isWanted || !waiting.isEmpty }

    /// Meters being measured or read are measured every 100 ms.
    var wantsFrequentTicks: Bool { isOn || isWanted }

    /// From the tick: the meters of the last tick's window while someone reads them; waiting
    /// `meter` requests are answered from the first whole window (or with the error, once the
    /// JACK server is gone).
    func tick(now: Double) {
        self.now = now
        guard engine.isRunning else {
            answerWaiting()
            return
        }
        let wanted = isWanted
        // Also after a reconnect: a new engine connection starts with its meters on.
        engine.metersActive = wanted
        guard wanted else {
            isOn = false
            latest = []
            return
        }
        if !isOn {
            isOn = true
            ticksOn = 0
        }
        latest = engine.meters()
        window = now - lastTake
        lastTake = now
        ticksOn += 1
        // The first take after the meters came on covers part of a tick; the next is whole.
        if ticksOn >= 2 { answerWaiting() }
        if pageMeters.isWanted, let meters = try? info(app: nil) { pageMeters.publish(meters.json) }
    }

    /// `meter`: the fields now, from the last tick's readings while the meters are on; else
    /// they are turned on and `reply` follows within two ticks (nil).
    func request(app: String?, reply: @escaping LaterReply) throws -> [(String, JSONValue)]? {
        if isOn && ticksOn >= 2 { return try info(app: app).fields }
        // Refuse now what would be refused then (an unknown app, no JACK server).
        _ = try info(app: app)
        waiting.append((app, reply))
        return nil
    }

    private func answerWaiting() {
        let answering = waiting
        waiting = []
        for request in answering {
            do { request.reply(.success(try info(app: request.app).fields)) } catch {
                request.reply(.failure(RequestGate.replyError(error)))
            }
        }
    }

    /// Peak and RMS in dBFS (floor -120) per channel of the last tick's window: of an app's
    /// route ports, or of all; with the recordings' momentary and short-term loudness. A
    /// reading keeps the meters on for `interestSeconds`. Also the metrics' input peaks.
    func info(app: String?) throws -> MetersInfo {
        interestUntil = now + Self.interestSeconds
        guard engine.isRunning else {
            throw SessionError(
                .mediaServicesFailed, "the JACK server is gone; meters return with mediaServicesWereReset")
        }
        let groups = try app.map(sources.groups)
        func db(_ value: Float) -> Double {
            value > 0 ? max(-120, (20 * log10(Double(value)) * 100).rounded() / 100) : -120
        }
        let readings = latest.filter { groups?.contains($0.group) ?? true }.map { reading in
            MeterInfo(
                name: reading.name, group: reading.group, channel: reading.channel + 1,
                direction: reading.direction.rawValue, peakDB: db(reading.peak), rmsDB: db(reading.rms))
        }
        return MetersInfo(
            meters: readings, windowMs: (window * 1000).rounded(), recordings: sources.loudness(app))
    }
}

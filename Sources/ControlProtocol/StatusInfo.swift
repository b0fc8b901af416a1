// `status`'s reply: the daemon, JACK, sessions, players, recorders, sound cards, the archive.

/// `status`'s reply fields (at the top level of the reply).
public struct StatusInfo: ReplyObject {
    /// recd itself. Required: `version`, `protocol`, `pid`.
    public struct Daemon: ReplyObject {
        public var version: String
        public var protocolVersion: Int
        public var pid: Int
        /// Whole seconds since recd started.
        public var uptime: Double?
        public var config: String?
        public var socket: String?
        public var stateDir: String?
        public var archiveDir: String?
        /// The web accounts file and the HTTP listener's certificate (configured, or their
        /// places in the state directory), for `recctl web`. nil from a recd older than these keys.
        public var httpUsersFile: String?
        public var httpCertificate: String?

        public init(
            version: String, protocolVersion: Int, pid: Int, uptime: Double?, config: String?, socket: String?,
            stateDir: String?, archiveDir: String?, httpUsersFile: String? = nil, httpCertificate: String? = nil
        ) {
            self.version = version
            self.protocolVersion = protocolVersion
            self.pid = pid
            self.uptime = uptime
            self.config = config
            self.socket = socket
            self.stateDir = stateDir
            self.archiveDir = archiveDir
            self.httpUsersFile = httpUsersFile
            self.httpCertificate = httpCertificate
        }

        public var json: JSONValue {
            [
                "version": .string(version), "protocol": .number(Double(protocolVersion)),
                "pid": .number(Double(pid)), "uptime": JSONValue(uptime), "config": JSONValue(config),
                "socket": JSONValue(socket), "stateDir": JSONValue(stateDir), "archiveDir": JSONValue(archiveDir),
                "httpUsersFile": JSONValue(httpUsersFile), "httpCertificate": JSONValue(httpCertificate),
            ]
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "status's daemon")
            self.init(
                version: try f.string("version"), protocolVersion: try f.int("protocol"), pid: try f.int("pid"),
                uptime: try f.optionalDouble("uptime"), config: try f.optionalString("config"),
                socket: try f.optionalString("socket"), stateDir: try f.optionalString("stateDir"),
                archiveDir: try f.optionalString("archiveDir"), httpUsersFile: try f.optionalString("httpUsersFile"),
                httpCertificate: try f.optionalString("httpCertificate"))
        }
    }

    /// The JACK connection (nil: unknown while not connected). Required: `connected`.
    public struct Jack: ReplyObject {
        public var connected: Bool
        public var client: String?
        public var server: String?
        public var sampleRate: Int?
        public var bufferSize: Int?
        public var xruns: Int?
        public var mediaServicesAvailable: Bool?
        public var error: String?
        /// Which JACK implementation serves recd: "jackd" or "pipewire" (PipeWire's JACK, which
        /// never reports xruns). nil from a recd older than this key.
        public var implementation: String?
        /// JACK connections recd leaves alone because something keeps undoing recd's changes to
        /// them, as "A → B" (empty from a recd older than this key).
        public var churning: [String]
        /// How recd's JACK cycles ran since it connected; nil while not connected (and from a
        /// recd older than this key).
        public var cycle: CycleTimes?
        /// When the server's last process cycle ran (ISO 8601 UTC), while none has run for
        /// `stall_seconds` (a stopped or hung server that keeps its socket open); nil while
        /// cycles come (and from a recd older than this key).
        public var stalledSince: String?

        public init(
            connected: Bool, client: String?, server: String?, sampleRate: Int?, bufferSize: Int?, xruns: Int?,
            mediaServicesAvailable: Bool?, error: String?, implementation: String? = nil, churning: [String] = [],
            cycle: CycleTimes? = nil
        ) {
            self.connected = connected
            self.client = client
            self.server = server
            self.sampleRate = sampleRate
            self.bufferSize = bufferSize
            self.xruns = xruns
            self.mediaServicesAvailable = mediaServicesAvailable
            self.error = error
            self.implementation = implementation
            self.churning = churning
            self.cycle = cycle
        }

        public var json: JSONValue {
            [
                "connected": .bool(connected), "client": JSONValue(client), "server": JSONValue(server),
                "sampleRate": JSONValue(sampleRate), "bufferSize": JSONValue(bufferSize),
                "xruns": JSONValue(xruns),
                "mediaServicesAvailable": mediaServicesAvailable.map(JSONValue.bool) ?? .null,
                "error": JSONValue(error), "implementation": JSONValue(implementation),
                "churning": .array(churning.map { .string($0) }), "cycle": cycle?.json ?? .null,
                "stalledSince": JSONValue(stalledSince),
            ]
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "status's jack")
            self.init(
                connected: try f.bool("connected"), client: try f.optionalString("client"),
                server: try f.optionalString("server"), sampleRate: try f.optionalInt("sampleRate"),
                bufferSize: try f.optionalInt("bufferSize"), xruns: try f.optionalInt("xruns"),
                mediaServicesAvailable: try f.optionalBool("mediaServicesAvailable"),
                error: try f.optionalString("error"), implementation: try f.optionalString("implementation"),
                churning: try f.optionalStrings("churning"), cycle: try f.optionalObject("cycle"))
            stalledSince = try f.optionalString("stalledSince")
        }
    }

    /// How recd's JACK cycles ran since it connected (every key required: a histogram is whole or
    /// not at all): histograms of how late each cycle started (JACK's start of the cycle to recd's callback) and of how long recd's work in it
    /// took, in µs. A long duration is recd's own work; a long start delay is time before
    /// recd ran (the clients before it, the kernel's wake-up, a virtual machine's host).
    public struct CycleTimes: ReplyObject {
        /// Upper bounds of the buckets but the last (+Inf), in µs.
        public var boundsMicros: [Int]
        /// Cycles per bucket, not cumulative (one more than `boundsMicros`).
        public var startDelay: [Int]
        public var duration: [Int]
        public var maxStartDelayMicros: Int
        public var maxDurationMicros: Int
        /// Cycles whose work ended after the next cycle had started (JACK's deadline).
        public var late: Int
        /// Cycles whose work alone took longer than the period (late however early they started).
        public var overlong: Int
        public var cycles: Int
        public var startDelayMicrosTotal: Int
        public var durationMicrosTotal: Int

        public init(
            boundsMicros: [Int], startDelay: [Int], duration: [Int], maxStartDelayMicros: Int, maxDurationMicros: Int,
            late: Int, overlong: Int, cycles: Int, startDelayMicrosTotal: Int, durationMicrosTotal: Int
        ) {
            self.boundsMicros = boundsMicros
            self.startDelay = startDelay
            self.duration = duration
            self.maxStartDelayMicros = maxStartDelayMicros
            self.maxDurationMicros = maxDurationMicros
            self.late = late
            self.overlong = overlong
            self.cycles = cycles
            self.startDelayMicrosTotal = startDelayMicrosTotal
            self.durationMicrosTotal = durationMicrosTotal
        }

        public var json: JSONValue {
            func numbers(_ values: [Int]) -> JSONValue { .array(values.map { .number(Double($0)) }) }
            return [
                "boundsMicros": numbers(boundsMicros), "startDelay": numbers(startDelay), "duration": numbers(duration),
                "maxStartDelayMicros": .number(Double(maxStartDelayMicros)),
                "maxDurationMicros": .number(Double(maxDurationMicros)), "late": .number(Double(late)),
                "overlong": .number(Double(overlong)),
                "cycles": .number(Double(cycles)), "startDelayMicrosTotal": .number(Double(startDelayMicrosTotal)),
                "durationMicrosTotal": .number(Double(durationMicrosTotal)),
            ]
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "status's jack.cycle")
            func numbers(_ key: String) throws(ReplyDecodingError) -> [Int] {
                guard let items = try f.any(key).arrayValue, items.allSatisfy({ $0.intValue != nil }) else {
                    throw ReplyDecodingError("\"\(key)\" of status's jack.cycle must be a list of integers")
                }
                return items.compactMap(\.intValue)
            }
            let bounds = try numbers("boundsMicros")
            let startDelay = try numbers("startDelay")
            let duration = try numbers("duration")
            guard startDelay.count == bounds.count + 1, duration.count == bounds.count + 1 else {
                throw ReplyDecodingError("status's jack.cycle must have one bucket more than bounds")
            }
            self.init(
                boundsMicros: bounds, startDelay: startDelay, duration: duration,
                maxStartDelayMicros: try f.int("maxStartDelayMicros"),
                maxDurationMicros: try f.int("maxDurationMicros"),
                late: try f.int("late"), overlong: try f.int("overlong"), cycles: try f.int("cycles"),
                startDelayMicrosTotal: try f.int("startDelayMicrosTotal"),
                durationMicrosTotal: try f.int("durationMicrosTotal"))
        }
    }

    /// A sound card ALSA knows. Required: `index`, `id`.
    public struct Card: ReplyObject {
        public var index: Int
        public var id: String
        public var name: String?
        public var usb: Bool

        public init(index: Int, id: String, name: String?, usb: Bool) {
            self.index = index
            self.id = id
            self.name = name
            self.usb = usb
        }

        public var json: JSONValue {
            ["index": .number(Double(index)), "id": .string(id), "name": JSONValue(name), "usb": .bool(usb)]
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "a sound card")
            self.init(
                index: try f.int("index"), id: try f.string("id"), name: try f.optionalString("name"),
                usb: try f.flag("usb"))
        }
    }

    /// The archive directory and its free space. When recd cannot read the file system's
    /// figures, the object has `dir` only (the figures are absent together: a recd older than
    /// explicit nulls reads a `freeBytes` key as a number). Required: `dir`.
    public struct Archive: ReplyObject {
        public struct Space: Sendable, Equatable {
            public var freeBytes: Double
            public var freePercent: Double?
            /// Indexed segments; nil when the index is not open.
            public var segments: Int?

            public init(freeBytes: Double, freePercent: Double?, segments: Int?) {
                self.freeBytes = freeBytes
                self.freePercent = freePercent
                self.segments = segments
            }
        }

        public var dir: String
        public var space: Space?
        /// Chains that do not hold what recd signed: it chains nothing more into them.
        public var chainAlarms: [ChainAlarm]
        /// `.partial` files a crash (or a write error) left whose recovery has not succeeded yet.
        public var unrecovered: [UnrecoveredPartial]

        public init(
            dir: String, space: Space?, chainAlarms: [ChainAlarm] = [], unrecovered: [UnrecoveredPartial] = []
        ) {
            self.dir = dir
            self.space = space
            self.chainAlarms = chainAlarms
            self.unrecovered = unrecovered
        }

        public var json: JSONValue {
            var fields: [(String, JSONValue)] = [("dir", .string(dir))]
            if let space {
                fields += [
                    ("freeBytes", .number(space.freeBytes)), ("freePercent", JSONValue(space.freePercent)),
                    ("segments", JSONValue(space.segments)),
                ]
            }
            fields += [
                ("chainAlarms", .array(chainAlarms.map(\.json))), ("unrecovered", .array(unrecovered.map(\.json))),
            ]
            return .object(fields)
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "status's archive")
            self.dir = try f.string("dir")
            chainAlarms = try f.optionalList("chainAlarms")
            unrecovered = try f.optionalList("unrecovered")
            self.space = try f.optionalDouble("freeBytes").map { freeBytes throws(ReplyDecodingError) in
                Space(
                    freeBytes: freeBytes, freePercent: try f.optionalDouble("freePercent"),
                    segments: try f.optionalInt("segments"))
            }
        }
    }

    /// A chain that does not hold what recd signed (docs/archive-proof.md): recd appends
    /// nothing more to it and never signs it again; the stream records on, unchained, until the
    /// chain is restored or its day ends.
    public struct ChainAlarm: ReplyObject {
        /// The chain's path under the archive root, and whose it is.
        public var chain: String
        public var app: String
        public var stream: String
        /// When recd found it so (ISO 8601 UTC).
        public var since: String
        /// Which entry, what recd expected and what it found.
        public var detail: String
        /// Segments finished since that are not chained.
        public var segmentsUnchained: Int

        public init(chain: String, app: String, stream: String, since: String, detail: String, segmentsUnchained: Int) {
            self.chain = chain
            self.app = app
            self.stream = stream
            self.since = since
            self.detail = detail
            self.segmentsUnchained = segmentsUnchained
        }

        public var json: JSONValue {
            .object([
                ("chain", .string(chain)), ("app", .string(app)), ("stream", .string(stream)),
                ("since", .string(since)), ("detail", .string(detail)),
                ("segmentsUnchained", .number(Double(segmentsUnchained))),
            ])
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "a chain alarm")
            self.init(
                chain: try f.string("chain"), app: try f.string("app"), stream: try f.string("stream"),
                since: try f.string("since"), detail: try f.string("detail"),
                segmentsUnchained: try f.int("segmentsUnchained"))
        }
    }

    /// A `.partial` segment whose recovery failed: recd tries again when the cause is gone
    /// (`resumesWhen`); until then nothing proves it.
    public struct UnrecoveredPartial: ReplyObject {
        public var path: String
        /// When its recovery first failed (ISO 8601 UTC), and why it failed last.
        public var since: String
        public var error: String
        /// When recd tries again, in words.
        public var resumesWhen: String

        public init(path: String, since: String, error: String, resumesWhen: String) {
            self.path = path
            self.since = since
            self.error = error
            self.resumesWhen = resumesWhen
        }

        public var json: JSONValue {
            .object([
                ("path", .string(path)), ("since", .string(since)), ("error", .string(error)),
                ("resumesWhen", .string(resumesWhen)),
            ])
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "an unrecovered partial")
            self.init(
                path: try f.string("path"), since: try f.string("since"), error: try f.string("error"),
                resumesWhen: try f.string("resumesWhen"))
        }
    }

    /// Off-box replication (`[replicate] remote`): how many finished segments wait for their
    /// copy, and how the last attempts went. Absent when no remote is set. Required: `remote`,
    /// `backlog` (what it is for).
    public struct Replication: ReplyObject {
        /// The rclone destination.
        public var remote: String
        /// Finished segments not yet copied and checked (the one being copied included).
        public var backlog: Int
        /// When the last copy was checked, in seconds since 1970 (UTC), kept across restarts;
        /// nil: never.
        public var lastSuccess: Double?
        /// Why the last attempt failed; nil once a copy succeeds again.
        public var lastError: String?

        public init(remote: String, backlog: Int, lastSuccess: Double?, lastError: String?) {
            self.remote = remote
            self.backlog = backlog
            self.lastSuccess = lastSuccess
            self.lastError = lastError
        }

        public var json: JSONValue {
            [
                "remote": .string(remote), "backlog": .number(Double(backlog)),
                "lastSuccess": lastSuccess.map { .number($0) } ?? .null,
                "lastError": lastError.map { .string($0) } ?? .null,
            ]
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "status's replication")
            self.init(
                remote: try f.string("remote"), backlog: try f.int("backlog"),
                lastSuccess: try f.optionalDouble("lastSuccess"), lastError: try f.optionalString("lastError"))
        }
    }

    /// RFC 3161 time-stamps of the chains (`[evidence] tsa_url`): how many chain heads wait for a
    /// token and since when, how the last attempts went. Absent without a TSA. Required: `urls`,
    /// `backlog`.
    public struct TimeStamps: ReplyObject {
        /// The TSAs, in the order they are asked.
        public var urls: [String]
        /// Chains whose latest head has no token yet (the one being stamped included).
        public var backlog: Int
        /// How long the oldest unstamped chain advance has waited, in seconds; nil: none waits.
        public var oldestUnstampedSeconds: Double?
        /// When the last token was written (Unix seconds, this run); nil: none yet.
        public var lastSuccess: Double?
        /// Why the last attempt failed; nil once one succeeds again.
        public var lastError: String?
        /// Tokens written this run.
        public var stamps: Int
        /// `tsa_interval_seconds` and `tsa_alarm_minutes` (in seconds): what the backlog is held to.
        public var intervalSeconds: Double?
        public var alarmSeconds: Double?
        /// `tsa_ca_file`: the roots `recctl archive prove` checks the tokens against by default.
        public var caFile: String?

        public init(
            urls: [String], backlog: Int, oldestUnstampedSeconds: Double?, lastSuccess: Double?, lastError: String?,
            stamps: Int, intervalSeconds: Double?, alarmSeconds: Double?, caFile: String?
        ) {
            self.urls = urls
            self.backlog = backlog
            self.oldestUnstampedSeconds = oldestUnstampedSeconds
            self.lastSuccess = lastSuccess
            self.lastError = lastError
            self.stamps = stamps
            self.intervalSeconds = intervalSeconds
            self.alarmSeconds = alarmSeconds
            self.caFile = caFile
        }

        public var json: JSONValue {
            [
                "urls": JSONValue(urls), "backlog": .number(Double(backlog)),
                "oldestUnstampedSeconds": JSONValue(oldestUnstampedSeconds), "lastSuccess": JSONValue(lastSuccess),
                "lastError": JSONValue(lastError), "stamps": .number(Double(stamps)),
                "intervalSeconds": JSONValue(intervalSeconds), "alarmSeconds": JSONValue(alarmSeconds),
                "caFile": JSONValue(caFile),
            ]
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "status's timeStamps")
            self.init(
                urls: try f.strings("urls"), backlog: try f.int("backlog"),
                oldestUnstampedSeconds: try f.optionalDouble("oldestUnstampedSeconds"),
                lastSuccess: try f.optionalDouble("lastSuccess"), lastError: try f.optionalString("lastError"),
                stamps: try f.optionalInt("stamps") ?? 0, intervalSeconds: try f.optionalDouble("intervalSeconds"),
                alarmSeconds: try f.optionalDouble("alarmSeconds"), caFile: try f.optionalString("caFile"))
        }
    }

    /// How good the box's wall clock is (the kernel's view, adjtimex): whether something keeps
    /// it synchronised, and its estimated and maximum error; and who keeps it, as chrony or
    /// systemd-timesyncd said at their last asking (`source`, the segments' CLOCK_SOURCE: e.g.
    /// `chrony: 192.0.2.1, stratum 2, offset +0.000012 s`, `none`; `pending` until the first
    /// answer, `unknown` when recd cannot ask). Absent from an older recd. Required: `synchronized`.
    public struct Clock: ReplyObject {
        /// `source` before the first asking has an answer (the first seconds after recd starts).
        public static let sourcePending = "pending"
        /// `source` when recd cannot ask (no thread to ask on).
        public static let sourceUnknown = "unknown"

        public var synchronized: Bool
        public var estimatedErrorSeconds: Double?
        public var maximumErrorSeconds: Double?
        /// nil: a reply without it (read as unknown).
        public var source: String?

        public init(
            synchronized: Bool, estimatedErrorSeconds: Double?, maximumErrorSeconds: Double?, source: String?
        ) {
            self.synchronized = synchronized
            self.estimatedErrorSeconds = estimatedErrorSeconds
            self.maximumErrorSeconds = maximumErrorSeconds
            self.source = source
        }

        public var json: JSONValue {
            [
                "synchronized": .bool(synchronized), "estimatedErrorSeconds": JSONValue(estimatedErrorSeconds),
                "maximumErrorSeconds": JSONValue(maximumErrorSeconds), "source": JSONValue(source),
            ]
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "status's clock")
            self.init(
                synchronized: try f.bool("synchronized"),
                estimatedErrorSeconds: try f.optionalDouble("estimatedErrorSeconds"),
                maximumErrorSeconds: try f.optionalDouble("maximumErrorSeconds"), source: try f.optionalString("source")
            )
        }
    }

    public var daemon: Daemon
    public var jack: Jack
    /// The wall clock's synchronisation; nil when it could not be read (and from an older recd).
    public var clock: Clock?
    /// The most sessions `status` lists: past it the reply lists the active ones first, then
    /// the rest by app name, and `sessionCount` says how many there are (`session.list` pages
    /// through all of them).
    public static let maxListedSessions = 100

    /// At most `maxListedSessions` of the sessions.
    public var sessions: [SessionInfo]
    /// Sessions recd holds in all (`sessions` may list fewer).
    public var sessionCount: Int
    /// The apps whose sessions are active.
    public var active: [String]
    public var players: [PlayerInfo]
    public var recorders: [RecorderInfo]
    public var cards: [Card]
    public var archive: Archive
    /// Applications' JACK clients under sessions (`session.attach`).
    public var attachments: [AttachmentInfo]
    /// Off-box replication; nil without `[replicate] remote` (and from an older recd).
    public var replication: Replication?
    /// Time-stamps of the chains; nil without `[evidence] tsa_url` (and from an older recd).
    public var timeStamps: TimeStamps?
    /// Recorders that are not running and why (empty from an older recd).
    public var waiting: [WaitingRecorderInfo]
    /// The box's health, computed from everything above (nil from an older recd).
    public var health: HealthInfo?

    public init(
        daemon: Daemon, jack: Jack, sessions: [SessionInfo], active: [String], players: [PlayerInfo],
        recorders: [RecorderInfo], cards: [Card], archive: Archive, attachments: [AttachmentInfo] = [],
        replication: Replication? = nil, waiting: [WaitingRecorderInfo] = [], sessionCount: Int? = nil
    ) {
        self.waiting = waiting
        self.sessionCount = sessionCount ?? sessions.count
        self.replication = replication
        self.attachments = attachments
        self.daemon = daemon
        self.jack = jack
        self.sessions = sessions
        self.active = active
        self.players = players
        self.recorders = recorders
        self.cards = cards
        self.archive = archive
    }

    public var json: JSONValue {
        var pairs: [(String, JSONValue)] = [
            ("daemon", daemon.json), ("jack", jack.json), ("sessions", .array(sessions.map(\.json))),
            ("sessionCount", .number(Double(sessionCount))),
            ("active", JSONValue(active)), ("players", .array(players.map(\.json))),
            ("recorders", .array(recorders.map(\.json))), ("waiting", .array(waiting.map(\.json))),
            ("cards", .array(cards.map(\.json))),
            ("archive", archive.json), ("attachments", .array(attachments.map(\.json))),
        ]
        if let replication { pairs.append(("replication", replication.json)) }
        if let timeStamps { pairs.append(("timeStamps", timeStamps.json)) }
        if let clock { pairs.append(("clock", clock.json)) }
        if let health { pairs.append(("health", health.json)) }
        return .object(pairs)
    }

    /// Required: `daemon`, `jack`, `sessions`, `active`, `players`, `recorders`, `archive`.
    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "status's reply")
        self.init(
            daemon: try f.object("daemon"), jack: try f.object("jack"), sessions: try f.list("sessions"),
            active: try f.strings("active"), players: try f.list("players"), recorders: try f.list("recorders"),
            cards: try f.optionalList("cards"), archive: try f.object("archive"),
            attachments: try f.optionalList("attachments"), replication: try f.optionalObject("replication"),
            waiting: try f.optionalList("waiting"), sessionCount: try f.optionalInt("sessionCount"))
        clock = try f.optionalObject("clock")
        timeStamps = try f.optionalObject("timeStamps")
        health = try f.optionalObject("health")
    }
}

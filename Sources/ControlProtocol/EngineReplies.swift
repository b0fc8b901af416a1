// Typed replies about ports and audio: `routes`, `meter` and the `cue.*` monitoring object.

/// One configured port (`routes`'s `ports`). Required: `name`; the rest is nil (unknown), empty
/// or false when a reply lacks it.
public struct PortInfo: ReplyObject {
    public var name: String
    public var type: String?
    /// `input`, `output` or `duplex`.
    public var direction: String?
    public var channels: Int?
    public var available: Bool
    /// The JACK ports it stands for.
    public var jack: [String]
    /// recd's own JACK ports connected to it.
    public var recdPorts: [String]
    public var capabilities: [String]
    public var codec: String?
    public var sense: String?
    public var connectedOrder: Int?
    /// The JACK ports behind it now (patterns resolved) and where each one's audio comes from;
    /// empty while none exists (and from a recd older than this field).
    public var origins: [PortOriginInfo]

    public init(
        name: String, type: String?, direction: String?, channels: Int?, available: Bool, jack: [String],
        recdPorts: [String], capabilities: [String], codec: String?, sense: String?, connectedOrder: Int?,
        origins: [PortOriginInfo] = []
    ) {
        self.name = name
        self.type = type
        self.direction = direction
        self.channels = channels
        self.available = available
        self.jack = jack
        self.recdPorts = recdPorts
        self.capabilities = capabilities
        self.codec = codec
        self.sense = sense
        self.connectedOrder = connectedOrder
        self.origins = origins
    }

    public var json: JSONValue {
        [
            "name": .string(name), "type": JSONValue(type), "direction": JSONValue(direction),
            "channels": JSONValue(channels), "available": .bool(available), "jack": JSONValue(jack),
            "recdPorts": JSONValue(recdPorts), "capabilities": JSONValue(capabilities), "codec": JSONValue(codec),
            "sense": JSONValue(sense), "connectedOrder": JSONValue(connectedOrder),
            "origins": .array(origins.map(\.json)),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a port")
        self.init(
            name: try f.string("name"), type: try f.optionalString("type"),
            direction: try f.optionalString("direction"), channels: try f.optionalInt("channels"),
            available: try f.flag("available"), jack: try f.optionalStrings("jack"),
            recdPorts: try f.optionalStrings("recdPorts"), capabilities: try f.optionalStrings("capabilities"),
            codec: try f.optionalString("codec"), sense: try f.optionalString("sense"),
            connectedOrder: try f.optionalInt("connectedOrder"), origins: try f.optionalList("origins"))
    }
}

/// One JACK port behind a configured port and where its audio comes from (for an output port:
/// goes to), in `routes`: a client of the logger's own JACK graph, a netjack2 satellite, or an
/// RTP stream PipeWire receives. Required: `jack`, `origin`.
public struct PortOriginInfo: ReplyObject {
    /// The JACK port's full name.
    public var jack: String
    /// `local`, `netjack2` or `rtp`; a kind this client does not know is shown as it is.
    public var origin: String
    /// The JACK client it belongs to: the local client, the satellite's name (`jackd -d net -n
    /// NAME`), or the RTP stream's node.
    public var client: String?
    /// An RTP stream's session name (the SDP's `s=`); null for other kinds.
    public var session: String?
    /// An RTP stream's sender (the SDP origin's address); null when it announced none.
    public var address: String?

    public init(jack: String, origin: String, client: String?, session: String? = nil, address: String? = nil) {
        self.jack = jack
        self.origin = origin
        self.client = client
        self.session = session
        self.address = address
    }

    /// How a person reads it: `local`, `netjack2 peer NAME`, or `RTP stream NAME@ADDRESS`.
    public var text: String {
        switch origin {
        case "local": "local"
        case "rtp": "RTP stream \(session ?? client ?? "unknown")" + (address.map { "@\($0)" } ?? "")
        default: "\(origin) peer \(client ?? "unknown")"
        }
    }

    public var json: JSONValue {
        [
            "jack": .string(jack), "origin": .string(origin), "client": JSONValue(client),
            "session": JSONValue(session), "address": JSONValue(address),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a port's origin")
        self.init(
            jack: try f.string("jack"), origin: try f.string("origin"), client: try f.optionalString("client"),
            session: try f.optionalString("session"), address: try f.optionalString("address"))
    }
}

/// `routes`'s reply fields (at the top level of the reply): the ports and each session's route.
public struct RoutesInfo: ReplyObject {
    /// A session and its route.
    public struct SessionRoute: ReplyObject {
        public var app: String
        public var state: String
        public var route: RouteInfo

        public init(app: String, state: String, route: RouteInfo) {
            self.app = app
            self.state = state
            self.route = route
        }

        public var json: JSONValue { ["app": .string(app), "state": .string(state), "route": route.json] }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "a session's route")
            self.init(app: try f.string("app"), state: try f.string("state"), route: try f.object("route"))
        }
    }

    public var ports: [PortInfo]
    public var sessions: [SessionRoute]

    public init(ports: [PortInfo], sessions: [SessionRoute]) {
        self.ports = ports
        self.sessions = sessions
    }

    public var json: JSONValue { ["ports": .array(ports.map(\.json)), "sessions": .array(sessions.map(\.json))] }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "routes's reply")
        self.init(ports: try f.list("ports"), sessions: try f.list("sessions"))
    }
}

/// One channel's level (`meter`'s `meters`), in dBFS; -120 is the floor. Every key required: a
/// reading is its channel and its two levels.
public struct MeterInfo: ReplyObject {
    public var name: String
    public var group: String
    /// 1-based.
    public var channel: Int
    public var direction: String
    public var peakDB: Double
    public var rmsDB: Double

    public init(name: String, group: String, channel: Int, direction: String, peakDB: Double, rmsDB: Double) {
        self.name = name
        self.group = group
        self.channel = channel
        self.direction = direction
        self.peakDB = peakDB
        self.rmsDB = rmsDB
    }

    public var json: JSONValue {
        [
            "name": .string(name), "group": .string(group), "channel": .number(Double(channel)),
            "direction": .string(direction), "peakDB": .number(peakDB), "rmsDB": .number(rmsDB),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a meter")
        self.init(
            name: try f.string("name"), group: try f.string("group"), channel: try f.int("channel"),
            direction: try f.string("direction"), peakDB: try f.double("peakDB"), rmsDB: try f.double("rmsDB"))
    }
}

/// One recording stream's live loudness (`meter`'s `recordings`), EBU R128, measured by its
/// archiver from the samples it writes; null while the segment holds less than the window
/// (400 ms, 3 s) or for silence. Required: `app`, `stream`.
public struct RecordingLoudnessInfo: ReplyObject {
    public var app: String
    public var stream: String
    public var momentaryLufs: Double?
    public var shortTermLufs: Double?

    public init(app: String, stream: String, momentaryLufs: Double?, shortTermLufs: Double?) {
        self.app = app
        self.stream = stream
        self.momentaryLufs = momentaryLufs
        self.shortTermLufs = shortTermLufs
    }

    public var json: JSONValue {
        [
            "app": .string(app), "stream": .string(stream),
            "momentaryLufs": momentaryLufs.map(JSONValue.number) ?? .null,
            "shortTermLufs": shortTermLufs.map(JSONValue.number) ?? .null,
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a recording's loudness")
        self.init(
            app: try f.string("app"), stream: try f.string("stream"),
            momentaryLufs: try f.optionalDouble("momentaryLufs"), shortTermLufs: try f.optionalDouble("shortTermLufs"))
    }
}

/// `meter`'s reply fields (at the top level of the reply). Required: `meters`.
public struct MetersInfo: ReplyObject {
    public var meters: [MeterInfo]
    /// How long the readings were measured over, in milliseconds.
    public var windowMs: Double?
    /// The loudness of each recording stream (of the app asked about, or all).
    public var recordings: [RecordingLoudnessInfo]

    public init(meters: [MeterInfo], windowMs: Double?, recordings: [RecordingLoudnessInfo] = []) {
        self.meters = meters
        self.windowMs = windowMs
        self.recordings = recordings
    }

    public var json: JSONValue {
        [
            "meters": .array(meters.map(\.json)), "windowMs": JSONValue(windowMs),
            "recordings": .array(recordings.map(\.json)),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "meter's reply")
        self.init(
            meters: try f.list("meters"), windowMs: try f.optionalDouble("windowMs"),
            recordings: try f.optionalList("recordings"))
    }
}

/// The main and cue buses (`cue.*`'s `monitoring`). Required: `mix`, `split`, `sources` (the
/// state `cue` sets); `app`, `main`, `cue` are null for nobody and none.
public struct MonitoringInfo: ReplyObject {
    /// What one bus source feeds. Every key required (what `cue assign` set).
    public struct Source: ReplyObject {
        public var name: String
        /// `input` or `player`.
        public var kind: String
        /// `main`, `cue` or `both`.
        public var bus: String
        public var gainDB: Double

        public init(name: String, kind: String, bus: String, gainDB: Double) {
            self.name = name
            self.kind = kind
            self.bus = bus
            self.gainDB = gainDB
        }

        public var json: JSONValue {
            ["name": .string(name), "kind": .string(kind), "bus": .string(bus), "gainDB": .number(gainDB)]
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "a monitoring source")
            self.init(
                name: try f.string("name"), kind: try f.string("kind"), bus: try f.string("bus"),
                gainDB: try f.double("gainDB"))
        }
    }

    /// The app that owns the buses (nil: nobody).
    public var app: String?
    public var main: String?
    public var cue: String?
    /// 0 = cue only … 1 = main only.
    public var mix: Double
    public var split: Bool
    public var sources: [Source]

    public init(app: String?, main: String?, cue: String?, mix: Double, split: Bool, sources: [Source]) {
        self.app = app
        self.main = main
        self.cue = cue
        self.mix = mix
        self.split = split
        self.sources = sources
    }

    public var json: JSONValue {
        [
            "app": JSONValue(app), "main": JSONValue(main), "cue": JSONValue(cue), "mix": .number(mix),
            "split": .bool(split), "sources": .array(sources.map(\.json)),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "monitoring")
        self.init(
            app: try f.optionalString("app"), main: try f.optionalString("main"), cue: try f.optionalString("cue"),
            mix: try f.double("mix"), split: try f.bool("split"), sources: try f.list("sources"))
    }
}

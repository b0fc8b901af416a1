// Typed reply objects: recd builds them and encodes `json` (version-2 keys; `WireKeys` renames
// for version-1 clients when the line is sent), recctl decodes them with `init(json:)`.

/// `hello`'s reply fields (at the top level of the reply).
public struct HelloInfo: ReplyObject {
    public var protocolVersion: Int
    /// recd's release (optional: shown as unknown when missing).
    public var version: String?
    public var uid: Int
    public var admin: Bool

    public init(protocolVersion: Int, version: String?, uid: Int, admin: Bool) {
        self.protocolVersion = protocolVersion
        self.version = version
        self.uid = uid
        self.admin = admin
    }

    public var json: JSONValue {
        [
            "protocol": .number(Double(protocolVersion)), "version": JSONValue(version),
            "uid": .number(Double(uid)), "admin": .bool(admin),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "hello's reply")
        self.init(
            protocolVersion: try f.int("protocol"), version: try f.optionalString("version"), uid: try f.int("uid"),
            admin: try f.bool("admin"))
    }
}

/// A player (`play`, `pause`, `stop`, `status`). Required: `app`, `stream`, `state`; the rest
/// is nil (unknown) when a reply lacks it.
public struct PlayerInfo: ReplyObject {
    public var app: String
    public var stream: String
    public var file: String?
    public var port: String?
    /// `playing` or `paused`.
    public var state: String
    public var pausedBy: String?
    public var channels: Int?
    public var framesPlayed: Int?
    public var underruns: Int?

    public init(
        app: String, stream: String, file: String?, port: String?, state: String, pausedBy: String?, channels: Int?,
        framesPlayed: Int?, underruns: Int?
    ) {
        self.app = app
        self.stream = stream
        self.file = file
        self.port = port
        self.state = state
        self.pausedBy = pausedBy
        self.channels = channels
        self.framesPlayed = framesPlayed
        self.underruns = underruns
    }

    public var json: JSONValue {
        [
            "app": .string(app), "stream": .string(stream), "file": JSONValue(file), "port": JSONValue(port),
            "state": .string(state), "pausedBy": JSONValue(pausedBy), "channels": JSONValue(channels),
            "framesPlayed": JSONValue(framesPlayed), "underruns": JSONValue(underruns),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a player")
        self.init(
            app: try f.string("app"), stream: try f.string("stream"), file: try f.optionalString("file"),
            port: try f.optionalString("port"), state: try f.string("state"),
            pausedBy: try f.optionalString("pausedBy"), channels: try f.optionalInt("channels"),
            framesPlayed: try f.optionalInt("framesPlayed"), underruns: try f.optionalInt("underruns"))
    }
}

/// A recorder (`record.start`, `record.stop`, `status`). Required: `app`, `stream`; the rest is
/// nil (unknown), empty or false when a reply lacks it.
public struct RecorderInfo: ReplyObject {
    public var app: String
    public var stream: String
    public var port: String?
    public var bandwidth: String?
    public var sampleRate: Int?
    /// The files it is writing.
    public var files: [String]
    /// Seconds since it started (whole seconds).
    public var seconds: Double?
    public var segments: Int?
    public var gaps: Int?
    public var overruns: Int?
    public var droppedFrames: Int?
    public var zeroed: Bool
    /// When its input went silent (ISO 8601), while it is silent (the silence
    /// detection); nil while there is sound or detection is off.
    public var silentSince: String?
    /// When its source delivered its last frame (ISO 8601), while none have come for
    /// `stall_seconds` (the recorder is `stalled`); nil while frames flow.
    public var stalledSince: String?

    public init(
        app: String, stream: String, port: String?, bandwidth: String?, sampleRate: Int?, files: [String],
        seconds: Double?, segments: Int?, gaps: Int?, overruns: Int?, droppedFrames: Int?, zeroed: Bool,
        silentSince: String? = nil, stalledSince: String? = nil
    ) {
        self.silentSince = silentSince
        self.stalledSince = stalledSince
        self.app = app
        self.stream = stream
        self.port = port
        self.bandwidth = bandwidth
        self.sampleRate = sampleRate
        self.files = files
        self.seconds = seconds
        self.segments = segments
        self.gaps = gaps
        self.overruns = overruns
        self.droppedFrames = droppedFrames
        self.zeroed = zeroed
    }

    public var json: JSONValue {
        [
            "app": .string(app), "stream": .string(stream), "port": JSONValue(port), "bandwidth": JSONValue(bandwidth),
            "sampleRate": JSONValue(sampleRate), "files": JSONValue(files), "seconds": JSONValue(seconds),
            "segments": JSONValue(segments), "gaps": JSONValue(gaps), "overruns": JSONValue(overruns),
            "droppedFrames": JSONValue(droppedFrames), "zeroed": .bool(zeroed), "silentSince": JSONValue(silentSince),
            "stalledSince": JSONValue(stalledSince),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a recorder")
        self.init(
            app: try f.string("app"), stream: try f.string("stream"), port: try f.optionalString("port"),
            bandwidth: try f.optionalString("bandwidth"), sampleRate: try f.optionalInt("sampleRate"),
            files: try f.optionalStrings("files"), seconds: try f.optionalDouble("seconds"),
            segments: try f.optionalInt("segments"), gaps: try f.optionalInt("gaps"),
            overruns: try f.optionalInt("overruns"), droppedFrames: try f.optionalInt("droppedFrames"),
            zeroed: try f.flag("zeroed"),
            silentSince: try f.optionalString("silentSince"), stalledSince: try f.optionalString("stalledSince"))
    }
}

/// A recorder that is not running and why (`status`'s `waiting`): one stopped by a fault that
/// starts again by itself when the cause goes (a full disk, a lost JACK server, a vanished
/// input), one an interruption paused, and every declared recorder that is not recording.
/// Required: `app`, `stream`, `reason`.
public struct WaitingRecorderInfo: ReplyObject {
    public var app: String
    public var stream: String
    public var port: String?
    /// Why: `diskFull`, `mediaServicesLost`, `inputGone`, `interruption`, `stop` (a declared
    /// recorder stopped by `record.stop`), `notStarted` (a declared one that could not start).
    public var reason: String
    /// When it stopped (ISO 8601, UTC).
    public var since: String?
    /// Declared in the config (`[session APP] record = ...`).
    public var declared: Bool
    /// What brings it back, in words ("512 MiB are free in /var/lib/recd (3 MiB now)"); nil
    /// when only a request does.
    public var resumesWhen: String?
    /// For `diskFull`: the free bytes it waits for.
    public var resumeFreeBytes: Double?
    /// Why it could not start, or what starts it.
    public var detail: String?
    /// For `interruption`: who interrupted (an app, or a muted port).
    public var by: String?

    public init(
        app: String, stream: String, port: String?, reason: String, since: String?, declared: Bool,
        resumesWhen: String?, resumeFreeBytes: Double? = nil, detail: String? = nil, by: String? = nil
    ) {
        self.by = by
        self.app = app
        self.stream = stream
        self.port = port
        self.reason = reason
        self.since = since
        self.declared = declared
        self.resumesWhen = resumesWhen
        self.resumeFreeBytes = resumeFreeBytes
        self.detail = detail
    }

    public var json: JSONValue {
        [
            "app": .string(app), "stream": .string(stream), "port": JSONValue(port), "reason": .string(reason),
            "since": JSONValue(since), "declared": .bool(declared), "resumesWhen": JSONValue(resumesWhen),
            "resumeFreeBytes": resumeFreeBytes.map { .number($0) } ?? .null, "detail": JSONValue(detail),
            "by": JSONValue(by),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a waiting recorder")
        self.init(
            app: try f.string("app"), stream: try f.string("stream"), port: try f.optionalString("port"),
            reason: try f.string("reason"), since: try f.optionalString("since"), declared: try f.flag("declared"),
            resumesWhen: try f.optionalString("resumesWhen"), resumeFreeBytes: try f.optionalDouble("resumeFreeBytes"),
            detail: try f.optionalString("detail"), by: try f.optionalString("by"))
    }
}

/// One archived segment (`archive.list`). Required: `path`, `app`, `stream`, `start`; the rest
/// is nil (unknown) or false when a reply lacks it.
public struct SegmentInfo: ReplyObject {
    public var path: String
    public var app: String
    public var stream: String
    public var group: Int?
    public var segment: Int?
    /// ISO 8601, UTC.
    public var start: String
    public var seconds: Double?
    public var frames: Int?
    public var sampleRate: Int?
    public var channels: Int?
    public var bits: Int?
    public var endReason: String?
    public var gaps: Int?
    public var recovered: Bool
    public var bytes: Int?
    /// EBU R128 integrated loudness (LUFS), loudness range (LU), true peak (dBTP); nil for
    /// silence or a segment written before recd measured loudness (until `archive reindex`).
    public var loudnessLufs: Double?
    public var loudnessRangeLu: Double?
    public var truePeakDbtp: Double?
    /// CLOCK_DRIFT_PPM: how fast the segment's sample clock ran against the system clock;
    /// nil when not measured (a short segment, or one older than the key).
    public var clockDriftPpm: Double?
    /// `finished`, or `open`: still being written; `path` is then its `.partial`, and
    /// `frames`, `seconds` and `bytes` go up to its last complete FLAC frame.
    public var state: String?

    public init(
        path: String, app: String, stream: String, group: Int?, segment: Int?, start: String, seconds: Double?,
        frames: Int?, sampleRate: Int?, channels: Int?, bits: Int?, endReason: String?, gaps: Int?, recovered: Bool,
        bytes: Int?, loudnessLufs: Double? = nil, loudnessRangeLu: Double? = nil, truePeakDbtp: Double? = nil,
        clockDriftPpm: Double? = nil, state: String? = "finished"
    ) {
        self.state = state
        self.clockDriftPpm = clockDriftPpm
        self.loudnessLufs = loudnessLufs
        self.loudnessRangeLu = loudnessRangeLu
        self.truePeakDbtp = truePeakDbtp
        self.path = path
        self.app = app
        self.stream = stream
        self.group = group
        self.segment = segment
        self.start = start
        self.seconds = seconds
        self.frames = frames
        self.sampleRate = sampleRate
        self.channels = channels
        self.bits = bits
        self.endReason = endReason
        self.gaps = gaps
        self.recovered = recovered
        self.bytes = bytes
    }

    public var json: JSONValue {
        [
            "path": .string(path), "app": .string(app), "stream": .string(stream), "group": JSONValue(group),
            "segment": JSONValue(segment), "start": .string(start), "seconds": JSONValue(seconds),
            "frames": JSONValue(frames), "sampleRate": JSONValue(sampleRate), "channels": JSONValue(channels),
            "bits": JSONValue(bits), "endReason": JSONValue(endReason), "gaps": JSONValue(gaps),
            "recovered": .bool(recovered), "bytes": JSONValue(bytes),
            "loudnessLufs": loudnessLufs.map(JSONValue.number) ?? .null,
            "loudnessRangeLu": loudnessRangeLu.map(JSONValue.number) ?? .null,
            "truePeakDbtp": truePeakDbtp.map(JSONValue.number) ?? .null,
            "clockDriftPpm": clockDriftPpm.map(JSONValue.number) ?? .null, "state": JSONValue(state),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a segment")
        self.init(
            path: try f.string("path"), app: try f.string("app"), stream: try f.string("stream"),
            group: try f.optionalInt("group"), segment: try f.optionalInt("segment"), start: try f.string("start"),
            seconds: try f.optionalDouble("seconds"), frames: try f.optionalInt("frames"),
            sampleRate: try f.optionalInt("sampleRate"), channels: try f.optionalInt("channels"),
            bits: try f.optionalInt("bits"), endReason: try f.optionalString("endReason"),
            gaps: try f.optionalInt("gaps"), recovered: try f.flag("recovered"), bytes: try f.optionalInt("bytes"),
            loudnessLufs: try f.optionalDouble("loudnessLufs"),
            loudnessRangeLu: try f.optionalDouble("loudnessRangeLu"),
            truePeakDbtp: try f.optionalDouble("truePeakDbtp"), clockDriftPpm: try f.optionalDouble("clockDriftPpm"),
            state: try f.optionalString("state"))
    }
}

/// One verified file (`archive.verify`'s `results`). Required: `path`, `ok`.
public struct VerifyResultInfo: ReplyObject {
    public var path: String
    public var ok: Bool
    public var outcome: String?
    public var frames: Int?

    public init(path: String, ok: Bool, outcome: String?, frames: Int?) {
        self.path = path
        self.ok = ok
        self.outcome = outcome
        self.frames = frames
    }

    public var json: JSONValue {
        ["path": .string(path), "ok": .bool(ok), "outcome": JSONValue(outcome), "frames": JSONValue(frames)]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a verify result")
        self.init(
            path: try f.string("path"), ok: try f.bool("ok"), outcome: try f.optionalString("outcome"),
            frames: try f.optionalInt("frames"))
    }
}

/// `archive.verify`'s reply fields (at the top level of the reply).
public struct VerifyInfo: ReplyObject {
    public var results: [VerifyResultInfo]
    public var allOK: Bool

    public init(results: [VerifyResultInfo]) {
        self.results = results
        self.allOK = results.allSatisfy(\.ok)
    }

    public var json: JSONValue { ["results": .array(results.map(\.json)), "allOK": .bool(allOK)] }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "archive.verify's reply")
        self.results = try f.list("results")
        self.allOK = try f.bool("allOK")
    }
}

/// An app's record permission (`permission.*`; `permission.list`'s rows).
public struct PermissionInfo: ReplyObject {
    public var app: String
    /// `undetermined`, `granted` or `denied`.
    public var state: String

    public init(app: String, state: String) {
        self.app = app
        self.state = state
    }

    public var json: JSONValue { ["app": .string(app), "state": .string(state)] }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a permission")
        self.init(app: try f.string("app"), state: try f.string("state"))
    }
}

/// `mute`'s reply fields (at the top level of the reply).
public struct MuteInfo: ReplyObject {
    public var app: String
    public var muted: Bool

    public init(app: String, muted: Bool) {
        self.app = app
        self.muted = muted
    }

    public var json: JSONValue { ["app": .string(app), "muted": .bool(muted)] }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "mute's reply")
        self.init(app: try f.string("app"), muted: try f.bool("muted"))
    }
}

/// An application's JACK client attached to a session (`session.attach`'s reply `attachment`,
/// and `status`'s `attachments`): the app's ports and recd's ports they are connected to.
/// Required: `app`, `client`.
public struct AttachmentInfo: ReplyObject {
    public var app: String
    public var client: String
    /// The app's output ports whose audio the session plays.
    public var playPorts: [String]
    /// The app's input ports that receive the session's input route.
    public var capturePorts: [String]
    /// recd's JACK input ports the play ports are connected to, in the same order.
    public var recdPlayPorts: [String]
    /// recd's JACK output ports connected to the capture ports, in the same order.
    public var recdCapturePorts: [String]
    /// What is done to the capture ports' samples now: `voice` or `echoCancellation` (the
    /// session's `CaptureProcessing`), null when they carry the input as it came.
    public var processing: String?
    /// While processed: the delay the capture has beyond the raw input's (the processing's
    /// latency and one period of slack), seconds; null until the processor is made.
    public var processingLatency: Double?
    /// While processed: periods the app got silence because the processing was late.
    public var underruns: Int?

    public init(
        app: String, client: String, playPorts: [String], capturePorts: [String], recdPlayPorts: [String],
        recdCapturePorts: [String], processing: String? = nil, processingLatency: Double? = nil,
        underruns: Int? = nil
    ) {
        self.app = app
        self.client = client
        self.playPorts = playPorts
        self.capturePorts = capturePorts
        self.recdPlayPorts = recdPlayPorts
        self.recdCapturePorts = recdCapturePorts
        self.processing = processing
        self.processingLatency = processingLatency
        self.underruns = underruns
    }

    public var json: JSONValue {
        [
            "app": .string(app), "client": .string(client), "playPorts": JSONValue(playPorts),
            "capturePorts": JSONValue(capturePorts), "recdPlayPorts": JSONValue(recdPlayPorts),
            "recdCapturePorts": JSONValue(recdCapturePorts), "processing": JSONValue(processing),
            "processingLatency": JSONValue(processingLatency), "underruns": JSONValue(underruns),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "an attachment")
        self.init(
            app: try f.string("app"), client: try f.string("client"), playPorts: try f.optionalStrings("playPorts"),
            capturePorts: try f.optionalStrings("capturePorts"),
            recdPlayPorts: try f.optionalStrings("recdPlayPorts"),
            recdCapturePorts: try f.optionalStrings("recdCapturePorts"), processing: try f.optionalString("processing"),
            processingLatency: try f.optionalDouble("processingLatency"), underruns: try f.optionalInt("underruns"))
    }
}

/// `archive.reindex`'s reply fields (at the top level of the reply).
public struct ReindexInfo: ReplyObject {
    public var indexed: Int
    /// Files that could not be indexed.
    public var skipped: [String]

    public init(indexed: Int, skipped: [String]) {
        self.indexed = indexed
        self.skipped = skipped
    }

    public var json: JSONValue { ["indexed": .number(Double(indexed)), "skipped": JSONValue(skipped)] }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "archive.reindex's reply")
        self.init(indexed: try f.int("indexed"), skipped: try f.optionalStrings("skipped"))
    }
}

// `archive.export`: one stream's audio between two times, written by recd into the file the
// client opened and passed with the request (SCM_RIGHTS).

/// `archive.export`'s arguments.
public struct ExportRequest: Sendable, Equatable {
    public var app: String
    /// nil: the app's only stream (recd refuses when it has several).
    public var stream: String?
    /// ISO 8601 with a zone (`Z` or `±HH:MM`).
    public var from: String
    public var to: String
    /// `flac` or `wav`.
    public var format: String
    /// The output's display name (an absolute path, or `-` for standard output); recd writes
    /// the descriptor passed with the request, never this path.
    public var file: String
    /// Also return the clip's proof (the chain entries it was cut from, signed; the reply's
    /// `proof`); needs a regular file passed read-write.
    public var proof: Bool
    /// Also C2PA Content Credentials, signed with the archive key's certificate: in a WAV clip
    /// (its `C2PA` chunk), for a FLAC clip as a sidecar manifest store (the reply's
    /// `credentials`); needs a regular file passed read-write.
    public var credentials: Bool

    public init(
        app: String, stream: String? = nil, from: String, to: String, format: String, file: String, proof: Bool = false,
        credentials: Bool = false
    ) {
        self.proof = proof
        self.credentials = credentials
        self.app = app
        self.stream = stream
        self.from = from
        self.to = to
        self.format = format
        self.file = file
    }
}

/// `archive.export`'s reply fields (at the top level of the reply). Required: `file`, `start`,
/// `end`, `frames` (what was written); the rest is nil (unknown) or empty when a reply lacks it.
public struct ExportInfo: ReplyObject {
    public var file: String
    public var format: String?
    public var app: String?
    public var stream: String?
    /// The clip's first and last instants, as recd read `from` and `to` (UTC).
    public var start: String
    public var end: String
    public var frames: Int
    public var sampleRate: Int?
    public var channels: Int?
    /// Silent stretches (recorded gaps, times no segment covers): `pos+len` in clip frames,
    /// as the clip's GAPS tag; empty when there are none.
    public var gaps: String?
    /// The source segments' paths, in time order (a segment still being written by its
    /// `.partial` path).
    public var segments: [String]
    /// The `to` asked for, when the clip ends earlier because the recording has written no
    /// more yet (`end` is then the end of the open segment's last complete FLAC frame); nil
    /// when the clip ends where asked.
    public var requestedEnd: String?
    /// With `proof` asked: the clip proof's text (docs/archive-proof.md), for the client to
    /// write beside the clip (`FILE.proof`); else nil.
    public var proof: String?
    /// With `credentials` asked of a FLAC clip: its C2PA manifest store (base64), for the client
    /// to write beside the clip (`FILE.c2pa`); nil for a WAV clip, which carries it inside.
    public var credentials: String?

    public init(
        file: String, format: String?, app: String?, stream: String?, start: String, end: String, frames: Int,
        sampleRate: Int?, channels: Int?, gaps: String?, segments: [String], requestedEnd: String? = nil,
        proof: String? = nil, credentials: String? = nil
    ) {
        self.proof = proof
        self.credentials = credentials
        self.requestedEnd = requestedEnd
        self.file = file
        self.format = format
        self.app = app
        self.stream = stream
        self.start = start
        self.end = end
        self.frames = frames
        self.sampleRate = sampleRate
        self.channels = channels
        self.gaps = gaps
        self.segments = segments
    }

    public var json: JSONValue {
        [
            "file": .string(file), "format": JSONValue(format), "app": JSONValue(app), "stream": JSONValue(stream),
            "start": .string(start), "end": .string(end), "frames": .number(Double(frames)),
            "sampleRate": JSONValue(sampleRate), "channels": JSONValue(channels), "gaps": JSONValue(gaps),
            "segments": .array(segments.map { .string($0) }), "requestedEnd": JSONValue(requestedEnd),
            "proof": JSONValue(proof), "credentials": JSONValue(credentials),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "archive.export's reply")
        self.init(
            file: try f.string("file"), format: try f.optionalString("format"), app: try f.optionalString("app"),
            stream: try f.optionalString("stream"), start: try f.string("start"), end: try f.string("end"),
            frames: try f.int("frames"), sampleRate: try f.optionalInt("sampleRate"),
            channels: try f.optionalInt("channels"), gaps: try f.optionalString("gaps"),
            segments: try f.optionalStrings("segments"),
            requestedEnd: try f.optionalString("requestedEnd"), proof: try f.optionalString("proof"),
            credentials: try f.optionalString("credentials"))
    }
}

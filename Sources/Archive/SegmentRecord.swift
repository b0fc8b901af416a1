// What the archive knows about one finished segment: the index's row, and what `reindex`
// reads back from the file alone.

import Codec
import Platform

/// One finished segment file. A plain value: any thread.
public struct SegmentRecord: Hashable, Sendable {
    public var path: String
    public var app: String
    public var stream: String
    /// 0 for a recorder's only file; 1... for the channel groups of a recorder wider than 8.
    public var group: Int
    /// The SEGMENT number within its recording (1, 2, ...); 0 when unknown.
    public var segment: Int
    /// START_TIME (microsecond resolution, as stored).
    public var startTime: UTCTime
    /// Frames (samples per channel) in the file.
    public var frames: Int
    public var sampleRate: Int
    public var channels: Int
    public var bitsPerSample: Int
    public var endReason: EndReason?
    public var gaps: [SegmentGap]
    public var recovered: Bool
    /// File size in bytes.
    public var bytes: Int64
    /// LOUDNESS_LUFS, LOUDNESS_RANGE_LU, TRUE_PEAK_DBTP (nil where the file has none).
    public var loudness: LoudnessSummary
    /// CLOCK_DRIFT_PPM (nil where the file has none).
    public var clockDriftPPM: Double?
    /// How good the wall clock was at the segment's start and end (the CLOCK_SYNCHRONIZED...
    /// comments; nil where the file has none). Kept as one value (`clocks`).
    public var clockAtStart: ClockSynchronization? {
        get { clocks.start }
        set { clocks.start = newValue }
    }
    public var clockAtEnd: ClockSynchronization? {
        get { clocks.end }
        set { clocks.end = newValue }
    }
    private var clocks = Clocks()
    private struct Clocks: Hashable, Sendable {
        var start: ClockSynchronization?
        var end: ClockSynchronization?
    }
    /// Who kept the clock when the segment started (CLOCK_SOURCE; nil where the file has none).
    public var clockSource: String?
    /// NETWORK_LOSS: where the files hold a network receiver's zeros because no packets came
    /// (positions as in `gaps`: frames of the file); empty where the file has none.
    public var networkLosses: [SegmentGap] = []
    /// The level overview measured while it was written (`LevelOverview` codes, two per
    /// second): the index's `level_overview` row, not a tag, so nil when read from the file.
    /// Empty when none; not part of the segment's identity (`LevelOverviewCodes`).
    public var levelOverview = LevelOverviewCodes()

    public init(
        path: String, app: String, stream: String, group: Int, segment: Int, startTime: UTCTime, frames: Int,
        sampleRate: Int, channels: Int, bitsPerSample: Int, endReason: EndReason?, gaps: [SegmentGap],
        recovered: Bool, bytes: Int64,
        loudness: LoudnessSummary = LoudnessSummary(integratedLUFS: nil, rangeLU: nil, truePeakDBTP: nil),
        clockDriftPPM: Double? = nil, clockAtStart: ClockSynchronization? = nil,
        clockAtEnd: ClockSynchronization? = nil, clockSource: String? = nil, networkLosses: [SegmentGap] = []
    ) {
        self.networkLosses = networkLosses
        self.clockSource = clockSource
        clocks = Clocks(start: clockAtStart, end: clockAtEnd)
        self.loudness = loudness
        self.clockDriftPPM = clockDriftPPM
        self.path = path
        self.app = app
        self.stream = stream
        self.group = group
        self.segment = segment
        self.startTime = startTime
        self.frames = frames
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = bitsPerSample
        self.endReason = endReason
        self.gaps = gaps
        self.recovered = recovered
        self.bytes = bytes
    }

    /// The time just after the last sample (gaps inside the file not counted).
    public var endTime: UTCTime {
        startTime.advanced(byFrames: frames + gaps.reduce(0) { $0 + $1.length }, sampleRate: max(sampleRate, 1))
    }

    /// Seconds of audio in the file.
    public var duration: Double { sampleRate > 0 ? Double(frames) / Double(sampleRate) : 0 }

    /// Reads the record from the file alone: STREAMINFO and the Vorbis comments recd wrote
    /// (libFLAC's metadata API; no audio is decoded). A file without START_TIME falls back to
    /// the time in its name.
    public static func read(path: String) throws(ArchiveError) -> SegmentRecord {
        let info: FLACStreamInfo
        do {
            info = try FLACInspector.streamInfo(path: path)
        } catch {
            throw .unreadableFile(path: path, reason: "no readable STREAMINFO")
        }
        let comments = ((try? FLACInspector.commentEntries(path: path)) ?? []).compactMap(VorbisComment.init(entry:))
        guard let bytes = FileSystem.size(of: path) else {
            throw .unreadableFile(path: path, reason: "cannot stat it")
        }
        let record = SegmentRecord(path: path, streamInfo: info, comments: comments, bytes: bytes)
        let startTag = comments.last { $0.name.uppercased() == CommentName.startTime }?.value
        guard record.isPlausible, startTag.map({ UTCTime(iso8601: $0) != nil }) ?? true else {
            throw .unreadableFile(path: path, reason: "its STREAMINFO or tags hold numbers no segment recd wrote has")
        }
        return record
    }

    init(path: String, streamInfo info: FLACStreamInfo, comments: [VorbisComment], bytes: Int64) {
        func value(_ name: String) -> String? {
            comments.last { $0.name.uppercased() == name }?.value
        }
        let start =
            value(CommentName.startTime).flatMap(UTCTime.init(iso8601:))
            ?? ArchiveLayout.startTime(fromFileName: FileSystem.fileName(of: path))
            ?? UTCTime(nanosecondsSinceEpoch: 0)
        self.init(
            path: path, app: value(CommentName.app) ?? "", stream: value(CommentName.stream) ?? "",
            group: value(CommentName.group).flatMap { Int($0) } ?? 0,
            segment: value(CommentName.segment).flatMap { Int($0) } ?? 0, startTime: start,
            frames: info.totalSamples, sampleRate: info.sampleRate, channels: info.channels,
            bitsPerSample: info.bitsPerSample, endReason: value(CommentName.endReason).map(EndReason.init(rawValue:)),
            gaps: value(CommentName.gaps).flatMap { SegmentGap.parse(commentValue: $0) } ?? [],
            recovered: value(CommentName.recovered)?.lowercased() == "yes", bytes: bytes,
            loudness: LoudnessSummary(
                integratedLUFS: value(CommentName.loudness).flatMap { Double($0) },
                rangeLU: value(CommentName.loudnessRange).flatMap { Double($0) },
                truePeakDBTP: value(CommentName.truePeak).flatMap { Double($0) }),
            clockDriftPPM: value(CommentName.clockDriftPPM).flatMap { Double($0) },
            clockAtStart: CommentName.clock(atEnd: false, value), clockAtEnd: CommentName.clock(atEnd: true, value),
            clockSource: value(CommentName.clockSource),
            networkLosses: value(CommentName.networkLoss).flatMap { SegmentGap.parse(commentValue: $0) } ?? [])
    }
}

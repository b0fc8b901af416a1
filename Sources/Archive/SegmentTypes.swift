// Values that describe a segment: its Vorbis comments, why it ended, its gaps, its format.

import Codec
import Platform

/// One Vorbis comment (`NAME=value`). Names are ASCII 0x20...0x7D except `=`; recd's are
/// upper case (`START_TIME`, `END_REASON`, ...). A plain value: any thread.
public struct VorbisComment: Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    /// `NAME=value`, the form stored in the file.
    public var description: String { "\(name)=\(value)" }

    /// Splits `NAME=value` at the first `=`; nil when there is none.
    public init?(entry: String) {
        guard let equals = entry.firstIndex(of: "=") else { return nil }
        name = String(entry[..<equals])
        value = String(entry[entry.index(after: equals)...])
    }
}

/// The names of the comments recd writes (SPEC §9). Constants: any thread.
public enum CommentName {
    public static let startTime = "START_TIME"
    public static let app = "APP"
    public static let stream = "STREAM"
    public static let category = "CATEGORY"
    public static let mode = "MODE"
    public static let inputPort = "INPUT_PORT"
    public static let inputType = "INPUT_TYPE"
    public static let bandwidth = "BANDWIDTH"
    public static let segment = "SEGMENT"
    /// `g` of a channel group file (1-based), only when a recorder has more than 8 channels.
    public static let group = "GROUP"
    /// The recorder channels in a group file, `first-last` (1-based).
    public static let groupChannels = "GROUP_CHANNELS"
    /// The source's sample rate when a transform changed it (HFP).
    public static let sourceSampleRate = "SOURCE_SAMPLE_RATE"
    /// The capture was processed (`voice`: voiceChat/videoChat's chain; `echoCancellation`:
    /// prefersEchoCancelledInput), START_TIME moved back by the processing's latency; absent
    /// for samples as the port gave them.
    public static let voiceProcessing = "VOICE_PROCESSING"
    public static let encoder = "ENCODER"
    public static let date = "DATE"
    public static let endReason = "END_REASON"
    /// Beside `END_REASON=interruption`: who interrupted (the app whose activation did, or
    /// the input port whose hardware switch muted it).
    public static let interruptedBy = "INTERRUPTED_BY"
    /// `pos+len,pos+len`: frames missing after `pos` frames of this file.
    public static let gaps = "GAPS"
    /// Present when not every gap fitted in the file's padding: the total number of gaps.
    public static let gapsTruncated = "GAPS_TRUNCATED"
    public static let recovered = "RECOVERED"
    /// Seconds of the segment that were silence, `12.34`; only with silence
    /// detection on.
    public static let silenceSeconds = "SILENCE_SECONDS"
    /// An input whose audio came over the network as an RTP stream (recd's RTP monitor):
    /// packets of it received while the segment was recorded, and packets lost (sequence numbers
    /// that never came, a link cut's included).
    public static let networkPackets = "NETWORK_PACKETS"
    public static let networkPacketsLost = "NETWORK_PACKETS_LOST"
    /// `pos+len,pos+len` (as GAPS): frames of this file that hold the network's zeros (the
    /// receiver's buffer ran dry: no packets came), not the studio's silence. Unlike GAPS these
    /// frames are in the file: the time line counts them once.
    public static let networkLoss = "NETWORK_LOSS"
    /// Integrated loudness of the segment (EBU R128), LUFS; absent for silence.
    public static let loudness = "LOUDNESS_LUFS"
    /// Loudness range (EBU Tech 3342), LU; absent for silence.
    public static let loudnessRange = "LOUDNESS_RANGE_LU"
    /// The highest true peak of any channel, dBTP; absent for digital silence.
    public static let truePeak = "TRUE_PEAK_DBTP"

    /// `summary` to 0.01, as the comments hold it (so the index and the file agree).
    static func stored(_ summary: LoudnessSummary) -> LoudnessSummary {
        func hundredths(_ value: Double?) -> Double? { value.map { ($0 * 100).rounded() / 100 } }
        return LoudnessSummary(
            integratedLUFS: hundredths(summary.integratedLUFS), rangeLU: hundredths(summary.rangeLU),
            truePeakDBTP: hundredths(summary.truePeakDBTP))
    }

    /// The loudness comments of `summary` (values to 0.01), only those measured.
    public static func loudnessComments(_ summary: LoudnessSummary) -> [VorbisComment] {
        let summary = stored(summary)
        func text(_ value: Double) -> String { String(value) }
        var comments: [VorbisComment] = []
        if let value = summary.integratedLUFS { comments.append(VorbisComment(loudness, text(value))) }
        if let value = summary.rangeLU { comments.append(VorbisComment(loudnessRange, text(value))) }
        if let value = summary.truePeakDBTP { comments.append(VorbisComment(truePeak, text(value))) }
        return comments
    }
    /// How fast the segment's sample clock ran against the system's monotonic clock, parts per
    /// million (`12.3`: 12.3 µs more audio per second than the nominal rate says); absent when
    /// the segment spans too little time to measure it (`ClockDriftFit.minimumSpanMicros`).
    public static let clockDriftPPM = "CLOCK_DRIFT_PPM"
    /// Seconds of pre-roll the recording began with (its START is that much before `record
    /// start`); on every segment of that run.
    public static let preRollSeconds = "PRE_ROLL_SECONDS"
    /// A run that started again by itself after a fault: its cause (`diskFull`, `inputGone`,
    /// `mediaServicesLost`); on every segment of that run, with `stoppedAt`.
    public static let resumedAfter = "RESUMED_AFTER"
    /// When the recording before that run stopped (ISO 8601, UTC): the archive has nothing of
    /// the stream from then to this run's START_TIME.
    public static let stoppedAt = "STOPPED_AT"
    /// How good the wall clock was when the segment started (`yes`/`no`: the kernel's
    /// synchronisation state; estimated and maximum error in µs, adjtimex's `esterror` and
    /// `maxerror`), and when it ended (the `_END` names, with the end comments).
    public static let clockSynchronized = "CLOCK_SYNCHRONIZED"
    public static let clockEstimatedError = "CLOCK_ESTERROR_US"
    public static let clockMaximumError = "CLOCK_MAXERROR_US"
    public static let clockSynchronizedEnd = "CLOCK_SYNCHRONIZED_END"
    public static let clockEstimatedErrorEnd = "CLOCK_ESTERROR_END_US"
    public static let clockMaximumErrorEnd = "CLOCK_MAXERROR_END_US"
    /// Who kept the clock when the segment started, as that daemon said at its last asking (at
    /// most a minute before): `chrony: 192.0.2.1, stratum 2, offset +0.000012 s`, `chrony: no
    /// reference`, `systemd-timesyncd: ntp.example.net`, or `none` (`TimeSource`).
    public static let clockSource = "CLOCK_SOURCE"

    /// The three clock comments of `clock`, at the segment's start or end.
    public static func clockComments(_ clock: ClockSynchronization, atEnd: Bool) -> [VorbisComment] {
        [
            VorbisComment(atEnd ? clockSynchronizedEnd : clockSynchronized, clock.synchronized ? "yes" : "no"),
            VorbisComment(
                atEnd ? clockEstimatedErrorEnd : clockEstimatedError, String(clock.estimatedErrorMicroseconds)),
            VorbisComment(atEnd ? clockMaximumErrorEnd : clockMaximumError, String(clock.maximumErrorMicroseconds)),
        ]
    }

    /// The clock state the comments hold (`value` reads one by name); nil when they hold none.
    static func clock(atEnd: Bool, _ value: (String) -> String?) -> ClockSynchronization? {
        guard let synchronized = value(atEnd ? clockSynchronizedEnd : clockSynchronized),
            let estimated = value(atEnd ? clockEstimatedErrorEnd : clockEstimatedError).flatMap({ Int($0) }),
            let maximum = value(atEnd ? clockMaximumErrorEnd : clockMaximumError).flatMap({ Int($0) })
        else { return nil }
        return ClockSynchronization(
            synchronized: synchronized.lowercased() == "yes", estimatedErrorMicroseconds: estimated,
            maximumErrorMicroseconds: maximum)
    }
}

/// Why a segment ended (the END_REASON comment). Open set: values recd does not know are kept
/// as read. A plain value: any thread.
public struct EndReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The segment reached its wall-clock aligned end; the next one continues the stream.
    public static let rotation = EndReason(rawValue: "rotation")
    /// The recorder was stopped.
    public static let stop = EndReason(rawValue: "stop")
    /// The session was interrupted.
    public static let interruption = EndReason(rawValue: "interruption")
    /// The input route changed.
    public static let routeChange = EndReason(rawValue: "routeChange")
    /// What the session's capture goes through changed (its mode, prefersEchoCancelledInput,
    /// or its route gaining or losing an output): the next segment continues the stream with
    /// the new processing (its VOICE_PROCESSING, or none).
    public static let processingChange = EndReason(rawValue: "processingChange")
    /// The JACK server went away.
    public static let mediaServicesLost = EndReason(rawValue: "mediaServicesLost")
    /// The disk filled up.
    public static let diskFull = EndReason(rawValue: "diskFull")
    /// A write or encoder error other than a full disk.
    public static let error = EndReason(rawValue: "error")
    /// The wall clock was stepped (settimeofday, an NTP step): the next segment starts at the
    /// true time.
    public static let clockStep = EndReason(rawValue: "clockStep")
    /// recd stopped without finishing the segment; recovered on the next start.
    public static let crash = EndReason(rawValue: "crash")

    public var description: String { rawValue }
}

/// Frames missing inside a segment: `length` frames after the first `position` frames of the
/// file. A plain value: any thread.
public struct SegmentGap: Hashable, Sendable, CustomStringConvertible {
    public var position: Int
    public var length: Int

    public init(position: Int, length: Int) {
        self.position = position
        self.length = length
    }

    /// `pos+len`.
    public var description: String { "\(position)+\(length)" }

    /// The GAPS comment value: `pos+len,pos+len`.
    public static func commentValue(_ gaps: [SegmentGap]) -> String {
        gaps.map(\.description).joined(separator: ",")
    }

    /// Parses a GAPS comment value; nil when malformed.
    public static func parse(commentValue text: String) -> [SegmentGap]? {
        if text.isEmpty { return [] }
        // The text may come from a file others wrote: its size bounds the work, and the count is
        // checked before the list grows past what a segment can hold.
        var gaps: [SegmentGap] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: "+", omittingEmptySubsequences: false)
            guard parts.count == 2, let position = Int(parts[0]), let length = Int(parts[1]),
                position >= 0, length > 0
            else { return nil }
            guard gaps.count < SegmentRecord.maximumGaps else { return nil }
            gaps.append(SegmentGap(position: position, length: length))
        }
        return gaps
    }
}

/// The sample format of a FLAC segment. A plain value: any thread.
public struct SegmentFormat: Hashable, Sendable {
    public var sampleRate: Int
    /// 1...8 (FLAC's limit; wider recorders write channel groups).
    public var channels: Int
    /// 16 (HFP bandwidth) or 24 (full bandwidth); FLAC also takes 4...32, recd uses these two.
    public var bitsPerSample: Int
    /// libFLAC's compression level, 0...8.
    public var compressionLevel: Int
    /// Whether the segment's loudness is measured (LOUDNESS_LUFS, LOUDNESS_RANGE_LU,
    /// TRUE_PEAK_DBTP, the live momentary and short-term readings), and with which code;
    /// `[archive] loudness`.
    public var measuresLoudness: Bool
    public var loudnessEngine: LoudnessEngine

    public init(
        sampleRate: Int, channels: Int, bitsPerSample: Int, compressionLevel: Int = 5, measuresLoudness: Bool = true,
        loudnessEngine: LoudnessEngine = .vectorized
    ) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = bitsPerSample
        self.compressionLevel = compressionLevel
        self.measuresLoudness = measuresLoudness
        self.loudnessEngine = loudnessEngine
    }

    /// Throws `.invalidArgument` saying which value is out of range.
    public func validate() throws(ArchiveError) {
        guard (1...8).contains(channels) else {
            throw .invalidArgument("a FLAC segment holds 1...8 channels, not \(channels)")
        }
        guard (4...24).contains(bitsPerSample) else {
            throw .invalidArgument("bits per sample must be 4...24 (recd writes 16 or 24), not \(bitsPerSample)")
        }
        guard (1...655_350).contains(sampleRate) else {
            throw .invalidArgument("sample rate \(sampleRate) Hz is outside FLAC's 1...655350 Hz")
        }
        guard (0...8).contains(compressionLevel) else {
            throw .invalidArgument("compression_level must be 0...8, not \(compressionLevel)")
        }
    }
}

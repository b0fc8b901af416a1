// A segment's numbers as they come back from outside recd — an index row, a file's tags — and
// the one rule for which of them can describe a segment recd wrote. The archive directory (and
// the index in it) may be written by others, so nothing read back from it is trusted: a value
// out of range is refused here, once, and everything computed from a `SegmentRecord` later
// (end times, durations, clip plans) stays inside 64-bit arithmetic.

import Codec
import Platform

extension SegmentRecord {
    /// STREAMINFO's 20-bit sample rate.
    public static let plausibleSampleRates = 1...1_048_575
    /// recd writes at most 8 channels a file (wider recorders are channel groups).
    public static let plausibleChannelCounts = 1...8
    public static let plausibleSampleBits = 4...32
    /// STREAMINFO's 36-bit total sample count.
    public static let plausibleFrameCounts = 0...(1 << 36 - 1)
    /// GAPS entries a segment can carry (a gap at most every period of a day at 16 frames).
    public static let maximumGaps = 1 << 20
    /// The most missing time a segment's gaps can add up to, in frames (2^40: over 260 days at 48 kHz).
    public static let maximumGapFrames = 1 << 40

    /// Whether every number is one a segment recd wrote can have: rates, channels, bits, frame
    /// counts and gaps inside their ranges, a size not negative, a start time 64-bit nanoseconds
    /// hold and loudness, drift and clock figures finite. Records read back from the index or a
    /// file are used only when this holds.
    public var isPlausible: Bool {
        guard Self.plausibleSampleRates.contains(sampleRate), Self.plausibleChannelCounts.contains(channels),
            Self.plausibleSampleBits.contains(bitsPerSample), Self.plausibleFrameCounts.contains(frames),
            bytes >= 0, group >= 0, segment >= 0, gaps.count <= Self.maximumGaps
        else { return false }
        var missing = 0
        for gap in gaps {
            guard gap.position >= 0, gap.position <= Self.plausibleFrameCounts.upperBound + Self.maximumGapFrames,
                gap.length > 0, gap.length <= Self.maximumGapFrames
            else { return false }
            missing += gap.length
            guard missing <= Self.maximumGapFrames else { return false }
        }
        guard networkLosses.count <= Self.maximumGaps,
            networkLosses.allSatisfy({
                $0.position >= 0 && $0.length > 0 && $0.position <= Self.plausibleFrameCounts.upperBound
                    && $0.length <= Self.plausibleFrameCounts.upperBound
            })
        else { return false }
        let reals = [loudness.integratedLUFS, loudness.rangeLU, loudness.truePeakDBTP, clockDriftPPM]
        return reals.allSatisfy { $0?.isFinite ?? true }
    }
}

/// One index row's columns, as SQLite returned them: nothing checked yet. A plain value.
struct SegmentRow {
    /// The longest text column read (a path, an app or stream name, the gaps list is far shorter
    /// in any segment recd wrote; 64 KiB leaves room and keeps a forged row from costing memory).
    static let maximumTextBytes = 64 * 1024

    var path: String?
    var app: String?
    var stream: String?
    var group: Int64
    var segment: Int64
    var startMicroseconds: Int64
    var frames: Int64
    var sampleRate: Int64
    var channels: Int64
    var bitsPerSample: Int64
    var endReason: String?
    var gaps: String?
    var recovered: Int64
    var bytes: Int64
    /// loudness_lufs, loudness_range_lu, true_peak_dbtp, clock_drift_ppm, then the clock at the
    /// start (synchronized, estimated error, maximum error) and at the end: ten columns.
    var reals: [Double?]
    var clockSource: String?
    /// NETWORK_LOSS's list (as `gaps`); nil: none.
    var networkLoss: String? = nil

    /// The segment the row describes; nil when it cannot be one of this archive's: a path that
    /// is not a `.flac` file inside `archive` (no `..`, `.` or empty components), numbers out of
    /// `SegmentRecord.isPlausible`'s ranges, a start time past 64-bit nanoseconds, malformed gaps.
    func record(inArchive archive: String) -> SegmentRecord? {
        guard let path, Self.isArchivePath(path, in: archive), let app, let stream,
            let startTime = UTCTime(checkedMicrosecondsSinceEpoch: startMicroseconds),
            let gapList = SegmentGap.parse(commentValue: gaps ?? ""), reals.count == 10,
            let losses = SegmentGap.parse(commentValue: networkLoss ?? "")
        else { return nil }
        guard let startClock = Self.clock(reals[4], reals[5], reals[6]),
            let endClock = Self.clock(reals[7], reals[8], reals[9])
        else { return nil }
        func small(_ value: Int64) -> Int? { Int(exactly: value) }
        guard let group = small(group), let segment = small(segment), let frames = small(frames),
            let sampleRate = small(sampleRate), let channels = small(channels), let bits = small(bitsPerSample)
        else { return nil }
        let record = SegmentRecord(
            path: path, app: app, stream: stream, group: group, segment: segment, startTime: startTime,
            frames: frames, sampleRate: sampleRate, channels: channels, bitsPerSample: bits,
            endReason: endReason.map(EndReason.init(rawValue:)), gaps: gapList, recovered: recovered != 0,
            bytes: bytes,
            loudness: LoudnessSummary(integratedLUFS: reals[0], rangeLU: reals[1], truePeakDBTP: reals[2]),
            clockDriftPPM: reals[3], clockAtStart: startClock, clockAtEnd: endClock, clockSource: clockSource,
            networkLosses: losses)
        return record.isPlausible ? record : nil
    }

    /// A clock state from its three columns: `.some(nil)` when all three are NULL (not known),
    /// nil when the columns cannot be one (some NULL, a flag other than 0 or 1, an error that is
    /// not a whole number of microseconds from 0 to a day: the kernel caps its own at 16 s).
    static func clock(_ synchronized: Double?, _ estimated: Double?, _ maximum: Double?) -> ClockSynchronization?? {
        if synchronized == nil, estimated == nil, maximum == nil { return .some(nil) }
        let day = 86_400_000_000.0
        guard let synchronized, let estimated, let maximum, synchronized == 0 || synchronized == 1,
            (0...day).contains(estimated), (0...day).contains(maximum)
        else { return nil }
        return ClockSynchronization(
            synchronized: synchronized != 0, estimatedErrorMicroseconds: Int(estimated),
            maximumErrorMicroseconds: Int(maximum))
    }

    /// Whether `path` names a `.flac` file below `archive` without `.`, `..` or empty components
    /// (an archive given as a relative path only rules out those components).
    static func isArchivePath(_ path: String, in archive: String) -> Bool {
        guard path.hasSuffix(".flac"), !path.contains("\0") else { return false }
        var rest = Substring(path)
        if archive.hasPrefix("/") {
            let root = archive.hasSuffix("/") ? archive : archive + "/"
            guard path.hasPrefix(root) else { return false }
            rest = path.dropFirst(root.count)
        }
        return rest.split(separator: "/", omittingEmptySubsequences: false).allSatisfy {
            !$0.isEmpty && $0 != "." && $0 != ".."
        }
    }
}

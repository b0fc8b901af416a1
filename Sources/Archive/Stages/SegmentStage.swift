// What happens to a segment while it is written, beyond its samples: the tags it opens and ends
// with, what it measures of its frames, the facts from outside it keeps (a clock stamp, a gap),
// its columns in the index. Each such thing is a stage of its own file; the archiver runs them in
// the order `SegmentStages.all` lists them and knows none of them by name (GStreamer's elements:
// a stage knows its input, not its neighbours).
//
// Threads: a stage is made on the control thread (`Recorder.init`) and used on the recorder's
// **archiver** thread only, one call at a time.

import Codec
import Platform

/// The live inputs of a recorder's stages, given to `Recorder` beside its plain configuration:
/// objects other threads keep up to date, not settings. Any thread.
public struct SegmentInputs: Sendable {
    /// Who keeps the clock (each segment's CLOCK_SOURCE, read at its start, never waited for);
    /// nil: no CLOCK_SOURCE.
    public var timeSource: TimeSourceMonitor?
    /// The network's facts about the input (NETWORK_PACKETS, NETWORK_PACKETS_LOST, NETWORK_LOSS at
    /// each segment's end); nil: an input of this machine, no such tags.
    public var network: (any NetworkReception)?

    public init(timeSource: TimeSourceMonitor? = nil, network: (any NetworkReception)? = nil) {
        self.timeSource = timeSource
        self.network = network
    }
}

/// One thing that happens to every segment a recorder writes. Implement only what the stage
/// does: every call has a default that does nothing.
protocol SegmentStage: AnyObject {
    /// The stage for a recorder set up as `setup` says; nil when it has nothing to do there
    /// (switched off, or its input is missing).
    init?(_ setup: StageSetup)
    /// The segment opens: the tags its files start with (after recd's own, before the
    /// configuration's extra ones), the same for every file.
    func open(_ segment: SegmentOpening) -> [VorbisComment]
    /// Frames just written to the open segment at the output rate, one run per channel (every
    /// channel of the recorder), from time-line frame `position` on.
    func observe(_ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int, at position: Int)
    /// A fact from outside the samples.
    func note(_ fact: SegmentFact)
    /// The segment closes: its tags after END_REASON and GAPS, and its columns in the index.
    func close(_ segment: SegmentClosing, into ending: inout SegmentEnding)
}

extension SegmentStage {
    func open(_ segment: SegmentOpening) -> [VorbisComment] { [] }
    func observe(_ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int, at position: Int) {}
    func note(_ fact: SegmentFact) {}
    func close(_ segment: SegmentClosing, into ending: inout SegmentEnding) {}
}

/// What a recorder's stages are made from.
struct StageSetup {
    let configuration: RecorderConfiguration
    let inputs: SegmentInputs
    /// The rate written (a transform may change it from `configuration.sampleRate`).
    let outputRate: Int
    /// First channel and channel count of each file (one entry unless more than 8 channels).
    let files: [(first: Int, count: Int)]
    let outlet: StageOutlet
}

/// A segment as it opens (once for all its files).
struct SegmentOpening {
    /// Its SEGMENT number.
    let number: Int
    let startTime: UTCTime
    /// Its first frame on the recorder's time line (output rate, gaps counted).
    let timelineStart: Int
}

/// A segment as it closes.
struct SegmentClosing {
    let reason: EndReason
    /// The time-line frame just after its end.
    let timelineEnd: Int
    /// Its GAPS (every file has the same).
    let gaps: [SegmentGap]
}

/// A fact from outside the samples.
enum SegmentFact {
    /// The source's latest clock stamp: where monotonic time falls in its frames (at the
    /// source's rate), read after each read.
    case clockStamp(ClockStamp)
    /// Frames the source lost, placed in the open segment at time-line frame `position`
    /// (output rate).
    case gap(position: Int, length: Int)
}

/// What a closing segment's stages give, file by file (in the order of `StageSetup.files`).
struct SegmentEnding {
    struct File {
        var tags: [VorbisComment] = []
        var columns = SegmentColumns()
    }

    var files: [File]

    init(files: Int) { self.files = Array(repeating: File(), count: files) }

    /// Adds `tags` to every file's end.
    mutating func appendToEveryFile(_ tags: [VorbisComment]) {
        for index in files.indices { files[index].tags += tags }
    }

    /// Sets one column of every file.
    mutating func setEveryFile(_ set: (inout SegmentColumns) -> Void) {
        for index in files.indices { set(&files[index].columns) }
    }
}

/// The index's columns a segment's stages fill (`SegmentRecord`'s fields of the same names).
struct SegmentColumns {
    var loudness = LoudnessSummary(integratedLUFS: nil, rangeLU: nil, truePeakDBTP: nil)
    var clockDriftPPM: Double?
    var clockAtStart: ClockSynchronization?
    var clockAtEnd: ClockSynchronization?
    var clockSource: String?
    /// `LevelOverview` codes (two per second); empty: none measured.
    var levelOverview: [UInt8] = []
    /// NETWORK_LOSS's list (frames of the file, as GAPS).
    var networkLosses: [SegmentGap] = []

    func apply(to record: inout SegmentRecord) {
        record.levelOverview = LevelOverviewCodes(levelOverview)
        record.loudness = loudness
        record.clockDriftPPM = clockDriftPPM
        record.clockAtStart = clockAtStart
        record.clockAtEnd = clockAtEnd
        record.clockSource = clockSource
        record.networkLosses = networkLosses
    }
}

/// What stages may tell the rest of recd (through the recorder's events and its live loudness),
/// and the time line they may ask. Archiver thread only.
final class StageOutlet {
    private let control: RecorderControl
    /// Where the time line's frames fall in UTC: placed when the first segment opens, moved by a
    /// clock step (the archiver sets it; nil before).
    var schedule: RotationSchedule?

    init(control: RecorderControl) { self.control = control }

    /// The UTC time of time-line frame `frame`; nil before the time line is placed.
    func time(atFrame frame: Int) -> UTCTime? { schedule?.time(atFrame: frame) }

    func post(_ event: RecorderEvent) { control.post(event) }

    /// The live loudness `Recorder.loudness` reads.
    func publishLoudness(momentary: Double?, shortTerm: Double?) {
        control.publishLoudness(momentary: momentary, shortTerm: shortTerm)
    }
}

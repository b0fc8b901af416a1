// A recorder: the archiver thread that drains a sample source into wall-clock aligned,
// gapless, crash-safe FLAC segments (SPEC §9, §10).

import ArchiveProof
import Codec
import Platform

/// How a recorder writes its segments. A plain value: any thread. The live inputs of its
/// segments' stages (the time source, the network's reception) come beside it, `SegmentInputs`.
public struct RecorderConfiguration: Hashable, Sendable {
    /// The archive root; segments go to `ROOT/YYYY/MM/DD/`.
    public var archiveDirectory: String
    public var app: String
    public var stream: String
    /// Channels of the source (any count: more than 8 are written as groups of up to 8).
    public var channels: Int
    /// The source's sample rate in Hz (a transform may change the rate written).
    public var sampleRate: Int
    /// 24 for full bandwidth, 16 for HFP bandwidth.
    public var bitsPerSample: Int
    /// Segment length; segments end on multiples of it in UTC (3600: on the hour).
    public var segmentSeconds: Int
    /// libFLAC compression level 0...8 (`[archive] compression_level`).
    public var compressionLevel: Int
    /// Loudness measured per segment and live (`[archive] loudness`).
    public var measuresLoudness = true
    /// Which code measures it (`[archive] loudness = yes` or `libebur128`).
    public var loudnessEngine = LoudnessEngine.vectorized
    /// What every segment says about where its audio came from, as its comments.
    public var comments: SegmentComments
    /// The SEGMENT number of the first segment.
    public var firstSegmentNumber: Int
    /// How the archiver thread paces its reads, waits and flushes.
    public var timing: ArchiverTiming
    /// Silence detection on the frames written (`.silence` events, SILENCE_SECONDS); nil: off.
    public var silence: SilenceDetection?
    /// Where recd notes each segment before it creates the file (`SegmentLedger`: what the prover
    /// may chain after a crash); nil: the archive is not proved.
    public var ledger: SegmentLedger?

    public init(
        archiveDirectory: String, app: String, stream: String, channels: Int, sampleRate: Int,
        bitsPerSample: Int = 24, segmentSeconds: Int = 3600, compressionLevel: Int = 5,
        comments: SegmentComments = SegmentComments(), firstSegmentNumber: Int = 1,
        timing: ArchiverTiming = ArchiverTiming(), silence: SilenceDetection? = nil
    ) {
        self.archiveDirectory = archiveDirectory
        self.app = app
        self.stream = stream
        self.channels = channels
        self.sampleRate = sampleRate
        self.bitsPerSample = bitsPerSample
        self.segmentSeconds = segmentSeconds
        self.compressionLevel = compressionLevel
        self.comments = comments
        self.firstSegmentNumber = firstSegmentNumber
        self.timing = timing
        self.silence = silence
    }

    /// Throws `.invalidArgument` naming the first bad value.
    public func validate() throws(ArchiveError) {
        guard channels >= 1 else { throw .invalidArgument("a recorder needs at least 1 channel, not \(channels)") }
        guard bitsPerSample == 16 || bitsPerSample == 24 else {
            throw .invalidArgument("bits per sample must be 16 or 24, not \(bitsPerSample)")
        }
        guard segmentSeconds >= 1 else {
            throw .invalidArgument("segment_seconds must be at least 1, not \(segmentSeconds)")
        }
        guard timing.chunkFrames >= 1, timing.flushInterval > 0, timing.pollInterval >= 0, timing.retirementLimit >= 0
        else {
            throw .invalidArgument("chunk frames, flush interval, poll interval and retirement limit must be positive")
        }
        guard !app.isEmpty, !stream.isEmpty else { throw .invalidArgument("a recorder needs an app and a stream name") }
        if let silence, !(silence.seconds > 0 && silence.threshold >= 0) {
            throw .invalidArgument("silence detection needs a positive duration and a threshold of at least 0")
        }
        try SegmentFormat(
            sampleRate: sampleRate, channels: min(channels, 8), bitsPerSample: bitsPerSample,
            compressionLevel: compressionLevel
        ).validate()
    }
}

/// Who recorded a segment's audio and from where, written into every segment as comments
/// (CATEGORY, MODE, INPUT_PORT, INPUT_TYPE, BANDWIDTH, ENCODER, then `extra`). A plain value.
public struct SegmentComments: Hashable, Sendable {
    /// The session's category and mode.
    public var category: String?
    public var mode: String?
    /// The input port recorded and its type.
    public var inputPort: String?
    public var inputType: String?
    /// e.g. `full`, `hfp-cvsd`, `hfp-msbc`.
    public var bandwidth: String?
    /// More comments for every segment.
    public var extra: [VorbisComment]
    /// recd's version, for the ENCODER comment.
    public var recdVersion: String

    public init(
        category: String? = nil, mode: String? = nil, inputPort: String? = nil, inputType: String? = nil,
        bandwidth: String? = nil, extra: [VorbisComment] = [], recdVersion: String = "0"
    ) {
        self.category = category
        self.mode = mode
        self.inputPort = inputPort
        self.inputType = inputType
        self.bandwidth = bandwidth
        self.extra = extra
        self.recdVersion = recdVersion
    }
}

/// How the archiver thread paces itself: how much it reads at a time, how long it sleeps on a
/// drained source, how often it makes its files durable, how long it waits for a source's
/// producer after a stop. A plain value.
public struct ArchiverTiming: Hashable, Sendable {
    /// Frames read from the source at a time (at most: a planar source lends up to its ring's end).
    public var chunkFrames: Int
    /// Seconds the archiver waits when the source is drained (a stop request ends the wait).
    /// A timed wake-up costs this VM 50–100 µs of the archiver's CPU (1.3 of 5.9 ms/s at 2
    /// channels with 0.05 s), so it waits long enough to find a FLAC block or two waiting; the
    /// tap's ring holds two seconds.
    public var pollInterval: Double
    /// fdatasync of the recorder's files (together, one round) this often in wall time while
    /// frames come, and never more often: a crash loses at most this much.
    public var flushInterval: Double
    /// After a stop request the archiver drains until the source's producer has retired
    /// (`SampleSource.producerRetired`: the capture tap's last cycle is over, one period at most
    /// whatever the period) and a read comes back empty. A producer that has not retired this
    /// many seconds after the request runs no cycles any more (a lost server): what it wrote is
    /// all there is.
    public var retirementLimit: Double

    public init(
        chunkFrames: Int = 4096, pollInterval: Double = 0.2, flushInterval: Double = 1, retirementLimit: Double = 2
    ) {
        self.chunkFrames = chunkFrames
        self.pollInterval = pollInterval
        self.flushInterval = flushInterval
        self.retirementLimit = retirementLimit
    }
}

/// What a recorder reports to the control thread (through `Recorder.drainEvents`). A plain
/// value: any thread.
public enum RecorderEvent: Hashable, Sendable {
    /// A segment file was opened (its planned final path; it is written as `.partial`).
    /// `group` is 0 for a recorder's only file, else 1...
    case segmentStarted(path: String, group: Int, segment: Int, startTime: UTCTime)
    /// A segment was finished and renamed to its final name.
    case segmentFinished(SegmentRecord)
    /// A segment could not be finished; its `.partial` stays for `PartialRecovery`.
    case segmentAbandoned(partialPath: String, error: ArchiveError)
    /// The source reported missing frames (positions and lengths at the source's rate).
    case gap(SourceGap)
    /// The stream went silent or came back (`RecorderConfiguration.silence`).
    case silence(SilenceChange)
    /// The archiver thread ended: `stop` (or another reason given to `stop`), or `diskFull`
    /// / `error` with the error.
    case stopped(reason: EndReason, error: ArchiveError?)
}

/// Records one stream into FLAC segments on its own **archiver** thread.
///
/// - Rotation is aligned to the wall clock and computed from the source's start time plus the
///   frames written (no clock reads per sample): a 3600 s segment started at 10:17:23 ends
///   exactly at the sample of 11:00:00.000. Consecutive segments are gapless.
/// - More than 8 channels: one file per group of up to 8 channels, all started and rotated on
///   the same sample.
/// - Source gaps insert nothing; each is recorded (GAPS comment, events) at its position.
/// - A full disk stops the recorder cleanly: the open segment is finished (reason `diskFull`)
///   while reserved space allows, else left as `.partial`; `.stopped(.diskFull, error)` follows.
/// - An optional `SampleTransform` runs before encoding and may change the rate written.
///
/// Threads: `init`, `start`, `requestStop`, `stop`, `waitUntilStopped` belong to the
/// **control** thread; `drainEvents`, `openPaths` and `isRunning` may be called from any
/// thread. `wake` is called on the archiver thread after each event is queued. The source and
/// transform are used only on the archiver thread once `start` returns.
public final class Recorder: @unchecked Sendable {
    // @unchecked: `thread` and `loop` are touched only by the control thread; everything
    // shared with the archiver thread is in `control` (a mutex).

    public let configuration: RecorderConfiguration
    /// How many nice steps the archiver thread takes below the rest of recd.
    public static let archiverNiceIncrement: Int32 = 10
    private let control: RecorderControl
    private var loop: ArchiverLoop?
    private var thread: NamedThread?

    public init(
        configuration: RecorderConfiguration, inputs: SegmentInputs = SegmentInputs(), source: any SampleSource,
        transform: (any SampleTransform)? = nil, wake: @escaping @Sendable () -> Void = {}
    ) throws(ArchiveError) {
        try configuration.validate()
        guard source.channels == configuration.channels else {
            throw .invalidArgument(
                "the source has \(source.channels) channels, the recorder is set up for \(configuration.channels)")
        }
        if let transform {
            try SegmentFormat(
                sampleRate: transform.outputSampleRate, channels: 1, bitsPerSample: configuration.bitsPerSample
            ).validate()
        }
        self.configuration = configuration
        control = RecorderControl(wake: wake)
        loop = ArchiverLoop(
            configuration: configuration, inputs: inputs, source: source, transform: transform, control: control)
    }

    deinit {
        if thread != nil {
            control.requestStop(.stop)
            waitUntilStopped()
        }
    }

    /// Starts the archiver thread.
    public func start() throws(ArchiveError) {
        guard let loop else { throw .invalidArgument("a recorder can be started once") }
        control.setRunning(true)
        do throws(SystemError) {
            // Nicer than the process: the archiver has a two-second ring to catch up from, the
            // JACK thread beside it has one period. When JACK runs without real-time priority
            // (a dummy server, no rtprio grant) the scheduler would otherwise share a core
            // evenly between them, and a busy archiver made the process callback late
            // (xruns blamed on recd in bench/run at 128 channels).
            thread = try NamedThread(name: "archiver", niceIncrement: Recorder.archiverNiceIncrement) { loop.run() }
        } catch {
            control.setRunning(false)
            throw .system(error)
        }
        self.loop = nil
    }

    /// Asks the archiver to drain what the source holds, finish the open segments with
    /// `reason` (and `comments` beside END_REASON: who interrupted) and end. Returns at once;
    /// `.stopped` follows.
    public func requestStop(reason: EndReason = .stop, comments: [VorbisComment] = []) {
        control.requestStop(reason, comments: comments)
    }

    /// `requestStop` and `waitUntilStopped`.
    public func stop(reason: EndReason = .stop) {
        requestStop(reason: reason)
        waitUntilStopped()
    }

    /// Waits until the archiver thread has ended (at once if it never started).
    public func waitUntilStopped() {
        thread?.join()
        thread = nil
    }

    /// Events since the last call, oldest first.
    public func drainEvents() -> [RecorderEvent] { control.drainEvents() }

    /// The open segments up to their last complete FLAC frame, and the finished segments not yet
    /// drained with `drainEvents`, at one instant. Any thread.
    public var snapshot: RecorderSnapshot { control.snapshot }

    /// Final and `.partial` paths of the segments being written (retention must spare them).
    public var openPaths: Set<String> { control.openPaths }

    /// Momentary (400 ms) and short-term (3 s) EBU R128 loudness of the latest samples written
    /// (of the first 8 channels when there are more), LUFS; nil while the open segment holds
    /// less than the window, or for silence. Any thread.
    public var loudness: (momentaryLUFS: Double?, shortTermLUFS: Double?) { control.loudness }

    /// True from `start` until the archiver thread has finished its last segment.
    public var isRunning: Bool { control.isRunning }
}

// What a recorder reads from, and what may reshape the samples on their way to the encoder.

import Codec

/// A stretch of the source's stream that never arrived: `length` frames are missing after the
/// first `position` frames delivered. The recorder inserts nothing for it (the samples really
/// are missing) and records it; the time goes on, so later frames keep their wall-clock time.
/// A plain value: any thread.
public struct SourceGap: Hashable, Sendable {
    /// Why frames are missing.
    public enum Cause: String, Hashable, Sendable {
        /// A ring overrun: the archiver fell behind.
        case overrun
        /// Wall-clock time in which the audio server delivered nothing (a stalled or stopped
        /// server, a driver that lost sync).
        case clockStall
    }

    /// Frames delivered before the gap (since the source started).
    public var position: Int
    /// Frames missing.
    public var length: Int
    public var cause: Cause

    public init(position: Int, length: Int, cause: Cause = .overrun) {
        self.position = position
        self.length = length
        self.cause = cause
    }
}

/// Where a source's frames stand on the system's monotonic clock: `frames` of its timeline
/// (frames delivered and gaps, since the source began) came before the instant `micros`
/// (monotonic microseconds). A plain value: any thread.
public struct ClockStamp: Hashable, Sendable {
    public var frames: Int
    public var micros: Int

    public init(frames: Int, micros: Int) {
        self.frames = frames
        self.micros = micros
    }
}

/// Interleaved float frames for a recorder: the daemon adapts its JACK capture tap to this;
/// tests use an in-memory source.
///
/// Threads: after the recorder starts, `read`, `drainGaps` and `startTime` are called only on
/// the recorder's **archiver** thread.
public protocol SampleSource: AnyObject {
    /// Interleaved channels per frame (fixed for the source's life).
    var channels: Int { get }

    /// The UTC time of the stream's first frame (frame 0; gaps count as time that passed).
    /// Must be known once `read` has returned a frame; segment start times and wall-clock
    /// aligned rotation are computed from it plus the frame count.
    var startTime: UTCTime? { get }

    /// Copies up to `buffer.count / channels` whole frames into `buffer` and returns how many;
    /// 0 when nothing is available yet.
    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int

    /// The gaps found since the last call, oldest first. A gap at `position` is reported no
    /// later than frame `position` becomes readable.
    func drainGaps() -> [SourceGap]

    /// The latest clock stamp, for the segment's CLOCK_DRIFT_PPM; nil when the source has no
    /// clock (the default).
    func clockStamp() -> ClockStamp?

    /// The wall clock less the monotonic clock now, nanoseconds
    /// (`SystemClock.wallClockOffsetNanoseconds` for a live source): when it moves by more than
    /// `ClockStep.thresholdNanoseconds` the wall clock was stepped, and the recorder ends the
    /// segment and goes on in a new one at the true time. nil (the default): not watched.
    func wallClockOffset() -> Int64?

    /// Frames of time after the last frame in which the source delivered nothing up to the
    /// stop (a recorder stopped while its feed was stalled: the time from the last frame to
    /// the stop is missing too, and START plus frames plus gaps must still end at the stop).
    /// Asked once, after the last read. nil (the default): none.
    func trailingStallFrames() -> Int?

    /// True once nothing more can arrive beyond what is readable now (a capture tap out of
    /// the graph and past its retirement mark). A recorder asked to stop drains until it has
    /// seen this and then read nothing; a source that is asked while its producer may still
    /// deliver a last period says false. Default: true (a source whose frames are all there).
    var producerRetired: Bool { get }
}

extension SampleSource {
    public func clockStamp() -> ClockStamp? { nil }
    public func wallClockOffset() -> Int64? { nil }
    public func trailingStallFrames() -> Int? { nil }
    public var producerRetired: Bool { true }
}

/// A source that lends its frames in place, one contiguous run per channel (a planar capture
/// ring): the recorder quantizes and encodes them where they are, copying nothing.
///
/// Threads: as `SampleSource` (the archiver thread only, once the recorder started).
public protocol PlanarSampleSource: SampleSource {
    /// Lends up to `maxFrames` of the oldest unread frames: writes channel `c`'s first sample
    /// into `channelStarts[c]` (`channels` entries) and returns how many frames (0: none yet).
    /// Fewer than are readable may come (a ring's wrap); the rest comes at the next call. Like
    /// `read`, gaps at positions up to the end of the frames lent are in `drainGaps` by then.
    func peek(maxFrames: Int, channelStarts: UnsafeMutablePointer<UnsafePointer<Float>>) -> Int

    /// Hands back the first `frames` frames of the last `peek`: they are consumed.
    func release(frames: Int)
}

/// A processing step between the source and the encoder, e.g. HFP band-limiting and
/// resampling to 8 or 16 kHz. It keeps the channel count and may change the sample rate.
///
/// Threads: called only on the recorder's **archiver** thread.
public protocol SampleTransform: AnyObject {
    /// The rate of what `process` produces, in Hz.
    var outputSampleRate: Int { get }

    /// Consumes `frames` interleaved input frames and appends the output frames (interleaved,
    /// same channel count, at `outputSampleRate`) to `output`. May hold samples back.
    func process(_ input: UnsafeBufferPointer<Float>, frames: Int, into output: inout [Float])

    /// The end of a continuous stretch (before a gap, and at the end): appends everything
    /// still held back, and starts afresh for what comes after.
    func flush(into output: inout [Float])
}

/// Codec's HFP band limit is the transform of HFP captures.
extension HFPTransform: SampleTransform {}

// Silence detection on a recorder's own samples (issue 15, item 1): a feed that goes silent
// and comes back, decided on what is written to the archive, never in the JACK callback.
//
// Pure arithmetic on frames: no clock, no I/O. The archiver loop feeds it the frames it
// writes and turns its frame positions into UTC times.

/// When a recorder calls its input silent. A plain value: any thread.
public struct SilenceDetection: Hashable, Sendable {
    /// Every channel's peak below this linear amplitude counts as silence (the daemon turns
    /// `silence_threshold_db` into it: 10^(dB/20)).
    public var threshold: Float
    /// Silence this long (seconds) begins a silence (`silence_seconds`; > 0).
    public var seconds: Double
    /// Sound above the threshold this long (seconds) ends it.
    public var endSeconds: Double
    /// The stream was already silent when this recorder started (a recording that goes on
    /// after an interruption or from a new input): no second `began`; `ended` once sound
    /// returns.
    public var alreadySilent: Bool

    /// Sound must last this long to end a silence (the issue's 2 s).
    public static let defaultEndSeconds = 2.0

    public init(
        threshold: Float, seconds: Double, endSeconds: Double = SilenceDetection.defaultEndSeconds,
        alreadySilent: Bool = false
    ) {
        self.threshold = threshold
        self.seconds = seconds
        self.endSeconds = endSeconds
        self.alreadySilent = alreadySilent
    }
}

/// A change of a stream between sound and silence, in frames of the stream written (the
/// archiver's timeline). A plain value: any thread.
public struct SilenceTransition: Hashable, Sendable {
    public enum State: String, Hashable, Sendable {
        case began, ended
    }

    public var state: State
    /// `began`: the first silent frame. `ended`: the first frame of the sound that lasted.
    public var sinceFrame: Int
    /// The frame at which the change was decided (`sinceFrame` plus `silence_seconds`, or
    /// plus the 2 s of sound), at block resolution.
    public var decidedFrame: Int
    /// `began`: the loudest block peak of the silence so far; `ended`: the loudest of the
    /// sound that ended it. Linear amplitude (1 is full scale).
    public var peak: Float
}

/// A recorder's stream went silent or came back, in wall-clock time (`RecorderEvent.silence`).
/// A plain value: any thread.
public struct SilenceChange: Hashable, Sendable {
    public var state: SilenceTransition.State
    /// `began`: when the silence started (its first silent frame); `ended`: when the sound
    /// that ended it started.
    public var since: UTCTime
    /// When the change was decided: `since` plus `silence_seconds`, or plus the 2 s of sound.
    public var decided: UTCTime
    /// `SilenceTransition.peak`.
    public var peak: Float

    public init(state: SilenceTransition.State, since: UTCTime, decided: UTCTime, peak: Float) {
        self.state = state
        self.since = since
        self.decided = decided
        self.peak = peak
    }
}

/// Decides silence from peaks over short blocks (`blockSeconds`): a block is silent when
/// every channel's peak is below the threshold. A run of silent blocks `seconds` long begins
/// a silence; `endSeconds` of consecutive loud blocks end it (shorter sound inside a silence
/// leaves it silent). It also counts, per segment, the frames below the threshold that belong
/// to a silence (SILENCE_SECONDS): a silence's first `seconds` count once it is decided, in
/// the segment they fell in if that is still open (a segment finished before the silence was
/// decided keeps its count).
///
/// Threads: one owner (the recorder's archiver thread).
public struct SilenceDetector {
    /// Block length: decisions and timings are this fine.
    public static let blockSeconds = 0.01

    public let detection: SilenceDetection
    private let threshold: Float
    private let blockFrames: Int
    private let beginFrames: Int
    private let endFrames: Int

    private enum Phase {
        /// Sound; `runStart` is the first frame of the current silent run, if any.
        case sound(runStart: Int?)
        /// Silent; `soundStart` is where the current sound began, if it is sounding now.
        case silent(soundStart: Int?)
    }

    private var phase: Phase
    /// Loudest block peak (linear) of the current silent run or of the current sound.
    private var runPeak: Float = 0
    /// The block being gathered: its first frame, frames so far and peak.
    private var blockStart = 0
    private var blockFill = 0
    private var blockPeak: Float = 0
    /// Silent frames of the open segment that belong to a silence, and those of a run not
    /// yet long enough (counted if it becomes a silence).
    private var segmentSilentFrames = 0
    private var pendingSilentFrames = 0

    public init(detection: SilenceDetection, sampleRate: Int) {
        precondition(detection.seconds > 0 && sampleRate > 0, "silence detection needs a duration and a rate")
        self.detection = detection
        threshold = detection.threshold
        blockFrames = max(1, Int((Double(sampleRate) * Self.blockSeconds).rounded()))
        beginFrames = max(1, Int((detection.seconds * Double(sampleRate)).rounded()))
        endFrames = max(1, Int((detection.endSeconds * Double(sampleRate)).rounded()))
        phase = detection.alreadySilent ? .silent(soundStart: nil) : .sound(runStart: nil)
    }

    /// True while the stream is silent (after `began`, before `ended`).
    public var isSilent: Bool {
        if case .silent = phase { return true }
        return false
    }

    /// Takes `frames` interleaved frames of `channels` channels, the first being frame
    /// `position` of the timeline; calls `report` for each change, in order. A position that
    /// jumps (a gap: frames that never arrived) ends the block being gathered there.
    public mutating func observe(
        _ samples: UnsafePointer<Float>, frames: Int, channels: Int, position: Int,
        report: (SilenceTransition) -> Void
    ) {
        gather(frames: frames, position: position, report: report) { done, take, peak in
            Self.peak(samples + done * channels, count: take * channels, above: peak)
        }
    }

    /// `observe` for frames held one run per channel: channel `c`'s samples start at
    /// `channelStarts[c]` (`channels` entries). The same blocks and peaks as interleaved.
    public mutating func observe(
        planar channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int, channels: Int, position: Int,
        report: (SilenceTransition) -> Void
    ) {
        gather(frames: frames, position: position, report: report) { done, take, peak in
            var peak = peak
            for channel in 0..<channels { peak = Self.peak(channelStarts[channel] + done, count: take, above: peak) }
            return peak
        }
    }

    /// Both layouts' walk over the blocks: `peak(done, take, above)` folds frames
    /// `done..<done + take` of this call into the block's peak so far.
    private mutating func gather(
        frames: Int, position: Int, report: (SilenceTransition) -> Void, peak: (Int, Int, Float) -> Float
    ) {
        if blockFill > 0 && blockStart + blockFill != position { closeBlock(report) }
        if blockFill == 0 { blockStart = position }
        var done = 0
        while done < frames {
            let take = min(frames - done, blockFrames - blockFill)
            blockPeak = peak(done, take, blockPeak)
            blockFill += take
            done += take
            if blockFill == blockFrames { closeBlock(report) }
        }
    }

    /// The largest magnitude of `count` samples, or `floor` if none is larger. NaN never
    /// counts as sound or silence: `>` is false for it.
    ///
    /// The block's peak is over every channel of every frame, so the samples are one flat run,
    /// read in lanes of four (SSE2, NEON) with two running maxima. The result is the scalar
    /// loop's to the bit: the maximum of a set of non-negative floats (sign bits cleared, NaN
    /// left out) does not depend on the order in which it is taken.
    @inline(__always)
    static func peak(_ samples: UnsafePointer<Float>, count: Int, above floor: Float) -> Float {
        var index = 0
        var peak = floor
        if count >= 8 {
            var first = SIMD4<Float>(repeating: floor)
            var second = first
            let raw = UnsafeRawPointer(samples)
            while index + 8 <= count {
                let a = magnitudes(raw.loadUnaligned(fromByteOffset: index * 4, as: SIMD4<Float>.self))
                let b = magnitudes(raw.loadUnaligned(fromByteOffset: index * 4 + 16, as: SIMD4<Float>.self))
                first = first.replacing(with: a, where: a .> first)
                second = second.replacing(with: b, where: b .> second)
                index += 8
            }
            first = first.replacing(with: second, where: second .> first)
            for lane in 0..<4 where first[lane] > peak { peak = first[lane] }
        }
        while index < count {
            let magnitude = samples[index].magnitude
            if magnitude > peak { peak = magnitude }
            index += 1
        }
        return peak
    }

    @inline(__always)
    private static func magnitudes(_ lanes: SIMD4<Float>) -> SIMD4<Float> {
        unsafeBitCast(unsafeBitCast(lanes, to: SIMD4<UInt32>.self) & 0x7FFF_FFFF, to: SIMD4<Float>.self)
    }

    /// The open segment ends after the frames observed so far: the block being gathered is
    /// closed there (blocks never span segments; a change it completes is reported), and the
    /// frames of the segment that were silence (its SILENCE_SECONDS) are returned. The count
    /// starts again at zero.
    public mutating func endSegment(report: (SilenceTransition) -> Void) -> Int {
        closeBlock(report)
        let frames = segmentSilentFrames
        segmentSilentFrames = 0
        // A run not yet long enough stays uncounted in the segment that ends (see the type).
        pendingSilentFrames = 0
        return frames
    }

    /// `frames` at `sampleRate` as seconds with two decimals (`12.34`): SILENCE_SECONDS.
    public static func secondsText(frames: Int, sampleRate: Int) -> String {
        let hundredths = (frames * 100 + sampleRate / 2) / sampleRate
        let rest = hundredths % 100
        return "\(hundredths / 100).\(rest < 10 ? "0" : "")\(rest)"
    }

    private mutating func closeBlock(_ report: (SilenceTransition) -> Void) {
        let start = blockStart
        let length = blockFill
        let peak = blockPeak
        blockStart += blockFill
        blockFill = 0
        blockPeak = 0
        guard length > 0 else { return }
        let quiet = peak < threshold
        switch phase {
        case .sound(let runStart):
            guard quiet else {
                phase = .sound(runStart: nil)
                pendingSilentFrames = 0
                return
            }
            let first = runStart ?? start
            if runStart == nil { runPeak = 0 }
            runPeak = max(runPeak, peak)
            pendingSilentFrames += length
            let end = start + length
            if end - first >= beginFrames {
                phase = .silent(soundStart: nil)
                segmentSilentFrames += pendingSilentFrames
                pendingSilentFrames = 0
                report(SilenceTransition(state: .began, sinceFrame: first, decidedFrame: end, peak: runPeak))
            } else {
                phase = .sound(runStart: first)
            }
        case .silent(let soundStart):
            if quiet {
                segmentSilentFrames += length
                phase = .silent(soundStart: nil)
                return
            }
            let first = soundStart ?? start
            if soundStart == nil { runPeak = 0 }
            runPeak = max(runPeak, peak)
            let end = start + length
            if end - first >= endFrames {
                phase = .sound(runStart: nil)
                report(SilenceTransition(state: .ended, sinceFrame: first, decidedFrame: end, peak: runPeak))
            } else {
                phase = .silent(soundStart: first)
            }
        }
    }
}

// Silence detection on a recorder's own samples: a feed that goes silent and comes back,
// decided on what is written to the archive, never in the JACK callback. Silence is the
// absence of programme over a window of seconds, not a quiet 10 ms: speech with pauses, a
// click track and gated audio are programme.
//
// Pure arithmetic on frames: no clock, no I/O. The archiver loop feeds it the frames it
// writes and turns its frame positions into UTC times.
public import SampleKernels

/// When a recorder calls its input silent. A plain value: any thread.
public struct SilenceDetection: Hashable, Sendable {
    /// The programme level (RMS) below this linear amplitude is silence (the daemon turns
    /// `silence_threshold_db` into it: 10^(dB/20)).
    public var threshold: Float
    /// Silence this long (seconds) begins a silence (`silence_seconds`; > 0).
    public var seconds: Double
    /// The stream was already silent when this recorder started (a recording that goes on
    /// after an interruption or from a new input): no second `began`; `ended` once sound
    /// returns.
    public var alreadySilent: Bool

    /// The level is measured over this long (EBU R128's short-term window), or over
    /// `silence_seconds` when that is shorter: a pause shorter than the window is never silence,
    /// and a silence is still found `silence_seconds` after the programme stopped.
    public static let windowSeconds = 3.0
    /// A silence ends when the level rises this far above the threshold: a level hovering at
    /// the threshold does not raise and end alarms in turn.
    public static let hysteresisDB = 3.0
    /// 10^(hysteresisDB / 10): the same 3 dB as a ratio of mean squares (the module has no libm).
    public static let hysteresisPowerRatio = 1.9952623149688795

    public init(threshold: Float, seconds: Double, alreadySilent: Bool = false) {
        self.threshold = threshold
        self.seconds = seconds
        self.alreadySilent = alreadySilent
    }

    /// The window this detection measures over: 3 s, or `seconds` when shorter.
    public var windowSeconds: Double { min(Self.windowSeconds, seconds) }
}

/// A change of a stream between sound and silence, in frames of the stream written (the
/// archiver's timeline). A plain value: any thread.
public struct SilenceTransition: Hashable, Sendable {
    public enum State: String, Hashable, Sendable {
        case began, ended
    }

    public var state: State
    /// `began`: the first frame of the window that was first below the threshold (the
    /// programme's end). `ended`: the first frame of the sound that ended it (where the level
    /// rose above the threshold).
    public var sinceFrame: Int
    /// The frame at which the change was decided (`sinceFrame` plus `silence_seconds`, or the
    /// block where the level reached the threshold plus the hysteresis), at block resolution.
    public var decidedFrame: Int
    /// `began`: the loudest block peak of the silence so far; `ended`: the loudest of the
    /// sound that ended it. Linear amplitude (1 is full scale).
    public var peak: Float
}

/// A recorder's stream went silent or came back, in wall-clock time (`RecorderEvent.silence`).
/// A plain value: any thread.
public struct SilenceChange: Hashable, Sendable {
    public var state: SilenceTransition.State
    /// `began`: when the silence started; `ended`: when the sound that ended it started.
    public var since: UTCTime
    /// When the change was decided (`SilenceTransition.decidedFrame`).
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

/// Decides silence from the programme level: the mean square of the loudest channel of each
/// 10 ms block (`blockSeconds`), averaged over the last `SilenceDetection.windowSeconds` of
/// blocks. The window is quiet when that level is below the threshold. A silence begins once
/// the windows have stayed quiet for `seconds` counted from the programme's end: the end of
/// the last block of the first quiet window that was itself at or above the threshold (or that
/// window's start), never before the end of the last silence. It ends at the first block whose
/// window is `hysteresisDB` above the threshold, its sound counted from where the window first
/// reached the threshold.
///
/// It also counts, per segment, the frames that belong to a silence (SILENCE_SECONDS) by the
/// same rule: from a silence's start to the start of the sound that ended it. A silence's
/// frames before it was decided count once it is, in the segment they fell in if that is still
/// open (a segment finished before the silence was decided keeps its count); the sound that
/// ends a silence is taken off the open segment's count.
///
/// Samples: NaN counts as zero, magnitudes above full scale as full scale (a broken source
/// cannot poison the window's sums).
///
/// Threads: one owner (the recorder's archiver thread).
public struct SilenceDetector {
    /// Block length: decisions and timings are this fine.
    public static let blockSeconds = 0.01

    public let detection: SilenceDetection
    /// The build of the sample walks that reads contiguous runs (`Walks.current` where recd runs).
    private let walks: any SampleWalks.Type
    /// threshold², and the threshold plus the hysteresis, squared: mean squares.
    private let quietLevel: Double
    private let soundLevel: Double
    private let blockFrames: Int
    private let beginFrames: Int

    /// A stretch being measured: a quiet run that may become a silence, or sound inside one.
    private struct Run {
        /// Its first frame (time line).
        var start: Int
        /// Its loudest block peak.
        var peak: Float
        /// Its frames that fell in the open segment.
        var segmentFrames: Int
    }

    private enum Phase {
        /// Sound; `run`: the quiet run that may become a silence.
        case sound(run: Run?)
        /// Silent; `sound`: the sound that may end it.
        case silent(sound: Run?)
    }

    private var phase: Phase
    /// One block of the window.
    private struct Block {
        var start = 0
        var frames = 0
        /// The loudest channel's sum of squares.
        var energy = 0.0
        var peak: Float = 0
    }

    /// The window: the last blocks, a ring of the window's length in blocks.
    private var ring: [Block]
    private var ringNext = 0
    private var ringCount = 0
    private var windowEnergy = 0.0
    private var windowFrames = 0
    /// The block being gathered: its first frame, frames so far, peak and each channel's sum
    /// of squares.
    private var blockStart = 0
    private var blockFill = 0
    private var blockPeak: Float = 0
    private var channelEnergy: [Double] = []
    /// Frames of the open segment observed so far, and those of them inside a silence.
    private var segmentFrames = 0
    private var segmentSilentFrames = 0
    /// Where the last silence ended (its `ended` decision): the next cannot begin before.
    private var lastEnd = Int.min

    public init(detection: SilenceDetection, sampleRate: Int, walks: any SampleWalks.Type) {
        precondition(detection.seconds > 0 && sampleRate > 0, "silence detection needs a duration and a rate")
        self.detection = detection
        self.walks = walks
        let threshold = Double(detection.threshold)
        quietLevel = threshold * threshold
        soundLevel = quietLevel * SilenceDetection.hysteresisPowerRatio
        blockFrames = max(1, Int((Double(sampleRate) * Self.blockSeconds).rounded()))
        beginFrames = max(1, Int((detection.seconds * Double(sampleRate)).rounded()))
        let blocks = max(1, Int((detection.windowSeconds / Self.blockSeconds).rounded()))
        ring = [Block](repeating: Block(), count: blocks)
        phase = detection.alreadySilent ? .silent(sound: nil) : .sound(run: nil)
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
        guard channels > 1 else {
            // One channel: a contiguous run, read as a planar channel is.
            withUnsafePointer(to: samples) { start in
                observe(planar: start, frames: frames, channels: 1, position: position, report: report)
            }
            return
        }
        gather(frames: frames, channels: channels, position: position, report: report) { done, take, channel in
            Self.measure(samples + done * channels + channel, count: take, stride: channels)
        }
    }

    /// `observe` for frames held one run per channel: channel `c`'s samples start at
    /// `channelStarts[c]` (`channels` entries). The same blocks and levels as interleaved.
    public mutating func observe(
        planar channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int, channels: Int, position: Int,
        report: (SilenceTransition) -> Void
    ) {
        let walks = walks
        gather(frames: frames, channels: channels, position: position, report: report) { done, take, channel in
            Self.measure(channelStarts[channel] + done, count: take, walks: walks)
        }
    }

    /// Both layouts' walk over the blocks: `measure(done, take, channel)` is the peak and sum
    /// of squares of frames `done..<done + take` of this call on `channel`.
    private mutating func gather(
        frames: Int, channels: Int, position: Int, report: (SilenceTransition) -> Void,
        measure: (Int, Int, Int) -> (peak: Float, energy: Double)
    ) {
        guard frames > 0, channels > 0 else { return }
        if channelEnergy.count != channels {
            // A new channel count (never while a block is open: the archiver's count is fixed).
            closeBlock(report)
            channelEnergy = [Double](repeating: 0, count: channels)
        }
        if blockFill > 0 && blockStart + blockFill != position { closeBlock(report) }
        if blockFill == 0 { blockStart = position }
        var done = 0
        while done < frames {
            let take = min(frames - done, blockFrames - blockFill)
            for channel in 0..<channels {
                let part = measure(done, take, channel)
                if part.peak > blockPeak { blockPeak = part.peak }
                channelEnergy[channel] += part.energy
            }
            blockFill += take
            done += take
            if blockFill == blockFrames { closeBlock(report) }
        }
    }

    /// The largest magnitude of `count` contiguous samples (NaN left out) and their sum of
    /// squares (NaN as 0, magnitudes above 1 as 1), read by `walks` (`SampleRuns`: eight lanes in
    /// two chains). The peak is the scalar loop's to the bit (the maximum of non-negative floats
    /// does not depend on the order it is taken in); the sum differs from it only by rounding.
    @inline(__always)
    static func measure(_ samples: UnsafePointer<Float>, count: Int, walks: any SampleWalks.Type) -> (peak: Float, energy: Double) {
        let run = walks.peakAndBoundedSquares(samples, count: count)
        return (run.peak, Double(run.squares))
    }

    /// The same for `count` samples `stride` apart (an interleaved channel), one by one.
    @inline(__always)
    static func measure(_ samples: UnsafePointer<Float>, count: Int, stride: Int) -> (peak: Float, energy: Double) {
        var peak: Float = 0
        var energy: Float = 0
        for index in 0..<count {
            let magnitude = samples[index * stride].magnitude
            if magnitude > peak { peak = magnitude }
            let bounded: Float = magnitude > 1 ? 1 : (magnitude >= 0 ? magnitude : 0)
            energy += bounded * bounded
        }
        return (peak, Double(energy))
    }

    /// The open segment ends after the frames observed so far: the block being gathered is
    /// closed there (blocks never span segments; a change it completes is reported), and the
    /// frames of the segment that were silence (its SILENCE_SECONDS) are returned. The count
    /// starts again at zero.
    public mutating func endSegment(report: (SilenceTransition) -> Void) -> Int {
        closeBlock(report)
        let frames = segmentSilentFrames
        segmentSilentFrames = 0
        segmentFrames = 0
        // What is under way goes on; only its frames in the next segment count there.
        switch phase {
        case .sound(var run?):
            run.segmentFrames = 0
            phase = .sound(run: run)
        case .silent(var sound?):
            sound.segmentFrames = 0
            phase = .silent(sound: sound)
        default: break
        }
        return frames
    }

    /// `frames` at `sampleRate` as seconds with two decimals (`12.34`): SILENCE_SECONDS.
    public static func secondsText(frames: Int, sampleRate: Int) -> String {
        let hundredths = (frames * 100 + sampleRate / 2) / sampleRate
        let rest = hundredths % 100
        return "\(hundredths / 100).\(rest < 10 ? "0" : "")\(rest)"
    }

    /// The window's mean square after adding the block `start`, `length`, `energy`, `peak`.
    private mutating func push(start: Int, length: Int, energy: Double, peak: Float) -> Double {
        let capacity = ring.count
        if ringCount == capacity {
            windowEnergy -= ring[ringNext].energy
            windowFrames -= ring[ringNext].frames
        } else {
            ringCount += 1
        }
        ring[ringNext] = Block(start: start, frames: length, energy: energy, peak: peak)
        windowEnergy += energy
        windowFrames += length
        ringNext += 1
        if ringNext == capacity {
            ringNext = 0
            // Sums that add and take away drift by rounding: start again from the ring.
            windowEnergy = ring.reduce(0) { $0 + $1.energy }
        }
        return windowFrames > 0 ? max(0, windowEnergy) / Double(windowFrames) : 0
    }

    /// Where a quiet run that starts with the window just pushed begins: after the window's
    /// last block that was itself at or above the threshold (the programme's last sound), or
    /// at the window's start; never before `lastEnd`. With the loudest block peak and the
    /// frames from there on.
    private func quietOpening() -> (start: Int, peak: Float, frames: Int) {
        let capacity = ring.count
        var start = ring[ringCount == capacity ? ringNext : 0].start
        var peak: Float = 0
        var frames = 0
        var index = ringNext
        for _ in 0..<ringCount {
            index = index == 0 ? capacity - 1 : index - 1
            let block = ring[index]
            if block.start < lastEnd || block.energy >= quietLevel * Double(block.frames) {
                start = max(block.start + block.frames, lastEnd)
                break
            }
            start = block.start
            peak = max(peak, block.peak)
            frames += block.frames
        }
        return (start, peak, frames)
    }

    private mutating func closeBlock(_ report: (SilenceTransition) -> Void) {
        let start = blockStart
        let length = blockFill
        let peak = blockPeak
        var energy = 0.0
        for channel in channelEnergy.indices {
            energy = max(energy, channelEnergy[channel])
            channelEnergy[channel] = 0
        }
        blockStart += blockFill
        blockFill = 0
        blockPeak = 0
        guard length > 0 else { return }
        segmentFrames += length
        let level = push(start: start, length: length, energy: energy, peak: peak)
        let end = start + length
        switch phase {
        case .sound(let current):
            guard level < quietLevel else {
                phase = .sound(run: nil)
                return
            }
            var run: Run
            if let current {
                run = current
                run.peak = max(run.peak, peak)
                run.segmentFrames += length
            } else {
                let opening = quietOpening()
                run = Run(start: opening.start, peak: opening.peak, segmentFrames: min(opening.frames, segmentFrames))
            }
            guard end - run.start >= beginFrames else {
                phase = .sound(run: run)
                return
            }
            phase = .silent(sound: nil)
            segmentSilentFrames += run.segmentFrames
            report(SilenceTransition(state: .began, sinceFrame: run.start, decidedFrame: end, peak: run.peak))
        case .silent(let current):
            segmentSilentFrames += length
            guard level >= quietLevel else {
                phase = .silent(sound: nil)
                return
            }
            var sound = current ?? Run(start: start, peak: 0, segmentFrames: 0)
            sound.peak = max(sound.peak, peak)
            sound.segmentFrames += length
            guard level >= soundLevel else {
                phase = .silent(sound: sound)
                return
            }
            phase = .sound(run: nil)
            segmentSilentFrames -= sound.segmentFrames
            lastEnd = end
            report(SilenceTransition(state: .ended, sinceFrame: sound.start, decidedFrame: end, peak: sound.peak))
        }
    }
}

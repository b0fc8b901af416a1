// The level overview of a recording: the sample peak and the RMS of every second, measured while
// the segment is written (a segment stage) and kept in the index, so that a day's timeline
// is read from a few hundred kilobytes of the index instead of decoding a day of FLAC.
//
// One cell per second: a day is 86 400 cells, 45 screen widths of a 1920-pixel timeline, so the
// day view shows a day as the loudest of ~45 cells per pixel and still shows single seconds when
// zoomed to a minute across the screen (a 10-second click or a 2-second drop-out is visible). Two
// bytes per cell (peak and RMS in 0.5 dB steps): 172.8 kB per feed and day, under 0.01 % of the
// FLAC of a stereo 48 kHz day (about 5 GB). Plain Swift over SampleKernels (the walk it shares with
// the silence detector, `SampleRuns`): the bench compiles it alone.
public import SampleKernels

/// The overview's cells and their one-byte level codes. Any thread.
public enum LevelOverview {
    /// Seconds per cell.
    public static let cellSeconds = 1
    /// The most cells one segment's overview holds (a day); a longer segment's cells after that
    /// are not kept.
    public static let maximumCells = 86_400

    /// The code of `decibels` (dBFS): 255 is 0 dBFS, each step down 0.5 dB, 1 is −127 dBFS; 0
    /// means no sound at all (digital silence, below −127 dBFS or nothing recorded).
    public static func code(decibels: Double) -> UInt8 {
        guard decibels.isFinite, decibels > -127.25 else { return 0 }
        let steps = (-decibels * 2).rounded()
        return UInt8(max(1, min(255, 255 - steps)))
    }

    /// The level a code stands for, in dBFS; nil for 0 (no sound).
    public static func decibels(code: UInt8) -> Double? { code == 0 ? nil : -Double(255 - Int(code)) / 2 }

    /// 20·log10(`amplitude`) (dBFS) by the standard library alone (Archive imports no libm):
    /// amplitude = m·2^e with 1 ≤ m < 2, ln m = 2·atanh((m−1)/(m+1)), whose series converges fast
    /// for that |z| ≤ 1/3 (error below 1e-12 after 12 terms); −∞ for 0.
    static func decibels(amplitude: Double) -> Double {
        guard amplitude > 0, amplitude.isFinite else { return -.infinity }
        let m = amplitude.significand
        let z = (m - 1) / (m + 1)
        var term = z
        var sum = 0.0
        for k in stride(from: 1, through: 23, by: 2) {
            sum += term / Double(k)
            term *= z * z
        }
        let naturalLog = Double(amplitude.exponent) * 0.693_147_180_559_945_3 + 2 * sum
        return 20 * naturalLog / 2.302_585_092_994_045_7
    }
}

/// The cells of one open segment: frames in, two codes (peak, RMS) per whole second out. The
/// archiver's thread; allocation only when a cell ends.
public struct LevelCells {
    /// Frames per cell at the rate written.
    public let cellFrames: Int
    /// Peak and RMS code of every finished cell, in order (a cell with no frames, a gap: 0, 0).
    public private(set) var codes: [UInt8] = []
    /// The segment's highest magnitude so far, every cell's (those beyond `maximumCells` too):
    /// its sample peak (1 is full scale).
    public private(set) var highest: Float = 0
    /// The time-line frame where the segment starts.
    private var start = 0
    /// The open cell: its number, its highest magnitude, its sum of squares and sample count.
    private var cell = 0
    private var peak: Float = 0
    private var squares: Double = 0
    private var samples = 0
    /// The build of the sample walks that reads the runs (`Walks.current` where recd runs).
    private let walks: any SampleWalks.Type

    public init(sampleRate: Int, walks: any SampleWalks.Type) {
        cellFrames = max(1, sampleRate * LevelOverview.cellSeconds)
        self.walks = walks
    }

    /// A new segment from time-line frame `timelineStart`.
    public mutating func begin(at timelineStart: Int) {
        start = timelineStart
        codes.removeAll(keepingCapacity: true)
        (cell, peak, squares, samples) = (0, 0, 0, 0)
        highest = 0
    }

    /// `frames` frames of the channels `channels` of `channelStarts`, from time-line frame
    /// `position` on (frames before the segment's start are ignored).
    public mutating func add(
        _ channelStarts: UnsafePointer<UnsafePointer<Float>>, channels: Range<Int>, frames: Int, at position: Int
    ) {
        var done = max(0, start - position)
        while done < frames {
            let offset = position - start + done
            let here = offset / cellFrames
            if here != cell { close(upTo: here) }
            let count = min(frames - done, cellFrames - offset % cellFrames)
            var cellPeak = peak
            var cellSquares: Float = 0
            for channel in channels {
                let run = walks.peakAndSquares(channelStarts[channel] + done, count: count)
                if run.peak > cellPeak { cellPeak = run.peak }
                cellSquares += run.squares
            }
            peak = cellPeak
            highest = max(highest, peak)
            squares += Double(cellSquares)
            samples += count * channels.count
            done += count
        }
    }

    /// Ends the open cell and records empty ones up to cell `next`.
    private mutating func close(upTo next: Int) {
        guard codes.count < LevelOverview.maximumCells * 2 else { return }
        if samples > 0 || peak > 0 {
            let meanSquare = samples > 0 ? squares / Double(samples) : 0
            codes.append(LevelOverview.code(decibels: LevelOverview.decibels(amplitude: Double(min(peak, 1)))))
            codes.append(
                LevelOverview.code(decibels: LevelOverview.decibels(amplitude: min(meanSquare, 1).squareRoot())))
        } else {
            codes += [0, 0]
        }
        let empty = min(max(0, next - cell - 1), LevelOverview.maximumCells - codes.count / 2)
        if empty > 0 { codes += repeatElement(0, count: empty * 2) }
        (cell, peak, squares, samples) = (next, 0, 0, 0)
    }

    /// The segment ends at time-line frame `end`: the codes of all its cells (the last one
    /// partial), up to `LevelOverview.maximumCells`.
    public mutating func finish(at end: Int) -> [UInt8] {
        let cells = max(0, end - start + cellFrames - 1) / cellFrames
        if cells > cell { close(upTo: cells) }
        if codes.count > cells * 2 { codes.removeLast(codes.count - cells * 2) }
        return codes
    }
}

/// A segment's overview codes as its record carries them to the index. Equal to any other and
/// hashed as nothing: a record read back from its file (which has no overview) is the same
/// segment as the one the recorder finished. Any thread.
public struct LevelOverviewCodes: Hashable, Sendable {
    public var codes: [UInt8]

    public init(_ codes: [UInt8] = []) { self.codes = codes }

    public static func == (lhs: LevelOverviewCodes, rhs: LevelOverviewCodes) -> Bool { true }
    public func hash(into hasher: inout Hasher) {}
}

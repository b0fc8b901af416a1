// Where segments begin and end, in frames of the stream written: boundaries at multiples of
// the segment length in UTC, computed from the stream's start time and the sample rate alone.

/// Pure arithmetic: any thread.
struct RotationSchedule {
    let start: UTCTime
    let sampleRate: Int
    let segmentSeconds: Int

    /// The UTC time of frame `frame` (frame 0 is `start`).
    func time(atFrame frame: Int) -> UTCTime { start.advanced(byFrames: frame, sampleRate: sampleRate) }

    /// The first frame of the segment after the one that holds `frame`: the first frame at or
    /// after the next multiple of `segmentSeconds` (since the epoch) after `time(atFrame:)`.
    /// Always greater than `frame`.
    func nextBoundary(afterFrame frame: Int) -> Int {
        let length = Int64(segmentSeconds) * 1_000_000_000
        let boundary = (floorDivide(time(atFrame: frame).nanosecondsSinceEpoch, length) + 1) * length
        let offset = boundary - start.nanosecondsSinceEpoch
        let rate = Int64(sampleRate)
        let seconds = offset / 1_000_000_000
        let rest = offset % 1_000_000_000
        return Int(seconds * rate + (rest * rate + 999_999_999) / 1_000_000_000)
    }
}

/// A stretch of a capture tap's stream that was dropped because its ring was full.
///
/// The tap's stream is the frames it delivered; a gap sits *between* delivered frames:
/// `length` frames of input are missing after the first `position` frames delivered.
/// Gaps are whole periods, so `length` is a multiple of the JACK period at the time.
public struct CaptureGap: Equatable, Hashable, Sendable {
    /// Frames delivered before the gap.
    public var position: Int
    /// Frames missing.
    public var length: Int
    /// JACK frame time of the first missing frame.
    public var frameTime: UInt32

    @_noLocks
    public init(position: Int, length: Int, frameTime: UInt32) {
        self.position = position
        self.length = length
        self.frameTime = frameTime
    }
}

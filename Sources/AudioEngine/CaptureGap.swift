/// A stretch of a capture tap's stream that never arrived: dropped because its ring was full
/// (`overrun`: whole periods, a multiple of the JACK period at the time), or wall-clock time
/// in which JACK delivered no frames (`clockStall`: a stopped or stalled server, a driver that
/// lost sync; its length is that time in frames at the tap's rate).
///
/// The tap's stream is the frames it delivered; a gap sits *between* delivered frames:
/// `length` frames of input are missing after the first `position` frames delivered.
public struct CaptureGap: Equatable, Hashable, Sendable {
    /// Why the frames are missing.
    public enum Cause: UInt8, Sendable {
        /// The ring had no room: the archiver fell behind.
        case overrun
        /// JACK's clock stood still against the monotonic clock for more than a period.
        case clockStall
        /// Not a gap: the verdict on the `clockStall` gap at `position`. After a stall a
        /// server may run the cycles it missed back to back (PipeWire's timer-driven null sink
        /// does); `length` frames came that early, so they stand for part of the stall's time
        /// and the gap is that much shorter (0: none came early). Logged once per stall, when
        /// the cycles come at their pace again; the consumer holds a stall gap until then.
        case catchUp
    }

    /// Frames delivered before the gap.
    public var position: Int
    /// Frames missing.
    public var length: Int
    /// JACK frame time of the first missing frame.
    public var frameTime: UInt32
    public var cause: Cause
    /// A `clockStall` gap whose `catchUp` verdict follows in the log: its consumer holds it
    /// (and reads no frame past it) until then. False when the tap could not log it in time
    /// (a full ring or log) and gave up measuring the catch-up: it stands as it is.
    public var awaitsVerdict: Bool

    @_noLocks
    public init(position: Int, length: Int, frameTime: UInt32, cause: Cause = .overrun, awaitsVerdict: Bool = false) {
        self.position = position
        self.length = length
        self.frameTime = frameTime
        self.cause = cause
        self.awaitsVerdict = awaitsVerdict
    }
}

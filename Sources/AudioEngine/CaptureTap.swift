import Synchronization

/// A recorder's capture point: the consumer's end of a ring that the process thread fills with
/// an input group's samples (or a monitoring bus's), one whole period at a time. The ring is
/// planar (each channel one contiguous run): `peek` lends the consumer each channel's run in
/// place; `read` interleaves a copy.
///
/// A processed recording's capture tap carries a *reference tap* (`reference`): the same kind of
/// ring over what the process callback wrote to an output group's port buffers in the same
/// cycles (the far end the room heard: every player on that group mixed, other sessions'
/// included), published in the same graph snapshot, so frame 0 of both is the same period.
/// The voice processor cancels the capture's echo of it (docs/voice-processing.md).
///
/// Made by `AudioEngine.addCaptureTap` (or `addBusTap`); muted or unmuted with `AudioEngine.setZeroed`; removed
/// with `AudioEngine.removeCaptureTap` (or by the engine stopping). The handle owns the tap's
/// real-time memory and frees it in `deinit`; the engine keeps the handle while the process
/// thread can reach that memory. What is already in the ring stays readable after removal,
/// so a stop or a server loss loses nothing that was captured.
///
/// Threads: `read`, `peek`, `discard`, `availableToRead` and `drainGaps` belong to ONE consumer
/// thread (the archiver); the counters, `isAttached` and `isRetired` may be read from any thread.
public final class CaptureTap: @unchecked Sendable {
    // @unchecked: mutable state is the real-time memory, touched through atomics and the
    // single-producer/single-consumer ring and gap-log discipline documented above.

    /// The input group it copies; for a bus tap, the bus's name (`main`, `cue`); for a
    /// reference tap, the output group it copies.
    public let inputGroup: String
    /// True for a reference tap: its channels are output channels, copied after the players
    /// and monitoring wrote them.
    public let isReference: Bool
    /// The reference tap that goes with this capture tap (added and removed with it); nil for
    /// a tap whose capture is not processed.
    public let reference: CaptureTap?
    /// The monitoring bus it copies; nil for an input tap.
    public let bus: Bus?
    /// Channels per frame.
    public let channels: Int
    public let capacityFrames: Int

    let state: UnsafeMutablePointer<TapState>
    private let inputChannels: UnsafeMutablePointer<Int>
    private let attached = Atomic<Bool>(true)
    /// Set when the engine takes the tap out of the graph: the cycle after which no period can
    /// be written into it.
    private let retirement = Mutex<RetirementMark?>(nil)

    /// Control thread.
    /// For a bus tap, `flatInputChannels` index `MonitorState.busPointers`; for a reference tap
    /// (`isReference`), the flat output channels. `sampleRate`:
    /// JACK's rate, for the clock check (0: none; tests without a server).
    init(
        inputGroup: String, bus: Bus? = nil, flatInputChannels: [Int], capacityFrames: Int,
        zeroed: Bool, sampleRate: Int = 0, isReference: Bool = false, reference: CaptureTap? = nil
    ) {
        self.inputGroup = inputGroup
        self.bus = bus
        self.isReference = isReference
        self.reference = reference
        channels = flatInputChannels.count
        self.capacityFrames = capacityFrames
        inputChannels = .allocate(capacity: channels)
        inputChannels.initialize(from: flatInputChannels, count: channels)
        state = .allocate(capacity: 1)
        state.initialize(
            to: TapState(
                ring: FloatRing.allocate(channels: channels, capacityFrames: capacityFrames, planar: true),
                gaps: GapLog.allocate(capacity: 64), inputChannels: inputChannels,
                sampleRate: sampleRate))
        state.pointee.zeroed.store(zeroed, ordering: .relaxed)
    }

    deinit {
        state.pointee.ring.deallocate()
        state.pointee.gaps.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
        inputChannels.deinitialize(count: channels)
        inputChannels.deallocate()
    }

    /// Control thread: the engine no longer feeds this tap; `mark` (read right after the snapshot
    /// without it was published) says when the last cycle that could still write it is over. nil:
    /// no process thread ever had it (a test's tap, or one never published).
    func detach(after mark: RetirementMark?) {
        retirement.withLock { if $0 == nil { $0 = mark } }
        attached.store(false, ordering: .releasing)
    }

    // MARK: Consumer thread

    /// Whole frames ready to read.
    public var availableToRead: Int { state.pointee.ring.readableFrames() }

    /// Copies up to `buffer.count / channels` whole frames (interleaved) into `buffer`;
    /// returns how many frames it copied.
    public func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        return state.pointee.ring.read(into: base, frames: buffer.count / channels)
    }

    /// Lends the oldest readable frames in place: up to `maxFrames` of them, as far as the ring's
    /// end (the rest comes at the next call), writing each channel's first sample into
    /// `channelStarts` (`channels` entries, in the tap's channel order); returns how many frames.
    /// They stay put until handed back with `discard(frames:)`: the producer never writes over
    /// frames not yet given back.
    public func peek(maxFrames: Int, channelStarts: UnsafeMutablePointer<UnsafePointer<Float>>) -> Int {
        let ring = state.pointee.ring
        let start = ring.framesRead() % capacityFrames
        let count = min(maxFrames, ring.readableFrames(), capacityFrames - start)
        guard count > 0 else { return 0 }
        for channel in 0..<channels { channelStarts[channel] = UnsafePointer(ring.channel(channel) + start) }
        return count
    }

    /// Hands back up to `frames` of the oldest readable frames, looked at with `peek` or dropped
    /// unread (a pre-roll tap keeping only its last seconds); returns how many. Gaps logged
    /// before them stay to drain.
    @discardableResult
    public func discard(frames: Int) -> Int {
        let count = min(max(frames, 0), availableToRead)
        if count > 0 { state.pointee.ring.commitRead(frames: count) }
        return count
    }

    /// Stream position of the oldest readable frame (frames read or discarded so far).
    public var readPosition: Int { state.pointee.ring.framesRead() }

    /// Looks at the readable frames from stream position `from` (or the oldest readable one,
    /// if later) on, without consuming them: the first and the last frame in which any
    /// channel's magnitude reaches `threshold`, and the position after the last frame looked
    /// at. A level trigger decides its frame from the samples this way, not from when it looked.
    public func scanLevel(from position: Int, reaching threshold: Float) -> (
        first: Int?, last: Int?, scannedTo: Int
    ) {
        let ring = state.pointee.ring
        let start = max(position, ring.framesRead())
        let end = ring.framesRead() + ring.readableFrames()
        var first: Int?
        var last: Int?
        var frame = start
        while frame < end {
            let index = frame % capacityFrames
            for channel in 0..<channels where abs(ring.channel(channel)[index]) >= threshold {
                if first == nil { first = frame }
                last = frame
                break
            }
            frame += 1
        }
        return (first, last, max(start, end))
    }

    /// Reads up to `maxFrames` frames into a new array (interleaved).
    public func read(maxFrames: Int) -> [Float] {
        let frames = min(maxFrames, availableToRead)
        guard frames > 0 else { return [] }
        var samples = [Float](repeating: 0, count: frames * channels)
        let got = samples.withUnsafeMutableBufferPointer { read(into: $0) }
        samples.removeLast((frames - got) * channels)
        return samples
    }

    /// The gaps logged since the last call, oldest first. A gap is logged before any frame
    /// after it is readable, so after reading frame `position - 1` the consumer can learn of
    /// a gap at `position` here.
    public func drainGaps() -> [CaptureGap] {
        var gaps: [CaptureGap] = []
        while let gap = state.pointee.gaps.pop() { gaps.append(gap) }
        return gaps
    }

    // MARK: Any thread

    /// Frames delivered into the ring so far (the stream position; gaps not included).
    public var framesCaptured: Int { state.pointee.ring.framesWritten() }
    /// Periods dropped whole because the ring was full (apart from JACK xruns).
    public var overruns: Int { state.pointee.overruns.load(ordering: .relaxed) }
    /// Frames dropped in those periods.
    public var droppedFrames: Int { state.pointee.droppedFrames.load(ordering: .relaxed) }
    /// JACK frame time of the first frame delivered; nil before the first period.
    public var firstFrameTime: UInt32? {
        let value = state.pointee.firstFrameTime.load(ordering: .acquiring)
        return value == 0 ? nil : UInt32(truncatingIfNeeded: value)
    }
    /// Stalls of JACK's clock recorded as gaps (`CaptureGap.Cause.clockStall`), and the frames
    /// of wall-clock time they stand for.
    public var stalls: Int { state.pointee.stalls.load(ordering: .relaxed) }
    public var stalledFrames: Int { state.pointee.stalledFrames.load(ordering: .relaxed) }
    /// Times the frames ran ahead of the monotonic clock by more than a period.
    public var clockResets: Int { state.pointee.clockResets.load(ordering: .relaxed) }

    /// The latest period's place on the monotonic clock: `frames` of the tap's timeline
    /// (delivered, dropped and stalled frames since it was made) came before the period that
    /// JACK ran at `micros` (JACK's microsecond clock, CLOCK_MONOTONIC). nil before the first
    /// period, or while the process thread is writing it. For measuring drift.
    public var clockStamp: (frames: Int, micros: Int)? {
        let before = state.pointee.stampSequence.load(ordering: .sequentiallyConsistent)
        guard before > 0, before % 2 == 0 else { return nil }
        let frames = state.pointee.stampFrames.load(ordering: .sequentiallyConsistent)
        let micros = state.pointee.stampMicros.load(ordering: .sequentiallyConsistent)
        guard state.pointee.stampSequence.load(ordering: .sequentiallyConsistent) == before else { return nil }
        return (frames, micros)
    }
    /// Whether the tap writes zeros instead of samples.
    public var isZeroed: Bool { state.pointee.zeroed.load(ordering: .relaxed) }
    /// False once the engine stopped feeding this tap (removed, engine stopped, server lost).
    public var isAttached: Bool { attached.load(ordering: .acquiring) }
    /// True once no period can be written into the tap any more: it was taken out of the graph
    /// and the process thread has finished a cycle begun after that (or runs none: the client is
    /// closed). From then on what is readable is all there will be. A consumer that stops
    /// waits for this rather than for a time, which would have to cover the longest period.
    public var isRetired: Bool {
        guard !isAttached else { return false }
        return retirement.withLock { $0?.hasPassed ?? true }
    }
}

import Synchronization

/// An attached application's capture while its session's capture is processed (voiceChat,
/// videoChat, prefersEchoCancelledInput): the capture tap over the session's input group, with
/// its reference tap over the route's output (`CaptureTap.reference`, as a processed recorder
/// has), and the ring a worker writes the processed frames into, which the process callback
/// reads into the attachment's capture ports at a fixed delay (`ProcessedCaptureState`).
///
/// The delay the app hears is the processing's own latency (in the frames the worker writes)
/// plus `slackFrames`: one period of silence the ring starts with, the time the worker has to
/// process a period after the tap received it. A period the worker has not written in time is
/// silence for the app (`underruns`), and the delay stays the same.
///
/// Made by `AudioEngine.processCapture`, removed by `AudioEngine.unprocessCapture` (or with the
/// attachment). The handle owns the real-time memory and frees it in `deinit`, which runs only
/// once the process thread can no longer reach it (the engine's retired snapshots hold it).
///
/// Threads: `write` and `writableFrames` belong to ONE producer thread (the worker); the taps are
/// read by that thread as `CaptureTap` says; the counters may be read from any thread.
public final class ProcessedCapture: @unchecked Sendable {
    // @unchecked: the mutable state is the real-time memory (atomics and the SPSC ring).

    /// The capture tap over the session's input group; its `reference` is the far end.
    public let tap: CaptureTap
    /// Processed channels per frame (the tap's).
    public var channels: Int { tap.channels }
    public let capacityFrames: Int

    let state: UnsafeMutablePointer<ProcessedCaptureState>
    private let portChannels: UnsafeMutablePointer<Int>
    private let portCount: Int

    /// Control thread: `portChannels[k]` is the tap channel capture port k carries (−1: silence);
    /// the ring starts with `slackFrames` of silence.
    init(tap: CaptureTap, portChannels: [Int], slackFrames: Int) {
        self.tap = tap
        portCount = portChannels.count
        self.portChannels = .allocate(capacity: max(portCount, 1))
        self.portChannels.initialize(from: portChannels, count: portCount)
        // The fill stays near the slack plus a period; room for the longest period JACK allows
        // on top of both, and for a worker that comes back with a backlog.
        capacityFrames = 4 * max(slackFrames, 8_192)
        let ring = FloatRing.allocate(channels: tap.channels, capacityFrames: capacityFrames)
        ring.commitWrite(frames: slackFrames)
        state = .allocate(capacity: 1)
        state.initialize(
            to: ProcessedCaptureState(
                ring: ring, portChannels: self.portChannels, portCount: portCount, slackFrames: slackFrames))
    }

    deinit {
        state.pointee.ring.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
        portChannels.deinitialize(count: portCount)
        portChannels.deallocate()
    }

    // MARK: Producer thread

    /// Whole frames that fit in the ring now.
    public var writableFrames: Int { state.pointee.ring.writableFrames() }

    /// Copies up to `frames` interleaved frames (`channels` per frame) into the ring; returns
    /// how many fitted.
    public func write(from samples: UnsafePointer<Float>, frames: Int) -> Int {
        state.pointee.ring.write(from: samples, frames: frames)
    }

    // MARK: Any thread

    /// Frames of slack in the delay: the period the ring started with, or a longer period the
    /// server moved to since.
    public var slackFrames: Int { state.pointee.slackFrames.load(ordering: .relaxed) }
    /// Periods the app got silence because the worker had not written them in time, and their frames.
    public var underruns: Int { state.pointee.underruns.load(ordering: .relaxed) }
    public var underrunFrames: Int { state.pointee.underrunFrames.load(ordering: .relaxed) }
    /// Cycles that delivered from the ring (the first is the one the taps' first period is in).
    public var cyclesDelivered: Int { state.pointee.cycles.load(ordering: .relaxed) }
}

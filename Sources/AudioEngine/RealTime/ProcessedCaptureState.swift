// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// An attached application's processed capture as the process thread delivers it. The control
// thread allocates it (ProcessedCapture owns it) and frees it only after the process thread has
// moved past every snapshot that names it. The producer is a worker thread that runs the voice
// processor over the attachment's capture and reference taps and writes the result into `ring`.

import Synchronization

/// The consumer's end of an attachment's processed capture: a ring of processed frames
/// (interleaved, one channel per processed input channel) that the process thread reads into the
/// attachment's capture ports at a FIXED delay.
///
/// The delay is the ring's fill before a cycle: `slackFrames` of silence are in it when it is
/// made, the worker writes one period for every period the capture tap received, and each cycle
/// reads one period. When the worker is late (the period is not all there), the cycle gives
/// silence and owes the ring those frames: they are dropped when they come, so the delay stays
/// what it was. A period longer than the slack (the server's buffer size grew) plays the
/// difference as silence once and the slack becomes that period.
struct ProcessedCaptureState: ~Copyable {
    /// Worker → process thread: processed frames, interleaved, `ring.channels` per frame.
    let ring: FloatRing
    /// For each capture port of the attachment, its channel in `ring` (−1: silence).
    let portChannels: UnsafeMutablePointer<Int>
    let portCount: Int

    /// Process thread, published for readers: the frames of slack in the delay (the ring's fill
    /// before a cycle, once the worker keeps up).
    let slackFrames: Atomic<Int>
    /// Process → readers: periods played as silence because the worker was late, and their frames.
    let underruns = Atomic<Int>(0)
    let underrunFrames = Atomic<Int>(0)
    /// Process → readers: cycles delivered.
    let cycles = Atomic<Int>(0)

    // Process thread only.
    /// Frames of late periods not yet dropped from the ring.
    var owedFrames = 0

    init(ring: FloatRing, portChannels: UnsafeMutablePointer<Int>, portCount: Int, slackFrames: Int) {
        self.ring = ring
        self.portChannels = portChannels
        self.portCount = portCount
        self.slackFrames = Atomic(slackFrames)
    }
}

extension ProcessedCaptureState {
    /// Process thread: one period into `buffers` (the attachment's capture ports), or zeros into
    /// them when `open` is false (the period is consumed all the same, so the delay stays fixed).
    @_noLocks
    mutating func deliver(frames: Int, to buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, open: Bool) {
        cycles.add(1, ordering: .relaxed)
        var slack = slackFrames.load(ordering: .relaxed)
        // A longer period than the slack: its first frames are silence, once, and the delay grows.
        var silentStart = 0
        if frames > slack {
            silentStart = frames - slack
            slack = frames
            slackFrames.store(slack, ordering: .relaxed)
        }
        if owedFrames > 0 {
            let dropped = min(owedFrames, ring.readableFrames())
            ring.commitRead(frames: dropped)
            owedFrames -= dropped
        }
        let wanted = frames - silentStart
        let ready = owedFrames == 0 && ring.readableFrames() >= wanted
        if !ready {
            owedFrames += wanted
            underruns.add(1, ordering: .relaxed)
            underrunFrames.add(wanted, ordering: .relaxed)
        }
        let channels = ring.channels
        let start = ring.framesRead()
        for port in 0..<portCount {
            let buffer = buffers[port]
            let channel = portChannels[port]
            guard ready && open && channel >= 0 && channel < channels else {
                clearSamples(buffer, count: frames)
                continue
            }
            clearSamples(buffer, count: silentStart)
            for frame in 0..<wanted {
                buffer[silentStart + frame] = ring.samples[ring.sampleIndex(ofFrame: start + frame) + channel]
            }
        }
        if ready { ring.commitRead(frames: wanted) }
    }
}

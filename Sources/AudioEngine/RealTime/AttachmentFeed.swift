// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// An attached application's audio (`session.attach`) as the process thread moves it. The
// control thread allocates it (AttachmentHandle owns it) and frees it only after the process
// thread has moved past every snapshot that names it.

internal import CJack
import Synchronization

/// One attachment's real-time half: recd's JACK ports for it and where their samples go.
///
/// Play side: the app's output ports are connected to recd's `playPorts` (inputs). Each
/// period their samples are written, interleaved, into the ring of the attachment's
/// `PlayerVoice`, which the same cycle mixes into the session's output group with its gain,
/// ramps and route table: the app's audio is a player whose feeder is the JACK graph.
///
/// Capture side: recd's `capturePorts` (outputs) feed the app's input ports with flat input
/// channels `captureSources[k]` (−1: silence), or zeros while `captureOpen` is false (no
/// record permission, input muted, session not active). While the session's capture is
/// processed (voiceChat, videoChat, prefersEchoCancelledInput) the snapshot pairs the feed with a
/// `ProcessedCaptureState` and the capture ports carry that instead, at its fixed delay, under
/// the same `captureOpen`.
struct AttachmentFeed: ~Copyable {
    /// recd's input ports receiving the app's play ports (jack_port_t *; nil in tests).
    let playPorts: UnsafeMutablePointer<OpaquePointer?>
    /// This period's buffers of `playPorts` (filled at the start of each cycle; tests fill them).
    let playBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let playCount: Int
    /// The voice that plays the app's audio; its ring has `playCount` channels. Nil when the
    /// attachment has no play ports.
    let voice: UnsafeMutablePointer<PlayerVoice>?
    /// recd's output ports feeding the app's capture ports.
    let capturePorts: UnsafeMutablePointer<OpaquePointer?>
    let captureBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let captureCount: Int
    /// Control → process: the flat input channel each capture port carries (−1: silence).
    let captureSources: UnsafeMutablePointer<Atomic<Int>>
    /// Control → process: whether the capture ports carry their sources (false: zeros).
    let captureOpen = Atomic<Bool>(false)
    /// Process → readers: periods fed.
    let periods = Atomic<Int>(0)

    init(
        playPorts: UnsafeMutablePointer<OpaquePointer?>,
        playBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, playCount: Int,
        voice: UnsafeMutablePointer<PlayerVoice>?, capturePorts: UnsafeMutablePointer<OpaquePointer?>,
        captureBuffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, captureCount: Int,
        captureSources: UnsafeMutablePointer<Atomic<Int>>
    ) {
        self.playPorts = playPorts
        self.playBuffers = playBuffers
        self.playCount = playCount
        self.voice = voice
        self.capturePorts = capturePorts
        self.captureBuffers = captureBuffers
        self.captureCount = captureCount
        self.captureSources = captureSources
    }
}

extension AttachmentFeed {
    /// Process thread: fetches this period's port buffers (ports that are nil keep the
    /// buffers a test put there). False when JACK gave no buffer: skip the attachment.
    @_noLocks
    func fetchBuffers(frames: Int) -> Bool {
        for index in 0..<playCount {
            guard let port = playPorts[index] else { continue }
            guard let buffer = jack_port_get_buffer(port, jack_nframes_t(frames)) else { return false }
            playBuffers[index] = buffer.assumingMemoryBound(to: Float.self)
        }
        for index in 0..<captureCount {
            guard let port = capturePorts[index] else { continue }
            guard let buffer = jack_port_get_buffer(port, jack_nframes_t(frames)) else { return false }
            captureBuffers[index] = buffer.assumingMemoryBound(to: Float.self)
        }
        return true
    }

    /// Process thread, before the players render: this period's play samples go into the
    /// voice's ring (what a paused voice left unread is dropped first: the app's audio is
    /// live, never queued), and the capture ports get their inputs or zeros; with `processed`,
    /// its processed frames (or zeros).
    @_noLocks
    func feed(
        frames: Int, inputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, inputCount: Int,
        processed: UnsafeMutablePointer<ProcessedCaptureState>? = nil
    ) {
        if let voice {
            let ring = voice.pointee.ring
            ring.commitRead(frames: ring.readableFrames())
            let count = min(frames, ring.writableFrames())
            let start = ring.framesWritten() % ring.capacityFrames
            for frame in 0..<count {
                let slot = ring.samples + ((start + frame) % ring.capacityFrames) * playCount
                for channel in 0..<playCount { slot[channel] = playBuffers[channel][frame] }
            }
            ring.commitWrite(frames: count)
        }
        let open = captureOpen.load(ordering: .acquiring)
        if let processed {
            processed.pointee.deliver(frames: frames, to: captureBuffers, open: open)
            periods.add(1, ordering: .relaxed)
            return
        }
        for index in 0..<captureCount {
            let source = captureSources[index].load(ordering: .relaxed)
            if open && source >= 0 && source < inputCount {
                copySamples(from: inputs[source], to: captureBuffers[index], count: frames)
            } else {
                clearSamples(captureBuffers[index], count: frames)
            }
        }
        periods.add(1, ordering: .relaxed)
    }
}

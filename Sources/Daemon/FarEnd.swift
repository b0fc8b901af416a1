// The far end of a processed recording: the reference tap (what recd wrote to the session's
// route output), read in step with the capture's timeline for `VoiceCaptureSource`.
//
// Threads: the archiver thread, except `init` (the control thread).
import AudioEngine

/// The reference tap of a `VoiceCaptureSource`, aligned with its capture by their timelines:
/// frames of a capture overrun (dropped from the capture, not from the reference, whose ring is
/// twice as long) are skipped, and frames the reference lost to its own overrun are silence.
/// It fills one block of the far end at a time for the processor.
final class FarEnd {
    let tap: CaptureTap
    /// The reference's stream position of the capture's first delivered frame: 0 for a tap
    /// made for the recorder, the pre-roll's first frame for a pre-roll tap taken over (its
    /// keeper trimmed the reference in step with the capture).
    private let origin: Int
    /// The reference's overruns not yet passed (its stream positions), and the frames of those
    /// passed.
    private var shifts: [CaptureGap] = []
    private var dropped = 0
    /// The far end of the frames being processed, interleaved (`tap.channels` per frame).
    private(set) var block: [Float] = []

    /// Control thread.
    init(_ tap: CaptureTap) {
        self.tap = tap
        origin = tap.readPosition
    }

    var channels: Int { tap.channels }

    /// Makes room for `frames` frames in `block`.
    func allocate(frames: Int) {
        block = [Float](repeating: 0, count: frames * tap.channels)
    }

    /// Frames `block` holds.
    var blockFrames: Int { block.count / max(tap.channels, 1) }

    /// Takes note of the reference's overruns since the last call.
    func drainGaps() {
        for gap in tap.drainGaps() where gap.cause == .overrun { shifts.append(gap) }
    }

    /// `block` all silence (the flush after the last captured frame).
    func silence() {
        block.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
    }

    /// Fills `block` with the far end of capture timeline frames `from..<from+frames`; returns
    /// how many it could (fewer while the reference's period is not in its ring yet).
    func fill(from timeline: Int, frames: Int) -> Int {
        let far = tap.channels
        var filled = 0
        while filled < frames {
            let position = tap.readPosition
            while let gap = shifts.first, gap.position <= position {
                shifts.removeFirst()
                dropped += gap.length
            }
            let at = position + dropped
            let wanted = origin + timeline + filled
            if at < wanted {
                // Frames of a capture overrun: their far end is not wanted.
                var skip = wanted - at
                if let next = shifts.first { skip = min(skip, next.position - position) }
                if tap.discard(frames: skip) == 0 { break }
                continue
            }
            var count = frames - filled
            if at > wanted {
                // The reference lost these frames: no far end for them.
                count = min(count, at - wanted)
                block.withUnsafeMutableBufferPointer {
                    ($0.baseAddress! + filled * far).update(repeating: 0, count: count * far)
                }
                filled += count
                continue
            }
            if let next = shifts.first { count = min(count, next.position - position) }
            let slots = filled * far..<(filled + count) * far
            let got = block.withUnsafeMutableBufferPointer { block in
                tap.read(into: UnsafeMutableBufferPointer(rebasing: block[slots]))
            }
            if got == 0 { break }
            filled += got
        }
        if filled < frames && tap.isRetired && tap.availableToRead == 0 {
            // Nothing more will come: the rest has no far end.
            block.withUnsafeMutableBufferPointer {
                ($0.baseAddress! + filled * far).update(repeating: 0, count: (frames - filled) * far)
            }
            filled = frames
        }
        return filled
    }
}

// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// The ring is shared by exactly one producer and one consumer. One side is the process thread;
// the other is a feeder (players) or the archiver (capture taps), which use the same lock-free
// methods. Allocation and freeing are the control thread's (see `allocate`/`deallocate`).

import Synchronization

/// A single-producer/single-consumer ring of float frames in plain memory.
///
/// Counts are in whole frames, so a reader can never see part of a frame: the producer
/// publishes `written` only after every sample of the frames it covers is stored.
/// `written` and `read` are monotonic frame counters (64-bit: they do not wrap in practice);
/// their difference is the fill level. The struct is a bundle of pointers: copying it does not
/// copy the ring. Whoever allocated it frees it once neither side can touch it any more.
///
/// Its layout is fixed when it is made. Interleaved (players, attachments): a feeder writes
/// frames as files decode them. Planar (capture taps): each channel is `capacityFrames`
/// contiguous samples, so the process thread stores a period channel by channel as JACK's
/// port buffers hold it, and the archiver hands each channel's run to the encoder in place
/// (`channel(_:)`), with no interleaving on one side and no de-interleaving on the other.
struct FloatRing {
    /// `capacityFrames * channels` samples: interleaved frames, or (`planar`) one run of
    /// `capacityFrames` samples per channel.
    let samples: UnsafeMutablePointer<Float>
    /// Index 0: frames written so far; index `readCounterIndex`: frames read so far. They sit
    /// a cache line apart so that producer and consumer do not share one.
    let counters: UnsafeMutablePointer<Atomic<Int>>
    let channels: Int
    let capacityFrames: Int
    /// Channel-major (see the type).
    let planar: Bool

    // Computed, not stored: a static stored property is lazily initialised behind a lock.
    static var readCounterIndex: Int { 8 }
    private static var counterSlots: Int { 16 }

    /// Control thread (or any non-real-time thread). Zero-fills the samples, which also
    /// faults the pages in before the process thread sees them.
    static func allocate(channels: Int, capacityFrames: Int, planar: Bool = false) -> FloatRing {
        precondition(channels > 0 && capacityFrames > 0, "a ring needs channels and frames")
        let samples = UnsafeMutablePointer<Float>.allocate(capacity: channels * capacityFrames)
        samples.initialize(repeating: 0, count: channels * capacityFrames)
        let counters = UnsafeMutablePointer<Atomic<Int>>.allocate(capacity: counterSlots)
        for slot in 0..<counterSlots { (counters + slot).initialize(to: Atomic(0)) }
        return FloatRing(
            samples: samples, counters: counters, channels: channels,
            capacityFrames: capacityFrames, planar: planar)
    }

    /// Control thread, once neither the process thread nor the other side can use the ring.
    func deallocate() {
        samples.deinitialize(count: channels * capacityFrames)
        samples.deallocate()
        counters.deinitialize(count: Self.counterSlots)
        counters.deallocate()
    }

    // MARK: Counters

    /// Frames written since the ring was made (producer: exact; consumer: a lower bound).
    @_noLocks
    func framesWritten() -> Int { counters[0].load(ordering: .acquiring) }

    /// Frames read since the ring was made.
    @_noLocks
    func framesRead() -> Int { counters[Self.readCounterIndex].load(ordering: .acquiring) }

    /// Producer side: whole frames that fit now.
    @_noLocks
    func writableFrames() -> Int {
        let written = counters[0].load(ordering: .relaxed)
        let read = counters[Self.readCounterIndex].load(ordering: .acquiring)
        return capacityFrames - (written - read)
    }

    /// Consumer side: whole frames ready to read.
    @_noLocks
    func readableFrames() -> Int {
        let written = counters[0].load(ordering: .acquiring)
        let read = counters[Self.readCounterIndex].load(ordering: .relaxed)
        return written - read
    }

    /// Producer side: publishes `frames` frames stored since the last commit.
    @_noLocks
    func commitWrite(frames: Int) {
        counters[0].add(frames, ordering: .releasing)
    }

    /// Consumer side: releases `frames` frames for the producer to reuse.
    @_noLocks
    func commitRead(frames: Int) {
        counters[Self.readCounterIndex].add(frames, ordering: .releasing)
    }

    /// The sample index of frame counter `frame`'s first channel (interleaved rings).
    @_noLocks
    func sampleIndex(ofFrame frame: Int) -> Int { (frame % capacityFrames) * channels }

    /// Planar rings: channel `channel`'s samples; frame counter `f` is at `f % capacityFrames`.
    @_noLocks
    func channel(_ channel: Int) -> UnsafeMutablePointer<Float> { samples + channel * capacityFrames }

    // MARK: Interleaved copies (feeder and archiver side; also real-time safe)

    /// Producer side: copies as many whole frames of `source` (interleaved, `channels` per
    /// frame) as fit and returns how many frames it wrote.
    @_noLocks
    func write(from source: UnsafePointer<Float>, frames: Int) -> Int {
        let count = min(frames, writableFrames())
        if count <= 0 { return 0 }
        let start = counters[0].load(ordering: .relaxed) % capacityFrames
        // The capacity is whole frames, so the wrap always falls on a frame boundary.
        let firstRun = min(count, capacityFrames - start)
        transfer(ringFrame: start, other: source, frames: firstRun, intoRing: true)
        if firstRun < count {
            transfer(ringFrame: 0, other: source + firstRun * channels, frames: count - firstRun, intoRing: true)
        }
        commitWrite(frames: count)
        return count
    }

    /// Consumer side: copies up to `frames` whole frames into `destination` (interleaved)
    /// and returns how many frames it read.
    @_noLocks
    func read(into destination: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        let count = min(frames, readableFrames())
        if count <= 0 { return 0 }
        let start = counters[Self.readCounterIndex].load(ordering: .relaxed) % capacityFrames
        let firstRun = min(count, capacityFrames - start)
        transfer(ringFrame: start, other: destination, frames: firstRun, intoRing: false)
        if firstRun < count {
            transfer(
                ringFrame: 0, other: destination + firstRun * channels, frames: count - firstRun, intoRing: false)
        }
        commitRead(frames: count)
        return count
    }

    /// Copies `frames` frames between the ring (from ring frame index `ringFrame`, no wrap) and
    /// the interleaved buffer `other`, in the direction `intoRing` says.
    @_noLocks
    private func transfer(ringFrame: Int, other: UnsafePointer<Float>, frames: Int, intoRing: Bool) {
        let mutableOther = UnsafeMutablePointer(mutating: other)
        guard planar else {
            let ringPart = samples + ringFrame * channels
            if intoRing {
                copySamples(from: other, to: ringPart, count: frames * channels)
            } else {
                copySamples(from: ringPart, to: mutableOther, count: frames * channels)
            }
            return
        }
        for index in 0..<channels {
            let run = channel(index) + ringFrame
            var interleaved = mutableOther + index
            for frame in 0..<frames {
                if intoRing { run[frame] = interleaved.pointee } else { interleaved.pointee = run[frame] }
                interleaved += channels
            }
        }
    }
}

/// Copies `count` samples. A plain loop: the generic `update(from:count:)` is not visibly free of
/// releases to the `@_noLocks` checker, and `memcpy` is an unannotated C call. The optimiser
/// vectorises it.
@_noLocks
@inline(__always)
func copySamples(
    from source: UnsafePointer<Float>, to destination: UnsafeMutablePointer<Float>, count: Int
) {
    for index in 0..<count { destination[index] = source[index] }
}

/// Sets `count` samples to zero (see `copySamples` for why a loop).
@_noLocks
@inline(__always)
func clearSamples(_ destination: UnsafeMutablePointer<Float>, count: Int) {
    for index in 0..<count { destination[index] = 0 }
}

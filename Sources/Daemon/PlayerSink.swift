// The seam between a file player's feeder and the engine player it fills.

import AudioEngine

/// What a feeder writes into: the producer end of a player's ring. `PlayerHandle` is the real
/// one; tests stand in their own to watch every sample.
///
/// Every member is called on the feeder thread only.
protocol PlayerSink: AnyObject, Sendable {
    /// Interleaved channels per frame.
    var channels: Int { get }
    /// Ring size in frames.
    var capacityFrames: Int { get }
    /// Frames `write` would take now.
    var availableToWrite: Int { get }
    /// Appends whole frames; returns how many it took.
    func write(_ samples: UnsafeBufferPointer<Float>) -> Int
    /// No more frames will come.
    func finish()
    /// False once nobody will read the ring any more.
    var isAttached: Bool { get }
}

extension PlayerHandle: PlayerSink {}

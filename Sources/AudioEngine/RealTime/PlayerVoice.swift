// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// A player's real-time half. The control thread allocates it (PlayerHandle owns it), writes
// `command`, and frees it only after the process thread has moved past every snapshot that
// names it. The feeder thread fills `ring`.

import Synchronization

/// One player stream as the process thread sees it: a ring of interleaved frames, where each
/// channel goes, and a gain that ramps linearly toward its target.
struct PlayerVoice: ~Copyable {
    let ring: FloatRing
    /// Routes: player channel `routeSources[r]` is added into flat output channel
    /// `routeDestinations[r]`.
    let routeSources: UnsafeMutablePointer<Int>
    let routeDestinations: UnsafeMutablePointer<Int>
    let routeCount: Int
    /// Flat output channel of channel 0 of the player's output group: a route's destination
    /// minus this is its channel within the group, which is the bus channel it feeds when the
    /// player is a monitoring source.
    let flatOutputBase: Int

    /// Control → process: the latest `PlayerCommand`, packed. The process thread applies a
    /// new value at the start of its next period.
    let command: Atomic<UInt64>
    /// Feeder → process: no more frames will come; running dry is then the end, not an
    /// underrun.
    let endOfStream = Atomic<Bool>(false)

    // Process → readers.
    /// Periods in which the ring ran dry while playing (zeros were played instead).
    let underruns = Atomic<Int>(0)
    /// Frames replaced by zeros in those periods.
    let underrunFrames = Atomic<Int>(0)
    /// Frames taken from the ring and played.
    let framesPlayed = Atomic<Int>(0)
    /// A `PlayerActivity` raw value.
    let activity = Atomic<UInt8>(PlayerActivity.paused.rawValue)

    // Process thread only.
    var appliedCommand: UInt64 = .max
    var gain: Float = 0
    var targetGain: Float = 0
    var gainStep: Float = 0
    /// Gain where the current ramp started; the ramp's gain at frame k is
    /// `rampStartGain + gainStep * k`, computed afresh so rounding does not accumulate.
    var rampStartGain: Float = 0
    var rampLength = 0
    var rampFramesDone = 0
    var rampFramesLeft: Int { rampLength - rampFramesDone }
    var pausing = true

    init(
        ring: FloatRing, routeSources: UnsafeMutablePointer<Int>,
        routeDestinations: UnsafeMutablePointer<Int>, routeCount: Int, flatOutputBase: Int,
        command: PlayerCommand
    ) {
        self.ring = ring
        self.routeSources = routeSources
        self.routeDestinations = routeDestinations
        self.routeCount = routeCount
        self.flatOutputBase = flatOutputBase
        self.command = Atomic(command.packed)
    }
}

/// What the process thread is doing with a player, as published to readers.
enum PlayerActivity: UInt8 {
    /// Not reading its ring (never started, or a pause has finished its ramp).
    case paused
    /// Reading and mixing (possibly ramping).
    case playing
    /// End of stream reached: the ring is empty and the feeder said no more will come.
    case drained
}

/// A control-thread order for a player: a target gain, the ramp to reach it, and whether to
/// pause (ramp to zero, then stop reading). Packed into one word so the process thread sees
/// all of it or none of it.
struct PlayerCommand: Equatable {
    var gain: Float
    var rampFrames: Int
    var paused: Bool

    /// Ramps are capped to 31 bits of frames (about 12 hours at 48 kHz).
    static var maximumRampFrames: Int { Int(Int32.max) }

    var packed: UInt64 {
        let ramp = UInt64(min(max(rampFrames, 0), Self.maximumRampFrames))
        return UInt64(gain.bitPattern) | ramp << 32 | (paused ? 1 << 63 : 0)
    }

    @_noLocks
    init(packed: UInt64) {
        gain = Float(bitPattern: UInt32(truncatingIfNeeded: packed))
        rampFrames = Int((packed >> 32) & 0x7FFF_FFFF)
        paused = packed >> 63 == 1
    }

    init(gain: Float, rampFrames: Int, paused: Bool) {
        self.gain = gain
        self.rampFrames = rampFrames
        self.paused = paused
    }
}

extension PlayerVoice {
    /// Process thread: applies a changed command, then adds `frames` frames of this player
    /// into `outputs` (one buffer per flat output channel).
    @_noLocks
    mutating func render(
        frames: Int, outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    ) {
        render(frames: frames, into: outputs, destinationBase: 0, destinationLimit: Int.max)
    }

    /// Process thread: `render`, but into `busChannels` bus buffers instead of the output
    /// ports: group channel n feeds bus channel n; routes to group channels past the bus are
    /// dropped. For a player that is a monitoring source.
    @_noLocks
    mutating func render(
        frames: Int, toBus buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>,
        busChannels: Int
    ) {
        render(
            frames: frames, into: buffers, destinationBase: flatOutputBase,
            destinationLimit: busChannels)
    }

    /// Adds into `outputs[routeDestinations[r] - destinationBase]` where that index is below
    /// `destinationLimit`.
    @_noLocks
    private mutating func render(
        frames: Int, into outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>,
        destinationBase: Int, destinationLimit: Int
    ) {
        let packed = command.load(ordering: .acquiring)
        if packed != appliedCommand { apply(packed) }

        if pausing && rampFramesLeft == 0 {
            // The pause ramp is over (or there was none): stop reading.
            gain = 0
            activity.store(PlayerActivity.paused.rawValue, ordering: .releasing)
            return
        }

        let available = ring.readableFrames()
        let playable = min(available, frames)
        if playable < frames {
            if endOfStream.load(ordering: .acquiring) {
                if playable == 0 {
                    activity.store(PlayerActivity.drained.rawValue, ordering: .releasing)
                }
            } else {
                underruns.add(1, ordering: .relaxed)
                underrunFrames.add(frames - playable, ordering: .relaxed)
            }
        }
        if playable > 0 {
            activity.store(PlayerActivity.playing.rawValue, ordering: .releasing)
        }

        // Mix frame by frame so the ramp moves once per frame; the ring may wrap once.
        let start = ring.framesRead() % ring.capacityFrames
        let firstRun = min(playable, ring.capacityFrames - start)
        mix(
            from: ring.samples + start * ring.channels, frames: firstRun,
            into: outputs, outputOffset: 0, destinationBase: destinationBase,
            destinationLimit: destinationLimit)
        if firstRun < playable {
            mix(
                from: ring.samples, frames: playable - firstRun,
                into: outputs, outputOffset: firstRun, destinationBase: destinationBase,
                destinationLimit: destinationLimit)
        }
        // Frames the ring could not supply are silence; the ramp still moves with time.
        advanceRamp(frames: frames - playable)
        ring.commitRead(frames: playable)
        framesPlayed.add(playable, ordering: .relaxed)
    }

    @_noLocks
    private mutating func apply(_ packed: UInt64) {
        appliedCommand = packed
        let order = PlayerCommand(packed: packed)
        pausing = order.paused
        targetGain = order.paused ? 0 : order.gain
        rampFramesDone = 0
        if order.rampFrames == 0 || gain == targetGain {
            gain = targetGain
            gainStep = 0
            rampLength = 0
        } else {
            rampStartGain = gain
            gainStep = (targetGain - gain) / Float(order.rampFrames)
            rampLength = order.rampFrames
        }
    }

    /// One step of the linear ramp; the last step lands exactly on the target.
    @_noLocks
    @inline(__always)
    private mutating func stepGain() {
        if rampFramesDone < rampLength {
            rampFramesDone += 1
            gain =
                rampFramesDone == rampLength
                ? targetGain : rampStartGain + gainStep * Float(rampFramesDone)
        }
    }

    @_noLocks
    private mutating func advanceRamp(frames: Int) {
        for _ in 0..<frames { stepGain() }
    }

    @_noLocks
    private mutating func mix(
        from source: UnsafeMutablePointer<Float>, frames: Int,
        into outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, outputOffset: Int,
        destinationBase: Int, destinationLimit: Int
    ) {
        let channels = ring.channels
        for frame in 0..<frames {
            stepGain()
            let sampleBase = frame * channels
            for route in 0..<routeCount {
                let destination = routeDestinations[route] - destinationBase
                if destination >= destinationLimit { continue }
                let sample = source[sampleBase + routeSources[route]]
                outputs[destination][outputOffset + frame] += sample * gain
            }
        }
    }
}

// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// A player's real-time half. The control thread allocates it (PlayerHandle owns it), writes
// `command`, and frees it only after the process thread has moved past every snapshot that
// names it. The feeder thread fills `ring`.

import Synchronization

/// Where a player's channels go, as one immutable table: player channel `sources[r]` is added
/// into flat output channel `destinations[r]`. The control thread builds one per output group
/// the player ever plays to (`PlayerHandle` owns them all until it is freed: moves are rare);
/// the process thread reads whichever `PlayerVoice.table` names.
struct PlayerRouteTable {
    let sources: UnsafeMutablePointer<Int>
    let destinations: UnsafeMutablePointer<Int>
    let count: Int
    /// Flat output channel of channel 0 of the table's output group: a destination minus this
    /// is its channel within the group, which is the bus channel it feeds when the player is a
    /// monitoring source.
    let flatOutputBase: Int
    /// Frames over which the process thread crossfades into this table from the one it used
    /// before (0: at once).
    let crossfadeFrames: Int
}

/// One player stream as the process thread sees it: a ring of interleaved frames, where each
/// channel goes, and a gain that ramps linearly toward its target.
struct PlayerVoice: ~Copyable {
    let ring: FloatRing
    /// Control → process: the address of the current `PlayerRouteTable`. When it changes, the
    /// process thread crossfades from the table it used last period to the new one over the
    /// new table's `crossfadeFrames` (the same samples fade out on the old destinations while
    /// they fade in on the new ones: no gap, no click). A change that arrives during a
    /// crossfade is taken up when that crossfade has finished.
    let table: Atomic<UInt>

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
    /// Moves (route table changes) the process thread has taken up.
    let movesApplied = Atomic<Int>(0)

    // Process thread only.
    var appliedCommand: UInt64 = .max
    /// The gain and its ramp toward the command's.
    var ramp = GainRamp()
    var pausing = true
    /// The table mixed into (fading in, while a crossfade runs).
    var appliedTable: UnsafeMutablePointer<PlayerRouteTable>
    /// The crossfade from the table used before, while one runs.
    var crossfade = Crossfade()

    init(ring: FloatRing, table: UnsafeMutablePointer<PlayerRouteTable>, command: PlayerCommand) {
        self.ring = ring
        self.table = Atomic(UInt(bitPattern: table))
        self.appliedTable = table
        self.command = Atomic(command.packed)
    }
}

extension PlayerVoice {
    /// A gain that moves linearly toward its target, one step per frame; the last step lands
    /// exactly on the target. Stored inline in the voice; process thread only.
    struct GainRamp {
        var gain: Float = 0
        var target: Float = 0
        var step: Float = 0
        /// Gain where the current ramp started; the ramp's gain at frame k is
        /// `startGain + step * k`, computed afresh so rounding does not accumulate.
        var startGain: Float = 0
        var length = 0
        var framesDone = 0
        var framesLeft: Int { length - framesDone }

        /// Heads for `newTarget` over `frames` frames (at once for 0 or when already there),
        /// starting afresh from where the gain stands.
        @_noLocks
        mutating func start(toward newTarget: Float, frames: Int) {
            target = newTarget
            framesDone = 0
            if frames == 0 || gain == target {
                gain = target
                step = 0
                length = 0
            } else {
                startGain = gain
                step = (target - gain) / Float(frames)
                length = frames
            }
        }

        /// One frame's step.
        @_noLocks
        @inline(__always)
        mutating func advance() {
            if framesDone < length {
                framesDone += 1
                gain = framesDone == length ? target : startGain + step * Float(framesDone)
            }
        }
    }

    /// A move's crossfade: the table fading out (nil: none runs) and how far it has come.
    /// Stored inline in the voice; process thread only.
    struct Crossfade {
        var fadingTable: UnsafeMutablePointer<PlayerRouteTable>?
        var length = 0
        var done = 0
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
        render(frames: frames, into: outputs, toBus: false, busChannels: Int.max)
    }

    /// Process thread: `render`, but into `busChannels` bus buffers instead of the output
    /// ports: group channel n feeds bus channel n; routes to group channels past the bus are
    /// dropped. For a player that is a monitoring source.
    @_noLocks
    mutating func render(
        frames: Int, toBus buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>,
        busChannels: Int
    ) {
        render(frames: frames, into: buffers, toBus: true, busChannels: busChannels)
    }

    /// Adds into `outputs[destination]`, where a destination is a route table's flat output
    /// channel, or (`toBus`) its channel within the table's group, kept below `busChannels`.
    @_noLocks
    private mutating func render(
        frames: Int, into outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>,
        toBus: Bool, busChannels: Int
    ) {
        let packed = command.load(ordering: .acquiring)
        if packed != appliedCommand { apply(packed) }

        if pausing && ramp.framesLeft == 0 {
            // The pause ramp is over (or there was none): stop reading. Nothing is heard, so
            // a move takes effect at once.
            takeUpMove(crossfade: false)
            ramp.gain = 0
            activity.store(PlayerActivity.paused.rawValue, ordering: .releasing)
            return
        }
        takeUpMove(crossfade: true)

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

        // Mix frame by frame so the ramps move once per frame; the ring may wrap once.
        let start = ring.framesRead() % ring.capacityFrames
        let firstRun = min(playable, ring.capacityFrames - start)
        mix(
            from: ring.samples + start * ring.channels, frames: firstRun,
            into: outputs, outputOffset: 0, toBus: toBus, busChannels: busChannels)
        if firstRun < playable {
            mix(
                from: ring.samples, frames: playable - firstRun,
                into: outputs, outputOffset: firstRun, toBus: toBus, busChannels: busChannels)
        }
        // Frames the ring could not supply are silence; the ramps still move with time.
        advanceRamps(frames: frames - playable)
        ring.commitRead(frames: playable)
        framesPlayed.add(playable, ordering: .relaxed)
    }

    /// Takes up a table the control thread published since the last period: with `crossfade`,
    /// the old one fades out over the new one's `crossfadeFrames`; a crossfade still running
    /// is finished first.
    @_noLocks
    private mutating func takeUpMove(crossfade fades: Bool) {
        guard crossfade.fadingTable == nil,
            let current = UnsafeMutablePointer<PlayerRouteTable>(
                bitPattern: table.load(ordering: .acquiring)),
            current != appliedTable
        else { return }
        if fades && current.pointee.crossfadeFrames > 0 {
            crossfade = Crossfade(fadingTable: appliedTable, length: current.pointee.crossfadeFrames, done: 0)
        }
        appliedTable = current
        movesApplied.add(1, ordering: .relaxed)
    }

    @_noLocks
    private mutating func apply(_ packed: UInt64) {
        appliedCommand = packed
        let order = PlayerCommand(packed: packed)
        pausing = order.paused
        ramp.start(toward: order.paused ? 0 : order.gain, frames: order.rampFrames)
    }

    /// One step of a running crossfade: the new table's weight for this frame (the old one
    /// takes the rest). The last step gives 1 and ends the crossfade.
    @_noLocks
    @inline(__always)
    private mutating func stepCrossfade() -> Float {
        guard crossfade.fadingTable != nil else { return 1 }
        crossfade.done += 1
        if crossfade.done >= crossfade.length {
            crossfade.fadingTable = nil
            return 1
        }
        return Float(crossfade.done) / Float(crossfade.length)
    }

    @_noLocks
    private mutating func advanceRamps(frames: Int) {
        for _ in 0..<frames {
            ramp.advance()
            _ = stepCrossfade()
        }
    }

    @_noLocks
    private mutating func mix(
        from source: UnsafeMutablePointer<Float>, frames: Int,
        into outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, outputOffset: Int,
        toBus: Bool, busChannels: Int
    ) {
        let channels = ring.channels
        for frame in 0..<frames {
            ramp.advance()
            let fading = crossfade.fadingTable
            let weight = stepCrossfade()
            let sampleBase = frame * channels
            Self.add(
                source + sampleBase, table: appliedTable, gain: ramp.gain * weight, into: outputs,
                at: outputOffset + frame, toBus: toBus, busChannels: busChannels)
            if let fading {
                Self.add(
                    source + sampleBase, table: fading, gain: ramp.gain * (1 - weight), into: outputs,
                    at: outputOffset + frame, toBus: toBus, busChannels: busChannels)
            }
        }
    }

    /// One frame through one route table.
    @_noLocks
    @inline(__always)
    private static func add(
        _ frame: UnsafeMutablePointer<Float>, table: UnsafeMutablePointer<PlayerRouteTable>,
        gain: Float, into outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, at index: Int,
        toBus: Bool, busChannels: Int
    ) {
        let base = toBus ? table.pointee.flatOutputBase : 0
        for route in 0..<table.pointee.count {
            let destination = table.pointee.destinations[route] - base
            if destination >= busChannels { continue }
            outputs[destination][index] += frame[table.pointee.sources[route]] * gain
        }
    }
}

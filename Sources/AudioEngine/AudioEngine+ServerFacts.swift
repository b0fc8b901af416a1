// The JACK server's facts as the engine reads them: rate, period, clocks, xruns, cycle times,
// latencies. Control thread, unless a member says otherwise.
import Platform

extension AudioEngine {
    // MARK: Server facts

    /// Frames per second, read from JACK; nil when not running.
    public var sampleRate: Int? { runningClient?.sampleRate }

    /// Frames per period, read from JACK; nil when not running.
    public var bufferSize: Int? { runningClient?.bufferSize }

    /// What a buffer-size request came to.
    public struct BufferSizeChange: Equatable, Sendable {
        /// The period asked for (a power of two).
        public var requested: Int
        /// The period in force once the server answered. A server may accept the request and
        /// keep its own period: PipeWire's JACK while its quantum is forced (clock.force-quantum).
        public var inForce: Int
        public var tookEffect: Bool { requested == inForce }
    }

    /// Asks JACK for the power of two nearest `frames` (16...8192) as its period and reports
    /// the period really in force afterwards (jackd2 changes it before answering; PipeWire's
    /// JACK answers success and keeps a forced quantum). A refusal throws.
    @discardableResult
    public func setBufferSize(nearest frames: Int) throws(AudioEngineError) -> BufferSizeChange {
        guard let client = runningClient else { throw lostOrNotRunning }
        let size = Self.nearestPowerOfTwo(frames)
        do { try client.setBufferSize(size) } catch { throw .jack(error) }
        return BufferSizeChange(requested: size, inForce: client.bufferSize)
    }

    /// The power of two nearest `frames`, within 16...8192 (ties go up).
    public static func nearestPowerOfTwo(_ frames: Int) -> Int {
        var best = 16
        var candidate = 16
        while candidate <= 8192 {
            if abs(candidate - frames) <= abs(best - frames) { best = candidate }
            candidate *= 2
        }
        return best
    }

    /// JACK's current frame time (an estimate of the frame being processed); nil when not running.
    public var frameTime: UInt32? { runningClient?.frameTime }

    /// The JACK frame time and microsecond clock (jack_get_time) at which the latest port
    /// disappearance was heard of (notification thread), for measuring how fast recd reacts to
    /// a device going away.
    public var lastPortLoss: (frameTime: UInt32, micros: UInt64)? { connection?.client.sink.lastPortLoss }

    /// The JACK frame time and microsecond clock (jack_get_time) at which the latest port
    /// registration was heard of (notification thread), for measuring how fast recd reacts to
    /// a device arriving.
    public var lastPortArrival: (frameTime: UInt32, micros: UInt64)? {
        connection?.client.sink.lastPortArrival
    }

    /// A frame's time on the wall clock, and whether JACK's clocks placed it there.
    public struct FrameWallTime: Equatable, Sendable {
        /// UTC nanoseconds since the epoch.
        public var nanoseconds: Int64
        /// False when JACK's answer was implausible and the wall clock now stands in for it.
        public var fromJackClock: Bool

        public init(nanoseconds: Int64, fromJackClock: Bool) {
            self.nanoseconds = nanoseconds
            self.fromJackClock = fromJackClock
        }
    }

    /// The UTC time of a JACK frame time (e.g. a tap's first frame): JACK's microsecond clock
    /// of that frame, placed on the wall clock by the offset between the two clocks now.
    /// Control thread; nil when not running. Never traps: a server whose clocks disagree
    /// (PipeWire's JACK has answered with frame times far from its own clock) gets the wall
    /// clock now, marked `fromJackClock: false`, for the caller to log.
    public func utcNanoseconds(forFrameTime frameTime: UInt32) -> FrameWallTime? {
        guard let client = runningClient else { return nil }
        let wallNow = SystemClock.realtimeNanoseconds()
        guard let frameMicros = client.microseconds(forFrameTime: frameTime),
            let placed = Self.wallNanoseconds(
                wallNow: wallNow, jackNowMicros: JackClient.now(), frameMicros: frameMicros)
        else {
            return FrameWallTime(nanoseconds: wallNow, fromJackClock: false)
        }
        return FrameWallTime(nanoseconds: placed, fromJackClock: true)
    }

    /// How far from now a frame of a running stream may lie and still be believed.
    public static let plausibleFrameDistanceMicros: Int64 = 600_000_000

    /// `wallNow - (jackNow - frame)` in nanoseconds, or nil when the frame lies implausibly
    /// far from JACK's now (more than `plausibleFrameDistanceMicros`) or the arithmetic would
    /// overflow. Pure: any thread.
    public static func wallNanoseconds(wallNow: Int64, jackNowMicros: UInt64, frameMicros: UInt64) -> Int64? {
        guard let now = Int64(exactly: jackNowMicros), let frame = Int64(exactly: frameMicros) else { return nil }
        let (age, ageOverflow) = now.subtractingReportingOverflow(frame)
        guard !ageOverflow, abs(age) <= plausibleFrameDistanceMicros else { return nil }
        let (result, overflow) = wallNow.subtractingReportingOverflow(age * 1_000)
        return overflow ? nil : result
    }

    /// JACK's microsecond clock at `frame`, from the frame it is at now (`nowFrame` at
    /// `nowMicros`): frame times are 32-bit and wrap (every 24.9 hours at 48 kHz), so the
    /// distance is taken modulo 2^32 and read as signed (a frame up to 2^31 frames ahead or
    /// behind). nil for a rate of 0 or a time before JACK's clock began. Pure: any thread.
    public static func microseconds(ofFrame frame: UInt32, nowFrame: UInt32, nowMicros: UInt64, sampleRate: Int)
        -> UInt64?
    {
        guard sampleRate > 0, let now = Int64(exactly: nowMicros) else { return nil }
        let behind = Int64(Int32(bitPattern: nowFrame &- frame))
        let (micros, overflow) = now.subtractingReportingOverflow(behind * 1_000_000 / Int64(sampleRate))
        guard !overflow, micros >= 0 else { return nil }
        return UInt64(micros)
    }

    /// JACK's microsecond clock now (jack_get_time; any thread).
    public static var jackMicros: UInt64 { JackClient.now() }

    /// Xruns JACK reported since this engine was made (across reconnects).
    public var xruns: Int {
        earlierXruns + (connection?.client.sink.xruns.load(ordering: .relaxed) ?? 0)
    }

    /// How the process thread's cycles have run since the client connected (start delay,
    /// duration, late cycles); nil while not connected.
    public var cycleTimes: CycleTimeReport? { connection?.memory.cycleTimes.report }

    /// The latency JACK computed for each group: for an input group, from the outside world
    /// to recd (capture latency); for an output group, from recd to the outside world
    /// (playback latency). The largest over the group's channels.
    public func latencies() -> [GroupLatency] {
        guard let connection, let client = runningClient else { return [] }
        let rate = client.sampleRate
        return (connection.inputs + connection.outputs).map { group in
            let ranges = group.ports.map { client.latencyRange(of: $0, direction: group.direction) }
            let lower = ranges.map(\.lowerBound).max() ?? 0
            let upper = ranges.map(\.upperBound).max() ?? 0
            return GroupLatency(
                group: group.spec.name, direction: group.direction, frames: lower...upper,
                sampleRate: rate)
        }
    }
}

extension AudioEngine {
    /// The larger bound of the latency JACK computed for `group`, in seconds (see
    /// `latencies`); nil when not running or for an unknown group.
    public func latencySeconds(ofGroup group: String) -> Double? {
        latencies().first { $0.group == group }?.seconds
    }
}

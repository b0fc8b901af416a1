// EBU R128 / ITU-R BS.1770-4 loudness in vectorized single precision: what LoudnessMeter measures
// with by default, at a few percent of the FLAC encoder's cost where libebur128 cost
// more than the encoder itself.

internal import CEbur128

/// The measurement itself, over Float32 of 1...64 channels, measured across the channels: one
/// SIMD lane is one channel, and every step of the filters and the interpolator works on a lane
/// group of 8 channels at once (`R128LaneGroups`; a recorder's file of up to 8 channels is one
/// group). Swift's default x86-64 target has no AVX, so a `SIMD8<Float>` is two SSE registers:
/// the same instructions per channel as two groups of 4, but the biquads' recursions, each a
/// chain of dependent additions, run two chains side by side, and the loops are half as many.
/// Concrete, not generic over the lane width: a debug build runs generic SIMD code through
/// witness tables, some 3× slower than this, and debug builds record in the tests; 1–4 channels
/// pay for 8 lanes (about 0.2 ms of CPU a second at 2 channels).
///
/// - K-weighting: BS.1770's pre-filter (a high shelf) then its RLB high-pass, each a biquad
///   derived for the sample rate from the analog prototype as libebur128 derives it (bilinear
///   transform with the prototype's f0, Q and gain), run as two transposed direct-form II
///   biquads in Float with their state carried across adds. libebur128 runs the product of the
///   two as one 4th-order filter in Double; Float is enough here (the tests hold every reading
///   to 0.01 LU of libebur128's: the RLB pole near z = 1 amplifies rounding by about 1e4, still
///   some 1e-4 of the signal, which is 1e-8 of its energy).
/// - Energies of each 100 ms (frames counted from the first, `(rate + 5) / 10` of them as
///   libebur128 has it), squares summed in Float over at most `chunk` frames, then in Double:
///   momentary is the mean of the last 4, short-term of the last 30, a 400 ms gating block
///   every 100 ms (the mean of the last 4, kept when at least -70 LUFS: the absolute gate) and
///   a 3 s short-term block every second for the loudness range (kept above -70 LUFS). Every
///   channel has weight 1, as LoudnessMeter's channels are all BS.1770 "left".
/// - Integrated loudness and range are computed only when read (`summary`): the relative
///   gates (-10 LU; -20 LU and the 10th–95th percentiles for range, indexed as libebur128
///   indexes them) need all the blocks. The blocks are kept as libebur128 keeps them (a Double
///   each, those above -70 LUFS: at most 10 a second for integrated and 1 for range, 310 KiB
///   an hour whatever the channel count), so a segment's memory grows with its length as
///   before; segments are bounded by `[archive] segment_seconds` (at most a day: 7 MiB).
/// - True peak: a polyphase FIR interpolator with libebur128's design (a 49-tap windowed sinc:
///   4× below 96 kHz, 2× below 192 kHz, none above, where true peak is sample peak), computed
///   from the samples themselves (the last `history` frames of the previous add are kept), so
///   any block can be skipped without state to resynchronise. A block of `peakBlock` frames of
///   a lane group is interpolated only where `bound` × (the highest sample magnitude among the
///   inputs its outputs depend on) exceeds a lane's true peak so far: `bound` is the largest L1
///   norm of a polyphase branch, the most an output can exceed its inputs, so a skipped block
///   has no output above the known peak.
///
/// Not thread-safe: one thread feeds and reads it. Allocates only when made and when a
/// gating block is kept.
final class R128Engine {
    let channels: Int
    let sampleRate: Int
    let measuresTruePeak: Bool
    /// Frames in 100 ms, as libebur128 counts them.
    private let hundredMs: Int
    /// Frames handled at a time (the scratch's length).
    static let chunk = 512
    /// Frames per true-peak gating decision (0.7 ms at 48 kHz): short blocks have lower peaks
    /// than the signal's highest, so more of them are skipped.
    static let peakBlock = 32

    /// The channels' lanes: the filters' and interpolator's state and the gathered frames.
    private let lanes: R128LaneGroups

    public private(set) var framesAdded = 0
    private var sinceBoundary = 0
    /// The 100 ms energies and the gating blocks the readings come from.
    private var blocks = GatingBlocks()

    /// `channels` 1...64 and `sampleRate` 8000...384000, checked by LoudnessMeter.
    init(channels: Int, sampleRate: Int, truePeak: Bool) {
        self.channels = channels
        self.sampleRate = sampleRate
        measuresTruePeak = truePeak
        hundredMs = (sampleRate + 5) / 10
        let filter = KWeighting(sampleRate: sampleRate)
        let interpolator = TruePeakInterpolator(sampleRate: sampleRate, truePeak: truePeak)
        lanes = R128LaneGroups(channels: channels, filter: filter, interpolator: interpolator, truePeak: truePeak)
    }

    /// Adds `count` frames: channels `firstChannel ..< firstChannel + channels` of frames
    /// `stride` samples apart.
    func add(interleaved base: UnsafePointer<Float>, frames count: Int, stride: Int, firstChannel: Int) {
        var done = 0
        while done < count {
            let n = min(R128Engine.chunk, count - done)
            let from = base + done * stride + firstChannel
            lanes.gather(interleaved: from, frames: n, stride: stride)
            process(n)
            done += n
        }
    }

    /// Adds `count` frames held one run per channel: channel `c` is `channelStarts[c] + offset`
    /// on (a planar capture ring lent in place, or a FLAC block's channels).
    func add(planar channelStarts: UnsafePointer<UnsafePointer<Float>>, offset: Int, frames count: Int) {
        var done = 0
        while done < count {
            let n = min(R128Engine.chunk, count - done)
            lanes.gather(planar: channelStarts, offset: offset + done, frames: n)
            process(n)
            done += n
        }
    }

    /// Adds interleaved integer frames of `bitsPerSample` (full scale 2^(bits-1)).
    func add(integers base: UnsafePointer<Int32>, frames count: Int, bitsPerSample: Int) {
        let scale = 1 / Float(Int64(1) << (bitsPerSample - 1))
        var done = 0
        while done < count {
            let n = min(R128Engine.chunk, count - done)
            lanes.gather(integers: base + done * channels, frames: n, scale: scale)
            process(n)
            done += n
        }
    }

    /// Measures the `n` frames just gathered.
    private func process(_ n: Int) {
        let groups = lanes
        var done = 0
        while done < n {
            let count = min(hundredMs - sinceBoundary, n - done)
            groups.filter(from: done, count: count)
            done += count
            sinceBoundary += count
            framesAdded += count
            if sinceBoundary == hundredMs {
                sinceBoundary = 0
                blocks.endHundredMs(energy: groups.takeEnergy() / Double(hundredMs))
            }
        }
        groups.peaks(count: n)
    }

    var peakBlocks: (computed: Int, skipped: Int) { lanes.peakBlocks }

    /// Momentary loudness (the last 400 ms to the last 100 ms boundary), LUFS; nil before
    /// 400 ms or for silence.
    var momentaryLUFS: Double? { blocks.momentaryLUFS }

    /// Short-term loudness (the last 3 s to the last 100 ms boundary); nil before 3 s or for silence.
    var shortTermLUFS: Double? { blocks.shortTermLUFS }

    /// Integrated loudness (-70 LUFS absolute, -10 LU relative gate); nil if no block passes.
    var integratedLUFS: Double? { blocks.integratedLUFS }

    /// Loudness range (EBU Tech 3342); 0 with no block.
    var rangeLU: Double { blocks.rangeLU }

    /// Each channel's true peak so far (linear: the highest of its samples and interpolated
    /// values); empty without true peak.
    var channelTruePeaks: [Double] {
        guard measuresTruePeak else { return [] }
        return (0..<channels).map { channel in
            lanes.truePeak(channel: channel)
        }
    }
}

/// BS.1770's K-weighting for one sample rate: its pre-filter (a high shelf) then its RLB
/// high-pass, as single-precision coefficients.
struct KWeighting {
    /// The shelf's coefficients (b0, b1, b2, a1, a2; a0 = 1).
    let shelf: (Float, Float, Float, Float, Float)
    /// The high-pass's denominator as e1 = 2 + a1, e2 = 1 - a2 (numerator 1, -2, 1).
    let highPass: (Float, Float)

    init(sampleRate: Int) {
        let rate = Double(sampleRate)
        // BS.1770's pre-filter: a second-order high shelf (+4 dB above about 1.7 kHz) and
        // its RLB high-pass (about 38 Hz), prototypes from libebur128 (which refits them to
        // BS.1770's 48 kHz coefficients), through the bilinear transform with prewarping.
        var f0 = 1681.974450955533
        let gain = 3.999843853973347
        var q = 0.7071752369554196
        var k = recd_r128_tan(Double.pi * f0 / rate)
        let vh = recd_r128_pow(10, gain / 20)
        let vb = recd_r128_pow(vh, 0.4996667741545416)
        var a0 = 1 + k / q + k * k
        shelf = (
            Float((vh + vb * k / q + k * k) / a0), Float(2 * (k * k - vh) / a0), Float((vh - vb * k / q + k * k) / a0),
            Float(2 * (k * k - 1) / a0), Float((1 - k / q + k * k) / a0)
        )
        f0 = 38.13547087602444
        q = 0.5003270373238773
        k = recd_r128_tan(Double.pi * f0 / rate)
        a0 = 1 + k / q + k * k
        // The high-pass's numerator is 1, -2, 1 unnormalised, as BS.1770 gives it. Its poles lie
        // near z = 1 (1 - 0.0025 at 96 kHz), where a Float a1 ≈ -2 and a2 ≈ 1 would move them
        // by 1 % of their distance from 1 (0.01 LU at 50 Hz): the filter keeps the small
        // distances instead, e1 = 2 + a1 and e2 = 1 - a2, each exact to Float's precision.
        highPass = (Float(2 * (2 * k * k + k / q) / a0), Float(2 * k / q / a0))
    }
}

/// What R128LaneGroups does with its lanes beyond arithmetic.
extension SIMD8 where Scalar == Float {
    /// Every lane `value`.
    @inline(__always) static func broadcast(_ value: Float) -> Self { Self(repeating: value) }
    /// |lanes|.
    @inline(__always) var magnitude: Self { replacing(with: -self, where: self .< 0) }
    /// The larger of each lane (`pointwiseMax` compiles to scalar compares, NaN-careful; these
    /// values are never NaN from finite audio, and a NaN sample is ignored here either way).
    @inline(__always) func larger(_ other: Self) -> Self { replacing(with: other, where: other .> self) }
    /// Whether any lane is greater than `other`'s.
    @inline(__always) func anyGreater(than other: Self) -> Bool { any(self .> other) }
    /// Lanes smaller in magnitude than `tiny` set to 0.
    @inline(__always) func flushed(below tiny: Self) -> Self { replacing(with: 0, where: magnitude .< tiny) }
}

/// The channels laid out across the lanes of `V`, 8 to a group (one lane a channel, the last group padded with
/// silent lanes): the K-weighting biquads' state, the pending energy and the true-peak state of
/// each group, and each group's `history + chunk` gathered frames.
///
/// - K-weighting: two transposed direct-form II biquads in Float with their state carried across adds.
/// - True peak: a block of `peakBlock` frames of a group is interpolated only where `bound` ×
///   (the highest sample magnitude among the inputs its outputs depend on) exceeds a lane's true
///   peak so far.
final class R128LaneGroups {
    typealias V = SIMD8<Float>

    private let channels: Int
    private let groups: Int
    private let filter: KWeighting
    /// Per group: the shelf's two state values, then the high-pass's.
    private let filterState: UnsafeMutablePointer<V>
    /// Per group: squares summed since the last 100 ms boundary.
    private let pendingEnergy: UnsafeMutablePointer<Double>
    /// True peak's oversampling filter (`factor` 1: none).
    private let interpolator: TruePeakInterpolator
    private let measuresTruePeak: Bool
    /// The interpolator's `history`: input frames before a block that its outputs depend on.
    private let history: Int
    /// Per group `history + chunk` frames: the last `history` of the previous add, then this one.
    private let frames: UnsafeMutablePointer<V>
    private let lane: Int
    /// Per group: the highest sample and interpolated magnitudes so far.
    private let samplePeak: UnsafeMutablePointer<V>
    private let interpolatedPeak: UnsafeMutablePointer<V>
    private(set) var peakBlocks = (computed: 0, skipped: 0)

    init(channels: Int, filter: KWeighting, interpolator: TruePeakInterpolator, truePeak: Bool) {
        self.channels = channels
        groups = (channels + V.scalarCount - 1) / V.scalarCount
        self.filter = filter
        self.interpolator = interpolator
        measuresTruePeak = truePeak
        filterState = .allocate(capacity: groups * 4)
        filterState.initialize(repeating: .broadcast(0), count: groups * 4)
        pendingEnergy = .allocate(capacity: groups)
        pendingEnergy.initialize(repeating: 0, count: groups)
        history = interpolator.history
        lane = history + R128Engine.chunk
        frames = .allocate(capacity: groups * lane)
        frames.initialize(repeating: .broadcast(0), count: groups * lane)
        samplePeak = .allocate(capacity: groups)
        samplePeak.initialize(repeating: .broadcast(0), count: groups)
        interpolatedPeak = .allocate(capacity: groups)
        interpolatedPeak.initialize(repeating: .broadcast(0), count: groups)
    }

    deinit {
        filterState.deallocate()
        pendingEnergy.deallocate()
        frames.deallocate()
        samplePeak.deallocate()
        interpolatedPeak.deallocate()
    }

    /// Where channel `first`'s group's new frames start, as Floats (frame f of lane l at
    /// `f * V.scalarCount + l`), and the lanes of that group that hold channels.
    @inline(__always)
    private func withGroups(_ body: (_ floats: UnsafeMutablePointer<Float>, _ first: Int, _ width: Int) -> Void) {
        let width = V.scalarCount
        for group in 0..<groups {
            let to = frames + group * lane + history
            to.withMemoryRebound(to: Float.self, capacity: R128Engine.chunk * width) { floats in
                body(floats, group * width, min(width, channels - group * width))
            }
        }
    }

    func gather(interleaved base: UnsafePointer<Float>, frames n: Int, stride: Int) {
        let width = V.scalarCount
        withGroups { floats, first, used in
            for index in 0..<used {
                let from = base + first + index
                for frame in 0..<n { floats[frame * width + index] = from[frame * stride] }
            }
        }
    }

    /// Four channels at a time: four frames of each loaded as a vector, transposed into four
    /// frames of four lanes (a scalar store a sample is some 3× slower); the rest one by one.
    func gather(planar channelStarts: UnsafePointer<UnsafePointer<Float>>, offset: Int, frames n: Int) {
        let width = V.scalarCount
        withGroups { floats, first, used in
            var index = 0
            while index + 4 <= used {
                let a = UnsafeRawPointer(channelStarts[first + index] + offset)
                let b = UnsafeRawPointer(channelStarts[first + index + 1] + offset)
                let c = UnsafeRawPointer(channelStarts[first + index + 2] + offset)
                let d = UnsafeRawPointer(channelStarts[first + index + 3] + offset)
                let to = UnsafeMutableRawPointer(floats + index)
                let row = width * MemoryLayout<Float>.stride
                var frame = 0
                while frame + 4 <= n {
                    let at = frame * MemoryLayout<Float>.stride
                    let (w, x, y, z) = Self.transpose(
                        a.loadUnaligned(fromByteOffset: at, as: SIMD4<Float>.self),
                        b.loadUnaligned(fromByteOffset: at, as: SIMD4<Float>.self),
                        c.loadUnaligned(fromByteOffset: at, as: SIMD4<Float>.self),
                        d.loadUnaligned(fromByteOffset: at, as: SIMD4<Float>.self))
                    to.storeBytes(of: w, toByteOffset: frame * row, as: SIMD4<Float>.self)
                    to.storeBytes(of: x, toByteOffset: (frame + 1) * row, as: SIMD4<Float>.self)
                    to.storeBytes(of: y, toByteOffset: (frame + 2) * row, as: SIMD4<Float>.self)
                    to.storeBytes(of: z, toByteOffset: (frame + 3) * row, as: SIMD4<Float>.self)
                    frame += 4
                }
                for rest in frame..<n {
                    for lane in 0..<4 {
                        floats[rest * width + index + lane] = channelStarts[first + index + lane][offset + rest]
                    }
                }
                index += 4
            }
            for lane in index..<used {
                let from = channelStarts[first + lane] + offset
                for frame in 0..<n { floats[frame * width + lane] = from[frame] }
            }
        }
    }

    /// Rows a, b, c, d as columns.
    @inline(__always)
    private static func transpose(
        _ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: SIMD4<Float>, _ d: SIMD4<Float>
    ) -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
        // (a0 b0 a1 b1), (a2 b2 a3 b3), (c0 d0 c1 d1), (c2 d2 c3 d3): unpcklps/unpckhps, then
        // their halves joined (movlhps/movhlps).
        let ab = SIMD8(lowHalf: a, highHalf: b)
        let cd = SIMD8(lowHalf: c, highHalf: d)
        let abLow = SIMD4(ab[0], ab[4], ab[1], ab[5])
        let abHigh = SIMD4(ab[2], ab[6], ab[3], ab[7])
        let cdLow = SIMD4(cd[0], cd[4], cd[1], cd[5])
        let cdHigh = SIMD4(cd[2], cd[6], cd[3], cd[7])
        return (
            SIMD4(lowHalf: abLow.lowHalf, highHalf: cdLow.lowHalf),
            SIMD4(lowHalf: abLow.highHalf, highHalf: cdLow.highHalf),
            SIMD4(lowHalf: abHigh.lowHalf, highHalf: cdHigh.lowHalf),
            SIMD4(lowHalf: abHigh.highHalf, highHalf: cdHigh.highHalf)
        )
    }

    func gather(integers base: UnsafePointer<Int32>, frames n: Int, scale: Float) {
        let width = V.scalarCount
        withGroups { floats, first, used in
            for index in 0..<used {
                let from = base + first + index
                for frame in 0..<n { floats[frame * width + index] = Float(from[frame * channels]) * scale }
            }
        }
    }

    func filter(from start: Int, count: Int) {
        // Constants broadcast once (a scalar times a vector is SIMD's generic lane-by-lane code).
        let (sb0, sb1, sb2, sa1, sa2) = (
            V.broadcast(filter.shelf.0), V.broadcast(filter.shelf.1), V.broadcast(filter.shelf.2),
            V.broadcast(filter.shelf.3), V.broadcast(filter.shelf.4)
        )
        let (e1, e2) = (V.broadcast(filter.highPass.0), V.broadcast(filter.highPass.1))
        let two = V.broadcast(2)
        for group in 0..<groups {
            let input = frames + group * lane + history + start
            let state = filterState + group * 4
            var s1 = state[0]
            var s2 = state[1]
            var h1 = state[2]
            var h2 = state[3]
            var squares = V.broadcast(0)
            for frame in 0..<count {
                let x = input[frame]
                let y = sb0 * x + s1
                s1 = sb1 * x - sa1 * y + s2
                s2 = sb2 * x - sa2 * y
                // Transposed direct form II with b = 1, -2, 1 and a1 = e1 - 2, a2 = 1 - e2.
                let z = y + h1
                let d = y - z
                h1 = h2 - two * d - e1 * z
                h2 = d + e2 * z
                squares += z * z
            }
            // States that have decayed below any audible level are flushed to 0 before they turn
            // subnormal (subnormal arithmetic is some 100× slower on x86).
            let tiny = V.broadcast(1e-30)
            state[0] = s1.flushed(below: tiny)
            state[1] = s2.flushed(below: tiny)
            state[2] = h1.flushed(below: tiny)
            state[3] = h2.flushed(below: tiny)
            var energy = 0.0
            for index in 0..<V.scalarCount { energy += Double(squares[index]) }
            pendingEnergy[group] += energy
        }
    }

    func takeEnergy() -> Double {
        var sum = 0.0
        for group in 0..<groups {
            sum += pendingEnergy[group]
            pendingEnergy[group] = 0
        }
        return sum
    }

    func peaks(count: Int) {
        if interpolator.factor > 1 {
            for group in 0..<groups { truePeaks(group: group, count: count) }
        } else if measuresTruePeak {
            for group in 0..<groups {
                let lanes = frames + group * lane
                var peak = samplePeak[group]
                for frame in 0..<count { peak = peak.larger(lanes[frame].magnitude) }
                samplePeak[group] = peak
            }
        }
    }

    /// Sample peaks of `count` new frames of a group, and their interpolated peaks where one
    /// could be higher than the group's so far; then keeps the last `history` frames.
    private func truePeaks(group: Int, count: Int) {
        let lanes = frames + group * lane
        var samplePeak = self.samplePeak[group]
        var known = interpolatedPeak[group]
        let bound = V.broadcast(interpolator.bound)
        var start = 0
        while start < count {
            let end = min(start + R128Engine.peakBlock, count)
            // Outputs for frames start..<end depend on inputs from `history` frames before.
            var older = V.broadcast(0)
            for index in start..<(start + history) { older = older.larger(lanes[index].magnitude) }
            var newest = V.broadcast(0)
            for index in (start + history)..<(end + history) { newest = newest.larger(lanes[index].magnitude) }
            samplePeak = samplePeak.larger(newest)
            if (older.larger(newest) * bound).anyGreater(than: known.larger(samplePeak)) {
                known = known.larger(interpolated(lanes + history, from: start, to: end))
                peakBlocks.computed += 1
            } else {
                peakBlocks.skipped += 1
            }
            start = end
        }
        self.samplePeak[group] = samplePeak
        interpolatedPeak[group] = known
        lanes.update(from: lanes + count, count: history)
    }

    /// The highest magnitude of the interpolator's non-trivial phases' outputs for frames
    /// start..<end of `input` (which has `history` frames before its start). Four frames at a
    /// time, tap after tap: four independent sums in registers (one sum alone waits on its own
    /// previous addition every time), each added in the order of its taps.
    private func interpolated(_ input: UnsafeMutablePointer<V>, from start: Int, to end: Int) -> V {
        let taps = interpolator.taps
        var highest = V.broadcast(0)
        for phase in 1..<interpolator.factor {
            let c = interpolator.coefficients + (phase - 1) * taps
            var frame = start
            while frame + 4 <= end {
                let x = input + frame
                let k0 = V.broadcast(c[0])
                var a0 = k0 * x[0]
                var a1 = k0 * x[1]
                var a2 = k0 * x[2]
                var a3 = k0 * x[3]
                for tap in 1..<taps {
                    let k = V.broadcast(c[tap])
                    let y = x - tap
                    a0 += k * y[0]
                    a1 += k * y[1]
                    a2 += k * y[2]
                    a3 += k * y[3]
                }
                highest = highest.larger(a0.magnitude).larger(a1.magnitude).larger(a2.magnitude)
                    .larger(a3.magnitude)
                frame += 4
            }
            while frame < end {
                let x = input + frame
                var a = V.broadcast(c[0]) * x[0]
                for tap in 1..<taps { a += V.broadcast(c[tap]) * x[-tap] }
                highest = highest.larger(a.magnitude)
                frame += 1
            }
        }
        return highest
    }

    func truePeak(channel: Int) -> Double {
        let group = channel / V.scalarCount
        let index = channel % V.scalarCount
        return Double(max(samplePeak[group][index], interpolatedPeak[group][index]))
    }
}

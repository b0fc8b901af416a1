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
///   4× below 96 kHz, 2× below 192 kHz, none above, where true peak is sample peak), folded
///   along its symmetry (`TruePeakInterpolator`: half the multiplications) and computed from the
///   samples themselves (the last `history` frames of the previous chunk are kept), so any quad
///   of frames can be skipped without state to resynchronise. A quad of 4 frames of 4 channels
///   is interpolated only where the bound its inputs' range sets on its outputs exceeds a
///   channel's true peak so far (`R128LaneGroups`), so a skipped quad has no output above the
///   known peak.
/// - One walk: each chunk (at most `chunk` frames, never across a 100 ms boundary) is gathered,
///   filtered and interpolated one lane group at a time, while that group's frames are in the
///   cache.
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
        measure(frames: count) { group, done, n in
            lanes.gather(group: group, interleaved: base + done * stride + firstChannel, frames: n, stride: stride)
        }
    }

    /// Adds `count` frames held one run per channel: channel `c` is `channelStarts[c] + offset`
    /// on (a planar capture ring lent in place, or a FLAC block's channels).
    func add(planar channelStarts: UnsafePointer<UnsafePointer<Float>>, offset: Int, frames count: Int) {
        measure(frames: count) { group, done, n in
            lanes.gather(group: group, planar: channelStarts, offset: offset + done, frames: n)
        }
    }

    /// Adds interleaved integer frames of `bitsPerSample` (full scale 2^(bits-1)).
    func add(integers base: UnsafePointer<Int32>, frames count: Int, bitsPerSample: Int) {
        let scale = 1 / Float(Int64(1) << (bitsPerSample - 1))
        measure(frames: count) { group, done, n in
            lanes.gather(group: group, integers: base + done * channels, frames: n, scale: scale)
        }
    }

    /// Measures `count` frames in chunks that end at 100 ms boundaries, a lane group at a time:
    /// `gather(group, first frame, frames)` lays a chunk of one group out, and the group's
    /// filters and true peak walk it while it is in the cache.
    @inline(__always)
    private func measure(frames count: Int, gather: (_ group: Int, _ first: Int, _ frames: Int) -> Void) {
        var done = 0
        while done < count {
            let n = min(R128Engine.chunk, count - done, hundredMs - sinceBoundary)
            for group in 0..<lanes.groups {
                gather(group, done, n)
                lanes.measure(group: group, frames: n)
            }
            done += n
            framesAdded += n
            sinceBoundary += n
            if sinceBoundary == hundredMs {
                sinceBoundary = 0
                blocks.endHundredMs(energy: lanes.takeEnergy() / Double(hundredMs))
            }
        }
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

/// What R128LaneGroups does with its lanes beyond arithmetic, for a lane group (`SIMD8`) and for
/// the half of one the interpolator works on (`SIMD4`: one SSE or NEON register). Written for each
/// concrete type, not once for `SIMD`: a debug build runs generic SIMD code through witness
/// tables, and debug builds record in the tests.
extension SIMD8 where Scalar == Float {
    /// |lanes| (the sign bit cleared: one instruction).
    @inline(__always) var magnitude: Self {
        unsafeBitCast(unsafeBitCast(self, to: SIMD8<UInt32>.self) & 0x7fff_ffff, to: Self.self)
    }
    /// The larger of each lane: `maxps` (`pointwiseMax` compiles to scalar compares, NaN-careful;
    /// these values are never NaN from finite audio).
    @inline(__always) func larger(_ other: Self) -> Self { replacing(with: other, where: other .> self) }
    /// The smaller of each lane: `minps`.
    @inline(__always) func smaller(_ other: Self) -> Self { replacing(with: other, where: other .< self) }
    /// Lanes smaller in magnitude than `tiny` set to 0.
    @inline(__always) func flushed(below tiny: Self) -> Self { replacing(with: 0, where: magnitude .< tiny) }
}

extension SIMD4 where Scalar == Float {
    @inline(__always) var magnitude: Self {
        unsafeBitCast(unsafeBitCast(self, to: SIMD4<UInt32>.self) & 0x7fff_ffff, to: Self.self)
    }
    @inline(__always) func larger(_ other: Self) -> Self { replacing(with: other, where: other .> self) }
    @inline(__always) func smaller(_ other: Self) -> Self { replacing(with: other, where: other .< self) }
}

/// The channels laid out across the lanes of `V`, 8 to a group (one lane a channel, the last
/// group padded with silent lanes): each group's K-weighting state, pending energy and peaks, and
/// its gathered frames (the last `kept` of the previous chunk, then up to `chunk` new ones).
/// `measure` walks a group's new frames once for the filters and each quad's (4 frames') highest
/// and lowest sample, then decides which quads' outputs could raise the peak, then interpolates
/// only those, all while the group's frames are in the cache.
///
/// True peak, per quad of frames and half group of lanes (4 channels, one register): the
/// interpolator's outputs for the quad depend on its samples and the `history` before them, all
/// in the `kept / 4` quads before it and its own; their highest and lowest bound every output
/// (`TruePeakInterpolator.level` and `.spread`), and the quad's half is interpolated only where
/// that bound exceeds a lane's true peak so far (the larger of the sample peak, this quad's
/// samples included, and the interpolated peak as of the chunk's start). A quad's half that is
/// not interpolated has no output above what is known, so skipping it changes nothing; deciding
/// the whole chunk before interpolating any of it keeps the decisions free of branches and
/// only ever interpolates more.
final class R128LaneGroups {
    typealias V = SIMD8<Float>
    typealias Half = SIMD4<Float>

    let groups: Int
    private let channels: Int
    private let filter: KWeighting
    /// Per group: the shelf's two state values, then the high-pass's.
    private let filterState: UnsafeMutablePointer<V>
    /// Per group: squares summed since the last 100 ms boundary.
    private let pendingEnergy: UnsafeMutablePointer<Double>
    /// True peak's oversampling filter (`factor` 1: none).
    private let interpolator: TruePeakInterpolator
    private let measuresTruePeak: Bool
    /// Frames kept from the previous chunk: the interpolator's history rounded up to whole
    /// quads (0 without interpolation).
    private let kept: Int
    /// Per group `kept + chunk` frames.
    private let frames: UnsafeMutablePointer<V>
    private let lane: Int
    /// The group being measured: each quad's highest and lowest sample (the kept frames' quads
    /// first), per half group: quad q's half h at `2 * q + h`.
    private let quadHighest: UnsafeMutablePointer<Half>
    private let quadLowest: UnsafeMutablePointer<Half>
    /// The group being measured: the halves of quads to interpolate, as quad × 2 + half.
    private let candidates: UnsafeMutablePointer<Int32>
    /// Per half group: the highest sample and interpolated magnitudes so far.
    private let samplePeak: UnsafeMutablePointer<Half>
    private let interpolatedPeak: UnsafeMutablePointer<Half>
    /// Quads' halves holding channels that were interpolated and that were skipped.
    private(set) var peakBlocks = (computed: 0, skipped: 0)

    init(channels: Int, filter: KWeighting, interpolator: TruePeakInterpolator, truePeak: Bool) {
        self.channels = channels
        groups = (channels + V.scalarCount - 1) / V.scalarCount
        self.filter = filter
        self.interpolator = interpolator
        measuresTruePeak = truePeak
        filterState = .allocate(capacity: groups * 4)
        filterState.initialize(repeating: .zero, count: groups * 4)
        pendingEnergy = .allocate(capacity: groups)
        pendingEnergy.initialize(repeating: 0, count: groups)
        kept = (interpolator.history + 3) / 4 * 4
        precondition(
            kept == 0 || ([12, 24].contains(kept) && interpolator.near == (kept / 2 - 2)...(kept / 2 + 1)),
            "the true-peak windows are written for 0, 3 or 6 quads and the 4 middle taps")
        lane = kept + R128Engine.chunk
        frames = .allocate(capacity: groups * lane)
        frames.initialize(repeating: .zero, count: groups * lane)
        let quads = lane / 4 + 1
        quadHighest = .allocate(capacity: 2 * quads)
        quadHighest.initialize(repeating: .zero, count: 2 * quads)
        quadLowest = .allocate(capacity: 2 * quads)
        quadLowest.initialize(repeating: .zero, count: 2 * quads)
        candidates = .allocate(capacity: 2 * quads)
        candidates.initialize(repeating: 0, count: 2 * quads)
        samplePeak = .allocate(capacity: 2 * groups)
        samplePeak.initialize(repeating: .zero, count: 2 * groups)
        interpolatedPeak = .allocate(capacity: 2 * groups)
        interpolatedPeak.initialize(repeating: .zero, count: 2 * groups)
    }

    deinit {
        filterState.deallocate()
        pendingEnergy.deallocate()
        frames.deallocate()
        quadHighest.deallocate()
        quadLowest.deallocate()
        candidates.deallocate()
        samplePeak.deallocate()
        interpolatedPeak.deallocate()
    }

    /// Where `group`'s new frames go, and how many of its lanes hold channels.
    @inline(__always)
    private func destination(_ group: Int) -> (frames: UnsafeMutablePointer<V>, used: Int) {
        (frames + group * lane + kept, min(V.scalarCount, channels - group * V.scalarCount))
    }

    /// A whole group is one unaligned load a frame; a partial one sample by sample.
    func gather(group: Int, interleaved base: UnsafePointer<Float>, frames n: Int, stride: Int) {
        let (to, used) = destination(group)
        let first = base + group * V.scalarCount
        if used == V.scalarCount {
            let from = UnsafeRawPointer(first)
            let step = stride * MemoryLayout<Float>.stride
            for frame in 0..<n { to[frame] = from.loadUnaligned(fromByteOffset: frame * step, as: V.self) }
            return
        }
        to.withMemoryRebound(to: Float.self, capacity: n * V.scalarCount) { floats in
            for index in 0..<used {
                var from = first + index
                for frame in 0..<n {
                    floats[frame * V.scalarCount + index] = from.pointee
                    from += stride
                }
            }
        }
    }

    /// Four channels at a time: four frames of each loaded as a vector, transposed into four
    /// frames of four lanes (a scalar store a sample is some 3× slower); the rest one by one.
    func gather(group: Int, planar channelStarts: UnsafePointer<UnsafePointer<Float>>, offset: Int, frames n: Int) {
        let width = V.scalarCount
        let (to, used) = destination(group)
        let first = group * width
        to.withMemoryRebound(to: Float.self, capacity: n * width) { floats in
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
                        a.loadUnaligned(fromByteOffset: at, as: Half.self),
                        b.loadUnaligned(fromByteOffset: at, as: Half.self),
                        c.loadUnaligned(fromByteOffset: at, as: Half.self),
                        d.loadUnaligned(fromByteOffset: at, as: Half.self))
                    to.storeBytes(of: w, toByteOffset: frame * row, as: Half.self)
                    to.storeBytes(of: x, toByteOffset: (frame + 1) * row, as: Half.self)
                    to.storeBytes(of: y, toByteOffset: (frame + 2) * row, as: Half.self)
                    to.storeBytes(of: z, toByteOffset: (frame + 3) * row, as: Half.self)
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
    private static func transpose(_ a: Half, _ b: Half, _ c: Half, _ d: Half) -> (Half, Half, Half, Half) {
        // (a0 b0 a1 b1), (a2 b2 a3 b3), (c0 d0 c1 d1), (c2 d2 c3 d3): unpcklps/unpckhps, then
        // their halves joined (movlhps/movhlps).
        let ab = SIMD8(lowHalf: a, highHalf: b)
        let cd = SIMD8(lowHalf: c, highHalf: d)
        let abLow = Half(ab[0], ab[4], ab[1], ab[5])
        let abHigh = Half(ab[2], ab[6], ab[3], ab[7])
        let cdLow = Half(cd[0], cd[4], cd[1], cd[5])
        let cdHigh = Half(cd[2], cd[6], cd[3], cd[7])
        return (
            Half(lowHalf: abLow.lowHalf, highHalf: cdLow.lowHalf),
            Half(lowHalf: abLow.highHalf, highHalf: cdLow.highHalf),
            Half(lowHalf: abHigh.lowHalf, highHalf: cdHigh.lowHalf),
            Half(lowHalf: abHigh.highHalf, highHalf: cdHigh.highHalf)
        )
    }

    func gather(group: Int, integers base: UnsafePointer<Int32>, frames n: Int, scale: Float) {
        let (to, used) = destination(group)
        let first = base + group * V.scalarCount
        to.withMemoryRebound(to: Float.self, capacity: n * V.scalarCount) { floats in
            for index in 0..<used {
                var from = first + index
                for frame in 0..<n {
                    floats[frame * V.scalarCount + index] = Float(from.pointee) * scale
                    from += channels
                }
            }
        }
    }

    /// Measures `n` frames just gathered into `group`: loudness, then true peak, then keeps the
    /// last `kept` frames for the next chunk.
    func measure(group: Int, frames n: Int) {
        guard measuresTruePeak else {
            kWeight(group: group, frames: n, quads: false)
            return
        }
        kWeight(group: group, frames: n, quads: true)
        let found = candidates(group: group, frames: n)
        if found > 0 { interpolate(group: group, candidates: found, frames: n) }
        let lanes = frames + group * lane
        lanes.update(from: lanes + n, count: kept)
    }

    /// The K-weighting filters over the group's `n` new frames, their squares into its pending
    /// energy, and with `quads` each quad's highest and lowest sample.
    @inline(__always)
    private func kWeight(group: Int, frames n: Int, quads: Bool) {
        // Constants broadcast once (a scalar times a vector is SIMD's generic lane-by-lane code).
        let (sb0, sb1, sb2, sa1, sa2) = (
            V(repeating: filter.shelf.0), V(repeating: filter.shelf.1), V(repeating: filter.shelf.2),
            V(repeating: filter.shelf.3), V(repeating: filter.shelf.4)
        )
        let (e1, e2) = (V(repeating: filter.highPass.0), V(repeating: filter.highPass.1))
        let input = frames + group * lane + kept
        let state = filterState + group * 4
        var s1 = state[0]
        var s2 = state[1]
        var h1 = state[2]
        var h2 = state[3]
        var squares = V.zero
        var quad = kept / 4
        var frame = 0
        while frame < n {
            let end = min(frame + 4, n)
            var highest = input[frame]
            var lowest = highest
            while frame < end {
                let x = input[frame]
                let y = sb0 * x + s1
                s1 = sb1 * x - sa1 * y + s2
                s2 = sb2 * x - sa2 * y
                // Transposed direct form II with b = 1, -2, 1 and a1 = e1 - 2, a2 = 1 - e2.
                let z = y + h1
                let d = y - z
                h1 = h2 - (d + d) - e1 * z
                h2 = d + e2 * z
                squares += z * z
                if quads {
                    highest = highest.larger(x)
                    lowest = lowest.smaller(x)
                }
                frame += 1
            }
            if quads {
                quadHighest[2 * quad] = highest.lowHalf
                quadHighest[2 * quad + 1] = highest.highHalf
                quadLowest[2 * quad] = lowest.lowHalf
                quadLowest[2 * quad + 1] = lowest.highHalf
                quad += 1
            }
        }
        // States that have decayed below any audible level are flushed to 0 before they turn
        // subnormal (subnormal arithmetic is some 100× slower on x86).
        let tiny = V(repeating: 1e-30)
        state[0] = s1.flushed(below: tiny)
        state[1] = s2.flushed(below: tiny)
        state[2] = h1.flushed(below: tiny)
        state[3] = h2.flushed(below: tiny)
        var energy = 0.0
        for index in 0..<V.scalarCount { energy += Double(squares[index]) }
        pendingEnergy[group] += energy
    }

    func takeEnergy() -> Double {
        var sum = 0.0
        for group in 0..<groups {
            sum += pendingEnergy[group]
            pendingEnergy[group] = 0
        }
        return sum
    }

    /// The group's sample peaks over its `n` new frames, and the halves of its quads whose
    /// outputs could exceed a lane's peak so far into `candidates`; returns how many.
    private func candidates(group: Int, frames n: Int) -> Int {
        let before = frames + group * lane
        let reach = kept / 4
        for quad in 0..<reach {
            var highest = before[4 * quad]
            var lowest = highest
            for frame in (4 * quad + 1)..<(4 * quad + 4) {
                highest = highest.larger(before[frame])
                lowest = lowest.smaller(before[frame])
            }
            quadHighest[2 * quad] = highest.lowHalf
            quadHighest[2 * quad + 1] = highest.highHalf
            quadLowest[2 * quad] = lowest.lowHalf
            quadLowest[2 * quad + 1] = lowest.highHalf
        }
        let quads = (n + 3) / 4
        let used = min(V.scalarCount, channels - group * V.scalarCount)
        var found = 0
        for half in 0..<((used + 3) / 4) {
            let peak = 2 * group + half
            var sample = samplePeak[peak]
            guard reach > 0 else {
                for quad in reach..<(reach + quads) {
                    sample = sample.larger(quadHighest[2 * quad + half].larger(-quadLowest[2 * quad + half]))
                }
                samplePeak[peak] = sample
                continue
            }
            let known = interpolatedPeak[peak]
            let level = Half(repeating: interpolator.level)
            let nearSpread = Half(repeating: interpolator.nearSpread)
            let farSpread = Half(repeating: interpolator.farSpread)
            let halving = Half(repeating: 0.5)
            for quad in reach..<(reach + quads) {
                let at = 2 &* quad &+ half  // wrapping: no overflow checks on these indices
                sample = sample.larger(quadHighest[at].larger(-quadLowest[at]))
                // All the inputs: the quad and the 3 before it (at 2×, the 6 before it). The
                // middle taps' inputs: the 2 quads before it (at 2×, the 3 before the one
                // before it): frames 7...1 (13...7) before the quad's first, through 4...1
                // (10...7) before its last.
                var highest = quadHighest[at].larger(quadHighest[at &- 2]).larger(quadHighest[at &- 4])
                    .larger(quadHighest[at &- 6])
                var lowest = quadLowest[at].smaller(quadLowest[at &- 2]).smaller(quadLowest[at &- 4])
                    .smaller(quadLowest[at &- 6])
                var nearHighest: Half
                var nearLowest: Half
                if reach > 3 {
                    highest = highest.larger(quadHighest[at &- 8]).larger(quadHighest[at &- 10])
                        .larger(quadHighest[at &- 12])
                    lowest = lowest.smaller(quadLowest[at &- 8]).smaller(quadLowest[at &- 10])
                        .smaller(quadLowest[at &- 12])
                    nearHighest = quadHighest[at &- 4].larger(quadHighest[at &- 6]).larger(quadHighest[at &- 8])
                    nearLowest = quadLowest[at &- 4].smaller(quadLowest[at &- 6]).smaller(quadLowest[at &- 8])
                } else {
                    nearHighest = quadHighest[at &- 2].larger(quadHighest[at &- 4])
                    nearLowest = quadLowest[at &- 2].smaller(quadLowest[at &- 4])
                }
                let middle = (nearHighest + nearLowest) * halving
                let far = (highest - middle).larger(middle - lowest)
                // The bound exceeds the peak so far where level · |m| exceeds what the spreads
                // leave of it (compared without an absolute value: see `outputPeak`).
                let room = known.larger(sample) - nearSpread * (nearHighest - nearLowest) - farSpread * far
                let scaled = level * middle
                candidates[found] = Int32(truncatingIfNeeded: at)
                found &+= any((scaled .> room) .| (scaled .< -room)) ? 1 : 0
            }
            samplePeak[peak] = sample
        }
        if reach > 0 {
            peakBlocks.computed += found
            peakBlocks.skipped += quads * ((used + 3) / 4) - found
        }
        return found
    }

    /// Interpolates the group's `found` candidates (`frames n` new frames) and raises its
    /// interpolated peaks to their outputs' highest magnitudes.
    private func interpolate(group: Int, candidates found: Int, frames n: Int) {
        let end = kept + n
        (frames + group * lane).withMemoryRebound(to: Half.self, capacity: 2 * lane) { halves in
            for index in 0..<found {
                let candidate = Int(candidates[index])
                let (quad, half) = (candidate >> 1, candidate & 1)
                let from = 4 * quad
                let to = min(from + 4, end)
                let highest =
                    interpolator.factor == 4
                    ? outputPeak(halves + half, from: from, to: to, pairs: 6, outer: true)
                    : outputPeak(halves + half, from: from, to: to, pairs: 12, outer: false)
                let peak = interpolatedPeak + 2 * group + half
                peak.pointee = peak.pointee.larger(highest)
            }
        }
    }

    /// The highest magnitude of the interpolator's non-trivial phases' outputs for frames
    /// `from..<to` of one half group (frame f's lanes at `lanes[2 * f]`, `history` frames before
    /// `from` included): tap pairs of the folded form (`TruePeakInterpolator`), the outer
    /// phases (y1 = S + D, y3 = S - D) at 4× only. Constant `pairs` and `outer` where called, so
    /// the taps unroll. Written for the code LLVM makes of Swift's SIMD operations, which reach it
    /// lane by lane and are vectorized again there: sums start from the first tap's product,
    /// not from zero, and outputs are kept as their highest and lowest, not as magnitudes (an
    /// absolute value inside this loop gets its lanes shuffled apart, 30 shuffles an output).
    @inline(__always)
    private func outputPeak(_ lanes: UnsafeMutablePointer<Half>, from: Int, to: Int, pairs: Int, outer: Bool) -> Half {
        let middle = interpolator.middle
        let outerSum = interpolator.outerSum
        let outerDifference = interpolator.outerDifference
        let span = 2 * interpolator.history
        var highest = Half.zero
        var lowest = Half.zero
        for frame in from..<to {
            let newest = lanes + 2 * frame
            let oldest = newest - span
            let u = newest[0] + oldest[0]
            var centre = middle[0] * u
            var sum = outerSum[0] * u
            var difference = outerDifference[0] * (newest[0] - oldest[0])
            for tap in 1..<pairs {
                let a = newest[-2 * tap]
                let b = oldest[2 * tap]
                let u = a + b
                centre += middle[tap] * u
                if outer {
                    sum += outerSum[tap] * u
                    difference += outerDifference[tap] * (a - b)
                }
            }
            highest = highest.larger(centre)
            lowest = lowest.smaller(centre)
            if outer {
                let (first, third) = (sum + difference, sum - difference)
                highest = highest.larger(first).larger(third)
                lowest = lowest.smaller(first).smaller(third)
            }
        }
        return highest.larger(-lowest)
    }

    func truePeak(channel: Int) -> Double {
        let half = channel / 4
        let index = channel % 4
        return Double(max(samplePeak[half][index], interpolatedPeak[half][index]))
    }
}

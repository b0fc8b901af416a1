// EBU R128 / ITU-R BS.1770-4 loudness in vectorized single precision: what LoudnessMeter measures
// with by default, at a few percent of the FLAC encoder's cost where libebur128 cost
// more than the encoder itself.

internal import CEbur128

/// The measurement itself, over interleaved Float32 of 1...64 channels, four channels to a SIMD
/// lane group (`SIMD4<Float>`: one SSE/NEON register; 4 lanes waste less on 1–2 channels than 8
/// would, and more lanes gain nothing without AVX, which Swift's default x86-64 target lacks).
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
    typealias Lanes = SIMD4<Float>

    let channels: Int
    let sampleRate: Int
    let measuresTruePeak: Bool
    /// Lane groups of 4 channels (the last padded with silent lanes).
    private let groups: Int
    /// Frames in 100 ms, as libebur128 counts them.
    private let hundredMs: Int
    /// Frames handled at a time (the scratch's length).
    private static let chunk = 512
    /// Frames per true-peak gating decision (0.7 ms at 48 kHz): short blocks have lower peaks
    /// than the signal's highest, so more of them are skipped.
    private static let peakBlock = 32

    /// The two biquads' coefficients (b0, b1, b2, a1, a2; a0 = 1).
    private let shelf: (Float, Float, Float, Float, Float)
    /// The high-pass's denominator as e1 = 2 + a1, e2 = 1 - a2 (numerator 1, -2, 1).
    private let highPass: (Float, Float)
    /// Per group: the shelf's two state values, then the high-pass's.
    private let filterState: UnsafeMutablePointer<Lanes>
    /// Per group: squares summed since the last 100 ms boundary.
    private let pendingEnergy: UnsafeMutablePointer<SIMD4<Double>>

    public private(set) var framesAdded = 0
    private var sinceBoundary = 0
    /// The 100 ms energies and the gating blocks the readings come from.
    private var blocks = GatingBlocks()

    /// True peak's oversampling filter (`factor` 1: none).
    private let interpolator: TruePeakInterpolator
    /// The interpolator's `history`: input frames before a block that its outputs depend on.
    private let history: Int
    /// Per group `history + chunk` frames: the last `history` of the previous add, then this one.
    private let frames: UnsafeMutablePointer<Lanes>
    private let lane: Int
    /// Per group: the highest sample and interpolated magnitudes so far.
    private let samplePeak: UnsafeMutablePointer<Lanes>
    private let interpolatedPeak: UnsafeMutablePointer<Lanes>
    private(set) var peakBlocks = (computed: 0, skipped: 0)

    /// |lanes| (SIMD has no `abs`).
    @inline(__always) private func magnitude(_ lanes: Lanes) -> Lanes {
        lanes.replacing(with: -lanes, where: lanes .< 0)
    }

    /// The larger of each lane (`pointwiseMax` compiles to scalar compares, NaN-careful; these
    /// values are never NaN from finite audio, and a NaN sample is ignored here either way).
    @inline(__always) private func larger(_ a: Lanes, _ b: Lanes) -> Lanes { a.replacing(with: b, where: b .> a) }

    /// `channels` 1...64 and `sampleRate` 8000...384000, checked by LoudnessMeter.
    init(channels: Int, sampleRate: Int, truePeak: Bool) {
        self.channels = channels
        self.sampleRate = sampleRate
        measuresTruePeak = truePeak
        groups = (channels + 3) / 4
        hundredMs = (sampleRate + 5) / 10
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
        filterState = .allocate(capacity: groups * 4)
        filterState.initialize(repeating: .zero, count: groups * 4)
        pendingEnergy = .allocate(capacity: groups)
        pendingEnergy.initialize(repeating: .zero, count: groups)

        interpolator = TruePeakInterpolator(sampleRate: sampleRate, truePeak: truePeak, maxBlock: R128Engine.peakBlock)
        history = interpolator.history
        lane = history + R128Engine.chunk
        frames = .allocate(capacity: groups * lane)
        frames.initialize(repeating: .zero, count: groups * lane)
        samplePeak = .allocate(capacity: groups)
        samplePeak.initialize(repeating: .zero, count: groups)
        interpolatedPeak = .allocate(capacity: groups)
        interpolatedPeak.initialize(repeating: .zero, count: groups)
    }

    deinit {
        filterState.deallocate()
        pendingEnergy.deallocate()
        frames.deallocate()
        samplePeak.deallocate()
        interpolatedPeak.deallocate()
    }

    /// Adds `count` frames: channels `firstChannel ..< firstChannel + channels` of frames
    /// `stride` samples apart.
    func add(interleaved base: UnsafePointer<Float>, frames count: Int, stride: Int, firstChannel: Int) {
        var done = 0
        while done < count {
            let n = min(R128Engine.chunk, count - done)
            let from = base + done * stride + firstChannel
            for group in 0..<groups {
                let to = frames + group * lane + history
                let first = group * 4
                let width = min(4, channels - first)
                if width == 4 {
                    for frame in 0..<n {
                        to[frame] = UnsafeRawPointer(from + frame * stride + first).loadUnaligned(as: Lanes.self)
                    }
                } else {
                    for frame in 0..<n {
                        var lanes = Lanes.zero
                        for index in 0..<width { lanes[index] = from[frame * stride + first + index] }
                        to[frame] = lanes
                    }
                }
            }
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
            for group in 0..<groups {
                let to = frames + group * lane + history
                let first = group * 4
                let width = min(4, channels - first)
                if width == 4 {
                    let a = channelStarts[first] + offset + done
                    let b = channelStarts[first + 1] + offset + done
                    let c = channelStarts[first + 2] + offset + done
                    let d = channelStarts[first + 3] + offset + done
                    for frame in 0..<n { to[frame] = Lanes(a[frame], b[frame], c[frame], d[frame]) }
                } else {
                    for frame in 0..<n {
                        var lanes = Lanes.zero
                        for index in 0..<width { lanes[index] = channelStarts[first + index][offset + done + frame] }
                        to[frame] = lanes
                    }
                }
            }
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
            let from = base + done * channels
            for group in 0..<groups {
                let to = frames + group * lane + history
                let first = group * 4
                let width = min(4, channels - first)
                for frame in 0..<n {
                    var lanes = Lanes.zero
                    for index in 0..<width { lanes[index] = Float(from[frame * channels + first + index]) }
                    to[frame] = lanes * scale
                }
            }
            process(n)
            done += n
        }
    }

    /// Measures the `n` frames just gathered into `frames` (after each group's history).
    private func process(_ n: Int) {
        var done = 0
        while done < n {
            let count = min(hundredMs - sinceBoundary, n - done)
            for group in 0..<groups { filter(group: group, from: done, count: count) }
            done += count
            sinceBoundary += count
            framesAdded += count
            if sinceBoundary == hundredMs { endHundredMs() }
        }
        if interpolator.factor > 1 {
            for group in 0..<groups { peaks(group: group, count: n) }
        } else if measuresTruePeak {
            for group in 0..<groups {
                let lanes = frames + group * lane
                var peak = samplePeak[group]
                for frame in 0..<n { peak = larger(peak, magnitude(lanes[frame])) }
                samplePeak[group] = peak
            }
        }
    }

    /// K-weights `count` frames of a group from `start` and sums their squares.
    private func filter(group: Int, from start: Int, count: Int) {
        let input = frames + group * lane + history + start
        let state = filterState + group * 4
        let (sb0, sb1, sb2, sa1, sa2) = shelf
        let (e1, e2) = highPass
        var s1 = state[0]
        var s2 = state[1]
        var h1 = state[2]
        var h2 = state[3]
        var squares = Lanes.zero
        for frame in 0..<count {
            let x = input[frame]
            let y = sb0 * x + s1
            s1 = sb1 * x - sa1 * y + s2
            s2 = sb2 * x - sa2 * y
            // Transposed direct form II with b = 1, -2, 1 and a1 = e1 - 2, a2 = 1 - e2.
            let z = y + h1
            let d = y - z
            h1 = h2 - 2 * d - e1 * z
            h2 = d + e2 * z
            squares += z * z
        }
        // States that have decayed below any audible level are flushed to 0 before they turn
        // subnormal (subnormal arithmetic is some 100× slower on x86).
        let tiny = Lanes(repeating: 1e-30)
        state[0] = s1.replacing(with: 0, where: magnitude(s1) .< tiny)
        state[1] = s2.replacing(with: 0, where: magnitude(s2) .< tiny)
        state[2] = h1.replacing(with: 0, where: magnitude(h1) .< tiny)
        state[3] = h2.replacing(with: 0, where: magnitude(h2) .< tiny)
        pendingEnergy[group] += SIMD4<Double>(squares)
    }

    /// A 100 ms boundary: its energy into the ring, and the gating blocks that end here.
    private func endHundredMs() {
        var sum = 0.0
        for group in 0..<groups {
            sum += pendingEnergy[group].sum()
            pendingEnergy[group] = .zero
        }
        sinceBoundary = 0
        blocks.endHundredMs(energy: sum / Double(hundredMs))
    }

    /// Sample peaks of `count` new frames of a group, and their interpolated peaks where one
    /// could be higher than the group's so far; then keeps the last `history` frames.
    private func peaks(group: Int, count: Int) {
        let lanes = frames + group * lane
        var samplePeak = self.samplePeak[group]
        var known = interpolatedPeak[group]
        var start = 0
        while start < count {
            let end = min(start + R128Engine.peakBlock, count)
            // Outputs for frames start..<end depend on inputs from `history` frames before.
            var inputs = Lanes.zero
            for index in start..<(end + history) { inputs = larger(inputs, magnitude(lanes[index])) }
            var newest = Lanes.zero
            for index in (start + history)..<(end + history) { newest = larger(newest, magnitude(lanes[index])) }
            samplePeak = larger(samplePeak, newest)
            if any(inputs * interpolator.bound .> larger(known, samplePeak)) {
                known = larger(known, interpolator.highest(lanes + history, from: start, to: end))
                peakBlocks.computed += 1
            } else {
                peakBlocks.skipped += 1
            }
            start = end
        }
        self.samplePeak[group] = samplePeak
        interpolatedPeak[group] = known
        (lanes).update(from: lanes + count, count: history)
    }

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
            let group = channel / 4
            return Double(max(samplePeak[group][channel % 4], interpolatedPeak[group][channel % 4]))
        }
    }
}

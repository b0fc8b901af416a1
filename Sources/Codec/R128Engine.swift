// EBU R128 / ITU-R BS.1770-4 loudness in vectorized single precision: what LoudnessMeter measures
// with by default (issue 28), at a few percent of the FLAC encoder's cost where libebur128 cost
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
    /// 100 ms boundaries passed.
    private var boundaries = 0
    /// The energies of the last 30 whole 100 ms (a ring; unwritten slots read 0).
    private var energies = [Double](repeating: 0, count: 30)
    private var nextEnergy = 0
    /// Gating blocks (400 ms) and short-term blocks (3 s) at or above the absolute gate.
    private var blockEnergies: [Double] = []
    private var shortTermEnergies: [Double] = []

    /// Interpolation: `factor` phases, the non-trivial ones (1..<factor; phase 0 is the
    /// sample itself) with `taps` coefficients each, applied to the current and the last
    /// `history` inputs.
    private let factor: Int
    private let taps: Int
    private let coefficients: UnsafeMutablePointer<Float>
    private let history: Int
    private let bound: Float
    /// Per group `history + chunk` frames: the last `history` of the previous add, then this one.
    private let frames: UnsafeMutablePointer<Lanes>
    /// One phase's outputs for a block (`peakBlock` frames).
    private let outputs: UnsafeMutablePointer<Lanes>
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

    /// The absolute gate, -70 LUFS, as an energy.
    private static let absoluteGate = recd_ebur128_energy(-70)

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

        // The interpolator: a 49-tap sinc for the oversampled rate, Hann-windowed; tap j goes
        // to phase j % factor and applies to the input j / factor frames back.
        factor = !truePeak || sampleRate >= 192_000 ? 1 : sampleRate >= 96_000 ? 2 : 4
        let length = 49
        taps = (length + factor - 1) / factor
        history = factor > 1 ? taps - 1 : 0
        coefficients = .allocate(capacity: max(1, (factor - 1) * taps))
        coefficients.initialize(repeating: 0, count: max(1, (factor - 1) * taps))
        var bound: Float = 1
        if factor > 1 {
            for phase in 1..<factor {
                var norm = 0.0
                for tap in 0..<taps where phase + tap * factor < length {
                    let j = phase + tap * factor
                    let m = Double(j) - Double(length - 1) / 2
                    let x = m * Double.pi / Double(factor)
                    let sinc = recd_r128_sin(x) / x  // m ≠ 0: phase 0 holds the centre tap
                    let window = 0.5 * (1 - recd_r128_cos(2 * Double.pi * Double(j) / Double(length - 1)))
                    coefficients[(phase - 1) * taps + tap] = Float(sinc * window)
                    norm += abs(sinc * window)
                }
                bound = max(bound, Float(norm))
            }
        }
        // Outputs are Float sums: a little headroom for their rounding.
        self.bound = bound * (1 + 1e-5)
        lane = history + R128Engine.chunk
        frames = .allocate(capacity: groups * lane)
        frames.initialize(repeating: .zero, count: groups * lane)
        outputs = .allocate(capacity: R128Engine.peakBlock)
        outputs.initialize(repeating: .zero, count: R128Engine.peakBlock)
        samplePeak = .allocate(capacity: groups)
        samplePeak.initialize(repeating: .zero, count: groups)
        interpolatedPeak = .allocate(capacity: groups)
        interpolatedPeak.initialize(repeating: .zero, count: groups)
    }

    deinit {
        filterState.deallocate()
        pendingEnergy.deallocate()
        coefficients.deallocate()
        frames.deallocate()
        outputs.deallocate()
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
        if factor > 1 {
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
        energies[nextEnergy] = sum / Double(hundredMs)
        nextEnergy = (nextEnergy + 1) % energies.count
        boundaries += 1
        if boundaries >= 4 {
            let block = meanEnergy(ofLast: 4)
            if block >= R128Engine.absoluteGate { blockEnergies.append(block) }
        }
        if boundaries >= 30 && (boundaries - 30) % 10 == 0 {
            let block = meanEnergy(ofLast: 30)
            if block >= R128Engine.absoluteGate { shortTermEnergies.append(block) }
        }
    }

    private func meanEnergy(ofLast count: Int) -> Double {
        var sum = 0.0
        for back in 1...count { sum += energies[(nextEnergy - back + energies.count) % energies.count] }
        return sum / Double(count)
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
            if any(inputs * bound .> larger(known, samplePeak)) {
                known = larger(known, interpolate(lanes + history, from: start, to: end))
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

    /// The highest magnitude of the non-trivial phases' outputs for frames start..<end of
    /// `input` (which has `history` frames before its start).
    /// Tap by tap over the whole block, so that the block's sums are independent additions
    /// (one sum per frame, tap after tap, waits on its own previous addition every time).
    private func interpolate(_ input: UnsafeMutablePointer<Lanes>, from start: Int, to end: Int) -> Lanes {
        var highest = Lanes.zero
        let count = end - start
        for phase in 1..<factor {
            let c = coefficients + (phase - 1) * taps
            let from = input + start
            let k0 = c[0]
            for frame in 0..<count { outputs[frame] = k0 * from[frame] }
            for tap in 1..<taps {
                let k = c[tap]
                let x = from - tap
                for frame in 0..<count { outputs[frame] += k * x[frame] }
            }
            for frame in 0..<count { highest = larger(highest, magnitude(outputs[frame])) }
        }
        return highest
    }

    /// Momentary loudness (the last 400 ms to the last 100 ms boundary), LUFS; nil before
    /// 400 ms or for silence.
    var momentaryLUFS: Double? { boundaries >= 4 ? loudness(meanEnergy(ofLast: 4)) : nil }

    /// Short-term loudness (the last 3 s to the last 100 ms boundary); nil before 3 s or for silence.
    var shortTermLUFS: Double? { boundaries >= 30 ? loudness(meanEnergy(ofLast: 30)) : nil }

    private func loudness(_ energy: Double) -> Double? {
        guard energy > 0 else { return nil }
        let value = recd_ebur128_loudness(energy)
        return value.isFinite ? value : nil
    }

    /// Integrated loudness (-70 LUFS absolute, -10 LU relative gate); nil if no block passes.
    var integratedLUFS: Double? {
        guard !blockEnergies.isEmpty else { return nil }
        let threshold = blockEnergies.reduce(0, +) / Double(blockEnergies.count) * 0.1
        var sum = 0.0
        var count = 0
        for energy in blockEnergies where energy >= threshold {
            sum += energy
            count += 1
        }
        return count > 0 ? loudness(sum / Double(count)) : nil
    }

    /// Loudness range (EBU Tech 3342): short-term blocks above -70 LUFS and -20 LU below their
    /// mean, the 95th percentile's loudness less the 10th's; 0 with no block.
    var rangeLU: Double {
        guard !shortTermEnergies.isEmpty else { return 0 }
        let sorted = shortTermEnergies.sorted()
        let threshold = sorted.reduce(0, +) / Double(sorted.count) * 0.01
        let gated = sorted.drop { $0 < threshold }
        guard !gated.isEmpty else { return 0 }
        let first = gated.startIndex
        let high = gated[first + Int(Double(gated.count - 1) * 0.95 + 0.5)]
        let low = gated[first + Int(Double(gated.count - 1) * 0.1 + 0.5)]
        return recd_ebur128_loudness(high) - recd_ebur128_loudness(low)
    }

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

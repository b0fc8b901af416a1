// The oversampling filter of R128Engine's true peak: libebur128's design, folded along its
// symmetry (R128LaneGroups runs it over its lane groups of channels).

internal import CEbur128

/// A polyphase FIR interpolator with libebur128's design: a 49-tap Hann-windowed sinc, 4× below
/// 96 kHz, 2× below 192 kHz, none above (where true peak is sample peak). Tap `j` goes to phase
/// `j % factor` and applies to the input `j / factor` frames back; phase 0 is the sample itself,
/// and every other phase has `taps` taps (12 at 4×, 24 at 2×; libebur128's 13th and 25th are 0).
///
/// The sinc and the window are symmetric about the middle tap, so tap `t` of phase `p` equals
/// tap `taps - 1 - t` of phase `factor - p`, which this type keeps in the form its user adds:
/// with u = x[t] + x[taps - 1 - t] and v = x[t] - x[taps - 1 - t] (x[t] the input t frames back),
/// - the half-sample phase (`factor / 2`) is its own mirror: Σ `middle[t]` · u over t < taps / 2;
/// - at 4× phases 1 and 3 mirror each other: with S = Σ `outerSum[t]` · u and
///   D = Σ `outerDifference[t]` · v (the halved sum and difference of their taps), y1 = S + D and
///   y3 = S - D, so the larger of |y1| and |y3| is |S| + |D|.
/// Half the multiplications of the direct form, and the same values to Float rounding.
///
/// `level`, `nearSpread` and `farSpread` bound every output from its inputs' ranges. Its 4
/// middle taps (`near`, the largest: 1.61 of 1.86 in L1 norm at 4×) apply to inputs in [nl, nh],
/// all its taps to inputs in [lo, hi]; with m = (nh + nl) / 2, each output minus m times its tap
/// sum is a sum of c · (x - m), where |x - m| ≤ (nh - nl) / 2 for a near tap and
/// ≤ max(hi - m, m - lo) for the others, so
///     |y| ≤ `level` · |m| + `nearSpread` · (nh - nl) + `farSpread` · max(hi - m, m - lo):
/// `level` the largest |Σ c| of a phase, `nearSpread` half the largest L1 norm of a phase's near
/// taps and `farSpread` the largest of its other taps', each with headroom for Float rounding (1e-4: outputs are Float
/// sums of a few dozen terms, each rounding by 6e-8 of at most 1.86 (|m| + max(hi - m, m - lo)),
/// which is at most 4 times the bound). Never looser than the L1 norm times the largest
/// magnitude, and much tighter where the inputs keep one sign (low frequencies), stay near one
/// level (clipped or limited stretches), or are only loud away from the middle taps.
///
/// Owns its coefficient tables (freed in `deinit`), each coefficient repeated in the 4 lanes of
/// a `SIMD4<Float>` so the interpolation multiplies by it straight from memory; allocates
/// nothing after `init`. Not thread-safe: the engine's one thread uses it.
final class TruePeakInterpolator {
    /// Phases: 1 when there is nothing to interpolate.
    let factor: Int
    /// Taps of each non-trivial phase (0 when there is none).
    let taps: Int
    /// Input frames before an output's own that it depends on (`taps - 1`).
    let history: Int
    /// The half-sample phase's first `taps / 2` taps (the rest mirror them).
    let middle: UnsafeMutablePointer<SIMD4<Float>>
    /// At 4×: half the sum and half the difference of phase 1's tap t and phase 3's tap t'
    /// applying to the mirrored input (t' = taps - 1 - t), for t < taps / 2; unused at 2×.
    let outerSum: UnsafeMutablePointer<SIMD4<Float>>
    let outerDifference: UnsafeMutablePointer<SIMD4<Float>>
    /// The middle taps of each non-trivial phase, the output bound's `near`.
    let near: ClosedRange<Int>
    /// The output bound's factors (see the type's comment).
    let level: Float
    let nearSpread: Float
    let farSpread: Float

    init(sampleRate: Int, truePeak: Bool) {
        let factor = !truePeak || sampleRate >= 192_000 ? 1 : sampleRate >= 96_000 ? 2 : 4
        let length = 49
        let taps = factor > 1 ? (length - 1) / factor : 0
        self.factor = factor
        self.taps = taps
        history = max(0, taps - 1)
        let near = max(0, taps / 2 - 2)...max(0, taps / 2 + 1)
        self.near = near
        let pairs = max(1, taps / 2)
        middle = .allocate(capacity: pairs)
        outerSum = .allocate(capacity: pairs)
        outerDifference = .allocate(capacity: pairs)
        for table in [middle, outerSum, outerDifference] { table.initialize(repeating: .zero, count: pairs) }
        // Tap `tap` of `phase`: libebur128's coefficient for j = phase + tap · factor.
        func coefficient(phase: Int, tap: Int) -> Double {
            let j = phase + tap * factor
            let m = Double(j) - Double(length - 1) / 2
            let x = m * Double.pi / Double(factor)
            let sinc = recd_r128_sin(x) / x  // m ≠ 0: phase 0 holds the centre tap
            return sinc * 0.5 * (1 - recd_r128_cos(2 * Double.pi * Double(j) / Double(length - 1)))
        }
        var largestSum = 1.0
        var largestNear = 0.0
        var largestFar = 0.0
        if factor > 1 {
            for phase in 1..<factor {
                let c = (0..<taps).map { coefficient(phase: phase, tap: $0) }
                largestSum = max(largestSum, abs(c.reduce(0, +)))
                largestNear = max(largestNear, c[near].reduce(0) { $0 + abs($1) })
                largestFar = max(largestFar, c.indices.filter { !near.contains($0) }.reduce(0) { $0 + abs(c[$1]) })
            }
            let half = factor / 2
            for tap in 0..<pairs {
                middle[tap] = SIMD4(repeating: Float(coefficient(phase: half, tap: tap)))
                if factor == 4 {
                    let near = coefficient(phase: 1, tap: tap)
                    let far = coefficient(phase: 1, tap: taps - 1 - tap)
                    outerSum[tap] = SIMD4(repeating: Float((near + far) / 2))
                    outerDifference[tap] = SIMD4(repeating: Float((near - far) / 2))
                }
            }
        }
        level = Float(largestSum * (1 + 1e-4))
        nearSpread = Float(largestNear / 2 * (1 + 1e-4))
        farSpread = Float(largestFar * (1 + 1e-4))
    }

    deinit {
        middle.deallocate()
        outerSum.deallocate()
        outerDifference.deallocate()
    }
}

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
/// `level` and `spread` bound every output from its inputs' range: an output whose inputs lie in
/// [lo, hi] is at most `level` · |hi + lo| + `spread` · (hi - lo) in magnitude. Each phase's
/// output minus m times its tap sum is a sum of c · (x - m); with m = (hi + lo) / 2 every
/// |x - m| ≤ (hi - lo) / 2, so |y| ≤ |m| · |Σ c| + (Σ |c|) · (hi - lo) / 2: `level` is half the
/// largest |Σ c| (phase 0's 1 included), `spread` half the largest L1 norm, each with headroom
/// for Float rounding (outputs and the bound are Float sums of a few dozen terms, each rounding
/// by 6e-8 of at most the bound). Never looser than the L1 norm times the largest magnitude, and
/// much tighter where the inputs keep one sign (low frequencies) or stay near one level (clipped
/// or limited stretches).
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
    /// The output bound's factors (see the type's comment).
    let level: Float
    let spread: Float

    init(sampleRate: Int, truePeak: Bool) {
        let factor = !truePeak || sampleRate >= 192_000 ? 1 : sampleRate >= 96_000 ? 2 : 4
        let length = 49
        let taps = factor > 1 ? (length - 1) / factor : 0
        self.factor = factor
        self.taps = taps
        history = max(0, taps - 1)
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
        var largestNorm = 1.0
        if factor > 1 {
            for phase in 1..<factor {
                let c = (0..<taps).map { coefficient(phase: phase, tap: $0) }
                largestSum = max(largestSum, abs(c.reduce(0, +)))
                largestNorm = max(largestNorm, c.reduce(0) { $0 + abs($1) })
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
        level = Float(largestSum / 2 * (1 + 1e-5))
        spread = Float(largestNorm / 2 * (1 + 1e-5))
    }

    deinit {
        middle.deallocate()
        outerSum.deallocate()
        outerDifference.deallocate()
    }
}

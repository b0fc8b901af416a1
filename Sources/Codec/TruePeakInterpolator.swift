// The oversampling filter of R128Engine's true peak: libebur128's design (R128LaneGroups runs it
// over its lane groups of channels).

internal import CEbur128

/// A polyphase FIR interpolator with libebur128's design: a 49-tap Hann-windowed sinc, 4× below
/// 96 kHz, 2× below 192 kHz, none above (where true peak is sample peak). Tap `j` goes to phase
/// `j % factor` and applies to the input `j / factor` frames back; phase 0 is the sample itself.
///
/// Owns its coefficients (freed in `deinit`); allocates nothing after `init`. Not thread-safe:
/// the engine's one thread uses it.
final class TruePeakInterpolator {
    /// Phases: 1 when there is nothing to interpolate.
    let factor: Int
    /// Coefficients of each non-trivial phase (1..<factor).
    let taps: Int
    /// Input frames before a block that its outputs depend on.
    let history: Int
    /// The largest L1 norm of a phase (with headroom for Float rounding): no output exceeds its
    /// inputs' highest magnitude by more than this factor.
    let bound: Float
    /// Phase p's taps at `coefficients + (p - 1) * taps` (tap t applies to the input t frames back).
    let coefficients: UnsafeMutablePointer<Float>

    init(sampleRate: Int, truePeak: Bool) {
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
    }

    deinit { coefficients.deallocate() }
}

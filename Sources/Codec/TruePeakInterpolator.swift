// The oversampling filter of R128Engine's true peak: libebur128's design, run over SIMD lane
// groups of four channels.

internal import CEbur128

/// A polyphase FIR interpolator with libebur128's design: a 49-tap Hann-windowed sinc, 4× below
/// 96 kHz, 2× below 192 kHz, none above (where true peak is sample peak). Tap `j` goes to phase
/// `j % factor` and applies to the input `j / factor` frames back; phase 0 is the sample itself.
///
/// Owns its coefficients and its scratch (freed in `deinit`); allocates nothing after `init`.
/// Not thread-safe: the engine's one thread uses it.
final class TruePeakInterpolator {
    typealias Lanes = SIMD4<Float>

    /// Phases: 1 when there is nothing to interpolate.
    let factor: Int
    /// Coefficients of each non-trivial phase (1..<factor).
    let taps: Int
    /// Input frames before a block that its outputs depend on.
    let history: Int
    /// The largest L1 norm of a phase (with headroom for Float rounding): no output exceeds its
    /// inputs' highest magnitude by more than this factor.
    let bound: Float
    private let coefficients: UnsafeMutablePointer<Float>
    /// One phase's outputs for a block of at most `maxBlock` frames.
    private let outputs: UnsafeMutablePointer<Lanes>

    init(sampleRate: Int, truePeak: Bool, maxBlock: Int) {
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
        outputs = .allocate(capacity: maxBlock)
        outputs.initialize(repeating: .zero, count: maxBlock)
    }

    deinit {
        coefficients.deallocate()
        outputs.deallocate()
    }

    /// The highest magnitude of the non-trivial phases' outputs for frames start..<end of
    /// `input` (which has `history` frames before its start).
    /// Tap by tap over the whole block, so that the block's sums are independent additions
    /// (one sum per frame, tap after tap, waits on its own previous addition every time).
    func highest(_ input: UnsafeMutablePointer<Lanes>, from start: Int, to end: Int) -> Lanes {
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
            for frame in 0..<count {
                let lanes = outputs[frame]
                let magnitude = lanes.replacing(with: -lanes, where: lanes .< 0)
                highest = highest.replacing(with: magnitude, where: magnitude .> highest)
            }
        }
        return highest
    }
}

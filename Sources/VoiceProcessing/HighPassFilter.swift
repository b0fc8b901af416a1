// voiceChat's high-pass when SpeexDSP processes the capture: DC, rumble and handling noise
// below the voice band taken off the way WebRTC's module does (an 80 Hz second-order filter).

import Glibc

/// A second-order Butterworth high-pass at 80 Hz (the bilinear transform, prewarped) for one
/// channel, in place. A plain value: its state is the last two inputs and outputs.
struct HighPassFilter {
    private let b0: Float
    private let b1: Float
    private let b2: Float
    private let a1: Float
    private let a2: Float
    private var x1: Float = 0
    private var x2: Float = 0
    private var y1: Float = 0
    private var y2: Float = 0

    init(sampleRate: Int, cutoff: Double = 80) {
        let k = tan(Double.pi * cutoff / Double(sampleRate))
        let root2 = 2.0.squareRoot()
        let norm = 1 / (1 + root2 * k + k * k)
        b0 = Float(norm)
        b1 = Float(-2 * norm)
        b2 = Float(norm)
        a1 = Float(2 * (k * k - 1) * norm)
        a2 = Float((1 - root2 * k + k * k) * norm)
    }

    mutating func process(_ samples: UnsafeMutablePointer<Float>, count: Int) {
        var (x1, x2, y1, y2) = (self.x1, self.x2, self.y1, self.y2)
        for index in 0..<count {
            let x = samples[index]
            let y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
            (x2, x1, y2, y1) = (x1, x, y1, y)
            samples[index] = y
        }
        // A silent input leaves the state decaying into subnormal numbers, which cost the FPU
        // a hundred times a normal one's work on every sample after: flush them.
        if abs(y1) < 1e-20, abs(y2) < 1e-20 { (y1, y2) = (0, 0) }
        (self.x1, self.x2, self.y1, self.y2) = (x1, x2, y1, y2)
    }
}

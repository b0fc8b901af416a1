// SampleRuns, the walk the silence detector and the level cells share: against the plain loop,
// at every length and alignment (the lanes, the second chain and the tail), with the samples a
// wild client can write (NaN, infinities, beyond full scale).

import Testing

@testable import Archive

@Suite("SampleRuns: a run's peak and sum of squares in lanes, as the plain loop has them")
struct SampleRunsTests {
    @Test("peakAndSquares: the plain maximum of magnitudes (NaN left out) and the plain sum of squares")
    func peakAndSquares() {
        var generator = SystemRandomNumberGenerator()
        let specials: [Float] = [.nan, -.infinity, -0.0, .leastNonzeroMagnitude, -1, 0.75, 3, -7.5]
        let samples = (0..<200).map { _ in
            Int.random(in: 0..<6, using: &generator) == 0
                ? specials.randomElement(using: &generator)!
                : Float.random(in: -1...1, using: &generator)
        }
        var checked = 0
        samples.withUnsafeBufferPointer { buffer in
            for offset in 0..<8 {
                for count in 0...(samples.count - offset) where count < 50 || count % 5 == 0 {
                    var peak: Float = 0
                    var squares = 0.0
                    for sample in samples[offset..<(offset + count)] {
                        if sample.magnitude > peak { peak = sample.magnitude }
                        squares += Double(sample) * Double(sample)
                    }
                    let run = SampleRuns.peakAndSquares(buffer.baseAddress! + offset, count: count)
                    #expect(run.peak.bitPattern == peak.bitPattern, "offset \(offset) count \(count)")
                    if squares.isNaN || squares.isInfinite {
                        #expect(run.squares.isNaN == squares.isNaN, "offset \(offset) count \(count): \(run.squares)")
                    } else {
                        #expect(abs(Double(run.squares) - squares) <= 1e-5 * max(1, squares), "offset \(offset) count \(count)")
                    }
                    checked += 1
                }
            }
        }
        #expect(checked > 400)
    }
}

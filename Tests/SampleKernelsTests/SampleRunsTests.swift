// SampleRuns, the walk the silence detector and the level cells share: against the plain loop,
// at every length and alignment (the lanes, the second chain and the tail), with the samples a
// wild client can write (NaN, infinities, beyond full scale), in each build this CPU runs; the
// two builds give the same bits.

import Platform
import SampleKernels
import SampleKernelsAVX2
import Testing

@Suite("SampleRuns: a run's peak and sum of squares in lanes, as the plain loop has them")
struct SampleRunsTests {
    /// The builds this CPU runs.
    static let builds: [any SampleWalks.Type] =
        Processor.runsX86_64v3 ? [BaselineWalks.self, AVX2Walks.self] : [BaselineWalks.self]

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
                    let runs = SampleRunsTests.builds.map { $0.peakAndSquares(buffer.baseAddress! + offset, count: count) }
                    let bounded = SampleRunsTests.builds.map {
                        $0.peakAndBoundedSquares(buffer.baseAddress! + offset, count: count)
                    }
                    #expect(Set(runs.map { [$0.peak.bitPattern, $0.squares.bitPattern] }).count == 1, "builds differ")
                    #expect(Set(bounded.map { [$0.peak.bitPattern, $0.squares.bitPattern] }).count == 1, "builds differ")
                    let run = runs[0]
                    #expect(bounded[0].peak.bitPattern == peak.bitPattern)
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

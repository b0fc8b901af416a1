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

    @Test(
        "peakAndSquares and peakAndBoundedSquares: the plain maximum of magnitudes (NaN left out), the plain sum of squares and of bounded squares (NaN as 0, above 1 as 1)"
    )
    func peakAndSquares() {
        var generator = SystemRandomNumberGenerator()
        let specials: [Float] = [.nan, -.nan, .infinity, -.infinity, -0.0, .leastNonzeroMagnitude, -1, 0.75, 3, -7.5]
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
                    var boundedSquares = 0.0
                    for sample in samples[offset..<(offset + count)] {
                        if sample.magnitude > peak { peak = sample.magnitude }
                        squares += Double(sample) * Double(sample)
                        let limited = sample.isNaN ? 0 : min(Double(sample.magnitude), 1)
                        boundedSquares += limited * limited
                    }
                    let runs = SampleRunsTests.builds.map { $0.peakAndSquares(buffer.baseAddress! + offset, count: count) }
                    let bounded = SampleRunsTests.builds.map {
                        $0.peakAndBoundedSquares(buffer.baseAddress! + offset, count: count)
                    }
                    // The same bits in each build; of a NaN sum, which NaN (a +NaN and a -NaN
                    // sample: x86 keeps the first operand's, and the builds order them apart).
                    let bits = { (value: Float) in value.isNaN ? Float.nan.bitPattern : value.bitPattern }
                    #expect(Set(runs.map { [bits($0.peak), bits($0.squares)] }).count == 1, "builds differ: \(runs)")
                    #expect(Set(bounded.map { [$0.peak.bitPattern, $0.squares.bitPattern] }).count == 1, "builds differ: \(bounded)")
                    let run = runs[0]
                    #expect(bounded[0].peak.bitPattern == peak.bitPattern, "offset \(offset) count \(count)")
                    #expect(
                        abs(Double(bounded[0].squares) - boundedSquares) <= 1e-5 * max(1, boundedSquares),
                        "offset \(offset) count \(count)")
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

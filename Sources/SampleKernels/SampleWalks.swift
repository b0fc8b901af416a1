// The kernels' entry points: one protocol, met by this module's baseline build and by
// SampleKernelsAVX2's x86-64-v3 build of the same @inlinable code. Codec picks one at start
// (`Processor.runsX86_64v3`); the two give the same bits (SampleKernelsTests).

/// The sample walks every sample of every channel passes through, as entry points of one build.
public protocol SampleWalks: Sendable {
    /// `kWeightedEnergy` of one lane group, without the quads' extremes (a meter that does not
    /// measure true peak).
    static func kWeightedEnergy(
        _ a: UnsafePointer<Lanes>, frames n: Int, filter: KWeightingCoefficients, state: UnsafeMutablePointer<Lanes>
    ) -> Double
    /// `kWeightedEnergy` of one lane group, each quad's highest and lowest sample into `extremes`.
    static func kWeightedEnergy(
        _ a: UnsafePointer<Lanes>, frames n: Int, filter: KWeightingCoefficients, state: UnsafeMutablePointer<Lanes>,
        extremes: QuadExtremes
    ) -> Double
    /// `SampleRuns.peakAndSquares`: a run's peak and sum of squares.
    static func peakAndSquares(_ samples: UnsafePointer<Float>, count: Int) -> (peak: Float, squares: Float)
    /// `SampleRuns.peakAndBoundedSquares`: the same, magnitudes above 1 as 1 and NaN as 0 in the sum.
    static func peakAndBoundedSquares(_ samples: UnsafePointer<Float>, count: Int) -> (peak: Float, squares: Float)
    /// `quantizeRun`: a channel's contiguous samples to libFLAC's integers.
    static func quantize(_ input: UnsafePointer<Float>, count: Int, scale: Float, into output: UnsafeMutablePointer<Int32>)
}

/// The walks built for the baseline CPU of the target (x86-64: SSE2; a lane group is two
/// registers).
public enum BaselineWalks: SampleWalks {
    @inline(never)
    public static func kWeightedEnergy(
        _ a: UnsafePointer<Lanes>, frames n: Int, filter: KWeightingCoefficients, state: UnsafeMutablePointer<Lanes>
    ) -> Double {
        SampleKernels.kWeightedEnergy(a, frames: n, filter: filter, state: state, extremes: nil)
    }

    @inline(never)
    public static func kWeightedEnergy(
        _ a: UnsafePointer<Lanes>, frames n: Int, filter: KWeightingCoefficients, state: UnsafeMutablePointer<Lanes>,
        extremes: QuadExtremes
    ) -> Double {
        SampleKernels.kWeightedEnergy(a, frames: n, filter: filter, state: state, extremes: extremes)
    }

    @inline(never)
    public static func peakAndSquares(_ samples: UnsafePointer<Float>, count: Int) -> (peak: Float, squares: Float) {
        SampleRuns.peakAndSquares(samples, count: count)
    }

    @inline(never)
    public static func peakAndBoundedSquares(_ samples: UnsafePointer<Float>, count: Int) -> (peak: Float, squares: Float) {
        SampleRuns.peakAndBoundedSquares(samples, count: count)
    }

    @inline(never)
    public static func quantize(
        _ input: UnsafePointer<Float>, count: Int, scale: Float, into output: UnsafeMutablePointer<Int32>
    ) {
        SampleKernels.quantizeRun(input, count: count, scale: scale, into: output)
    }
}

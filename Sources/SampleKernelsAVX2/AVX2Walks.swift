// SampleKernels' walks built for x86-64-v3 (Package.swift: `-march=x86-64-v3` for this module
// alone): the same @inlinable code as `BaselineWalks`, a lane group in one AVX register. Only
// ever called where `Processor.runsX86_64v3` holds; nothing else belongs here, since any code
// in this module may use AVX2.
public import SampleKernels

/// The walks built for x86-64-v3.
public enum AVX2Walks: SampleWalks {
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

// The walks over one channel's run of float samples that the segment stages share: its peak and
// its sum of squares, eight lanes at a time in two independent chains (so that neither waits on
// the last maximum or sum), in the shapes LLVM keeps in vector registers (`maxps`: a NaN lane
// leaves the running peak alone). Called through the walks' build for the CPU
// (`SampleWalks.peakAndSquares`, `.peakAndBoundedSquares`).

public enum SampleRuns {
    /// The highest magnitude of `count` samples and the sum of their squares (NaN ignored by the
    /// peak, carried by the sum).
    @inlinable @inline(__always)
    public static func peakAndSquares(_ samples: UnsafePointer<Float>, count: Int) -> (peak: Float, squares: Float) {
        walk(samples, count: count, bounded: false)
    }

    /// The same, each magnitude taken as at most 1 and NaN as 0 in the sum of squares (what a
    /// level over a window that must not be pushed by one wild sample adds).
    @inlinable @inline(__always)
    public static func peakAndBoundedSquares(_ samples: UnsafePointer<Float>, count: Int) -> (peak: Float, squares: Float) {
        walk(samples, count: count, bounded: true)
    }

    @inlinable @inline(__always)
    static func walk(_ samples: UnsafePointer<Float>, count: Int, bounded: Bool) -> (peak: Float, squares: Float) {
        let zero = Lanes(repeating: 0)
        let one = Lanes(repeating: 1)
        var (peaks, otherPeaks, sums, otherSums) = (zero, zero, zero, zero)
        let raw = UnsafeRawPointer(samples)
        var index = 0
        @inline(__always) func squared(_ lanes: Lanes) -> Lanes {
            guard bounded else { return lanes * lanes }
            // NaN is larger than nothing: 0; above 1: 1.
            let limited = zero.replacing(with: lanes, where: lanes .> zero).replacing(with: one, where: lanes .> one)
            return limited * limited
        }
        while index <= count &- 16 {
            let a = raw.loadUnaligned(fromByteOffset: index &* 4, as: Lanes.self).magnitude
            let b = raw.loadUnaligned(fromByteOffset: index &* 4 &+ 32, as: Lanes.self).magnitude
            peaks = peaks.larger(a)
            otherPeaks = otherPeaks.larger(b)
            sums += squared(a)
            otherSums += squared(b)
            index &+= 16
        }
        peaks = peaks.larger(otherPeaks)
        sums += otherSums
        var peak = peaks.largestLane
        var squares = sums.sum()
        while index < count {
            let sample = samples[index]
            let size = sample.magnitude
            if size > peak { peak = size }
            if bounded {
                let limited: Float = size > 1 ? 1 : (size >= 0 ? size : 0)
                squares += limited * limited
            } else {
                squares += sample * sample
            }
            index &+= 1
        }
        return (peak, squares)
    }
}

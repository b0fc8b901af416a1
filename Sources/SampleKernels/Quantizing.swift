// Float samples to the integers libFLAC encodes (Codec's `SampleQuantizer` is the one way in):
// the scalar reference, eight samples at once in float lanes, and the run every recorded sample
// passes through (a channel's samples, contiguous), each giving the same integers.
//
// Written for the optimizer: no library call (`Float.rounded()` calls `roundf`, and without
// SSE4.1 a float `trunc` is a call too), no trapping conversion (`Int32(Float)` checks its
// range), no branch on the data and no checked index arithmetic.

/// One sample scaled by `scale` (2^(bits−1), bits ≤ 24), NaN as 0, clamped to
/// [−scale, scale − 1], rounded to nearest with ties away from zero (as `Float.rounded()`):
/// the reference, and the tail of the lane loops.
@inlinable @inline(__always)
public func quantizedSample(_ sample: Float, scale: Float) -> Int32 {
    var scaled = sample * scale
    scaled = scaled == scaled ? scaled : 0  // NaN
    scaled = min(max(scaled, -scale), scale - 1)
    // Exact: a float has 24 significant bits. Nudging away from zero by 2^-27 turns a tie
    // (…​.5) into a value just past it and moves no other float across a half: below 2^23
    // a float that is not a tie lies at least 2^-24 from one.
    let value = Double(scaled)
    let nudged = value + Double(signOf: value, magnitudeOf: 0x1p-27)
    // Adding 1.5 × 2^52 leaves the value rounded to the nearest integer in the low 32 bits
    // of the significand (two's complement, for magnitudes below 2^31).
    let magic: Double = 0x1.8p52
    return Int32(truncatingIfNeeded: (nudged + magic).bitPattern)
}

/// Eight samples at once, in float lanes, exactly as `quantizedSample` does each.
///
/// Why it is exact (bits ≤ 24, so scale = 2^(bits−1) ≤ 2^23):
/// - `sample × scale` multiplies by a power of two: exact (a value past the float range
///   becomes ±inf, which the clamp handles like any value beyond it).
/// - The sign is kept apart (s = 0 or −1 from the sign bit) and the magnitude a = |x| is
///   worked on: a is clamped to scale, and NaN (which fails both comparisons that pick a
///   or the bound) becomes 0. Clamping before rounding equals the reference's clamp after
///   it, because the bound is an integer and rounding is monotonic; the positive side's
///   bound, scale − 1, is applied to the signed result.
/// - With a ≤ 2^23, y = a + 2^23 lies in [2^23, 2^24], where floats are the integers: the
///   addition rounds a to the nearest integer, ties to even. The bits of y minus the bits
///   of 2^23 are that integer n (the significand counts up from 2^23; y = 2^24 gives 2^23,
///   the next exponent's first pattern, as it should).
/// - r = y − 2^23 = n exactly (Sterbenz: y and 2^23 are within a factor 2), and a − r is
///   exact too (n ≥ 1: a and n are within a factor 2; n = 0: it is a). It is +0.5 exactly
///   when a was a tie that went down to even; then n + 1 is the tie away from zero. A tie
///   that went up gives −0.5 and needs nothing.
/// - The sign goes back on in two's complement: (n ^ s) − s, so −0 and a negative NaN
///   give 0 and −scale is representable; +scale, the one value past the positive bound,
///   becomes scale − 1.
@inlinable @inline(__always)
public func quantizedLanes(_ samples: SIMD8<Float>, scale: Float) -> SIMD8<Int32> {
    let scaled = samples * scale
    let bits = unsafeBitCast(scaled, to: SIMD8<Int32>.self)
    let sign = bits &>> 31
    let absoluteBits = bits & 0x7FFF_FFFF
    let absolute = unsafeBitCast(absoluteBits, to: SIMD8<Float>.self)
    let limit = SIMD8<Float>(repeating: scale)
    // Below the limit: itself; from it up: the limit; NaN fails both comparisons: +0.
    let none = SIMD8<Int32>(repeating: 0)
    let below = none.replacing(with: -1, where: absolute .< limit)
    let above = none.replacing(with: -1, where: absolute .>= limit)
    let limitBits = SIMD8<Int32>(repeating: Int32(bitPattern: scale.bitPattern))
    let magnitude = unsafeBitCast((absoluteBits & below) | (limitBits & above), to: SIMD8<Float>.self)
    let two23: Float = 0x1p23
    let shifted = magnitude + two23
    let rounded = shifted - two23
    let tie = SIMD8<Int32>(repeating: 0).replacing(with: 1, where: magnitude - rounded .== 0.5)
    let integer = (unsafeBitCast(shifted, to: SIMD8<Int32>.self) &- Int32(bitPattern: two23.bitPattern)) &+ tie
    let signed = (integer ^ sign) &- sign
    // Against a vector: `.==` with a scalar compiles to a lane-by-lane loop.
    let top = SIMD8<Int32>(repeating: Int32(truncatingIfNeeded: Int(scale)))
    return signed &- SIMD8<Int32>(repeating: 0).replacing(with: 1, where: signed .== top)
}

/// `count` contiguous samples quantized into `output`: eight at a time, the last eight
/// overlapping samples already written (with the same values); fewer than eight one by one.
@inlinable @inline(__always)
public func quantizeRun(_ input: UnsafePointer<Float>, count: Int, scale: Float, into output: UnsafeMutablePointer<Int32>) {
    let width = SIMD8<Float>.scalarCount
    guard count >= width else {
        for index in 0..<count { output[index] = quantizedSample(input[index], scale: scale) }
        return
    }
    let from = UnsafeRawPointer(input)
    let to = UnsafeMutableRawPointer(output)
    let step = width * MemoryLayout<Float>.stride
    let last = (count - width) * MemoryLayout<Float>.stride
    var offset = 0
    // One place for the lanes (the last group moved back to end with the run), so the
    // optimizer inlines them once.
    while true {
        let at = min(offset, last)
        let lanes = from.loadUnaligned(fromByteOffset: at, as: SIMD8<Float>.self)
        to.storeBytes(of: quantizedLanes(lanes, scale: scale), toByteOffset: at, as: SIMD8<Int32>.self)
        if at == last { break }
        offset += step
    }
}

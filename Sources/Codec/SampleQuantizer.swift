// Float samples to the integers libFLAC encodes: the archiver's segments and FLACWriter.
//
// Every sample of every channel passes through here (at 32 channels, 1.5 M a second), so it is
// written for the optimizer: no library call (`Float.rounded()` calls `roundf`, and without
// SSE4.1 a float `trunc` is a call too), no trapping conversion (`Int32(Float)` checks its
// range), no branch on the data and no checked index arithmetic. The group loops work on
// `SIMD4<Float>` lanes (SSE2 on x86-64, NEON on arm64: no target flags) and fall back to the
// scalar `quantize(_:)` only for the last samples that do not fill a lane. Both give the same
// integers (proofs on each; QuantizerTests compares them over every shape and edge value).

/// Converts float samples in [-1, 1) to signed `bitsPerSample`-bit integers: scaled by
/// 2^(bits-1), NaN as 0, clamped to the format's range (libFLAC stops for good on an
/// out-of-range value), rounded to nearest with ties away from zero (as `Float.rounded()`).
package struct SampleQuantizer {
    package let scale: Float

    package init(bitsPerSample: Int) {
        precondition((2...24).contains(bitsPerSample), "a float has 24 significant bits")
        scale = Float(Int32(1) << Int32(bitsPerSample - 1))
    }

    /// One sample: the reference, and the tail of the group loops.
    @inline(__always)
    package func quantize(_ sample: Float) -> Int32 {
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

    /// Four samples at once, in float lanes, exactly as `quantize(_:)` does each.
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
    @inline(__always)
    package func quantize(_ samples: SIMD4<Float>) -> SIMD4<Int32> {
        let scaled = samples * scale
        let bits = unsafeBitCast(scaled, to: SIMD4<Int32>.self)
        let sign = bits &>> 31
        let absoluteBits = bits & 0x7FFF_FFFF
        let absolute = unsafeBitCast(absoluteBits, to: SIMD4<Float>.self)
        let limit = SIMD4<Float>(repeating: scale)
        // Below the limit: itself; from it up: the limit; NaN fails both comparisons: +0.
        let none = SIMD4<Int32>(repeating: 0)
        let below = none.replacing(with: -1, where: absolute .< limit)
        let above = none.replacing(with: -1, where: absolute .>= limit)
        let limitBits = SIMD4<Int32>(repeating: scale.bitPattern.int32)
        let magnitude = unsafeBitCast((absoluteBits & below) | (limitBits & above), to: SIMD4<Float>.self)
        let two23: Float = 0x1p23
        let shifted = magnitude + two23
        let rounded = shifted - two23
        let tie = SIMD4<Int32>(repeating: 0).replacing(with: 1, where: magnitude - rounded .== 0.5)
        let integer = (unsafeBitCast(shifted, to: SIMD4<Int32>.self) &- two23.bitPattern.int32) &+ tie
        let signed = (integer ^ sign) &- sign
        let top = Int32(scale)
        return signed &- SIMD4<Int32>(repeating: 0).replacing(with: 1, where: signed .== top)
    }

    /// Channels `firstChannel ..< firstChannel + channels` of `frames` frames spaced `stride`
    /// samples apart at `source`, interleaved into `destination` (`frames × channels`).
    package func quantize(
        _ source: UnsafePointer<Float>, stride: Int, firstChannel: Int, channels: Int, frames: Int,
        into destination: UnsafeMutablePointer<Int32>
    ) {
        guard frames > 0 && channels > 0 else { return }
        let input = source + firstChannel
        if channels == stride {
            // Whole frames: one contiguous run.
            quantizeContiguous(input, count: frames * channels, into: destination)
        } else if channels == 8 {
            // A full group of a wider tap (recd's files hold up to 8 channels): a fixed trip count.
            var from = input
            var to = destination
            for _ in 0..<frames {
                store(quantize(load(from)), to)
                store(quantize(load(from + 4)), to + 4)
                from += stride
                to += 8
            }
        } else if channels >= 4 {
            // 4…7, 9…: lanes of four, the last one overlapping the one before (the overlap is
            // written twice with the same values).
            var from = input
            var to = destination
            for _ in 0..<frames {
                var channel = 0
                while channel + 4 <= channels {
                    store(quantize(load(from + channel)), to + channel)
                    channel += 4
                }
                if channel < channels { store(quantize(load(from + channels - 4)), to + channels - 4) }
                from += stride
                to += channels
            }
        } else if channels == 2 {
            let pairs = frames / 2
            for pair in 0..<pairs {
                let from = input + 2 * pair * stride
                let lanes = SIMD4(lowHalf: load2(from), highHalf: load2(from + stride))
                store(quantize(lanes), destination + 4 * pair)
            }
            quantizeScalar(input, stride: stride, channels: 2, frames: pairs * 2..<frames, into: destination)
        } else if channels == 1 {
            let quads = frames / 4
            for quad in 0..<quads {
                let from = input + 4 * quad * stride
                let lanes = SIMD4(from[0], from[stride], from[2 * stride], from[3 * stride])
                store(quantize(lanes), destination + 4 * quad)
            }
            quantizeScalar(input, stride: stride, channels: 1, frames: quads * 4..<frames, into: destination)
        } else {
            quantizeScalar(input, stride: stride, channels: channels, frames: 0..<frames, into: destination)
        }
    }

    private func quantizeContiguous(
        _ input: UnsafePointer<Float>, count: Int, into output: UnsafeMutablePointer<Int32>
    ) {
        guard count >= 4 else {
            for index in 0..<count { output[index] = quantize(input[index]) }
            return
        }
        var index = 0
        while index + 8 <= count {
            store(quantize(load(input + index)), output + index)
            store(quantize(load(input + index + 4)), output + index + 4)
            index += 8
        }
        if index + 4 <= count {
            store(quantize(load(input + index)), output + index)
            index += 4
        }
        // The last lane overlaps samples already written, with the same values.
        if index < count { store(quantize(load(input + count - 4)), output + count - 4) }
    }

    private func quantizeScalar(
        _ input: UnsafePointer<Float>, stride: Int, channels: Int, frames: Range<Int>,
        into destination: UnsafeMutablePointer<Int32>
    ) {
        for frame in frames {
            for channel in 0..<channels {
                destination[frame * channels + channel] = quantize(input[frame * stride + channel])
            }
        }
    }
}

@inline(__always)
private func load(_ pointer: UnsafePointer<Float>) -> SIMD4<Float> {
    UnsafeRawPointer(pointer).loadUnaligned(as: SIMD4<Float>.self)
}

@inline(__always)
private func load2(_ pointer: UnsafePointer<Float>) -> SIMD2<Float> {
    UnsafeRawPointer(pointer).loadUnaligned(as: SIMD2<Float>.self)
}

@inline(__always)
private func store(_ value: SIMD4<Int32>, _ pointer: UnsafeMutablePointer<Int32>) {
    UnsafeMutableRawPointer(pointer).storeBytes(of: value, as: SIMD4<Int32>.self)
}

extension UInt32 {
    fileprivate var int32: Int32 { Int32(bitPattern: self) }
}

// Float samples to the integers libFLAC encodes: the archiver's segments and FLACWriter.
//
// Every sample of every channel passes through here (at 32 channels, 1.5 M a second). The
// arithmetic is SampleKernels' (`quantizedSample`, `quantizedLanes`, `quantizeRun`: one
// reference, eight lanes, proofs that they agree); a channel's contiguous run, the recorders'
// path, goes through the walks' build for this CPU (`Walks.current`). The strided shapes
// (FLACWriter's interleaved files) are laid into lanes of eight here and fall back to the
// scalar reference only for the last samples that do not fill one. QuantizerTests compares
// every path with the reference over every shape and edge value.
internal import SampleKernels

/// Converts float samples in [-1, 1) to signed `bitsPerSample`-bit integers: scaled by
/// 2^(bits-1), NaN as 0, clamped to the format's range (libFLAC stops for good on an
/// out-of-range value), rounded to nearest with ties away from zero (as `Float.rounded()`).
package struct SampleQuantizer {
    package let scale: Float

    package init(bitsPerSample: Int) {
        precondition((2...24).contains(bitsPerSample), "a float has 24 significant bits")
        scale = Float(Int32(1) << Int32(bitsPerSample - 1))
    }

    /// One sample: the reference, and the tail of the lane loops.
    @inline(__always)
    package func quantize(_ sample: Float) -> Int32 { quantizedSample(sample, scale: scale) }

    /// Eight samples at once, exactly as `quantize(_:)` does each.
    @inline(__always)
    package func quantize(_ samples: SIMD8<Float>) -> SIMD8<Int32> { quantizedLanes(samples, scale: scale) }

    /// Channels `firstChannel ..< firstChannel + channels` of `frames` frames spaced `stride`
    /// samples apart at `source`, interleaved into `destination` (`frames × channels`).
    package func quantize(
        _ source: UnsafePointer<Float>, stride: Int, firstChannel: Int, channels: Int, frames: Int,
        into destination: UnsafeMutablePointer<Int32>
    ) {
        guard frames > 0 && channels > 0 else { return }
        let input = source + firstChannel
        if channels == stride {
            // Whole frames: one contiguous run (a recorder's channel: stride 1).
            Walks.current.quantize(input, count: frames * channels, scale: scale, into: destination)
        } else if channels >= 8 {
            // 8 and more (recd's files hold up to 8 channels of a wider tap): lanes of eight, the
            // last one overlapping the one before (the overlap is written twice, with the same
            // values).
            var from = input
            var to = destination
            for _ in 0..<frames {
                var channel = 0
                while channel + 8 <= channels {
                    store(quantize(load(from + channel)), to + channel)
                    channel += 8
                }
                if channel < channels { store(quantize(load(from + channels - 8)), to + channels - 8) }
                from += stride
                to += channels
            }
        } else if channels >= 4 {
            // 4…7: two frames to a lane group, four channels of each, the last four overlapping.
            let pairs = frames / 2
            for pair in 0..<pairs {
                let from = input + 2 * pair * stride
                let to = destination + 2 * pair * channels
                var channel = 0
                while channel < channels {
                    let first = min(channel, channels - 4)
                    let values = quantize(SIMD8(lowHalf: load4(from + first), highHalf: load4(from + stride + first)))
                    store4(values.lowHalf, to + first)
                    store4(values.highHalf, to + channels + first)
                    channel += 4
                }
            }
            quantizeScalar(input, stride: stride, channels: channels, frames: pairs * 2..<frames, into: destination)
        } else if channels == 2 {
            let quads = frames / 4
            for quad in 0..<quads {
                let from = input + 4 * quad * stride
                let lanes = SIMD8(
                    lowHalf: SIMD4(lowHalf: load2(from), highHalf: load2(from + stride)),
                    highHalf: SIMD4(lowHalf: load2(from + 2 * stride), highHalf: load2(from + 3 * stride)))
                store(quantize(lanes), destination + 8 * quad)
            }
            quantizeScalar(input, stride: stride, channels: 2, frames: quads * 4..<frames, into: destination)
        } else if channels == 1 {
            let octets = frames / 8
            for octet in 0..<octets {
                let from = input + 8 * octet * stride
                let lanes = SIMD8(
                    from[0], from[stride], from[2 * stride], from[3 * stride], from[4 * stride], from[5 * stride],
                    from[6 * stride], from[7 * stride])
                store(quantize(lanes), destination + 8 * octet)
            }
            quantizeScalar(input, stride: stride, channels: 1, frames: octets * 8..<frames, into: destination)
        } else {
            quantizeScalar(input, stride: stride, channels: channels, frames: 0..<frames, into: destination)
        }
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
private func load(_ pointer: UnsafePointer<Float>) -> SIMD8<Float> {
    UnsafeRawPointer(pointer).loadUnaligned(as: SIMD8<Float>.self)
}

@inline(__always)
private func load4(_ pointer: UnsafePointer<Float>) -> SIMD4<Float> {
    UnsafeRawPointer(pointer).loadUnaligned(as: SIMD4<Float>.self)
}

@inline(__always)
private func load2(_ pointer: UnsafePointer<Float>) -> SIMD2<Float> {
    UnsafeRawPointer(pointer).loadUnaligned(as: SIMD2<Float>.self)
}

@inline(__always)
private func store(_ values: SIMD8<Int32>, _ pointer: UnsafeMutablePointer<Int32>) {
    UnsafeMutableRawPointer(pointer).storeBytes(of: values, as: SIMD8<Int32>.self)
}

@inline(__always)
private func store4(_ values: SIMD4<Int32>, _ pointer: UnsafeMutablePointer<Int32>) {
    UnsafeMutableRawPointer(pointer).storeBytes(of: values, as: SIMD4<Int32>.self)
}

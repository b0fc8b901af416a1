import Testing

@testable import Codec

/// The float → integer conversion of the archive and FLACWriter, against the plain definition: scale, NaN as 0,
/// clamp, `Float.rounded()` (ties away from zero).
@Suite("Sample quantizer")
struct QuantizerTests {
    static func reference(_ sample: Float, bits: Int) -> Int32 {
        let scale = Float(Int32(1) << Int32(bits - 1))
        if sample.isNaN { return 0 }
        return Int32(min(max((sample * scale).rounded(), -scale), scale - 1))
    }

    static let specials: [Float] = [
        .nan, -.nan, Float(bitPattern: 0x7FC0_1234), Float(bitPattern: 0xFFC0_0001), Float(bitPattern: 0x7F80_0001),
        .infinity, -.infinity, 0, -0.0, 1, -1, 0.999_999_94, -0.999_999_94, 0.5, -0.5, 1e30, -1e30,
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .ulpOfOne, 2, -2,
    ]

    @Test("every tie, clamp, NaN and random sample matches the plain definition", arguments: [16, 24])
    func matchesReference(bits: Int) {
        let quantizer = SampleQuantizer(bitsPerSample: bits)
        let scale = Float(Int32(1) << Int32(bits - 1))
        var samples = QuantizerTests.specials
        // Exact ties (k + 0.5 LSB) and their neighbours, both signs, across the range.
        for k in stride(from: -Int(scale), to: Int(scale), by: Int(scale) / 997) {
            let tie = (Float(k) + 0.5) / scale
            samples += [tie, tie.nextUp, tie.nextDown]
        }
        for k in 0..<64 { samples += [(Float(k) + 0.5) / scale, -(Float(k) + 0.5) / scale] }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100_000 { samples.append(Float.random(in: -1.2...1.2, using: &generator)) }
        var output = [Int32](repeating: 99, count: samples.count)
        samples.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { target in
                quantizer.quantize(
                    input.baseAddress!, stride: 1, firstChannel: 0, channels: 1, frames: input.count,
                    into: target.baseAddress!)
            }
        }
        var mismatches: [String] = []
        for (sample, value) in zip(samples, output) where value != QuantizerTests.reference(sample, bits: bits) {
            mismatches.append("\(sample) (bits \(sample.bitPattern)) → \(value), expected \(QuantizerTests.reference(sample, bits: bits))")
        }
        let count = mismatches.count
        #expect(count == 0, "first mismatches: \(mismatches.prefix(5))")
        #expect(output.allSatisfy { $0 >= -Int32(scale) && $0 < Int32(scale) })
    }

    @Test("channels are taken from their place in a wider frame and interleaved")
    func stridedGroup() {
        let quantizer = SampleQuantizer(bitsPerSample: 24)
        // 5 frames of 10 channels; take channels 8 and 9 (the second group of a 10-channel tap).
        let frames = 5
        let input = (0..<(frames * 10)).map { Float($0) / 1024 }
        var output = [Int32](repeating: 0, count: frames * 2)
        input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                quantizer.quantize(
                    source.baseAddress!, stride: 10, firstChannel: 8, channels: 2, frames: frames,
                    into: target.baseAddress!)
            }
        }
        let expected = (0..<frames).flatMap { frame in [frame * 10 + 8, frame * 10 + 9].map { Int32($0 * 8192) } }
        #expect(output == expected)
    }

    /// Random samples over and past the range, with the edges mixed in: ties and their
    /// neighbours near zero and near full scale, ±full scale, NaNs, ±inf, denormals.
    static func edgeAndRandomSamples(bits: Int, count: Int) -> [Float] {
        let scale = Float(Int32(1) << Int32(bits - 1))
        var edges = specials
        edges += [.greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNormalMagnitude, -.leastNormalMagnitude]
        edges += [Float(bitPattern: 0x0000_0001), Float(bitPattern: 0x807F_FFFF), Float(bitPattern: 0x0040_0000)]
        for k in [0, 1, 2, 3, Int(scale) / 2 - 1, Int(scale) / 2, Int(scale) - 2, Int(scale) - 1, Int(scale)] {
            for tie in [(Float(k) + 0.5) / scale, (Float(k) - 0.5) / scale, Float(k) / scale] {
                edges += [tie, tie.nextUp, tie.nextDown, -tie, -tie.nextUp, -tie.nextDown]
            }
        }
        var generator = SystemRandomNumberGenerator()
        var samples: [Float] = []
        samples.reserveCapacity(count)
        while samples.count < count {
            switch UInt8.random(in: 0...7, using: &generator) {
            case 0: samples.append(edges.randomElement(using: &generator)!)
            case 1: samples.append(Float(bitPattern: UInt32.random(in: 0...UInt32.max, using: &generator)))
            // An exact tie anywhere in the range.
            case 2: samples.append((Float(Int.random(in: -Int(scale)...Int(scale), using: &generator)) + 0.5) / scale)
            default: samples.append(Float.random(in: -1.1...1.1, using: &generator))
            }
        }
        return samples
    }

    @Test(
        "the lane paths give the scalar reference's integers for every group shape, frame count and edge value",
        arguments: [16, 24])
    func lanesMatchScalar(bits: Int) {
        let quantizer = SampleQuantizer(bitsPerSample: bits)
        let source = QuantizerTests.edgeAndRandomSamples(bits: bits, count: 32 * 37)
        var shapes: [(stride: Int, first: Int, channels: Int)] = []
        for channels in 1...9 {
            shapes += [(channels, 0, channels), (channels + 1, 1, channels), (32, 32 - channels, channels)]
            if channels <= 8 { shapes.append((32, 8, channels)) }
        }
        shapes += [(16, 0, 16), (32, 0, 32), (10, 8, 2), (10, 5, 5)]
        var checked = 0
        var mismatches: [String] = []
        // Offsets move each sample into every lane position.
        for offset in [0, 1, 3] {
            for shape in shapes {
                let frameCounts = [0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 30]
                for frames in frameCounts where offset + frames * shape.stride <= source.count {
                    var output = [Int32](repeating: 99, count: frames * shape.channels + 4)
                    source.withUnsafeBufferPointer { input in
                        output.withUnsafeMutableBufferPointer { target in
                            quantizer.quantize(
                                input.baseAddress! + offset, stride: shape.stride, firstChannel: shape.first,
                                channels: shape.channels, frames: frames, into: target.baseAddress!)
                        }
                    }
                    for frame in 0..<frames {
                        for channel in 0..<shape.channels {
                            let sample = source[offset + frame * shape.stride + shape.first + channel]
                            let value = output[frame * shape.channels + channel]
                            checked += 1
                            let expected = QuantizerTests.reference(sample, bits: bits)
                            if value != quantizer.quantize(sample) || value != expected {
                                mismatches.append(
                                    "\(shape) frames \(frames) [\(frame), \(channel)]: \(sample) (bits \(sample.bitPattern)) → \(value), expected \(quantizer.quantize(sample))"
                                )
                            }
                        }
                    }
                    // Nothing written past the group's frames.
                    #expect(output[(frames * shape.channels)...].allSatisfy { $0 == 99 }, "\(shape) frames \(frames)")
                }
            }
        }
        #expect(checked > 50_000)
        #expect(mismatches.isEmpty, "\(mismatches.count) mismatches, first: \(mismatches.prefix(5))")
    }

    @Test(
        "eight lanes give the scalar reference's integers for random bit patterns and every edge", arguments: [16, 24])
    func eightLanesMatchScalar(bits: Int) {
        let quantizer = SampleQuantizer(bitsPerSample: bits)
        let samples = QuantizerTests.edgeAndRandomSamples(bits: bits, count: 100_000)
        var mismatches = 0
        var first: [String] = []
        for start in stride(from: 0, to: samples.count - 7, by: 8) {
            var lanes = SIMD8<Float>()
            for lane in 0..<8 { lanes[lane] = samples[start + lane] }
            let values = quantizer.quantize(lanes)
            for lane in 0..<8 where values[lane] != quantizer.quantize(lanes[lane]) {
                mismatches += 1
                if first.count < 5 {
                    first.append("\(lanes[lane]) → \(values[lane]), expected \(quantizer.quantize(lanes[lane]))")
                }
            }
        }
        #expect(mismatches == 0, "first: \(first)")
    }
}

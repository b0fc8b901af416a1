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
}

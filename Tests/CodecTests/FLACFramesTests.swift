// FLACFrames: header parsing of every code form, the coded number up to 36 bits, CRCs, the
// header rewriter, and the frame reader on hand-made streams (verbatim subframes, so the audio
// bytes are chosen by the test: a false sync code inside them, a corrupted frame).

import AudioTestSupport
import Foundation
import Testing

@testable import Codec

@Suite("FLAC frames without decoding")
struct FLACFramesTests {
    /// A frame header: sync, codes, number, the extra block size / rate bytes, CRC-8.
    static func header(
        variable: Bool, blockCode: UInt8, rateCode: UInt8, number: UInt64, extra: [UInt8], channelCode: UInt8 = 0,
        sizeCode: UInt8 = 4
    ) -> [UInt8] {
        var bytes: [UInt8] = [
            0xFF, variable ? 0xF9 : 0xF8, blockCode << 4 | rateCode, channelCode << 4 | sizeCode << 1,
        ]
        bytes += FLACFrameHeader.codedNumberBytes(number)
        bytes += extra
        bytes.append(bytes.withUnsafeBytes { FLACCRC.crc8($0) })
        return bytes
    }

    /// A mono 16-bit frame with a verbatim subframe holding `samples` (block size code 0110).
    static func frame(number: UInt64, samples: [Int16], variable: Bool = false) -> [UInt8] {
        var bytes = header(
            variable: variable, blockCode: 6, rateCode: 0, number: number, extra: [UInt8(samples.count - 1)])
        bytes.append(0x02)  // subframe: verbatim, no wasted bits
        for sample in samples {
            let value = UInt16(bitPattern: sample)
            bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
        }
        let crc = bytes.withUnsafeBytes { FLACCRC.crc16($0) }
        return bytes + [UInt8(crc >> 8), UInt8(crc & 0xFF)]
    }

    /// fLaC, STREAMINFO (48 kHz mono 16-bit, fixed blocks of `block`), then `frames`.
    static func stream(block: Int, total: Int, frames: [[UInt8]]) -> [UInt8] {
        var info = [UInt8](repeating: 0, count: 34)
        info[0] = UInt8(block >> 8)
        info[1] = UInt8(block & 0xFF)
        info[2] = UInt8(block >> 8)
        info[3] = UInt8(block & 0xFF)
        // 20 bits rate, 3 bits channels - 1, 5 bits bits - 1, 36 bits total.
        let packed = UInt64(48_000) << 44 | UInt64(0) << 41 | UInt64(15) << 36 | UInt64(total)
        for index in 0..<8 { info[10 + index] = UInt8(packed >> (56 - 8 * UInt64(index)) & 0xFF) }
        return Array("fLaC".utf8) + [0x80, 0, 0, 34] + info + frames.flatMap { $0 }
    }

    static func samples(_ frame: Int, _ count: Int) -> [Int16] {
        (0..<count).map { Int16(truncatingIfNeeded: frame * 1000 + $0 * 37 - 500) }
    }

    @Test("every block size and sample rate code form parses, with its CRC-8 checked")
    func everyCodeForm() {
        let blocks: [(UInt8, [UInt8], Int)] = [
            (1, [], 192), (2, [], 576), (3, [], 1152), (4, [], 2304), (5, [], 4608), (6, [0x00], 1), (6, [0xFF], 256),
            (7, [0x00, 0x0F], 16), (7, [0xFF, 0xFF], 65_536), (8, [], 256), (9, [], 512), (10, [], 1024),
            (11, [], 2048), (12, [], 4096), (13, [], 8192), (14, [], 16_384), (15, [], 32_768),
        ]
        let rates: [(UInt8, [UInt8], Int?)] = [
            (0, [], nil), (1, [], 88_200), (2, [], 176_400), (3, [], 192_000), (4, [], 8_000), (5, [], 16_000),
            (6, [], 22_050), (7, [], 24_000), (8, [], 32_000), (9, [], 44_100), (10, [], 48_000), (11, [], 96_000),
            (12, [50], 50_000), (13, [0xAC, 0x44], 44_100), (14, [0x12, 0xC0], 48_000),
        ]
        for (blockCode, blockExtra, blockSize) in blocks {
            for (rateCode, rateExtra, rate) in rates {
                let bytes = Self.header(
                    variable: true, blockCode: blockCode, rateCode: rateCode, number: 123_456,
                    extra: blockExtra + rateExtra, channelCode: 9, sizeCode: 6)
                let parsed = bytes.withUnsafeBytes { FLACFrameHeader.parse($0, at: 0) }
                #expect(parsed?.blockSize == blockSize, "block code \(blockCode)")
                #expect(parsed?.sampleRate == rate, "rate code \(rateCode)")
                #expect(parsed?.length == bytes.count)
                #expect(parsed?.channels == 2 && parsed?.bitsPerSample == 24 && parsed?.codedNumber == 123_456)
                // One bit off anywhere: the CRC-8 (or a reserved code) refuses it.
                var damaged = bytes
                damaged[2] ^= 0x01
                #expect(damaged.withUnsafeBytes { FLACFrameHeader.parse($0, at: 0) } == nil)
            }
        }
        // Reserved codes: block size 0000, rate 1111, channels 1011, sample size 011.
        for (blockCode, rateCode, channelCode, sizeCode) in [(0, 0, 0, 4), (1, 15, 0, 4), (1, 0, 11, 4), (1, 0, 0, 3)] {
            let bytes = Self.header(
                variable: false, blockCode: UInt8(blockCode), rateCode: UInt8(rateCode), number: 1, extra: [],
                channelCode: UInt8(channelCode), sizeCode: UInt8(sizeCode))
            #expect(bytes.withUnsafeBytes { FLACFrameHeader.parse($0, at: 0) } == nil)
        }
    }

    @Test("coded numbers of 1 to 7 bytes, up to 36 bits for sample numbers (31 for frame numbers)")
    func codedNumbers() {
        let values: [UInt64] = [
            0, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x1_0000, 0x1F_FFFF, 0x20_0000, 0x3FF_FFFF, 0x400_0000,
            0x7FFF_FFFF, 0x8000_0000, (1 << 36) - 1,
        ]
        let lengths = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]
        for (value, length) in zip(values, lengths) {
            #expect(FLACFrameHeader.codedNumberBytes(value).count == length, "\(value)")
            let variable = Self.header(variable: true, blockCode: 12, rateCode: 10, number: value, extra: [])
            #expect(variable.withUnsafeBytes { FLACFrameHeader.parse($0, at: 0) }?.codedNumber == value)
            let fixed = Self.header(variable: false, blockCode: 12, rateCode: 10, number: value, extra: [])
            let parsedFixed = fixed.withUnsafeBytes { FLACFrameHeader.parse($0, at: 0) }
            #expect(length == 7 ? parsedFixed == nil : parsedFixed?.codedNumber == value, "\(value)")
        }
    }

    @Test("CRC-16 of A‖B from crc(A), crc(B) and |B| equals the direct CRC")
    func crcCombination() {
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 2, 7, 100, 4097, 70_000] {
            let a = (0..<13).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let b = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let direct = (a + b).withUnsafeBytes { FLACCRC.crc16($0) }
            let crcA = a.withUnsafeBytes { FLACCRC.crc16($0) }
            let crcB = b.withUnsafeBytes { FLACCRC.crc16($0) }
            #expect(FLACCRC.combine16(crcA, crcB, lengthB: length) == direct, "|B| = \(length)")
        }
    }

    @Test("a frame rewritten with sample number 2^36 - 1 parses back, checks, and decodes with libFLAC")
    func rewriteTo36Bits() throws {
        let frame = Self.frame(number: 3, samples: Self.samples(3, 64))
        let header = try #require(frame.withUnsafeBytes { FLACFrameHeader.parse($0, at: 0) })
        for number: UInt64 in [0, 5, 1 << 31, (1 << 36) - 1] {
            var output: [UInt8] = []
            frame.withUnsafeBytes { FLACFrameRewriter.append($0, header: header, sampleNumber: number, to: &output) }
            let parsed = try #require(output.withUnsafeBytes { FLACFrameHeader.parse($0, at: 0) })
            #expect(parsed.variableBlocksize && parsed.codedNumber == number && parsed.blockSize == 64)
            #expect(output.withUnsafeBytes { FLACCRC.crc16($0) } == 0, "the new CRC-16 checks")
        }
        // A variable-blocksize stream of rewritten frames is one libFLAC decodes.
        let directory = try TemporaryDirectory()
        var frames: [[UInt8]] = []
        for index in 0..<3 {
            let original = Self.frame(number: UInt64(index + 7), samples: Self.samples(index, 64))
            let parsed = try #require(original.withUnsafeBytes { FLACFrameHeader.parse($0, at: 0) })
            var output: [UInt8] = []
            original.withUnsafeBytes {
                FLACFrameRewriter.append($0, header: parsed, sampleNumber: UInt64(index * 64), to: &output)
            }
            frames.append(output)
        }
        let path = directory.file("variable.flac")
        try Data(Self.stream(block: 64, total: 192, frames: frames)).write(to: URL(fileURLWithPath: path))
        let test = try runTool("flac", ["-t", "-s", path])
        #expect(test.status == 0, "flac -t: \(test.output)")
        let decoder = try FLACDecoder(file: ReadOnlyFile(path: path), mode: .strict)
        var decoded = [Int32](repeating: 0, count: 192)
        let count = try decoded.withUnsafeMutableBufferPointer {
            try decoder.read(into: $0.baseAddress!, maxFrames: 192)
        }
        #expect(count == 192)
        #expect(decoded == (0..<3).flatMap { Self.samples($0, 64).map(Int32.init) })
    }

    @Test("the reader walks frames past a false sync code (a valid-looking header inside audio data)")
    func falseSyncInData() throws {
        var frames = (0..<4).map { Self.frame(number: UInt64($0), samples: Self.samples($0, 64)) }
        // Frame 1's audio holds the header frame 2 will have (CRC-8 valid, the right number).
        var data = Self.samples(1, 64)
        let fake = Self.header(variable: false, blockCode: 6, rateCode: 0, number: 2, extra: [63]) + [0x02]
        for pair in 0..<(fake.count / 2) {
            data[10 + pair] = Int16(bitPattern: UInt16(fake[2 * pair]) << 8 | UInt16(fake[2 * pair + 1]))
        }
        frames[1] = Self.frame(number: 1, samples: data)
        let directory = try TemporaryDirectory()
        let path = directory.file("false-sync.flac")
        try Data(Self.stream(block: 64, total: 256, frames: frames)).write(to: URL(fileURLWithPath: path))
        #expect(try runTool("flac", ["-t", "-s", path]).status == 0)
        let reader = try FLACFrameReader(path: path)
        var found: [(Int, Int)] = []
        while let frame = try reader.next() { found.append((frame.sampleNumber, frame.bytes.count)) }
        #expect(found.map(\.0) == [0, 64, 128, 192])
        #expect(found.map(\.1) == frames.map(\.count))
        // Positioned mid-stream: the frame holding sample 150 is the third.
        try reader.position(at: 150)
        #expect(try reader.next()?.sampleNumber == 128)
    }

    @Test("a corrupted frame is refused (.corrupt) after the good ones before it")
    func corruptedFrame() throws {
        var frames = (0..<4).map { Self.frame(number: UInt64($0), samples: Self.samples($0, 64)) }
        frames[2][40] ^= 0x10
        let directory = try TemporaryDirectory()
        let path = directory.file("corrupt.flac")
        try Data(Self.stream(block: 64, total: 256, frames: frames)).write(to: URL(fileURLWithPath: path))
        let reader = try FLACFrameReader(path: path)
        #expect(try reader.next()?.sampleNumber == 0)
        #expect(try reader.next()?.sampleNumber == 64)
        var failure: MediaError?
        do throws(MediaError) { _ = try reader.next() } catch { failure = error }
        let error = try #require(failure, "the damaged frame was handed out")
        #expect(error.kind == .corrupt && error.message.contains("CRC-16"), "\(error)")
    }

    @Test("a frame numbered out of turn stops the walk (whole frames one after another also check to CRC-16 0)")
    func outOfTurnNumber() throws {
        let frames = [0, 1, 3, 4].map { Self.frame(number: UInt64($0), samples: Self.samples($0, 64)) }
        let directory = try TemporaryDirectory()
        let path = directory.file("skipped.flac")
        try Data(Self.stream(block: 64, total: 256, frames: frames)).write(to: URL(fileURLWithPath: path))
        let reader = try FLACFrameReader(path: path)
        #expect(try reader.next()?.sampleNumber == 0)
        var failure: MediaError?
        do throws(MediaError) { _ = try reader.next() } catch { failure = error }
        let error = try #require(failure, "frames 1, 3 and 4 were handed out as one")
        #expect(error.kind == .corrupt && error.message.contains("not 128"), "\(error)")
    }

    @Test("libFLAC's own frames: the reader finds them all, each checks, through the seek table")
    func libFLACFrames() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("encoded.flac")
        let frames = 100_000
        let encoder = try FLACEncoder(
            path: path,
            settings: FLACEncoder.Settings(
                sampleRate: 48_000, channels: 2, bitsPerSample: 24, compressionLevel: 5,
                expectedTotalSamples: frames, seekPointInterval: 10_000))
        let signal = knownSignal(frames: frames, channels: 2, bits: 24)
        try encoder.encode(signal)
        try encoder.finish()
        let reader = try FLACFrameReader(path: path)
        #expect(reader.layout.seekPoints.count >= 9)
        var next = 0
        while let frame = try reader.next() {
            #expect(frame.sampleNumber == next)
            #expect(FLACCRC.crc16(frame.bytes) == 0)
            next += frame.blockSize
        }
        #expect(next == frames)
        try reader.position(at: 87_654)
        let frame = try #require(try reader.next())
        #expect(frame.sampleNumber <= 87_654 && frame.sampleNumber + frame.blockSize > 87_654)
    }
}

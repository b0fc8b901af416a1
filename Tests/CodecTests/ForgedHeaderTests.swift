// Files handed in whose headers lie: chunk sizes past the end of the file or past 4 GiB, no
// channels, absurd rates, a header or the audio cut short. Each gives a MediaError that says
// what is wrong, or a reader that stops at the file's real end; none traps, none makes recd
// allocate what the header claims.

import AudioTestSupport
import Foundation
import Testing

@testable import Codec

@Suite("Forged audio headers")
struct ForgedHeaderTests {
    /// A RIFF/WAVE file: `fmt ` of PCM with the given fields, then `data` announcing
    /// `dataSize` bytes and holding `data`; `riffSize` nil: the true size.
    static func wav(
        channels: UInt16 = 1, rate: UInt32 = 48_000, bits: UInt16 = 16, format: UInt16 = 1, fmtSize: UInt32 = 16,
        riffSize: UInt32? = nil, extraChunk: (id: String, size: UInt32, body: [UInt8])? = nil,
        dataSize: UInt32? = nil, data: [UInt8] = Array(repeating: 0x11, count: 200)
    ) -> [UInt8] {
        func le32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
        func le16(_ value: UInt16) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
        let blockAlign = channels &* ((bits + 7) / 8)
        var body = Array("WAVE".utf8)
        body += Array("fmt ".utf8) + le32(fmtSize) + le16(format) + le16(channels) + le32(rate)
        body += le32(rate &* UInt32(blockAlign)) + le16(blockAlign) + le16(bits)
        if let extraChunk { body += Array(extraChunk.id.utf8) + le32(extraChunk.size) + extraChunk.body }
        body += Array("data".utf8) + le32(dataSize ?? UInt32(data.count)) + data
        return Array("RIFF".utf8) + le32(riffSize ?? UInt32(body.count)) + body
    }

    static func open(_ bytes: [UInt8], in directory: TemporaryDirectory, _ name: String = "forged.wav") throws
        -> Result<AudioFileReader, MediaError>
    {
        let path = directory.file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return Result { () throws(MediaError) in try AudioFileReader(path: path) }
    }

    @Test(
        "a data chunk that announces 4 GiB holding 200 bytes reads those 200 bytes and ends; so does a RIFF size of 4 GiB"
    )
    func hugeChunkSizes() throws {
        let directory = try TemporaryDirectory()
        for (name, bytes) in [
            ("data", Self.wav(dataSize: 0xFFFF_FFF0)), ("riff", Self.wav(riffSize: 0xFFFF_FFFF)),
            ("both", Self.wav(riffSize: 0xFFFF_FFFF, dataSize: 0xFFFF_FFFF)),
        ] {
            let reader = try Self.open(bytes, in: directory, "\(name).wav").get()
            // The header's count is the file's: no reader believes 2 G frames of 200 bytes.
            #expect((reader.totalFrames ?? 0) <= 100, "\(name): \(String(describing: reader.totalFrames))")
            let samples = try reader.readAll()
            #expect(samples.count == 100, "\(name): \(samples.count) samples")
        }
    }

    @Test("a chunk before the data that announces more bytes than the file has is refused, or skipped to the end")
    func hugeChunkBeforeData() throws {
        let directory = try TemporaryDirectory()
        let bytes = Self.wav(extraChunk: ("LIST", 0xFFFF_FFF0, Array("INFO".utf8)))
        switch try Self.open(bytes, in: directory) {
        case .success(let reader): #expect(try reader.readAll().count <= 100)
        case .failure(let error): #expect(!error.message.isEmpty && error.kind != .io, "\(error)")
        }
    }

    @Test(
        "no channels, 65535 channels, a rate of 0 or of 4 GHz, a fmt chunk of 4 GiB: a clear MediaError, never a reader",
        arguments: [
            ("0 channels", ForgedHeaderTests.wav(channels: 0)),
            ("65535 channels", ForgedHeaderTests.wav(channels: 65535)),
            ("0 Hz", ForgedHeaderTests.wav(rate: 0)), ("4 GHz", ForgedHeaderTests.wav(rate: 0xFFFF_FFFF)),
            ("fmt of 4 GiB", ForgedHeaderTests.wav(fmtSize: 0xFFFF_FFF0)),
            ("0 bits", ForgedHeaderTests.wav(bits: 0)),
            ("an unknown format tag", ForgedHeaderTests.wav(format: 0x7777)),
        ])
    func impossibleFormats(name: String, bytes: [UInt8]) throws {
        let directory = try TemporaryDirectory()
        let result = try Self.open(bytes, in: directory)
        guard case .failure(let error) = result else {
            Issue.record("\(name): opened as \(String(describing: try? result.get().channels)) channels")
            return
        }
        #expect([.corrupt, .unsupportedFormat].contains(error.kind), "\(name): \(error)")
        #expect(error.message.contains("re-create it") || error.message.contains("convert it"), "\(name): \(error)")
    }

    @Test("a WAV cut inside its header is refused; one cut inside its data reads what is there")
    func truncated() throws {
        let directory = try TemporaryDirectory()
        let whole = Self.wav()
        for length in [4, 11, 12, 20, 30, 40] {
            let result = try Self.open(Array(whole.prefix(length)), in: directory, "cut-\(length).wav")
            guard case .failure(let error) = result else {
                Issue.record("\(length) bytes opened")
                continue
            }
            #expect(!error.message.isEmpty)
        }
        // Cut inside the data chunk's size: no audio, whichever way libsndfile takes it.
        if case .success(let reader) = try Self.open(Array(whole.prefix(43)), in: directory, "cut-43.wav") {
            #expect(try reader.readAll().isEmpty)
        }
        let reader = try Self.open(Array(whole.prefix(whole.count - 51)), in: directory, "short.wav").get()
        #expect(try reader.readAll().count == 74, "149 of 200 data bytes: 74 whole samples")
    }

    @Test(
        "a FLAC whose STREAMINFO says 0 Hz is unsupportedFormat; one that announces 2^36 frames and holds a few fails at their end"
    )
    func forgedFLAC() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("good.flac")
        let writer = try FLACWriter(path: path, sampleRate: 48_000, channels: 1, bitsPerSample: 16)
        try writer.write(floats(knownSignal(frames: 4800, channels: 1, bits: 16), bits: 16))
        try writer.finish()
        let good = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        // STREAMINFO's body starts at byte 8: the rate is its bits 80..<100.
        var zeroRate = good
        zeroRate[18] = 0
        zeroRate[19] = 0
        zeroRate[20] &= 0x0F
        guard case .failure(let error) = try Self.open(zeroRate, in: directory, "zero-rate.flac") else {
            Issue.record("a 0 Hz FLAC opened")
            return
        }
        #expect(error.kind == .unsupportedFormat || error.kind == .corrupt, "\(error)")

        // Total samples (bits 108..<144) all ones: 2^36 - 1 frames announced.
        var endless = good
        endless[21] |= 0x0F
        for index in 22..<26 { endless[index] = 0xFF }
        let reader = try Self.open(endless, in: directory, "endless.flac").get()
        #expect(reader.totalFrames == (1 << 36) - 1)
        let failure = mediaError { try reader.readAll() }
        #expect(
            failure?.kind == .corrupt && failure?.message.contains("cut short") == true,
            "\(String(describing: failure))")
    }

    @Test(
        "seek points past the file or past Int64 are passed over: clip export's frame walker finds the frame by walking"
    )
    func forgedSeekPoints() throws {
        let directory = try TemporaryDirectory()
        let source = directory.file("tone.wav")
        let flac = directory.file("tone.flac")
        try writeWAV(
            source, sampleRate: 48_000, channels: 1, bits: 16, samples: knownSignal(frames: 4800, channels: 1, bits: 16)
        )
        let made = try runTool(
            "flac", ["-s", "-f", "--no-padding", "--blocksize=192", "-S", "20x", "-o", flac, source])
        try #require(made.status == 0, "flac: \(made.output)")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: flac)))
        // Walk the metadata blocks to the SEEKTABLE (type 3); its points are 18 bytes each.
        var offset = 4
        var table: Range<Int>?
        while offset + 4 <= bytes.count {
            let length = Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            if bytes[offset] & 0x7F == 3 { table = (offset + 4)..<(offset + 4 + length) }
            if bytes[offset] & 0x80 != 0 { break }
            offset += 4 + length
        }
        let points = try #require(table, "no SEEKTABLE")
        #expect(points.count / 18 >= 20)
        for (number, start) in stride(from: points.lowerBound, to: points.upperBound, by: 18).enumerated() {
            let forged: UInt64 = number % 2 == 0 ? 0xFFFF_FFFF_FFFF_FF00 : UInt64(bytes.count + 1000)
            for index in 0..<8 {
                bytes[start + 8 + index] = UInt8(truncatingIfNeeded: forged >> (56 - 8 * UInt64(index)))
            }
        }
        let forged = directory.file("forged.flac")
        try Data(bytes).write(to: URL(fileURLWithPath: forged))
        let reader = try FLACFrameReader(path: forged)
        #expect(reader.layout.seekPoints.count == points.count / 18)
        try reader.position(at: 1000)
        let frame = try #require(try reader.next())
        #expect(
            frame.sampleNumber <= 1000 && frame.sampleNumber + frame.blockSize > 1000, "frame at \(frame.sampleNumber)")
    }
}

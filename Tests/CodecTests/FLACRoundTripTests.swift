// FLACWriter / FLACEncoder → file → the reference `flac` tool and AudioFileReader, compared
// as integers.

import AudioTestSupport
import Foundation
import Testing

@testable import Codec

@Suite("FLAC writing and reading")
struct FLACRoundTripTests {
    static let layouts: [(bits: Int, channels: Int)] = [
        (16, 1), (16, 2), (16, 8), (24, 1), (24, 2), (24, 8),
    ]

    @Test(
        "a known signal survives FLACWriter → flac -t → AudioFileReader and flac -d, sample-exact",
        arguments: layouts)
    func roundTrip(bits: Int, channels: Int) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("known-\(bits)-\(channels).flac")
        let frames = 10_000  // not a multiple of the block size: the last block is partial
        let original = knownSignal(frames: frames, channels: channels, bits: bits)

        let writer = try FLACWriter(
            path: path, sampleRate: 48_000, channels: channels, bitsPerSample: bits,
            compressionLevel: 5)
        // In uneven pieces, to cross block boundaries.
        let input = floats(original, bits: bits)
        var offset = 0
        for piece in [1, 999, 4096, 3000] {
            try writer.write(Array(input[(offset * channels)..<((offset + piece) * channels)]))
            offset += piece
        }
        try writer.write(Array(input[(offset * channels)...]))
        #expect(writer.framesWritten == frames)
        try writer.finish()

        let test = try runTool("flac", ["-t", "-s", path])
        #expect(test.status == 0, "flac -t failed: \(test.output)")

        let reader = try AudioFileReader(path: path)
        #expect(reader.format == .flac)
        #expect(reader.sampleRate == 48_000)
        #expect(reader.channels == channels)
        #expect(reader.bitsPerSample == bits)
        #expect(reader.totalFrames == frames)
        let decoded = try reader.readAll()
        #expect(mismatch(decoded, original, bits: bits) == nil)
        #expect(decoded.allSatisfy { $0 >= -1 && $0 < 1 })

        let wav = directory.file("by-flac-d.wav")
        let decode = try runTool("flac", ["-d", "-s", "-o", wav, path])
        #expect(decode.status == 0, "flac -d failed: \(decode.output)")
        let reference = try AudioFileReader(path: wav)
        #expect(reference.format == .wav)
        #expect(reference.channels == channels && reference.bitsPerSample == bits)
        #expect(try mismatch(reference.readAll(), original, bits: bits) == nil)

        let info = try FLACInspector.streamInfo(path: path)
        #expect(info.totalSamples == frames)
        #expect(info.sampleRate == 48_000 && info.channels == channels)
        #expect(info.bitsPerSample == bits)
        #expect(info.md5.count == 16 && info.hasMD5)
    }

    @Test("out-of-range floats are clamped to full scale, never passed to libFLAC")
    func clamping() throws {
        let directory = try TemporaryDirectory()
        for bits in [16, 24] {
            let path = directory.file("clamp-\(bits).flac")
            let writer = try FLACWriter(
                path: path, sampleRate: 44_100, channels: 1, bitsPerSample: bits)
            try writer.write([1.5, -3.0, 1.0, -1.0, .infinity, -.infinity, .nan, 0.5])
            try writer.finish()
            #expect(try runTool("flac", ["-t", "-s", path]).status == 0)
            let highest = Int32((1 << (bits - 1)) - 1)
            let decoded = try #require(
                integers(try AudioFileReader(path: path).readAll(), bits: bits))
            #expect(
                decoded == [
                    highest, -highest - 1, highest, -highest - 1, highest, -highest - 1, 0,
                    (highest + 1) / 2,
                ])
        }
        #expect(SampleQuantizer(bitsPerSample: 16).quantize(1 - 1 / 65_536) == 32_767)
        #expect(SampleQuantizer(bitsPerSample: 24).quantize(-1.0000001) == -8_388_608)
    }

    @Test("Vorbis comments round-trip through FLACInspector, in order, with '=' in values")
    func vorbisComments() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("tags.flac")
        let comments = [
            ("RECD_APP", "deck-a"), ("TITLE", "Ünïcödé = fine"), ("RECD_SEGMENT", "3"),
            ("RECD_END_REASON", "rotation"),
        ]
        let writer = try FLACWriter(
            path: path, sampleRate: 48_000, channels: 2, bitsPerSample: 24,
            vorbisComments: comments)
        try writer.write(sine(frequency: 1000, sampleRate: 48_000, frames: 4800, channels: 2))
        try writer.finish()

        let read = try FLACInspector.vorbisComments(path: path)
        #expect(read.map(\.0) == comments.map(\.0))
        #expect(read.map(\.1) == comments.map(\.1))
        let vendor = try FLACInspector.vendor(path: path)
        #expect(vendor?.contains("libFLAC") == true)
        let metaflac = try runTool("metaflac", ["--show-tag=TITLE", path])
        #expect(
            metaflac.output.trimmingCharacters(in: .whitespacesAndNewlines)
                == "TITLE=Ünïcödé = fine")
    }

    @Test("a bad Vorbis comment name is refused before a file is started")
    func badCommentName() throws {
        let directory = try TemporaryDirectory()
        for comment in [("A=B", "x"), ("", "x"), ("TAB\tNAME", "x")] {
            let path = directory.file("bad.flac")
            let error = mediaError {
                try FLACWriter(
                    path: path, sampleRate: 48_000, channels: 1, bitsPerSample: 16,
                    vorbisComments: [comment])
            }
            #expect(error?.kind == .invalidArgument, "\(comment)")
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test("an existing file is never overwritten")
    func neverOverwrites() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("exists.flac")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: path))
        let error = mediaError {
            try FLACWriter(path: path, sampleRate: 48_000, channels: 1, bitsPerSample: 16)
        }
        #expect(error?.kind == .alreadyExists)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep me")
    }

    @Test(
        "settings outside FLAC's range are refused",
        arguments: [
            (48_000, 9, 16, 5), (48_000, 0, 16, 5), (48_000, 2, 20, 5), (48_000, 2, 16, 9),
            (0, 2, 16, 5),
        ])
    func invalidSettings(rate: Int, channels: Int, bits: Int, level: Int) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("invalid.flac")
        let error = mediaError {
            try FLACWriter(
                path: path, sampleRate: rate, channels: channels, bitsPerSample: bits,
                compressionLevel: level)
        }
        #expect(error?.kind == .invalidArgument)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test(
        "FLACEncoder writes 8- and 32-bit streams that the reader scales by 2^(bits-1)",
        arguments: [8, 32])
    func otherWidths(bits: Int) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("width-\(bits).flac")
        let original = knownSignal(frames: 5000, channels: 2, bits: bits)
        let encoder = try FLACEncoder(
            path: path,
            settings: .init(sampleRate: 44_100, channels: 2, bitsPerSample: bits, verify: true))
        try encoder.encode(original)
        try encoder.finish()
        #expect(try runTool("flac", ["-t", "-s", path]).status == 0)

        let reader = try AudioFileReader(path: path)
        #expect(reader.bitsPerSample == bits)
        let decoded = try reader.readAll()
        let scale = Double(sign: .plus, exponent: bits - 1, significand: 1)
        // 32-bit integers do not all fit in a Float: compare within Float's precision.
        for (index, sample) in decoded.enumerated() {
            let expected = Double(original[index]) / scale
            #expect(abs(Double(sample) - expected) <= 1e-7, "sample \(index)")
            if abs(Double(sample) - expected) > 1e-7 { break }
        }
        #expect(decoded.count == original.count)
    }

    @Test("a stream sink without seek gets a valid stream; a seekable file gets a seek table")
    func streamSinkAndSeekTable() throws {
        let directory = try TemporaryDirectory()
        let signal = knownSignal(frames: 96_000, channels: 1, bits: 16)

        final class MemorySink: FLACStreamSink {
            var bytes: [UInt8] = []
            func write(_ buffer: UnsafeRawBufferPointer) -> Bool {
                bytes.append(contentsOf: buffer)
                return true
            }
        }
        let sink = MemorySink()
        let streamed = try FLACEncoder(
            sink: sink, settings: .init(sampleRate: 48_000, channels: 1, bitsPerSample: 16))
        try streamed.encode(signal)
        try streamed.finish()
        #expect(Array(sink.bytes.prefix(4)) == Array("fLaC".utf8))
        let streamedPath = directory.file("streamed.flac")
        try Data(sink.bytes).write(to: URL(fileURLWithPath: streamedPath))
        #expect(try runTool("flac", ["-t", "-s", streamedPath]).status == 0)
        let reader = try AudioFileReader(path: streamedPath)
        #expect(reader.totalFrames == nil, "nobody could go back and write the length")
        #expect(try mismatch(reader.readAll(), signal, bits: 16) == nil)

        let seekablePath = directory.file("seekable.flac")
        let seekable = try FLACEncoder(
            path: seekablePath,
            settings: .init(
                sampleRate: 48_000, channels: 1, bitsPerSample: 16, expectedTotalSamples: 96_000,
                seekPointInterval: 24_000, paddingBytes: 1024))
        try seekable.encode(signal)
        try seekable.finish()
        #expect(try runTool("flac", ["-t", "-s", seekablePath]).status == 0)
        let points = try FLACInspector.seekPoints(path: seekablePath).filter { !$0.isPlaceholder }
        // libFLAC moves each requested point to the start of the frame that holds it.
        let targets: [UInt64] = [0, 24_000, 48_000, 72_000]
        try #require(points.count >= targets.count, "\(points)")
        for (point, target) in zip(points, targets) {
            #expect(
                point.sampleNumber <= target
                    && target < point.sampleNumber + UInt64(point.frameSamples),
                "point \(point) for sample \(target)")
        }
        #expect(zip(points, points.dropFirst()).allSatisfy { $0.streamOffset < $1.streamOffset })
        #expect(try FLACInspector.streamInfo(path: seekablePath).totalSamples == 96_000)
    }
}

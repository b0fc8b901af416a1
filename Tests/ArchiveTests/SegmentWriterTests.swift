// The segment writer on its own: clamping, never overwriting, the seek table and comments.

import Foundation
import Platform
import Testing

@testable import Archive

@Suite("SegmentWriter")
struct SegmentWriterTests {
    @Test(
        "out-of-range, infinite and NaN samples are clamped: a valid file with full-scale samples", arguments: [16, 24])
    func clamping(bits: Int) throws {
        let directory = TemporaryDirectory("clamp")
        let writer = try SegmentWriter(
            path: directory.path + "/clamp.flac",
            format: SegmentFormat(sampleRate: 8000, channels: 1, bitsPerSample: bits), comments: [])
        let input: [Float] = [2.0, -2.0, 1.0, -1.0, .nan, .infinity, -.infinity, 0.5, 1e9, -1e9]
        var samples: [Float] = []
        for _ in 0..<500 { samples += input }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        let finished = try writer.finish(reason: .stop)
        #expect(try flacTestPasses(finished.path))
        let top = Int32(1) << Int32(bits - 1)
        let expected: [Int32] = [top - 1, -top, top - 1, -top, 0, top - 1, -top, top / 2, top - 1, -top]
        let decoded = try decodeWithFlacCLI(finished.path, bits: bits)
        #expect(decoded.count == samples.count)
        #expect(Array(decoded.prefix(input.count)) == expected)
        #expect(Array(decoded.suffix(input.count)) == expected)
    }

    @Test("a final name that appears while writing is not replaced: the segment takes -1")
    func finalNameTakenMeanwhile() throws {
        let directory = TemporaryDirectory("taken")
        let path = directory.path + "/x/seg.flac"
        let writer = try SegmentWriter(
            path: path, format: SegmentFormat(sampleRate: 8000, channels: 2, bitsPerSample: 16), comments: [])
        #expect(writer.partialPath == path + ".partial")
        #expect(FileManager.default.fileExists(atPath: path + ".partial"))
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: path))
        let samples = (0..<16000).map { counterSample($0 / 2, $0 % 2) }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        let finished = try writer.finish(reason: .stop)
        #expect(finished.path == directory.path + "/x/seg-1.flac")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "someone else's")
        #expect(!FileManager.default.fileExists(atPath: path + ".partial"))
        #expect(try flacTestPasses(finished.path))
        #expect(throws: ArchiveError.self) { try writer.finish(reason: .stop) }
    }

    @Test("the seek table has real points for the audio written and placeholders for the rest")
    func seekTable() throws {
        let directory = TemporaryDirectory("seek")
        let writer = try SegmentWriter(
            path: directory.path + "/seek.flac",
            format: SegmentFormat(sampleRate: 8000, channels: 1, bitsPerSample: 16),
            comments: [VorbisComment("APP", "seek")], expectedFrames: 8000 * 60)
        let samples = (0..<(8000 * 25)).map { counterSample($0, 0) }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        let finished = try writer.finish(reason: .stop)
        let listing = try run(["metaflac", "--list", "--block-type=SEEKTABLE", finished.path]).text
        // A point every 10 s lands on the frame holding that sample (4096-frame blocks).
        let points = listing.split(separator: "\n").filter { $0.contains("sample_number=") }
            .map { $0.split(separator: "sample_number=")[1].prefix { $0 != "," } }
        #expect(points == ["0", "77824", "159744"])
        #expect(listing.components(separatedBy: "PLACEHOLDER").count - 1 == 3)
        #expect(try flacTestPasses(finished.path))
        // Seeking with the table works in the reference decoder.
        let tail = try run([
            "flac", "-d", "-s", "-c", "--force-raw-format", "--endian=little", "--sign=signed", "--skip=170000",
            finished.path,
        ])
        #expect(
            mismatch(pcmIntegers(tail.output, bits: 16), (170_000..<200_000).map { counterInteger($0, 0, bits: 16) })
                == nil)
    }

    @Test("many gaps: those that fit are written, GAPS_TRUNCATED gives the total")
    func manyGaps() throws {
        let directory = TemporaryDirectory("manygaps")
        let writer = try SegmentWriter(
            path: directory.path + "/gaps.flac",
            format: SegmentFormat(sampleRate: 8000, channels: 1, bitsPerSample: 16),
            comments: [])
        let one = [Float](repeating: 0.25, count: 1)
        for _ in 0..<2000 {
            try one.withUnsafeBufferPointer { try writer.write($0) }
            writer.markGap(length: 100_000)
        }
        let finished = try writer.finish(reason: .stop)
        #expect(finished.gaps.count == 2000)
        let tags = try metaflacTags(finished.path)
        #expect(tags["GAPS_TRUNCATED"] == "2000")
        let written = SegmentGap.parse(commentValue: tags["GAPS"] ?? "") ?? []
        #expect(written.count > 100 && written.count < 2000)
        #expect(written == Array(finished.gaps.prefix(written.count)))
        #expect(try flacTestPasses(finished.path))
    }

    @Test("bad formats are refused with a message that says what is allowed")
    func badFormats() {
        let directory = TemporaryDirectory("badformat")
        for format in [
            SegmentFormat(sampleRate: 8000, channels: 9, bitsPerSample: 16),
            SegmentFormat(sampleRate: 8000, channels: 1, bitsPerSample: 33),
            SegmentFormat(sampleRate: 0, channels: 1, bitsPerSample: 16),
            SegmentFormat(sampleRate: 8000, channels: 1, bitsPerSample: 16, compressionLevel: 9),
        ] {
            #expect(throws: ArchiveError.self) {
                _ = try SegmentWriter(path: directory.path + "/bad.flac", format: format, comments: [])
            }
        }
        #expect(FileSystem.files(under: directory.path, withSuffix: "").isEmpty)
    }

    @Test("planar writes (a run per channel, as a tap's ring lends them) equal interleaved ones", arguments: [16, 24])
    func planarWritesMatchInterleaved(bits: Int) throws {
        let directory = TemporaryDirectory("planar")
        // 19 channels: files of 8, 8 and 3; two blocks and an odd rest, so blocks end mid-way
        // (at 8 kHz: over a second, so the loudness meter has a reading).
        let stride = 19
        let groups: [(first: Int, count: Int)] = [(0, 8), (8, 8), (16, 3)]
        let frames = 2 * 4096 + 37
        var generator = SystemRandomNumberGenerator()
        // Finite: NaN or inf would leave the loudness meters without a reading to compare.
        let specials: [Float] = [2, -2, 1, -1, 0.5 / 8_388_608, -1.5 / 32768, 0]
        let samples = (0..<(frames * stride)).map { index in
            index % 97 == 0 ? specials[index % specials.count] : Float.random(in: -1.1...1.1, using: &generator)
        }
        func writers(_ name: String) throws -> [SegmentWriter] {
            try groups.enumerated().map { index, group in
                try SegmentWriter(
                    path: "\(directory.path)/\(name)-\(index).flac",
                    format: SegmentFormat(sampleRate: 8000, channels: group.count, bitsPerSample: bits), comments: [])
            }
        }
        let interleaved = try writers("interleaved")
        let planar = try writers("planar")
        // The same samples channel by channel, each channel one run.
        let runs = UnsafeMutablePointer<Float>.allocate(capacity: frames * stride)
        defer { runs.deallocate() }
        for channel in 0..<stride {
            for frame in 0..<frames { runs[channel * frames + frame] = samples[frame * stride + channel] }
        }
        let starts = UnsafeMutablePointer<UnsafePointer<Float>>.allocate(capacity: stride)
        defer { starts.deallocate() }
        try samples.withUnsafeBufferPointer { buffer throws(ArchiveError) in
            // In two calls, as the archiver's reads come.
            for (start, count) in [(0, 5000), (5000, frames - 5000)] {
                let base = buffer.baseAddress! + start * stride
                for (writer, group) in zip(interleaved, groups) {
                    try writer.write(interleaved: base, frames: count, stride: stride, firstChannel: group.first)
                }
                for channel in 0..<stride {
                    starts[channel] = UnsafePointer(runs + channel * frames + start)
                }
                for (writer, group) in zip(planar, groups) {
                    try writer.write(planar: starts + group.first, frames: count)
                }
            }
        }
        for (one, other) in zip(interleaved, planar) {
            #expect(one.momentaryLUFS == other.momentaryLUFS && one.shortTermLUFS == other.shortTermLUFS)
            #expect(one.momentaryLUFS != nil)
            let first = try decodeWithFlacCLI(try one.finish(reason: .stop).path, bits: bits)
            let second = try decodeWithFlacCLI(try other.finish(reason: .stop).path, bits: bits)
            #expect(first.count == frames * one.format.channels)
            #expect(first == second)
        }
    }
}

// Clip export by copying FLAC frames: from/to in the middle of frames at both ends, across a
// rotation; a segment of another width decoded instead; a damaged segment refused. Segments
// written by the one encoder as the archiver lays them out; clips checked by the `flac` tool.
import Foundation
import Platform
import Testing

@testable import Archive
@testable import Codec

@Suite("clip export by copying frames")
struct ClipFrameCopyTests {
    static let t0 = UTCTime(secondsSinceEpoch: 1_795_000_000)

    /// A segment of the counter signal (stereo, timeline frames `first..<first+frames`), laid out
    /// as the archiver's (seek table every 10 s, level 5: blocks of 4096).
    static func segment(
        _ directory: TemporaryDirectory, _ name: String, first: Int, frames: Int, bits: Int = 24
    ) throws -> SegmentRecord {
        let path = directory.path + "/\(name).flac"
        let encoder = try FLACEncoder(
            path: path,
            settings: FLACEncoder.Settings(
                sampleRate: 48_000, channels: 2, bitsPerSample: bits, compressionLevel: 5,
                expectedTotalSamples: frames, seekPointInterval: 48_000, paddingBytes: 4096, streamableSubset: true,
                layout: .editableInPlace))
        try encoder.encode(
            (first..<(first + frames)).flatMap { n in (0..<2).map { counterInteger(n, $0, bits: bits) } })
        try encoder.finish()
        return SegmentRecord(
            path: path, app: "a", stream: "s", group: 0, segment: 1,
            startTime: t0.advanced(byFrames: first, sampleRate: 48_000), frames: frames, sampleRate: 48_000,
            channels: 2, bitsPerSample: bits, endReason: nil, gaps: [], recovered: false, bytes: 0)
    }

    static func export(_ plan: ClipPlan, to path: String) throws -> ClipCopyStatistics {
        let file = try OwnedFile(path, .createExclusive(permissions: 0o644))
        return try ClipExporter.writeByCopyingFrames(
            plan, sink: FLACFileSink(file: file), seekable: true, name: path,
            comments: [("APP", "a")], compressionLevel: 1, isCancelled: { false })
    }

    static func expected(from: Int, frames: Int) -> [Int32] {
        (from..<(from + frames)).flatMap { n in (0..<2).map { counterInteger(n, $0, bits: 24) } }
    }

    @Test("from and to mid-frame at both ends, across a rotation: sample-exact, flac -t, interior frames copied")
    func midFrameBothEnds() throws {
        let directory = TemporaryDirectory("copy")
        let a = try Self.segment(directory, "a", first: 0, frames: 100_000)
        let b = try Self.segment(directory, "b", first: 100_000, frames: 60_000)
        let from = 5_123  // inside a's second frame (4096...8191)
        let frames = 100_000 + 30_001 - from  // to: inside b's eighth frame
        let plan = try ClipPlan.plan(
            records: [a, b], from: Self.t0.advanced(byFrames: from, sampleRate: 48_000),
            to: Self.t0.advanced(byFrames: from + frames, sampleRate: 48_000))
        #expect(plan.frames == frames)
        let path = directory.path + "/clip.flac"
        let statistics = try Self.export(plan, to: path)
        #expect(try flacTestPasses(path))
        #expect(try decodeWithFlacCLI(path, bits: 24) == Self.expected(from: from, frames: frames))
        let info = try FLACInspector.streamInfo(path: path)
        #expect(info.totalSamples == frames)
        #expect(info.minBlockSize >= 16 && info.maxBlockSize == 4096, "\(info)")
        #expect(!info.hasMD5)
        // Copied: every whole frame inside; encoded: the partial frames at the two ends and at
        // a's last (short) frame and b's first.
        #expect(statistics.copiedFrames + statistics.encodedFrames == frames)
        #expect(statistics.encodedFrames < 4 * 4096, "\(statistics)")
        #expect(statistics.fallbacks.isEmpty, "\(statistics.fallbacks)")

        // The public path writes the same stream.
        let viaWrite = directory.path + "/via-write.flac"
        try ClipExporter.write(
            plan, format: .flac, to: OwnedFile(viaWrite, .createExclusive(permissions: 0o644)), name: viaWrite,
            comments: [("APP", "a")])
        #expect(try Data(contentsOf: URL(fileURLWithPath: viaWrite)) == Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test("a segment of another width (16 bits in a 24-bit clip) is decoded and widened, not copied")
    func formatMismatchDecodes() throws {
        let directory = TemporaryDirectory("copy-width")
        let a = try Self.segment(directory, "a", first: 0, frames: 50_000)
        let b = try Self.segment(directory, "b", first: 50_000, frames: 50_000, bits: 16)
        let plan = try ClipPlan.plan(
            records: [a, b], from: Self.t0.advanced(byFrames: 1000, sampleRate: 48_000),
            to: Self.t0.advanced(byFrames: 99_000, sampleRate: 48_000))
        let path = directory.path + "/clip.flac"
        let statistics = try Self.export(plan, to: path)
        #expect(try flacTestPasses(path))
        #expect(try decodeWithFlacCLI(path, bits: 24) == Self.expected(from: 1000, frames: 98_000))
        #expect(statistics.copiedFrames <= 49_000 && statistics.copiedFrames > 40_000, "\(statistics)")
        #expect(statistics.encodedFrames >= 49_000)
    }

    @Test("a damaged frame: the stretch falls back to decoding, which refuses the segment with its path")
    func damagedFrameRefused() throws {
        let directory = TemporaryDirectory("copy-damage")
        let a = try Self.segment(directory, "a", first: 0, frames: 50_000)
        let size = try #require(FileManager.default.attributesOfItem(atPath: a.path)[.size] as? Int)
        let handle = try #require(FileHandle(forUpdatingAtPath: a.path))
        handle.seek(toFileOffset: UInt64(size / 2))
        let byte = handle.readData(ofLength: 1)
        handle.seek(toFileOffset: UInt64(size / 2))
        handle.write(Data([byte[0] ^ 0x5A]))
        handle.closeFile()
        let plan = try ClipPlan.plan(
            records: [a], from: Self.t0, to: Self.t0.advanced(byFrames: 50_000, sampleRate: 48_000))
        var failure: MediaError?
        do throws(MediaError) {
            let file: OwnedFile
            do { file = try OwnedFile(directory.path + "/clip.flac", .createExclusive(permissions: 0o644)) } catch {
                Issue.record("\(error)")
                return
            }
            _ = try ClipExporter.writeByCopyingFrames(
                plan, sink: FLACFileSink(file: file), seekable: true, name: "clip.flac", comments: [],
                compressionLevel: 1, isCancelled: { false })
        } catch { failure = error }
        let error = try #require(failure, "a damaged segment exported without complaint")
        #expect(error.path == a.path && error.kind == .corrupt, "\(error)")
    }

    /// Edits a file's bytes in place: `edit` gets them all and the offset of each metadata
    /// block's body by type (the first of each).
    static func patch(_ path: String, _ edit: (inout [UInt8], [UInt8: Int]) -> Void) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var blocks: [UInt8: Int] = [:]
        var offset = 4
        while true {
            let type = bytes[offset] & 0x7F
            let length = Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            if blocks[type] == nil { blocks[type] = offset + 4 }
            if bytes[offset] & 0x80 != 0 { break }
            offset += 4 + length
        }
        edit(&bytes, blocks)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    @Test("a SEEKTABLE pointing beside its frames is not trusted: the frames are still found and copied")
    func lyingSeekTable() throws {
        let directory = TemporaryDirectory("copy-seektable")
        let a = try Self.segment(directory, "a", first: 0, frames: 300_000)
        try Self.patch(a.path) { bytes, blocks in
            // Every point's stream offset (bytes 8...15 of each 18-byte point) one byte further.
            let table = blocks[3]!
            for point in 1..<6 { bytes[table + point * 18 + 15] &+= 1 }
        }
        let from = 250_017
        let plan = try ClipPlan.plan(
            records: [a], from: Self.t0.advanced(byFrames: from, sampleRate: 48_000),
            to: Self.t0.advanced(byFrames: 290_000, sampleRate: 48_000))
        let path = directory.path + "/clip.flac"
        let statistics = try Self.export(plan, to: path)
        #expect(try decodeWithFlacCLI(path, bits: 24) == Self.expected(from: from, frames: 290_000 - from))
        #expect(statistics.copiedFrames > 30_000 && statistics.fallbacks.isEmpty, "\(statistics)")
    }

    @Test("frames that do not verify against STREAMINFO (a wrong maximum block size) are decoded instead")
    func unverifiableFramesDecode() throws {
        let directory = TemporaryDirectory("copy-streaminfo")
        let a = try Self.segment(directory, "a", first: 0, frames: 60_000)
        try Self.patch(a.path) { bytes, blocks in
            // STREAMINFO's maximum block size 4096 → 4095: frame numbers no longer give sample numbers.
            let info = blocks[0]!
            bytes[info + 2] = 0x0F
            bytes[info + 3] = 0xFF
        }
        let plan = try ClipPlan.plan(
            records: [a], from: Self.t0.advanced(byFrames: 100, sampleRate: 48_000),
            to: Self.t0.advanced(byFrames: 59_000, sampleRate: 48_000))
        let path = directory.path + "/clip.flac"
        let statistics = try Self.export(plan, to: path)
        #expect(try flacTestPasses(path))
        #expect(try decodeWithFlacCLI(path, bits: 24) == Self.expected(from: 100, frames: 58_900))
        #expect(statistics.copiedFrames == 0 && statistics.encodedFrames == 58_900, "\(statistics)")
        #expect(statistics.fallbacks.count == 1, "\(statistics)")
    }

    @Test("a snapshot of an open segment exports up to its last complete frame, also once it was finished and renamed")
    func openSegmentSnapshot() throws {
        let directory = TemporaryDirectory("open")
        let a = try Self.segment(directory, "a", first: 0, frames: 30_000)
        let start = Self.t0.advanced(byFrames: 30_000, sampleRate: 48_000)
        let writer = try SegmentWriter(
            path: directory.path + "/b.flac",
            format: SegmentFormat(sampleRate: 48_000, channels: 2, bitsPerSample: 24, measuresLoudness: false),
            comments: [VorbisComment("START_TIME", start.iso8601)], expectedFrames: 480_000)
        func write(_ range: Range<Int>) throws {
            let samples = range.flatMap { n in (0..<2).map { counterSample(n, $0) } }
            try samples.withUnsafeBufferPointer { try writer.write($0) }
        }
        try write(30_000..<130_000)
        // libFLAC still holds the block it collects: the file has whole frames only.
        let frames = writer.completeFrames
        #expect(frames > 0 && frames < 100_000 && frames % 4096 == 0, "\(frames)")
        let open = OpenSegment(
            record: SegmentRecord(
                path: writer.path, app: "a", stream: "s", group: 0, segment: 2, startTime: start, frames: frames,
                sampleRate: 48_000, channels: 2, bitsPerSample: 24, endReason: nil, gaps: [], recovered: false,
                bytes: writer.completeBytes),
            partialPath: writer.partialPath)
        var plan = try ClipPlan.plan(
            records: [a, open.record], from: Self.t0.advanced(byFrames: 10_000, sampleRate: 48_000),
            to: open.record.endTime)
        plan.openSegments = [open.record.path: open]
        let expected = Self.expected(from: 10_000, frames: 20_000 + frames)
        #expect(plan.frames == 20_000 + frames)
        let first = directory.path + "/while-open.flac"
        let statistics = try Self.export(plan, to: first)
        #expect(statistics.fallbacks.isEmpty, "\(statistics.fallbacks)")
        #expect(try flacTestPasses(first))
        #expect(try decodeWithFlacCLI(first, bits: 24) == expected)

        // More is written, the segment finished and renamed: the snapshot still reads the
        // same frames, from the final file, and nothing after them.
        try write(130_000..<200_000)
        _ = try writer.finish(reason: .rotation)
        #expect(!FileManager.default.fileExists(atPath: open.partialPath))
        let after = directory.path + "/after-rotation.flac"
        _ = try Self.export(plan, to: after)
        #expect(try decodeWithFlacCLI(after, bits: 24) == expected)
        let wav = directory.path + "/after-rotation.wav"
        try ClipExporter.write(
            plan, format: .wav, to: OwnedFile(wav, .createExclusive(permissions: 0o644)), name: wav, comments: [])
        let reencoded = directory.path + "/wav.flac"
        #expect(try run(["flac", "-s", "-o", reencoded, wav]).status == 0)
        #expect(try decodeWithFlacCLI(reencoded, bits: 24) == expected)
        // Without the snapshot's limit the whole finished file would be read: the limit is what holds.
        #expect(try ReadOnlyFile(path: writer.path, limit: open.record.bytes).size() == open.record.bytes)
    }
}

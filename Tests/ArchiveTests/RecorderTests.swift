// Recording into segments: rotation aligned to the wall clock, gapless concatenation, file
// names and folders, comments, STREAMINFO, channel groups, gaps, transforms, never overwriting.
// Every file is checked with the `flac` CLI as the reference decoder.

import Foundation
import Platform
import TestSupport
import Testing

@testable import Archive

struct RotationCase: Sendable, CustomTestStringConvertible {
    var sampleRate: Int
    var bits: Int
    var channels: Int
    var start: String
    var totalFrames: Int
    var segmentFrames: [Int]
    /// Final paths relative to the archive root.
    var names: [String]
    var startTimes: [String]

    var testDescription: String { "\(sampleRate) Hz, \(bits) bit, \(channels) ch" }
}

@Suite("Recorder")
struct RecorderTests {
    static let rotationCases = [
        RotationCase(
            sampleRate: 8000, bits: 16, channels: 2, start: "2026-11-29T23:59:58.300000Z", totalFrames: 28000,
            segmentFrames: [5600, 8000, 8000, 6400],
            names: [
                "2026/11/29/app-main-20261129T235958.300Z.flac", "2026/11/29/app-main-20261129T235959.000Z.flac",
                "2026/11/30/app-main-20261130T000000.000Z.flac", "2026/11/30/app-main-20261130T000001.000Z.flac",
            ],
            startTimes: [
                "2026-11-29T23:59:58.300000Z", "2026-11-29T23:59:59.000000Z", "2026-11-30T00:00:00.000000Z",
                "2026-11-30T00:00:01.000000Z",
            ]),
        RotationCase(
            sampleRate: 48000, bits: 24, channels: 1, start: "2026-03-01T12:00:00.300000Z", totalFrames: 153_600,
            segmentFrames: [33600, 48000, 48000, 24000],
            names: [
                "2026/03/01/app-main-20260301T120000.300Z.flac", "2026/03/01/app-main-20260301T120001.000Z.flac",
                "2026/03/01/app-main-20260301T120002.000Z.flac", "2026/03/01/app-main-20260301T120003.000Z.flac",
            ],
            startTimes: [
                "2026-03-01T12:00:00.300000Z", "2026-03-01T12:00:01.000000Z", "2026-03-01T12:00:02.000000Z",
                "2026-03-01T12:00:03.000000Z",
            ]),
    ]

    @Test("a stop's comments (INTERRUPTED_BY) go on the segment it ends, not on rotations while it drains")
    func stopCommentsOnTheLastSegment() throws {
        let directory = TemporaryDirectory("stop-comments")
        let testCase = Self.rotationCases[0]
        let source = MemorySource(
            channels: testCase.channels, startTime: iso(testCase.start), totalFrames: testCase.totalFrames, chunk: 1234)
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path, app: "app", stream: "main", channels: testCase.channels,
            sampleRate: testCase.sampleRate, bitsPerSample: testCase.bits, segmentSeconds: 1,
            comments: SegmentComments(
                category: "record", mode: "default", inputPort: "mic", inputType: "builtInMic", bandwidth: "full",
                recdVersion: "test"))
        let recorder = try Recorder(configuration: configuration, source: source)
        try recorder.start()
        // The source holds every frame: the drain after the request rotates through them all.
        recorder.requestStop(reason: .interruption, comments: [VorbisComment(CommentName.interruptedBy, "voice")])
        recorder.waitUntilStopped()
        let records = finishedRecords(recorder.drainEvents())
        try #require(records.count == testCase.segmentFrames.count)
        for (index, record) in records.enumerated() {
            let tags = try metaflacTags(record.path)
            let last = index == records.count - 1
            #expect(tags["END_REASON"] == (last ? "interruption" : "rotation"), "\(record.path)")
            #expect(tags["INTERRUPTED_BY"] == (last ? "voice" : nil), "\(record.path)")
        }
    }

    @Test("segments rotate on the wall clock, gaplessly, and every file is valid FLAC", arguments: rotationCases)
    func rotation(_ testCase: RotationCase) throws {
        let directory = TemporaryDirectory("rotation")
        let source = MemorySource(
            channels: testCase.channels, startTime: iso(testCase.start), totalFrames: testCase.totalFrames, chunk: 1234)
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path, app: "app", stream: "main", channels: testCase.channels,
            sampleRate: testCase.sampleRate, bitsPerSample: testCase.bits, segmentSeconds: 1,
            comments: SegmentComments(
                category: "record", mode: "default", inputPort: "mic", inputType: "builtInMic", bandwidth: "full",
                recdVersion: "test"))
        let events = try record(configuration, source: source)

        let records = finishedRecords(events)
        #expect(records.map(\.path) == testCase.names.map { directory.path + "/" + $0 })
        #expect(records.map(\.frames) == testCase.segmentFrames)
        #expect(events.last == .stopped(reason: .stop, error: nil))
        let started = events.compactMap { event -> String? in
            if case .segmentStarted(let path, 0, _, _) = event { return path } else { return nil }
        }
        #expect(started == records.map(\.path))
        #expect(FileSystem.files(under: directory.path, withSuffix: ".partial").isEmpty)

        var concatenated: [Int32] = []
        var offset = 0
        for (index, record) in records.enumerated() {
            #expect(try flacTestPasses(record.path))
            let decoded = try decodeWithFlacCLI(record.path, bits: testCase.bits)
            var expected: [Int32] = []
            for frame in offset..<(offset + testCase.segmentFrames[index]) {
                for channel in 0..<testCase.channels {
                    expected.append(counterInteger(frame, channel, bits: testCase.bits))
                }
            }
            #expect(mismatch(decoded, expected) == nil, "segment \(index + 1) differs from the source")
            concatenated += decoded
            offset += testCase.segmentFrames[index]

            let (total, md5) = try metaflacTotalsAndMD5(record.path)
            #expect(total == testCase.segmentFrames[index])
            #expect(md5 == (try md5Hex(pcmBytes(expected, bits: testCase.bits))))

            let tags = try metaflacTags(record.path)
            #expect(tags["START_TIME"] == testCase.startTimes[index])
            #expect(tags["SEGMENT"] == String(index + 1))
            #expect(tags["END_REASON"] == (index == records.count - 1 ? "stop" : "rotation"))
            #expect(tags["APP"] == "app" && tags["STREAM"] == "main")
            #expect(tags["CATEGORY"] == "record" && tags["MODE"] == "default")
            #expect(tags["INPUT_PORT"] == "mic" && tags["INPUT_TYPE"] == "builtInMic" && tags["BANDWIDTH"] == "full")
            #expect(tags["ENCODER"]?.hasPrefix("recd test / libFLAC 1.") == true)
            #expect(tags["GAPS"] == nil)
            #expect(record.startTime == iso(testCase.startTimes[index]))
            #expect(record.endReason == (index == records.count - 1 ? .stop : .rotation))
        }
        var source2: [Int32] = []
        for frame in 0..<testCase.totalFrames {
            for channel in 0..<testCase.channels { source2.append(counterInteger(frame, channel, bits: testCase.bits)) }
        }
        #expect(mismatch(concatenated, source2) == nil, "the concatenated segments are not the captured signal")
    }

    @Test("10 channels: two groups of 8 + 2, started and rotated on the same sample")
    func channelGroups() throws {
        let directory = TemporaryDirectory("groups")
        let source = MemorySource(channels: 10, startTime: iso("2026-01-02T03:04:05.500000Z"), totalFrames: 20000)
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path, app: "desk", stream: "multi", channels: 10, sampleRate: 8000,
            bitsPerSample: 16, segmentSeconds: 1)
        let records = finishedRecords(try record(configuration, source: source))
        let first = records.filter { $0.group == 1 }
        let second = records.filter { $0.group == 2 }
        #expect(records.count == 6)
        #expect(first.map(\.frames) == [4000, 8000, 8000])
        #expect(second.map(\.frames) == first.map(\.frames))
        #expect(first.map(\.startTime) == second.map(\.startTime))
        #expect(first.allSatisfy { $0.channels == 8 } && second.allSatisfy { $0.channels == 2 })
        #expect(
            first.first?.path == directory.path + "/2026/01/02/desk-multi-g1-20260102T030405.500Z.flac")
        #expect(
            second.first?.path == directory.path + "/2026/01/02/desk-multi-g2-20260102T030405.500Z.flac")

        var offset = 0
        for (one, two) in zip(first, second) {
            #expect(try flacTestPasses(one.path) && flacTestPasses(two.path))
            let decodedOne = try decodeWithFlacCLI(one.path, bits: 16)
            let decodedTwo = try decodeWithFlacCLI(two.path, bits: 16)
            var expectedOne: [Int32] = []
            var expectedTwo: [Int32] = []
            for frame in offset..<(offset + one.frames) {
                for channel in 0..<8 { expectedOne.append(counterInteger(frame, channel, bits: 16)) }
                for channel in 8..<10 { expectedTwo.append(counterInteger(frame, channel, bits: 16)) }
            }
            #expect(mismatch(decodedOne, expectedOne) == nil)
            #expect(mismatch(decodedTwo, expectedTwo) == nil)
            offset += one.frames
            let tagsOne = try metaflacTags(one.path)
            let tagsTwo = try metaflacTags(two.path)
            #expect(tagsOne["GROUP"] == "1" && tagsOne["GROUP_CHANNELS"] == "1-8")
            #expect(tagsTwo["GROUP"] == "2" && tagsTwo["GROUP_CHANNELS"] == "9-10")
            #expect(tagsOne["START_TIME"] == tagsTwo["START_TIME"])
        }
    }

    @Test("gaps insert nothing, are recorded at their position, and may cross a rotation")
    func gaps() throws {
        let directory = TemporaryDirectory("gaps")
        // The last gap comes after the last frame, at the end of a segment: no empty segment for it.
        let sourceGaps = [
            SourceGap(position: 5000, length: 1200), SourceGap(position: 14000, length: 1600),
            SourceGap(position: 21200, length: 500),
        ]
        let source = MemorySource(
            channels: 1, startTime: iso("2026-05-05T05:05:05.000000Z"), totalFrames: 24000, chunk: 700,
            gaps: sourceGaps)
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path, app: "app", stream: "gappy", channels: 1, sampleRate: 8000,
            bitsPerSample: 16, segmentSeconds: 1)
        let events = try record(configuration, source: source)
        let records = finishedRecords(events)
        try #require(records.count == 3, "\(events)")
        #expect(events.compactMap { if case .gap(let gap) = $0 { return gap } else { return nil } } == sourceGaps)
        #expect(records.map(\.frames) == [6800, 7200, 7200])
        #expect(
            records.map(\.gaps) == [
                [SegmentGap(position: 5000, length: 1200)], [SegmentGap(position: 7200, length: 800)],
                [SegmentGap(position: 0, length: 800)],
            ])
        let tags = try records.map { try metaflacTags($0.path) }
        #expect(tags.map { $0["GAPS"] } == ["5000+1200", "7200+800", "0+800"])
        #expect(
            tags.map { $0["START_TIME"] } == [
                "2026-05-05T05:05:05.000000Z", "2026-05-05T05:05:06.000000Z", "2026-05-05T05:05:07.000000Z",
            ])
        var concatenated: [Int32] = []
        for record in records {
            #expect(try flacTestPasses(record.path))
            concatenated += try decodeWithFlacCLI(record.path, bits: 16)
        }
        let missing = Set(5000..<6200).union(15200..<16800)
        let expected = (0..<24000).filter { !missing.contains($0) }.map { counterInteger($0, 0, bits: 16) }
        #expect(mismatch(concatenated, expected) == nil, "the segments are not the source minus exactly the gaps")
        // The index and a reindex agree on the gaps.
        #expect(try SegmentRecord.read(path: records[1].path).gaps == records[1].gaps)
    }

    @Test(
        "stopped while stalled: the time from the last frame to the stop is a clockStall gap at the end of the open segment (GAPS, the gap event), asked once, and no segment is opened for it"
    )
    func trailingStall() throws {
        let directory = TemporaryDirectory("trailing")
        let source = MemorySource(
            channels: 1, startTime: iso("2026-05-05T05:05:05.000000Z"), totalFrames: 6000, chunk: 700)
        source.trailingStall = 1500
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path, app: "app", stream: "stalled", channels: 1, sampleRate: 8000,
            bitsPerSample: 16, segmentSeconds: 3600)
        let events = try record(configuration, source: source)
        let records = finishedRecords(events)
        try #require(records.count == 1, "\(events)")
        #expect(source.trailingStallAsked == 1)
        let gap = SourceGap(position: 6000, length: 1500, cause: .clockStall)
        #expect(events.compactMap { if case .gap(let gap) = $0 { return gap } else { return nil } } == [gap])
        #expect(records[0].frames == 6000)
        #expect(records[0].gaps == [SegmentGap(position: 6000, length: 1500)])
        #expect(try metaflacTags(records[0].path)["GAPS"] == "6000+1500")
        #expect(try flacTestPasses(records[0].path))
        // Without one (a stop while frames flow): nothing is added.
        let plain = MemorySource(channels: 1, startTime: iso("2026-05-05T06:05:05.000000Z"), totalFrames: 6000)
        let plainRecords = finishedRecords(try record(configuration, source: plain))
        #expect(plainRecords.map(\.gaps) == [[]])
    }

    @Test("a transform may change the rate: segments and times follow the output rate")
    func transformChangesRate() throws {
        let directory = TemporaryDirectory("transform")
        let source = MemorySource(channels: 2, startTime: iso("2026-07-07T07:07:07.000000Z"), totalFrames: 40000)
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path, app: "phone", stream: "hfp", channels: 2, sampleRate: 16000,
            bitsPerSample: 16, segmentSeconds: 1,
            comments: SegmentComments(bandwidth: "hfp-cvsd"))
        let records = finishedRecords(
            try record(configuration, source: source, transform: HalvingTransform(channels: 2, inputRate: 16000)))
        #expect(records.map(\.frames) == [8000, 8000, 4000])
        #expect(records.allSatisfy { $0.sampleRate == 8000 })
        var concatenated: [Int32] = []
        for record in records {
            #expect(try flacTestPasses(record.path))
            #expect(try metaflacTags(record.path)["SOURCE_SAMPLE_RATE"] == "16000")
            concatenated += try decodeWithFlacCLI(record.path, bits: 16)
        }
        let expected = stride(from: 0, to: 40000, by: 2).flatMap {
            [counterInteger($0, 0, bits: 16), counterInteger($0, 1, bits: 16)]
        }
        #expect(mismatch(concatenated, expected) == nil)
        #expect(records[2].startTime == iso("2026-07-07T07:07:09.000000Z"))
    }

    @Test("an existing file is never overwritten: the recorder takes the next free name")
    func neverOverwrite() throws {
        let directory = TemporaryDirectory("overwrite")
        let taken = directory.path + "/2026/02/03/app-main-20260203T040506.000Z.flac"
        try FileSystem.makeDirectories(FileSystem.directoryName(of: taken))
        try Data("precious".utf8).write(to: URL(fileURLWithPath: taken))
        try Data("leftover".utf8).write(
            to: URL(fileURLWithPath: taken.replacingOccurrences(of: ".000Z", with: ".000Z-1") + ".partial"))
        let source = MemorySource(channels: 1, startTime: iso("2026-02-03T04:05:06.000000Z"), totalFrames: 4000)
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path, app: "app", stream: "main", channels: 1, sampleRate: 8000,
            bitsPerSample: 16, segmentSeconds: 60)
        let records = finishedRecords(try record(configuration, source: source))
        #expect(records.map(\.path) == [taken.replacingOccurrences(of: ".000Z.flac", with: ".000Z-2.flac")])
        #expect(try String(contentsOfFile: taken, encoding: .utf8) == "precious")
        #expect(
            try String(
                contentsOfFile: taken.replacingOccurrences(of: ".000Z", with: ".000Z-1") + ".partial", encoding: .utf8)
                == "leftover")
        #expect(try flacTestPasses(records[0].path))
    }

    @Test("a live source: the archiver waits for frames, a stop drains them all, events wake the control thread")
    func liveSource() throws {
        let directory = TemporaryDirectory("live")
        let source = LiveSource(rate: 8000, start: UTCTime.now())
        let wakes = WakeCounter()
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path, app: "app", stream: "live", channels: 1, sampleRate: 8000,
            bitsPerSample: 16, segmentSeconds: 1,
            timing: ArchiverTiming(flushInterval: 0.2))
        let recorder = try Recorder(configuration: configuration, source: source, wake: { wakes.increment() })
        try recorder.start()
        #expect(recorder.isRunning)
        usleep(1_300_000)
        // After the first rotation (1 s) the next segment opens when the archiver next writes:
        // a moment later on a loaded machine (it runs 10 nice steps below the process).
        #expect(eventually(timeout: 5) { recorder.openPaths.contains { $0.hasSuffix(".flac.partial") } })
        source.close()
        recorder.stop()
        #expect(!recorder.isRunning && recorder.openPaths.isEmpty)
        let events = recorder.drainEvents()
        #expect(wakes.count == events.count)
        let records = finishedRecords(events)
        #expect(records.count >= 2)
        #expect(records.reduce(0) { $0 + $1.frames } == source.delivered)
        var concatenated: [Int32] = []
        for record in records { concatenated += try decodeWithFlacCLI(record.path, bits: 16) }
        #expect(mismatch(concatenated, (0..<source.delivered).map { counterInteger($0, 0, bits: 16) }) == nil)
        #expect(records.last?.endReason == .stop)
    }

    @Test("a stop ends the archiver's wait between reads at once, however long the poll interval")
    func stopEndsTheWait() throws {
        let directory = TemporaryDirectory("stopwait")
        let source = LiveSource(rate: 8000, start: UTCTime.now())
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path, app: "app", stream: "wait", channels: 1, sampleRate: 8000,
            bitsPerSample: 16, segmentSeconds: 60,
            timing: ArchiverTiming(pollInterval: 30))
        let recorder = try Recorder(configuration: configuration, source: source, wake: {})
        try recorder.start()
        usleep(300_000)  // the archiver has read what there was and waits
        source.close()
        let began = Date()
        recorder.stop()
        let took = Date().timeIntervalSince(began)
        #expect(took < 2, "stop took \(took) s with a 30 s poll interval")
        let records = finishedRecords(recorder.drainEvents())
        #expect(records.reduce(0) { $0 + $1.frames } == source.delivered)
        #expect(source.delivered >= 2000)
    }
}

/// Frames become available as wall time passes, like a capture ring.
final class LiveSource: SampleSource, @unchecked Sendable {
    let channels = 1
    let rate: Int
    let startTime: UTCTime?
    private let began = Date()
    private let lock = NSLock()
    private var closedAt: Int?
    private(set) var delivered = 0

    init(rate: Int, start: UTCTime) {
        self.rate = rate
        startTime = start
    }

    /// No more frames after those captured so far.
    func close() {
        lock.lock()
        closedAt = Int(Date().timeIntervalSince(began) * Double(rate))
        lock.unlock()
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        lock.lock()
        let limit = closedAt ?? Int(Date().timeIntervalSince(began) * Double(rate))
        lock.unlock()
        let frames = min(buffer.count, max(0, limit - delivered))
        for frame in 0..<frames { buffer[frame] = counterSample(delivered + frame, 0) }
        delivered += frames
        return frames
    }

    func drainGaps() -> [SourceGap] { [] }
}

final class WakeCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func increment() {
        lock.lock()
        value += 1
        lock.unlock()
    }
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}

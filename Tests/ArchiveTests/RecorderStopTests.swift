// A recorder's stop against a producer that may still deliver: it drains until the source says
// its producer has retired (a capture tap past its retirement mark), not for a fixed time; and
// the planar path, where the source lends each channel's run in place.

import Foundation
import Synchronization
import Testing

@testable import Archive

@Suite("Recorder stop and planar sources")
struct RecorderStopTests {
    static let rate = 8000

    func configuration(_ directory: TemporaryDirectory, channels: Int, retirementLimit: Double = 2)
        -> RecorderConfiguration
    {
        RecorderConfiguration(
            archiveDirectory: directory.path, app: "app", stream: "stop", channels: channels, sampleRate: Self.rate,
            bitsPerSample: 16, segmentSeconds: 3600,
            timing: ArchiverTiming(pollInterval: 0.05, retirementLimit: retirementLimit))
    }

    /// Every channel of every file, decoded, against the counter signal.
    func expectCounter(_ records: [SegmentRecord], frames: Int, channels: Int) throws {
        #expect(records.count == 1)
        guard let record = records.first else { return }
        #expect(record.frames == frames)
        let decoded = try decodeWithFlacCLI(record.path, bits: 16)
        let expected = (0..<frames).flatMap { frame in (0..<channels).map { counterInteger(frame, $0, bits: 16) } }
        #expect(mismatch(decoded, expected) == nil)
    }

    @Test("a stop waits for the producer to retire, not for a time: a period 300 ms after the request is kept")
    func stopWaitsForRetirement() throws {
        let directory = TemporaryDirectory("retire")
        let source = PlanarTestSource(channels: 3, capacity: 20_000, wrapEvery: 1_000)
        source.deliver(upTo: 4_000)
        let recorder = try Recorder(configuration: configuration(directory, channels: 3), source: source)
        try recorder.start()
        usleep(200_000)
        recorder.requestStop()
        // Longer than the fixed settle the archiver used to sleep (100 ms): a cycle under way at
        // the removal is as late as the machine makes it; only the mark says it is over.
        usleep(300_000)
        source.deliver(upTo: 6_000)
        source.retire()
        recorder.waitUntilStopped()
        try expectCounter(finishedRecords(recorder.drainEvents()), frames: 6_000, channels: 3)
        #expect(source.released == 6_000)
    }

    @Test("a producer that never retires (its server is gone) ends the stop after the retirement limit")
    func neverRetires() throws {
        let directory = TemporaryDirectory("noretire")
        let source = PlanarTestSource(channels: 2, capacity: 10_000, wrapEvery: 3_000)
        source.deliver(upTo: 5_000)
        let recorder = try Recorder(
            configuration: configuration(directory, channels: 2, retirementLimit: 0.3), source: source)
        try recorder.start()
        usleep(100_000)
        let began = Date()
        recorder.stop()
        let took = Date().timeIntervalSince(began)
        #expect(took >= 0.25 && took < 2, "the stop took \(took) s with a 0.3 s retirement limit")
        try expectCounter(finishedRecords(recorder.drainEvents()), frames: 5_000, channels: 2)
    }

    @Test("19 channels lent in place in runs cut at a ring's wrap make the files an interleaved source makes")
    func planarMatchesInterleaved() throws {
        let frames = 9_001
        let planarDirectory = TemporaryDirectory("planar19")
        let planar = PlanarTestSource(channels: 19, capacity: frames, wrapEvery: 1_337)
        planar.deliver(upTo: frames)
        planar.retire()
        let planarRecords = finishedRecords(try record(configuration(planarDirectory, channels: 19), source: planar))
        let interleavedDirectory = TemporaryDirectory("interleaved19")
        let interleaved = MemorySource(
            channels: 19, startTime: planar.startTime!, totalFrames: frames, chunk: 700)
        let interleavedRecords = finishedRecords(
            try record(configuration(interleavedDirectory, channels: 19), source: interleaved))
        #expect(planarRecords.count == 3 && interleavedRecords.count == 3)
        for (one, other) in zip(planarRecords, interleavedRecords) {
            #expect(one.frames == frames && other.frames == frames)
            #expect(try decodeWithFlacCLI(one.path, bits: 16) == decodeWithFlacCLI(other.path, bits: 16))
        }
    }
}

/// A planar source over the counter signal: channel `c` is one run of `capacity` samples; the
/// test says how many frames have arrived (`deliver`) and when the producer retires. `peek`
/// lends at most `wrapEvery` frames and never across a multiple of it, as a ring's end cuts.
final class PlanarTestSource: PlanarSampleSource, @unchecked Sendable {
    let channels: Int
    let startTime: UTCTime? = UTCTime(iso8601: "2026-12-02T10:00:00.000Z")
    private let samples: UnsafeMutablePointer<Float>
    private let capacity: Int
    private let wrapEvery: Int
    private let available = Atomic<Int>(0)
    private let retired = Atomic<Bool>(false)
    private let read = Atomic<Int>(0)

    init(channels: Int, capacity: Int, wrapEvery: Int) {
        self.channels = channels
        self.capacity = capacity
        self.wrapEvery = wrapEvery
        samples = .allocate(capacity: channels * capacity)
        for channel in 0..<channels {
            for frame in 0..<capacity { samples[channel * capacity + frame] = counterSample(frame, channel) }
        }
    }

    deinit { samples.deallocate() }

    func deliver(upTo frames: Int) { available.store(min(frames, capacity), ordering: .releasing) }
    func retire() { retired.store(true, ordering: .releasing) }
    var released: Int { read.load(ordering: .acquiring) }

    var producerRetired: Bool { retired.load(ordering: .acquiring) }

    func peek(maxFrames: Int, channelStarts: UnsafeMutablePointer<UnsafePointer<Float>>) -> Int {
        let start = read.load(ordering: .relaxed)
        let count = min(maxFrames, available.load(ordering: .acquiring) - start, wrapEvery - start % wrapEvery)
        guard count > 0 else { return 0 }
        for channel in 0..<channels { channelStarts[channel] = UnsafePointer(samples + channel * capacity + start) }
        return count
    }

    func release(frames: Int) { read.add(frames, ordering: .releasing) }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        Issue.record("a planar source is read in place")
        return 0
    }

    func drainGaps() -> [SourceGap] { [] }
}

import Foundation
import Platform
import Synchronization
import TestSupport
import Testing

// Time stays true: slow drift of a stream's sample clock against the system's monotonic clock,
// fitted from synthetic (frames, microseconds) stamps, and written as CLOCK_DRIFT_PPM.
@testable import Archive

@Suite("clock drift per segment")
struct ClockDriftTests {
    static let rate = 48_000

    /// Stamps every `every` µs for `seconds`, from a clock `ppm` fast, with `jitter` µs of
    /// seeded noise on each time (scheduling), and `stall` µs of time without frames (counted
    /// into the frames, as a gap) at its middle.
    static func stamps(
        ppm: Double, seconds: Double, every: Int = 50_000, jitter: Int = 0, stall: Int = 0, seed: UInt64 = 1
    ) -> [ClockStamp] {
        var random = SplitMix64(seed: seed)
        var stamps: [ClockStamp] = []
        let origin = 7_000_000_000
        let actualRate = Double(rate) * (1 + ppm / 1e6)
        var micros = 0
        var stalled = 0
        while Double(micros) < seconds * 1e6 {
            if stall > 0, stalled == 0, Double(micros) >= seconds * 5e5 {
                stalled = stall
                micros += stall
            }
            // Frames at this instant; the stall's time counts as frames of a gap.
            let frames = Int((Double(micros) * actualRate / 1e6).rounded(.down))
            let noise = jitter > 0 ? Int(random.next() % UInt64(2 * jitter + 1)) - jitter : 0
            stamps.append(ClockStamp(frames: frames, micros: origin + micros + max(noise, 0)))
            micros += every
        }
        return stamps
    }

    @Test("a clock at its nominal rate drifts 0 ppm; 25 ppm fast and 1433 ppm slow read as such")
    func exactRates() throws {
        for ppm in [0.0, 25, -1433.2, 500] {
            let fitted = try #require(
                ClockDriftFit.partsPerMillion(Self.stamps(ppm: ppm, seconds: 60), nominalRate: Self.rate))
            #expect(abs(fitted - ppm) < 0.1, "\(ppm) ppm fitted as \(fitted)")
        }
    }

    @Test(
        "late wake-ups of up to 3 ms on every stamp: an hour's segment still reads within 1 ppm, a minute's within 50")
    func jitter() throws {
        for seed in randomSeeds(count: 3, base: 0xD81F7) {
            let hour = try #require(
                ClockDriftFit.partsPerMillion(
                    Self.stamps(ppm: 40, seconds: 3600, every: 1_000_000, jitter: 3_000, seed: seed),
                    nominalRate: Self.rate))
            #expect(abs(hour - 40) < 1, "seed \(seed): \(hour)")
            let minute = try #require(
                ClockDriftFit.partsPerMillion(
                    Self.stamps(ppm: 40, seconds: 60, jitter: 3_000, seed: seed), nominalRate: Self.rate))
            #expect(abs(minute - 40) < 50, "seed \(seed): \(minute)")
        }
    }

    @Test("a stall recorded as a gap (its time counted into the frames) does not read as drift")
    func stallIsNotDrift() throws {
        let fitted = try #require(
            ClockDriftFit.partsPerMillion(Self.stamps(ppm: -20, seconds: 20, stall: 3_000_000), nominalRate: Self.rate))
        #expect(abs(fitted + 20) < 0.5, "\(fitted)")
    }

    @Test("less than 2 s of stamps, a rate of 0, stamps that stand still or go back: no figure, no trap")
    func tooLittle() {
        #expect(ClockDriftFit.partsPerMillion(Self.stamps(ppm: 10, seconds: 1.9), nominalRate: Self.rate) == nil)
        #expect(ClockDriftFit.partsPerMillion(Self.stamps(ppm: 10, seconds: 10), nominalRate: 0) == nil)
        #expect(ClockDriftFit.partsPerMillion([], nominalRate: Self.rate) == nil)
        let still = Array(repeating: ClockStamp(frames: 10, micros: 10), count: 100)
        #expect(ClockDriftFit.partsPerMillion(still, nominalRate: Self.rate) == nil)
        // Repeats and a step back are skipped; the rest fits.
        var stamps = Self.stamps(ppm: 100, seconds: 10)
        stamps.insert(stamps[40], at: 41)
        stamps.insert(ClockStamp(frames: 0, micros: 0), at: 90)
        stamps.insert(ClockStamp(frames: Int.max, micros: Int.min), at: 100)
        let fitted = ClockDriftFit.partsPerMillion(stamps, nominalRate: Self.rate)
        #expect(fitted.map { abs($0 - 100) < 0.5 } == true, "\(String(describing: fitted))")
        #expect(ClockDriftFit.commentValue(-1433.26) == "-1433.3")
        #expect(ClockDriftFit.commentValue(0.04) == "0.0")
    }

    @Test(
        "a recorder whose source has a clock writes CLOCK_DRIFT_PPM on each segment long enough to measure (3 s), none on a 1 s one"
    )
    func recorderWritesDrift() throws {
        let directory = TemporaryDirectory("drift")
        let rate = 8000
        // From a second past a multiple of 3 s, 9 s in segments of 3 s: 2 s, 3 s, 3 s, 1 s.
        let start = UTCTime(nanosecondsSinceEpoch: 1_764_583_201_000_000_000)
        let source = StampedSource(
            MemorySource(channels: 1, startTime: start, totalFrames: 9 * rate, chunk: 400), rate: rate, ppm: 250)
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path, app: "app", stream: "drift", channels: 1, sampleRate: rate,
            bitsPerSample: 16, segmentSeconds: 3)
        let records = finishedRecords(try record(configuration, source: source))
        #expect(records.count == 4)
        let drifts = try records.map { try metaflacTags($0.path)["CLOCK_DRIFT_PPM"].flatMap(Double.init) }
        // Stamps come once a read: the first and last segments span a read less than their length.
        #expect(drifts[1].map { abs($0 - 250) < 1 } == true, "\(drifts)")
        #expect(drifts[2].map { abs($0 - 250) < 1 } == true, "\(drifts)")
        #expect(drifts[3] == nil, "a 1 s segment has too little to measure: \(drifts)")
        // The record, the index and the file agree.
        #expect(records.map(\.clockDriftPPM) == drifts)
        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        for record in records { try index.add(record) }
        #expect(try index.list() == records)
        #expect(try records.map { try SegmentRecord.read(path: $0.path) } == records)
    }

    @Test("an index of version 2 gains the clock_drift_ppm column (null), once")
    func migratesVersion2() throws {
        let directory = TemporaryDirectory("drift-migrate")
        let path = directory.path + "/index.sqlite"
        // The version 2 schema, as recd before clock drift created it, with one row.
        try OldIndex.write(version: 2, at: path, values: "'\(directory.path)/x.flac', 'news', 'air', 0, 1, 0, 1, 1, 48000, 2, 24, 'rotation', '', 0, 1, -23.0, 4.0, -1.0")
        let index = try ArchiveIndex(path: path)
        let rows = try index.list()
        #expect(rows.count == 1 && rows.first?.clockDriftPPM == nil && rows.first?.loudness.integratedLUFS == -23)
        _ = try ArchiveIndex(path: path)
        let version = try SQLiteDatabase(path: path).statement("PRAGMA user_version")
        #expect(try version.step() && version.int(0) == 7)
        var row = try #require(rows.first)
        row.clockDriftPPM = 12.5
        try index.update(row)
        #expect(try index.list().first?.clockDriftPPM == 12.5)
    }
}

@Suite("a stepped wall clock")
struct ClockStepTests {
    @Test("steps over 20 ms either way are steps; smaller ones, and offsets past Int64, are not")
    func threshold() {
        #expect(ClockStep.step(from: 1_000, to: 1_000 + 20_000_001) == 20_000_001)
        #expect(ClockStep.step(from: 1_000, to: 1_000 - 3_000_000_000) == -3_000_000_000)
        #expect(ClockStep.step(from: 1_000, to: 1_000 + 20_000_000) == nil)
        #expect(ClockStep.step(from: 5, to: -19_999_995) == nil)
        #expect(ClockStep.step(from: Int64.min, to: Int64.max) == nil)
    }

    @Test(
        "on a crowded machine (four spinning threads on its cores) the wall clock's offset read a million times stays within 1 ms: a thread preempted between the two clocks sees no step"
    )
    func offsetOnACrowdedMachine() {
        let spinning = Atomic<Bool>(true)
        let spinners = (0..<4).map { _ in
            let thread = Thread { while spinning.load(ordering: .relaxed) {} }
            thread.start()
            return thread
        }
        defer { spinning.store(false, ordering: .relaxed) }
        _ = spinners
        var low = Int64.max
        var high = Int64.min
        // The same reading, one clock after the other, for the record: how far a preemption
        // between them throws it.
        var naiveLow = Int64.max
        var naiveHigh = Int64.min
        for _ in 0..<1_000_000 {
            let offset = SystemClock.wallClockOffsetNanoseconds()
            low = min(low, offset)
            high = max(high, offset)
            let naive = SystemClock.realtimeNanoseconds() &- Int64(SystemClock.monotonicSeconds() * 1e9)
            naiveLow = min(naiveLow, naive)
            naiveHigh = max(naiveHigh, naive)
        }
        print("offset spread: \(high - low) ns; one clock after the other: \(naiveHigh - naiveLow) ns")
        #expect(high - low < 1_000_000, "the offset moved by \(high - low) ns with no step")
    }

    @Test(
        "the wall clock stepped 5 s ahead, or 3 s back, 2 s into a recording: the segment ends (clockStep) and the next starts at the true time of its first frame; no frame lost"
    )
    func recorderFollowsStep() throws {
        for step: Int64 in [5_000_000_000, -3_000_000_000] {
            let directory = TemporaryDirectory("step")
            let rate = 8000
            let start = UTCTime(nanosecondsSinceEpoch: 1_764_585_001_000_000_000)  // 10:30:01, far from an hour
            let source = SteppingSource(
                MemorySource(channels: 1, startTime: start, totalFrames: 6 * rate, chunk: 400), stepAt: 2 * rate,
                step: step)
            let configuration = RecorderConfiguration(
                archiveDirectory: directory.path, app: "app", stream: "step", channels: 1, sampleRate: rate,
                bitsPerSample: 16, segmentSeconds: 3600)
            let records = finishedRecords(try record(configuration, source: source))
            try #require(records.count == 2, "\(records.map(\.path))")
            #expect(records[0].endReason == .clockStep && records[1].endReason == .stop)
            #expect(records[0].startTime == start)
            // The step is seen after the read that crossed it: that read's frames open the new segment.
            let first = records[0].frames
            #expect(first == 2 * rate - 400, "\(first)")
            let expected = start.advanced(byFrames: first, sampleRate: rate).nanosecondsSinceEpoch + step
            #expect(records[1].startTime.nanosecondsSinceEpoch / 1000 == expected / 1000, "\(records[1].startTime)")
            #expect(records[0].frames + records[1].frames == 6 * rate)
            #expect(records.map(\.segment) == [1, 2])
        }
    }
}

/// A memory source whose wall clock steps by `step` once `stepAt` frames were delivered.
final class SteppingSource: SampleSource {
    let inner: MemorySource
    let stepAt: Int
    let step: Int64
    var channels: Int { inner.channels }
    var startTime: UTCTime? { inner.startTime }

    init(_ inner: MemorySource, stepAt: Int, step: Int64) {
        self.inner = inner
        self.stepAt = stepAt
        self.step = step
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int { inner.read(into: buffer) }
    func drainGaps() -> [SourceGap] { inner.drainGaps() }
    func wallClockOffset() -> Int64? { inner.delivered >= stepAt ? 42 + step : 42 }
}

/// A memory source with a clock `ppm` fast: each stamp places the frames delivered so far.
final class StampedSource: SampleSource {
    let inner: MemorySource
    let rate: Int
    let ppm: Double
    var channels: Int { inner.channels }
    var startTime: UTCTime? { inner.startTime }

    init(_ inner: MemorySource, rate: Int, ppm: Double) {
        self.inner = inner
        self.rate = rate
        self.ppm = ppm
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int { inner.read(into: buffer) }
    func drainGaps() -> [SourceGap] { inner.drainGaps() }
    func clockStamp() -> ClockStamp? {
        let frames = inner.delivered
        return ClockStamp(
            frames: frames, micros: 1_000_000 + Int(Double(frames) * 1e6 / (Double(rate) * (1 + ppm / 1e6))))
    }
}

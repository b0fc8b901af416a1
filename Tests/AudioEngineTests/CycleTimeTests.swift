// The process thread's cycle times: the buckets' bounds (Prometheus's `le`: a value on a bound
// is in that bucket), what one cycle adds, and a real client's cycles on the test server.

import TestSupport
import Testing

@testable import AudioEngine

@Suite("Cycle times", .serialized)
struct CycleTimeTests {
    @Test("a value on a bound falls in that bucket, one µs more in the next; past 25.6 ms in the last")
    func buckets() {
        #expect(CycleTimeLayout.bucket(0) == 0)
        #expect(CycleTimeLayout.bucket(25) == 0)
        #expect(CycleTimeLayout.bucket(26) == 1)
        #expect(CycleTimeLayout.bucket(50) == 1)
        #expect(CycleTimeLayout.bucket(51) == 2)
        for index in 0..<CycleTimeLayout.finiteBuckets {
            let bound = CycleTimeLayout.bound(index)!
            #expect(CycleTimeLayout.bucket(bound) == index, "\(bound) µs")
            #expect(CycleTimeLayout.bucket(bound + 1) == index + 1, "\(bound + 1) µs")
        }
        #expect(CycleTimeLayout.bound(CycleTimeLayout.finiteBuckets) == nil)
        #expect(CycleTimeLayout.bucket(.max) == CycleTimeLayout.finiteBuckets)
    }

    @Test("each cycle counts once in each histogram; maxima, sums and late cycles as recorded")
    func recording() {
        let cells = CycleTimeCells()
        recordCycleTime(cells.pointer, startDelay: 10, duration: 300, late: false)
        recordCycleTime(cells.pointer, startDelay: 4_000, duration: 30, late: true)
        recordCycleTime(cells.pointer, startDelay: 40, duration: 100_000, late: true, overlong: true)
        let report = cells.report
        #expect(report.boundsMicros == [25, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600])
        #expect(report.cycles == 3 && report.lateCycles == 2 && report.overlongCycles == 1)
        #expect(report.startDelayCounts == [1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0])
        #expect(report.durationCounts == [0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1])
        #expect(report.maxStartDelayMicros == 4_000 && report.maxDurationMicros == 100_000)
        #expect(report.startDelayMicrosTotal == 4_050 && report.durationMicrosTotal == 100_330)
    }

    @Test("a client on the test server counts its cycles: every one in each histogram, none longer than the period")
    func realCycles() throws {
        let engine = AudioEngine()
        try engine.start(
            clientName: unique("recdtest-cycles"), inputs: [PortGroupSpec(name: "line", channels: 2, connectTo: [])],
            outputs: [])
        defer { engine.stop() }
        let rate = try #require(engine.sampleRate)
        let period = try #require(engine.bufferSize)
        #expect(waitUntil(seconds: 10) { (engine.cycleTimes?.cycles ?? 0) >= UInt64(max(4, rate / period / 2)) })
        let report = try #require(engine.cycleTimes)
        // A cycle may be counted while the report is read: the cells are read one at a time.
        #expect(abs(Int(report.durationCounts.reduce(0, +)) - Int(report.cycles)) <= 1, "\(report)")
        #expect(abs(Int(report.startDelayCounts.reduce(0, +)) - Int(report.cycles)) <= 1, "\(report)")
        let periodMicros = UInt64(period) * 1_000_000 / UInt64(rate)
        // An idle engine does almost nothing in a cycle: far less than the period.
        #expect(report.maxDurationMicros < periodMicros, "\(report)")
        #expect(report.durationMicrosTotal <= report.cycles * report.maxDurationMicros)
        print("cycle times, idle, \(period) frames: \(report)")
    }
}

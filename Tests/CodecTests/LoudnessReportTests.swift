// LoudnessReportBuilder (the archive browser's and `recctl archive loudness`'s report) against
// libebur128 itself (LoudnessMeter with `.libebur128`, read every second): integrated
// loudness, range and true peak of the whole, the short-term reading of each second, and the
// seconds above target plus tolerance counted from libebur128's readings.

import Foundation
import Testing

@testable import Codec

@Suite("Loudness reports against libebur128")
struct LoudnessReportTests {
    /// 10 s of a 1 kHz stereo sine at -33 dBFS, then 10 s at -13 dBFS, then 5 s at -23 dBFS.
    static func programme() -> [Float] {
        var samples: [Float] = []
        for (level, seconds) in [(-33.0, 10), (-13.0, 10), (-23.0, 5)] {
            let amplitude = pow(10, level / 20)
            for frame in 0..<(seconds * 48_000) {
                let value = Float(amplitude * sin(2 * Double.pi * 1_000 * Double(frame) / 48_000))
                samples += [value, value]
            }
        }
        return samples
    }

    @Test(
        "integrated loudness, range and true peak within 0.1 of libebur128's; each second's short-term reading and the seconds above -23 + 1 LUFS as libebur128's readings count them"
    )
    func agreesWithLibebur128() throws {
        let samples = Self.programme()
        let builder = try LoudnessReportBuilder(channels: 2, sampleRate: 48_000, target: -23, tolerance: 1)
        // In odd pieces, as a decoder hands them over.
        var offset = 0
        while offset < samples.count {
            let end = min(samples.count, offset + 2 * 3_001)
            let measured = samples[offset..<end].withUnsafeBufferPointer { builder.add($0) }
            #expect(measured, "the programme is within the longest report")
            offset = end
        }
        let report = builder.report
        let oracle = try LoudnessMeter(channels: 2, sampleRate: 48_000, engine: .libebur128)
        var readings: [Double?] = []
        for second in 0..<25 {
            samples[(second * 96_000)..<((second + 1) * 96_000)].withUnsafeBufferPointer { oracle.add($0) }
            readings.append(oracle.shortTermLUFS)
        }
        let expected = oracle.summary
        #expect(report.frames == 25 * 48_000 && report.shortTerm.count == 25)
        let integrated = try #require(report.summary.integratedLUFS)
        #expect(abs(integrated - (expected.integratedLUFS ?? .nan)) < 0.1, "\(integrated) vs \(expected)")
        #expect(abs((report.summary.rangeLU ?? .nan) - (expected.rangeLU ?? .nan)) < 0.1, "\(report.summary)")
        #expect(abs((report.summary.truePeakDBTP ?? .nan) - (expected.truePeakDBTP ?? .nan)) < 0.1)
        for (ours, theirs) in zip(report.shortTerm, readings) {
            #expect((ours == nil) == (theirs == nil))
            if let ours, let theirs { #expect(abs(ours - theirs) < 0.1, "short-term \(ours) vs \(theirs)") }
        }
        let above = readings.filter { ($0 ?? -.infinity) > -22 }.count
        #expect(report.secondsAbove == above && above >= 10, "\(report.secondsAbove) s above, libebur128: \(above)")
        // The CSV: the summary line, then one row per second.
        let csv = report.csv(feed: "logger/mic", start: "2026-12-06T10:00:00Z") { "t\($0)" }.split(separator: "\n")
        #expect(csv.count == 3 + 25 && csv[1].hasPrefix("logger/mic,2026-12-06T10:00:00Z,25.00,"))
    }

    @Test("two decimals as the segment tags have them, negative and small values included")
    func fixed() {
        #expect(LoudnessReport.fixed(-23.004) == "-23.00")
        #expect(LoudnessReport.fixed(-0.004) == "0.00")
        #expect(LoudnessReport.fixed(-0.05) == "-0.05")
        #expect(LoudnessReport.fixed(7.5) == "7.50")
        #expect(LoudnessReport.fixed(.nan) == "")
    }
}

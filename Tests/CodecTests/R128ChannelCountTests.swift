// R128Engine measures across the channels (one SIMD lane a channel, lane groups of 4 or 8): at
// each channel count a recorder meets — 1, 2, 8 (one file), 32 and 128 — it reads what
// libebur128 reads, within 0.01 LU and 0.05 dB (the goal is 0.1), on EBU Tech 3341 and 3342
// signals and on noise of changing level, fed as the archiver feeds it (one run per channel, in
// odd chunks) and interleaved. Up to 64 channels one meter measures them all (lane group after
// lane group); 128, beyond libebur128's 64, are measured as the archive measures them, a meter
// per file of 8 channels.

import Foundation
import Testing

@testable import Codec

@Suite("R128Engine at 1, 2, 8, 32 and 128 channels reads what libebur128 reads")
struct R128ChannelCountTests {
    typealias Exact = LoudnessExactnessTests

    static func decibels(_ linear: Double) -> Double { 20 * log10(linear) }

    /// `samples` (interleaved) fed to R128Engine one run per channel, as LoudnessStage feeds it,
    /// and to libebur128 interleaved, in the same random chunks (odd lengths and offsets, so
    /// the four-frame transposes leave remainders); everything compared at the end.
    /// One meter for up to 64 channels, else a meter per file of 8 (as LoudnessStage measures
    /// them): each file's summary.
    static func expectAgreement(
        _ samples: [Float], channels: Int, rate: Int = 48_000, seed: UInt64,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [(channels: Int, summary: LoudnessSummary)] {
        guard channels > 64 else {
            return [
                (
                    channels,
                    try expectMeterAgreement(
                        samples, channels: channels, rate: rate, seed: seed, sourceLocation: sourceLocation)
                )
            ]
        }
        let frames = samples.count / channels
        return try stride(from: 0, to: channels, by: 8).map { first in
            let width = min(8, channels - first)
            var file = [Float](repeating: 0, count: frames * width)
            for frame in 0..<frames {
                for index in 0..<width { file[frame * width + index] = samples[frame * channels + first + index] }
            }
            return (
                width,
                try expectMeterAgreement(
                    file, channels: width, rate: rate, seed: seed &+ UInt64(first), sourceLocation: sourceLocation)
            )
        }
    }

    @discardableResult
    static func expectMeterAgreement(
        _ samples: [Float], channels: Int, rate: Int = 48_000, seed: UInt64,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> LoudnessSummary {
        let fast = try LoudnessMeter(channels: channels, sampleRate: rate)
        let direct = try LoudnessMeter(channels: channels, sampleRate: rate, truePeak: true, direct: true)
        let frames = samples.count / channels
        // One run per channel, back to back.
        var planar = [Float](repeating: 0, count: samples.count)
        for frame in 0..<frames {
            for channel in 0..<channels { planar[channel * frames + frame] = samples[frame * channels + channel] }
        }
        var generator = SeededGenerator(state: seed)
        planar.withUnsafeBufferPointer { runs in
            samples.withUnsafeBufferPointer { buffer in
                let starts = (0..<channels).map { runs.baseAddress! + $0 * frames }
                var done = 0
                while done < frames {
                    let count = min(Int.random(in: 1...(rate / 7), using: &generator), frames - done)
                    starts.withUnsafeBufferPointer { fast.add(planar: $0.baseAddress!, offset: done, frames: count) }
                    direct.add(UnsafeBufferPointer(rebasing: buffer[(done * channels)..<((done + count) * channels)]))
                    done += count
                }
            }
        }
        let mine = fast.summary
        let theirs = direct.summary
        #expect((mine.integratedLUFS == nil) == (theirs.integratedLUFS == nil), sourceLocation: sourceLocation)
        if let a = mine.integratedLUFS, let b = theirs.integratedLUFS {
            #expect(abs(a - b) <= 0.01, "integrated \(a) vs \(b) LUFS", sourceLocation: sourceLocation)
        }
        if let a = mine.rangeLU, let b = theirs.rangeLU {
            #expect(abs(a - b) <= 0.01, "range \(a) vs \(b) LU", sourceLocation: sourceLocation)
        }
        let peaks = fast.channelTruePeaks
        let oracle = direct.channelTruePeaks
        #expect(peaks.count == channels && oracle.count == channels, sourceLocation: sourceLocation)
        for (channel, (a, b)) in zip(peaks, oracle).enumerated() where a > 0 || b > 0 {
            #expect(
                abs(decibels(a) - decibels(b)) <= 0.05,
                "channel \(channel): true peak \(decibels(a)) vs \(decibels(b)) dBTP", sourceLocation: sourceLocation)
        }
        // And interleaved (as a FLAC file's frames are read back), momentary and short-term at
        // 100 ms boundaries too.
        try R128EngineTests.expectAgreement(samples, channels: channels, rate: rate, seed: seed &+ 1)
        return mine
    }

    static let counts = [1, 2, 8, 32, 128]

    @Test("noise of changing level, every channel its own level and seed", arguments: counts)
    func noise(channels: Int) throws {
        let rate = 48_000
        var generator = SeededGenerator(state: UInt64(channels))
        let levels = (0..<(channels * 8)).map { _ in Double.random(in: -45 ... -6, using: &generator) }
        var brown = [Double](repeating: 0, count: channels)
        let samples = Exact.signal(channels: channels, rate: rate, seconds: 4) { frame, channel in
            // Brown-ish noise (as a microphone's room sounds): a leaky integral of white noise,
            // its level changing every 0.5 s, channel by channel at different times.
            brown[channel] = 0.98 * brown[channel] + generator.gaussian() * 0.1
            let piece = (frame + channel * 3_001) / (rate / 2)
            return pow(10, levels[(channel * 8 + piece) % levels.count] / 20) * brown[channel]
        }
        let files = try Self.expectAgreement(samples, channels: channels, rate: rate, seed: UInt64(channels))
        #expect(files.allSatisfy { $0.summary.integratedLUFS != nil })
    }

    @Test(
        "EBU Tech 3341 case 1 (1 kHz at -23 dBFS, 20 s in the standard; 5 s here) reads -23.0 ± 0.1 LUFS for two channels, 10·log10(n/2) more for n",
        arguments: counts)
    func tech3341(channels: Int) throws {
        let rate = 48_000
        let amplitude = pow(10, -23.0 / 20)
        // Every channel the same tone (recd weighs every channel 1: the sum of n channels is
        // 10·log10(n) LU above one), the first with a 45° phase so its true peak lies between samples.
        let samples = Exact.signal(channels: channels, rate: rate, seconds: 5) { frame, channel in
            amplitude * sin(2 * Double.pi * 1_000 * Double(frame) / Double(rate) + (channel == 0 ? Double.pi / 4 : 0))
        }
        for (width, summary) in try Self.expectAgreement(samples, channels: channels, rate: rate, seed: 41) {
            // -23 LUFS for the standard's two channels: 10·log10(n / 2) more for n.
            let integrated = try #require(summary.integratedLUFS)
            let expected = -23 + 10 * log10(Double(width) / 2)
            #expect(abs(integrated - expected) <= 0.1, "\(integrated) LUFS, \(expected) expected")
        }
    }

    @Test(
        "EBU Tech 3342 case 1 (1 kHz at -20 then -30 dBFS, 10 s each in the standard; 8 s here) reads a range of 10 ± 0.1 LU on every channel count",
        arguments: counts)
    func tech3342(channels: Int) throws {
        let rate = 48_000
        // 8 s a level (the standard's 10 s cost a minute of the test command at 128 channels, in
        // a debug build): past the 3 s short-term window's transition, the 10th and 95th
        // percentiles still fall on the two levels.
        let samples = Exact.signal(channels: channels, rate: rate, seconds: 16) { frame, _ in
            let level = frame < 8 * rate ? -20.0 : -30.0
            return pow(10, level / 20) * sin(2 * Double.pi * 1_000 * Double(frame) / Double(rate))
        }
        for (_, summary) in try Self.expectAgreement(samples, channels: channels, rate: rate, seed: 42) {
            let range = try #require(summary.rangeLU)
            #expect(abs(range - 10) <= 0.1, "\(range) LU")
        }
    }
}

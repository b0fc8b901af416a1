// LoudnessMeter's libebur128 cheap paths against libebur128 asked directly: momentary and
// short-term from a ring of 100 ms energies, true peak only where it can change the answer.

import Foundation
import Testing
import TestSupport

@testable import Codec

/// Seeded signals: TestSupport's SplitMix64, the same every run.
typealias SeededGenerator = SplitMix64

extension SplitMix64 {
    init(state: UInt64) { self.init(seed: state) }

    /// Standard normal (Box–Muller).
    mutating func gaussian() -> Double {
        let u = Double.random(in: Double.leastNonzeroMagnitude..<1, using: &self)
        let v = Double.random(in: 0..<1, using: &self)
        return (-2 * log(u)).squareRoot() * cos(2 * Double.pi * v)
    }
}

@Suite("Loudness: the cheap paths read what libebur128 reads")
struct LoudnessExactnessTests {
    /// Interleaved signal of `channels` channels, `seconds` long, each channel built by `sample`.
    static func signal(
        channels: Int, rate: Int, seconds: Double, _ sample: (_ frame: Int, _ channel: Int) -> Double
    ) -> [Float] {
        let frames = Int(seconds * Double(rate))
        var samples = [Float](repeating: 0, count: frames * channels)
        for frame in 0..<frames {
            for channel in 0..<channels { samples[frame * channels + channel] = Float(sample(frame, channel)) }
        }
        return samples
    }

    /// Feeds `samples` to a fast meter and a direct (plain libebur128) one in the same random
    /// chunks; after each chunk `check` sees both. Chunks straddle the 100 ms and 10 ms
    /// boundaries; every few chunks one ends exactly on a 100 ms boundary.
    static func feedBoth(
        _ samples: [Float], channels: Int, rate: Int, truePeak: Bool = true, seed: UInt64,
        engine: LoudnessEngine = .libebur128,
        check: (_ fast: LoudnessMeter, _ direct: LoudnessMeter) throws -> Void = { _, _ in }
    ) throws -> (fast: LoudnessMeter, direct: LoudnessMeter) {
        let fast = try LoudnessMeter(channels: channels, sampleRate: rate, truePeak: truePeak, engine: engine)
        let direct = try LoudnessMeter(channels: channels, sampleRate: rate, truePeak: truePeak, direct: true)
        var generator = SeededGenerator(state: seed)
        let frames = samples.count / channels
        let hundred = rate / 10
        var done = 0
        try samples.withUnsafeBufferPointer { buffer in
            while done < frames {
                var count = Int.random(in: 1...(rate / 7), using: &generator)
                if Int.random(in: 0..<3, using: &generator) == 0 { count = hundred - done % hundred }
                count = min(count, frames - done)
                let chunk = UnsafeBufferPointer(rebasing: buffer[(done * channels)..<((done + count) * channels)])
                fast.add(chunk)
                direct.add(chunk)
                done += count
                try check(fast, direct)
            }
        }
        return (fast, direct)
    }

    @Test(
        "momentary and short-term at every 100 ms boundary equal libebur128's own to 1e-9 LU (noise bursts, sines, silence, odd chunks)",
        arguments: [(48_000, 2), (44_100, 5), (96_000, 1), (22_050, 3), (11_025, 2)])
    func windows(rate: Int, channels: Int) throws {
        var generator = SeededGenerator(state: 17)
        let gains = (0..<20).map { _ in Double.random(in: -40 ... -3, using: &generator) }
        let samples = Self.signal(channels: channels, rate: rate, seconds: 8) { frame, channel in
            let second = Double(frame) / Double(rate)
            let segment = Int(second * 2.5)  // 400 ms pieces, each its own kind and level
            let gain = pow(10, gains[segment % gains.count] / 20)
            switch segment % 4 {
            case 0: return gain * generator.gaussian() * 0.3
            case 1: return gain * sin(2 * Double.pi * Double(300 + 500 * channel) * second)
            case 2: return 0
            default: return frame % 4_801 < 2_400 ? gain * generator.gaussian() * 0.3 : 0
            }
        }
        var compared = (momentary: 0, shortTerm: 0)
        let (fast, direct) = try Self.feedBoth(samples, channels: channels, rate: rate, seed: 3) { fast, direct in
            guard fast.framesAdded % (rate / 10) == 0 else { return }
            #expect((fast.momentaryLUFS == nil) == (direct.momentaryLUFS == nil), "at frame \(fast.framesAdded)")
            #expect((fast.shortTermLUFS == nil) == (direct.shortTermLUFS == nil), "at frame \(fast.framesAdded)")
            if let a = fast.momentaryLUFS, let b = direct.momentaryLUFS {
                #expect(abs(a - b) <= 1e-9, "momentary \(a) vs \(b) at frame \(fast.framesAdded)")
                compared.momentary += 1
            }
            if let a = fast.shortTermLUFS, let b = direct.shortTermLUFS {
                #expect(abs(a - b) <= 1e-9, "short-term \(a) vs \(b) at frame \(fast.framesAdded)")
                compared.shortTerm += 1
            }
        }
        #expect(compared.momentary >= 15 && compared.shortTerm >= 10, "\(compared)")
        #expect(fast.summary == direct.summary, "\(fast.summary) vs \(direct.summary)")
    }

    /// Gated and ungated true peaks, per channel, as the same Doubles; the summary too, read in
    /// the middle of blocks as a segment's close reads it.
    static func expectSameTruePeak(
        _ samples: [Float], channels: Int, rate: Int, seed: UInt64, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> LoudnessMeter {
        var reads = 0
        let (fast, direct) = try feedBoth(samples, channels: channels, rate: rate, seed: seed) { fast, direct in
            reads += 1
            if reads % 7 == 0 {
                #expect(fast.channelTruePeaks == direct.channelTruePeaks, sourceLocation: sourceLocation)
            }
        }
        let gated = fast.channelTruePeaks
        #expect(gated.count == channels, sourceLocation: sourceLocation)
        #expect(
            gated == direct.channelTruePeaks, "gated \(gated) ungated \(direct.channelTruePeaks)",
            sourceLocation: sourceLocation)
        #expect(fast.summary == direct.summary, sourceLocation: sourceLocation)
        return fast
    }

    @Test(
        "gated true peak == libebur128's ungated true peak exactly, every kind of signal",
        arguments: [8_000, 22_050, 44_100, 48_000, 96_000, 192_000])
    func truePeakExact(rate: Int) throws {
        let r = Double(rate)
        var generator = SeededGenerator(state: UInt64(rate))
        // Gaussian noise, 2 channels of different levels.
        _ = try Self.expectSameTruePeak(
            Self.signal(channels: 2, rate: rate, seconds: 1.5) { _, channel in
                generator.gaussian() * (channel == 0 ? 0.25 : 0.05)
            }, channels: 2, rate: rate, seed: 1)
        // Pink-ish noise: a leaky integrator of white noise, 1 channel.
        var pink = 0.0
        _ = try Self.expectSameTruePeak(
            Self.signal(channels: 1, rate: rate, seconds: 1.5) { _, _ in
                pink = 0.99 * pink + 0.05 * generator.gaussian()
                return pink
            }, channels: 1, rate: rate, seed: 2)
        // A -1 dBFS sine at fs/4 with a phase: its peaks fall between samples.
        _ = try Self.expectSameTruePeak(
            Self.signal(channels: 1, rate: rate, seconds: 1) { frame, _ in
                pow(10, -1.0 / 20) * sin(Double.pi / 2 * Double(frame) + 0.3)
            }, channels: 1, rate: rate, seed: 3)
        // A clipped square wave (overshoot between samples), 8 channels at different frequencies.
        _ = try Self.expectSameTruePeak(
            Self.signal(channels: 8, rate: rate, seconds: 1) { frame, channel in
                let value = 1.5 * sin(2 * Double.pi * Double(440 + 1_000 * channel) * Double(frame) / r)
                return max(-0.9, min(0.9, value))
            }, channels: 8, rate: rate, seed: 4)
        // An isolated impulse after silence, and a loud part that comes late, on 32 channels.
        _ = try Self.expectSameTruePeak(
            Self.signal(channels: 32, rate: rate, seconds: 1.2) { frame, channel in
                if channel % 2 == 0 { return frame == rate / 2 + 37 * channel ? 0.7 : 0 }
                let late = frame > rate - 3_000 + channel ? 0.8 : 0.01
                return late * generator.gaussian()
            }, channels: 32, rate: rate, seed: 5)
    }

    @Test("the gate skips most blocks of noise after a loud start, and still reads the exact peak")
    func gateSkips() throws {
        var generator = SeededGenerator(state: 9)
        let rate = 48_000
        let meter = try Self.expectSameTruePeak(
            Self.signal(channels: 2, rate: rate, seconds: 4) { frame, _ in
                frame < rate / 10 ? 0.9 * sin(Double(frame) * 0.05) : 0.05 * generator.gaussian()
            }, channels: 2, rate: rate, seed: 6)
        let blocks = meter.truePeakBlocks
        let perChannel = 40 * TruePeakGate.blocksPer100ms  // 4 s
        #expect(blocks.fed + blocks.skipped == 2 * perChannel)
        #expect(blocks.skipped * 100 >= 2 * perChannel * 95, "fed \(blocks.fed) skipped \(blocks.skipped)")
        // Without a loud start nothing is known to be higher, so the gate must feed.
        let quiet = try LoudnessMeter(channels: 1, sampleRate: rate, engine: .libebur128)
        Self.signal(channels: 1, rate: rate, seconds: 0.1) { frame, _ in Double(frame) / 48_000 }
            .withUnsafeBufferPointer { quiet.add($0) }
        #expect(
            quiet.truePeakBlocks.fed == TruePeakGate.blocksPer100ms && quiet.truePeakBlocks.skipped == 0,
            "\(quiet.truePeakBlocks)")
        // The bound is measured from libebur128's interpolator: above 1, below its 49 taps' sum.
        let measured = try #require(TruePeakGate.interpolatorBound(sampleRate: rate))
        #expect(measured.bound > 1.5 && measured.bound < 2.5 && measured.history == 16, "\(measured)")
    }

    @Test(
        "a channel resuming after skipped blocks gets the skipped block's tail first: a peak across the boundary is exact",
        arguments: [44_100, 48_000])
    func resumeAcrossBoundary(rate: Int) throws {
        let boundary = 2 * rate / 10  // a 100 ms boundary is a block boundary
        var samples = [Float](repeating: 0, count: rate / 4)
        samples[100] = 0.5  // known: 0.5
        for j in 0..<12 {
            // Signs that add up at the half sample across the boundary; the block before the
            // boundary alone stays below 0.5 / B (skipped), the one after it is fed.
            samples[boundary - 1 - j] = (j % 2 == 0 ? 1 : -1) * 0.26
            samples[boundary + j] = (j % 2 == 0 ? 1 : -1) * 0.3
        }
        let meter = try Self.expectSameTruePeak(samples, channels: 1, rate: rate, seed: 8)
        let peak = try #require(meter.channelTruePeaks.first)
        #expect(peak > 0.5, "the peak is made across the boundary: \(peak)")
        #expect(meter.truePeakBlocks.skipped >= 4, "\(meter.truePeakBlocks)")
    }
}

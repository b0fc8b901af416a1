// R128Engine (LoudnessMeter's default) against libebur128 as the oracle: every reading
// within 0.01 LU and true peak within 0.05 dB, on EBU Tech 3341/3342-style cases, noise, sines,
// impulses and silence, 1–32 channels, 32–192 kHz (at 192 kHz true peak is sample peak), fed in odd chunks.

import Foundation
import Testing

@testable import Codec

@Suite("R128Engine reads what libebur128 reads")
struct R128EngineTests {
    typealias Exact = LoudnessExactnessTests

    static func decibels(_ linear: Double) -> Double { 20 * log10(linear) }

    /// Feeds `samples` to the vectorized meter and to libebur128 asked directly, in the same
    /// random chunks; compares momentary and short-term at every 100 ms boundary and everything
    /// at the end. Returns the vectorized meter and the number of window readings compared.
    @discardableResult
    static func expectAgreement(
        _ samples: [Float], channels: Int, rate: Int, seed: UInt64, rangeTolerance: Double = 0.01,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (meter: LoudnessMeter, compared: Int) {
        var compared = 0
        let hundred = (rate + 5) / 10
        let (fast, direct) = try Exact.feedBoth(
            samples, channels: channels, rate: rate, seed: seed, engine: .vectorized
        ) { fast, direct in
            guard fast.framesAdded % hundred == 0 else { return }
            let pairs = [(fast.momentaryLUFS, direct.momentaryLUFS), (fast.shortTermLUFS, direct.shortTermLUFS)]
            for (a, b) in pairs {
                #expect((a == nil) == (b == nil), "at frame \(fast.framesAdded)", sourceLocation: sourceLocation)
                // Below -70 LUFS nothing is gated in; both read, but relative error grows with
                // the Float filter's rounding floor, irrelevant there.
                if let a, let b, b > -70 {
                    #expect(
                        abs(a - b) <= 0.01, "\(a) vs \(b) at frame \(fast.framesAdded)", sourceLocation: sourceLocation)
                    compared += 1
                }
            }
        }
        let mine = fast.summary
        let theirs = direct.summary
        #expect((mine.integratedLUFS == nil) == (theirs.integratedLUFS == nil), sourceLocation: sourceLocation)
        if let a = mine.integratedLUFS, let b = theirs.integratedLUFS {
            #expect(abs(a - b) <= 0.01, "integrated \(a) vs \(b)", sourceLocation: sourceLocation)
        }
        if let a = mine.rangeLU, let b = theirs.rangeLU {
            #expect(abs(a - b) <= rangeTolerance, "range \(a) vs \(b)", sourceLocation: sourceLocation)
        } else {
            #expect(mine.rangeLU == nil && theirs.rangeLU == nil, sourceLocation: sourceLocation)
        }
        let peaks = fast.channelTruePeaks
        let oracle = direct.channelTruePeaks
        #expect(peaks.count == oracle.count, sourceLocation: sourceLocation)
        for (a, b) in zip(peaks, oracle) where a > 0 || b > 0 {
            #expect(
                abs(decibels(a) - decibels(b)) <= 0.05, "true peak \(decibels(a)) vs \(decibels(b)) dBTP",
                sourceLocation: sourceLocation)
        }
        return (fast, compared)
    }

    /// Noise, sines, silence and impulses in 400 ms pieces of changing level, every channel its own.
    static func mixed(channels: Int, rate: Int, seconds: Double, seed: UInt64) -> [Float] {
        var generator = SeededGenerator(state: seed)
        let gains = (0..<23).map { _ in Double.random(in: -45 ... -3, using: &generator) }
        return Exact.signal(channels: channels, rate: rate, seconds: seconds) { frame, channel in
            let second = Double(frame) / Double(rate)
            let piece = Int(second * 2.5) + channel
            let gain = pow(10, gains[piece % gains.count] / 20)
            switch piece % 5 {
            case 0: return gain * generator.gaussian() * 0.3
            case 1: return gain * sin(2 * Double.pi * Double(50 + 700 * channel) * second)
            case 2: return 0
            case 3: return frame % 997 == 0 ? gain : 0  // impulses
            default: return gain * sin(2 * Double.pi * 9_000 * second + 0.7)
            }
        }
    }

    @Test(
        "noise, sines, impulses and silence: every reading within 0.01 LU, true peak within 0.05 dB",
        arguments: [
            (48_000, 2), (44_100, 6), (96_000, 3), (32_000, 1), (192_000, 2),
        ])
    func mixedSignals(rate: Int, channels: Int) throws {
        let samples = Self.mixed(channels: channels, rate: rate, seconds: 4, seed: UInt64(rate + channels))
        let (_, compared) = try Self.expectAgreement(samples, channels: channels, rate: rate, seed: 11)
        // 4 s: a short-term reading every 100 ms once 3 s are in, besides the momentary ones.
        #expect(compared >= 12, "\(compared) window readings compared")
    }

    @Test(
        "low sines about the high-pass's 38 Hz corner, where single precision is hardest: within 0.01 LU",
        arguments: [96_000])
    func lowFrequencies(rate: Int) throws {
        let frequencies = [15.0, 25, 38, 60, 110]
        let samples = Exact.signal(channels: frequencies.count, rate: rate, seconds: 3.5) { frame, channel in
            0.3 * sin(2 * Double.pi * frequencies[channel] * Double(frame) / Double(rate))
        }
        try Self.expectAgreement(samples, channels: frequencies.count, rate: rate, seed: 17)
        for (channel, frequency) in frequencies.enumerated() {
            let one = Exact.signal(channels: 1, rate: rate, seconds: 1.5) { frame, _ in
                0.3 * sin(2 * Double.pi * frequency * Double(frame) / Double(rate))
            }
            try Self.expectAgreement(one, channels: 1, rate: rate, seed: UInt64(channel))
        }
    }

    @Test("32 channels of noise at different levels agree too", arguments: [44_100])
    func thirtyTwoChannels(rate: Int) throws {
        var generator = SeededGenerator(state: 32)
        let samples = Exact.signal(channels: 32, rate: rate, seconds: 2) { _, channel in
            generator.gaussian() * 0.02 * Double(channel + 1)
        }
        try Self.expectAgreement(samples, channels: 32, rate: rate, seed: 12)
    }

    @Test(
        "3341 case 1 on stereo and 5.1 (as recd weighs them: every channel 1): -23 dBFS 1 kHz for 6 s reads -23.0 ± 0.1 LUFS",
        arguments: [2, 6])
    func minus23(channels: Int) throws {
        let rate = 48_000
        let amplitude = pow(10, -23.0 / 20)
        let samples = Exact.signal(channels: channels, rate: rate, seconds: 6) { frame, channel in
            channel < 2 ? amplitude * sin(2 * Double.pi * 1_000 * Double(frame) / Double(rate)) : 0
        }
        let (meter, _) = try Self.expectAgreement(samples, channels: channels, rate: rate, seed: 13)
        let integrated = try #require(meter.summary.integratedLUFS)
        #expect(abs(integrated - -23) <= 0.1, "\(integrated) LUFS")
    }

    @Test("3342-style range: four level changes of a 1 kHz sine give libebur128's range (10 LU ± 0.1)")
    func loudnessRange() throws {
        let rate = 48_000
        let levels: [Double] = [-20, -30, -20, -25, -30]
        let samples = Exact.signal(channels: 1, rate: rate, seconds: 50) { frame, _ in
            let level = levels[min(levels.count - 1, frame / (10 * rate))]
            return pow(10, level / 20) * sin(2 * Double.pi * 1_000 * Double(frame) / Double(rate))
        }
        let (meter, _) = try Self.expectAgreement(samples, channels: 1, rate: rate, seed: 14)
        let range = try #require(meter.summary.rangeLU)
        #expect(abs(range - 10) <= 0.1, "\(range) LU")
    }

    @Test(
        "a sine at fs/4 with a 45° phase: true peak 3 dB above its samples, as libebur128 reads it",
        arguments: [44_100, 48_000, 96_000])
    func interSamplePeak(rate: Int) throws {
        let samples = Exact.signal(channels: 1, rate: rate, seconds: 1) { frame, _ in
            0.5 * sin(Double.pi / 2 * Double(frame) + Double.pi / 4)
        }
        let (meter, _) = try Self.expectAgreement(samples, channels: 1, rate: rate, seed: 15)
        let samplePeak = Double(samples.map { abs($0) }.max() ?? 0)
        let peak = try #require(meter.channelTruePeaks.first)
        #expect(Self.decibels(peak) - Self.decibels(samplePeak) > 2.5, "true \(peak) sample \(samplePeak)")
    }

    @Test(
        "the true-peak gate skips most quads of noise after a loud start, and none of a signal whose peaks keep rising"
    )
    func gateSkips() throws {
        var generator = SeededGenerator(state: 9)
        let rate = 48_000
        let samples = Exact.signal(channels: 2, rate: rate, seconds: 4) { frame, _ in
            frame < rate / 10 ? 0.9 * sin(Double(frame) * 0.05) : 0.05 * generator.gaussian()
        }
        let (meter, _) = try Self.expectAgreement(samples, channels: 2, rate: rate, seed: 16)
        let blocks = meter.truePeakBlocks
        #expect(blocks.fed + blocks.skipped >= 4 * rate / 4, "one half group of lanes, a block a quad of frames")
        #expect(blocks.skipped * 100 >= (blocks.fed + blocks.skipped) * 95, "\(blocks)")
        // Rising, with its peaks between its samples (fs/4 at 45°: 3 dB above them): every quad has
        // an output above everything before it, so none may be skipped but the first two, whose
        // outputs (5.5 frames behind their inputs) are still mostly the silence before the signal.
        let rising = Exact.signal(channels: 1, rate: rate, seconds: 0.1) { frame, _ in
            (0.1 + Double(frame) / 48_000) * sin(Double.pi / 2 * Double(frame) + Double.pi / 4)
        }
        let (risingMeter, _) = try Self.expectAgreement(rising, channels: 1, rate: rate, seed: 19)
        #expect(risingMeter.truePeakBlocks.skipped <= 2, "\(risingMeter.truePeakBlocks)")
    }

    @Test(
        "a steady 50 Hz tone: the range of a quad's inputs lets the gate skip most quads (their highest magnitude alone would skip none), and the peak is libebur128's"
    )
    func gateSkipsLowTone() throws {
        let rate = 48_000
        let samples = Exact.signal(channels: 2, rate: rate, seconds: 2) { frame, channel in
            0.5 * sin(2 * Double.pi * 50 * Double(frame) / Double(rate) + Double(channel))
        }
        let (meter, _) = try Self.expectAgreement(samples, channels: 2, rate: rate, seed: 18)
        let blocks = meter.truePeakBlocks
        #expect(blocks.skipped * 100 >= (blocks.fed + blocks.skipped) * 70, "\(blocks)")
    }

    @Test(
        "the true-peak bound holds for the worst inputs of any ranges, and they reach it (libebur128's taps, computed here)",
        arguments: [48_000, 96_000])
    func truePeakBound(rate: Int) {
        let interpolator = TruePeakInterpolator(sampleRate: rate, truePeak: true)
        let factor = interpolator.factor
        let taps = 48 / factor
        #expect(interpolator.near == (taps / 2 - 2)...(taps / 2 + 1), "the 4 middle taps")
        // libebur128's design: a 49-tap Hann-windowed sinc, tap j in phase j % factor.
        let design = (0..<49).map { j -> Double in
            let m = Double(j) - 24
            guard m != 0 else { return 1 }
            let x = m * Double.pi / Double(factor)
            return sin(x) / x * 0.5 * (1 - cos(2 * Double.pi * Double(j) / 48))
        }
        // The middle taps' inputs in near, all inputs in all; symmetric about near's middle (the
        // bound is reached) or not (it only holds).
        let cases: [(near: ClosedRange<Double>, all: ClosedRange<Double>, reached: Bool)] = [
            (-0.5...0.5, -0.5...0.5, true), (0.2...0.6, -0.2...1, true), (0.7...0.7, 0.7...0.7, true),
            (-0.9...(-0.8), -1...(-0.7), true), (0.1...0.3, -1...0.3, false), (-0.3...0.8, -0.3...0.9, false),
        ]
        for (near, all, reached) in cases {
            let middle = (near.lowerBound + near.upperBound) / 2
            let bound =
                Double(interpolator.level) * abs(middle) + Double(interpolator.nearSpread)
                * (near.upperBound - near.lowerBound) + Double(interpolator.farSpread)
                * max(all.upperBound - middle, middle - all.lowerBound)
            var worst = 0.0
            for phase in 1..<factor {
                let c = stride(from: phase, to: 49, by: factor).map { design[$0] }
                // The inputs that make this phase's output highest, and lowest.
                func output(highest: Bool) -> Double {
                    c.indices.reduce(0) { sum, tap in
                        let range = interpolator.near.contains(tap) ? near : all
                        return sum + c[tap] * ((c[tap] > 0) == highest ? range.upperBound : range.lowerBound)
                    }
                }
                worst = max(worst, abs(output(highest: true)), abs(output(highest: false)))
            }
            #expect(worst <= bound, "\(near), \(all): an output of \(worst) above the bound \(bound)")
            if reached {
                #expect(worst * (1 + 1e-3) >= bound, "\(near), \(all): the bound \(bound) is loose (\(worst))")
            }
        }
    }

    @Test("integers read as the same Floats; silence reads nil; a partial lane group is exact")
    func integersAndSilence() throws {
        let rate = 48_000
        var generator = SeededGenerator(state: 5)
        let integers = (0..<(rate * 3 * 3)).map { _ in Int32(generator.gaussian() * 3_000) }
        let floats = integers.map { Float($0) / 32_768 }
        let a = try LoudnessMeter(channels: 3, sampleRate: rate)
        let b = try LoudnessMeter(channels: 3, sampleRate: rate)
        integers.withUnsafeBufferPointer { a.add(integers: $0.baseAddress!, frames: rate * 3, bitsPerSample: 16) }
        floats.withUnsafeBufferPointer { b.add($0) }
        #expect(a.summary == b.summary && a.shortTermLUFS == b.shortTermLUFS, "\(a.summary) vs \(b.summary)")
        let silent = try LoudnessMeter(channels: 5, sampleRate: rate)
        [Float](repeating: 0, count: 5 * rate * 4).withUnsafeBufferPointer { silent.add($0) }
        #expect(silent.summary == LoudnessSummary(integratedLUFS: nil, rangeLU: nil, truePeakDBTP: nil))
        #expect(silent.momentaryLUFS == nil && silent.shortTermLUFS == nil)
    }
}

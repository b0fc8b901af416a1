// What voiceChat does besides the echo: its noise suppression takes a steady noise floor down
// and leaves a talker alone, its high-pass takes off hum and DC below the voice band. Measured
// offline on the real VoiceProcessor (no JACK), on both chains: SpeexDSP's (what sessions use)
// and WebRTC's module's (the chain before, for comparison).

import Glibc
import TestSupport
import Testing
@testable import VoiceProcessing

@Suite("voiceChat's noise suppression and high-pass: steady noise down, hum off, the talker kept")
struct NoiseAndRumbleTests {
    static let rate = 48_000
    static let webRTCChain: VoiceProcessingFeatures = [.echoCancellation, .noiseSuppression, .highPassFilter]

    /// A talker (speech-like noise, about −25 dBFS RMS) from 6 s on over steady white noise 30 dB
    /// below it, 60 Hz hum and a DC offset; no far end. Returns the capture, the talker alone,
    /// the noise alone, and the processed output aligned with the capture.
    static func run(_ features: VoiceProcessingFeatures) throws -> (
        capture: [Float], talker: [Float], hum: [Float], output: [Float]
    ) {
        let total = 12 * rate
        let speech = speechLikeNoise(frames: total, sampleRate: Double(rate), seed: 11)
        var random = SplitMix64(seed: 5)
        var talker = [Float](repeating: 0, count: total)
        for index in (6 * rate)..<total { talker[index] = speech[index] }
        let hum = (0..<total).map { Float(0.03 * sin(2 * Double.pi * 60 * Double($0) / Double(rate))) + 0.01 }
        let capture = (0..<total).map { index in
            let white = (Float(random.below(2_001)) - 1_000) / 1_000 * 0.0027  // −56 dBFS RMS
            return talker[index] + white + hum[index]
        }
        let silence = [Float](repeating: 0, count: total)
        let run = try DoubleTalkSuite.voiceProcessor(features)(capture, silence, 0.03, 256)
        return (capture, talker, hum, run.output)
    }

    /// The part of `signal` over `range` that is a `frequency` sine (its amplitude), and its mean.
    static func component(_ signal: [Float], frequency: Double, _ range: Range<Int>) -> (sine: Double, mean: Double) {
        var (sine, cosine, sum) = (0.0, 0.0, 0.0)
        for index in range {
            let phase = 2 * Double.pi * frequency * Double(index) / Double(rate)
            sine += Double(signal[index]) * sin(phase)
            cosine += Double(signal[index]) * cos(phase)
            sum += Double(signal[index])
        }
        let count = Double(range.count)
        return (2 * (sine * sine + cosine * cosine).squareRoot() / count, sum / count)
    }

    /// How the noise floor alone changed, 3-6 s (after the suppressor has learnt it), in dB, with
    /// the hum and the DC offset taken out of both sides (what the high-pass does to them is
    /// `humAndDCOff`'s).
    static func floorChange(capture: [Float], hum: [Float], output: [Float]) -> Double {
        let floor = (3 * rate)..<(6 * rate)
        var floorIn = 0.0
        var floorOut = 0.0
        for index in floor {
            let noise = Double(capture[index] - hum[index])
            floorIn += noise * noise
            floorOut += Double(output[index]) * Double(output[index])
        }
        let residual = component(output, frequency: 60, floor)
        floorOut -= (residual.sine * residual.sine / 2 + residual.mean * residual.mean) * Double(floor.count)
        return decibels(power: max(floorOut, 1e-20) / floorIn)
    }

    @Test(
        "noise suppression takes a steady floor down by 10 dB or more; the talker stays within 3 dB",
        arguments: [VoiceProcessingFeatures.voiceChat, webRTCChain])
    func steadyNoiseDown(features: VoiceProcessingFeatures) throws {
        let (capture, talker, hum, output) = try Self.run(features)
        let noiseChange = Self.floorChange(capture: capture, hum: hum, output: output)
        let speaking = (8 * Self.rate)..<(12 * Self.rate)
        let talkerChange = DoubleTalkSuite.projectionGain(output, talker, speaking)
        print(
            "noise suppression \(features.rawValue): steady noise \(noiseChange) dB, the talker \(talkerChange) dB")
        #expect(noiseChange <= -10, "the steady noise changed by \(noiseChange) dB only")
        #expect(abs(talkerChange) <= 3, "the talker changed by \(talkerChange) dB")
    }

    @Test(
        "the high-pass takes 60 Hz hum down by 10 dB or more and the DC offset by 30 dB",
        arguments: [VoiceProcessingFeatures.voiceChat, webRTCChain])
    func humAndDCOff(features: VoiceProcessingFeatures) throws {
        let (capture, _, _, output) = try Self.run(features)
        let judged = (2 * Self.rate)..<(12 * Self.rate)
        let before = Self.component(capture, frequency: 60, judged)
        let after = Self.component(output, frequency: 60, judged)
        let humChange = decibels(power: after.sine * after.sine / (before.sine * before.sine))
        let dcChange = decibels(power: after.mean * after.mean / (before.mean * before.mean))
        print("high-pass \(features.rawValue): 60 Hz hum \(humChange) dB, DC \(dcChange) dB")
        #expect(humChange <= -10, "the hum changed by \(humChange) dB only")
        #expect(dcChange <= -30, "the DC offset changed by \(dcChange) dB only")
    }

    /// Without `.noiseSuppression` SpeexDSP's preprocessor still runs (the echo suppressor's
    /// gains need it) but must leave steady noise alone: the denoising is the feature's.
    @Test("echo cancellation alone leaves steady noise within 1 dB")
    func echoCancellationLeavesNoise() throws {
        let (capture, _, hum, output) = try Self.run(.echoCancellationOnly)
        let change = Self.floorChange(capture: capture, hum: hum, output: output)
        print("echo cancellation alone: steady noise \(change) dB")
        #expect(abs(change) <= 1, "the noise changed by \(change) dB")
    }
}

/// recd's own filter, alone: the hum test above passes on SpeexDSP's denoiser too (steady hum
/// is steady noise to it), so the filter's response is checked here against the second-order
/// Butterworth's, |H|² = f⁴ / (f⁴ + 80⁴).
@Suite("HighPassFilter: an 80 Hz second-order Butterworth")
struct HighPassFilterTests {
    @Test("the response is the Butterworth's within 0.3 dB from 20 Hz to 10 kHz", arguments: [20.0, 30, 60, 80, 160, 1_000, 10_000])
    func response(frequency: Double) {
        let rate = 48_000
        var filter = HighPassFilter(sampleRate: rate)
        let frames = rate * 2
        var samples = (0..<frames).map { Float(0.5 * sin(2 * Double.pi * frequency * Double($0) / Double(rate))) }
        samples.withUnsafeMutableBufferPointer { buffer in
            for start in stride(from: 0, to: frames, by: 1_024) {
                filter.process(buffer.baseAddress! + start, count: min(1_024, frames - start))
            }
        }
        // The second second: the filter has settled.
        let judged = rate..<frames
        let measured = decibels(power: energy(samples, judged) / (0.125 * Double(judged.count)))
        let f4 = pow(frequency, 4)
        let expected = decibels(power: f4 / (f4 + pow(80, 4)))
        print("high-pass at \(frequency) Hz: \(measured) dB (Butterworth \(expected) dB)")
        #expect(abs(measured - expected) <= 0.3, "\(measured) dB at \(frequency) Hz, not \(expected)")
    }

    @Test("silence after sound leaves no subnormal state behind")
    func flushesSubnormals() {
        var filter = HighPassFilter(sampleRate: 48_000)
        var sound = [Float](repeating: 0.5, count: 256)
        var silence = [Float](repeating: 0, count: 48_000)
        sound.withUnsafeMutableBufferPointer { filter.process($0.baseAddress!, count: 256) }
        silence.withUnsafeMutableBufferPointer { buffer in
            for start in stride(from: 0, to: 48_000, by: 1_000) { filter.process(buffer.baseAddress! + start, count: 1_000) }
        }
        let last = silence[47_999]
        #expect(last == 0 || abs(last) >= Float.leastNormalMagnitude, "the output ends at \(last)")
    }
}

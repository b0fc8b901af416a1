// libebur128 through LoudnessMeter, against the EBU Tech 3341 cases a test can generate.

import AudioTestSupport
import Foundation
import Testing

@testable import Codec

@Suite("Loudness (EBU R128) against EBU Tech 3341")
struct LoudnessTests {
    /// `seconds` of a stereo (or `channels`) sine at `dBFS` peak per channel, 48 kHz, interleaved.
    func tone(frequency: Double, dBFS: Double, seconds: Double, channels: Int = 2, phase: Double = 0) -> [Float] {
        let rate = 48_000.0
        let amplitude = pow(10, dBFS / 20)
        let frames = Int(seconds * rate)
        var samples = [Float](repeating: 0, count: frames * channels)
        for frame in 0..<frames {
            let value = Float(amplitude * sin(2 * Double.pi * frequency * Double(frame) / rate + phase))
            for channel in 0..<channels { samples[frame * channels + channel] = value }
        }
        return samples
    }

    @Test("3341 case 1: a stereo 1 kHz sine at -23 dBFS per channel reads -23.0 ± 0.1 LUFS, range 0 LU")
    func minus23() throws {
        let meter = try LoudnessMeter(channels: 2, sampleRate: 48_000)
        tone(frequency: 1_000, dBFS: -23, seconds: 20).withUnsafeBufferPointer { meter.add($0) }
        let summary = meter.summary
        let integrated = try #require(summary.integratedLUFS)
        #expect(abs(integrated - -23) <= 0.1, "\(integrated) LUFS")
        let range = try #require(summary.rangeLU)
        #expect(range <= 0.1, "\(range) LU")
        let momentary = try #require(meter.momentaryLUFS)
        let shortTerm = try #require(meter.shortTermLUFS)
        #expect(abs(momentary - -23) <= 0.1 && abs(shortTerm - -23) <= 0.1, "M \(momentary) S \(shortTerm)")
        let peak = try #require(summary.truePeakDBTP)
        #expect(abs(peak - -23) <= 0.1, "\(peak) dBTP")
    }

    @Test("3341 case 2: -33 dBFS per channel reads -33.0 ± 0.1 LUFS")
    func minus33() throws {
        let meter = try LoudnessMeter(channels: 2, sampleRate: 48_000)
        tone(frequency: 1_000, dBFS: -33, seconds: 20).withUnsafeBufferPointer { meter.add($0) }
        let integrated = try #require(meter.summary.integratedLUFS)
        #expect(abs(integrated - -33) <= 0.1, "\(integrated) LUFS")
    }

    @Test("3341 case 3 shape: 10 s at -36, 60 s at -23, 10 s at -36 dBFS gate to -23.0 ± 0.1 LUFS")
    func relativeGate() throws {
        let meter = try LoudnessMeter(channels: 2, sampleRate: 48_000, truePeak: false)
        let signal =
            tone(frequency: 1_000, dBFS: -36, seconds: 10) + tone(frequency: 1_000, dBFS: -23, seconds: 60)
            + tone(frequency: 1_000, dBFS: -36, seconds: 10)
        signal.withUnsafeBufferPointer { meter.add($0) }
        let integrated = try #require(meter.summary.integratedLUFS)
        #expect(abs(integrated - -23) <= 0.1, "\(integrated) LUFS")
        #expect(meter.summary.truePeakDBTP == nil)
    }

    @Test("true peak between samples: a 12 kHz sine at 45° peaks 3 dB above its samples, at -6.0 ± 0.2 dBTP")
    func truePeakBetweenSamples() throws {
        let meter = try LoudnessMeter(channels: 1, sampleRate: 48_000)
        let signal = tone(frequency: 12_000, dBFS: -6, seconds: 1, channels: 1, phase: Double.pi / 4)
        let samplePeak = signal.map { abs($0) }.max() ?? 0
        #expect(abs(decibels(Double(samplePeak)) - -9.01) < 0.05)
        signal.withUnsafeBufferPointer { meter.add($0) }
        let peak = try #require(meter.summary.truePeakDBTP)
        #expect(abs(peak - -6) <= 0.2, "\(peak) dBTP")
    }

    @Test("channels taken from a wider frame measure as the same channels alone; silence reads nil")
    func strideAndSilence() throws {
        let pair = tone(frequency: 1_000, dBFS: -23, seconds: 5)
        var wide = [Float](repeating: 0, count: pair.count / 2 * 4)
        for frame in 0..<pair.count / 2 {
            wide[frame * 4 + 1] = pair[frame * 2]
            wide[frame * 4 + 2] = pair[frame * 2 + 1]
        }
        let meter = try LoudnessMeter(channels: 2, sampleRate: 48_000)
        wide.withUnsafeBufferPointer {
            meter.add(interleaved: $0.baseAddress!, frames: pair.count / 2, stride: 4, firstChannel: 1)
        }
        let integrated = try #require(meter.summary.integratedLUFS)
        #expect(abs(integrated - -23) <= 0.1, "\(integrated) LUFS")
        let silent = try LoudnessMeter(channels: 2, sampleRate: 48_000)
        [Float](repeating: 0, count: 96_000).withUnsafeBufferPointer { silent.add($0) }
        #expect(silent.summary == LoudnessSummary(integratedLUFS: nil, rangeLU: nil, truePeakDBTP: nil))
        #expect(silent.momentaryLUFS == nil)
        // A window's reading comes once the window is full.
        let early = try LoudnessMeter(channels: 2, sampleRate: 48_000)
        tone(frequency: 1_000, dBFS: -23, seconds: 2).withUnsafeBufferPointer { early.add($0) }
        #expect(early.momentaryLUFS != nil && early.shortTermLUFS == nil)
        #expect(throws: MediaError.self) { try LoudnessMeter(channels: 0, sampleRate: 48_000) }
    }
}

// libsoxr through Resampler: rate changes keep a tone, downsampling to HFP rates band-limits.

import AudioTestSupport
import Testing

@testable import Codec

@Suite("Resampling and HFP band-limiting")
struct ResamplerTests {
    @Test("44.1 kHz → 48 kHz keeps a sine's frequency and amplitude (±0.1 dB)")
    func upsampleKeepsTone() throws {
        let resampler = try Resampler(inputRate: 44_100, outputRate: 48_000, channels: 2)
        let input = sine(
            frequency: 997, sampleRate: 44_100, frames: 2 * 44_100, channels: 2, amplitude: 0.5)
        let output = try resampler.process(input) + resampler.flush()
        let frames = output.count / 2
        #expect(abs(frames - 96_000) <= 2, "\(frames) frames out")

        for c in 0..<2 {
            let samples = channel(output, c, of: 2)
            // One second from the middle: exactly 997 cycles at 48 kHz.
            let window = 24_000..<72_000
            let level = decibels(amplitude(of: 997, in: samples, range: window, sampleRate: 48_000))
            #expect(abs(level - decibels(0.5)) <= 0.1, "997 Hz at \(level) dBFS")
            // The frequency: 997 cycles make 1994 zero crossings in that second.
            var crossings = 0
            for index in window.dropFirst() where (samples[index - 1] < 0) != (samples[index] < 0) {
                crossings += 1
            }
            #expect(abs(crossings - 1994) <= 1, "\(crossings) zero crossings")
            // Nothing of the tone leaks to a neighbouring frequency.
            let neighbour = amplitude(of: 1_010, in: samples, range: window, sampleRate: 48_000)
            #expect(decibels(neighbour) < -60)
        }
    }

    /// 48 kHz → `linkRate`: a 1 kHz tone passes within ±0.5 dB; a tone above the new Nyquist
    /// frequency is removed, not folded back to `aliasFrequency` (< -60 dBFS there).
    func checkBandLimit(linkRate: Int, highTone: Double, aliasFrequency: Double) throws {
        let resampler = try Resampler.forHFPCapture(jackRate: 48_000, linkRate: linkRate)
        let low = sine(frequency: 1000, sampleRate: 48_000, frames: 48_000, amplitude: 0.5)
        let high = sine(frequency: highTone, sampleRate: 48_000, frames: 48_000, amplitude: 0.5)
        let mix = zip(low, high).map { $0 + $1 }
        let output = try resampler.process(mix) + resampler.flush()
        #expect(abs(output.count - linkRate) <= 2)

        // The middle three quarters: a whole number of cycles of both frequencies.
        let window = (linkRate / 8)..<(linkRate / 8 + linkRate * 3 / 4)
        let rate = Double(linkRate)
        let pass = decibels(amplitude(of: 1000, in: output, range: window, sampleRate: rate))
        let alias = decibels(
            amplitude(of: aliasFrequency, in: output, range: window, sampleRate: rate))
        #expect(abs(pass - decibels(0.5)) <= 0.5, "1 kHz at \(pass) dBFS")
        #expect(alias < -60, "\(highTone) Hz folds to \(aliasFrequency) Hz at \(alias) dBFS")

        // Without a filter the same tone would alias at full strength: the probe can see it.
        var naive: [Float] = []
        for index in stride(from: 0, to: mix.count, by: 48_000 / linkRate) {
            naive.append(mix[index])
        }
        let naiveAlias = decibels(
            amplitude(of: aliasFrequency, in: naive, range: window, sampleRate: rate))
        #expect(naiveAlias > -7, "the probe sees an unfiltered alias at \(naiveAlias) dBFS")
    }

    @Test("48 kHz → 16 kHz (msbc): 1 kHz passes, 12 kHz rejected by more than 60 dB")
    func msbcBandLimit() throws {
        try checkBandLimit(linkRate: 16_000, highTone: 12_000, aliasFrequency: 4_000)
    }

    @Test("48 kHz → 8 kHz (cvsd): 1 kHz passes, 6 kHz rejected by more than 60 dB")
    func cvsdBandLimit() throws {
        try checkBandLimit(linkRate: 8_000, highTone: 6_000, aliasFrequency: 2_000)
    }

    @Test("latency is reported in seconds, and very high quality costs more of it")
    func latency() throws {
        let high = try Resampler(inputRate: 48_000, outputRate: 16_000, channels: 1)
        let veryHigh = try Resampler(
            inputRate: 48_000, outputRate: 16_000, channels: 1, quality: .veryHigh)
        let input = [Float](repeating: 0, count: 4_800)
        _ = try high.process(input)
        _ = try veryHigh.process(input)
        #expect(high.latencySeconds > 0 && high.latencySeconds < 0.05, "\(high.latencySeconds)")
        #expect(veryHigh.latencySeconds > high.latencySeconds)
        #expect(high.latencySeconds == high.delayFrames / 16_000)
    }

    @Test("bad rates and HFP link rates are refused")
    func refusals() {
        #expect(
            mediaError { try Resampler(inputRate: 0, outputRate: 48_000, channels: 1) }?.kind
                == .invalidArgument)
        #expect(
            mediaError { try Resampler.forHFPCapture(jackRate: 48_000, linkRate: 24_000) }?
                .kind == .invalidArgument)
    }
}

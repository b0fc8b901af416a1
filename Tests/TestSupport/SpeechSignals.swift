// Signals for measuring echo cancellation, shared by the offline test of the voice processor
// and the end-to-end one through recd: speech-like noise, energies and decibels.

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Speech-like noise: noise shaped to speech's spectrum (a high-pass near 150 Hz and a roll-off
/// above 1 kHz) in syllables of 80–300 ms with short gaps and now and then a pause between
/// phrases, at about -20 dBFS RMS while it sounds. Deterministic for a seed.
public func speechLikeNoise(frames: Int, sampleRate: Double, seed: UInt64) -> [Float] {
    var random = SplitMix64(seed: seed)
    var result = [Float](repeating: 0, count: frames)
    // One-pole sections: the high-pass removes what is below the voice, the low-pass tilts the
    // spectrum down like speech's.
    let highPass = exp(-2 * Double.pi * 150 / sampleRate)
    let lowPass = exp(-2 * Double.pi * 1_000 / sampleRate)
    var previousInput = 0.0
    var highPassed = 0.0
    var lowPassed = 0.0
    var index = 0
    while index < frames {
        let syllable = Int(sampleRate * (0.08 + 0.22 * Double(random.below(1_000)) / 1_000))
        let gap = Int(sampleRate * (random.chance(15) ? 0.4 : 0.03 + 0.12 * Double(random.below(1_000)) / 1_000))
        let loudness = 0.6 + 0.8 * Double(random.below(1_000)) / 1_000
        for offset in 0..<syllable where index + offset < frames {
            let white = Double(Int64(bitPattern: random.next()) >> 11) / Double(1 << 52)
            highPassed = highPass * (highPassed + white - previousInput)
            previousInput = white
            lowPassed = (1 - lowPass) * highPassed + lowPass * lowPassed
            // A raised-cosine envelope: syllables start and end softly.
            let envelope = 0.5 - 0.5 * cos(2 * Double.pi * Double(offset) / Double(syllable))
            result[index + offset] = Float(0.9 * loudness * envelope * lowPassed)
        }
        index += syllable + gap
    }
    return result
}

/// Energy of `signal[range]` (sum of squares).
public func energy(_ signal: [Float], _ range: Range<Int>) -> Double {
    signal[range].reduce(0) { $0 + Double($1) * Double($1) }
}

public func decibels(power ratio: Double) -> Double { 10 * log10(max(ratio, 1e-20)) }

// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// The signal generators of `play`. `Generator.make` and `deallocate` are the main thread's
// (before jack_activate, after jack_deactivate); everything else is the process thread's.
// Sines use a polynomial here rather than libm's sin: the `@_noLocks` checker accepts only
// calls it can see through or that the shim vouches for.

/// One sine or square oscillator; the phase is in turns, in [0, 1).
struct Oscillator {
    var phase: Double = 0
    /// Frequency / sample rate.
    let increment: Double

    @_noLocks
    mutating func advance() {
        phase += increment
        if phase >= 1 { phase -= 1 }
    }
}

/// Paul Kellet's "refined" pink filter on white noise from a xorshift64* generator.
struct PinkFilter {
    var b0 = 0.0, b1 = 0.0, b2 = 0.0, b3 = 0.0, b4 = 0.0, b5 = 0.0, b6 = 0.0
    /// xorshift64* state; never zero.
    var random: UInt64

    /// Uniform white noise in [-1, 1).
    @_noLocks
    mutating func white() -> Double {
        random ^= random >> 12
        random ^= random << 25
        random ^= random >> 27
        let bits = (random &* 0x2545_F491_4F6C_DD1D) >> 11  // 53 random bits
        return Double(bits) * 0x1p-52 - 1
    }

    /// The next pink sample for white input `white` (unscaled: RMS ≈ `Generator.pinkRMS`).
    @_noLocks
    mutating func filter(_ white: Double) -> Double {
        b0 = 0.99886 * b0 + white * 0.0555179
        b1 = 0.99332 * b1 + white * 0.0750759
        b2 = 0.96900 * b2 + white * 0.1538520
        b3 = 0.86650 * b3 + white * 0.3104856
        b4 = 0.55000 * b4 + white * 0.5329522
        b5 = -0.7616 * b5 - white * 0.0168980
        let pink = b0 + b1 + b2 + b3 + b4 + b5 + b6 + white * 0.5362
        b6 = white * 0.115926
        return pink
    }
}

/// The counter signal: k = (7n + 1013c) mod 65536, sample = (k - 32768) / 32768.
///
/// Every value is a multiple of 2⁻¹⁵ in [-1, 1), so float32, 24-bit and 16-bit PCM hold it
/// exactly; 7 is odd, so n mod 65536 is recoverable from one sample
/// (n = 28087 (32768 v + 32768 - 1013 c) mod 65536), and the channel offset 1013 makes
/// swapped channels show. The help prints the same formula for scripts.
@_noLocks
@inline(__always)
func counterSample(frame: Int, channel: Int) -> Float {
    let code = (frame &* 7 &+ channel &* 1013) & 0xFFFF
    return Float(code - 32768) * 0x1p-15
}

/// sin(2π · turns) for turns in [0, 1], to about 1e-13: the nearest quadrant, then
/// Taylor polynomials on [-π/4, π/4].
@_noLocks
func sineOfTurns(_ turns: Double) -> Double {
    let quarters = turns * 4
    // Truncation is rounding down here (the operand is positive); `rounded(.down)` would
    // touch FloatingPointRoundingRule's metadata, which the checker rejects.
    let quadrant = Int(quarters + 0.5)
    let x = (quarters - Double(quadrant)) * (Double.pi / 2)
    let x2 = x * x
    let sine =
        x
        * (1 - x2 / 6
            * (1 - x2 / 20 * (1 - x2 / 42 * (1 - x2 / 72 * (1 - x2 / 110 * (1 - x2 / 156))))))
    let cosine =
        1 - x2 / 2
        * (1 - x2 / 12
            * (1 - x2 / 30
                * (1 - x2 / 56 * (1 - x2 / 90 * (1 - x2 / 132 * (1 - x2 / 182))))))
    switch quadrant & 3 {
    case 0: return sine
    case 1: return cosine
    case 2: return -sine
    default: return -cosine
    }
}

/// A signal being played: its kind and state, in plain memory.
struct Generator {
    enum Waveform: UInt8 { case counter, sine, square, pink, silence }

    let waveform: Waveform
    /// Peak for sine/square; for pink, the scale that makes its RMS amplitude/4.
    let gain: Double
    /// Sine partials, or the one square oscillator.
    let oscillators: UnsafeMutablePointer<Oscillator>
    let oscillatorCount: Int
    /// One per channel (pink only).
    let pinkFilters: UnsafeMutablePointer<PinkFilter>
    let channelCount: Int
    /// Index n of the next frame.
    var position = 0

    /// Writes the next `count` frames to `outputs[0..<channelCount]`, from index 0.
    @_noLocks
    mutating func render(
        into outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, count: Int
    ) {
        switch waveform {
        case .counter:
            for channel in 0..<channelCount {
                let output = outputs[channel]
                for index in 0..<count {
                    output[index] = counterSample(frame: position &+ index, channel: channel)
                }
            }
        case .sine:
            let first = outputs[0]
            for index in 0..<count {
                var sum = 0.0
                for partial in 0..<oscillatorCount {
                    sum += sineOfTurns(oscillators[partial].phase)
                    oscillators[partial].advance()
                }
                first[index] = Float(sum * gain)
            }
            copyFirstChannel(outputs, count: count)
        case .square:
            let first = outputs[0]
            for index in 0..<count {
                first[index] = Float(oscillators[0].phase < 0.5 ? gain : -gain)
                oscillators[0].advance()
            }
            copyFirstChannel(outputs, count: count)
        case .pink:
            for channel in 0..<channelCount {
                let output = outputs[channel]
                for index in 0..<count {
                    let white = pinkFilters[channel].white()
                    output[index] = Float(pinkFilters[channel].filter(white) * gain)
                }
            }
        case .silence:
            for channel in 0..<channelCount { clear(outputs[channel], from: 0, to: count) }
        }
        position += count
    }

    @_noLocks
    private func copyFirstChannel(
        _ outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, count: Int
    ) {
        let first = outputs[0]
        for channel in 1..<max(channelCount, 1) {
            let output = outputs[channel]
            for index in 0..<count { output[index] = first[index] }
        }
    }
}

/// Zeros `buffer[start..<end]`.
@_noLocks
func clear(_ buffer: UnsafeMutablePointer<Float>, from start: Int, to end: Int) {
    var index = start
    while index < end {
        buffer[index] = 0
        index += 1
    }
}

// Building and freeing a `Generator`: main thread, before jack_activate / after
// jack_deactivate.

#if canImport(Glibc)
    import Glibc
#endif

extension Generator {
    /// A generator for `signal` on `channelCount` channels at `sampleRate`; `amplitude` is
    /// the linear level (10^(dBFS/20)).
    static func make(signal: SignalSpec, amplitude: Double, channelCount: Int, sampleRate: Int)
        -> Generator
    {
        let waveform: Waveform
        var gain = amplitude
        switch signal {
        case .counter: waveform = .counter
        case .sine: waveform = .sine
        case .square: waveform = .square
        case .pink:
            waveform = .pink
            gain = amplitude / 4 / pinkRMS
        case .silence: waveform = .silence
        }
        let frequencies = signal.frequencies
        let oscillators = UnsafeMutablePointer<Oscillator>.allocate(
            capacity: max(frequencies.count, 1))
        for (index, frequency) in frequencies.enumerated() {
            (oscillators + index).initialize(
                to: Oscillator(increment: frequency / Double(sampleRate)))
        }
        let pinkFilters = UnsafeMutablePointer<PinkFilter>.allocate(capacity: channelCount)
        for channel in 0..<channelCount {
            (pinkFilters + channel).initialize(
                to: PinkFilter(random: seed(channel: channel)))
        }
        return Generator(
            waveform: waveform, gain: gain, oscillators: oscillators,
            oscillatorCount: frequencies.count, pinkFilters: pinkFilters,
            channelCount: channelCount)
    }

    func deallocate() {
        oscillators.deinitialize(count: oscillatorCount)
        oscillators.deallocate()
        pinkFilters.deinitialize(count: channelCount)
        pinkFilters.deallocate()
    }

    /// RMS of the unscaled pink filter output for white noise uniform in [-1, 1) (variance
    /// 1/3): sqrt(energy of the impulse response / 3). The slowest pole, 0.99886, has
    /// decayed below 1e-20 within 50 000 samples.
    static let pinkRMS: Double = {
        var filter = PinkFilter(random: 1)
        var energy = 0.0
        for index in 0..<50_000 {
            let sample = filter.filter(index == 0 ? 1 : 0)
            energy += sample * sample
        }
        return (energy / 3).squareRoot()
    }()

    /// splitmix64 of a fixed base and the channel: distinct, never-zero xorshift seeds.
    private static func seed(channel: Int) -> UInt64 {
        var z = 0x7265_6364_7369_676E &+ UInt64(channel) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return z == 0 ? 1 : z
    }
}

/// 10^(dBFS/20).
func linearAmplitude(dBFS: Double) -> Double { pow(10, dBFS / 20) }

extension Envelope {
    /// The envelope of `steps` at `sampleRate`, or nil for none. Main thread, before
    /// jack_activate; `deallocate` after jack_deactivate.
    static func make(_ steps: [EnvelopeSpec], sampleRate: Int) -> Envelope? {
        guard !steps.isEmpty else { return nil }
        let table = UnsafeMutablePointer<EnvelopeStep>.allocate(capacity: steps.count)
        for (index, spec) in steps.enumerated() {
            let frames = max(1, Int((spec.seconds * Double(sampleRate)).rounded()))
            let step: EnvelopeStep
            if let fromDB = spec.fromDB {
                let toDB = spec.toDB ?? fromDB
                step = EnvelopeStep(
                    frames: frames, gain: pow(10, fromDB / 20), ratio: pow(10, (toDB - fromDB) / 20 / Double(frames)))
            } else {
                step = EnvelopeStep(frames: frames, gain: 0, ratio: 1)
            }
            (table + index).initialize(to: step)
        }
        return Envelope(steps: table, count: steps.count)
    }

    func deallocate() {
        steps.deinitialize(count: count)
        steps.deallocate()
    }
}

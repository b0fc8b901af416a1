// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// `play --envelope`: the signal's level over time, a list of steps repeated for as long as the
// signal plays. Each step holds a gain or ramps it (linear in dB: a constant ratio a frame) for
// its frames; a step may be off (zeros). The main thread builds the steps before jack_activate
// and frees them after jack_deactivate (`Envelope.make`, `deallocate`).

/// One step: `frames` frames starting at gain `gain`, each next frame's gain `ratio` times
/// this one's.
struct EnvelopeStep {
    let frames: Int
    let gain: Double
    let ratio: Double
}

/// Where the envelope is: plain memory the process thread owns once playing.
struct Envelope {
    let steps: UnsafeMutablePointer<EnvelopeStep>
    let count: Int
    private var step = 0
    private var remaining: Int
    private var gain: Double

    init(steps: UnsafeMutablePointer<EnvelopeStep>, count: Int) {
        self.steps = steps
        self.count = count
        remaining = steps[0].frames
        gain = steps[0].gain
    }

    /// Scales the first `count` frames of `outputs[0..<channels]` by the envelope and moves on.
    @_noLocks
    mutating func apply(to outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, channels: Int, count: Int) {
        for index in 0..<count {
            let scale = Float(gain)
            for channel in 0..<channels { outputs[channel][index] *= scale }
            remaining -= 1
            if remaining > 0 {
                gain *= steps[step].ratio
            } else {
                step = step + 1 == self.count ? 0 : step + 1
                remaining = steps[step].frames
                gain = steps[step].gain
            }
        }
    }
}

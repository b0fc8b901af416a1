// SpeexDSP's echo canceller (the MDF adaptive filter) with its preprocessor's residual echo
// suppression and denoiser, on the chunks VoiceProcessor stages: voiceChat's canceller since
// the double-talk comparison (docs/voice-processing.md).

internal import CSpeexDSP

/// One capture channel's canceller: an echo state against every reference channel and a
/// preprocessor that suppresses what the filter left of the echo. Samples go through as 16-bit
/// integers (the library's interface). Every buffer is allocated in `init`; `process` allocates
/// nothing and takes no lock.
final class SpeexEchoCanceller {
    let chunkFrames: Int
    let referenceChannels: Int
    /// The reference is held back this many frames (at most `maximumDelayFrames`) before the
    /// filter sees it, so that the filter's length covers the room rather than the path's delay.
    var referenceDelayFrames = 0
    let maximumDelayFrames: Int
    private let echo: OpaquePointer
    private let preprocess: OpaquePointer
    private let captureSamples: UnsafeMutablePointer<Int16>
    private let outputSamples: UnsafeMutablePointer<Int16>
    /// The reference, interleaved as the library takes it: a delay line of
    /// `referenceDelayFrames + chunkFrames` frames, written at `written`.
    private let referenceLine: UnsafeMutablePointer<Int16>
    private let referenceChunk: UnsafeMutablePointer<Int16>
    private let lineFrames: Int
    private var written = 0

    /// `filterFrames`: the adaptive filter's length (the room's reverberation it can model);
    /// `maximumDelayFrames`: the most the reference can be held back.
    /// `suppression`, `activeSuppression`: the most the residual echo suppressor takes off, in
    /// dB (negative), with the near end silent and while it talks; `noiseSuppression`: the most
    /// the denoiser takes off steady noise, in dB (0: none).
    init?(
        sampleRate: Int, chunkFrames: Int, referenceChannels: Int, filterFrames: Int, maximumDelayFrames: Int,
        suppression: Int32, activeSuppression: Int32, noiseSuppression: Int32
    ) {
        guard let echo = speex_echo_state_init_mc(Int32(chunkFrames), Int32(filterFrames), 1, Int32(referenceChannels))
        else { return nil }
        guard let preprocess = speex_preprocess_state_init(Int32(chunkFrames), Int32(sampleRate)) else {
            speex_echo_state_destroy(echo)
            return nil
        }
        self.echo = echo
        self.preprocess = preprocess
        self.chunkFrames = chunkFrames
        self.referenceChannels = referenceChannels
        self.maximumDelayFrames = max(0, maximumDelayFrames)
        var rate = Int32(sampleRate)
        speex_echo_ctl(echo, SPEEX_ECHO_SET_SAMPLING_RATE, &rate)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_ECHO_STATE, UnsafeMutableRawPointer(echo))
        // The preprocessor applies its gains only with denoising on (preprocess.c sets every
        // gain to 1 otherwise, the residual echo suppressor's included): it stays on, and with
        // `noiseSuppression` 0 the noise may lose 0 dB, so the gains are the echo suppressor's alone.
        var on: Int32 = 1
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_DENOISE, &on)
        var noise = min(0, noiseSuppression)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &noise)
        var off: Int32 = 0
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_AGC, &off)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_DEREVERB, &off)
        var level = suppression
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS, &level)
        var active = activeSuppression
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, &active)
        captureSamples = .allocate(capacity: chunkFrames)
        outputSamples = .allocate(capacity: chunkFrames)
        lineFrames = self.maximumDelayFrames + chunkFrames
        referenceLine = .allocate(capacity: lineFrames * referenceChannels)
        referenceLine.initialize(repeating: 0, count: lineFrames * referenceChannels)
        referenceChunk = .allocate(capacity: chunkFrames * referenceChannels)
    }

    deinit {
        speex_preprocess_state_destroy(preprocess)
        speex_echo_state_destroy(echo)
        captureSamples.deallocate()
        outputSamples.deallocate()
        referenceLine.deallocate()
        referenceChunk.deallocate()
    }

    /// A float sample as the library's 16-bit one: rounded to nearest (half away from zero),
    /// clamped, NaN as 0. No libm call: this runs on every sample of every channel.
    @inline(__always)
    private static func sample(_ value: Float) -> Int16 {
        let scaled = value * 32_768
        guard scaled == scaled else { return 0 }
        let clamped = max(-32_768, min(32_767, scaled))
        return Int16(clamped + (clamped < 0 ? -0.5 : 0.5))
    }

    /// Cancels one chunk of `capture` (one channel, in place) against one chunk of the
    /// reference (`reference[channel]` points at each reference channel's chunk).
    func process(capture: UnsafeMutablePointer<Float>, reference: UnsafeMutablePointer<UnsafePointer<Float>?>) {
        // Into the delay line, and the chunk `referenceDelayFrames` older out of it: each in at
        // most two runs, split where the line wraps.
        for channel in 0..<referenceChannels {
            let samples = reference[channel]
            var frame = 0
            var slot = written
            while frame < chunkFrames {
                let run = min(chunkFrames - frame, lineFrames - slot)
                if let samples {
                    for index in 0..<run {
                        referenceLine[(slot + index) * referenceChannels + channel] = Self.sample(samples[frame + index])
                    }
                } else {
                    for index in 0..<run { referenceLine[(slot + index) * referenceChannels + channel] = 0 }
                }
                frame += run
                slot = 0
            }
        }
        let delay = min(max(referenceDelayFrames, 0), maximumDelayFrames)
        var frame = 0
        var slot = (written + lineFrames - delay) % lineFrames
        while frame < chunkFrames {
            let run = min(chunkFrames - frame, lineFrames - slot)
            (referenceChunk + frame * referenceChannels).update(
                from: referenceLine + slot * referenceChannels, count: run * referenceChannels)
            frame += run
            slot = 0
        }
        written = (written + chunkFrames) % lineFrames
        for frame in 0..<chunkFrames { captureSamples[frame] = Self.sample(capture[frame]) }
        speex_echo_cancellation(echo, captureSamples, referenceChunk, outputSamples)
        speex_preprocess_run(preprocess, outputSamples)
        for frame in 0..<chunkFrames { capture[frame] = Float(outputSamples[frame]) * (1 / 32_768) }
    }
}

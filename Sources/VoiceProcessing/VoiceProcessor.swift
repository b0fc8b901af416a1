// Voice processing behind a Swift class (SpeexDSP's canceller and preprocessor, WebRTC's audio
// processing module, recd's high-pass): interleaved blocks of any size in, the same number of
// processed frames out, a fixed number of frames later.

internal import CWebRTCAudioProcessing

/// What a `VoiceProcessor` does to the capture.
public struct VoiceProcessingFeatures: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Acoustic echo cancellation against the far-end reference.
    public static let echoCancellation = Self(rawValue: UInt32(RECD_APM_ECHO_CANCELLATION))
    /// Noise suppression (level high).
    public static let noiseSuppression = Self(rawValue: UInt32(RECD_APM_NOISE_SUPPRESSION))
    /// Automatic gain control: the library's digital compressor, up to 12 dB for quiet input and
    /// less as the level nears a -10 dBFS peak target, with its limiter. A talker at -25 dBFS
    /// RMS keeps their level within 1 dB; one 20 dB quieter is raised by about 11 dB.
    public static let gainControl = Self(rawValue: UInt32(RECD_APM_GAIN_CONTROL))
    /// A high-pass filter (DC and rumble).
    public static let highPassFilter = Self(rawValue: UInt32(RECD_APM_HIGH_PASS_FILTER))
    /// The echo canceller estimates the echo path's delay itself instead of trusting
    /// `echoPathDelayMilliseconds`.
    public static let delayAgnostic = Self(rawValue: UInt32(RECD_APM_DELAY_AGNOSTIC))
    /// The echo canceller's 128 ms filter instead of 48 ms.
    public static let extendedFilter = Self(rawValue: UInt32(RECD_APM_EXTENDED_FILTER))
    /// The echo canceller's suppression of what its filter left, at level low or high instead of
    /// moderate (WebRTC's AEC: its non-linear processor's level; SpeexDSP's: see
    /// `.speexEchoCanceller`).
    public static let suppressionLow = Self(rawValue: UInt32(RECD_APM_SUPPRESSION_LOW))
    public static let suppressionHigh = Self(rawValue: UInt32(RECD_APM_SUPPRESSION_HIGH))
    /// The mobile echo canceller (AECM) instead of the AEC.
    public static let mobileEchoControl = Self(rawValue: UInt32(RECD_APM_MOBILE_ECHO_CONTROL))
    /// Noise suppression at level low or moderate instead of high.
    public static let noiseSuppressionLow = Self(rawValue: UInt32(RECD_APM_NOISE_LOW))
    public static let noiseSuppressionModerate = Self(rawValue: UInt32(RECD_APM_NOISE_MODERATE))
    /// Echo cancellation by SpeexDSP's canceller (its adaptive filter and residual echo
    /// suppressor) instead of WebRTC's AEC. With it, noise suppression is SpeexDSP's denoiser (in
    /// the same preprocessor pass as the echo suppressor: high −15, moderate −10, low −6 dB at
    /// most) and the high-pass filter recd's (`HighPassFilter`); only gain control stays WebRTC's,
    /// after it. Without gain control WebRTC's module is not made at all and the chunks are
    /// SpeexDSP's own (`speexChunkFrames`: 512 frames at 48 kHz; docs/voice-processing.md,
    /// "CPU and latency").
    /// With `.delayAgnostic` the reference is not held back and the 128 ms filter must hold the
    /// whole path; `.extendedFilter` is WebRTC's only. The suppression levels map to the
    /// suppressor's most (far end alone / both talking): low -30/-6 dB, moderate (SpeexDSP's
    /// defaults) -40/-15 dB, high -50/-25 dB.
    public static let speexEchoCanceller = Self(rawValue: 1 << 16)
    /// What the WebRTC module is made with: with SpeexDSP's canceller only gain control.
    var webRTCFeatures: UInt32 {
        guard contains(.speexEchoCanceller) else { return rawValue }
        return intersection(.gainControl).rawValue
    }
    /// Whether WebRTC's module runs at all: not when SpeexDSP's preprocessor and recd's filter
    /// do everything asked.
    var needsWebRTCModule: Bool { !contains(.speexEchoCanceller) || contains(.gainControl) }

    /// AVAudioSession's voiceChat and videoChat: echo cancellation (SpeexDSP's), noise
    /// suppression and the high-pass filter that goes with it. Not gain control: on the
    /// double-talk suite it lifted what is left of the echo by about 14 dB (ERLE 35 to 21 dB) and,
    /// lowered while the far end talks, took 1.3-1.7 s to give the near talker their level back
    /// (docs/voice-processing.md, "Double talk").
    public static let voiceChat: Self = [.echoCancellation, .speexEchoCanceller, .noiseSuppression, .highPassFilter]
    /// `prefersEchoCancelledInput`: echo cancellation (SpeexDSP's) without the rest.
    public static let echoCancellationOnly: Self = [.echoCancellation, .speexEchoCanceller]
}

/// Echo cancellation, noise suppression and gain control of a capture stream against a
/// far-end reference (what the same session sent to its loudspeaker): SpeexDSP's canceller and
/// preprocessor with recd's high-pass (`.speexEchoCanceller`, what sessions use), or WebRTC's
/// audio processing module.
///
/// The libraries work on fixed chunks (`chunkFrames`: WebRTC's 10 ms, SpeexDSP's power of two
/// near 10 ms). This class takes blocks of any size (interleaved float, processed in place) and
/// gives back each block's frames `latencyFrames` later: it collects input into chunks and
/// keeps `latencyFrames` of processed output in hand. The latency is fixed for the processor's
/// life; with blocks that are all multiples of `blockGranularity` frames (the engine's period)
/// it is `chunkFrames - gcd(blockGranularity, chunkFrames)`: with WebRTC's 480-frame chunks
/// 448 frames (9.3 ms) at 48 kHz for any JACK period from 32 to 8192; with SpeexDSP's 512,
/// 256 frames at a 256-frame period and 0 from 512 frames on.
///
/// Every buffer is allocated in `init`: `process` allocates nothing and takes no lock of
/// its own (WebRTC's module takes one), so it suits a worker thread (the recorder's archiver),
/// not the JACK process thread. Owns its libraries' state (freed in `deinit`). Not
/// thread-safe: one thread at a time calls `process` and sets `echoPathDelayMilliseconds`.
public final class VoiceProcessor {
    public let sampleRate: Int
    public let captureChannels: Int
    public let referenceChannels: Int
    public let features: VoiceProcessingFeatures
    /// Frames per channel of one chunk the libraries process at a time.
    public let chunkFrames: Int
    /// Every block given to `process` is a multiple of this many frames.
    public let blockGranularity: Int
    /// The framing's latency: output frame `n` is input frame `n - latencyFrames` processed
    /// (the first `latencyFrames` frames out are silence).
    public let latencyFrames: Int
    /// How much later still the processing itself puts the capture: WebRTC's band-split
    /// filters and its canceller's and noise suppressor's frames, SpeexDSP's preprocessor's
    /// window. Measured in `init` on a probe chain of the same rate and features, not assumed.
    public let processingDelayFrames: Int

    /// The echo path's delay as the two streams given to `process` see it: from a reference
    /// frame to its echo in the capture, in milliseconds. WebRTC's module clamps it to 0...500;
    /// SpeexDSP's canceller holds the reference back by it less 10 ms (up to 500 ms). Ignored
    /// with `.delayAgnostic` and without echo cancellation.
    public var echoPathDelayMilliseconds: Int = 0

    /// How many chunks were processed, and how many of those WebRTC's module warned about (an
    /// echo path delay out of its range, clamped).
    public private(set) var chunksProcessed = 0
    public private(set) var delayWarnings = 0

    private let chain: VoiceChain
    /// One chunk per channel, deinterleaved (the libraries' layout), filled `staged` frames.
    private let captureChunk: UnsafeMutablePointer<Float>
    private let referenceChunk: UnsafeMutablePointer<Float>
    private let capturePointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    private let referencePointers: UnsafeMutablePointer<UnsafePointer<Float>?>
    private var staged = 0
    /// Processed frames not yet given back: `latencyFrames` plus one chunk.
    private let output: ProcessedFrames

    /// Makes the processing for `sampleRate` Hz (WebRTC's module: 8, 16, 32 and 48 kHz natively,
    /// others resampled inside it; SpeexDSP's any), `captureChannels` of capture and
    /// `referenceChannels` of far-end reference. `blockGranularity`: a number every block size
    /// given to `process` is a multiple of (the engine's period); 1 allows any block at one
    /// chunk's latency.
    public init(
        sampleRate: Int, captureChannels: Int, referenceChannels: Int, features: VoiceProcessingFeatures,
        blockGranularity: Int = 1
    ) throws(VoiceProcessingError) {
        // Bounds where sizes enter: the library processes at most 8 channels a stream in
        // practice and rates to 48 kHz natively; beyond them the memory and CPU grow for nothing.
        guard (8_000...192_000).contains(sampleRate) else {
            throw VoiceProcessingError(
                .badSampleRate,
                message: "voice processing needs a sample rate from 8000 to 192000 Hz, not \(sampleRate); "
                    + "run the audio server at 48000 Hz")
        }
        guard (1...8).contains(captureChannels), (1...8).contains(referenceChannels) else {
            throw VoiceProcessingError(
                .badNumberOfChannels,
                message: "voice processing takes 1 to 8 capture and reference channels, not "
                    + "\(captureChannels) and \(referenceChannels); process fewer channels")
        }
        guard blockGranularity > 0 else {
            throw VoiceProcessingError(
                .badParameter, message: "voice processing needs a positive block size, not \(blockGranularity)")
        }
        chain = try VoiceChain(
            sampleRate: sampleRate, captureChannels: captureChannels, referenceChannels: referenceChannels,
            features: features)
        self.sampleRate = sampleRate
        self.captureChannels = captureChannels
        self.referenceChannels = referenceChannels
        self.features = features
        self.blockGranularity = blockGranularity
        chunkFrames = chain.chunkFrames
        latencyFrames = chunkFrames - Self.greatestCommonDivisor(blockGranularity, chunkFrames)
        captureChunk = .allocate(capacity: chunkFrames * captureChannels)
        referenceChunk = .allocate(capacity: chunkFrames * referenceChannels)
        capturePointers = .allocate(capacity: captureChannels)
        referencePointers = .allocate(capacity: referenceChannels)
        for channel in 0..<captureChannels { capturePointers[channel] = captureChunk + channel * chunkFrames }
        for channel in 0..<referenceChannels {
            referencePointers[channel] = UnsafePointer(referenceChunk + channel * chunkFrames)
        }
        output = ProcessedFrames(channels: captureChannels, capacity: latencyFrames + chunkFrames)
        processingDelayFrames = Self.measureProcessingDelay(sampleRate: sampleRate, features: features)
        reset()
    }

    /// The lag at which the chain's output best matches its input, on a probe chain of the
    /// same rate and features with no far end: 0.4 s of noise bursts (not steady noise, which
    /// noise suppression would learn and remove), correlated over lags up to two chunks.
    /// About 10 ms of CPU at 48 kHz, once per processor. 0 if the probe cannot be made.
    static func measureProcessingDelay(sampleRate: Int, features: VoiceProcessingFeatures) -> Int {
        guard
            let probe = try? VoiceChain(
                sampleRate: sampleRate, captureChannels: 1, referenceChannels: 1, features: features)
        else { return 0 }
        let chunk = probe.chunkFrames
        let chunks = max(16, (sampleRate * 2 / 5 + chunk - 1) / chunk)
        let input = UnsafeMutablePointer<Float>.allocate(capacity: chunk * chunks)
        let processed = UnsafeMutablePointer<Float>.allocate(capacity: chunk * chunks)
        let silence = UnsafeMutablePointer<Float>.allocate(capacity: chunk)
        defer {
            input.deallocate()
            processed.deallocate()
            silence.deallocate()
        }
        silence.initialize(repeating: 0, count: chunk)
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        let burst = sampleRate / 100 * 3
        let every = sampleRate / 10
        for index in 0..<(chunk * chunks) {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let noise = Float(Int32(truncatingIfNeeded: state >> 32)) / Float(Int32.max)
            input[index] = index % every < burst ? 0.1 * noise : 0
        }
        processed.update(from: input, count: chunk * chunks)
        var reference: UnsafePointer<Float>? = UnsafePointer(silence)
        for number in 0..<chunks {
            var capture: UnsafeMutablePointer<Float>? = processed + number * chunk
            _ = probe.process(capture: &capture, reference: &reference, delayMilliseconds: 0)
        }
        // The second half: the first chunks are the libraries settling.
        let start = chunk * chunks / 2
        let end = chunk * chunks - 4 * chunk
        var best = (lag: 0, correlation: -Double.infinity)
        for lag in 0..<(4 * chunk) {
            var correlation = 0.0
            for index in start..<end { correlation += Double(processed[index + lag]) * Double(input[index]) }
            if correlation > best.correlation { best = (lag, correlation) }
        }
        return best.lag
    }

    deinit {
        captureChunk.deallocate()
        referenceChunk.deallocate()
        capturePointers.deallocate()
        referencePointers.deallocate()
    }

    /// The whole added latency in seconds, framing and the processing (what
    /// `actual.inputLatency` adds for a processed session).
    public var latencySeconds: Double { Double(latencyFrames + processingDelayFrames) / Double(sampleRate) }

    /// Forgets the buffered audio (not the libraries' adaptation): the next `process` starts
    /// with `latencyFrames` of silence again.
    public func reset() {
        staged = 0
        output.reset(silentFrames: latencyFrames)
    }

    /// Processes `frames` frames of interleaved `capture` in place against as many frames of
    /// interleaved `reference` (the far end, aligned with the capture as the engine delivered
    /// both). On return `capture` holds processed frames `latencyFrames` older.
    ///
    /// A library failure throws after the block was written with what could be processed;
    /// frames the library refused come back as silence rather than unprocessed echo.
    public func process(
        capture: UnsafeMutableBufferPointer<Float>, reference: UnsafeBufferPointer<Float>, frames: Int
    ) throws(VoiceProcessingError) {
        precondition(
            frames % blockGranularity == 0, "a block of \(frames) frames, not a multiple of \(blockGranularity)")
        precondition(capture.count >= frames * captureChannels, "fewer capture samples than frames")
        precondition(reference.count >= frames * referenceChannels, "fewer reference samples than frames")
        guard let captureBase = capture.baseAddress, let referenceBase = reference.baseAddress else { return }
        var failure: VoiceProcessingError?
        var done = 0
        // Pieces that end on a chunk boundary or at the block's end: the output ring then
        // always holds each piece's frames (see `latencyFrames`) and never more than it can.
        while done < frames {
            let piece = min(frames - done, chunkFrames - staged)
            stage(captureBase + done * captureChannels, referenceBase + done * referenceChannels, frames: piece)
            if staged == chunkFrames {
                if let error = processChunk(), failure == nil { failure = error }
            }
            output.take(into: captureBase + done * captureChannels, frames: piece)
            done += piece
        }
        if let failure { throw failure }
    }

    /// Deinterleaves `frames` frames into the chunks at `staged`.
    private func stage(_ capture: UnsafePointer<Float>, _ reference: UnsafePointer<Float>, frames: Int) {
        for frame in 0..<frames {
            for channel in 0..<captureChannels {
                captureChunk[channel * chunkFrames + staged + frame] = capture[frame * captureChannels + channel]
            }
            for channel in 0..<referenceChannels {
                referenceChunk[channel * chunkFrames + staged + frame] =
                    reference[frame * referenceChannels + channel]
            }
        }
        staged += frames
    }

    /// Runs the chain on the staged chunk and appends the result to the output ring; silence in
    /// its place if a library failed.
    private func processChunk() -> VoiceProcessingError? {
        staged = 0
        var failure: VoiceProcessingError?
        let status = chain.process(
            capture: capturePointers, reference: referencePointers, delayMilliseconds: echoPathDelayMilliseconds)
        switch status {
        case .failed(let error): failure = error
        case .delayWarning: delayWarnings += 1
        case .done: break
        }
        if failure != nil { captureChunk.update(repeating: 0, count: chunkFrames * captureChannels) }
        chunksProcessed += 1
        output.append(deinterleaved: captureChunk, stride: chunkFrames, frames: chunkFrames)
        return failure
    }

    /// WebRTC's module's own long-term estimate of its echo return loss enhancement and of the
    /// echo path's return loss, in dB; nil without its echo cancellation. Diagnostics only.
    public var libraryEchoMetrics: (enhancement: Int, returnLoss: Int)? { chain.libraryEchoMetrics }

    /// SpeexDSP's chunk at `sampleRate`: the power of two nearest 10 ms (512 frames at 44.1 and
    /// 48 kHz). Its transforms (Debian's build: smallft) take powers of two for less than
    /// WebRTC's 10 ms (480 frames: factors 3 and 5): the canceller and preprocessor cost 15 %
    /// less at 512 frames than at 480. 1024 frames cost 30 % less still, but the preprocessor
    /// adapts its noise estimate once a chunk: at 21 ms a chunk what it learnt of the residual
    /// echo while the far end talked took over a second to leave it, and the near talker's quiet
    /// syllables came back 1-2 dB low that long after the far end stopped
    /// (docs/voice-processing.md, "CPU and latency").
    static func speexChunkFrames(sampleRate: Int) -> Int {
        let target = sampleRate / 100
        var frames = 32
        // Nearest on a log scale: the next power up while it is within √2 of the target.
        while (frames * 2) * (frames * 2) <= 2 * target * target { frames *= 2 }
        return frames
    }

    private static func greatestCommonDivisor(_ a: Int, _ b: Int) -> Int {
        var (a, b) = (a, b)
        while b != 0 { (a, b) = (b, a % b) }
        return a
    }
}

/// The processing a `VoiceProcessor` (and its delay probe) runs on each chunk: SpeexDSP's
/// canceller and preprocessor per capture channel, recd's high-pass, WebRTC's module when a
/// feature needs it. Owns them; frees them in `deinit`.
final class VoiceChain {
    enum Status {
        case done
        /// WebRTC's module clamped the echo path delay it was told.
        case delayWarning
        case failed(VoiceProcessingError)
    }

    let sampleRate: Int
    let captureChannels: Int
    let features: VoiceProcessingFeatures
    let chunkFrames: Int
    private let module: OpaquePointer?
    /// With `.speexEchoCanceller`: one canceller per capture channel, run before the module.
    private let speex: [SpeexEchoCanceller]
    /// With `.speexEchoCanceller` and `.highPassFilter`: one per capture channel, after SpeexDSP.
    private var highPass: [HighPassFilter]

    init(
        sampleRate: Int, captureChannels: Int, referenceChannels: Int, features: VoiceProcessingFeatures
    ) throws(VoiceProcessingError) {
        var module: OpaquePointer?
        var chunk = VoiceProcessor.speexChunkFrames(sampleRate: sampleRate)
        if features.needsWebRTCModule {
            var status: Int32 = 0
            guard
                let made = recd_apm_create(
                    Int32(sampleRate), Int32(captureChannels), Int32(referenceChannels), features.webRTCFeatures,
                    &status)
            else {
                throw VoiceProcessingError(status: status, doing: "start at \(sampleRate) Hz, \(captureChannels) channels")
            }
            module = made
            chunk = Int(recd_apm_chunk_frames(made))
        }
        var speex: [SpeexEchoCanceller] = []
        if features.contains(.speexEchoCanceller) {
            for _ in 0..<captureChannels {
                guard
                    let canceller = Self.makeSpeex(
                        sampleRate: sampleRate, chunkFrames: chunk, referenceChannels: referenceChannels,
                        features: features)
                else {
                    if let module { recd_apm_destroy(module) }
                    throw VoiceProcessingError(
                        .badParameter, message: "SpeexDSP's echo canceller could not start at \(sampleRate) Hz")
                }
                speex.append(canceller)
            }
        }
        self.module = module
        self.speex = speex
        self.sampleRate = sampleRate
        self.captureChannels = captureChannels
        self.features = features
        chunkFrames = chunk
        highPass =
            features.isSuperset(of: [.speexEchoCanceller, .highPassFilter])
            ? Array(repeating: HighPassFilter(sampleRate: sampleRate), count: captureChannels) : []
    }

    deinit {
        if let module { recd_apm_destroy(module) }
    }

    /// Processes one chunk of each capture channel in place against one chunk of each
    /// reference channel (`chunkFrames` frames at each pointer).
    func process(
        capture: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>,
        reference: UnsafeMutablePointer<UnsafePointer<Float>?>, delayMilliseconds: Int
    ) -> Status {
        if !speex.isEmpty {
            let delay = features.contains(.delayAgnostic) ? 0 : max(0, delayMilliseconds - 10) * sampleRate / 1_000
            for channel in 0..<captureChannels {
                guard let samples = capture[channel] else { continue }
                speex[channel].referenceDelayFrames = delay
                speex[channel].process(capture: samples, reference: reference)
                if !highPass.isEmpty { highPass[channel].process(samples, count: chunkFrames) }
            }
        }
        guard let module else { return .done }
        let reverse = recd_apm_process_reverse(module, reference)
        if reverse < 0 { return .failed(VoiceProcessingError(status: reverse, doing: "read the far-end reference")) }
        let status = recd_apm_process_capture(module, capture, Int32(clamping: delayMilliseconds))
        if status < 0 { return .failed(VoiceProcessingError(status: status, doing: "process the capture")) }
        return status > 0 ? .delayWarning : .done
    }

    var libraryEchoMetrics: (enhancement: Int, returnLoss: Int)? {
        guard let module else { return nil }
        var enhancement: Int32 = 0
        var returnLoss: Int32 = 0
        guard recd_apm_echo_metrics(module, &enhancement, &returnLoss) == 0 else { return nil }
        return (Int(enhancement), Int(returnLoss))
    }

    /// SpeexDSP's canceller for one capture channel: a 128 ms filter (256 ms converged slower:
    /// ERLE 35 dB instead of 45 in the dry room), the reference held back by the told delay less
    /// 10 ms (up to 500 ms), so the filter starts a little before the direct sound; its
    /// preprocessor's denoiser with `.noiseSuppression` (high −15 dB, moderate −10, low −6).
    static func makeSpeex(
        sampleRate: Int, chunkFrames: Int, referenceChannels: Int, features: VoiceProcessingFeatures
    ) -> SpeexEchoCanceller? {
        let (suppression, active): (Int32, Int32) =
            features.contains(.suppressionLow)
            ? (-30, -6) : features.contains(.suppressionHigh) ? (-50, -25) : (-40, -15)
        let noise: Int32 =
            !features.contains(.noiseSuppression)
            ? 0
            : features.contains(.noiseSuppressionLow) ? -6 : features.contains(.noiseSuppressionModerate) ? -10 : -15
        return SpeexEchoCanceller(
            sampleRate: sampleRate, chunkFrames: chunkFrames, referenceChannels: referenceChannels,
            filterFrames: sampleRate * 128 / 1_000, maximumDelayFrames: sampleRate / 2, suppression: suppression,
            activeSuppression: active, noiseSuppression: noise)
    }
}

// libebur128 behind a Swift class: EBU R128 / ITU-R BS.1770-4 loudness of interleaved Float32.

internal import CEbur128

/// A segment's loudness, as its LOUDNESS_LUFS, LOUDNESS_RANGE_LU and TRUE_PEAK_DBTP comments
/// say. nil where there is nothing to measure: integrated loudness and range of a segment that
/// is all silence (every 400 ms block below the absolute gate, -70 LUFS) or shorter than one
/// block; true peak of digital silence. A plain value: any thread.
public struct LoudnessSummary: Hashable, Sendable {
    /// Integrated (gated) loudness, LUFS.
    public var integratedLUFS: Double?
    /// Loudness range (EBU Tech 3342), LU.
    public var rangeLU: Double?
    /// The highest true peak (4× oversampled) of any channel, dBTP.
    public var truePeakDBTP: Double?

    public init(integratedLUFS: Double?, rangeLU: Double?, truePeakDBTP: Double?) {
        self.integratedLUFS = integratedLUFS
        self.rangeLU = rangeLU
        self.truePeakDBTP = truePeakDBTP
    }
}

/// Measures loudness as samples pass: integrated loudness, loudness range and true peak of
/// everything fed since it was made, and the momentary (400 ms) and short-term (3 s) loudness
/// of the latest samples.
///
/// Channel weights: every channel counts with weight 1, as BS.1770's left and right do (a
/// stereo pair reads as broadcast measures it; a mono feed reads 3 LU below the same signal
/// on two channels, as BS.1770 has it); recd's inputs are microphones and line feeds, not a
/// surround layout, so no channel is left out as an LFE would be.
///
/// Owns its `ebur128_state` (destroyed in `deinit`) and a scratch buffer. Not thread-safe: one
/// thread (the archiver) feeds and reads it. Not for the JACK process thread: libebur128
/// allocates and its filters cost far more than a period allows.
public final class LoudnessMeter {
    public let channels: Int
    public let sampleRate: Int
    /// Whether true peak (the costly part: 4× oversampling) is measured.
    public let measuresTruePeak: Bool

    /// Frames added so far: a window's reading counts only once the window is full (before
    /// that libebur128 averages in the silence it starts with).
    public private(set) var framesAdded = 0
    private var state: UnsafeMutablePointer<ebur128_state>?
    private let scratch: UnsafeMutablePointer<Float>
    private static let scratchFrames = 4096

    /// - Parameters:
    ///   - channels: 1...64.
    ///   - truePeak: false measures loudness only (cheaper).
    public init(channels: Int, sampleRate: Int, truePeak: Bool = true) throws(MediaError) {
        guard (1...64).contains(channels), (8_000...384_000).contains(sampleRate) else {
            throw MediaError(
                .invalidArgument, path: "",
                message: "cannot measure loudness of \(channels) channels at \(sampleRate) Hz; "
                    + "use 1 to 64 channels at 8000 to 384000 Hz")
        }
        var mode =
            Int32(EBUR128_MODE_I.rawValue) | Int32(EBUR128_MODE_LRA.rawValue) | Int32(EBUR128_MODE_M.rawValue)
            | Int32(EBUR128_MODE_S.rawValue)
        if truePeak { mode |= Int32(EBUR128_MODE_TRUE_PEAK.rawValue) }
        guard let state = ebur128_init(UInt32(channels), UInt(sampleRate), mode) else {
            throw MediaError(.invalidArgument, path: "", message: "libebur128 could not be set up (out of memory?)")
        }
        for channel in 0..<channels {
            _ = ebur128_set_channel(state, UInt32(channel), Int32(EBUR128_LEFT.rawValue))
        }
        self.state = state
        self.channels = channels
        self.sampleRate = sampleRate
        measuresTruePeak = truePeak
        scratch = .allocate(capacity: LoudnessMeter.scratchFrames * channels)
    }

    deinit {
        ebur128_destroy(&state)
        scratch.deallocate()
    }

    /// Adds interleaved frames (`samples.count` a multiple of `channels`).
    public func add(_ samples: UnsafeBufferPointer<Float>) {
        precondition(samples.count % channels == 0, "add whole frames")
        guard let base = samples.baseAddress else { return }
        add(interleaved: base, frames: samples.count / channels, stride: channels, firstChannel: 0)
    }

    /// Adds `frames` frames taken from a wider interleaved buffer: channels
    /// `firstChannel ..< firstChannel + channels` of frames `stride` samples apart.
    public func add(interleaved base: UnsafePointer<Float>, frames: Int, stride: Int, firstChannel: Int) {
        precondition(firstChannel >= 0 && firstChannel + channels <= stride, "channel range outside the frame")
        guard let state else { return }
        framesAdded += frames
        if stride == channels {
            _ = ebur128_add_frames_float(state, base + firstChannel, frames)
            return
        }
        var done = 0
        while done < frames {
            let count = min(LoudnessMeter.scratchFrames, frames - done)
            for frame in 0..<count {
                let from = base + (done + frame) * stride + firstChannel
                let to = scratch + frame * channels
                for channel in 0..<channels { to[channel] = from[channel] }
            }
            _ = ebur128_add_frames_float(state, scratch, count)
            done += count
        }
    }

    /// Adds interleaved integer frames of `bitsPerSample` (full scale 2^(bits-1)), as a FLAC
    /// decoder gives them.
    public func add(integers base: UnsafePointer<Int32>, frames: Int, bitsPerSample: Int) {
        precondition((4...32).contains(bitsPerSample), "bits per sample 4...32")
        guard let state else { return }
        framesAdded += frames
        let scale = 1 / Float(Int64(1) << (bitsPerSample - 1))
        var done = 0
        while done < frames {
            let count = min(LoudnessMeter.scratchFrames, frames - done)
            let from = base + done * channels
            for index in 0..<count * channels { scratch[index] = Float(from[index]) * scale }
            _ = ebur128_add_frames_float(state, scratch, count)
            done += count
        }
    }

    /// Integrated loudness, range and true peak of everything added so far.
    public var summary: LoudnessSummary {
        guard let state else { return LoudnessSummary(integratedLUFS: nil, rangeLU: nil, truePeakDBTP: nil) }
        var integrated = -Double.infinity
        var range = 0.0
        let hasIntegrated = ebur128_loudness_global(state, &integrated) == Int32(EBUR128_SUCCESS.rawValue)
        let hasRange = ebur128_loudness_range(state, &range) == Int32(EBUR128_SUCCESS.rawValue)
        var peak: Double?
        if measuresTruePeak {
            var highest = 0.0
            for channel in 0..<channels {
                var value = 0.0
                if ebur128_true_peak(state, UInt32(channel), &value) == Int32(EBUR128_SUCCESS.rawValue) {
                    highest = max(highest, value)
                }
            }
            peak = highest > 0 ? recd_ebur128_decibels(highest) : nil
        }
        let finiteIntegrated = hasIntegrated && integrated.isFinite ? integrated : nil
        return LoudnessSummary(
            integratedLUFS: finiteIntegrated, rangeLU: finiteIntegrated != nil && hasRange ? range : nil,
            truePeakDBTP: peak)
    }

    /// Momentary loudness (the last 400 ms), LUFS; nil before 400 ms or for silence.
    public var momentaryLUFS: Double? {
        guard let state, framesAdded * 10 >= sampleRate * 4 else { return nil }
        var value = -Double.infinity
        guard ebur128_loudness_momentary(state, &value) == Int32(EBUR128_SUCCESS.rawValue), value.isFinite else {
            return nil
        }
        return value
    }

    /// Short-term loudness (the last 3 s), LUFS; nil before 3 s or for silence.
    public var shortTermLUFS: Double? {
        guard let state, framesAdded >= sampleRate * 3 else { return nil }
        var value = -Double.infinity
        guard ebur128_loudness_shortterm(state, &value) == Int32(EBUR128_SUCCESS.rawValue), value.isFinite else {
            return nil
        }
        return value
    }
}

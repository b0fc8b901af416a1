// libsoxr behind a Swift class: interleaved Float32 in, interleaved Float32 out.

internal import CSoxr

/// Converts interleaved Float32 audio from one sample rate to another with libsoxr's
/// linear-phase polyphase filters.
///
/// Downsampling also band-limits: soxr's anti-alias filter removes everything above the new
/// Nyquist frequency (by more than 100 dB at `.high`) instead of folding it back into the
/// band. That is what SPEC §7's HFP capture needs: `forHFPCapture(jackRate:linkRate:…)` makes
/// a 48 kHz → 8 kHz (cvsd) or → 16 kHz (msbc) converter whose output holds only what an HFP
/// link carries.
///
/// Owns its `soxr_t` (deleted in `deinit`). Not thread-safe: one thread (a feeder, the
/// archiver) feeds it. Not for the JACK process thread: soxr allocates.
public final class Resampler {
    /// soxr's quality recipes.
    public enum Quality: String, Sendable {
        /// SOXR_HQ: 20-bit precision, passband to 91% of Nyquist. The default.
        case high
        /// SOXR_VHQ: 28-bit precision; more CPU and delay.
        case veryHigh
    }

    public let inputRate: Int
    public let outputRate: Int
    public let channels: Int
    public let quality: Quality

    private let soxr: OpaquePointer
    private var flushed = false

    public init(inputRate: Int, outputRate: Int, channels: Int, quality: Quality = .high)
        throws(MediaError)
    {
        guard inputRate > 0, outputRate > 0, channels > 0 else {
            throw MediaError(
                .invalidArgument, path: "",
                message: "cannot resample \(channels) channels from \(inputRate) Hz to "
                    + "\(outputRate) Hz; rates and channels must be positive")
        }
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        self.quality = quality
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var recipe = soxr_quality_spec(
            UInt(quality == .high ? SOXR_20_BITQ : SOXR_28_BITQ), 0)
        var error: soxr_error_t?
        let handle = soxr_create(
            Double(inputRate), Double(outputRate), UInt32(channels), &error, &io, &recipe, nil)
        guard let handle, error == nil else {
            let text = error.map { String(cString: $0) } ?? "unknown error"
            throw MediaError(.invalidArgument, path: "", message: "libsoxr refused: \(text)")
        }
        soxr = handle
    }

    /// The converter for SPEC §7's Bluetooth HFP capture: JACK rate → 8000 Hz (cvsd) or
    /// 16000 Hz (msbc), with soxr's anti-alias filter band-limiting to the link's bandwidth.
    public static func forHFPCapture(jackRate: Int, linkRate: Int, channels: Int = 1)
        throws(MediaError) -> Resampler
    {
        guard linkRate == 8000 || linkRate == 16000 else {
            throw MediaError(
                .invalidArgument, path: "",
                message: "an HFP link runs at 8000 Hz (cvsd) or 16000 Hz (msbc), not \(linkRate)")
        }
        return try Resampler(inputRate: jackRate, outputRate: linkRate, channels: channels)
    }

    deinit {
        soxr_delete(soxr)
    }

    /// Output frames per input frame.
    public var ratio: Double { Double(outputRate) / Double(inputRate) }

    /// Output frames that `frames` input frames can produce at most (size output buffers
    /// with this).
    public func maximumOutputFrames(forInputFrames frames: Int) -> Int {
        Int((Double(frames) * ratio).rounded(.up)) + 64
    }

    /// Converts up to `frames` input frames into `output`; returns how many input frames soxr
    /// took and how many output frames it wrote. soxr keeps a filter's worth of input inside
    /// (see `delayFrames`); `flush` gets it out at the end.
    public func process(
        input: UnsafeBufferPointer<Float>, frames: Int, output: UnsafeMutableBufferPointer<Float>
    ) throws(MediaError) -> (consumed: Int, produced: Int) {
        precondition(!flushed, "process after flush; call reset() first")
        precondition(input.count >= frames * channels, "fewer samples than frames")
        guard frames > 0 else { return (0, 0) }
        var consumed = 0
        var produced = 0
        let error = soxr_process(
            soxr, input.baseAddress, frames, &consumed, output.baseAddress,
            output.count / channels, &produced)
        if let error {
            throw MediaError(.io, path: "", message: "libsoxr failed: \(String(cString: error))")
        }
        return (consumed, produced)
    }

    /// Converts a whole array of interleaved frames; returns what came out so far.
    public func process(_ input: [Float]) throws(MediaError) -> [Float] {
        precondition(input.count % channels == 0, "an array of whole frames")
        var result: [Float] = []
        // Bites of input that make at most about 4096 output frames, whatever the ratio.
        let bite = max(1, min(4096, Int(4096 / ratio)))
        var output = [Float](
            repeating: 0, count: maximumOutputFrames(forInputFrames: bite) * channels)
        var offset = 0
        while offset < input.count {
            let step = min(bite, (input.count - offset) / channels)
            let (consumed, produced) = try input.withUnsafeBufferPointer {
                whole throws(MediaError) in
                try output.withUnsafeMutableBufferPointer { out throws(MediaError) in
                    try process(
                        input: UnsafeBufferPointer(rebasing: whole[offset...]), frames: step,
                        output: out)
                }
            }
            result.append(contentsOf: output[..<(produced * channels)])
            offset += consumed * channels
            // soxr always takes input while it has room to write; this guards the loop anyway.
            if consumed == 0 && produced == 0 { break }
        }
        return result
    }

    /// Says the input has ended and writes up to `output.count / channels` frames of what soxr
    /// still holds; call until it returns 0. Afterwards only `reset()` makes it usable again.
    public func flush(into output: UnsafeMutableBufferPointer<Float>) throws(MediaError) -> Int {
        flushed = true
        var produced = 0
        let error = soxr_process(
            soxr, nil, 0, nil, output.baseAddress, output.count / channels, &produced)
        if let error {
            throw MediaError(.io, path: "", message: "libsoxr failed: \(String(cString: error))")
        }
        return produced
    }

    /// `flush(into:)` until soxr is empty.
    public func flush() throws(MediaError) -> [Float] {
        var result: [Float] = []
        var output = [Float](repeating: 0, count: 4096 * channels)
        while true {
            let produced = try output.withUnsafeMutableBufferPointer {
                buffer throws(MediaError) in try flush(into: buffer)
            }
            if produced == 0 { return result }
            result.append(contentsOf: output[..<(produced * channels)])
        }
    }

    /// Forgets all input and starts over (same rates and quality).
    public func reset() {
        soxr_clear(soxr)
        flushed = false
    }

    /// The converter's current delay, in output frames (soxr_delay).
    public var delayFrames: Double { soxr_delay(soxr) }

    /// The converter's current delay in seconds: the extra input latency it costs (SPEC §7
    /// status reports it).
    public var latencySeconds: Double { delayFrames / Double(outputRate) }
}

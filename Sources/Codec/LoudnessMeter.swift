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

/// Which code measures a LoudnessMeter's loudness (`[archive] loudness`).
public enum LoudnessEngine: String, Sendable, CaseIterable {
    /// `R128Engine`: vectorized single precision, readings within 0.01 LU and 0.05 dB of
    /// libebur128's at a few percent of the FLAC encoder's cost; the default.
    case vectorized
    /// libebur128 itself (with the cheap paths below): the oracle, and the fallback a config
    /// can select.
    case libebur128
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
/// By default `R128Engine` measures (see there). With `.libebur128`, libebur128
/// does all the measuring and this class only decides what to ask it, so that the answers
/// are libebur128's own at a fraction of its cost:
///
/// - Momentary and short-term readings. `ebur128_loudness_shortterm` sums its whole 3 s
///   window each time it is asked. Instead every add is split at 100 ms boundaries (counted
///   from the first frame, as libebur128 counts its blocks) and at each boundary the energy of
///   exactly the last 100 ms is read (`ebur128_loudness_window(state, 100)`, turned back into
///   energy) into a ring of 30: momentary loudness is the loudness of the mean of the last 4,
///   short-term of the last 30, equal to libebur128's readings at the same boundary to
///   rounding (1e-9 LU is tested). A reading between boundaries is the one of the last
///   boundary (at most 100 ms old). Reading costs O(30), whatever the channel count. At a
///   sample rate that is not a multiple of 10 Hz libebur128's 100 ms is not a whole number of
///   frames, and the meter asks libebur128 directly, as before.
///
/// - True peak (4× oversampling, the costly part) only where it can change the answer; see
///   `TruePeakGate` for why the maximum is bit-identical to ungated libebur128's.
///
/// Owns its `ebur128_state`s (destroyed in `deinit`) and scratch buffers. Memory: the main
/// state keeps 3 s of filtered audio (channels × 3 s of Doubles); with true peak each channel
/// has a one-channel true-peak state, which holds a 400 ms buffer of its own (150 KiB a
/// channel at 48 kHz) besides the oversampler's buffers the main state held before; those are
/// now touched only a block at a time, so the whole resides in less memory than before: 8
/// meters of 8 channels at 48 kHz measured 81 MiB of RSS against 94 ungated — fine for recd's
/// at most 64 channels.
/// Not thread-safe: one thread (the archiver) feeds and reads it. Not for the JACK process
/// thread: libebur128 allocates and its filters cost far more than a period allows.
public final class LoudnessMeter {
    public let channels: Int
    public let sampleRate: Int
    /// Whether true peak (the costly part: 4× oversampling) is measured.
    public let measuresTruePeak: Bool

    /// Frames added so far: a window's reading counts only once the window is full (before
    /// that libebur128 averages in the silence it starts with).
    public private(set) var framesAdded = 0
    private var state: UnsafeMutablePointer<ebur128_state>?
    /// The vectorized engine; nil with libebur128 (then `state` measures).
    private let engine: R128Engine?
    private let scratch: UnsafeMutablePointer<Float>
    private static let scratchFrames = 4096

    /// Frames in libebur128's 100 ms; 0 where the meter asks libebur128 directly (a rate not
    /// a multiple of 10 Hz, or `direct` for tests).
    private let hundredMs: Int
    /// Frames since the last 100 ms boundary.
    private var sinceBoundary = 0
    /// The energies of the last 30 whole 100 ms (a ring; slots never written are 0, as
    /// libebur128's zeroed buffer reads before 3 s).
    private var energies = [Double](repeating: 0, count: 30)
    private var nextEnergy = 0
    /// True peak where it can change the answer; nil without true peak, or measured directly.
    private let gate: TruePeakGate?

    /// - Parameters:
    ///   - channels: 1...64.
    ///   - truePeak: false measures loudness only (cheaper).
    ///   - engine: which code measures; the results agree within 0.01 LU and 0.05 dB.
    public convenience init(
        channels: Int, sampleRate: Int, truePeak: Bool = true, engine: LoudnessEngine = .vectorized
    ) throws(MediaError) {
        try self.init(
            channels: channels, sampleRate: sampleRate, truePeak: truePeak, direct: false,
            vectorized: engine == .vectorized)
    }

    /// `direct`: every reading straight from one ungated libebur128 state, as before the cheap paths
    /// (the reference the tests hold the fast path to; also what a rate not a multiple of
    /// 10 Hz gets).
    init(
        channels: Int, sampleRate: Int, truePeak: Bool, direct: Bool, vectorized: Bool = false,
        gateBlocks: Int = TruePeakGate.blocksPer100ms
    ) throws(MediaError) {
        guard (1...64).contains(channels), (8_000...384_000).contains(sampleRate) else {
            throw MediaError(
                .invalidArgument, path: "",
                message: "cannot measure loudness of \(channels) channels at \(sampleRate) Hz; "
                    + "use 1 to 64 channels at 8000 to 384000 Hz")
        }
        self.channels = channels
        self.sampleRate = sampleRate
        measuresTruePeak = truePeak
        scratch = .allocate(capacity: LoudnessMeter.scratchFrames * channels)
        if vectorized && !direct {
            engine = R128Engine(channels: channels, sampleRate: sampleRate, truePeak: truePeak)
            state = nil
            hundredMs = 0
            gate = nil
            return
        }
        engine = nil
        let windowed = !direct && sampleRate % 10 == 0
        let gate =
            windowed && truePeak ? TruePeakGate(channels: channels, sampleRate: sampleRate, blocks: gateBlocks) : nil
        var mode =
            Int32(EBUR128_MODE_I.rawValue) | Int32(EBUR128_MODE_LRA.rawValue) | Int32(EBUR128_MODE_M.rawValue)
            | Int32(EBUR128_MODE_S.rawValue)
        if truePeak { mode |= Int32((gate != nil ? EBUR128_MODE_SAMPLE_PEAK : EBUR128_MODE_TRUE_PEAK).rawValue) }
        guard let state = ebur128_init(UInt32(channels), UInt(sampleRate), mode) else {
            throw MediaError(.invalidArgument, path: "", message: "libebur128 could not be set up (out of memory?)")
        }
        for channel in 0..<channels {
            _ = ebur128_set_channel(state, UInt32(channel), Int32(EBUR128_LEFT.rawValue))
        }
        self.state = state
        hundredMs = windowed ? sampleRate / 10 : 0
        self.gate = gate
    }

    deinit {
        if state != nil { ebur128_destroy(&state) }  // nil with the vectorized engine
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
        if let engine {
            engine.add(interleaved: base, frames: frames, stride: stride, firstChannel: firstChannel)
            framesAdded += frames
            return
        }
        guard state != nil else { return }
        if stride == channels {
            feed(base + firstChannel, frames: frames)
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
            feed(scratch, frames: count)
            done += count
        }
    }

    /// Adds `frames` frames held one run per channel: channel `c`'s samples start at
    /// `channelStarts[c] + offset` (`channels` entries).
    public func add(planar channelStarts: UnsafePointer<UnsafePointer<Float>>, offset: Int, frames: Int) {
        if let engine {
            engine.add(planar: channelStarts, offset: offset, frames: frames)
            framesAdded += frames
            return
        }
        guard state != nil else { return }
        // libebur128 takes interleaved frames only.
        var done = 0
        while done < frames {
            let count = min(LoudnessMeter.scratchFrames, frames - done)
            for channel in 0..<channels {
                let from = channelStarts[channel] + offset + done
                for frame in 0..<count { scratch[frame * channels + channel] = from[frame] }
            }
            feed(scratch, frames: count)
            done += count
        }
    }

    /// Adds interleaved integer frames of `bitsPerSample` (full scale 2^(bits-1)), as a FLAC
    /// decoder gives them.
    public func add(integers base: UnsafePointer<Int32>, frames: Int, bitsPerSample: Int) {
        precondition((4...32).contains(bitsPerSample), "bits per sample 4...32")
        if let engine {
            engine.add(integers: base, frames: frames, bitsPerSample: bitsPerSample)
            framesAdded += frames
            return
        }
        guard state != nil else { return }
        let scale = 1 / Float(Int64(1) << (bitsPerSample - 1))
        var done = 0
        while done < frames {
            let count = min(LoudnessMeter.scratchFrames, frames - done)
            let from = base + done * channels
            for index in 0..<count * channels { scratch[index] = Float(from[index]) * scale }
            feed(scratch, frames: count)
            done += count
        }
    }

    /// Interleaved frames of exactly `channels` channels, split at the 100 ms boundaries (and
    /// the true-peak gate's blocks within them).
    private func feed(_ base: UnsafePointer<Float>, frames: Int) {
        guard let state else { return }
        framesAdded += frames
        guard hundredMs > 0 else {
            _ = ebur128_add_frames_float(state, base, frames)
            return
        }
        var done = 0
        while done < frames {
            let boundary = gate?.blockEnd(hundredMs: hundredMs) ?? hundredMs
            let count = min(boundary - sinceBoundary, frames - done)
            let from = base + done * channels
            _ = ebur128_add_frames_float(state, from, count)
            done += count
            sinceBoundary += count
            if let gate {
                gate.collect(from, frames: count, main: state)
                if sinceBoundary == boundary { gate.endBlock() }
            }
            if sinceBoundary == hundredMs {
                sinceBoundary = 0
                var lufs = -Double.infinity
                _ = ebur128_loudness_window(state, 100, &lufs)
                energies[nextEnergy] = recd_ebur128_energy(lufs)
                nextEnergy = (nextEnergy + 1) % energies.count
            }
        }
    }

    /// Integrated loudness, range and true peak of everything added so far.
    public var summary: LoudnessSummary {
        if let engine {
            let integrated = engine.integratedLUFS
            let highest = engine.channelTruePeaks.max() ?? 0
            return LoudnessSummary(
                integratedLUFS: integrated, rangeLU: integrated != nil ? engine.rangeLU : nil,
                truePeakDBTP: measuresTruePeak && highest > 0 ? recd_ebur128_decibels(highest) : nil)
        }
        guard let state else { return LoudnessSummary(integratedLUFS: nil, rangeLU: nil, truePeakDBTP: nil) }
        var integrated = -Double.infinity
        var range = 0.0
        let hasIntegrated = ebur128_loudness_global(state, &integrated) == Int32(EBUR128_SUCCESS.rawValue)
        let hasRange = ebur128_loudness_range(state, &range) == Int32(EBUR128_SUCCESS.rawValue)
        var peak: Double?
        if measuresTruePeak {
            let highest = channelTruePeaks.max() ?? 0
            peak = highest > 0 ? recd_ebur128_decibels(highest) : nil
        }
        let finiteIntegrated = hasIntegrated && integrated.isFinite ? integrated : nil
        return LoudnessSummary(
            integratedLUFS: finiteIntegrated, rangeLU: finiteIntegrated != nil && hasRange ? range : nil,
            truePeakDBTP: peak)
    }

    /// Each channel's true peak so far (linear, as `ebur128_true_peak` gives it); empty
    /// without true peak.
    var channelTruePeaks: [Double] {
        if let engine { return engine.channelTruePeaks }
        guard measuresTruePeak, let state else { return [] }
        if let gate { return gate.truePeaks() }
        return (0..<channels).map { channel in
            var value = 0.0
            return ebur128_true_peak(state, UInt32(channel), &value) == Int32(EBUR128_SUCCESS.rawValue) ? value : 0
        }
    }

    /// Channel-blocks (of about 2.5 ms) the true-peak gate fed to libebur128's oversampler, and
    /// those it skipped; (0, 0) without the gate.
    var truePeakBlocks: (fed: Int, skipped: Int) {
        if let engine { return (engine.peakBlocks.computed, engine.peakBlocks.skipped) }
        return gate.map { ($0.fed, $0.skipped) } ?? (0, 0)
    }

    /// Momentary loudness (the last 400 ms), LUFS; nil before 400 ms or for silence.
    public var momentaryLUFS: Double? {
        if let engine { return engine.momentaryLUFS }
        guard state != nil, framesAdded * 10 >= sampleRate * 4 else { return nil }
        return hundredMs > 0 ? loudness(ofLast: 4) : direct(ebur128_loudness_momentary)
    }

    /// Short-term loudness (the last 3 s), LUFS; nil before 3 s or for silence.
    public var shortTermLUFS: Double? {
        if let engine { return engine.shortTermLUFS }
        guard state != nil, framesAdded >= sampleRate * 3 else { return nil }
        return hundredMs > 0 ? loudness(ofLast: 30) : direct(ebur128_loudness_shortterm)
    }

    /// The loudness of the mean energy of the last `count` whole 100 ms; nil for silence.
    private func loudness(ofLast count: Int) -> Double? {
        var sum = 0.0
        for back in 1...count { sum += energies[(nextEnergy - back + energies.count) % energies.count] }
        guard sum > 0 else { return nil }
        let value = recd_ebur128_loudness(sum / Double(count))
        return value.isFinite ? value : nil
    }

    private func direct(
        _ reading: (UnsafeMutablePointer<ebur128_state>?, UnsafeMutablePointer<Double>?) -> Int32
    ) -> Double? {
        var value = -Double.infinity
        guard reading(state, &value) == Int32(EBUR128_SUCCESS.rawValue), value.isFinite else { return nil }
        return value
    }
}

/// True peak only where it can change the answer, with the answer bit-identical to ungated
/// libebur128's.
///
/// libebur128's true peak of a channel is the largest of its samples' magnitudes and of the
/// magnitudes of its interpolator's outputs y. The interpolator is a linear FIR: each output
/// is Σ c·x over the last few inputs (13 at 4×, 25 at 2×; at 192 kHz and above there is none
/// and true peak is sample peak), so |y| ≤ B · max|x| over those inputs, B the largest L1 norm
/// of its polyphase branches. B is measured from the library itself when the gate is made (no
/// coefficient is copied here): a one-channel true-peak state is fed a unit impulse and then
/// zeros, one sample per add. The last add that still reports a nonzero
/// `ebur128_prev_true_peak` tells how many inputs an output depends on (R; we keep
/// H = max(16, R - 1) samples of history). The sum of the reported maxima bounds B (for each
/// tap it is at least every branch's |c|; the first is at least 1, the impulse's own sample
/// peak) but loosely (3.5 at 48 kHz). Where R ≤ 16 (4× and 1×) the state is instead fed a
/// de Bruijn sequence of ±1 of order R: every sign pattern of R inputs passes through the
/// interpolator, among them each branch's own sign pattern, which makes that branch's output
/// its L1 norm, and no ±1 pattern can give more; so the highest true peak reported is B
/// itself (1.86 at 48 kHz). Either way times 1 + 1e-6, for the float rounding of outputs.
///
/// The main state measures sample peaks (cheap; `ebur128_prev_sample_peak` after each add);
/// every 100 ms is cut into `blocksPer100ms` blocks (2.5 ms at 40; fewer where a block would
/// be shorter than H) and a channel's block is fed to that channel's own one-channel
/// true-peak state only if B · max(peak of this block, peak of the previous block's last H
/// samples) is above the channel's true peak so far. Every output y produced for this
/// block's samples depends on inputs in this block and at most H before it, so a block that
/// is not fed has no sample and no ungated output above what is known: skipping it changes
/// nothing.
///
/// When a channel resumes after skipped blocks its state is first fed the last H samples of
/// the previous (skipped) block, so that from this block's first sample on the
/// interpolator's history is exactly the ungated one and its outputs are ungated
/// libebur128's, bit for bit (same code, same inputs, same order). The outputs produced while
/// those H samples go in mix them with the stale history left from the last block fed: the
/// stale samples are the last of the last block fed before the skip (a block fed is longer
/// than the history, so nothing older remains), and the skip that followed it means
/// B · (the peak of its last H) was at most the known peak; the H samples are the end of a
/// skipped block, so B · (their peak) is at most the known peak too. So those outputs, and
/// the samples themselves, never exceed what is known, and the state's maximum is exactly
/// ungated libebur128's maximum. (FTZ, which libebur128 turns on around its filters, only
/// ever makes an output smaller.)
///
/// `summary` may be read in the middle of a block: the part of the block so far is then
/// decided on its own peak (fed, or left while no output of it can exceed the known peak), and
/// a block whose first part was fed is fed whole.
final class TruePeakGate {
    let channels: Int
    /// B (with its 1 + 1e-6) and H.
    let bound: Double
    let history: Int
    private var states: [UnsafeMutablePointer<ebur128_state>?]
    /// Per channel `history + longest block` samples: the previous block's last H, then this
    /// block's samples so far.
    private let samples: UnsafeMutablePointer<Float>
    private let lane: Int
    private var blockPeak: [Double]
    private var tailPeak: [Double]
    private var known: [Double]
    /// Whether the channel's state holds everything up to this block (its history is right).
    private var inSync: [Bool]
    /// Frames of this block already fed (by `truePeaks()` mid-block).
    private var fedFrames: [Int]
    /// Blocks in 100 ms (see `blocksPer100ms`).
    let blocks: Int
    /// Which block of the 100 ms, and the frames in it so far.
    private var block = 0
    private var filled = 0
    private(set) var fed = 0
    private(set) var skipped = 0
    /// Blocks per 100 ms by default: 40 (2.5 ms at 48 kHz). Shorter blocks have lower peaks
    /// than the signal's highest, so more of them are skipped (bench/loudness measured 10, 20
    /// and 40), at the cost of an add per block per channel.
    static let blocksPer100ms = 40

    /// nil where libebur128 cannot be set up or its interpolator's history is longer than
    /// 100 ms (then the meter measures true peak directly).
    init?(channels: Int, sampleRate: Int, blocks: Int = TruePeakGate.blocksPer100ms) {
        guard let measured = TruePeakGate.interpolatorBound(sampleRate: sampleRate),
            measured.history <= sampleRate / 10
        else { return nil }
        let blocks = min(blocks, sampleRate / 10 / measured.history)
        let (bound, history) = measured
        var states: [UnsafeMutablePointer<ebur128_state>?] = []
        for _ in 0..<channels {
            guard let state = ebur128_init(1, UInt(sampleRate), Int32(EBUR128_MODE_TRUE_PEAK.rawValue)) else {
                for index in states.indices { ebur128_destroy(&states[index]) }
                return nil
            }
            // Unused: no K-weighting (its loudness is never read); peaks are measured all the same.
            _ = ebur128_set_channel(state, 0, Int32(EBUR128_UNUSED.rawValue))
            states.append(state)
        }
        self.channels = channels
        self.bound = bound
        self.history = history
        self.states = states
        self.blocks = blocks
        lane = history + sampleRate / 10 / blocks + 1
        samples = .allocate(capacity: lane * channels)
        samples.initialize(repeating: 0, count: lane * channels)
        blockPeak = Array(repeating: 0, count: channels)
        tailPeak = blockPeak
        known = blockPeak
        inSync = Array(repeating: true, count: channels)
        fedFrames = Array(repeating: 0, count: channels)
    }

    deinit {
        for index in states.indices { ebur128_destroy(&states[index]) }
        samples.deallocate()
    }

    /// B and H measured from libebur128's own interpolator (see the type's comment).
    static func interpolatorBound(sampleRate: Int) -> (bound: Double, history: Int)? {
        guard let envelope = peaks(sampleRate: sampleRate, input: [1] + Array(repeating: 0, count: 63))?.reported
        else { return nil }
        var bound = envelope.reduce(0, +)
        let reach = (envelope.lastIndex { $0 > 0 } ?? 0) + 1
        if reach <= 16 {
            // Every ±1 pattern of `reach` inputs, one after another in one stream.
            let patterns = deBruijn(order: reach).map { Float($0 == 0 ? -1 : 1) }
            guard let highest = peaks(sampleRate: sampleRate, input: patterns)?.highest else { return nil }
            bound = highest
        }
        return (max(bound, 1) * (1 + 1e-6), max(16, reach - 1))
    }

    /// Feeds `input` to a fresh one-channel true-peak state, one sample per add: what
    /// `ebur128_prev_true_peak` reports after each, and `ebur128_true_peak` at the end.
    private static func peaks(sampleRate: Int, input: [Float]) -> (reported: [Double], highest: Double)? {
        var probe = ebur128_init(1, UInt(sampleRate), Int32(EBUR128_MODE_TRUE_PEAK.rawValue))
        guard let state = probe else { return nil }
        defer { ebur128_destroy(&probe) }
        var reported: [Double] = []
        reported.reserveCapacity(input.count)
        for var sample in input {
            _ = ebur128_add_frames_float(state, &sample, 1)
            var peak = 0.0
            _ = ebur128_prev_true_peak(state, 0, &peak)
            reported.append(peak)
        }
        var highest = 0.0
        _ = ebur128_true_peak(state, 0, &highest)
        return (reported, highest)
    }

    /// A binary de Bruijn sequence of `order`, with its first `order - 1` symbols repeated at
    /// the end: every string of `order` bits appears in it once, as a window.
    static func deBruijn(order: Int) -> [UInt8] {
        var sequence: [UInt8] = []
        var word = [UInt8](repeating: 0, count: order + 1)
        func extend(_ t: Int, _ p: Int) {
            if t > order {
                if order % p == 0 { sequence += word[1...p] }
                return
            }
            word[t] = word[t - p]
            extend(t + 1, p)
            if word[t - p] == 0 {
                word[t] = 1
                extend(t + 1, t)
            }
        }
        extend(1, 1)
        return sequence + sequence.prefix(order - 1)
    }

    /// Where the current block ends, in frames from the last 100 ms boundary.
    func blockEnd(hundredMs: Int) -> Int { (block + 1) * hundredMs / blocks }

    /// Takes `frames` interleaved frames just added to the main state: their per-channel
    /// sample peaks (`ebur128_prev_sample_peak`) and the samples themselves, per channel.
    func collect(_ base: UnsafePointer<Float>, frames: Int, main: UnsafeMutablePointer<ebur128_state>) {
        for channel in 0..<channels {
            var peak = 0.0
            _ = ebur128_prev_sample_peak(main, UInt32(channel), &peak)
            if peak > blockPeak[channel] { blockPeak[channel] = peak }
            let to = samples + channel * lane + history + filled
            for frame in 0..<frames { to[frame] = base[frame * channels + channel] }
        }
        filled += frames
    }

    /// The block is whole: feed it where it can raise the peak, then keep its last H samples.
    func endBlock() {
        for channel in 0..<channels {
            let lane = samples + channel * self.lane
            if fedFrames[channel] > 0 || opens(channel) {
                feed(channel, upTo: filled)
                fed += 1
            } else {
                inSync[channel] = false
                skipped += 1
            }
            lane.update(from: lane + filled, count: history)  // filled ≥ a block > H: no overlap
            var tail = 0.0
            for index in 0..<history { tail = max(tail, Double(abs(lane[index]))) }
            tailPeak[channel] = tail
            blockPeak[channel] = 0
            fedFrames[channel] = 0
        }
        filled = 0
        block = (block + 1) % blocks
    }

    /// Each channel's true peak so far, the block in progress included.
    func truePeaks() -> [Double] {
        for channel in 0..<channels where filled > fedFrames[channel] {
            if fedFrames[channel] > 0 || opens(channel) { feed(channel, upTo: filled) }
        }
        return known
    }

    /// Whether an output of this block could exceed the channel's known peak.
    private func opens(_ channel: Int) -> Bool {
        bound * max(blockPeak[channel], tailPeak[channel]) > known[channel]
    }

    /// Feeds this block's samples `fedFrames ..< end` (after the previous block's last H when
    /// the state missed it) and takes the state's peak.
    private func feed(_ channel: Int, upTo end: Int) {
        let lane = samples + channel * self.lane
        var from = history + fedFrames[channel]
        if fedFrames[channel] == 0 && !inSync[channel] { from = 0 }
        _ = ebur128_add_frames_float(states[channel], lane + from, history + end - from)
        inSync[channel] = true
        fedFrames[channel] = end
        var peak = 0.0
        _ = ebur128_true_peak(states[channel], 0, &peak)
        if peak > known[channel] { known[channel] = peak }
    }
}

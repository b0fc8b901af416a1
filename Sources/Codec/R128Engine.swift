// EBU R128 / ITU-R BS.1770-4 loudness in vectorized single precision: what LoudnessMeter measures
// with by default, at a few percent of the FLAC encoder's cost where libebur128 cost
// more than the encoder itself.

internal import CEbur128
internal import SampleKernels

/// The measurement itself, over Float32 of 1...64 channels, measured across the channels: one
/// SIMD lane is one channel, and every step of the filters and the interpolator works on a lane
/// group of 8 channels at once (`R128LaneGroups`; a recorder's file of up to 8 channels is one
/// group). The K-weighting walk is SampleKernels' (`kWeightedEnergy`): one AVX register a group
/// where the CPU runs x86-64-v3, else two SSE registers — the same instructions per channel as
/// two groups of 4, but the biquads' recursions, each a chain of dependent additions, run two
/// chains side by side, and the loops are half as many.
/// Concrete, not generic over the lane width: a debug build runs generic SIMD code through
/// witness tables, some 3× slower than this, and debug builds record in the tests; 1–4 channels
/// pay for 8 lanes (about 0.2 ms of CPU a second at 2 channels).
///
/// - K-weighting: BS.1770's pre-filter (a high shelf) then its RLB high-pass, each a biquad
///   derived for the sample rate from the analog prototype as libebur128 derives it (bilinear
///   transform with the prototype's f0, Q and gain), run as two transposed direct-form II
///   biquads in Float with their state carried across adds. libebur128 runs the product of the
///   two as one 4th-order filter in Double; Float is enough here (the tests hold every reading
///   to 0.01 LU of libebur128's: the RLB pole near z = 1 amplifies rounding by about 1e4, still
///   some 1e-4 of the signal, which is 1e-8 of its energy).
/// - Energies of each 100 ms (frames counted from the first, `(rate + 5) / 10` of them as
///   libebur128 has it), squares summed in Float over at most `chunk` frames, then in Double:
///   momentary is the mean of the last 4, short-term of the last 30, a 400 ms gating block
///   every 100 ms (the mean of the last 4, kept when at least -70 LUFS: the absolute gate) and
///   a 3 s short-term block every second for the loudness range (kept above -70 LUFS). Every
///   channel has weight 1, as LoudnessMeter's channels are all BS.1770 "left".
/// - Integrated loudness and range are computed only when read (`summary`): the relative
///   gates (-10 LU; -20 LU and the 10th–95th percentiles for range, indexed as libebur128
///   indexes them) need all the blocks. The blocks are kept as libebur128 keeps them (a Double
///   each, those above -70 LUFS: at most 10 a second for integrated and 1 for range, 310 KiB
///   an hour whatever the channel count), so a segment's memory grows with its length as
///   before; segments are bounded by `[archive] segment_seconds` (at most a day: 7 MiB).
/// - True peak: a polyphase FIR interpolator with libebur128's design (a 49-tap windowed sinc:
///   4× below 96 kHz, 2× below 192 kHz, none above, where true peak is sample peak), folded
///   along its symmetry (`TruePeakInterpolator`: half the multiplications) and computed from the
///   samples themselves (the last `history` frames of the previous chunk are kept), so any quad
///   of frames can be skipped without state to resynchronise. A quad of 4 frames of 4 channels
///   is interpolated only where the bound its inputs' range sets on its outputs exceeds a
///   channel's true peak so far (`R128LaneGroups`), so a skipped quad has no output above the
///   known peak.
/// - One walk: each chunk (at most `chunk` frames, never across a 100 ms boundary) is gathered,
///   filtered and interpolated one lane group at a time, while that group's frames are in the
///   cache.
///
/// Not thread-safe: one thread feeds and reads it. Allocates only when made and when a
/// gating block is kept.
final class R128Engine {
    let channels: Int
    let sampleRate: Int
    let measuresTruePeak: Bool
    /// Frames in 100 ms, as libebur128 counts them.
    private let hundredMs: Int
    /// Frames handled at a time (the scratch's length).
    static let chunk = 512

    /// The channels' lanes: the filters' and interpolator's state and the gathered frames.
    private let lanes: R128LaneGroups

    public private(set) var framesAdded = 0
    private var sinceBoundary = 0
    /// The 100 ms energies and the gating blocks the readings come from.
    private var blocks = GatingBlocks()

    /// `channels` 1...64 and `sampleRate` 8000...384000, checked by LoudnessMeter.
    init(channels: Int, sampleRate: Int, truePeak: Bool) {
        self.channels = channels
        self.sampleRate = sampleRate
        measuresTruePeak = truePeak
        hundredMs = (sampleRate + 5) / 10
        let filter = KWeightingCoefficients(sampleRate: sampleRate)
        let interpolator = TruePeakInterpolator(sampleRate: sampleRate, truePeak: truePeak)
        lanes = R128LaneGroups(channels: channels, filter: filter, interpolator: interpolator, truePeak: truePeak)
    }

    /// Adds `count` frames: channels `firstChannel ..< firstChannel + channels` of frames
    /// `stride` samples apart.
    func add(interleaved base: UnsafePointer<Float>, frames count: Int, stride: Int, firstChannel: Int) {
        measure(frames: count) { group, done, n in
            lanes.gather(group: group, interleaved: base + done * stride + firstChannel, frames: n, stride: stride)
        }
    }

    /// Adds `count` frames held one run per channel: channel `c` is `channelStarts[c] + offset`
    /// on (a planar capture ring lent in place, or a FLAC block's channels).
    func add(planar channelStarts: UnsafePointer<UnsafePointer<Float>>, offset: Int, frames count: Int) {
        measure(frames: count) { group, done, n in
            lanes.gather(group: group, planar: channelStarts, offset: offset + done, frames: n)
        }
    }

    /// Adds interleaved integer frames of `bitsPerSample` (full scale 2^(bits-1)).
    func add(integers base: UnsafePointer<Int32>, frames count: Int, bitsPerSample: Int) {
        let scale = 1 / Float(Int64(1) << (bitsPerSample - 1))
        measure(frames: count) { group, done, n in
            lanes.gather(group: group, integers: base + done * channels, frames: n, scale: scale)
        }
    }

    /// Measures `count` frames in chunks that end at 100 ms boundaries, a lane group at a time:
    /// `gather(group, first frame, frames)` lays a chunk of one group out, and the group's
    /// filters and true peak walk it while it is in the cache.
    @inline(__always)
    private func measure(frames count: Int, gather: (_ group: Int, _ first: Int, _ frames: Int) -> Void) {
        var done = 0
        while done < count {
            let n = min(R128Engine.chunk, count - done, hundredMs - sinceBoundary)
            for group in 0..<lanes.groups {
                gather(group, done, n)
                lanes.measure(group: group, frames: n)
            }
            done += n
            framesAdded += n
            sinceBoundary += n
            if sinceBoundary == hundredMs {
                sinceBoundary = 0
                blocks.endHundredMs(energy: lanes.takeEnergy() / Double(hundredMs))
            }
        }
    }

    var peakBlocks: (computed: Int, skipped: Int) { lanes.peakBlocks }

    /// Momentary loudness (the last 400 ms to the last 100 ms boundary), LUFS; nil before
    /// 400 ms or for silence.
    var momentaryLUFS: Double? { blocks.momentaryLUFS }

    /// Short-term loudness (the last 3 s to the last 100 ms boundary); nil before 3 s or for silence.
    var shortTermLUFS: Double? { blocks.shortTermLUFS }

    /// Integrated loudness (-70 LUFS absolute, -10 LU relative gate); nil if no block passes.
    var integratedLUFS: Double? { blocks.integratedLUFS }

    /// Loudness range (EBU Tech 3342); 0 with no block.
    var rangeLU: Double { blocks.rangeLU }

    /// Each channel's true peak so far (linear: the highest of its samples and interpolated
    /// values); empty without true peak.
    var channelTruePeaks: [Double] {
        guard measuresTruePeak else { return [] }
        return (0..<channels).map { channel in
            lanes.truePeak(channel: channel)
        }
    }
}

extension KWeightingCoefficients {
    /// BS.1770's K-weighting for one sample rate: its pre-filter (a high shelf) then its RLB
    /// high-pass, as single-precision coefficients.
    init(sampleRate: Int) {
        let rate = Double(sampleRate)
        // BS.1770's pre-filter: a second-order high shelf (+4 dB above about 1.7 kHz) and
        // its RLB high-pass (about 38 Hz), prototypes from libebur128 (which refits them to
        // BS.1770's 48 kHz coefficients), through the bilinear transform with prewarping.
        var f0 = 1681.974450955533
        let gain = 3.999843853973347
        var q = 0.7071752369554196
        var k = recd_r128_tan(Double.pi * f0 / rate)
        let vh = recd_r128_pow(10, gain / 20)
        let vb = recd_r128_pow(vh, 0.4996667741545416)
        var a0 = 1 + k / q + k * k
        let shelf = (
            Float((vh + vb * k / q + k * k) / a0), Float(2 * (k * k - vh) / a0), Float((vh - vb * k / q + k * k) / a0),
            Float(2 * (k * k - 1) / a0), Float((1 - k / q + k * k) / a0)
        )
        f0 = 38.13547087602444
        q = 0.5003270373238773
        k = recd_r128_tan(Double.pi * f0 / rate)
        a0 = 1 + k / q + k * k
        // The high-pass's numerator is 1, -2, 1 unnormalised, as BS.1770 gives it. Its poles lie
        // near z = 1 (1 - 0.0025 at 96 kHz), where a Float a1 ≈ -2 and a2 ≈ 1 would move them
        // by 1 % of their distance from 1 (0.01 LU at 50 Hz): the filter keeps the small
        // distances instead, e1 = 2 + a1 and e2 = 1 - a2, each exact to Float's precision.
        self.init(shelf: shelf, highPass: (Float(2 * (2 * k * k + k / q) / a0), Float(2 * k / q / a0)))
    }
}

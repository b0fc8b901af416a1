// R128Engine's channels across SIMD lanes: the gathered frames, the K-weighting filters and the
// gated true peak of each lane group, walked once per chunk while the group is in cache.
internal import SampleKernels

/// The channels laid out across the lanes of `V`, 8 to a group (one lane a channel, the last
/// group padded with silent lanes): each group's K-weighting state, pending energy and peaks, and
/// its gathered frames (the last `kept` of the previous chunk, then up to `chunk` new ones).
/// `measure` walks a group's new frames once for the filters and each quad's (4 frames') highest
/// and lowest sample, then decides which quads' outputs could raise the peak, then interpolates
/// only those, all while the group's frames are in the cache.
///
/// True peak, per quad of frames and half group of lanes (4 channels, one register): the
/// interpolator's outputs for the quad depend on its samples and the `history` before them, all
/// in the `kept / 4` quads before it and its own, its middle taps' inputs in the 2 (at 2×, 3)
/// quads before it; the highest and lowest of those bound every output
/// (`TruePeakInterpolator.level`, `.nearSpread` and `.farSpread`), and the quad's half is
/// interpolated only where that bound exceeds a lane's true peak so far (the larger of the sample
/// peak, this quad's samples included, and the interpolated peak as of the chunk's start). A
/// quad's half that is not interpolated has no output above what is known, so skipping it changes
/// nothing; deciding the whole chunk before interpolating any of it keeps the interpolation's
/// loop free of the decisions, and only ever interpolates more.
final class R128LaneGroups {
    typealias V = Lanes
    typealias Half = SIMD4<Float>

    let groups: Int
    private let channels: Int
    private let filter: KWeightingCoefficients
    /// Per group: the shelf's two state values, then the high-pass's.
    private let filterState: UnsafeMutablePointer<V>
    /// Per group: squares summed since the last 100 ms boundary.
    private let pendingEnergy: UnsafeMutablePointer<Double>
    /// True peak's oversampling filter (`factor` 1: none).
    private let interpolator: TruePeakInterpolator
    private let measuresTruePeak: Bool
    /// Frames kept from the previous chunk: the interpolator's history rounded up to whole
    /// quads (0 without interpolation).
    private let kept: Int
    /// Per group `kept + chunk` frames.
    private let frames: UnsafeMutablePointer<V>
    private let lane: Int
    /// The group being measured: each quad's highest and lowest sample (the kept frames' quads
    /// first), per half group: quad q's half h at `2 * q + h`.
    private let quadHighest: UnsafeMutablePointer<Half>
    private let quadLowest: UnsafeMutablePointer<Half>
    /// The group being measured: the halves of quads to interpolate, as quad × 2 + half.
    private let candidates: UnsafeMutablePointer<Int32>
    /// Per half group: the highest sample and interpolated magnitudes so far.
    private let samplePeak: UnsafeMutablePointer<Half>
    private let interpolatedPeak: UnsafeMutablePointer<Half>
    /// Quads' halves holding channels that were interpolated and that were skipped.
    private(set) var peakBlocks = (computed: 0, skipped: 0)

    init(channels: Int, filter: KWeightingCoefficients, interpolator: TruePeakInterpolator, truePeak: Bool) {
        self.channels = channels
        groups = (channels + V.scalarCount - 1) / V.scalarCount
        self.filter = filter
        self.interpolator = interpolator
        measuresTruePeak = truePeak
        filterState = .allocate(capacity: groups * 4)
        filterState.initialize(repeating: .zero, count: groups * 4)
        pendingEnergy = .allocate(capacity: groups)
        pendingEnergy.initialize(repeating: 0, count: groups)
        kept = (interpolator.history + 3) / 4 * 4
        precondition(
            kept == 0 || ([12, 24].contains(kept) && interpolator.near == (kept / 2 - 2)...(kept / 2 + 1)),
            "the true-peak windows are written for 0, 3 or 6 quads and the 4 middle taps")
        lane = kept + R128Engine.chunk
        frames = .allocate(capacity: groups * lane)
        frames.initialize(repeating: .zero, count: groups * lane)
        let quads = lane / 4 + 1
        quadHighest = .allocate(capacity: 2 * quads)
        quadHighest.initialize(repeating: .zero, count: 2 * quads)
        quadLowest = .allocate(capacity: 2 * quads)
        quadLowest.initialize(repeating: .zero, count: 2 * quads)
        candidates = .allocate(capacity: 2 * quads)
        candidates.initialize(repeating: 0, count: 2 * quads)
        samplePeak = .allocate(capacity: 2 * groups)
        samplePeak.initialize(repeating: .zero, count: 2 * groups)
        interpolatedPeak = .allocate(capacity: 2 * groups)
        interpolatedPeak.initialize(repeating: .zero, count: 2 * groups)
    }

    deinit {
        filterState.deallocate()
        pendingEnergy.deallocate()
        frames.deallocate()
        quadHighest.deallocate()
        quadLowest.deallocate()
        candidates.deallocate()
        samplePeak.deallocate()
        interpolatedPeak.deallocate()
    }

    /// Where `group`'s new frames go, and how many of its lanes hold channels.
    @inline(__always)
    private func destination(_ group: Int) -> (frames: UnsafeMutablePointer<V>, used: Int) {
        (frames + group * lane + kept, min(V.scalarCount, channels - group * V.scalarCount))
    }

    /// A whole group is one unaligned load a frame; a partial one sample by sample.
    func gather(group: Int, interleaved base: UnsafePointer<Float>, frames n: Int, stride: Int) {
        let (to, used) = destination(group)
        let first = base + group * V.scalarCount
        if used == V.scalarCount {
            let from = UnsafeRawPointer(first)
            let step = stride * MemoryLayout<Float>.stride
            for frame in 0..<n { to[frame] = from.loadUnaligned(fromByteOffset: frame * step, as: V.self) }
            return
        }
        to.withMemoryRebound(to: Float.self, capacity: n * V.scalarCount) { floats in
            for index in 0..<used {
                var from = first + index
                for frame in 0..<n {
                    floats[frame * V.scalarCount + index] = from.pointee
                    from += stride
                }
            }
        }
    }

    /// Four channels at a time: four frames of each loaded as a vector, transposed into four
    /// frames of four lanes (a scalar store a sample is some 3× slower); the rest one by one.
    func gather(group: Int, planar channelStarts: UnsafePointer<UnsafePointer<Float>>, offset: Int, frames n: Int) {
        let width = V.scalarCount
        let (to, used) = destination(group)
        let first = group * width
        to.withMemoryRebound(to: Float.self, capacity: n * width) { floats in
            var index = 0
            while index + 4 <= used {
                let a = UnsafeRawPointer(channelStarts[first + index] + offset)
                let b = UnsafeRawPointer(channelStarts[first + index + 1] + offset)
                let c = UnsafeRawPointer(channelStarts[first + index + 2] + offset)
                let d = UnsafeRawPointer(channelStarts[first + index + 3] + offset)
                let to = UnsafeMutableRawPointer(floats + index)
                let row = width * MemoryLayout<Float>.stride
                var frame = 0
                while frame + 4 <= n {
                    let at = frame * MemoryLayout<Float>.stride
                    let (w, x, y, z) = Self.transpose(
                        a.loadUnaligned(fromByteOffset: at, as: Half.self),
                        b.loadUnaligned(fromByteOffset: at, as: Half.self),
                        c.loadUnaligned(fromByteOffset: at, as: Half.self),
                        d.loadUnaligned(fromByteOffset: at, as: Half.self))
                    to.storeBytes(of: w, toByteOffset: frame * row, as: Half.self)
                    to.storeBytes(of: x, toByteOffset: (frame + 1) * row, as: Half.self)
                    to.storeBytes(of: y, toByteOffset: (frame + 2) * row, as: Half.self)
                    to.storeBytes(of: z, toByteOffset: (frame + 3) * row, as: Half.self)
                    frame += 4
                }
                for rest in frame..<n {
                    for lane in 0..<4 {
                        floats[rest * width + index + lane] = channelStarts[first + index + lane][offset + rest]
                    }
                }
                index += 4
            }
            for lane in index..<used {
                let from = channelStarts[first + lane] + offset
                for frame in 0..<n { floats[frame * width + lane] = from[frame] }
            }
        }
    }

    /// Rows a, b, c, d as columns.
    @inline(__always)
    private static func transpose(_ a: Half, _ b: Half, _ c: Half, _ d: Half) -> (Half, Half, Half, Half) {
        // (a0 b0 a1 b1), (a2 b2 a3 b3), (c0 d0 c1 d1), (c2 d2 c3 d3): unpcklps/unpckhps, then
        // their halves joined (movlhps/movhlps).
        let ab = SIMD8(lowHalf: a, highHalf: b)
        let cd = SIMD8(lowHalf: c, highHalf: d)
        let abLow = Half(ab[0], ab[4], ab[1], ab[5])
        let abHigh = Half(ab[2], ab[6], ab[3], ab[7])
        let cdLow = Half(cd[0], cd[4], cd[1], cd[5])
        let cdHigh = Half(cd[2], cd[6], cd[3], cd[7])
        return (
            Half(lowHalf: abLow.lowHalf, highHalf: cdLow.lowHalf),
            Half(lowHalf: abLow.highHalf, highHalf: cdLow.highHalf),
            Half(lowHalf: abHigh.lowHalf, highHalf: cdHigh.lowHalf),
            Half(lowHalf: abHigh.highHalf, highHalf: cdHigh.highHalf)
        )
    }

    func gather(group: Int, integers base: UnsafePointer<Int32>, frames n: Int, scale: Float) {
        let (to, used) = destination(group)
        let first = base + group * V.scalarCount
        to.withMemoryRebound(to: Float.self, capacity: n * V.scalarCount) { floats in
            for index in 0..<used {
                var from = first + index
                for frame in 0..<n {
                    floats[frame * V.scalarCount + index] = Float(from.pointee) * scale
                    from += channels
                }
            }
        }
    }

    /// Measures `n` frames just gathered into `group`: loudness, then true peak, then keeps the
    /// last `kept` frames for the next chunk.
    func measure(group: Int, frames n: Int) {
        guard measuresTruePeak else {
            kWeight(group: group, frames: n, quads: false)
            return
        }
        kWeight(group: group, frames: n, quads: true)
        let found = candidates(group: group, frames: n)
        if found > 0 { interpolate(group: group, candidates: found, frames: n) }
        let lanes = frames + group * lane
        lanes.update(from: lanes + n, count: kept)
    }

    /// The K-weighting filters over the group's `n` new frames, their squares into its pending
    /// energy, and with `quads` each quad's highest and lowest sample.
    @inline(__always)
    private func kWeight(group: Int, frames n: Int, quads: Bool) {
        let input = UnsafePointer(frames + group * lane + kept)
        let state = filterState + group * 4
        pendingEnergy[group] +=
            quads
            ? Walks.current.kWeightedEnergy(
                input, frames: n, filter: filter, state: state,
                extremes: QuadExtremes(highest: quadHighest, lowest: quadLowest, first: kept / 4))
            : Walks.current.kWeightedEnergy(input, frames: n, filter: filter, state: state)
    }

    func takeEnergy() -> Double {
        var sum = 0.0
        for group in 0..<groups {
            sum += pendingEnergy[group]
            pendingEnergy[group] = 0
        }
        return sum
    }

    /// The group's sample peaks over its `n` new frames, and the halves of its quads whose
    /// outputs could exceed a lane's peak so far into `candidates`; returns how many.
    private func candidates(group: Int, frames n: Int) -> Int {
        let before = frames + group * lane
        let reach = kept / 4
        for quad in 0..<reach {
            var highest = before[4 * quad]
            var lowest = highest
            for frame in (4 * quad + 1)..<(4 * quad + 4) {
                highest = highest.larger(before[frame])
                lowest = lowest.smaller(before[frame])
            }
            quadHighest[2 * quad] = highest.lowHalf
            quadHighest[2 * quad + 1] = highest.highHalf
            quadLowest[2 * quad] = lowest.lowHalf
            quadLowest[2 * quad + 1] = lowest.highHalf
        }
        let quads = (n + 3) / 4
        let used = min(V.scalarCount, channels - group * V.scalarCount)
        var found = 0
        for half in 0..<((used + 3) / 4) {
            let peak = 2 * group + half
            var sample = samplePeak[peak]
            guard reach > 0 else {
                for quad in reach..<(reach + quads) {
                    sample = sample.larger(quadHighest[2 * quad + half].larger(-quadLowest[2 * quad + half]))
                }
                samplePeak[peak] = sample
                continue
            }
            let known = interpolatedPeak[peak]
            let level = Half(repeating: interpolator.level)
            let nearSpread = Half(repeating: interpolator.nearSpread)
            let farSpread = Half(repeating: interpolator.farSpread)
            let halving = Half(repeating: 0.5)
            for quad in reach..<(reach + quads) {
                let at = 2 &* quad &+ half  // wrapping: no overflow checks on these indices
                sample = sample.larger(quadHighest[at].larger(-quadLowest[at]))
                // All the inputs: the quad and the 3 before it (at 2×, the 6 before it). The
                // middle taps' inputs: the 2 quads before it (at 2×, the 3 before the one
                // before it): frames 7...1 (13...7) before the quad's first, through 4...1
                // (10...7) before its last.
                var highest = quadHighest[at].larger(quadHighest[at &- 2]).larger(quadHighest[at &- 4])
                    .larger(quadHighest[at &- 6])
                var lowest = quadLowest[at].smaller(quadLowest[at &- 2]).smaller(quadLowest[at &- 4])
                    .smaller(quadLowest[at &- 6])
                var nearHighest: Half
                var nearLowest: Half
                if reach > 3 {
                    highest = highest.larger(quadHighest[at &- 8]).larger(quadHighest[at &- 10])
                        .larger(quadHighest[at &- 12])
                    lowest = lowest.smaller(quadLowest[at &- 8]).smaller(quadLowest[at &- 10])
                        .smaller(quadLowest[at &- 12])
                    nearHighest = quadHighest[at &- 4].larger(quadHighest[at &- 6]).larger(quadHighest[at &- 8])
                    nearLowest = quadLowest[at &- 4].smaller(quadLowest[at &- 6]).smaller(quadLowest[at &- 8])
                } else {
                    nearHighest = quadHighest[at &- 2].larger(quadHighest[at &- 4])
                    nearLowest = quadLowest[at &- 2].smaller(quadLowest[at &- 4])
                }
                let middle = (nearHighest + nearLowest) * halving
                let far = (highest - middle).larger(middle - lowest)
                // The bound exceeds the peak so far where level · |m| exceeds what the spreads
                // leave of it (compared without an absolute value: see `outputPeak`).
                let room = known.larger(sample) - nearSpread * (nearHighest - nearLowest) - farSpread * far
                let scaled = level * middle
                candidates[found] = Int32(truncatingIfNeeded: at)
                found &+= any((scaled .> room) .| (scaled .< -room)) ? 1 : 0
            }
            samplePeak[peak] = sample
        }
        if reach > 0 {
            peakBlocks.computed += found
            peakBlocks.skipped += quads * ((used + 3) / 4) - found
        }
        return found
    }

    /// Interpolates the group's `found` candidates (`frames n` new frames) and raises its
    /// interpolated peaks to their outputs' highest magnitudes.
    private func interpolate(group: Int, candidates found: Int, frames n: Int) {
        let end = kept + n
        (frames + group * lane).withMemoryRebound(to: Half.self, capacity: 2 * lane) { halves in
            for index in 0..<found {
                let candidate = Int(candidates[index])
                let (quad, half) = (candidate >> 1, candidate & 1)
                let from = 4 * quad
                let to = min(from + 4, end)
                let highest =
                    interpolator.factor == 4
                    ? outputPeak(halves + half, from: from, to: to, pairs: 6, outer: true)
                    : outputPeak(halves + half, from: from, to: to, pairs: 12, outer: false)
                let peak = interpolatedPeak + 2 * group + half
                peak.pointee = peak.pointee.larger(highest)
            }
        }
    }

    /// The highest magnitude of the interpolator's non-trivial phases' outputs for frames
    /// `from..<to` of one half group (frame f's lanes at `lanes[2 * f]`, `history` frames before
    /// `from` included): tap pairs of the folded form (`TruePeakInterpolator`), the outer
    /// phases (y1 = S + D, y3 = S - D) at 4× only. Constant `pairs` and `outer` where called, so
    /// the taps unroll. Written for the code LLVM makes of Swift's SIMD operations, which reach it
    /// lane by lane and are vectorized again there: sums start from the first tap's product,
    /// not from zero, and outputs are kept as their highest and lowest, not as magnitudes (an
    /// absolute value inside this loop gets its lanes shuffled apart, 30 shuffles an output).
    @inline(__always)
    private func outputPeak(_ lanes: UnsafeMutablePointer<Half>, from: Int, to: Int, pairs: Int, outer: Bool) -> Half {
        let middle = interpolator.middle
        let outerSum = interpolator.outerSum
        let outerDifference = interpolator.outerDifference
        let span = 2 * interpolator.history
        var highest = Half.zero
        var lowest = Half.zero
        for frame in from..<to {
            let newest = lanes + 2 * frame
            let oldest = newest - span
            let u = newest[0] + oldest[0]
            var centre = middle[0] * u
            var sum = outerSum[0] * u
            var difference = outerDifference[0] * (newest[0] - oldest[0])
            for tap in 1..<pairs {
                let a = newest[-2 * tap]
                let b = oldest[2 * tap]
                let u = a + b
                centre += middle[tap] * u
                if outer {
                    sum += outerSum[tap] * u
                    difference += outerDifference[tap] * (a - b)
                }
            }
            highest = highest.larger(centre)
            lowest = lowest.smaller(centre)
            if outer {
                let (first, third) = (sum + difference, sum - difference)
                highest = highest.larger(first).larger(third)
                lowest = lowest.smaller(first).smaller(third)
            }
        }
        return highest.larger(-lowest)
    }

    func truePeak(channel: Int) -> Double {
        let half = channel / 4
        let index = channel % 4
        return Double(max(samplePeak[half][index], interpolatedPeak[half][index]))
    }
}

// The K-weighting filters across a lane group's channels: R128Engine's hottest walk, written once
// here and compiled twice, for the baseline CPU (`BaselineWalks`) and for x86-64-v3
// (`SampleKernelsAVX2`), which runs a lane group in one AVX register instead of two SSE ones.

/// BS.1770's pre-filter over one lane group: the high shelf's coefficients (b0, b1, b2, a1, a2;
/// a0 = 1) and the RLB high-pass's denominator as e1 = 2 + a1, e2 = 1 - a2 (numerator 1, -2, 1).
@frozen
public struct KWeightingCoefficients: Sendable {
    public let shelf: (Float, Float, Float, Float, Float)
    public let highPass: (Float, Float)

    @inlinable
    public init(shelf: (Float, Float, Float, Float, Float), highPass: (Float, Float)) {
        self.shelf = shelf
        self.highPass = highPass
    }
}

/// Where one lane group's walk writes each quad's (4 frames') highest and lowest sample, per half
/// group (quad q's half h at `2 * q + h`), starting at quad `first`: R128LaneGroups' true-peak
/// screening reads them.
@frozen
public struct QuadExtremes {
    public let highest: UnsafeMutablePointer<SIMD4<Float>>
    public let lowest: UnsafeMutablePointer<SIMD4<Float>>
    public let first: Int

    @inlinable
    public init(highest: UnsafeMutablePointer<SIMD4<Float>>, lowest: UnsafeMutablePointer<SIMD4<Float>>, first: Int) {
        self.highest = highest
        self.lowest = lowest
        self.first = first
    }
}

/// One lane group's K-weighting filters as they walk: the shelf's two state values, then the
/// high-pass's, and the squares of the filtered samples so far.
@usableFromInline
struct KWeightingWalk {
    @usableFromInline var s1: Lanes
    @usableFromInline var s2: Lanes
    @usableFromInline var h1: Lanes
    @usableFromInline var h2: Lanes
    @usableFromInline var squares = Lanes.zero

    @inlinable @inline(__always)
    init(_ state: UnsafeMutablePointer<Lanes>) {
        s1 = state[0]
        s2 = state[1]
        h1 = state[2]
        h2 = state[3]
    }

    /// One frame through both filters, its square summed.
    @inlinable @inline(__always)
    mutating func step(_ x: Lanes, _ c: KWeightingLanes) {
        let y = c.sb0 * x + s1
        s1 = c.sb1 * x - c.sa1 * y + s2
        s2 = c.sb2 * x - c.sa2 * y
        // Transposed direct form II with b = 1, -2, 1 and a1 = e1 - 2, a2 = 1 - e2.
        let z = y + h1
        let d = y - z
        h1 = h2 - (d + d) - c.e1 * z
        h2 = d + c.e2 * z
        squares += z * z
    }

    /// The states back into `state`, those that have decayed below any audible level flushed to 0
    /// before they turn subnormal (subnormal arithmetic is some 100× slower on x86); returns the
    /// squares' sum (in Float over the walk, so a walk is at most a few hundred frames, then in
    /// Double across lanes).
    @inlinable @inline(__always)
    func finish(_ state: UnsafeMutablePointer<Lanes>) -> Double {
        let tiny = Lanes(repeating: 1e-30)
        state[0] = s1.flushed(below: tiny)
        state[1] = s2.flushed(below: tiny)
        state[2] = h1.flushed(below: tiny)
        state[3] = h2.flushed(below: tiny)
        var energy = 0.0
        for index in 0..<Lanes.scalarCount { energy += Double(squares[index]) }
        return energy
    }
}

/// The coefficients broadcast to every lane once (a scalar times a vector is SIMD's generic
/// lane-by-lane code).
@usableFromInline
struct KWeightingLanes {
    @usableFromInline let sb0, sb1, sb2, sa1, sa2, e1, e2: Lanes

    @inlinable @inline(__always)
    init(_ filter: KWeightingCoefficients) {
        sb0 = Lanes(repeating: filter.shelf.0)
        sb1 = Lanes(repeating: filter.shelf.1)
        sb2 = Lanes(repeating: filter.shelf.2)
        sa1 = Lanes(repeating: filter.shelf.3)
        sa2 = Lanes(repeating: filter.shelf.4)
        e1 = Lanes(repeating: filter.highPass.0)
        e2 = Lanes(repeating: filter.highPass.1)
    }
}

/// A quad's (4 frames') highest and lowest sample as they are found.
@usableFromInline
struct QuadRange {
    @usableFromInline var highest: Lanes
    @usableFromInline var lowest: Lanes

    @inlinable @inline(__always)
    init(_ x: Lanes) {
        highest = x
        lowest = x
    }

    @inlinable @inline(__always)
    mutating func include(_ x: Lanes) {
        highest = highest.larger(x)
        lowest = lowest.smaller(x)
    }

    @inlinable @inline(__always)
    func store(_ extremes: QuadExtremes, quad: Int) {
        extremes.highest[2 * quad] = highest.lowHalf
        extremes.highest[2 * quad + 1] = highest.highHalf
        extremes.lowest[2 * quad] = lowest.lowHalf
        extremes.lowest[2 * quad + 1] = lowest.highHalf
    }
}

/// The K-weighting filters over `n` frames of one lane group, its four filter states carried in
/// `state`; returns the sum of the filtered samples' squares. With `extremes`, each quad's highest
/// and lowest sample go there. (Two groups walked at once, so that one's chain of dependent
/// operations fills the other's wait, gained only a tenth with AVX2: the walk is bound by the
/// arithmetic, not its latency.)
@inlinable @inline(__always)
public func kWeightedEnergy(
    _ input: UnsafePointer<Lanes>, frames n: Int, filter: KWeightingCoefficients,
    state: UnsafeMutablePointer<Lanes>, extremes: QuadExtremes?
) -> Double {
    let c = KWeightingLanes(filter)
    var walk = KWeightingWalk(state)
    var quad = extremes?.first ?? 0
    var frame = 0
    while frame < n {
        let end = min(frame + 4, n)
        var range = QuadRange(input[frame])
        while frame < end {
            let x = input[frame]
            walk.step(x, c)
            if extremes != nil { range.include(x) }
            frame += 1
        }
        if let extremes {
            range.store(extremes, quad: quad)
            quad += 1
        }
    }
    return walk.finish(state)
}

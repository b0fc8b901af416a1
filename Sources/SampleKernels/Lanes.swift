// The lanes the walks work on, and what they do with them beyond arithmetic: for a lane group
// (`SIMD8`) and for the half of one R128LaneGroups' interpolator works on (`SIMD4`). Written for
// each concrete type, not once for `SIMD`: a debug build runs generic SIMD code through witness
// tables, and debug builds record in the tests.

/// Eight channels, one to a lane.
public typealias Lanes = SIMD8<Float>

extension SIMD8 where Scalar == Float {
    /// |lanes| (the sign bit cleared: one instruction).
    @inlinable @inline(__always)
    public var magnitude: Self {
        unsafeBitCast(unsafeBitCast(self, to: SIMD8<UInt32>.self) & 0x7fff_ffff, to: Self.self)
    }
    /// The larger of each lane: `maxps` (`pointwiseMax` compiles to scalar compares, NaN-careful;
    /// these values are never NaN from finite audio).
    @inlinable @inline(__always)
    public func larger(_ other: Self) -> Self { replacing(with: other, where: other .> self) }
    /// The smaller of each lane: `minps`.
    @inlinable @inline(__always)
    public func smaller(_ other: Self) -> Self { replacing(with: other, where: other .< self) }
    /// The largest lane, by halving with `larger` (`maxps`): for lanes holding no NaN, as a
    /// running maximum kept by `larger` never does. The standard library's `max()` is a call
    /// (not inlined) that takes the lanes one by one.
    @inlinable @inline(__always)
    public var largestLane: Float {
        let four = lowHalf.larger(highHalf)
        let two = four.lowHalf.replacing(with: four.highHalf, where: four.highHalf .> four.lowHalf)
        return two.y > two.x ? two.y : two.x
    }
    /// Lanes smaller in magnitude than `tiny` set to 0.
    @inlinable @inline(__always)
    public func flushed(below tiny: Self) -> Self { replacing(with: 0, where: magnitude .< tiny) }
}

extension SIMD4 where Scalar == Float {
    @inlinable @inline(__always)
    public func larger(_ other: Self) -> Self { replacing(with: other, where: other .> self) }
    @inlinable @inline(__always)
    public func smaller(_ other: Self) -> Self { replacing(with: other, where: other .< self) }
}

// Seeded, replayable randomness for the randomized tests (the pure policy walk and the
// end-to-end one): the same seed gives the same steps on every machine.
import Foundation

/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny deterministic generator, the same on every
/// platform, so that a seed printed by a failing run replays exactly. The one copy for every
/// test target (config garbage, protocol floods, the randomized arbitration walks).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0..<bound.
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    public mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    public mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}

/// The seeds a randomized test runs: `RECD_RANDOM_SEED=N` alone (a replay), or `count` seeds
/// from `base` (`RECD_RANDOM_SEEDS=N` runs N instead, for a longer soak).
public func randomSeeds(count: Int, base: UInt64) -> [UInt64] {
    let environment = ProcessInfo.processInfo.environment
    if let text = environment["RECD_RANDOM_SEED"], let seed = UInt64(text) { return [seed] }
    let count = environment["RECD_RANDOM_SEEDS"].flatMap { Int($0) } ?? count
    return (0..<UInt64(count)).map { base &+ $0 }
}

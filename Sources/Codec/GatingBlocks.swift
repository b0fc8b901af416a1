// What R128Engine's loudness readings are made of: the 100 ms energies and the blocks gated
// from them (BS.1770 for integrated loudness, EBU Tech 3342 for its range, gated and indexed
// as libebur128 gates and indexes them).

internal import CEbur128

/// The energies of each 100 ms of a measurement and the blocks kept from them: momentary is the
/// mean of the last 4, short-term of the last 30; a 400 ms gating block every 100 ms and a 3 s
/// short-term block every second are kept when at least -70 LUFS (the absolute gate), a Double
/// each (at most 10 a second for integrated and 1 for range: 310 KiB an hour), so its memory
/// grows with the segment's length, as libebur128's does.
struct GatingBlocks {
    /// The absolute gate, -70 LUFS, as an energy.
    static let absoluteGate = recd_ebur128_energy(-70)

    /// 100 ms boundaries passed.
    private(set) var boundaries = 0
    /// The energies of the last 30 whole 100 ms (a ring; unwritten slots read 0).
    private var energies = [Double](repeating: 0, count: 30)
    private var nextEnergy = 0
    /// Gating blocks (400 ms) and short-term blocks (3 s) at or above the absolute gate.
    private var blockEnergies: [Double] = []
    private var shortTermEnergies: [Double] = []

    /// A 100 ms boundary, with the mean energy of the 100 ms it ends: into the ring, and the
    /// gating blocks that end here.
    mutating func endHundredMs(energy: Double) {
        energies[nextEnergy] = energy
        nextEnergy = (nextEnergy + 1) % energies.count
        boundaries += 1
        if boundaries >= 4 {
            let block = meanEnergy(ofLast: 4)
            if block >= Self.absoluteGate { blockEnergies.append(block) }
        }
        if boundaries >= 30 && (boundaries - 30) % 10 == 0 {
            let block = meanEnergy(ofLast: 30)
            if block >= Self.absoluteGate { shortTermEnergies.append(block) }
        }
    }

    private func meanEnergy(ofLast count: Int) -> Double {
        var sum = 0.0
        for back in 1...count { sum += energies[(nextEnergy - back + energies.count) % energies.count] }
        return sum / Double(count)
    }

    /// Momentary loudness (the last 400 ms to the last 100 ms boundary), LUFS; nil before
    /// 400 ms or for silence.
    var momentaryLUFS: Double? { boundaries >= 4 ? Self.loudness(meanEnergy(ofLast: 4)) : nil }

    /// Short-term loudness (the last 3 s to the last 100 ms boundary); nil before 3 s or for silence.
    var shortTermLUFS: Double? { boundaries >= 30 ? Self.loudness(meanEnergy(ofLast: 30)) : nil }

    private static func loudness(_ energy: Double) -> Double? {
        guard energy > 0 else { return nil }
        let value = recd_ebur128_loudness(energy)
        return value.isFinite ? value : nil
    }

    /// Integrated loudness (-70 LUFS absolute, -10 LU relative gate); nil if no block passes.
    var integratedLUFS: Double? {
        guard !blockEnergies.isEmpty else { return nil }
        let threshold = blockEnergies.reduce(0, +) / Double(blockEnergies.count) * 0.1
        var sum = 0.0
        var count = 0
        for energy in blockEnergies where energy >= threshold {
            sum += energy
            count += 1
        }
        return count > 0 ? Self.loudness(sum / Double(count)) : nil
    }

    /// Loudness range (EBU Tech 3342): short-term blocks above -70 LUFS and -20 LU below their
    /// mean, the 95th percentile's loudness less the 10th's; 0 with no block.
    var rangeLU: Double {
        guard !shortTermEnergies.isEmpty else { return 0 }
        let sorted = shortTermEnergies.sorted()
        let threshold = sorted.reduce(0, +) / Double(sorted.count) * 0.01
        let gated = sorted.drop { $0 < threshold }
        guard !gated.isEmpty else { return 0 }
        let first = gated.startIndex
        let high = gated[first + Int(Double(gated.count - 1) * 0.95 + 0.5)]
        let low = gated[first + Int(Double(gated.count - 1) * 0.1 + 0.5)]
        return recd_ebur128_loudness(high) - recd_ebur128_loudness(low)
    }
}

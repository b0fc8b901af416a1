import Foundation
import Platform
import SampleKernels
import SampleKernelsAVX2
import TestSupport
import Testing

/// SampleKernels' two builds of one code: the baseline's and x86-64-v3's must give the same
/// bits for every walk (no FMA contraction, no reassociation: the same operations in the same
/// order, on wider registers), and the CPU check must agree with what the kernel reports.
@Suite("Sample walks")
struct SampleWalksTests {
    /// Brown-ish noise with edge values mixed in, `frames` frames of eight lanes.
    static func lanes(frames: Int, seed: UInt64) -> [Lanes] {
        var generator = SplitMix64(seed: seed)
        var level = Lanes.zero
        return (0..<frames).map { frame in
            var step = Lanes.zero
            for lane in 0..<8 { step[lane] = Float.random(in: -0.05...0.05, using: &generator) }
            level += step
            level.replace(with: Lanes(repeating: 0.999), where: level .> 0.999)
            level.replace(with: Lanes(repeating: -1), where: level .< -1)
            var frameLanes = level
            if frame % 97 == 5 { frameLanes[frame % 8] = [0, -0.0, 1, -1, 1e-38, -1e-38, 0.5, -0.5][frame % 8] }
            return frameLanes
        }
    }

    static let coefficients = KWeightingCoefficients(
        shelf: (1.53512485958697, -2.69169618940638, 1.19839281085285, -1.69065929318241, 0.73248077421585),
        highPass: (2 - 1.99004745483398, 1 - 0.99007225036621))

    struct Walked: Equatable {
        var energies: [UInt64] = []
        var states: [UInt32] = []
        var highest: [UInt32] = []
        var lowest: [UInt32] = []
    }

    static func walk(_ walks: any SampleWalks.Type, input: [Lanes], extremes: Bool) -> Walked {
        var walked = Walked()
        var state = [Lanes](repeating: .zero, count: 4)
        let quads = (input.count + 3) / 4 + 2
        var highest = [SIMD4<Float>](repeating: .zero, count: 2 * quads)
        var lowest = [SIMD4<Float>](repeating: .zero, count: 2 * quads)
        // Walks of uneven lengths, as R128Engine's chunks end at 100 ms boundaries.
        var done = 0
        for length in [1, 3, 4, 255, 512, 100, 512, 7] where done + length <= input.count {
            input.withUnsafeBufferPointer { frames in
                state.withUnsafeMutableBufferPointer { state in
                    highest.withUnsafeMutableBufferPointer { highest in
                        lowest.withUnsafeMutableBufferPointer { lowest in
                            let energy =
                                extremes
                                ? walks.kWeightedEnergy(
                                    frames.baseAddress! + done, frames: length, filter: coefficients,
                                    state: state.baseAddress!,
                                    extremes: QuadExtremes(highest: highest.baseAddress!, lowest: lowest.baseAddress!, first: 2))
                                : walks.kWeightedEnergy(
                                    frames.baseAddress! + done, frames: length, filter: coefficients, state: state.baseAddress!)
                            walked.energies.append(energy.bitPattern)
                        }
                    }
                }
            }
            for lanes in state { for lane in 0..<8 { walked.states.append(lanes[lane].bitPattern) } }
            for (high, low) in zip(highest, lowest) {
                for lane in 0..<4 {
                    walked.highest.append(high[lane].bitPattern)
                    walked.lowest.append(low[lane].bitPattern)
                }
            }
            done += length
        }
        return walked
    }

    @Test("the K-weighting walk gives the same bits in both builds, with and without the quads' extremes",
          .enabled(if: Processor.runsX86_64v3, "this CPU does not run x86-64-v3: only the baseline build runs here"),
          arguments: [false, true])
    func kWeightingBuildsAgree(extremes: Bool) {
        let input = SampleWalksTests.lanes(frames: 1394, seed: 47)
        let baseline = SampleWalksTests.walk(BaselineWalks.self, input: input, extremes: extremes)
        let wide = SampleWalksTests.walk(AVX2Walks.self, input: input, extremes: extremes)
        #expect(baseline.energies.count == 8)
        // The walk measured something: energy grows and the states moved.
        #expect(baseline.energies.contains { Double(bitPattern: $0) > 0 })
        #expect(baseline.states.contains { $0 != 0 })
        #expect(baseline.energies == wide.energies)
        #expect(baseline.states == wide.states)
        #expect(baseline.highest == wide.highest)
        #expect(baseline.lowest == wide.lowest)
        if extremes { #expect(baseline.highest.contains { Float(bitPattern: $0) > 0 }) }
    }

    @Test("the quantizer's run gives the same integers in both builds, for every length and edge value",
          .enabled(if: Processor.runsX86_64v3, "this CPU does not run x86-64-v3: only the baseline build runs here"),
          arguments: [16, 24])
    func quantizingBuildsAgree(bits: Int) {
        let scale = Float(Int32(1) << Int32(bits - 1))
        var generator = SplitMix64(seed: UInt64(bits))
        var samples: [Float] = [.nan, -.nan, .infinity, -.infinity, 0, -0.0, 1, -1, 0.5 / scale, -0.5 / scale, 1.5 / scale]
        while samples.count < 5000 {
            samples.append(
                Bool.random(using: &generator)
                    ? Float(bitPattern: UInt32.random(in: 0...UInt32.max, using: &generator))
                    : (Float(Int.random(in: -Int(scale)...Int(scale), using: &generator)) + 0.5) / scale)
        }
        var mismatches = 0
        for count in [0, 1, 7, 8, 9, 15, 16, 17, 1000, 4999] {
            var baseline = [Int32](repeating: 99, count: count)
            var wide = [Int32](repeating: 98, count: count)
            samples.withUnsafeBufferPointer { input in
                baseline.withUnsafeMutableBufferPointer {
                    BaselineWalks.quantize(input.baseAddress! + 1, count: count, scale: scale, into: $0.baseAddress!)
                }
                wide.withUnsafeMutableBufferPointer {
                    AVX2Walks.quantize(input.baseAddress! + 1, count: count, scale: scale, into: $0.baseAddress!)
                }
            }
            mismatches += zip(baseline, wide).filter { $0 != $1 }.count
            for (index, value) in baseline.enumerated() where value != quantizedSample(samples[1 + index], scale: scale) {
                mismatches += 1
            }
        }
        #expect(mismatches == 0)
    }

    @Test("the CPU check agrees with the kernel's flags in /proc/cpuinfo")
    func processorCheckAgreesWithKernel() throws {
        let info = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        guard let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags") }) else {
            Issue.record("no flags line in /proc/cpuinfo")
            return
        }
        let flags = Set(line.split(separator: ":", maxSplits: 1).last!.split(separator: " ").map(String.init))
        #if arch(x86_64)
        // x86-64-v3 as the psABI defines it, in the kernel's names (abm: LZCNT; osxsave is
        // implied by the kernel listing avx at all).
        let level = ["avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave", "cx16", "lahf_lm", "popcnt",
                     "pni", "ssse3", "sse4_1", "sse4_2"]
        let missing = level.filter { !flags.contains($0) }
        #expect(Processor.runsX86_64v3 == missing.isEmpty, "the kernel lacks \(missing)")
        #else
        #expect(!Processor.runsX86_64v3)
        #endif
    }
}

// Which build of SampleKernels' walks this process runs.
import Platform
package import SampleKernels
internal import SampleKernelsAVX2

/// The build of the sample walks this CPU runs: x86-64-v3's (`AVX2Walks`) where it runs
/// (`Processor.runsX86_64v3`), else the baseline's. Both give the same bits. Codec's loudness
/// and quantizer, and Archive's silence and level stages, walk samples through it.
package enum Walks {
    package static let current: any SampleWalks.Type = Processor.runsX86_64v3 ? AVX2Walks.self : BaselineWalks.self

    /// `current` as recd's start-up log names it.
    package static var name: String {
        current == AVX2Walks.self ? "x86-64-v3 (AVX2)" : "baseline (this CPU does not run x86-64-v3)"
    }
}

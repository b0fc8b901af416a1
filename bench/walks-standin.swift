// The benches' stand-in for Codec's `Walks` (which asks Platform's `Processor`, CPUID): the build
// bench/kernels.sh chose for this CPU, which it exports as RECD_BENCH_WALKS (x86-64-v3 or
// baseline; unset: the baseline's). Compiled into each bench (bench/kernels.sh).
import Glibc
internal import SampleKernels
internal import SampleKernelsAVX2

enum Walks {
    static let current: any SampleWalks.Type =
        getenv("RECD_BENCH_WALKS").map { String(cString: $0) } == "x86-64-v3" ? AVX2Walks.self : BaselineWalks.self
}

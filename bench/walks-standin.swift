// The benches' stand-in for Codec's `Walks` (which asks Platform's `Processor`, CPUID): the
// x86-64-v3 build where the kernel lists that level's flags, else the baseline's;
// RECD_BENCH_WALKS=baseline forces the baseline's. Compiled into each bench (bench/kernels.sh).
import Glibc
internal import SampleKernels
internal import SampleKernelsAVX2

enum Walks {
    static let current: any SampleWalks.Type = {
        if let forced = getenv("RECD_BENCH_WALKS"), String(cString: forced) == "baseline" { return BaselineWalks.self }
        return cpuListsX86_64v3() ? AVX2Walks.self : BaselineWalks.self
    }()

    static var name: String { current == AVX2Walks.self ? "x86-64-v3" : "baseline" }

    private static func cpuListsX86_64v3() -> Bool {
        guard let file = fopen("/proc/cpuinfo", "r") else { return false }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var size = 0
        defer { free(line) }
        while getline(&line, &size, file) > 0 {
            let text = String(cString: line!)
            guard text.hasPrefix("flags") else { continue }
            let flags = Set(text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init))
            return ["avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "sse4_2", "popcnt"].allSatisfy(flags.contains)
        }
        return false
    }
}

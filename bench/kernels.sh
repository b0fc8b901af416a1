# bench/kernels.sh, sourced by the benches that compile recd's sources on their own (r128,
# loudness, overview, hotpath): `build_kernels DIR` builds SampleKernels (for the baseline CPU)
# and SampleKernelsAVX2 (for x86-64-v3, as Package.swift does) as static modules into DIR and sets
# KERNEL_FLAGS, the swiftc flags that import and link them, and picks the build for this CPU as
# Codec's `Walks` does (RECD_BENCH_WALKS=baseline forces the baseline's), which
# bench/walks-standin.swift then runs.
build_kernels() {
    local dir="$1" root
    root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
    local march=""
    [ "$(uname -m)" = x86_64 ] && march="-Xcc -march=x86-64-v3"
    swiftc -O -wmo -parse-as-library -emit-library -static -module-name SampleKernels \
        -emit-module-path "$dir/SampleKernels.swiftmodule" "$root"/Sources/SampleKernels/*.swift \
        -o "$dir/libSampleKernels.a" >"$dir/kernels.log" 2>&1 || { cat "$dir/kernels.log" >&2; return 1; }
    # shellcheck disable=SC2086 # march is two words or none
    swiftc -O -wmo -parse-as-library $march -I "$dir" -emit-library -static -module-name SampleKernelsAVX2 \
        -emit-module-path "$dir/SampleKernelsAVX2.swiftmodule" "$root"/Sources/SampleKernelsAVX2/*.swift \
        -o "$dir/libSampleKernelsAVX2.a" >>"$dir/kernels.log" 2>&1 || { cat "$dir/kernels.log" >&2; return 1; }
    KERNEL_FLAGS="-I $dir -L $dir -lSampleKernels -lSampleKernelsAVX2 $root/bench/walks-standin.swift"
    # The build walks-standin.swift runs (the one owner of the choice in the benches): x86-64-v3
    # where the kernel lists that level's flags, unless RECD_BENCH_WALKS=baseline asks for the
    # baseline's; KERNEL_BUILD names it for the results' header.
    if [ "${RECD_BENCH_WALKS:-}" != baseline ] && grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
        grep -cxE 'avx|avx2|bmi1|bmi2|f16c|fma|abm|movbe|sse4_2|popcnt' | grep -qx 10; then
        export RECD_BENCH_WALKS=x86-64-v3
        KERNEL_BUILD="x86-64-v3 (AVX2)"
    else
        export RECD_BENCH_WALKS=baseline
        KERNEL_BUILD="baseline (SSE2)"
    fi
}

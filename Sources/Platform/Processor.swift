// What the processor can run: which build of the sample kernels (SampleKernels) recd's walks use.

/// The processor recd runs on. Any thread.
public enum Processor {
    /// True when this CPU and kernel run x86-64-v3 code (AVX2, FMA and the rest of the level,
    /// with the AVX registers enabled): the walks every sample passes through then run a lane
    /// group of eight channels in one register (`SampleKernelsAVX2`). Asked once.
    public static let runsX86_64v3: Bool = Syscall.cpuRunsX86_64v3()
}

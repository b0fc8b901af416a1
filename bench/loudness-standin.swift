// bench/loudness and bench/r128: a stand-in for Codec's MediaError, so that Codec's
// LoudnessMeter, R128Engine and FLACEncoder compile on their own into the benchmarks (they throw
// one for bad arguments or a failed encoder); and what both benchmarks print and time with.
import Glibc

public struct MediaError: Error {
    public enum Kind { case invalidArgument, io }
    init(_ kind: Kind, path: String, message: String) {}
}

/// `value` with `digits` decimals (no Foundation here).
func fixed(_ value: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int((value * scale).rounded())
    let whole = String(scaled / Int(scale))
    guard digits > 0 else { return whole }
    let fraction = String(abs(scaled) % Int(scale))
    return whole + "." + String(repeating: "0", count: digits - fraction.count) + fraction
}

/// The calling thread's CPU time, seconds.
func cpuSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

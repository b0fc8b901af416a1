// bench/loudness and bench/r128: a stand-in for Codec's MediaError, so that Codec's
// LoudnessMeter, R128Engine and FLACEncoder compile on their own into the benchmarks (they throw
// one for bad arguments or a failed encoder).
public struct MediaError: Error {
    public enum Kind { case invalidArgument, io }
    init(_ kind: Kind, path: String, message: String) {}
}

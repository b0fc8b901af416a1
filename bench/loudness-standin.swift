// bench/loudness: a stand-in for Codec's MediaError, so that Sources/Codec/LoudnessMeter.swift
// compiles on its own into the benchmark (its init throws one for a bad channel count or rate).
public struct MediaError: Error {
    public enum Kind { case invalidArgument }
    init(_ kind: Kind, path: String, message: String) {}
}

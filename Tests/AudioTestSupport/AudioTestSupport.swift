// Helpers the codec and daemon tests share: temporary directories, the reference command-line
// tools, known signals and files, and a DFT probe.

import Codec
import Foundation
import TestSupport

/// A fresh directory under the system temp dir, removed when the value is dropped.
public final class TemporaryDirectory {
    public let path: String

    public init() throws {
        path = NSTemporaryDirectory() + "recd-media-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    public func file(_ name: String) -> String { path + "/" + name }
}

/// What a command-line tool did.
public struct ToolRun {
    public var status: Int32
    public var output: String
}

/// Runs a reference tool (`flac`, `sox`) declared in scripts/packages.list and waits for it.
public func runTool(_ name: String, _ arguments: [String]) throws -> ToolRun {
    let result = try ExternalTools.run(name, arguments)
    return ToolRun(status: result.status, output: result.stdout + result.stderr)
}

/// A deterministic test signal of integers that uses the whole range of `bits` bits: the
/// first frame holds the most negative value, the second the most positive, then a sine per
/// channel (different frequencies) plus pseudo-random noise, clamped.
public func knownSignal(frames: Int, channels: Int, bits: Int) -> [Int32] {
    let highest = (Int64(1) << (bits - 1)) - 1
    let lowest = -highest - 1
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    var samples: [Int32] = []
    samples.reserveCapacity(frames * channels)
    for frame in 0..<frames {
        for channel in 0..<channels {
            if frame == 0 {
                samples.append(Int32(lowest))
                continue
            }
            if frame == 1 {
                samples.append(Int32(highest))
                continue
            }
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let noise = Double(Int64(bitPattern: state) >> 40) / Double(1 << 23)  // [-1, 1)
            let phase = 2 * Double.pi * Double(100 * (channel + 1)) * Double(frame) / 48_000
            let value = (0.8 * sin(phase) + 0.1 * noise) * Double(highest)
            samples.append(Int32(min(max(value.rounded(), Double(lowest)), Double(highest))))
        }
    }
    return samples
}

/// Integers as the floats FLACWriter takes (exact for up to 24 bits).
public func floats(_ integers: [Int32], bits: Int) -> [Float] {
    let scale = Float(sign: .plus, exponent: bits - 1, significand: 1)
    return integers.map { Float($0) / scale }
}

/// Floats back to integers at `bits` bits; nil when a value is not an exact integer step.
public func integers(_ samples: [Float], bits: Int) -> [Int32]? {
    let scale = Double(sign: .plus, exponent: bits - 1, significand: 1)
    var result: [Int32] = []
    result.reserveCapacity(samples.count)
    for sample in samples {
        let scaled = Double(sample) * scale
        guard scaled == scaled.rounded() else { return nil }
        result.append(Int32(scaled))
    }
    return result
}

/// Where decoded floats depart from the expected integers, or nil when they are the same
/// sample for sample (a short message instead of two long arrays in a failure).
public func mismatch(_ samples: [Float], _ expected: [Int32], bits: Int) -> String? {
    guard samples.count == expected.count else {
        return "\(samples.count) samples where \(expected.count) were expected"
    }
    let scale = Double(sign: .plus, exponent: bits - 1, significand: 1)
    for index in samples.indices where Double(samples[index]) * scale != Double(expected[index]) {
        return "sample \(index) is \(Double(samples[index]) * scale), expected \(expected[index])"
    }
    return nil
}

/// One channel of interleaved integers.
public func channel(_ samples: [Int32], _ index: Int, of channels: Int) -> [Int32] {
    stride(from: index, to: samples.count, by: channels).map { samples[$0] }
}

/// One channel out of interleaved samples.
public func channel(_ samples: [Float], _ index: Int, of channels: Int) -> [Float] {
    stride(from: index, to: samples.count, by: channels).map { samples[$0] }
}

/// Amplitude (linear peak) of the component at `frequency` in `samples[range]`, by a single
/// DFT bin; exact when the range holds a whole number of its cycles.
public func amplitude(of frequency: Double, in samples: [Float], range: Range<Int>, sampleRate: Double)
    -> Double
{
    var real = 0.0
    var imaginary = 0.0
    let step = 2 * Double.pi * frequency / sampleRate
    for index in range {
        let angle = step * Double(index - range.lowerBound)
        real += Double(samples[index]) * cos(angle)
        imaginary -= Double(samples[index]) * sin(angle)
    }
    return 2 * (real * real + imaginary * imaginary).squareRoot() / Double(range.count)
}

public func decibels(_ linear: Double) -> Double { 20 * log10(max(linear, 1e-12)) }

/// Interleaved sine frames, amplitude `amplitude`, the same on every channel.
public func sine(
    frequency: Double, sampleRate: Double, frames: Int, channels: Int = 1,
    amplitude: Double = 0.5
) -> [Float] {
    var result: [Float] = []
    result.reserveCapacity(frames * channels)
    for frame in 0..<frames {
        let value = Float(amplitude * sin(2 * Double.pi * frequency * Double(frame) / sampleRate))
        for _ in 0..<channels { result.append(value) }
    }
    return result
}

/// Polls `condition` every few milliseconds until it holds or `seconds` pass.
public func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}

/// Writes a 16- or 24-bit WAV with libsndfile from integers.
public func writeWAV(_ path: String, sampleRate: Int, channels: Int, bits: Int, samples: [Int32]) throws {
    let writer = try WAVWriter(
        path: path, sampleRate: sampleRate, channels: channels, bitsPerSample: bits)
    try writer.write(samples: samples)
    writer.close()
}

/// The error a throwing expression threw, as a MediaError (nil if none or another type).
public func mediaError<T>(_ body: () throws -> T) -> MediaError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error as? MediaError
    }
}

/// A 16-bit, 3-channel, 44.1 kHz file of 7000 known frames, as WAV or FLAC (`format`), and
/// the integers it holds.
public func writeKnownFile(_ directory: TemporaryDirectory, format: String) throws -> (String, [Int32]) {
    let original = knownSignal(frames: 7_000, channels: 3, bits: 16)
    let path = directory.file("known." + format)
    if format == "wav" {
        try writeWAV(path, sampleRate: 44_100, channels: 3, bits: 16, samples: original)
    } else {
        let writer = try FLACWriter(path: path, sampleRate: 44_100, channels: 3, bitsPerSample: 16)
        try writer.write(floats(original, bits: 16))
        try writer.finish()
    }
    return (path, original)
}

/// `open(path, O_RDONLY | O_CLOEXEC)`, as a client passing a file does; the caller owns it.
public func openReadOnly(_ path: String) throws -> Int32 {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw MediaError(.io, path: path, message: "test: open failed, errno \(errno)") }
    return fd
}

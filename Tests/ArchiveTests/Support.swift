// Test doubles and helpers: an in-memory sample source, temporary directories, and the
// `flac` / `metaflac` command-line tools as the reference decoder and inspector.

import Foundation
import TestSupport
import Testing

@testable import Archive

/// The counter signal: exact at 16 and 24 bits. Frame `n` of the captured stream, channel `c`.
func counterSample(_ n: Int, _ c: Int) -> Float {
    Float((n * 7 + c * 1013) % 65536 - 32768) / 32768
}

/// The counter signal as the integer FLAC stores at `bits`.
func counterInteger(_ n: Int, _ c: Int, bits: Int) -> Int32 {
    Int32((n * 7 + c * 1013) % 65536 - 32768) << Int32(bits - 16)
}

/// A deterministic noise signal (does not compress), exact at 16 bits.
func noiseSample(_ n: Int, _ c: Int) -> Float {
    var x = UInt64(n) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(c) &* 0xBF58_476D_1CE4_E5B9
    x ^= x >> 31
    x = x &* 0x94D0_49BB_1331_11EB
    x ^= x >> 29
    return Float(Int(x % 65536) - 32768) / 32768
}

/// An in-memory source: frames of `signal` at timeline positions, minus the frames of the
/// gaps (positions in delivered frames), up to `chunk` frames per read.
final class MemorySource: SampleSource {
    let channels: Int
    let startTime: UTCTime?
    let totalFrames: Int
    let chunk: Int
    let signal: (Int, Int) -> Float
    private var gaps: [SourceGap]
    private var reportedGaps = 0
    /// Delivered frames so far, and the timeline position of the next one.
    private(set) var delivered = 0
    private var timeline = 0

    /// `totalFrames` counts timeline frames (gaps included).
    init(
        channels: Int, startTime: UTCTime, totalFrames: Int, chunk: Int = 1000, gaps: [SourceGap] = [],
        signal: @escaping (Int, Int) -> Float = counterSample
    ) {
        self.channels = channels
        self.startTime = startTime
        self.totalFrames = totalFrames
        self.chunk = chunk
        self.gaps = gaps
        self.signal = signal
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        // A gap at the current position: skip its frames of the timeline.
        while reportedGaps < gaps.count, gaps[reportedGaps].position == delivered {
            timeline += gaps[reportedGaps].length
            reportedGaps += 1
            pendingReport.append(gaps[reportedGaps - 1])
        }
        var frames = min(buffer.count / channels, chunk, totalFrames - timeline)
        if reportedGaps < gaps.count { frames = min(frames, gaps[reportedGaps].position - delivered) }
        guard frames > 0 else { return 0 }
        for frame in 0..<frames {
            for channel in 0..<channels { buffer[frame * channels + channel] = signal(timeline + frame, channel) }
        }
        delivered += frames
        timeline += frames
        return frames
    }

    private var pendingReport: [SourceGap] = []

    func drainGaps() -> [SourceGap] {
        defer { pendingReport.removeAll() }
        return pendingReport
    }

    /// Frames of time from the last frame to the stop (a source stopped while stalled).
    var trailingStall: Int?
    private(set) var trailingStallAsked = 0

    func trailingStallFrames() -> Int? {
        trailingStallAsked += 1
        return trailingStall
    }
}

/// A 2:1 decimator (keeps every other frame): a stand-in for the HFP resampler.
final class HalvingTransform: SampleTransform {
    let channels: Int
    let outputSampleRate: Int
    private var phase = 0

    init(channels: Int, inputRate: Int) {
        self.channels = channels
        outputSampleRate = inputRate / 2
    }

    func process(_ input: UnsafeBufferPointer<Float>, frames: Int, into output: inout [Float]) {
        for frame in 0..<frames {
            if phase == 0 { output += input[(frame * channels)..<((frame + 1) * channels)] }
            phase ^= 1
        }
    }

    func flush(into output: inout [Float]) { phase = 0 }
}

/// A fresh directory under /tmp, removed when the value is released.
final class TemporaryDirectory {
    let path: String

    init(_ label: String) {
        var template = Array("/tmp/recd-archive-\(label)-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

struct CommandResult {
    var status: Int32
    var output: Data
    var error: String
    var text: String { String(decoding: output, as: UTF8.self) }
}

/// Runs a declared outside program (scripts/packages.list) with its arguments.
func run(_ arguments: [String]) throws -> CommandResult {
    let result = try ExternalTools.run(arguments[0], Array(arguments.dropFirst()))
    return CommandResult(status: result.status, output: result.output, error: result.stderr)
}

/// `flac -t`: true when the reference decoder accepts the file (frames, CRCs, MD5).
func flacTestPasses(_ path: String) throws -> Bool {
    let result = try run(["flac", "-t", "-s", path])
    if result.status != 0 { print("flac -t \(path): \(result.error)") }
    return result.status == 0
}

/// The file decoded by the `flac` CLI: interleaved integers.
func decodeWithFlacCLI(_ path: String, bits: Int) throws -> [Int32] {
    let result = try run([
        "flac", "-d", "-s", "-c", "--force-raw-format", "--endian=little", "--sign=signed", path,
    ])
    #expect(result.status == 0, "flac -d \(path): \(result.error)")
    return pcmIntegers(result.output, bits: bits)
}

func pcmIntegers(_ data: Data, bits: Int) -> [Int32] {
    let width = bits / 8
    let bytes = [UInt8](data)
    var samples: [Int32] = []
    samples.reserveCapacity(bytes.count / width)
    var index = 0
    while index + width <= bytes.count {
        var value: Int32 = 0
        for byte in 0..<width { value |= Int32(bytes[index + byte]) << Int32(8 * byte) }
        let shift = Int32(32 - bits)
        samples.append((value << shift) >> shift)
        index += width
    }
    return samples
}

/// Little-endian signed PCM bytes of integers: what FLAC's MD5 covers.
func pcmBytes(_ samples: [Int32], bits: Int) -> Data {
    var data = Data(capacity: samples.count * bits / 8)
    for sample in samples {
        for byte in 0..<(bits / 8) { data.append(UInt8(truncatingIfNeeded: sample >> Int32(8 * byte))) }
    }
    return data
}

/// MD5 (hex) of bytes, by `md5sum`.
func md5Hex(_ data: Data) throws -> String {
    let file = NSTemporaryDirectory() + "recd-md5-\(UUID().uuidString)"
    try data.write(to: URL(fileURLWithPath: file))
    defer { try? FileManager.default.removeItem(atPath: file) }
    return String(try run(["md5sum", file]).text.prefix(32))
}

/// `metaflac --show-total-samples --show-md5sum`.
func metaflacTotalsAndMD5(_ path: String) throws -> (Int, String) {
    let lines = try run(["metaflac", "--show-total-samples", "--show-md5sum", path]).text.split(separator: "\n")
    return (Int(lines.first ?? "") ?? -1, lines.count > 1 ? String(lines[1]) : "")
}

/// The Vorbis comments as `metaflac --export-tags-to=-` shows them.
func metaflacTags(_ path: String) throws -> [String: String] {
    var tags: [String: String] = [:]
    for line in try run(["metaflac", "--export-tags-to=-", path]).text.split(separator: "\n") {
        guard let equals = line.firstIndex(of: "=") else { continue }
        tags[String(line[..<equals])] = String(line[line.index(after: equals)...])
    }
    return tags
}

/// Runs a recorder over `source` to the end and returns its events.
func record(
    _ configuration: RecorderConfiguration, inputs: SegmentInputs = SegmentInputs(), source: any SampleSource,
    transform: (any SampleTransform)? = nil
) throws -> [RecorderEvent] {
    let recorder = try Recorder(configuration: configuration, inputs: inputs, source: source, transform: transform)
    try recorder.start()
    // The source holds everything already: a stop drains it all, then finishes.
    recorder.stop(reason: .stop)
    return recorder.drainEvents()
}

func finishedRecords(_ events: [RecorderEvent]) -> [SegmentRecord] {
    events.compactMap { if case .segmentFinished(let record) = $0 { return record } else { return nil } }
}

func iso(_ text: String) -> UTCTime { UTCTime(iso8601: text)! }

/// nil when equal, else where the first difference is (never the whole arrays: they are big).
func mismatch(_ actual: [Int32], _ expected: [Int32]) -> String? {
    if actual == expected { return nil }
    let index =
        (0..<min(actual.count, expected.count)).first { actual[$0] != expected[$0] }
        ?? min(actual.count, expected.count)
    let got = index < actual.count ? String(actual[index]) : "end"
    let want = index < expected.count ? String(expected[index]) : "end"
    return "\(actual.count) samples vs \(expected.count) expected; first difference at \(index): \(got) vs \(want)"
}

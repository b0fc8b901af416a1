// bench/loudness: what LoudnessMeter costs, measured by R128Engine (recd's default) and by
// libebur128 (`loudness = libebur128`, with its true-peak gate in blocks of three lengths, and
// asked directly). Built by bench/loudness with swiftc -O together with Codec's loudness
// sources and bench/loudness-standin.swift (not part of the package: nothing here ships).
//
// For each signal and channel count it feeds the same Float32 samples, in chunks of 50 ms, to
// each meter, reading momentary and short-term loudness after every chunk as the archiver does
// (about 20 reads a second), and prints a Markdown table of thread CPU time: ns per sample of
// the adds alone, µs per momentary + short-term read, and ns per sample of both together (what
// the archiver pays). Every row but the last feeds one meter of all the channels, interleaved;
// the last feeds them as the archiver does: one meter per file of at most 8 channels, each
// channel its own run of samples (a planar capture ring), reading the first file's momentary
// and short-term loudness (what `Recorder.loudness` publishes).
import Glibc

@main
struct LoudnessBench {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        let seconds = Double(arguments.first ?? "") ?? 10
        let rate = 48_000
        print(
            "| signal | channels | meter | ns per sample: adds | µs per M+S read | "
                + "ns per sample: adds + 20 reads a second | true-peak blocks fed |")
        print("|---|---:|---|---:|---:|---:|---:|")
        defer {
            // What making a meter costs (the interpolator's taps are computed each time).
            let start = cpuSeconds()
            for _ in 0..<10 { _ = try? LoudnessMeter(channels: 8, sampleRate: rate) }
            let setUp = fixed((cpuSeconds() - start) / 10 * 1e3, 2)
            print(
                "\nTrue-peak blocks fed: libebur128's gate counts a channel's block of 10, 5 or 2.5 ms; "
                    + "R128Engine a quad of 4 frames of 4 channels (a half lane group).")
            print("\nMaking an 8-channel meter with true peak (R128Engine): \(setUp) ms CPU.")
        }
        for channels in [8, 32] {
            for signal in Signal.allCases {
                let samples = signal.make(channels: channels, rate: rate, seconds: seconds)
                for meter in Variant.allCases {
                    let result = measure(meter, samples: samples, channels: channels, rate: rate)
                    let gated = ![.plain, .plainTruePeak, .engineLoudnessOnly].contains(meter)
                    let fed = gated ? fixed(result.fedPercent, 1) + " %" : "—"
                    let adds = fixed(result.addNsPerSample, 2)
                    let read = fixed(result.microsecondsPerRead, 1)
                    let total = fixed(result.nsPerSample, 2)
                    print("| \(signal.title) | \(channels) | \(meter.title) | \(adds) | \(read) | \(total) | \(fed) |")
                }
            }
        }
    }


    enum Variant: CaseIterable {
        case plain, plainTruePeak, gated10, gated20, gated, engineLoudnessOnly, engine, engineFiles
        var title: String {
            switch self {
            case .plain: "libebur128 I+LRA+M+S (direct)"
            case .plainTruePeak: "libebur128 I+LRA+M+S + true peak, ungated (direct; before issue 17)"
            case .gated10: "libebur128, true peak gated in 10 ms blocks"
            case .gated20: "libebur128, true peak gated in 5 ms blocks"
            case .gated: "libebur128, true peak gated in 2.5 ms blocks (`loudness = libebur128`)"
            case .engineLoudnessOnly: "R128Engine, no true peak"
            case .engine: "R128Engine with true peak (`loudness = yes`, the default), one meter"
            case .engineFiles: "R128Engine with true peak as the archiver feeds it (files of ≤ 8 channels, planar)"
            }
        }
    }

    enum Signal: CaseIterable {
        case white, pink, limited, dynamic
        var title: String {
            switch self {
            case .white: "Gaussian white noise, σ = 0.1"
            case .pink: "pink noise, about -20 dBFS RMS"
            case .limited: "limited music-like: the pink noise +12 dB, hard clip at -1 dBFS"
            case .dynamic: "dynamic: the pink noise in 0.3–2 s stretches at -40…-6 dB"
            }
        }

        func make(channels: Int, rate: Int, seconds: Double) -> [Float] {
            let frames = Int(seconds * Double(rate))
            var samples = [Float](repeating: 0, count: frames * channels)
            var random = Random(state: 42)
            let ceiling = pow(10, -1.0 / 20)
            for channel in 0..<channels {
                // Pink: Paul Kellet's economy filter of white noise.
                var (b0, b1, b2) = (0.0, 0.0, 0.0)
                var gain = 1.0
                var stretchLeft = 0
                for frame in 0..<frames {
                    let white = random.gaussian()
                    var value: Double
                    switch self {
                    case .white: value = 0.1 * white
                    default:
                        b0 = 0.99765 * b0 + white * 0.0990460
                        b1 = 0.96300 * b1 + white * 0.2965164
                        b2 = 0.57000 * b2 + white * 1.0526913
                        value = 0.05 * (b0 + b1 + b2 + white * 0.1848)
                    }
                    switch self {
                    case .limited: value = max(-ceiling, min(ceiling, value * 4))
                    case .dynamic:
                        if stretchLeft == 0 {
                            stretchLeft = Int(Double(rate) * (0.3 + 1.7 * random.uniform()))
                            gain = pow(10, (-40 + 34 * random.uniform()) / 20) * 4
                        }
                        stretchLeft -= 1
                        value *= gain
                    default: break
                    }
                    samples[frame * channels + channel] = Float(value)
                }
            }
            return samples
        }
    }

    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func uniform() -> Double { Double(next() >> 11) / Double(1 << 53) }
        mutating func gaussian() -> Double {
            let u = max(uniform(), 1e-300)
            return (-2 * log(u)).squareRoot() * cos(2 * Double.pi * uniform())
        }
    }


    static func measure(_ variant: Variant, samples: [Float], channels: Int, rate: Int)
        -> (addNsPerSample: Double, microsecondsPerRead: Double, nsPerSample: Double, fedPercent: Double)
    {
        if variant == .engineFiles { return measureFiles(samples: samples, channels: channels, rate: rate) }
        let meter: LoudnessMeter
        do {
            switch variant {
            case .plain: meter = try LoudnessMeter(channels: channels, sampleRate: rate, truePeak: false, direct: true)
            case .plainTruePeak:
                meter = try LoudnessMeter(channels: channels, sampleRate: rate, truePeak: true, direct: true)
            case .gated10:
                meter = try LoudnessMeter(
                    channels: channels, sampleRate: rate, truePeak: true, direct: false, gateBlocks: 10)
            case .gated20:
                meter = try LoudnessMeter(
                    channels: channels, sampleRate: rate, truePeak: true, direct: false, gateBlocks: 20)
            case .gated: meter = try LoudnessMeter(channels: channels, sampleRate: rate, engine: .libebur128)
            case .engineLoudnessOnly: meter = try LoudnessMeter(channels: channels, sampleRate: rate, truePeak: false)
            case .engine, .engineFiles: meter = try LoudnessMeter(channels: channels, sampleRate: rate)
            }
        } catch {
            fatalError("\(error)")
        }
        let chunk = rate / 20
        let frames = samples.count / channels
        var readTime = 0.0
        var reads = 0
        var sink = 0.0
        let start = cpuSeconds()
        samples.withUnsafeBufferPointer { buffer in
            var done = 0
            while done < frames {
                let count = min(chunk, frames - done)
                meter.add(UnsafeBufferPointer(rebasing: buffer[(done * channels)..<((done + count) * channels)]))
                done += count
                let before = cpuSeconds()
                sink += (meter.momentaryLUFS ?? 0) + (meter.shortTermLUFS ?? 0)
                readTime += cpuSeconds() - before
                reads += 1
            }
        }
        sink += meter.summary.truePeakDBTP ?? 0
        let total = cpuSeconds() - start
        if sink.isNaN { print("") }
        let blocks = meter.truePeakBlocks
        return (
            (total - readTime) / Double(samples.count) * 1e9, readTime / Double(reads) * 1e6,
            total / Double(samples.count) * 1e9,
            blocks.fed + blocks.skipped > 0 ? 100 * Double(blocks.fed) / Double(blocks.fed + blocks.skipped) : 0
        )
    }

    /// As LoudnessStage feeds its meters: one per file of at most 8 channels, each channel's
    /// samples in a run of their own (laid out so before the timing), the first file's
    /// momentary and short-term loudness read after each chunk.
    static func measureFiles(samples: [Float], channels: Int, rate: Int)
        -> (addNsPerSample: Double, microsecondsPerRead: Double, nsPerSample: Double, fedPercent: Double)
    {
        let frames = samples.count / channels
        let planar = UnsafeMutablePointer<Float>.allocate(capacity: samples.count)
        defer { planar.deallocate() }
        for channel in 0..<channels {
            for frame in 0..<frames { planar[channel * frames + frame] = samples[frame * channels + channel] }
        }
        let starts = (0..<channels).map { UnsafePointer(planar + $0 * frames) }
        let files = stride(from: 0, to: channels, by: 8).map { $0..<min($0 + 8, channels) }
        let meters = files.map { try! LoudnessMeter(channels: $0.count, sampleRate: rate) }
        let chunk = rate / 20
        var readTime = 0.0
        var reads = 0
        var sink = 0.0
        let start = cpuSeconds()
        starts.withUnsafeBufferPointer { channelStarts in
            var done = 0
            while done < frames {
                let count = min(chunk, frames - done)
                for (meter, file) in zip(meters, files) {
                    meter.add(planar: channelStarts.baseAddress! + file.lowerBound, offset: done, frames: count)
                }
                done += count
                let before = cpuSeconds()
                sink += (meters[0].momentaryLUFS ?? 0) + (meters[0].shortTermLUFS ?? 0)
                readTime += cpuSeconds() - before
                reads += 1
            }
        }
        for meter in meters { sink += meter.summary.truePeakDBTP ?? 0 }
        let total = cpuSeconds() - start
        if sink.isNaN { print("") }
        let fed = meters.reduce(0) { $0 + $1.truePeakBlocks.fed }
        let all = meters.reduce(0) { $0 + $1.truePeakBlocks.fed + $1.truePeakBlocks.skipped }
        return (
            (total - readTime) / Double(samples.count) * 1e9, readTime / Double(reads) * 1e6,
            total / Double(samples.count) * 1e9, all > 0 ? 100 * Double(fed) / Double(all) : 0
        )
    }
}

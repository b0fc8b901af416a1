// bench/r128: CPU seconds per channel-hour of loudness (R128Engine, recd's default; libebur128
// through LoudnessMeter's issue-17 paths; libebur128 asked directly) against libFLAC encoding
// of the same samples (issue 28). Built by bench/r128 with swiftc -O together with the Codec
// sources it measures and bench/loudness-standin.swift (not part of the package: nothing here
// ships). FLACEncoder itself needs most of Codec to compile, so the encoding is libFLAC's
// stream encoder set up as FLACEncoder sets it up (level 5, 24-bit, streamable subset off, no
// verify, bytes to a callback) and fed with FLAC__stream_encoder_process_interleaved, as
// FLACEncoder.encode feeds it: FLACEncoder adds only a range check per sample.
//
// As the archiver works: channels in files of at most 8 (a 32-channel recording is 4 files,
// each with its own encoder and meter), 24-bit FLAC at level 5, Float32 fed in 50 ms chunks
// with a momentary + short-term read after each (20 reads a second), true peak on. The signal
// is pink noise whose level changes every 0.3–2 s (-40…-6 dB), so the true-peak gate sees
// both rising and steady stretches.
import CFLAC
import Glibc

@main
struct R128Bench {
    static func main() {
        let seconds = Double(CommandLine.arguments.dropFirst().first ?? "") ?? 20
        let rate = 48_000
        print("| channels | work | CPU s per channel-hour | × FLAC encoding | × R128Engine |")
        print("|---:|---|---:|---:|---:|")
        for channels in [2, 8, 32] {
            let samples = pinkNoise(channels: channels, rate: rate, seconds: seconds)
            let hours = Double(samples.count) / Double(rate) / 3600
            var results: [(String, Double)] = []
            for work in Work.allCases {
                // The best of 3 runs: the machine is shared.
                var best = Double.infinity
                for _ in 0..<3 { best = min(best, run(work, samples: samples, channels: channels, rate: rate)) }
                results.append((work.title, best / hours))
            }
            let flac = results[0].1
            let engine = results[1].1
            for (title, perHour) in results {
                print(
                    "| \(channels) | \(title) | \(fixed(perHour, 2)) | \(fixed(perHour / flac, 3)) | "
                        + "\(fixed(perHour / engine, 1)) |")
            }
        }
    }

    enum Work: CaseIterable {
        case flac, engine, meter, direct
        var title: String {
            switch self {
            case .flac: "FLAC encoding (libFLAC as FLACEncoder drives it, 24-bit, level 5)"
            case .engine: "loudness: R128Engine (`loudness = yes`)"
            case .meter: "loudness: libebur128 with issue 17's gate (`loudness = libebur128`)"
            case .direct: "loudness: libebur128 asked directly, ungated"
            }
        }
    }

    /// A libFLAC stream encoder whose bytes go nowhere.
    static func encoder(channels: Int, rate: Int) -> UnsafeMutablePointer<FLAC__StreamEncoder> {
        let encoder = FLAC__stream_encoder_new()!
        FLAC__stream_encoder_set_verify(encoder, 0)
        FLAC__stream_encoder_set_compression_level(encoder, 5)
        FLAC__stream_encoder_set_channels(encoder, UInt32(channels))
        FLAC__stream_encoder_set_bits_per_sample(encoder, 24)
        FLAC__stream_encoder_set_sample_rate(encoder, UInt32(rate))
        FLAC__stream_encoder_set_streamable_subset(encoder, 0)
        let status = FLAC__stream_encoder_init_stream(
            encoder, { _, _, _, _, _, _ in FLAC__STREAM_ENCODER_WRITE_STATUS_OK }, nil, nil, nil, nil)
        precondition(status == FLAC__STREAM_ENCODER_INIT_STATUS_OK, "libFLAC refused to start")
        return encoder
    }

    /// Thread CPU seconds to do `work` on `samples`.
    static func run(_ work: Work, samples: [Float], channels: Int, rate: Int) -> Double {
        let groups = stride(from: 0, to: channels, by: 8).map { $0..<min($0 + 8, channels) }
        let frames = samples.count / channels
        let chunk = rate / 20
        var sink = 0.0
        if work == .flac {
            // Quantized once, outside the timing, as the archiver's quantizer would: 24-bit.
            let integers = samples.map { Int32(max(-8_388_608, min(8_388_607, ($0 * 8_388_608).rounded()))) }
            let encoders = groups.map { encoder(channels: $0.count, rate: rate) }
            var scratch = [Int32](repeating: 0, count: chunk * 8)
            let start = cpuSeconds()
            var done = 0
            while done < frames {
                let count = min(chunk, frames - done)
                for (encoder, group) in zip(encoders, groups) {
                    for frame in 0..<count {
                        for (index, channel) in group.enumerated() {
                            scratch[frame * group.count + index] = integers[(done + frame) * channels + channel]
                        }
                    }
                    let ok = FLAC__stream_encoder_process_interleaved(encoder, scratch, UInt32(count))
                    precondition(ok != 0, "libFLAC failed")
                }
                done += count
            }
            for encoder in encoders { FLAC__stream_encoder_finish(encoder) }
            let elapsed = cpuSeconds() - start
            for encoder in encoders { FLAC__stream_encoder_delete(encoder) }
            return elapsed
        }
        let meters = groups.map { group in
            switch work {
            case .engine: try! LoudnessMeter(channels: group.count, sampleRate: rate)
            case .meter: try! LoudnessMeter(channels: group.count, sampleRate: rate, engine: .libebur128)
            default: try! LoudnessMeter(channels: group.count, sampleRate: rate, truePeak: true, direct: true)
            }
        }
        let start = cpuSeconds()
        samples.withUnsafeBufferPointer { buffer in
            var done = 0
            while done < frames {
                let count = min(chunk, frames - done)
                for (meter, group) in zip(meters, groups) {
                    meter.add(
                        interleaved: buffer.baseAddress! + done * channels, frames: count, stride: channels,
                        firstChannel: group.lowerBound)
                    sink += (meter.momentaryLUFS ?? 0) + (meter.shortTermLUFS ?? 0)
                }
                done += count
            }
        }
        for meter in meters { sink += (meter.summary.integratedLUFS ?? 0) + (meter.summary.truePeakDBTP ?? 0) }
        let elapsed = cpuSeconds() - start
        if sink.isNaN { print("") }
        return elapsed
    }

    static func pinkNoise(channels: Int, rate: Int, seconds: Double) -> [Float] {
        let frames = Int(seconds * Double(rate))
        var samples = [Float](repeating: 0, count: frames * channels)
        var state: UInt64 = 42
        func uniform() -> Double {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Double((z ^ (z >> 31)) >> 11) / Double(1 << 53)
        }
        for channel in 0..<channels {
            var (b0, b1, b2) = (0.0, 0.0, 0.0)
            var gain = 1.0
            var left = 0
            for frame in 0..<frames {
                let white = (-2 * log(max(uniform(), 1e-300))).squareRoot() * cos(2 * Double.pi * uniform())
                b0 = 0.99765 * b0 + white * 0.0990460
                b1 = 0.96300 * b1 + white * 0.2965164
                b2 = 0.57000 * b2 + white * 1.0526913
                if left == 0 {
                    left = Int(Double(rate) * (0.3 + 1.7 * uniform()))
                    gain = pow(10, (-40 + 34 * uniform()) / 20) * 4
                }
                left -= 1
                samples[frame * channels + channel] = Float(0.05 * (b0 + b1 + b2 + white * 0.1848) * gain)
            }
        }
        return samples
    }


}

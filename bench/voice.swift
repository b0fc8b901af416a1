// bench/voice: CPU of VoiceProcessor (WebRTC's audio processing module) per processed channel,
// at 48 kHz in 256-frame blocks (a JACK period) as a worker would run it. Built by bench/voice
// with swiftc -O together with Sources/VoiceProcessing and the C++ shim.

import Glibc
import VoiceProcessing

func threadCPUSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

func rounded(_ value: Double, places: Int) -> String {
    var scale = 1.0
    for _ in 0..<places { scale *= 10 }
    let text = "\((value * scale).rounded() / scale)"
    return places == 0 ? String(text.prefix { $0 != "." }) : text
}

@main
struct VoiceBench {
    static func main() throws {
        let seconds = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1]) ?? 20 : 20
        let rate = 48_000
        let period = 256
        let cases: [(String, VoiceProcessingFeatures)] = [
            ("echo cancellation (SpeexDSP)", .echoCancellationOnly),
            ("voiceChat (SpeexDSP's canceller, NS, high-pass)", .voiceChat),
            ("before: echo cancellation (WebRTC AEC)", [.echoCancellation]),
            (
                "before: voiceChat (WebRTC AEC, NS, AGC, high-pass)",
                [.echoCancellation, .noiseSuppression, .gainControl, .highPassFilter]
            ),
        ]
        print("| processing | channels | CPU % of one core per channel | µs per channel per 10 ms | latency ms |")
        print("|---|---:|---:|---:|---:|")
        for (name, features) in cases {
            for channels in [1, 2, 8] {
                var best = Double.infinity
                var latency = 0.0
                for _ in 0..<3 {
                    let processor = try VoiceProcessor(
                        sampleRate: rate, captureChannels: channels, referenceChannels: 1, features: features,
                        blockGranularity: period)
                    processor.echoPathDelayMilliseconds = 30
                    latency = processor.latencySeconds * 1_000
                    var capture = [Float](repeating: 0, count: period * channels)
                    var reference = [Float](repeating: 0, count: period)
                    var state: UInt64 = 1
                    let blocks = Int(seconds * Double(rate)) / period
                    var cpu = 0.0
                    for _ in 0..<blocks {
                        for index in 0..<period {
                            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                            let noise = Float(Int32(truncatingIfNeeded: state >> 32)) / Float(Int32.max)
                            reference[index] = 0.1 * noise
                            for channel in 0..<channels {
                                capture[index * channels + channel] = 0.05 * noise + 0.01 * Float(channel)
                            }
                        }
                        let started = threadCPUSeconds()
                        try capture.withUnsafeMutableBufferPointer { c in
                            try reference.withUnsafeBufferPointer { r in
                                try processor.process(capture: c, reference: r, frames: period)
                            }
                        }
                        cpu += threadCPUSeconds() - started
                    }
                    best = min(best, cpu)
                }
                let perChannel = best / seconds / Double(channels)
                let percent = rounded(perChannel * 100, places: 2)
                let microseconds = rounded(perChannel * 10_000, places: 0)
                print("| \(name) | \(channels) | \(percent) | \(microseconds) | \(rounded(latency, places: 1)) |")
            }
        }
    }
}

// bench/doubletalk: the double-talk suite (Tests/VoiceProcessingTests/DoubleTalkSuite.swift) over
// named configurations of the voice processor, one table row per configuration and near/echo
// ratio (the worst case over the rooms and periods), and with --detail one row per case. Built
// by bench/doubletalk with swiftc -O together with Sources/VoiceProcessing and the shims.

import Foundation
import VoiceProcessing

let agnostic: VoiceProcessingFeatures = [.delayAgnostic, .extendedFilter]
/// voiceChat as it was before the double-talk comparison: WebRTC's AEC, noise suppression, gain control.
let webRTCVoiceChat: VoiceProcessingFeatures = [.echoCancellation, .noiseSuppression, .gainControl, .highPassFilter]
let speex: VoiceProcessingFeatures = [.echoCancellation, .speexEchoCanceller]
let configurations: [(String, VoiceProcessingFeatures)] = [
    // What the daemon uses now.
    ("voiceChat", .voiceChat),
    ("voiceChat, delay-agnostic", VoiceProcessingFeatures.voiceChat.union(agnostic)),
    ("echo cancellation", .echoCancellationOnly),
    // Before: WebRTC's AEC (0.3), and the library's settings searched.
    ("WebRTC voiceChat", webRTCVoiceChat),
    ("WebRTC voiceChat, delay-agnostic", webRTCVoiceChat.union(agnostic)),
    ("WebRTC voiceChat low", webRTCVoiceChat.union(.suppressionLow)),
    ("WebRTC voiceChat low, NS moderate", webRTCVoiceChat.union([.suppressionLow, .noiseSuppressionModerate])),
    ("WebRTC voiceChat low, NS low", webRTCVoiceChat.union([.suppressionLow, .noiseSuppressionLow])),
    ("WebRTC voiceChat low, no AGC", [.echoCancellation, .noiseSuppression, .highPassFilter, .suppressionLow]),
    ("WebRTC AEC", [.echoCancellation]),
    ("WebRTC AEC, delay-agnostic", VoiceProcessingFeatures.echoCancellation.union(agnostic)),
    ("WebRTC AEC low", [.echoCancellation, .suppressionLow]),
    ("WebRTC AEC high", [.echoCancellation, .suppressionHigh]),
    ("WebRTC AEC low, extended filter", [.echoCancellation, .suppressionLow, .extendedFilter]),
    ("WebRTC AECM", [.echoCancellation, .mobileEchoControl]),
    // SpeexDSP's canceller, alone and with gain control (WebRTC's, after it: its chunks are then 480 frames).
    ("Speex", speex),
    ("Speex low", speex.union(.suppressionLow)),
    ("Speex high", speex.union(.suppressionHigh)),
    ("Speex, delay-agnostic", speex.union(.delayAgnostic)),
    ("Speex + NS + AGC", speex.union([.noiseSuppression, .gainControl, .highPassFilter])),
    ("Speex + AGC", speex.union([.gainControl, .highPassFilter])),
]

func text(_ value: Double) -> String {
    guard value.isFinite else { return value > 0 ? "∞" : "−∞" }
    let tenths = (value * 10).rounded() / 10
    return tenths < 0 ? "−\(-tenths)" : "\(tenths)"
}

/// The worst of a configuration's cases at one near/echo ratio, as a table row.
func summary(_ name: String, ratio: Double, _ figures: [DoubleTalkFigures]) -> String {
    let returns = figures.map { $0.returnSeconds ?? .infinity }
    let mean = figures.map(\.doubleTalk).reduce(0, +) / Double(figures.count)
    let cpu = figures.map(\.cpuSeconds).reduce(0, +) / (13 * Double(figures.count)) * 100
    let latencies = Set(figures.map { $0.latencyFrames * 1_000 / DoubleTalkSuite.sampleRate })
    let columns = [
        name, "\(text(ratio)) dB", "\(text(figures.map(\.erle).min()!)) dB",
        "\(text(mean)), \(text(figures.map(\.doubleTalk).min()!)) dB",
        "\(text(figures.map(\.doubleTalkWorst).min()!)) dB",
        "\(text(returns.max()!)) s", "\(text(figures.map(\.leakage).max()!)) dB",
        "\(text(figures.map(\.nearAlone).min()!))…\(text(figures.map(\.nearAlone).max()!)) dB",
        "\(latencies.sorted().map { "\($0)" }.joined(separator: "/")) ms", "\(text(cpu)) %",
    ]
    return "| " + columns.joined(separator: " | ") + " |"
}

@main
struct DoubleTalkBench {
    static func main() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        var arguments = Array(CommandLine.arguments.dropFirst())
        var periods = [256, 1_024]
        var detail = false
        var quick = false
        var names: [String] = []
        while !arguments.isEmpty {
            let argument = arguments.removeFirst()
            if argument == "--periods", !arguments.isEmpty {
                periods = arguments.removeFirst().split(separator: ",").compactMap { Int($0) }
            } else if argument == "--detail" {
                detail = true
            } else if argument == "--quick" {
                quick = true
            } else {
                names.append(argument)
            }
        }
        let chosen = names.isEmpty ? configurations : configurations.filter { names.contains($0.0) }
        if chosen.isEmpty { print("names: " + configurations.map(\.0).joined(separator: "; ")); return }
        var cases = DoubleTalkCase.grid(periods: periods)
        if quick {
            // Three cases that span the grid: the (0 dB, a short path), the longest path
            // with a tail at 0 dB, and the quieter talker in a reverberant room.
            cases = periods.flatMap { period in
                [
                    DoubleTalkCase(nearToEchoDecibels: 0, delaySeconds: 0.030, reverberant: false, period: period),
                    DoubleTalkCase(nearToEchoDecibels: 0, delaySeconds: 0.120, reverberant: true, period: period),
                    DoubleTalkCase(nearToEchoDecibels: -6, delaySeconds: 0.060, reverberant: true, period: period),
                ]
            }
        }
        var results: [String: [(DoubleTalkCase, DoubleTalkFigures)]] = [:]
        var refused: [String: String] = [:]
        let header =
            "| configuration | near/echo | ERLE far end alone (min) | near end in double talk (mean of cases, worst case) | worst 0.5 s | back within 1 dB (worst) | echo leakage in double talk (worst) | near end alone | latency | CPU per channel |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        if detail { print(header) }
        for test in cases {
            let signals = DoubleTalkSuite.Signals(test)
            for (name, features) in chosen where refused[name] == nil {
                do {
                    let result = try DoubleTalkSuite.measure(
                        signals, canceller: DoubleTalkSuite.voiceProcessor(features))
                    results[name, default: []].append((test, result))
                    if detail {
                        print(
                            "| \(name) | \(test) | \(text(result.erle)) | \(text(result.doubleTalk)) | \(text(result.doubleTalkWorst)) | \(result.returnSeconds.map { text($0) + " s" } ?? "never") | \(text(result.leakage)) | \(text(result.nearAlone)) | | |"
                        )
                    }
                } catch {
                    refused[name] = "\(error)"
                }
            }
        }
        print()
        print(header)
        for (name, _) in chosen {
            if let reason = refused[name] {
                print("| \(name) | refused: \(reason) |")
                continue
            }
            for ratio in [-6.0, 0, 6] {
                let figures = (results[name] ?? []).filter { $0.0.nearToEchoDecibels == ratio }.map(\.1)
                if !figures.isEmpty { print(summary(name, ratio: ratio, figures)) }
            }
        }
    }
}

// Silence detection on the frames a recorder writes: silence is the absence of programme over a
// window (the level of the loudest channel over 3 s, or silence_seconds when shorter), not a
// quiet 10 ms. When a silence begins and ends, the hysteresis, its level, the seconds each
// segment counts (SILENCE_SECONDS, by the same rule), a stream already silent, and real
// programme (speech with pauses, a click track, music with a fade, gated audio) that is never
// called silence while dead air after it still is, within silence_seconds.

import Foundation
import Codec
import Testing

@testable import Archive

@Suite("silence detection")
struct SilenceDetectorTests {
    /// 1000 Hz, 10-frame blocks; `spans` as (frames, amplitude) one after another, mono. A
    /// constant amplitude is also its RMS level.
    static func signal(_ spans: [(Int, Float)]) -> [Float] {
        spans.flatMap { Array(repeating: $0.1, count: $0.0) }
    }

    /// Feeds `samples` in `chunk`-frame pieces, ending a segment after each frame count in
    /// `segmentEnds`; returns the changes and each segment's silent frames.
    static func run(
        _ samples: [Float], detection: SilenceDetection, rate: Int = 1000, chunk: Int = 37, segmentEnds: [Int] = []
    ) -> (changes: [SilenceTransition], segments: [Int]) {
        var detector = SilenceDetector(detection: detection, sampleRate: rate, walks: Walks.current)
        var changes: [SilenceTransition] = []
        var segments: [Int] = []
        var position = 0
        let cuts = (segmentEnds + [samples.count]).sorted()
        samples.withUnsafeBufferPointer { buffer in
            for cut in cuts {
                while position < cut {
                    let take = min(chunk, cut - position)
                    detector.observe(buffer.baseAddress! + position, frames: take, channels: 1, position: position) {
                        changes.append($0)
                    }
                    position += take
                }
                segments.append(detector.endSegment { changes.append($0) })
            }
        }
        return (changes, segments)
    }

    /// -40 dBFS; silence_seconds 1 (so the window is 1 s too).
    static let detection = SilenceDetection(threshold: 0.01, seconds: 1)

    @Test("began silence_seconds after the programme stopped; ended at the first block 3 dB above the threshold")
    func beganAndEnded() {
        let samples = Self.signal([(1000, 0.5), (2000, 0), (3000, 0.25)])
        let (changes, segments) = Self.run(samples, detection: Self.detection)
        #expect(
            changes == [
                SilenceTransition(state: .began, sinceFrame: 1000, decidedFrame: 2000, peak: 0),
                SilenceTransition(state: .ended, sinceFrame: 3000, decidedFrame: 3010, peak: 0.25),
            ])
        // From the silence's start to the sound's: 2000 frames.
        #expect(segments == [2000])
        #expect(SilenceDetector.secondsText(frames: 3000, sampleRate: 1000) == "3.00")
        #expect(SilenceDetector.secondsText(frames: 48_000 * 5 / 4, sampleRate: 48_000) == "1.25")
        #expect(abs(SilenceDetection.hysteresisPowerRatio - pow(10, SilenceDetection.hysteresisDB / 10)) < 1e-12)
    }

    @Test("a pause shorter than the window is programme; a longer one is a silence from its first frame")
    func pausesAndWindow() {
        // silence_seconds 2: the window is 2 s. Pauses of 1.5 s between 0.5 s of sound never
        // make a window quiet; the 2.5 s pause at the end is silence from where it starts.
        let detection = SilenceDetection(threshold: 0.01, seconds: 2)
        let samples = Self.signal(
            Array(repeating: [(500, Float(0.1)), (1500, 0)], count: 5).flatMap { $0 } + [(500, 0.1), (2500, 0)])
        let (changes, segments) = Self.run(samples, detection: detection)
        #expect(changes == [SilenceTransition(state: .began, sinceFrame: 10_500, decidedFrame: 12_500, peak: 0)])
        #expect(segments == [2500])
        #expect(detection.windowSeconds == 2)
        #expect(SilenceDetection(threshold: 0.01, seconds: 30).windowSeconds == 3)
    }

    @Test("a level between the threshold and 3 dB above it keeps a silence; 3 dB above ends it where it rose")
    func hysteresis() {
        let oneAbove = Float(0.01 * pow(10, 1.0 / 20))
        let fourAbove = Float(0.01 * pow(10, 4.0 / 20))
        let samples = Self.signal([(1500, 0), (3000, oneAbove), (1000, fourAbove)])
        let (changes, segments) = Self.run(samples, detection: Self.detection)
        #expect(changes.map(\.state) == [.began, .ended], "\(changes)")
        let ended = changes.last
        // The window (100 blocks) reaches the threshold 80 blocks into the +1 dB stretch and stays
        // there: the sound is counted from that block, decided once the +4 dB stretch lifts it.
        #expect(ended?.sinceFrame == 1500 + 790, "\(changes)")
        // (59 blocks of +4 dB with 41 of +1 dB are 3 dB above the threshold)
        #expect(ended?.decidedFrame == 4500 + 590, "\(changes)")
        #expect(segments == [1500 + 790])
        // Just below the threshold, then just above it: no alarm at all.
        let hovering = Self.signal([(500, 0.5), (800, Float(0.01 * pow(10, -0.5 / 20))), (3000, oneAbove)])
        #expect(Self.run(hovering, detection: Self.detection).changes.isEmpty)
    }

    @Test("segments count their own silent frames; a run not yet a silence when its segment ends stays uncounted there")
    func perSegment() {
        let samples = Self.signal([(1000, 0.5), (3000, 0), (3000, 0.5)])
        let (changes, segments) = Self.run(samples, detection: Self.detection, segmentEnds: [1500, 3000])
        #expect(changes.map(\.state) == [.began, .ended])
        #expect(changes.first?.sinceFrame == 1000 && changes.last?.sinceFrame == 4000)
        // 1000..1500 fell in a segment that ended before the silence was decided at 2000.
        #expect(segments == [0, 1500, 1000])
    }

    @Test("a recording that continues a silent stream sends no began, and ended once sound returns")
    func alreadySilent() {
        var detection = Self.detection
        detection.alreadySilent = true
        let samples = Self.signal([(1500, 0), (2500, 0.5)])
        let (changes, segments) = Self.run(samples, detection: detection)
        #expect(changes == [SilenceTransition(state: .ended, sinceFrame: 1500, decidedFrame: 1510, peak: 0.5)])
        #expect(segments == [1500])
    }

    @Test("the loudest channel decides: one channel sounding is programme")
    func channels() {
        var detector = SilenceDetector(detection: Self.detection, sampleRate: 1000, walks: Walks.current)
        // Channel 0 silent, channel 1 sounding: never silent.
        let frames = (0..<3000).flatMap { _ in [Float(0), Float(0.2)] }
        var changes: [SilenceTransition] = []
        frames.withUnsafeBufferPointer { buffer in
            detector.observe(buffer.baseAddress!, frames: 3000, channels: 2, position: 0) { changes.append($0) }
        }
        #expect(changes.isEmpty && !detector.isSilent)
    }

    @Test("NaN counts as nothing and infinity as full scale: neither poisons the window")
    func brokenSamples() {
        let samples = Self.signal([(500, 0.5), (2000, .nan), (300, .infinity), (1500, 0), (200, 0.5)])
        let (changes, _) = Self.run(samples, detection: Self.detection)
        #expect(
            changes == [
                SilenceTransition(state: .began, sinceFrame: 500, decidedFrame: 1500, peak: 0),
                SilenceTransition(state: .ended, sinceFrame: 2500, decidedFrame: 2510, peak: .infinity),
                SilenceTransition(state: .began, sinceFrame: 2800, decidedFrame: 3800, peak: 0),
                SilenceTransition(state: .ended, sinceFrame: 4300, decidedFrame: 4310, peak: 0.5),
            ], "\(changes)")
    }

    @Test("one loud sample anywhere in a block of 9 channels is sound; a NaN there is not", arguments: [false, true])
    func oneSampleInEveryPlace(nan: Bool) {
        // 10-frame blocks of 9 channels: 90 samples, so the loud one falls in every lane and in the tail.
        for place in 0..<90 {
            var detector = SilenceDetector(detection: Self.detection, sampleRate: 1000, walks: Walks.current)
            var samples = [Float](repeating: 0.001, count: 1500 * 9)
            for block in 0..<150 { samples[block * 90 + place] = nan ? .nan : -0.5 }
            var changes: [SilenceTransition] = []
            samples.withUnsafeBufferPointer { buffer in
                // 33-frame pieces: blocks straddle the calls.
                for start in stride(from: 0, to: 1500, by: 33) {
                    detector.observe(
                        buffer.baseAddress! + start * 9, frames: min(33, 1500 - start), channels: 9, position: start
                    ) { changes.append($0) }
                }
            }
            if nan {
                let began = SilenceTransition(state: .began, sinceFrame: 0, decidedFrame: 1000, peak: 0.001)
                #expect(changes == [began], "\(place)")
            } else {
                #expect(changes.isEmpty && !detector.isSilent, "\(place)")
            }
        }
    }

    // MARK: Programme and dead air, at 48 kHz

    static let rate = 48_000

    static func frames(_ seconds: Double) -> Int { Int((seconds * Double(rate)).rounded()) }

    /// jack_metro's click at its defaults (880 Hz, amplitude 0.5 = -6 dBFS peak, 100 ms with a 1 %
    /// attack and a 10 % decay) at `bpm`.
    static func clickTrack(seconds: Double, bpm: Double = 100) -> [Float] {
        let period = frames(60 / bpm)
        let tone = frames(0.1)
        let attack = tone / 100
        let decay = tone / 10
        return (0..<frames(seconds)).map { index in
            let offset = index % period
            guard offset < tone else { return 0 }
            var gain: Float = 0.5
            if offset < attack { gain *= Float(offset) / Float(attack) }
            if offset > tone - decay { gain *= Float(tone - offset) / Float(decay) }
            return gain * Float(sin(2 * Double.pi * 880 * Double(index) / Double(rate)))
        }
    }

    /// A level in dBFS held or ramped (linear in dB) for some seconds; nil: zeros.
    struct Step {
        var seconds: Double
        var from: Double?
        var to: Double?
    }

    /// `carrier` shaped by `steps`, repeated for `seconds`.
    static func shaped(_ steps: [Step], seconds: Double, carrier: (Int) -> Float) -> [Float] {
        var samples = [Float](repeating: 0, count: frames(seconds))
        var index = 0
        while index < samples.count {
            for step in steps {
                let count = frames(step.seconds)
                if let from = step.from {
                    let to = step.to ?? from
                    for offset in 0..<count where index + offset < samples.count {
                        let level = from + (to - from) * Double(offset) / Double(count)
                        samples[index + offset] = Float(pow(10, level / 20)) * carrier(index + offset)
                    }
                }
                index += count
            }
        }
        return samples
    }

    /// Seeded white noise in [-1, 1) (RMS -4.8 dBFS).
    static func noise(seed: UInt64) -> (Int) -> Float {
        { index in
            var z = seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Float(Double((z ^ (z >> 31)) >> 11) * 0x1p-52 - 1)
        }
    }

    /// Speech-like: syllables of 150 ms at -20 dBFS with 60 ms between them at -45, in phrases
    /// of 1.2 to 3 s, with pauses of 0.5 to 1.5 s of nothing between the phrases.
    static func speech(seconds: Double) -> [Float] {
        var steps: [Step] = []
        for (phrase, pause) in [(2.0, 0.5), (3.0, 1.5), (1.2, 1.0), (2.5, 0.7), (1.6, 1.5)] {
            for _ in 0..<Int(phrase / 0.21) {
                steps += [Step(seconds: 0.15, from: -15), Step(seconds: 0.06, from: -40)]
            }
            steps.append(Step(seconds: pause))
        }
        return shaped(steps, seconds: seconds, carrier: noise(seed: 1))
    }

    /// Music: a chord (220, 277, 330 Hz) at -14 dBFS for 4 s, faded out over 3 s to -60 and
    /// gone for 0.5 s before the next piece.
    static func musicWithFade(seconds: Double) -> [Float] {
        shaped(
            [Step(seconds: 4, from: -14), Step(seconds: 3, from: -14, to: -60), Step(seconds: 0.5)],
            seconds: seconds
        ) { index in
            let time = Double(index) / Double(rate)
            return Float([220.0, 277, 330].map { sin(2 * Double.pi * $0 * time) }.reduce(0, +) / 3)
        }
    }

    /// Noise at -20 dBFS gated on and off every second.
    static func gated(seconds: Double) -> [Float] {
        shaped([Step(seconds: 1, from: -15), Step(seconds: 1)], seconds: seconds, carrier: noise(seed: 2))
    }

    static let programmes: [String] = ["speech with pauses", "click track", "music with a fade", "gated audio"]

    static func programme(_ name: String, seconds: Double) -> [Float] {
        switch name {
        case "speech with pauses": speech(seconds: seconds)
        case "click track": clickTrack(seconds: seconds)
        case "music with a fade": musicWithFade(seconds: seconds)
        default: gated(seconds: seconds)
        }
    }

    @Test(
        "programme after dead air: the dead air is found within silence_seconds, the programme ends it at once and is never silence, dead air after it is found again",
        arguments: programmes)
    func programmeAndDeadAir(name: String) {
        // silence_seconds 3 at -50 dBFS; 4 s of dead air, 20 s of programme, 5 s of dead air.
        let detection = SilenceDetection(threshold: Float(pow(10, -50.0 / 20)), seconds: 3)
        let programme = Self.programme(name, seconds: 20)
        // Where the programme ends: after its last 10 ms block whose RMS reaches the threshold.
        let block = Self.frames(0.01)
        let lastSound =
            Array(stride(from: 0, to: programme.count, by: block)).last { start in
                let run = programme[start..<min(start + block, programme.count)]
                return run.map { Double($0) * Double($0) }.reduce(0, +) / Double(run.count) >= 1e-5
            }.map { $0 + block } ?? 0
        let samples =
            [Float](repeating: 0, count: Self.frames(4)) + programme + [Float](repeating: 0, count: Self.frames(5))
        let (changes, segments) = Self.run(samples, detection: detection, rate: Self.rate, chunk: 1024)
        try? #require(changes.count == 3, "\(name): \(changes)")
        guard changes.count == 3 else { return }
        #expect(changes.map(\.state) == [.began, .ended, .began])
        #expect(changes[0].sinceFrame == 0 && changes[0].decidedFrame == Self.frames(3))
        // The programme ends the silence within its first block.
        #expect(abs(changes[1].sinceFrame - Self.frames(4)) <= Self.frames(0.01), "\(changes[1])")
        #expect(changes[1].decidedFrame - Self.frames(4) <= Self.frames(0.02), "\(changes[1])")
        // Dead air after it: from the programme's last sound (to a block), decided silence_seconds later.
        let end = Self.frames(4) + lastSound
        #expect(changes[2].sinceFrame == end, "\(name): \(changes[2]) want \(end)")
        #expect(changes[2].decidedFrame - changes[2].sinceFrame <= Self.frames(3.01))
        // One rule for the alarm and the tag: the two silences' frames, and no others.
        let counted = changes[1].sinceFrame + (samples.count - changes[2].sinceFrame)
        #expect(segments == [counted], "\(name)")
    }

    @Test("the programmes alone, with the default 30 s and with 3 s, are never silence", arguments: programmes)
    func programmeAlone(name: String) {
        let samples = Self.programme(name, seconds: 30)
        for seconds in [3.0, 30] {
            let detection = SilenceDetection(threshold: Float(pow(10, -50.0 / 20)), seconds: seconds)
            let (changes, segments) = Self.run(samples, detection: detection, rate: Self.rate, chunk: 480)
            #expect(changes.isEmpty && segments == [0], "\(name), silence_seconds \(seconds): \(changes)")
        }
    }
}

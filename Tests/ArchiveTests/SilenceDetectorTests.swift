// Silence detection on the frames a recorder writes: when a silence begins and ends, its
// level, the seconds each segment counts (SILENCE_SECONDS), and a stream already silent.

import Testing

@testable import Archive

@Suite("silence detection")
struct SilenceDetectorTests {
    /// 1000 Hz, 10-frame blocks; `spans` as (frames, amplitude) one after another, mono.
    static func signal(_ spans: [(Int, Float)]) -> [Float] {
        spans.flatMap { Array(repeating: $0.1, count: $0.0) }
    }

    /// Feeds `samples` in `chunk`-frame pieces, ending a segment after each frame count in
    /// `segmentEnds`; returns the changes and each segment's silent frames.
    static func run(
        _ samples: [Float], detection: SilenceDetection, chunk: Int = 37, segmentEnds: [Int] = []
    ) -> (changes: [SilenceTransition], segments: [Int]) {
        var detector = SilenceDetector(detection: detection, sampleRate: 1000)
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

    static let detection = SilenceDetection(threshold: 0.01, seconds: 1, endSeconds: 2)

    @Test("began after silence_seconds below the threshold, a short sound keeps it silent, ended after 2 s above")
    func beganAndEnded() {
        let samples = Self.signal([(1000, 0.5), (2000, 0.001), (500, 0.5), (1000, 0), (3000, 0.25)])
        let (changes, segments) = Self.run(samples, detection: Self.detection)
        #expect(
            changes == [
                SilenceTransition(state: .began, sinceFrame: 1000, decidedFrame: 2000, peak: 0.001),
                SilenceTransition(state: .ended, sinceFrame: 4500, decidedFrame: 6500, peak: 0.25),
            ])
        // Below the threshold inside the silence: 2000 + 1000 frames; the 500 of sound are not.
        #expect(segments == [3000])
        #expect(SilenceDetector.secondsText(frames: 3000, sampleRate: 1000) == "3.00")
        #expect(SilenceDetector.secondsText(frames: 48_000 * 5 / 4, sampleRate: 48_000) == "1.25")
    }

    @Test("a run shorter than silence_seconds is no silence; a peak at the threshold is sound")
    func shortRunAndThreshold() {
        let samples = Self.signal([(500, 0.5), (990, 0), (500, 0.5), (3000, 0.01)])
        let (changes, segments) = Self.run(samples, detection: Self.detection)
        #expect(changes.isEmpty)
        #expect(segments == [0])
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

    @Test("a recording that continues a silent stream sends no began, and ended once sound lasts")
    func alreadySilent() {
        var detection = Self.detection
        detection.alreadySilent = true
        let samples = Self.signal([(1500, 0), (2500, 0.5)])
        let (changes, segments) = Self.run(samples, detection: detection)
        #expect(changes == [SilenceTransition(state: .ended, sinceFrame: 1500, decidedFrame: 3500, peak: 0.5)])
        #expect(segments == [1500])
    }

    @Test("every channel must be below the threshold")
    func channels() {
        var detector = SilenceDetector(detection: Self.detection, sampleRate: 1000)
        // Channel 0 silent, channel 1 sounding: never silent.
        let frames = (0..<3000).flatMap { _ in [Float(0), Float(0.2)] }
        var changes: [SilenceTransition] = []
        frames.withUnsafeBufferPointer { buffer in
            detector.observe(buffer.baseAddress!, frames: 3000, channels: 2, position: 0) { changes.append($0) }
        }
        #expect(changes.isEmpty && !detector.isSilent)
    }

    @Test("a block's peak in lanes is the plain maximum of magnitudes, NaN left out, for every count and alignment")
    func lanePeak() {
        var generator = SystemRandomNumberGenerator()
        let specials: [Float] = [.nan, -.nan, .infinity, -.infinity, -0.0, .leastNonzeroMagnitude, -1, 0.75]
        let samples = (0..<300).map { _ in
            Bool.random(using: &generator)
                ? specials.randomElement(using: &generator)!
                : Float.random(in: -1...1, using: &generator) * Float.random(in: 0...1, using: &generator)
        }
        var checked = 0
        samples.withUnsafeBufferPointer { buffer in
            for offset in 0..<4 {
                for count in 0...(samples.count - offset) where count < 40 || count % 7 == 0 {
                    for floor: Float in [0, 0.5] {
                        var expected = floor
                        for sample in samples[offset..<(offset + count)] where sample.magnitude > expected {
                            expected = sample.magnitude
                        }
                        let peak = SilenceDetector.peak(buffer.baseAddress! + offset, count: count, above: floor)
                        #expect(
                            peak.bitPattern == expected.bitPattern, "offset \(offset) count \(count) floor \(floor)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 300)
    }

    @Test("one loud sample anywhere in a block of 9 channels is sound; a NaN there is not", arguments: [false, true])
    func oneSampleInEveryPlace(nan: Bool) {
        // 10-frame blocks of 9 channels: 90 samples, so the loud one falls in every lane and in the tail.
        for place in 0..<90 {
            var detector = SilenceDetector(detection: Self.detection, sampleRate: 1000)
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
}

// The double-talk suite, offline: a far end and a near talker of speech-like noise with real
// pauses, a room made here (10-120 ms, dry or with a reverberant tail), the near end at -6, 0
// and +6 dB against its echo, run through the real VoiceProcessor, and the figures the field
// judges a canceller by. Shared by DoubleTalkTests (which bounds the default) and
// bench/doubletalk (which tables every configuration); no Testing import, so the bench can
// compile it with the VoiceProcessing sources alone.

import Foundation
import VoiceProcessing

#if canImport(TestSupport)
    import TestSupport
#endif

/// One room and talker level: the near end's level against its echo's over the double talk,
/// the echo path's delay, whether a reverberant tail follows the early reflections, and the
/// block size the processor is given (a JACK period).
public struct DoubleTalkCase: Sendable, CustomStringConvertible {
    public var nearToEchoDecibels: Double
    public var delaySeconds: Double
    public var reverberant: Bool
    public var period: Int

    public init(nearToEchoDecibels: Double, delaySeconds: Double, reverberant: Bool, period: Int) {
        self.nearToEchoDecibels = nearToEchoDecibels
        self.delaySeconds = delaySeconds
        self.reverberant = reverberant
        self.period = period
    }

    public var description: String {
        let ratio = nearToEchoDecibels > 0 ? "+\(Int(nearToEchoDecibels))" : "\(Int(nearToEchoDecibels))"
        return "near/echo \(ratio) dB, \(Int((delaySeconds * 1_000).rounded())) ms"
            + (reverberant ? " + tail" : " dry") + ", \(period)-frame blocks"
    }

    /// The grid the issue asks for: -6, 0 and +6 dB; 10 to 120 ms, dry and reverberant.
    public static func grid(periods: [Int]) -> [DoubleTalkCase] {
        var cases: [DoubleTalkCase] = []
        for period in periods {
            for ratio in [-6.0, 0, 6] {
                for delay in [0.010, 0.030, 0.060, 0.120] {
                    for reverberant in [false, true] {
                        cases.append(
                            .init(
                                nearToEchoDecibels: ratio, delaySeconds: delay, reverberant: reverberant, period: period
                            ))
                    }
                }
            }
        }
        return cases
    }
}

/// What a canceller did to one case.
public struct DoubleTalkFigures: Sendable {
    /// Echo return loss enhancement with the far end alone, after convergence (4-7 s).
    public var erle: Double
    /// The near end alone (after the far end stopped, 11-13 s), output against input, dB.
    public var nearAlone: Double
    /// The near end while both talk (7-10 s, its whole three seconds) against its level alone, dB.
    public var doubleTalk: Double
    /// The worst 0.5 s of the double talk against the level alone, dB.
    public var doubleTalkWorst: Double
    /// Seconds from the far end's stop until every 100 ms of near-end speech from then on is
    /// within 1 dB of its level alone; nil if it never is.
    public var returnSeconds: Double?
    /// Echo leakage in double talk (after ITU-T P.1110): what of the output is not the near end,
    /// against the echo in the capture, dB (negative: below the echo).
    public var leakage: Double
    public var latencyFrames: Int
    public var cpuSeconds: Double
}

/// The suite's signals: 0-10 s far end, 7-13 s near end (both from 7 to 10 s), at 48 kHz.
public enum DoubleTalkSuite {
    public static let sampleRate = 48_000
    static let rate = Double(sampleRate)
    static func frames(_ seconds: Double) -> Int { Int(seconds * rate) }
    static let total = frames(13)
    static let farStop = frames(10)
    static let nearStart = frames(7)
    /// Both talkers at about -25 dBFS RMS: the echo over the double talk, the near end at the
    /// case's ratio from it.
    static let echoLevel = -25.0

    /// A processor run over a whole capture: `output[n]` is the processed `capture[n]`.
    public typealias Run = (output: [Float], latencyFrames: Int, cpuSeconds: Double)
    public typealias Canceller = (_ capture: [Float], _ reference: [Float], _ echoDelay: Double, _ period: Int) throws
        -> Run

    /// The room: the loudspeaker's sound after `delay`, four early reflections, and with
    /// `reverberant` a tail of 400 sparse taps from 20 to 300 ms decaying 60 dB in 250 ms, its
    /// energy 10 dB below the direct sound's (a speakerphone near its microphone in a furnished
    /// room). Beyond a 48 ms filter that tail leaves about -17 dB, beyond 128 ms -36 dB.
    public static func room(_ farEnd: [Float], delay: Double, reverberant: Bool) -> [Float] {
        var random = SplitMix64(seed: 45)
        let direct = Int(delay * rate)
        var taps: [(offset: Int, gain: Double)] = [(direct, 1)]
        for (milliseconds, relative) in [(2.9, 0.45), (6.1, -0.3), (11.7, 0.2), (17.3, -0.12)] {
            taps.append((direct + Int(milliseconds * rate / 1_000), relative))
        }
        if reverberant {
            var tail: [(offset: Int, gain: Double)] = []
            for _ in 0..<400 {
                let seconds = 0.020 + 0.280 * Double(random.below(100_000)) / 100_000
                let sign: Double = random.chance(50) ? 1 : -1
                tail.append((direct + Int(seconds * rate), sign * exp(-6.91 * (seconds - 0.020) / 0.250)))
            }
            let tailEnergy = tail.reduce(0) { $0 + $1.gain * $1.gain }
            let scale = (0.1 / tailEnergy).squareRoot()
            taps += tail.map { ($0.offset, $0.gain * scale) }
        }
        var echo = [Float](repeating: 0, count: farEnd.count)
        echo.withUnsafeMutableBufferPointer { out in
            farEnd.withUnsafeBufferPointer { input in
                for tap in taps where tap.offset < input.count {
                    let gain = Float(tap.gain)
                    for index in tap.offset..<input.count { out[index] += gain * input[index - tap.offset] }
                }
            }
        }
        return echo
    }

    static func scaled(_ signal: [Float], toDecibels level: Double, over range: Range<Int>) -> [Float] {
        let now = decibels(power: energy(signal, range) / Double(range.count))
        let gain = Float(pow(10, (level - now) / 20))
        return signal.map { $0 * gain }
    }

    /// One case's signals, made once and run through any number of cancellers.
    public struct Signals: Sendable {
        public let test: DoubleTalkCase
        let farEnd: [Float]
        let echo: [Float]
        let near: [Float]
        let capture: [Float]

        public init(_ test: DoubleTalkCase) {
            self.test = test
            var farEnd = speechLikeNoise(frames: total, sampleRate: rate, seed: 1)
            for index in farStop..<total { farEnd[index] = 0 }
            let doubleTalk = nearStart..<farStop
            let rawEcho = room(farEnd, delay: test.delaySeconds, reverberant: test.reverberant)
            let now = decibels(power: energy(rawEcho, doubleTalk) / Double(doubleTalk.count))
            let gain = Float(pow(10, (echoLevel - now) / 20))
            echo = rawEcho.map { $0 * gain }
            self.farEnd = farEnd.map { $0 * gain }
            let talker = speechLikeNoise(frames: total, sampleRate: rate, seed: 2)
            var near = [Float](repeating: 0, count: total)
            for index in nearStart..<total { near[index] = talker[index] }
            self.near = scaled(near, toDecibels: echoLevel + test.nearToEchoDecibels, over: doubleTalk)
            let (echo, scaledNear) = (echo, self.near)
            capture = (0..<total).map { echo[$0] + scaledNear[$0] }
        }
    }

    /// Runs one case through `canceller` and measures it.
    public static func measure(_ test: DoubleTalkCase, canceller: Canceller) throws -> DoubleTalkFigures {
        try measure(Signals(test), canceller: canceller)
    }

    public static func measure(_ signals: Signals, canceller: Canceller) throws -> DoubleTalkFigures {
        let (test, farEnd, echo, near, capture) = (
            signals.test, signals.farEnd, signals.echo, signals.near, signals.capture
        )
        let doubleTalk = nearStart..<farStop
        let run = try canceller(capture, farEnd, test.delaySeconds, test.period)
        let output = run.output

        let steady = frames(4)..<frames(7)
        let erle = decibels(power: energy(echo, steady) / energy(output, steady))
        let alone = frames(11)..<total
        let aloneGain = projectionGain(output, near, alone)
        // Per 100 ms window: the near end's gain (the output's projection on it) and what is
        // left over (echo and whatever else is not the near end).
        let window = frames(0.1)
        let typical = energy(near, nearStart..<total) / Double(total - nearStart) * Double(window)
        var worst = Double.infinity
        var halfSecond = nearStart
        // Half seconds with less than a third of the talker's mean energy (a pause between
        // phrases) are left out: a ratio of almost nothing to almost nothing says nothing.
        while halfSecond + frames(0.5) <= farStop {
            let range = halfSecond..<halfSecond + frames(0.5)
            if energy(near, range) > typical * 5 / 3 {
                worst = min(worst, projectionGain(output, near, range) - aloneGain)
            }
            halfSecond += frames(0.5)
        }
        var leftover = 0.0
        var start = nearStart
        while start + window <= farStop {
            let range = start..<start + window
            let nearEnergy = energy(near, range)
            let projection = nearEnergy > 0 ? dot(output, near, range) / nearEnergy : 0
            for index in range {
                let rest = Double(output[index]) - projection * Double(near[index])
                leftover += rest * rest
            }
            start += window
        }
        // From the far end's stop: 0 unless a window of speech is under (a pause is no delay).
        var returned: Double? = 0
        start = farStop
        while start + window <= total {
            let range = start..<start + window
            if energy(near, range) > typical / 10 {
                if projectionGain(output, near, range) < aloneGain - 1 {
                    returned = nil
                } else if returned == nil {
                    returned = Double(start - farStop) / rate
                }
            }
            start += window
        }
        return DoubleTalkFigures(
            erle: erle, nearAlone: aloneGain, doubleTalk: projectionGain(output, near, doubleTalk) - aloneGain,
            doubleTalkWorst: worst, returnSeconds: returned,
            leakage: decibels(
                power: leftover / energy(echo, nearStart..<(nearStart + (farStop - nearStart) / window * window))),
            latencyFrames: run.latencyFrames, cpuSeconds: run.cpuSeconds)
    }

    static func dot(_ a: [Float], _ b: [Float], _ range: Range<Int>) -> Double {
        var sum = 0.0
        for index in range { sum += Double(a[index]) * Double(b[index]) }
        return sum
    }

    /// The output's projection on the near end over `range`, in dB (the near end's part of the
    /// output: what is left of the echo does not count).
    static func projectionGain(_ output: [Float], _ near: [Float], _ range: Range<Int>) -> Double {
        20 * log10(max(dot(output, near, range) / max(energy(near, range), 1e-20), 1e-6))
    }

    /// The calling thread's CPU time in seconds.
    static func threadSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// A canceller over VoiceProcessor with `features`; told the room's delay unless the
    /// features are delay-agnostic (then told 0, as the daemon does when JACK knows no latency).
    public static func voiceProcessor(_ features: VoiceProcessingFeatures) -> Canceller {
        { capture, reference, echoDelay, period in
            let processor = try VoiceProcessor(
                sampleRate: sampleRate, captureChannels: 1, referenceChannels: 1, features: features,
                blockGranularity: period)
            processor.echoPathDelayMilliseconds = features.contains(.delayAgnostic) ? 0 : Int(echoDelay * 1_000)
            let latency = processor.latencyFrames + processor.processingDelayFrames
            var output = [Float](repeating: 0, count: (capture.count + latency) / period * period + period)
            var block = [Float](repeating: 0, count: period)
            var referenceBlock = [Float](repeating: 0, count: period)
            var cpu = 0.0
            var position = 0
            while position < output.count {
                for index in 0..<period {
                    block[index] = position + index < capture.count ? capture[position + index] : 0
                    referenceBlock[index] = position + index < reference.count ? reference[position + index] : 0
                }
                let started = threadSeconds()
                try block.withUnsafeMutableBufferPointer { captureBuffer in
                    try referenceBlock.withUnsafeBufferPointer { referenceBuffer in
                        try processor.process(capture: captureBuffer, reference: referenceBuffer, frames: period)
                    }
                }
                cpu += threadSeconds() - started
                for index in 0..<period { output[position + index] = block[index] }
                position += period
            }
            return (Array(output[latency..<(latency + capture.count)]), latency, cpu)
        }
    }
}

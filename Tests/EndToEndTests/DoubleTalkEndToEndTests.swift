// Double talk through recd: a voiceChat call whose near talker speaks over the far end at the
// echo's level (and 6 dB under it) must come out of the call's recording at about their own
// level, while the far end alone is still cancelled. The room is `recd-signal echo` (30 ms,
// -6 dB, reflections), as in VoiceProcessingEndToEndTests; the server's period is whatever
// the test's JACK server runs (scripts/test's passes; 256 and 1024 frames by hand).

import Foundation
import TestSupport
import Testing

@Suite("double talk end to end", .serialized)
struct DoubleTalkEndToEndTests {
    static let rate = 48_000

    /// Far end 0-7 s, the near talker from 4.5 s to 10 s: far end alone 0-4.5 s (ERLE measured
    /// 2.5-4.5 s), double talk 4.5-7 s, the near end alone 7-10 s. `nearGain` sets the talker
    /// against the echo (the room's echo is the far end 6 dB down with its reflections).
    static func signals(nearGain: Float) -> (far: [Float], near: [Float]) {
        let seconds = { (value: Double) in Int(value * Double(rate)) }
        var far = speechLikeNoise(frames: seconds(10), sampleRate: Double(rate), seed: 1)
        for index in seconds(7)..<seconds(10) { far[index] = 0 }
        far[0] = 0.01
        let talker = speechLikeNoise(frames: seconds(10), sampleRate: Double(rate), seed: 2)
        var near = [Float](repeating: 0, count: seconds(10))
        for index in seconds(4.5)..<seconds(10) { near[index] = talker[index] * nearGain }
        return (far, near)
    }

    static func dot(_ a: [Float], _ b: [Float], _ range: Range<Int>, shiftB: Int) -> Double {
        var sum = 0.0
        for index in range where index - shiftB >= 0 && index - shiftB < b.count && index < a.count {
            sum += Double(a[index]) * Double(b[index - shiftB])
        }
        return sum
    }

    @Test(
        "voiceChat at near/echo 0 and -6 dB: the near end in double talk within 6 (9) dB of alone, back within 1 dB in 0.3 s, ERLE 25 dB",
        arguments: [0.0, -6.0])
    func nearEndSurvivesDoubleTalk(ratio: Double) throws {
        // The echo reaches the microphone about 5 dB under the far end as played (-6 dB direct,
        // reflections adding about 1 dB); the talker is scaled from there and the ratio measured.
        let (far, near) = Self.signals(nearGain: Float(pow(10, (ratio - 5) / 20)))
        let room = uniqueName("room")
        let files = try makeTemporaryDirectory("doubletalk-e2e")
        defer { try? FileManager.default.removeItem(atPath: files) }
        let (echo, farPath) = try VoiceProcessingEndToEndTests.startRoom(room, far: far, near: near, in: files)
        defer { echo.stop() }
        let daemon = try Daemon.inRoom(room)
        let status = try #require(daemon.recctl("--json", "status").json)
        try #require(status["jack"]?["sampleRate"]?.intValue == Self.rate, "the test's signals are made for 48 kHz")
        let period = status["jack"]?["bufferSize"]?.intValue ?? 0
        for (app, arguments) in [
            ("logger", ["--category", "record", "--options", "mixWithOthers", "--mic-usage", "archive"]),
            ("call", ["--category", "playAndRecord", "--mode", "voiceChat", "--mic-usage", "calls"]),
        ] {
            try #require(daemon.recctl(arguments: ["session", "set", app] + arguments).status == 0)
            try #require(daemon.recctl("permission", "grant", app).status == 0)
        }
        let xrunsBefore = try daemon.xruns()
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        try #require(daemon.recctl("record", "start", "call").status == 0)
        let played = try daemon.recctl("play", "call", farPath)
        try #require(played.status == 0, "\(played.stderr)")
        // The graph's time, not the wall's (a starved dummy server runs slow): until the logger
        // holds the far end's length and 2 s (the player's start), checked again below.
        #expect(
            try eventually(timeout: 90) {
                let open = try daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue?.last
                return (open?["frames"]?.intValue ?? 0) >= far.count + 2 * Self.rate
            }, "the logger reached the end of the schedule")
        for app in ["call", "logger"] { try #require(daemon.recctl("record", "stop", app).status == 0) }
        // A missed period moves the room's talker and echo against recd's clock: the figures of
        // such a run say so (a starved 2-core machine makes many).
        let xruns = try daemon.xruns() - xrunsBefore

        func segment(_ app: String) throws -> (samples: [Float], start: Double) {
            let listed = try #require(daemon.recctl("--json", "archive", "list", "--app", app).json?.arrayValue)
            try #require(listed.count == 1, "\(app): \(listed.count) segments")
            let path = try #require(listed[0]["path"]?.stringValue)
            let start = try #require(
                metaflacTag(path, "START_TIME").flatMap(VoiceProcessingEndToEndTests.secondsOfDay))
            return (try decodeFLAC(path, bits: 24).map { Float($0) / 8_388_608 }, start)
        }
        let logger = try segment("logger")
        let call = try segment("call")
        let rate = Double(Self.rate)
        let frames = { (seconds: Double) in Int(seconds * rate) }
        // The logger's clock: the far end's first echo is its first sound, 30 ms after the far end.
        let loggerFirst = try #require(logger.samples.firstIndex { $0 != 0 })
        let farStart = loggerFirst - frames(0.030)
        try #require(
            logger.samples.count >= farStart + frames(10), "the logger's file ends before the schedule does")
        // The talker on the logger's clock (near[i] is logger[i + nearShift]): the best match over
        // the near end alone, around where the room started it.
        let aloneWindow = farStart + frames(7.3)..<farStart + frames(7.8)
        var nearShift = farStart
        var bestScore = -Double.infinity
        for shift in (farStart - 2_400)...(farStart + 2_400) {
            let score = Self.dot(logger.samples, near, aloneWindow, shiftB: shift)
            if score > bestScore { (nearShift, bestScore) = (shift, score) }
        }
        // The call's file on the logger's clock, by the START_TIMEs, refined by correlation.
        let startOffset = Int(((call.start - logger.start) * rate).rounded())
        let lag = VoiceProcessingEndToEndTests.bestLag(
            call.samples, logger.samples, around: startOffset, window: aloneWindow)
        var processed = [Float](repeating: 0, count: logger.samples.count)
        for index in processed.indices where index - lag >= 0 && index - lag < call.samples.count {
            processed[index] = call.samples[index - lag]
        }
        // The near end's part of a range of the output: its projection on the talker, in dB.
        func nearGain(_ range: Range<Int>) -> Double {
            let talker = Self.dot(
                near, near, (range.lowerBound - nearShift)..<(range.upperBound - nearShift), shiftB: 0)
            return 20 * log10(max(Self.dot(processed, near, range, shiftB: nearShift) / max(talker, 1e-20), 1e-6))
        }
        let farAlone = farStart + frames(2.5)..<farStart + frames(4.45)
        let erle = decibels(
            power: energy(logger.samples, farAlone) / max(energy(processed, farAlone), 1e-20))
        let doubleTalk = farStart + frames(4.55)..<farStart + frames(7)
        let alone = farStart + frames(7.6)..<farStart + frames(9.9)
        let aloneGain = nearGain(alone)
        let doubleTalkChange = nearGain(doubleTalk) - aloneGain
        var worst = Double.infinity
        var start = doubleTalk.lowerBound
        let nearEnergy = Self.dot(near, near, frames(4.5)..<frames(10), shiftB: 0) / 5.5
        while start + frames(0.5) <= doubleTalk.upperBound {
            let range = start..<start + frames(0.5)
            let talker = Self.dot(
                near, near, (range.lowerBound - nearShift)..<(range.upperBound - nearShift), shiftB: 0)
            if talker > nearEnergy / 6 { worst = min(worst, nearGain(range) - aloneGain) }
            start += frames(0.5)
        }
        // After the far end stops (7 s, its echo 30 ms later): every 100 ms of speech within 1 dB
        // from `returned` on. It starts at 0: a talker in a pause when the far end stops has not
        // come back late (the first window of speech is not the return), only a window under does.
        var returned: Double? = 0
        var late: [String] = []  // the windows under the bound: when, and by how much
        start = farStart + frames(7.03)
        while start + frames(0.1) <= alone.upperBound {
            let range = start..<start + frames(0.1)
            let talker = Self.dot(
                near, near, (range.lowerBound - nearShift)..<(range.upperBound - nearShift), shiftB: 0)
            if talker > nearEnergy / 100 {
                if nearGain(range) < aloneGain - 1 {
                    returned = nil
                    let at = Double(start - farStart - frames(7.03)) / rate
                    late.append("\((at * 10).rounded() / 10) s: \(((nearGain(range) - aloneGain) * 10).rounded() / 10) dB")
                } else if returned == nil {
                    returned = Double(start - farStart - frames(7.03)) / rate
                }
            }
            start += frames(0.1)
        }
        // The ratio as the microphone had it: the talker alone against the echo alone.
        let measuredRatio = decibels(
            power: (energy(logger.samples, alone) / Double(alone.count))
                / (energy(logger.samples, farAlone) / Double(farAlone.count)))
        let server = status["jack"]?["implementation"]?.stringValue ?? "?"
        print(
            "double talk end to end (\(server), \(period)-frame periods, \(xruns) xruns), near/echo \(Int(ratio)) dB "
                + "(measured \((measuredRatio * 10).rounded() / 10) dB): ERLE \((erle * 10).rounded() / 10) dB, "
                + "near end in double talk \((doubleTalkChange * 10).rounded() / 10) dB (worst 0.5 s "
                + "\((worst * 10).rounded() / 10) dB), back within 1 dB after "
                + "\(returned.map { "\(($0 * 100).rounded() / 100) s" } ?? "never")"
                + (late.isEmpty ? "" : " (windows under: \(late.joined(separator: ", ")))"))
        #expect(abs(measuredRatio - ratio) <= 3, "the room's near/echo ratio is \(measuredRatio) dB, not \(ratio)")
        #expect(erle >= 25, "ERLE with the far end alone \(erle) dB")
        let bound = ratio < 0 ? -9.0 : -6.0
        #expect(doubleTalkChange >= bound, "near end in double talk \(doubleTalkChange) dB")
        #expect(worst >= bound, "near end's worst half second in double talk \(worst) dB")
        #expect(
            (returned ?? .infinity) <= 0.3,
            "back within 1 dB after \(String(describing: returned)) s; windows under: \(late.joined(separator: ", "))")
    }
}

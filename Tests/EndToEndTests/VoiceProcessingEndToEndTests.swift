// Echo cancellation through the real recd: a voiceChat session plays a far end to its
// loudspeaker; a room made in the graph (`recd-signal echo`: delay, attenuation, reflections
// and a tail) sends it back into the session's microphone with a near-end talker; the session's
// recorder records it echo-cancelled while a plain logger records the same microphone as it
// came. Both FLACs are decoded and compared.

import ControlProtocol
import Foundation
import TestSupport
import Testing

@Suite("voice processing end to end", .serialized)
struct VoiceProcessingEndToEndTests {
    static let rate = 48_000

    /// The schedule, from the far end's first frame: far end alone 0–4.5 s (the canceller
    /// converges, ERLE measured 2.5–4.5 s), near end alone 4.5–6.3 s, both 6.3–8.1 s, far end
    /// alone again 8.1–9.3 s. The room starts the near end with the first sound it hears, so
    /// both run on one clock whatever the set-up took.
    static func signals() -> (far: [Float], near: [Float]) {
        let rate = Double(Self.rate)
        let frames = { (seconds: Double) in Int(seconds * rate) }
        var far = speechLikeNoise(frames: frames(9.3), sampleRate: rate, seed: 1)
        for index in frames(4.5)..<frames(6.3) { far[index] = 0 }
        // The first sample is where the near end's clock starts in the room: not silent.
        far[0] = 0.01
        let talker = speechLikeNoise(frames: frames(9.3), sampleRate: rate, seed: 2)
        var near = [Float](repeating: 0, count: frames(9.3))
        for index in frames(4.5)..<frames(8.1) { near[index] = talker[index] }
        return (far, near)
    }

    @Test("a voiceChat recorder cancels the room's echo by 20 dB and more; a logger of the same input stays bit-exact")
    func echoCancelledRecording() throws {
        let (far, near) = Self.signals()
        let room = uniqueName("room")
        let files = try makeTemporaryDirectory("voice-e2e")
        defer { try? FileManager.default.removeItem(atPath: files) }
        let (echo, farPath) = try VoiceProcessingEndToEndTests.startRoom(room, far: far, near: near, in: files)
        defer { echo.stop() }
        // What the microphone port carried, captured beside recd: the logger's file must equal it.
        let unprocessedPath = files + "/mic.raw"
        let tap = try SignalClient([
            "--name", uniqueName("tap"), "capture", "--ports", "in_1", "--out", unprocessedPath, "--connect",
            "\(room):mic",
        ])
        defer { tap.stop() }
        let daemon = try Daemon.inRoom(room)
        let status = try #require(daemon.recctl("--json", "status").json)
        try #require(status["jack"]?["sampleRate"]?.intValue == Self.rate, "the test's signals are made for 48 kHz")
        let server = status["jack"]?["implementation"]?.stringValue ?? "?"
        for (app, arguments) in [
            ("logger", ["--category", "record", "--options", "mixWithOthers", "--mic-usage", "archive"]),
            ("call", ["--category", "playAndRecord", "--mode", "voiceChat", "--mic-usage", "calls"]),
        ] {
            try #require(daemon.recctl(arguments: ["session", "set", app] + arguments).status == 0)
            try #require(daemon.recctl("permission", "grant", app).status == 0)
        }
        let xrunsBefore = try daemon.xruns()
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        let started = try daemon.recctl("record", "start", "call")
        try #require(started.status == 0, "\(started.stderr)")
        let played = try daemon.recctl("play", "call", farPath)
        try #require(played.status == 0, "\(played.stderr)")
        // The call's input latency includes the processing's while it records processed.
        var callLatency: Double?
        #expect(
            try eventually(timeout: 3) {
                callLatency = try daemon.recctl("--json", "session", "show", "call").json?["actual"]?["inputLatency"]?
                    .doubleValue
                return (callLatency ?? 0) > 0.015
            }, "actual.inputLatency \(String(describing: callLatency)) s")
        let loggerLatency = try daemon.recctl("--json", "session", "show", "logger").json?["actual"]?["inputLatency"]?
            .doubleValue
        usleep(useconds_t(Double(far.count) / Double(Self.rate) * 1e6) + 500_000)
        for app in ["call", "logger"] { try #require(daemon.recctl("record", "stop", app).status == 0) }
        let xruns = try daemon.xruns() - xrunsBefore
        tap.stop()

        func segment(_ app: String) throws -> (samples: [Float], start: Double, gaps: String?) {
            let listed = try #require(daemon.recctl("--json", "archive", "list", "--app", app).json?.arrayValue)
            try #require(listed.count == 1, "\(app): \(listed.count) segments")
            let path = try #require(listed[0]["path"]?.stringValue)
            let start = try #require(metaflacTag(path, "START_TIME").flatMap(Self.secondsOfDay))
            return (try decodeFLAC(path, bits: 24).map { Float($0) / 8_388_608 }, start, try metaflacTag(path, "GAPS"))
        }
        let logger = try segment("logger")
        let call = try segment("call")

        // The logger: bit for bit what the microphone port carried (24-bit, as recd quantizes).
        let unprocessed = try readRawFloats(path: unprocessedPath)
        let loggerFirst = try #require(logger.samples.firstIndex { $0 != 0 })
        let tapFirst = try #require(unprocessed.firstIndex { $0 != 0 })
        let shift = tapFirst - loggerFirst
        try #require(shift >= 0, "the logger started before the capture beside it")
        let common = min(logger.samples.count, unprocessed.count - shift)
        var mismatches = 0
        var firstMismatch: Int?
        for index in 0..<common
        where Self.quantize24(unprocessed[index + shift]) != Self.quantize24(logger.samples[index]) {
            mismatches += 1
            if firstMismatch == nil { firstMismatch = index }
        }
        #expect(common > Self.rate * 9)
        // A missed period (an xrun: a busy 2-core machine) breaks any sample-exact comparison
        // through no fault of recd: then the count is reported, not judged (PipeWire reports none).
        let exact = "\(mismatches) of \(common) logger samples differ (first at \(String(describing: firstMismatch)))"
        // PipeWire's JACK reports no xruns, so a cycle one side missed there is told otherwise:
        // recd lists what its logger missed in the segment's GAPS; the capture beside it missing
        // frames shows in the samples (from the first difference on, the two agree again with the
        // capture's side that many frames behind, over a stretch that is not silence). Either is
        // no fault of recd's; samples that differ otherwise are.
        // How many frames (1...8192) one side lacks where the two agree again for 0.1 s from the
        // first difference on: `direction` -1, the capture's side behind; +1, the logger's.
        func agreeAgain(_ direction: Int) -> Int? {
            guard let first = firstMismatch else { return nil }
            let span = 4_800
            return (1...8_192).first { frames in
                let offset = shift + direction * frames
                return first + span <= logger.samples.count && first + offset >= 0
                    && first + offset + span <= unprocessed.count
                    && (first..<(first + span)).allSatisfy {
                        Self.quantize24(unprocessed[$0 + offset]) == Self.quantize24(logger.samples[$0])
                    }
            }
        }
        var captureMissed: Int?
        if let first = firstMismatch, xruns == 0, logger.gaps == nil, first + 4_800 <= logger.samples.count,
            (first..<(first + 4_800)).filter({ logger.samples[$0] != 0 }).count > 2_400
        {
            captureMissed = agreeAgain(-1)
        }
        if xruns > 0 {
            print("JACK reported \(xruns) xrun(s) during the run: \(exact)")
        } else if let gaps = logger.gaps {
            print("the logger's segment lists what it missed (GAPS \(gaps)): \(exact)")
        } else if let missed = captureMissed {
            print("the capture beside recd missed \(missed) frames (the samples agree again that far apart): \(exact)")
        } else {
            // Said, for the one who reads the failure: whether the logger lacks frames there.
            let lacking = agreeAgain(+1)
            #expect(
                mismatches == 0,
                "\(exact)\(lacking.map { "; from there on the logger lacks \($0) frames the port carried, and lists no GAPS" } ?? "")")
        }

        // The far end reaches the room's input at `farStart` on the logger's clock: its echo's
        // direct sound is 30 ms later (the first sample the logger heard).
        let rate = Double(Self.rate)
        let farStart = loggerFirst - Int(0.030 * rate)
        // The call's file on the logger's clock: START_TIMEs (the call's moved back by the
        // processing's latency), then the correlation of the near end alone, which they must agree with.
        let startOffset = Int(((call.start - logger.start) * rate).rounded())
        let nearAlone = farStart + Int(4.8 * rate)..<farStart + Int(6.25 * rate)
        let correlated = nearAlone.lowerBound..<nearAlone.lowerBound + Self.rate / 2
        let lag = Self.bestLag(call.samples, logger.samples, around: startOffset, window: correlated)
        let processed = { (range: Range<Int>) in
            Array(call.samples[max(0, range.lowerBound - lag)..<min(call.samples.count, range.upperBound - lag)])
        }
        let heard = { (range: Range<Int>) in Array(logger.samples[range]) }
        func erle(_ range: Range<Int>) -> Double {
            decibels(power: energy(heard(range), 0..<range.count) / energy(processed(range), 0..<range.count))
        }

        let window = Int(0.1 * rate)
        let typical = energy(heard(farStart..<farStart + Int(4.5 * rate)), 0..<Int(4.5 * rate)) / 45
        var convergedAt: Double?
        for start in stride(from: farStart, to: farStart + Int(4.4 * rate), by: window) {
            let range = start..<start + window
            guard energy(heard(range), 0..<window) > typical / 100 else { continue }
            if erle(range) < 20 {
                convergedAt = nil
            } else if convergedAt == nil {
                convergedAt = Double(start - farStart) / rate
            }
        }
        let steady = erle(farStart + Int(2.5 * rate)..<farStart + Int(4.45 * rate))
        let afterDoubleTalk = erle(farStart + Int(8.4 * rate)..<farStart + Int(9.25 * rate))
        let nearChange = decibels(
            power: energy(processed(nearAlone), 0..<nearAlone.count) / energy(heard(nearAlone), 0..<nearAlone.count))
        // In double talk the near end's part of the output: its energy less the echo left (the
        // output's energy at the steady ERLE is negligible beside it), against the talker's own.
        let doubleTalk = farStart + Int(6.5 * rate)..<farStart + Int(8.05 * rate)
        let talkerEnergy = energy(near, Int(6.5 * rate)..<Int(8.05 * rate))
        let doubleTalkChange = decibels(power: energy(processed(doubleTalk), 0..<doubleTalk.count) / talkerEnergy)
        let latencyMilliseconds = Double(lag - startOffset) / rate * 1_000
        print(
            "voice processing end to end (\(server)): ERLE \(Self.tenths(steady)) dB (2.5–4.5 s), "
                + "\(Self.tenths(afterDoubleTalk)) dB "
                + "after double talk; converged at \(convergedAt.map { Self.tenths($0) + " s" } ?? "never"); near end "
                + "alone \(Self.tenths(nearChange)) dB, in double talk \(Self.tenths(doubleTalkChange)) dB; input "
                + "latency \(String(describing: callLatency)) s (logger \(String(describing: loggerLatency)) s); "
                + "START_TIME vs correlation \(Self.tenths(latencyMilliseconds)) ms")
        #expect(steady >= 20, "ERLE \(steady) dB")
        #expect(afterDoubleTalk >= 20, "ERLE after double talk \(afterDoubleTalk) dB")
        #expect(convergedAt != nil && convergedAt! < 2.5, "converged at \(String(describing: convergedAt))")
        // The talker is at a normal level (-25 dBFS RMS): voiceChat's gain control leaves it within
        // 3 dB; it raises a quiet one (VoiceProcessingTests).
        #expect(abs(nearChange) <= 3, "near end alone changed by \(nearChange) dB")
        // The segment start moved back by the processing's latency: the files line up to 2 ms.
        #expect(abs(latencyMilliseconds) <= 2, "START_TIMEs put the call \(latencyMilliseconds) ms off its samples")
        #expect((callLatency ?? 0) > (loggerLatency ?? 0) + 0.015)
    }

    @Test(
        "a mode or preference change reaches a running recorder: END_REASON=processingChange, the next segment at the frame after, with its VOICE_PROCESSING"
    )
    func processingChangeRestartsTheRecorder() throws {
        let source = uniqueName("src")
        let speaker = uniqueName("spk")
        let daemon = try Daemon(
            ports: """
                [port mic]
                type = builtInMic
                direction = input
                jack = \(source):out_1

                [port speaker]
                type = builtInSpeaker
                direction = output
                jack = \(speaker):in_1

                """)
        // The microphone carries recd-signal's counter (channel 0 of frame n is 7n mod 65536):
        // an unprocessed segment tells its frames' places in one timeline.
        let counter = try SignalClient(["--name", source, "play", "--ports", "out_1", "--signal", "counter"])
        defer { counter.stop() }
        let sink = try SignalClient([
            "--name", speaker, "capture", "--ports", "in_1", "--out", daemon.directory + "/speaker.raw",
        ])
        defer { sink.stop() }
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.allSatisfy {
                    $0["available"] == true
                } == true
            })
        try #require(
            daemon.recctl("session", "set", "call", "--category", "playAndRecord", "--mic-usage", "calls").status == 0)
        try #require(daemon.recctl("permission", "grant", "call").status == 0)
        let watcher = try daemon.watch("call")
        let started = try daemon.recctl("record", "start", "call")
        try #require(started.status == 0, "\(started.stderr)")
        watcher.waitFor { $0["event"] == "recording" && $0["state"] == "segment" }
        // Unprocessed, then voiceChat (the mode), unprocessed again (mode default), then echo
        // cancellation alone (prefersEchoCancelledInput): each change a new segment.
        let changes: [[String]] = [
            ["session", "set", "call", "--category", "playAndRecord", "--mode", "voiceChat"],
            ["session", "set", "call", "--category", "playAndRecord", "--mode", "default"],
            ["session", "prefer", "call", "--echo-cancelled-input", "yes"],
        ]
        for (number, change) in changes.enumerated() {
            usleep(800_000)
            let changed = try daemon.recctl(arguments: change)
            try #require(changed.status == 0, "\(change): \(changed.stderr)")
            let switched = try #require(
                watcher.waitFor(count: number + 1) { $0["event"] == "recording" && $0["state"] == "switched" }.last {
                    $0["state"] == "switched"
                })
            #expect(switched["reason"] == "processingChange", "\(switched)")
        }
        usleep(800_000)
        try #require(daemon.recctl("record", "stop", "call").status == 0)
        let events = watcher.waitFor { $0["event"] == "recording" && $0["state"] == "stopped" }
        #expect(events.filter { $0["state"] == "stopped" }.count == 1, "the stream stopped once, at the end")

        let listed = try #require(daemon.recctl("--json", "archive", "list", "--app", "call").json?.arrayValue)
        try #require(listed.count == 4, "\(listed)")
        let paths = try listed.map { try #require($0["path"]?.stringValue) }
        #expect(listed.map { $0["endReason"] } == ["processingChange", "processingChange", "processingChange", "stop"])
        #expect(try paths.map { try metaflacTag($0, "VOICE_PROCESSING") } == [nil, "voice", nil, "echoCancellation"])
        #expect(try paths.allSatisfy { try flacTest($0) })
        // In time: each START_TIME is the previous segment's plus its frames.
        let frames = try listed.map { try #require($0["frames"]?.intValue) }
        let starts = try listed.map { try #require($0["start"]?.stringValue.flatMap(Self.secondsOfDay)) }
        for index in 1..<listed.count {
            let drift = (starts[index] - (starts[index - 1] + Double(frames[index - 1]) / Double(Self.rate))) * 1e6
            print(
                "processing change \(index): segment of \(frames[index - 1]) frames, next START_TIME - its end = "
                    + "\(drift) µs")
            #expect(abs(drift) <= 2, "segment \(index) starts \(drift) µs from the previous one's end")
        }
        // In samples: the processed segment holds exactly the frames between the unprocessed
        // ones around it, none lost and none doubled (the counter's frame after the first's last,
        // plus the second's frames, is the third's first).
        let first = try decodeFLAC(paths[0], bits: 24)
        let third = try decodeFLAC(paths[2], bits: 24)
        #expect(first.count == frames[0] && third.count == frames[2])
        let lastFrame = counterFrame(k: Int(first[first.count - 1] / 256) + 32_768, channel: 0)
        let nextFrame = counterFrame(k: Int(third[0] / 256) + 32_768, channel: 0)
        #expect(
            nextFrame == (lastFrame + 1 + frames[1]) % 65_536,
            "unprocessed to counter frame \(lastFrame), \(frames[1]) processed frames, then from \(nextFrame)")
    }

    @Test(
        "a level-triggered take of a voiceChat session records processed from its pre-roll on: VOICE_PROCESSING, the room's echo down 20 dB and more"
    )
    func triggeredTakeIsProcessed() throws {
        let rate = Double(Self.rate)
        // The far end alone, 8 s; the room adds no talker: all the take hears is the echo.
        let far = speechLikeNoise(frames: Int(8 * rate), sampleRate: rate, seed: 1)
        let room = uniqueName("room")
        let files = try makeTemporaryDirectory("voice-take")
        defer { try? FileManager.default.removeItem(atPath: files) }
        let silence = [Float](repeating: 0, count: far.count)
        let (echo, farPath) = try VoiceProcessingEndToEndTests.startRoom(room, far: far, near: silence, in: files)
        defer { echo.stop() }
        let daemon = try Daemon.inRoom(
            room,
            extraConfig: """

                [session call]
                category = playAndRecord
                mode = voiceChat
                mic_usage = calls
                pre_roll_seconds = 1

                """)
        try #require(
            daemon.recctl(
                "session", "set", "logger", "--category", "record", "--options", "mixWithOthers", "--mic-usage",
                "archive"
            ).status == 0)
        for app in ["logger", "call"] { try #require(daemon.recctl("permission", "grant", app).status == 0) }
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        let watcher = try daemon.watch("call")
        let armed = try daemon.recctl("record", "start", "call", "--trigger", "-40", "--hold", "2")
        try #require(armed.status == 0, "\(armed.stderr)")
        usleep(1_500_000)  // the pre-roll fills with the room's silence
        let played = try daemon.recctl("play", "call", farPath)
        try #require(played.status == 0, "\(played.stderr)")
        func isFinished(_ event: JSONValue) -> Bool { event["event"] == "recording" && event["state"] == "finished" }
        try #require(!watcher.waitFor(timeout: 15, isFinished).filter(isFinished).isEmpty, "the take did not finish")
        try #require(daemon.recctl("record", "stop", "call").status == 0)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)

        func segment(_ app: String) throws -> (samples: [Float], start: Double, path: String) {
            let listed = try #require(daemon.recctl("--json", "archive", "list", "--app", app).json?.arrayValue)
            try #require(listed.count == 1, "\(app): \(listed.count) segments")
            let path = try #require(listed[0]["path"]?.stringValue)
            let start = try #require(metaflacTag(path, "START_TIME").flatMap(Self.secondsOfDay))
            return (try decodeFLAC(path, bits: 24).map { Float($0) / 8_388_608 }, start, path)
        }
        let logger = try segment("logger")
        let take = try segment("call")
        #expect(try metaflacTag(take.path, "VOICE_PROCESSING") == "voice")
        #expect(try metaflacTag(take.path, "END_REASON") == "triggerHold")
        #expect(try metaflacTag(take.path, "PRE_ROLL_SECONDS") != nil)
        // The take on the logger's clock by the START_TIMEs (the take's moved back by the
        // processing's latency, as any processed file's): take frame k is logger frame k + offset.
        let offset = Int(((take.start - logger.start) * rate).rounded())
        let echoStart = try #require(logger.samples.firstIndex { abs($0) > 1e-4 })
        let takeFirstSound = (take.samples.firstIndex { abs($0) > 1e-4 } ?? 0) + offset
        // The pre-roll: the take begins about 1 s before the first loud frame.
        let preRoll = Double(echoStart - offset) / rate
        func erle(_ from: Double, _ to: Double) throws -> Double {
            let range = echoStart + Int(from * rate)..<echoStart + Int(to * rate)
            try #require(range.lowerBound - offset >= 0 && range.upperBound - offset <= take.samples.count)
            let heard = Array(logger.samples[range])
            let processed = Array(take.samples[(range.lowerBound - offset)..<(range.upperBound - offset)])
            return decibels(power: energy(heard, 0..<heard.count) / energy(processed, 0..<processed.count))
        }
        let first = try erle(0, 1)
        let steady = try erle(2.5, 7.5)
        print(
            "voice-processed take: the echo begins \(Self.tenths(preRoll)) s into the take (its first sound "
                + "\(Self.tenths(Double(takeFirstSound - echoStart) / rate * 1_000)) ms from the echo's); ERLE "
                + "\(Self.tenths(first)) dB in the echo's first second, \(Self.tenths(steady)) dB 2.5–7.5 s")
        #expect(preRoll > 0.5 && preRoll < 1.5, "the echo begins \(preRoll) s into the take")
        #expect(steady >= 20, "ERLE \(steady) dB after convergence")
    }

    /// The lag (call sample k is logger sample k + lag) within ±25 ms of `around` at which the
    /// call's file best matches the logger's over `window` (logger frames).
    static func bestLag(_ call: [Float], _ logger: [Float], around: Int, window: Range<Int>) -> Int {
        var best = (lag: around, score: -Double.infinity)
        let reach = 1_200
        call.withUnsafeBufferPointer { call in
            logger.withUnsafeBufferPointer { logger in
                for lag in (around - reach)...(around + reach) {
                    var score = 0.0
                    for index in stride(from: window.lowerBound, to: window.upperBound, by: 4) {
                        let other = index - lag
                        guard other >= 0, other < call.count else { continue }
                        score += Double(call[other]) * Double(logger[index])
                    }
                    if score > best.score { best = (lag, score) }
                }
            }
        }
        return best.lag
    }

    /// A float sample as recd's 24-bit FLAC holds it: scaled by 2^23, clamped, rounded half away from zero.
    static func quantize24(_ sample: Float) -> Int32 {
        Int32(max(-8_388_608, min(8_388_607, (Double(sample) * 8_388_608))).rounded())
    }

    /// Seconds since midnight of an ISO 8601 START_TIME (`2026-11-29T23:17:01.123456Z`).
    static func secondsOfDay(_ text: String) -> Double? {
        guard let t = text.firstIndex(of: "T") else { return nil }
        let parts = text[text.index(after: t)...].dropLast().split(separator: ":")
        guard parts.count == 3, let hours = Double(parts[0]), let minutes = Double(parts[1]),
            let seconds = Double(parts[2])
        else { return nil }
        return hours * 3_600 + minutes * 60 + seconds
    }

    /// The room: the far end written as a 16-bit WAV for `recctl play` (its path returned), and
    /// `recd-signal echo` named `room` playing `near` into the microphone port with the room's
    /// echo of the speaker port (30 ms, −6 dB, reflections). The caller stops it.
    static func startRoom(_ room: String, far: [Float], near: [Float], in files: String) throws
        -> (echo: SignalClient, farPath: String)
    {
        let farPath = files + "/far.wav"
        try writeWAV(
            path: farPath, sampleRate: rate, channels: 1,
            samples: far.map { Int16(max(-32_767, min(32_767, ($0 * 32_767).rounded()))) })
        let nearPath = files + "/near.raw"
        try near.withUnsafeBufferPointer { try Data(buffer: $0).write(to: URL(fileURLWithPath: nearPath)) }
        let echo = try SignalClient([
            "--name", room, "echo", "--ports", "speaker,mic", "--near", nearPath, "--delay", "30", "--gain", "-6",
        ])
        return (echo, farPath)
    }

    static func tenths(_ value: Double) -> String { "\((value * 10).rounded() / 10)" }
}

extension Daemon {
    /// recd with the echo room's microphone and loudspeaker as its ports (`recd-signal echo`
    /// named `room`: `room:mic`, `room:speaker`), once both are available.
    static func inRoom(_ room: String, extraConfig: String = "") throws -> Daemon {
        let daemon = try Daemon(
            extraConfig: extraConfig,
            ports: """
                [port mic]
                type = builtInMic
                direction = input
                jack = \(room):mic

                [port speaker]
                type = builtInSpeaker
                direction = output
                jack = \(room):speaker

                """)
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.allSatisfy {
                    $0["available"] == true
                } == true
            })
        return daemon
    }
}

// An attached application's capture echo-cancelled through the real recd: a voiceChat session
// plays a far end to its loudspeaker, the room in the graph (`recd-signal echo`) sends it back
// into the microphone with a near-end talker, and a VoIP app attached with a capture port (a
// `recd-signal capture` client) receives the microphone processed at the latency
// `actual.inputLatency` says. Another app attached to an unprocessed session gets the
// microphone bit for bit; switching the mode off and on switches the app between raw and
// processed without leaving a worker behind.

import ControlProtocol
import Foundation
import TestSupport
import Testing

@Suite("attached applications' capture, echo-cancelled, end to end", .serialized)
struct AttachmentVoiceEndToEndTests {
    static let rate = VoiceProcessingEndToEndTests.rate

    func attach(_ client: RawClient, app: String, jackClient: String, capture: [String]) -> JSONValue? {
        let line = JSONValue.object([
            ("v", 2), ("id", 1), ("op", .string("session.attach")), ("app", .string(app)),
            ("client", .string(jackClient)),
            ("capturePorts", JSONValue(capture)),
        ]).jsonText
        client.send(line + "\n")
        return client.readJSON()
    }

    /// Threads of the daemon named `name` (the workers: "attach voice").
    func threads(_ daemon: Daemon, named name: String) -> Int {
        guard let pid = daemon.pid,
            let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        else { return -1 }
        return tasks.filter {
            (try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8))?.trimmingCharacters(
                in: .whitespacesAndNewlines) == name
        }.count
    }

    @Test(
        "a voiceChat session's attached app receives its input echo-cancelled by 20 dB and more at the latency actual.inputLatency says; an unprocessed session's app gets it bit for bit; mode changes switch it"
    )
    func echoCancelledAttachment() throws {
        let (far, near) = VoiceProcessingEndToEndTests.signals()
        let room = uniqueName("room")
        let voip = uniqueName("voip")
        let plain = uniqueName("plain")
        let files = try makeTemporaryDirectory("attach-voice-e2e")
        defer { try? FileManager.default.removeItem(atPath: files) }
        let (echo, farPath) = try VoiceProcessingEndToEndTests.startRoom(room, far: far, near: near, in: files)
        defer { echo.stop() }
        // Each app: in_1 straight from the microphone port (the raw input, on the app's own
        // clock), in_2 attached: what recd gives it. Same client, same frames.
        let voipPath = files + "/voip.raw"
        let voipApp = try SignalClient([
            "--name", voip, "capture", "--ports", "in_1,in_2", "--out", voipPath, "--connect", "\(room):mic",
        ])
        defer { voipApp.stop() }
        let plainPath = files + "/plain.raw"
        let plainApp = try SignalClient([
            "--name", plain, "capture", "--ports", "in_1,in_2", "--out", plainPath, "--connect", "\(room):mic",
        ])
        defer { plainApp.stop() }
        let daemon = try Daemon.inRoom(room)
        let status = try #require(daemon.recctl("--json", "status").json)
        try #require(status["jack"]?["sampleRate"]?.intValue == Self.rate, "the test's signals are made for 48 kHz")
        let server = status["jack"]?["implementation"]?.stringValue ?? "?"
        let period = status["jack"]?["bufferSize"]?.intValue ?? 1024
        for (app, arguments) in [
            ("logger", ["--category", "record", "--options", "mixWithOthers", "--mic-usage", "archive"]),
            ("call", ["--category", "playAndRecord", "--mode", "voiceChat", "--mic-usage", "calls"]),
        ] {
            try #require(daemon.recctl(arguments: ["session", "set", app] + arguments).status == 0)
            try #require(daemon.recctl("permission", "grant", app).status == 0)
        }
        let control = try RawClient(path: daemon.socket)
        let attachedVoip = attach(control, app: "call", jackClient: voip, capture: ["\(voip):in_2"])
        try #require(attachedVoip?["ok"] == true, "\(attachedVoip?.jsonText ?? "no reply")")
        let attachedPlain = attach(control, app: "logger", jackClient: plain, capture: ["\(plain):in_2"])
        try #require(attachedPlain?["ok"] == true, "\(attachedPlain?.jsonText ?? "no reply")")
        for app in ["logger", "call"] { try #require(daemon.recctl("session", "activate", app).status == 0) }
        func attachment(_ client: String) throws -> JSONValue? {
            try daemon.recctl("--json", "status").json?["attachments"]?.arrayValue?.first {
                $0["client"]?.stringValue == client
            }
        }
        #expect(
            try eventually(timeout: 3) { try attachment(voip)?["processingLatency"]?.doubleValue != nil },
            "the call's attachment is processed")
        #expect(try attachment(plain)?["processing"] == .null, "the logger's attachment is not")
        let listed = try daemon.recctl("status").stdout
        #expect(listed.contains("captures \(voip):in_2 (voice, "), "recctl status:\n\(listed)")
        #expect(threads(daemon, named: "attach voice") == 1)

        let xrunsBefore = try daemon.xruns()
        let played = try daemon.recctl("play", "call", farPath)
        try #require(played.status == 0, "\(played.stderr)")
        usleep(useconds_t(Double(far.count) / Double(Self.rate) * 1e6) + 500_000)
        let callLatency = try daemon.recctl("--json", "session", "show", "call").json?["actual"]?["inputLatency"]?
            .doubleValue
        let loggerLatency = try daemon.recctl("--json", "session", "show", "logger").json?["actual"]?["inputLatency"]?
            .doubleValue
        let processedInfo = try #require(try attachment(voip))
        let underruns = processedInfo["underruns"]?.intValue ?? -1
        let xruns = try daemon.xruns() - xrunsBefore
        let voipFrames = try readRawFloats(path: voipPath)

        // The unprocessed session's app: the microphone port's samples, frame for frame, as late
        // as the graph's hop through recd makes them (measured: one period here, on jackd and on
        // PipeWire alike, against the app's own port connected straight to the microphone).
        let plainFrames = deinterleave(try readRawFloats(path: plainPath), channels: 2)
        let plainHeard = try #require(plainFrames[0].firstIndex { $0 != 0 }, "the plain app's microphone stayed silent")
        let plainGot = try #require(plainFrames[1].firstIndex { $0 != 0 }, "the plain app got nothing from recd")
        let hop = plainGot - plainHeard
        #expect(hop == 0 || hop == period, "recd's raw capture came \(hop) frames after the microphone's")
        var mismatches = 0
        let plainCount = min(plainFrames[0].count, plainFrames[1].count - hop)
        for index in plainHeard..<plainCount where plainFrames[0][index] != plainFrames[1][index + hop] {
            mismatches += 1
        }
        let exact = "\(mismatches) of \(plainCount - plainHeard) samples of the plain app differ"
        if xruns == 0 { #expect(mismatches == 0, "\(exact)") } else { print("\(xruns) xrun(s): \(exact)") }

        // The call's app: in_1 the microphone, in_2 what recd gave it.
        let channels = deinterleave(voipFrames, channels: 2)
        let (heard, processedAll) = (channels[0], channels[1])
        let rate = Double(Self.rate)
        let firstHeard = try #require(heard.firstIndex { $0 != 0 }, "the microphone stayed silent")
        let farStart = firstHeard - Int(0.030 * rate)
        // The delay recd says (the processing's latency and the ring's slack), in frames.
        let added = (callLatency ?? 0) - (loggerLatency ?? 0)
        let expectedLag = Int((added * rate).rounded())
        let nearAlone = farStart + Int(4.8 * rate)..<farStart + Int(6.25 * rate)
        let correlated = nearAlone.lowerBound..<nearAlone.lowerBound + Self.rate / 2
        // processed[k + lag] is heard[k], processed.
        let lag = -VoiceProcessingEndToEndTests.bestLag(processedAll, heard, around: -expectedLag, window: correlated)
        let processed = { (range: Range<Int>) in
            Array(
                processedAll[
                    min(processedAll.count, range.lowerBound + lag)..<min(processedAll.count, range.upperBound + lag)])
        }
        func erle(_ range: Range<Int>) -> Double {
            decibels(power: energy(Array(heard[range]), 0..<range.count) / energy(processed(range), 0..<range.count))
        }
        let window = Int(0.1 * rate)
        let tenthsOf = { (value: Double) in (value * 10).rounded() / 10 }
        let typical = energy(Array(heard[farStart..<farStart + Int(4.5 * rate)]), 0..<Int(4.5 * rate)) / 45
        // Converged: every 100 ms window of echo from then on cancelled by 18 dB or more (the
        // whole steady stretch by 20, below). SpeexDSP's canceller, converged by 0.9 s, left one
        // window at a far-end burst's onset at 19.8 dB in 2 of 16 runs (which chunk phase the
        // processing met depends on when the app attached): a window, not a filter that lost it.
        var convergedAt: Double?
        var under: [String] = []  // the windows under the bound: when, their ERLE and level
        for start in stride(from: farStart, to: farStart + Int(4.4 * rate), by: window) {
            let range = start..<start + window
            guard energy(Array(heard[range]), 0..<window) > typical / 100 else { continue }
            if erle(range) < 18 {
                convergedAt = nil
                let level = decibels(power: energy(Array(heard[range]), 0..<window) / typical)
                under.append(
                    "\(tenthsOf(Double(start - farStart) / rate)) s: \(tenthsOf(erle(range))) dB "
                        + "(echo \(tenthsOf(level)) dB from typical)")
            } else if convergedAt == nil {
                convergedAt = Double(start - farStart) / rate
            }
        }
        let steady = erle(farStart + Int(2.5 * rate)..<farStart + Int(4.45 * rate))
        let afterDoubleTalk = erle(farStart + Int(8.4 * rate)..<farStart + Int(9.25 * rate))
        let nearChange = decibels(
            power: energy(processed(nearAlone), 0..<nearAlone.count)
                / energy(Array(heard[nearAlone]), 0..<nearAlone.count))
        let tenths = VoiceProcessingEndToEndTests.tenths
        print(
            "attached app, voice processing end to end (\(server), \(period)-frame periods): ERLE \(tenths(steady)) dB "
                + "(2.5–4.5 s), \(tenths(afterDoubleTalk)) dB after double talk; converged at "
                + "\(convergedAt.map { tenths($0) + " s" } ?? "never"); near end alone \(tenths(nearChange)) dB; "
                + "delay received \(tenths(Double(lag) / rate * 1_000)) ms less the graph's hop "
                + "\(tenths(Double(hop) / rate * 1_000)) ms, actual.inputLatency adds "
                + "\(tenths(added * 1_000)) ms (call \(String(describing: callLatency)) s, logger "
                + "\(String(describing: loggerLatency)) s); \(underruns) underrun(s), \(xruns) xrun(s)")
        #expect(steady >= 20, "ERLE \(steady) dB")
        #expect(afterDoubleTalk >= 20, "ERLE after double talk \(afterDoubleTalk) dB")
        #expect(
            convergedAt != nil && convergedAt! < 2.5,
            "converged at \(String(describing: convergedAt)); windows under 18 dB: \(under.joined(separator: ", "))")
        #expect(nearChange > -3 && nearChange < 8, "near end alone changed by \(nearChange) dB")
        // What the app receives is as late as the session says: to 2 ms (the brief asked for a
        // period; a slack left out of the figure is a whole period off).
        #expect(added > 0.015, "actual.inputLatency adds \(added) s")
        #expect(
            abs(lag - hop - expectedLag) <= Self.rate / 500,
            "received \(lag) frames late (the graph's hop \(hop)), the session says \(expectedLag)")
        // The worker keeps up: a few misses at most on this 2-core machine. A run in which JACK
        // itself missed periods (xruns: the machine too loaded for the server) is reported, not
        // judged, as for the bit-exact comparisons.
        #expect(underruns >= 0, "no underrun count in the attachment object")
        if xruns == 0 { #expect(underruns <= 10, "\(underruns) underruns") }

        // The mode off: raw again (the same frames as the microphone), the worker gone; on: processed again.
        try #require(
            daemon.recctl("session", "set", "call", "--category", "playAndRecord", "--mic-usage", "calls").status == 0)
        #expect(try eventually(timeout: 3) { try attachment(voip)?["processing"] == .null })
        #expect(try eventually(timeout: 2) { threads(daemon, named: "attach voice") == 0 }, "the worker ended")
        #expect(
            try eventually(timeout: 3) {
                (try daemon.recctl("--json", "session", "show", "call").json?["actual"]?["inputLatency"]?.doubleValue
                    ?? 1) < (callLatency ?? 0) - 0.015
            },
            "inputLatency loses the processing's latency")
        awaitCaptured(voipPath, seconds: 0.3)
        let rawFrames = deinterleave(try readRawFloats(path: voipPath), channels: 2)
        let rawCount = min(rawFrames[0].count, rawFrames[1].count)
        let tail = max(0, rawCount - Self.rate / 10)..<rawCount
        let rawDiffers = tail.filter { $0 + hop < rawCount && rawFrames[0][$0] != rawFrames[1][$0 + hop] }.count
        #expect(
            rawDiffers == 0 || xruns > 0, "after the switch to raw \(rawDiffers) samples differ from the microphone")
        try #require(
            daemon.recctl(
                "session", "set", "call", "--category", "playAndRecord", "--mode", "voiceChat", "--mic-usage", "calls"
            ).status == 0)
        #expect(try eventually(timeout: 3) { try attachment(voip)?["processing"]?.stringValue == "voice" })
        #expect(try eventually(timeout: 2) { threads(daemon, named: "attach voice") == 1 }, "one worker again")
        let detached = JSONValue.object([
            ("v", 2), ("id", 2), ("op", .string("session.detach")), ("app", .string("call")), ("client", .string(voip)),
        ]).jsonText
        control.send(detached + "\n")
        #expect(control.readJSON()?["ok"] == true)
        #expect(
            try eventually(timeout: 2) { threads(daemon, named: "attach voice") == 0 }, "detached: the worker ended")
    }
}

// Streams follow the session's route. The real recd and recctl on the
// test's jackd; devices are recd-signal clients appearing and going (a USB device), or held
// while a scripted jack sense plugs and unplugs them (headphones in a socket).
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The frame index n (mod 65536) of a counter sample of channel c (recd-signal's counter, and
/// `testSample`): k = 7n + 1013c mod 65536, and 28087 is the inverse of 7 mod 65536.
func counterFrame(k: Int, channel c: Int) -> Int {
    ((28087 * (k - 1013 * c)) % 65536 + 65536) % 65536
}

/// The frame index of a captured float that is exactly a 16-bit counter sample; nil otherwise.
private func counterFrame(_ value: Float, channel c: Int) -> Int? {
    let k = Int((value * 32768).rounded()) + 32768
    let n = counterFrame(k: k, channel: c)
    return Float(testSample(n, c)) / 32768 == value ? n : nil
}

/// A stereo WAV of the counter (`testSample`), `seconds` long.
private func counterWAV(_ path: String, seconds: Int) throws {
    let frames = 48_000 * seconds
    try writeWAV(
        path: path, sampleRate: 48_000, channels: 2,
        samples: (0..<frames).flatMap { [testSample($0, 0), testSample($0, 1)] })
}

/// Seconds since midnight of an ISO 8601 time with microseconds (`...T23:17:01.123456Z`).
private func secondsOfDay(_ iso: String) -> Double? {
    guard let time = iso.split(separator: "T").last?.dropLast() else { return nil }
    let parts = time.split(separator: ":").compactMap { Double($0) }
    guard parts.count == 3 else { return nil }
    return parts[0] * 3600 + parts[1] * 60 + parts[2]
}

@Suite("streams follow the route end to end", .serialized)
struct RouteFollowEndToEndTests {
    /// One line for a failure's message: the session's route, recd's ports and its log's end.
    func routeFacts(_ daemon: Daemon, _ app: String) -> String {
        let route = (try? daemon.recctl("--json", "session", "show", app).json?["route"]?.jsonText) ?? "none"
        return "route \(route); \(daemon.portFacts())"
    }

    func inject(_ daemon: Daemon, _ control: String, plugged: Bool) throws {
        let client = try RawClient(path: daemon.socket)
        client.send(
            "{\"id\":1,\"op\":\"devices.inject\",\"events\":[{\"type\":\"jackSense\",\"card\":\"PCH\",\"control\":\"\(control)\",\"plugged\":\(plugged)}]}\n"
        )
        #expect(client.readJSON()?["ok"] == true)
    }

    func players(_ daemon: Daemon) throws -> [JSONValue] {
        try daemon.recctl("--json", "status").json?["players"]?.arrayValue ?? []
    }

    @Test(
        "USB headphones plugged while playing take the player (event, status, audio at their JACK port); unplugged, it pauses, as does one started after the plug; resumed, both play on the speaker"
    )
    func plugMovesUnplugPauses() throws {
        let speaker = uniqueName("spk")
        let phones = uniqueName("phones")
        let daemon = try Daemon(
            ports: """
                [port spk]
                type = builtInSpeaker
                direction = output
                jack = \(speaker):in_1, \(speaker):in_2

                [port phones]
                type = headphones
                direction = output
                jack = \(phones):in_1, \(phones):in_2

                """)
        let speakerRaw = daemon.directory + "/spk.raw"
        let phonesRaw = daemon.directory + "/phones.raw"
        let speakerSink = try SignalClient(["--name", speaker, "capture", "--ports", "in_1,in_2", "--out", speakerRaw])
        try #require(daemon.recctl("session", "set", "music", "--category", "playback").status == 0)
        // Not within 5 s on PipeWire under CI's load (stop 52): the message says what recd saw.
        #expect(
            try eventually(timeout: 15) {
                try daemon.recctl("--json", "session", "show", "music").json?["route"]?["outputs"] == ["spk"]
            }, "\(routeFacts(daemon, "music"))")
        let wav = daemon.directory + "/counter.wav"
        try counterWAV(wav, seconds: 20)
        let watcher = try daemon.watch("music")
        let play = try daemon.recctl("play", "music", wav)
        try #require(play.status == 0, "\(play.stderr)")
        #expect(try eventually { try players(daemon).first?["framesPlayed"]?.intValue ?? 0 > 24_000 })

        // Plug: the headphones' ports appear.
        let phonesSink = try SignalClient(["--name", phones, "capture", "--ports", "in_1,in_2", "--out", phonesRaw])
        let moved = try #require(
            watcher.waitFor { $0["event"] == "player" && $0["previousPort"] != nil }.first { $0["previousPort"] != nil }
        )
        #expect(
            moved["port"] == "phones" && moved["previousPort"] == "spk" && moved["reason"] == "newDeviceAvailable",
            "\(moved.jsonText)")
        #expect(moved["state"] == "playing" && moved["stream"] == "main")
        let moveReaction = try #require(moved["reactionFrames"]?.intValue)
        let period = try #require(moved["periodFrames"]?.intValue)
        print(
            "plug→move reaction: \(moveReaction) frames (period \(period); reactionUs \(moved["reactionUs"]?.intValue ?? -1))"
        )
        // The bound is judged below, on this measurement or a second one (a loaded machine can
        // hold recd's control thread past one period now and then).
        var moveReactions = [moveReaction]
        #expect(try players(daemon).first?["port"] == "phones", "status reports where the audio goes")

        // A player started after the plug plays on the headphones too.
        usleep(300_000)
        try #require(daemon.recctl("play", "music", wav, "--stream", "late").status == 0)
        #expect(try players(daemon).map { $0["port"] } == ["phones", "phones"])
        usleep(300_000)

        // Unplug: both pause, within one period of JACK's news.
        phonesSink.stop()
        let paused = watcher.waitFor(count: 2) { $0["event"] == "player" && $0["state"] == "paused" }
            .filter { $0["event"] == "player" && $0["state"] == "paused" }
        #expect(Set(paused.compactMap { $0["stream"]?.stringValue }) == ["main", "late"])
        #expect(paused.allSatisfy { $0["reason"] == "oldDeviceUnavailable" && $0["port"] == "phones" })
        let pauseReaction = try #require(paused.first?["reactionFrames"]?.intValue)
        print("unplug→pause reaction: \(pauseReaction) frames (period \(period))")
        var pauseReactions = [pauseReaction]
        #expect(try players(daemon).allSatisfy { $0["state"] == "paused" && $0["port"] == "phones" }, "no fall back")

        // Resume: on the speaker, the route's output now.
        let resumed = try daemon.recctl("--json", "play", "music")
        try #require(resumed.status == 0, "\(resumed.stderr)")
        #expect(try players(daemon).allSatisfy { $0["state"] == "playing" && $0["port"] == "spk" })
        usleep(300_000)
        if moveReaction >= period || pauseReaction >= period {
            // Once more: plugged, both move; unplugged, both pause. (The watcher keeps every
            // event since it started: count past the ones already seen.)
            let isMove = { (event: JSONValue) in
                event["event"] == "player" && event["port"] == "phones" && event["previousPort"] == "spk"
            }
            let isPause = { (event: JSONValue) in event["event"] == "player" && event["state"] == "paused" }
            let movesBefore = watcher.events.filter(isMove).count
            let pausesBefore = watcher.events.filter(isPause).count
            let again = try SignalClient(
                ["--name", phones, "capture", "--ports", "in_1,in_2", "--out", daemon.directory + "/phones2.raw"])
            let moves = watcher.waitFor(count: movesBefore + 1, isMove).filter(isMove)
            if moves.count > movesBefore, let frames = moves.last?["reactionFrames"]?.intValue {
                moveReactions.append(frames)
            }
            usleep(300_000)
            again.stop()
            let pauses = watcher.waitFor(count: pausesBefore + 1, isPause).filter(isPause)
            if pauses.count > pausesBefore, let frames = pauses.last?["reactionFrames"]?.intValue {
                pauseReactions.append(frames)
            }
            print("measured again: move \(moveReactions), pause \(pauseReactions) frames (period \(period))")
        }
        // The move makes its edges through the connection worker (recd's one writer of
        // connections), and each jack_connect is a server round trip JACK answers at a cycle: on
        // a quiet machine the move comes within the period (140–222 frames measured), on a fresh
        // machine running three passes side by side it took 1,848–1,889 frames (two channels, two
        // round trips). Three periods still tell an answer to JACK's news from the once-a-second
        // recheck.
        #expect(
            moveReactions.min()! < 3 * period,
            "moved \(moveReactions) frames after JACK announced the headphones; the period is \(period)")
        #expect(pauseReactions.min()! < period, "paused \(pauseReactions) frames after JACK's news; the period is \(period)")
        speakerSink.stop()

        // The audio really went where the events said: the counter left the speaker and
        // arrived, whole, at the headphones' JACK ports.
        let heardOnPhones = deinterleave(try readRawFloats(path: phonesRaw), channels: 2)[0]
        let heardOnSpeaker = deinterleave(try readRawFloats(path: speakerRaw), channels: 2)[0]
        let phonesFirst = try #require(heardOnPhones.firstIndex { $0 != 0 }, "nothing reached the headphones")
        // The first frame of a long run of whole counter frames (inside the crossfade a scaled
        // sample can look like another frame's by chance).
        func runLength(_ samples: [Float], from start: Int) -> Int {
            guard let n = counterFrame(samples[start], channel: 0) else { return 0 }
            var run = 1
            while start + run < samples.count, counterFrame(samples[start + run], channel: 0) == (n + run) % 65536 {
                run += 1
            }
            return run
        }
        let exact = try #require(
            heardOnPhones[phonesFirst...].indices.first { runLength(heardOnPhones, from: $0) >= 64 })
        let n0 = counterFrame(heardOnPhones[exact], channel: 0)!
        let run = runLength(heardOnPhones, from: exact)
        #expect(run >= 9_600, "the headphones heard \(run) consecutive frames of the file")
        // Where the speaker's part ended and the headphones' began, in file frames.
        let speakerStart = try #require(heardOnSpeaker.firstIndex { $0 != 0 })
        // The counter is 0 at one frame in 65536: silence is a run of zeros.
        let silenceAfter = try #require(
            (speakerStart..<(heardOnSpeaker.count - 64)).first { index in
                (index..<(index + 64)).allSatisfy { heardOnSpeaker[$0] == 0 }
            })
        let speakerExact = try #require(
            heardOnSpeaker[speakerStart...].indices.first { runLength(heardOnSpeaker, from: $0) >= 64 })
        let lastExactOnSpeaker = speakerExact + runLength(heardOnSpeaker, from: speakerExact) - 1
        let speakerEndFrame =
            counterFrame(heardOnSpeaker[lastExactOnSpeaker], channel: 0)! + (silenceAfter - 1 - lastExactOnSpeaker)
        let phonesStartFrame = n0 - (exact - phonesFirst)
        let gap = phonesStartFrame - speakerEndFrame - 1
        print(
            "plug→move at the devices: the headphones start \(gap) frames after the speaker's last (negative: overlap)")
        // The headphones are connected before the move is published: they hear the whole
        // crossfade, so the two overlap by the ramp (959 frames at 20 ms) and nothing is lost.
        // PipeWire's JACK answers jack_connect before its graph runs the new link (the link turns
        // active at a later quantum): there the fade-in's first frames, at most a period of
        // them, may reach no one (65 of 959 in one run of about thirty).
        let allowed = TestServer.isPipeWire ? period : 0
        #expect(
            gap <= allowed, "a gap of \(gap) frames between the speaker's last frame and the headphones' first")
    }

    @Test(
        "headphones plugged by jack sense take the player with no gap at all: speaker + headphones is the file at every frame"
    )
    func senseMoveIsGapless() throws {
        let device = uniqueName("card")
        let daemon = try Daemon(
            ports: """
                [port spk]
                type = builtInSpeaker
                direction = output
                jack = \(device):in_1, \(device):in_2

                [port phones]
                type = headphones
                direction = output
                jack = \(device):in_3, \(device):in_4
                sense = Headphone Jack

                """, environment: ["RECD_DEVICE_EVENTS": "scripted"])
        let raw = daemon.directory + "/card.raw"
        let card = try SignalClient(["--name", device, "capture", "--ports", "in_1,in_2,in_3,in_4", "--out", raw])
        try inject(daemon, "Headphone Jack", plugged: false)
        try #require(daemon.recctl("session", "set", "music", "--category", "playback").status == 0)
        #expect(
            try eventually {
                try daemon.recctl("--json", "session", "show", "music").json?["route"]?["outputs"] == ["spk"]
            }, "\(routeFacts(daemon, "music"))")
        let wav = daemon.directory + "/counter.wav"
        try counterWAV(wav, seconds: 10)
        let watcher = try daemon.watch("music")
        try #require(daemon.recctl("play", "music", wav).status == 0)
        usleep(500_000)
        try inject(daemon, "Headphone Jack", plugged: true)
        let moved = try #require(
            watcher.waitFor { $0["event"] == "player" && $0["previousPort"] != nil }.first { $0["previousPort"] != nil }
        )
        #expect(moved["port"] == "phones")
        print(
            "sense plug→move reaction: \(moved["reactionFrames"]?.intValue ?? -1) frames (period \(moved["periodFrames"]?.intValue ?? -1))"
        )
        usleep(500_000)
        try inject(daemon, "Headphone Jack", plugged: false)
        let paused = try #require(
            watcher.waitFor { $0["event"] == "player" && $0["state"] == "paused" }.last {
                $0["event"] == "player" && $0["state"] == "paused"
            })
        #expect(paused["reason"] == "oldDeviceUnavailable")
        print("sense unplug→pause reaction: \(paused["reactionFrames"]?.intValue ?? -1) frames")
        #expect(paused["reactionFrames"] != nil && moved["reactionFrames"] != nil)
        card.stop()

        let channels = deinterleave(try readRawFloats(path: raw), channels: 4)
        let first = try #require(channels[0].firstIndex { $0 != 0 })
        let n0 = try #require(counterFrame(channels[0][first], channel: 0))
        let phonesFirst = try #require(channels[2].firstIndex { $0 != 0 })
        let phonesLast = try #require(channels[2].lastIndex { $0 != 0 })
        // From the file's first frame until the pause ramp began on the headphones.
        var mismatches = 0
        for index in first..<(phonesLast - 48) {
            let expected = Float(testSample(n0 + index - first, 0)) / 32768
            if abs(channels[0][index] + channels[2][index] - expected) > 1e-5 { mismatches += 1 }
        }
        #expect(phonesFirst > first && phonesLast - phonesFirst > 12_000)
        #expect(mismatches == 0, "\(mismatches) frames where speaker + headphones is not the file")
    }

    @Test(
        "a recorder that follows the route goes on from a headset plugged in: END_REASON=routeChange, the next segment starts at the frame after, no stop"
    )
    func recorderFollowsTheInput() throws {
        let source = uniqueName("src")
        let daemon = try Daemon(
            ports: """
                [port mic]
                type = builtInMic
                direction = input
                jack = \(source):out_1, \(source):out_2

                [port headset]
                type = headsetMic
                direction = input
                jack = \(source):out_3, \(source):out_4
                sense = Headset Mic Jack

                """, environment: ["RECD_DEVICE_EVENTS": "scripted"])
        // One counter for all four ports: channel c of frame n is k = 7n + 1013c, so frames
        // from the mic (c = 0) and the headset (c = 2) tell their place in one timeline.
        let counter = try SignalClient([
            "--name", source, "play", "--ports", "out_1,out_2,out_3,out_4", "--signal", "counter",
        ])
        try inject(daemon, "Headset Mic Jack", plugged: false)
        try #require(
            daemon.recctl("session", "set", "logger", "--category", "record", "--mic-usage", "archive").status == 0)
        try #require(daemon.recctl("permission", "grant", "logger").status == 0)
        #expect(
            try eventually {
                try daemon.recctl("--json", "session", "show", "logger").json?["route"]?["inputs"] == ["mic"]
            })
        let watcher = try daemon.watch("logger")
        let start = try daemon.recctl("record", "start", "logger")
        try #require(start.status == 0, "\(start.stderr)")
        watcher.waitFor { $0["event"] == "recording" && $0["state"] == "segment" }
        usleep(700_000)
        try inject(daemon, "Headset Mic Jack", plugged: true)
        let switched = try #require(
            watcher.waitFor { $0["event"] == "recording" && $0["state"] == "switched" }.first {
                $0["state"] == "switched"
            })
        #expect(switched["port"] == "headset" && switched["previousPort"] == "mic" && switched["stream"] == "mic")
        let recorders = try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue ?? []
        #expect(recorders.map { $0["port"] } == ["headset"])
        usleep(700_000)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        let events = watcher.waitFor { $0["event"] == "recording" && $0["state"] == "stopped" }
        counter.stop()
        #expect(events.filter { $0["state"] == "stopped" }.count == 1, "the stream stopped once, at the end")

        let listed = try #require(daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue)
        try #require(listed.count == 2, "\(listed)")
        let (old, new) = (listed[0], listed[1])
        #expect(old["endReason"] == "routeChange" && new["endReason"] == "stop")
        #expect(old["stream"] == "mic" && new["stream"] == "mic")
        let oldPath = try #require(old["path"]?.stringValue)
        let newPath = try #require(new["path"]?.stringValue)
        #expect(try metaflacTag(oldPath, "END_REASON") == "routeChange")
        #expect(try metaflacTag(newPath, "INPUT_PORT").map { $0 == "headset" } ?? true)
        #expect(try flacTest(oldPath) && flacTest(newPath))
        // In time: START_TIME of the new one is the old one's plus its frames.
        let frames = try #require(old["frames"]?.intValue)
        let oldStart = try #require(old["start"]?.stringValue.flatMap(secondsOfDay))
        let newStart = try #require(new["start"]?.stringValue.flatMap(secondsOfDay))
        let drift = (newStart - (oldStart + Double(frames) / 48_000)) * 1e6
        print("recorder route switch: old segment \(frames) frames, new START_TIME - old end = \(drift) µs")
        #expect(abs(drift) <= 2, "the new segment starts \(drift) µs from the old one's end")
        // In samples: the mic's last frame and the headset's first are adjacent frames.
        let oldSamples = try decodeFLAC(oldPath, bits: 24)
        let newSamples = try decodeFLAC(newPath, bits: 24)
        let last = Int(oldSamples[oldSamples.count - 2] / 256) + 32768
        let next = Int(newSamples[0] / 256) + 32768
        let lastFrame = counterFrame(k: last, channel: 0)
        let nextFrame = counterFrame(k: next, channel: 2)
        #expect(
            nextFrame == (lastFrame + 1) % 65536,
            "mic ended at counter frame \(lastFrame), the headset began at \(nextFrame)")
        #expect(oldSamples.count / 2 == frames)
    }
}

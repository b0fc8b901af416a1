// Monitoring end to end: meters, multiRoute/dualRoute, main/cue monitoring, through recctl.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("monitoring and meters end to end", .serialized)
struct MonitoringEndToEndTests {
    @Test("a -6 dBFS sine reads -6.0 ± 0.1 dB peak on recctl meter --once --json")
    func meterReadsSine() throws {
        let deck = uniqueName("deck")
        let daemon = try Daemon(ports: """
            [port mic]
            type = builtInMic
            direction = input
            jack = \(deck):out_1, \(deck):out_2

            """)
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:997", "--level", "-6"])
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true })
        usleep(300_000)
        let reading = try daemon.recctl("--json", "meter", "--once")
        try #require(reading.status == 0, "\(reading.stderr)")
        let meters = try #require(reading.json?["meters"]?.arrayValue)
        #expect(meters.map { $0["name"] } == ["mic_1", "mic_2"])
        for meter in meters {
            let peak = try #require(meter["peakDB"]?.doubleValue)
            let rms = try #require(meter["rmsDB"]?.doubleValue)
            #expect(abs(peak - -6) <= 0.1, "peak \(peak)")
            #expect(abs(rms - (-6 - 3.01)) <= 0.1, "rms \(rms)")
        }
        let human = try daemon.recctl("meter", "--once")
        #expect(human.stdout.contains("mic_1") && human.stdout.contains("peak   -6.0 dB"))
        source.stop()
        usleep(300_000)
        let silent = try #require(daemon.recctl("--json", "meter", "--once").json?["meters"]?.arrayValue)
        #expect(silent.allSatisfy { $0["peakDB"] == -120 }, "silence reads the -120 dB floor")
    }
}

@Suite("dualRoute end to end", .serialized)
struct DualRouteEndToEndTests {
    @Test("a dualRoute session records its built-in mic and its HFP secondary to two valid FLAC files; non-duplex refused")
    func recordsBothInputs() throws {
        let deck = uniqueName("deck")
        let daemon = try Daemon(ports: """
            [port mic]
            type = builtInMic
            direction = input
            jack = \(deck):out_1

            [port speaker]
            type = builtInSpeaker
            direction = output
            jack = system:playback_1

            [port headset]
            type = bluetoothHFP
            direction = duplex
            codec = cvsd
            jack_in = \(deck):out_2
            jack_out = system:playback_2

            [port line]
            type = lineIn
            direction = input
            jack = system:capture_1

            """)
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:440", "--level", "-12"])
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.allSatisfy { $0["available"] == true } == true })
        let set = try daemon.recctl("session", "set", "booth", "--category", "multiRoute", "--mode", "dualRoute", "--options", "allowBluetoothHFP", "--mic-usage", "talkback")
        try #require(set.status == 0, "\(set.stderr)")
        try #require(daemon.recctl("permission", "grant", "booth").status == 0)
        let session = try #require(daemon.recctl("--json", "session", "show", "booth").json)
        #expect(session["route"]?["inputs"] == ["mic", "headset"])
        #expect(session["route"]?["outputs"] == ["speaker", "headset"])
        let refused = try daemon.recctl("record", "start", "booth", "--input", "line")
        #expect(refused.status == 1 && refused.stderr.hasPrefix("error: resourceNotAvailable (561145203)") && refused.stderr.contains("duplex"), "\(refused.stderr)")
        try #require(daemon.recctl("record", "start", "booth", "--input", "mic").status == 0)
        try #require(daemon.recctl("record", "start", "booth", "--input", "headset").status == 0)
        usleep(2_000_000)
        try #require(daemon.recctl("record", "stop", "booth").status == 0)
        source.stop()
        let files = archiveFiles(daemon.directory + "/archive")
        #expect(files.count == 2, "\(files)")
        for file in files {
            #expect(try flacTest(file), "\(file)")
            let info = try runTool("metaflac", ["--show-sample-rate", "--show-bps", file]).stdout.split(separator: "\n")
            if file.contains("-headset-") {
                #expect(info == ["8000", "16"], "the HFP secondary records at cvsd bandwidth")
            } else {
                #expect(info == ["48000", "24"])
            }
        }
    }
}

@Suite("multiRoute end to end", .serialized)
struct MultiRouteEndToEndTests {
    @Test("multiRoute plays streams to distinct outputs by channel assignment; a lost output pauses only its stream")
    func assignments() throws {
        let pa = uniqueName("pa")
        let phones = uniqueName("phones")
        let daemon = try Daemon(ports: """
            [port pa]
            type = lineOut
            direction = output
            jack = \(pa):in_1, \(pa):in_2, \(pa):in_3, \(pa):in_4

            [port phones]
            type = headphones
            direction = output
            jack = \(phones):in_1, \(phones):in_2

            """)
        let paCapture = daemon.directory + "/pa.raw"
        let paSink = try SignalClient(["--name", pa, "capture", "--ports", "in_1,in_2,in_3,in_4", "--out", paCapture, "--seconds", "3"])
        let phonesDevice = try SignalClient(["--name", phones, "ports", "--ports", "in_1,in_2"])
        try #require(daemon.recctl("session", "set", "dj", "--category", "multiRoute").status == 0)
        #expect(try eventually { try daemon.recctl("--json", "session", "show", "dj").json?["route"]?["outputs"] == ["pa", "phones"] })
        let wav = daemon.directory + "/dc.wav"
        try writeWAV(path: wav, sampleRate: 48_000, channels: 2, samples: (0..<(48_000 * 10)).flatMap { _ in [Int16(8192), Int16(16384)] })
        // The main stream on PA channels 3 and 4, the cue stream on the headphones.
        let main = try daemon.recctl("play", "dj", wav, "--stream", "main", "--to", "pa:3,4")
        try #require(main.status == 0, "\(main.stderr)")
        try #require(daemon.recctl("play", "dj", wav, "--stream", "cue", "--to", "phones").status == 0)
        let bad = try daemon.recctl("play", "dj", wav, "--stream", "x", "--to", "pa:5")
        #expect(bad.status == 1 && bad.stderr.contains("resourceNotAvailable"))
        let watcher = try daemon.watch("dj")
        phonesDevice.stop()
        let events = watcher.waitFor { $0["event"] == "player" && $0["state"] == "paused" }
        let paused = events.filter { $0["event"] == "player" && $0["state"] == "paused" }
        #expect(paused.map { $0["stream"] } == ["cue"], "only the stream assigned to the lost output pauses: \(paused)")
        #expect(events.contains { $0["event"] == "routeChange" && $0["reason"] == "oldDeviceUnavailable" })
        #expect(paSink.waitForExit(timeout: 20))
        let channels = deinterleave(try readRawFloats(path: paCapture), channels: 4)
        let tail = channels.map { Array($0.suffix(4800)) }  // the last 100 ms, after the phones left
        #expect(tail[0].allSatisfy { $0 == 0 } && tail[1].allSatisfy { $0 == 0 }, "PA channels 1-2 carry nothing")
        #expect(tail[2].allSatisfy { $0 == 0.25 } && tail[3].allSatisfy { $0 == 0.5 }, "PA channels 3-4 carry the main stream")
    }
}

@Suite("DJ booth end to end (config/dj-booth.conf)", .serialized)
struct DJBoothEndToEndTests {
    /// The example config with its JACK ports pointed at test clients: decks that play known
    /// constants, and sinks that capture what recd sends to the PA and the headphones.
    static func boothConfig(decks: String, pa: String, phones: String) throws -> String {
        var text = try String(contentsOfFile: repositoryRoot + "/config/dj-booth.conf", encoding: .utf8)
        for (from, to) in [
            ("system:playback_1, system:playback_2", "\(pa):in_1, \(pa):in_2"),
            ("system:playback_3, system:playback_4", "\(phones):in_1, \(phones):in_2"),
            ("system:capture_1, system:capture_2", "\(decks)A:out_1, \(decks)A:out_2"),
            ("system:capture_3, system:capture_4", "\(decks)B:out_1, \(decks)B:out_2"),
        ] { text = text.replacingOccurrences(of: from, with: to) }
        // The harness writes [daemon], [jack] and [archive] dir itself.
        let dropped = ["[daemon]", "admin_group", "[jack]", "server =", "client_name", "[archive]", "dir ="]
        return text.split(separator: "\n", omittingEmptySubsequences: false).filter { line in
            !dropped.contains { line.hasPrefix($0) }
        }.joined(separator: "\n")
    }

    @Test("deck A on main, deck B on cue: main carries only A, cue only B; cue mix blends; split cue; the main bus recorded")
    func mainAndCue() throws {
        let decks = uniqueName("deck")
        let pa = uniqueName("pa")
        let phones = uniqueName("phones")
        let daemon = try Daemon(ports: try Self.boothConfig(decks: decks, pa: pa, phones: phones))
        // Constant levels per deck (a 0.01 Hz square keeps its sign for 50 s): every sample
        // says which deck it came from, whatever the two decks' start times.
        let deckA = try SignalClient(["--name", decks + "A", "play", "--ports", "out_1,out_2", "--signal", "square:0.01", "--level", "-12"])
        let deckB = try SignalClient(["--name", decks + "B", "play", "--ports", "out_1,out_2", "--signal", "square:0.01", "--level", "-6"])
        _ = (deckA, deckB)
        let paRaw = daemon.directory + "/pa.raw"
        let phonesRaw = daemon.directory + "/phones.raw"
        let paSink = try SignalClient(["--name", pa, "capture", "--ports", "in_1,in_2", "--out", paRaw])
        let phonesSink = try SignalClient(["--name", phones, "capture", "--ports", "in_1,in_2", "--out", phonesRaw])
        #expect(try eventually { try daemon.recctl("--json", "session", "show", "dj").json?["route"]?["outputs"] == ["pa", "phones"] })
        let steps: [[String]] = [
            ["cue", "dj", "outputs", "--main", "pa", "--cue", "phones"],
            ["cue", "dj", "assign", "deckA", "--bus", "main"],
            ["cue", "dj", "assign", "deckB", "--bus", "cue"],
        ]
        for step in steps {
            let result = try daemon.recctl(arguments: step)
            try #require(result.status == 0, "\(step): \(result.stderr)")
        }
        usleep(300_000)
        let meters = try #require(daemon.recctl("--json", "meter", "--once", "dj").json?["meters"]?.arrayValue)
        #expect(meters.contains { $0["name"] == "deckA_1" && abs(($0["peakDB"]?.doubleValue ?? 0) - -12) < 0.1 })
        // Read what reached the outputs in the last 100 ms of each setting.
        func lastFrames(_ path: String) throws -> [[Float]] {
            awaitCaptured(path, seconds: 0.4)
            return deinterleave(try readRawFloats(path: path), channels: 2).map { Array($0.suffix(4800)) }
        }
        let a = Float(pow(10, -12.0 / 20)), b = Float(pow(10, -6.0 / 20))
        func near(_ x: Float, _ y: Float) -> Bool { abs(abs(x) - abs(y)) < 1e-5 }
        var main = try lastFrames(paRaw)
        var cue = try lastFrames(phonesRaw)
        #expect(main[0].allSatisfy { near($0, a) } && main[1].allSatisfy { near($0, a) }, "main carries only deck A")
        #expect(cue[0].allSatisfy { near($0, b) } && cue[1].allSatisfy { near($0, b) }, "cue carries only deck B")

        try #require(daemon.recctl("cue", "dj", "mix", "0.5").status == 0)
        cue = try lastFrames(phonesRaw)
        // Both decks are positive for the whole test: 0.5·B + 0.5·A.
        #expect(cue[0].allSatisfy { near($0, 0.5 * b + 0.5 * a) }, "cue mix 0.5 blends main into cue: \(cue[0].prefix(2))")

        try #require(daemon.recctl("cue", "dj", "mix", "0").status == 0)
        try #require(daemon.recctl("cue", "dj", "split", "on").status == 0)
        cue = try lastFrames(phonesRaw)
        #expect(cue[0].allSatisfy { near($0, b) }, "split: left is the cue summed to mono")
        #expect(cue[1].allSatisfy { near($0, a) }, "split: right is the main summed to mono")
        main = try lastFrames(paRaw)
        #expect(main[0].allSatisfy { near($0, a) }, "split changes only the headphones")

        // What the room heard, recorded.
        try #require(daemon.recctl("record", "start", "dj", "--bus", "main").status == 0)
        usleep(1_200_000)
        try #require(daemon.recctl("record", "stop", "dj").status == 0)
        let file = try #require(archiveFiles(daemon.directory + "/archive").first)
        #expect(try flacTest(file))
        #expect(file.contains("dj-main-"))
        let recorded = try decodeFLAC(file, bits: 24)
        let expected = Int32((a * 8_388_608).rounded())
        #expect(recorded.dropFirst(4800).prefix(24_000).allSatisfy { abs(abs($0) - expected) <= 1 }, "the main bus recording carries deck A")
        paSink.stop()
        phonesSink.stop()
    }
}

// Session descriptions end to end, real recd on a real jackd: what a session reports of other
// sessions' audio (isOtherAudioPlaying, the secondary audio hint and its events), of its ports
// (routeDescription, availableInputs, maximum channels), and preferred channel counts that
// really limit what is recorded and played.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("session description end to end", .serialized)
struct SessionDescriptionEndToEndTests {
    func show(_ daemon: Daemon, _ app: String) throws -> JSONValue {
        try #require(daemon.recctl("--json", "session", "show", app).json)
    }

    /// JSON text as recd's lines read back (parsed, so key order does not matter).
    func json(_ text: String) throws -> JSONValue { try JSONValue.parse(text) }

    /// A recd recording a recd-signal counter deck (2 channels) as `logger` (record, granted).
    func counterLogger() throws -> (Daemon, SignalClient) {
        let deck = uniqueName("deck")
        let daemon = try Daemon(ports: ArchiveEndToEndTests.deckPorts(deck))
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "counter"])
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true })
        try #require(daemon.recctl("session", "set", "logger", "--category", "record", "--mic-usage", "archive").status == 0)
        try #require(daemon.recctl("permission", "grant", "logger").status == 0)
        return (daemon, source)
    }

    /// A recd whose one output `out` (2 channels) a recd-signal captures for `seconds` into
    /// the returned raw file; session `app` is playback.
    func lineOutCapture(seconds: Int) throws -> (Daemon, SignalClient, String) {
        let sink = uniqueName("sink")
        let daemon = try Daemon(ports: """
            [port out]
            type = lineOut
            direction = output
            jack = \(sink):in_1, \(sink):in_2

            """)
        let raw = daemon.directory + "/captured.raw"
        let capture = try SignalClient(["--name", sink, "capture", "--ports", "in_1,in_2", "--out", raw, "--seconds", "\(seconds)"])
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true })
        try #require(daemon.recctl("session", "set", "app", "--category", "playback").status == 0)
        return (daemon, capture, raw)
    }

    /// Ten seconds of a mono constant (a mono file goes to every channel of a port by default).
    func monoFile(_ daemon: Daemon) throws -> String {
        let wav = daemon.directory + "/mono.wav"
        try writeWAV(path: wav, sampleRate: 48_000, channels: 1, samples: [Int16](repeating: 8192, count: 48_000 * 10))
        return wav
    }

    func hintEvents(_ watcher: Watcher) -> [JSONValue] {
        watcher.events.filter { $0["event"] == "silenceSecondaryAudioHint" }
    }

    @Test("a session playing primary audio: others see isOtherAudioPlaying and the hint; the mixable one gets begin and end")
    func otherAudioAndTheHint() throws {
        let daemon = try Daemon()
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.allSatisfy { $0["available"] == true } == true })
        try #require(daemon.recctl("session", "set", "music", "--category", "playback").status == 0)
        try #require(daemon.recctl("session", "set", "game", "--category", "ambient").status == 0)
        try #require(daemon.recctl("session", "activate", "game").status == 0)
        let wav = daemon.directory + "/long.wav"
        try writeWAV(path: wav, sampleRate: 48_000, channels: 1, samples: [Int16](repeating: 1000, count: 48_000 * 20))
        #expect(try show(daemon, "game")["isOtherAudioPlaying"] == false)
        #expect(try show(daemon, "game")["secondaryAudioShouldBeSilencedHint"] == false)
        let watcher = try daemon.watch()

        try #require(daemon.recctl("play", "music", wav).status == 0)
        let began = watcher.waitFor { $0["event"] == "silenceSecondaryAudioHint" }
        #expect(hintEvents(watcher) == [try json(#"{"event":"silenceSecondaryAudioHint","app":"game","type":"begin"}"#)], "\(began)")
        let game = try show(daemon, "game")
        #expect(game["isOtherAudioPlaying"] == true && game["secondaryAudioShouldBeSilencedHint"] == true)
        #expect(try daemon.recctl("session", "show", "game").stdout.contains("other audio: playing (primary audio: silence secondary audio)"))
        let music = try show(daemon, "music")
        #expect(music["isOtherAudioPlaying"] == false, "its own player is not other audio")
        #expect(music["secondaryAudioShouldBeSilencedHint"] == false)

        // A paused player is not playing: the hint ends.
        try #require(daemon.recctl("pause", "music").status == 0)
        watcher.waitFor(count: 2) { $0["event"] == "silenceSecondaryAudioHint" }
        #expect(hintEvents(watcher).last?["type"] == "end" && hintEvents(watcher).last?["app"] == "game")
        #expect(try show(daemon, "game")["isOtherAudioPlaying"] == false)

        // Mixable audio playing is other audio, but no reason to silence anything.
        try #require(daemon.recctl("play", "game", wav).status == 0)
        #expect(try show(daemon, "music")["isOtherAudioPlaying"] == true)
        #expect(try show(daemon, "music")["secondaryAudioShouldBeSilencedHint"] == false)

        // Resumed, then interrupted by another primary session: begin, then end with the pause.
        try #require(daemon.recctl("play", "music").status == 0)
        watcher.waitFor(count: 3) { $0["event"] == "silenceSecondaryAudioHint" }
        try #require(daemon.recctl("session", "set", "radio", "--category", "playback").status == 0)
        try #require(daemon.recctl("session", "activate", "radio").status == 0)
        watcher.waitFor(count: 4) { $0["event"] == "silenceSecondaryAudioHint" }
        #expect(hintEvents(watcher).map { $0["type"]?.stringValue ?? "" } == ["begin", "end", "begin", "end"])
        #expect(try show(daemon, "game")["secondaryAudioShouldBeSilencedHint"] == false)
    }

    @Test("session show and routeChange events describe the route's ports (name, type, channels); availableInputs and maximum channels")
    func routeDescriptions() throws {
        let daemon = try Daemon(ports: """
            [port mic]
            type = builtInMic
            direction = input
            jack = system:capture_1, system:capture_2

            [port speaker]
            type = builtInSpeaker
            direction = output
            jack = system:playback_1

            [port phones]
            type = headphones
            direction = output
            jack = system:playback_1, system:playback_2
            sense = Headphone Jack

            """, environment: ["RECD_DEVICE_EVENTS": "scripted"])
        try #require(daemon.recctl("session", "set", "talk", "--category", "playAndRecord", "--mic-usage", "test").status == 0)
        try #require(daemon.recctl("session", "set", "music", "--category", "playback").status == 0)
        #expect(try eventually { try show(daemon, "talk")["route"]?["outputs"] == ["phones"] })
        let talk = try show(daemon, "talk")
        #expect(
            try talk["routeDescription"]
                == json(#"{"inputs":[{"name":"mic","type":"builtInMic","channels":2}],"#
                + #""outputs":[{"name":"phones","type":"headphones","channels":2}]}"#))
        #expect(try talk["availableInputs"] == json(#"[{"name":"mic","type":"builtInMic","channels":2}]"#))
        #expect(talk["maximumInputChannels"] == 2 && talk["maximumOutputChannels"] == 2)
        let music = try show(daemon, "music")
        #expect(music["availableInputs"] == [] && music["maximumInputChannels"] == 0)
        #expect(music["routeDescription"]?["inputs"] == [])

        let watcher = try daemon.watch("talk")
        let client = try RawClient(path: daemon.socket)
        client.send(#"{"id":1,"op":"devices.inject","events":[{"type":"jackSense","card":"PCH","control":"Headphone Jack","plugged":false}]}"# + "\n")
        #expect(client.readJSON()?["ok"] == true)
        let events = watcher.waitFor { $0["event"] == "routeChange" }
        let change = try #require(events.first { $0["event"] == "routeChange" })
        #expect(change["reason"] == "oldDeviceUnavailable")
        #expect(change["previousRoute"]?["outputs"] == ["phones"] && change["route"]?["outputs"] == ["speaker"])
        #expect(
            try change["previousRouteDescription"]?["outputs"]
                == json(#"[{"name":"phones","type":"headphones","channels":2}]"#))
        #expect(
            try change["routeDescription"]
                == json(#"{"inputs":[{"name":"mic","type":"builtInMic","channels":2}],"#
                + #""outputs":[{"name":"speaker","type":"builtInSpeaker","channels":1}]}"#))
        #expect(try show(daemon, "talk")["maximumOutputChannels"] == 1)
    }

    @Test("--input-channels 1 on a 2-channel input records a 1-channel FLAC of its first channel; actual says 1")
    func preferredInputChannels() throws {
        let (daemon, source) = try counterLogger()
        #expect(try show(daemon, "logger")["actual"]?["inputChannels"] == 2)
        try #require(daemon.recctl("session", "prefer", "logger", "--input-channels", "1").status == 0)
        let logger = try show(daemon, "logger")
        #expect(logger["actual"]?["inputChannels"] == 1 && logger["maximumInputChannels"] == 2)
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        usleep(1_000_000)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        source.stop()
        let file = try #require(archiveFiles(daemon.directory + "/archive").first { $0.hasSuffix(".flac") })
        #expect(try flacTest(file))
        #expect(try runTool("metaflac", ["--show-channels", file]).stdout == "1\n")
        #expect(try daemon.recctl("--json", "archive", "list").json?.arrayValue?.first?["channels"] == 1)
        // The first channel, sample for sample.
        let samples = try decodeFLAC(file, bits: 24)
        try #require(samples.count > 48_000 / 2)
        let n0 = try #require((0..<65536).first { counterK($0, 0) == Int(samples[0] / 256 + 32768) })
        let bad = samples.indices.filter { samples[$0] != Int32((counterK(n0 + $0, 0) - 32768) * 256) }
        #expect(bad.isEmpty, "samples differ from the source's first channel at \(bad.prefix(3))")
    }

    @Test("--output-channels 1 on a 2-channel output plays the file to the first channel only; actual says 1")
    func preferredOutputChannels() throws {
        let (daemon, capture, raw) = try lineOutCapture(seconds: 2)
        try #require(daemon.recctl("session", "prefer", "app", "--output-channels", "1").status == 0)
        let app = try show(daemon, "app")
        #expect(app["actual"]?["outputChannels"] == 1 && app["maximumOutputChannels"] == 2)
        // A mono file would go to every channel of the port without the preference.
        let wav = try monoFile(daemon)
        try #require(daemon.recctl("play", "app", wav).status == 0)
        #expect(try daemon.recctl("--json", "status").json?["players"]?.arrayValue?.first?["channels"] == 1)
        #expect(capture.waitForExit(timeout: 20))
        let channels = deinterleave(try readRawFloats(path: raw), channels: 2)
        #expect(channels[0].contains { $0 > 0.2 }, "the first channel carries the file")
        #expect(channels[1].allSatisfy { $0 == 0 }, "the second channel stays silent")
    }

    @Test("--input-channels changed while recording: the stream goes on in a new segment with the new count, continuous to the frame")
    func inputChannelsChangeWhileRecording() throws {
        let (daemon, source) = try counterLogger()
        defer { source.stop() }
        let watcher = try daemon.watch("logger")
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        usleep(700_000)
        try #require(daemon.recctl("session", "prefer", "logger", "--input-channels", "1").status == 0)
        let switched = watcher.waitFor { $0["event"] == "recording" && $0["state"] == "switched" }
        #expect(switched.contains { $0["state"] == "switched" && $0["reason"] == "routeChange" })
        #expect(try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue?.first?["stream"] != nil)
        usleep(700_000)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        let files = archiveFiles(daemon.directory + "/archive").filter { $0.hasSuffix(".flac") }
        try #require(files.count == 2, "two segments: \(files)")
        #expect(try files.allSatisfy(flacTest))
        #expect(try runTool("metaflac", ["--show-channels", files[0]]).stdout == "2\n")
        #expect(try runTool("metaflac", ["--show-channels", files[1]]).stdout == "1\n")
        #expect(try runTool("metaflac", ["--show-tag=END_REASON", files[0]]).stdout == "END_REASON=routeChange\n")
        // Continuous: the second segment's first frame is the frame after the first's last.
        let first = try decodeFLAC(files[0], bits: 24)
        let second = try decodeFLAC(files[1], bits: 24)
        try #require(first.count >= 2 * 48_000 / 4 && second.count >= 48_000 / 4)
        let n0 = try #require((0..<65536).first { counterK($0, 0) == Int(first[0] / 256 + 32768) })
        let firstFrames = first.count / 2
        let next = counterK(n0 + firstFrames, 0)
        #expect(Int(second[0] / 256 + 32768) == next, "the new segment does not start at the frame after the old one's last")
        let bad = second.indices.filter { second[$0] != Int32((counterK(n0 + firstFrames + $0, 0) - 32768) * 256) }
        #expect(bad.isEmpty, "the 1-channel segment is not the source's first channel at \(bad.prefix(3))")
    }

    @Test("--output-channels changed while playing: from the next period the player uses the port's first channel only, no gap on it")
    func outputChannelsChangeWhilePlaying() throws {
        let (daemon, capture, raw) = try lineOutCapture(seconds: 3)
        let wav = try monoFile(daemon)
        try #require(daemon.recctl("play", "app", wav).status == 0)
        usleep(1_000_000)
        try #require(daemon.recctl("session", "prefer", "app", "--output-channels", "1").status == 0)
        #expect(try show(daemon, "app")["actual"]?["outputChannels"] == 1)
        #expect(capture.waitForExit(timeout: 20))
        let channels = deinterleave(try readRawFloats(path: raw), channels: 2)
        let start = try #require(channels[0].firstIndex { $0 > 0.2 }, "the file never reached the first channel")
        #expect(channels[0][start...].allSatisfy { $0 > 0.2 }, "the first channel has a gap")
        #expect(channels[1][start..<(start + 24_000)].allSatisfy { $0 > 0.2 }, "before the change the mono file plays on both")
        #expect(channels[1].suffix(24_000).allSatisfy { $0 == 0 }, "after the change the second channel is silent")
    }
}

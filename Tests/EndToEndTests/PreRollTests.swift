// Pre-roll and level-triggered takes end to end, through the real recd
// and recctl, recd-signal's counter and level steps as sources, the archive's FLAC read back
// with the reference tools.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("pre-roll and level-triggered takes end to end", .serialized)
struct PreRollEndToEndTests {
    static let rate = 48_000.0

    static func startTime(_ file: String) throws -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return try metaflacTag(file, "START_TIME").flatMap(formatter.date(from:))
    }

    /// Frames of an interleaved stereo 24-bit counter decode that do not continue the first.
    static func counterBreaks(_ samples: [Int32]) -> Int {
        let frames = samples.count / 2
        guard frames > 0 else { return 0 }
        let n0 = (0..<65536).first { counterK($0, 0) == Int(samples[0] / 256 + 32768) }!
        return (0..<frames).filter { f in
            (0..<2).contains { c in samples[f * 2 + c] != Int32((counterK(n0 + f, c) - 32768) * 256) }
        }.count
    }

    @Test("a session's pre_roll_seconds = 2: record start's segment begins 2 s before the command (START_TIME, the frames, PRE_ROLL_SECONDS) and the counter runs unbroken from the kept seconds into the live ones")
    func preRoll() throws {
        let deck = uniqueName("deck")
        let daemon = try Daemon(
            extraConfig: """

                [session logger]
                category = record
                mic_usage = archive
                pre_roll_seconds = 2

                """, ports: ArchiveEndToEndTests.deckPorts(deck))
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "counter"])
        defer { source.stop() }
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true })
        try #require(daemon.recctl("permission", "grant", "logger").status == 0)
        usleep(3_000_000)  // the pre-roll fills
        let asked = Date()
        let start = try daemon.recctl("record", "start", "logger")
        try #require(start.status == 0, "\(start.stderr)")
        let answered = Date()
        usleep(1_000_000)
        let stopAsked = Date()
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        let stopAnswered = Date()
        #expect(try eventually { archiveFiles(daemon.directory + "/archive").contains { $0.hasSuffix(".flac") } })
        let file = try #require(archiveFiles(daemon.directory + "/archive").first)
        #expect(try flacTest(file))
        #expect(try metaflacTag(file, "PRE_ROLL_SECONDS") == "2.000")
        let started = try #require(try Self.startTime(file))
        let period = 1024 / Self.rate
        #expect(
            started > asked.addingTimeInterval(-2 - period - 0.05) && started < answered.addingTimeInterval(-2 + 0.1),
            "START_TIME \(started) for a request at \(asked), answered at \(answered), with 2 s of pre-roll")
        let samples = try decodeFLAC(file, bits: 24)
        let seconds = Double(samples.count / 2) / Self.rate
        let least = stopAsked.timeIntervalSince(answered) + 2 - 0.1
        let most = stopAnswered.timeIntervalSince(asked) + 2 + period + 0.1
        #expect(seconds > least && seconds < most, "\(seconds) s recorded: want 2 s of pre-roll plus about 1 s")
        #expect(Self.counterBreaks(samples) == 0)
        #expect(!daemon.log.contains("JACK's clock"), "\(daemon.log)")
    }

    /// recd's JACK client name in a harness daemon's config.
    static func recdClient(_ daemon: Daemon) throws -> String {
        let config = try String(contentsOfFile: daemon.configPath, encoding: .utf8)
        let line = try #require(config.split(separator: "\n").first { $0.hasPrefix("client_name = ") })
        return String(line.dropFirst("client_name = ".count))
    }

    @Test("record start --trigger -40 --hold 1 arms; a burst starts a take whose file holds 1 s of pre-roll before the first loud frame and 1 s after the last (± one period); it ends, arms again, and a second burst is a second take")
    func triggeredTakes() throws {
        let deck = uniqueName("deck")
        let daemon = try Daemon(
            extraConfig: """

                [session taker]
                category = record
                mic_usage = takes
                pre_roll_seconds = 1

                """, ports: ArchiveEndToEndTests.deckPorts(deck))
        let quiet = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "silence"])
        defer { quiet.stop() }
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true })
        try #require(daemon.recctl("permission", "grant", "taker").status == 0)
        let watcher = try daemon.watch("taker")
        let armed = try daemon.recctl("--json", "record", "start", "taker", "--trigger", "-40", "--hold", "1")
        try #require(armed.status == 0, "\(armed.stderr)")
        #expect(armed.json?["triggerDB"] == -40 && armed.json?["holdSeconds"] == 1)
        #expect(watcher.waitFor { $0["event"] == "recording" && $0["state"] == "armed" }.contains { $0["state"] == "armed" })
        let client = try Self.recdClient(daemon)
        for take in 1...2 {
            usleep(1_500_000)  // the pre-roll fills; nothing starts while it is quiet
            let burst = try SignalClient([
                "--name", uniqueName("burst"), "play", "--ports", "out_1", "--signal", "sine:1000", "--level", "-12",
                "--seconds", "0.5", "--connect", "\(client):mic_1",
            ])
            #expect(burst.waitForExit(timeout: 5))
            func isFinished(_ event: JSONValue) -> Bool { event["event"] == "recording" && event["state"] == "finished" }
            let finished = watcher.waitFor(count: take, timeout: 6, isFinished).filter(isFinished)
            try #require(finished.count == take, "take \(take) did not finish")
            #expect(finished.last?["reason"] == "triggerHold")
        }
        let stop = try daemon.recctl("--json", "record", "stop", "taker")
        #expect(stop.status == 0 && stop.json?["disarmed"] == true, "\(stop.stdout) \(stop.stderr)")
        let files = archiveFiles(daemon.directory + "/archive")
        try #require(files.count == 2, "two takes, two files: \(files)")
        let period = 1024
        for file in files {
            #expect(try flacTest(file))
            #expect(try metaflacTag(file, "SEGMENT") == "1")
            #expect(try metaflacTag(file, "END_REASON") == "triggerHold")
            let samples = try decodeFLAC(file, bits: 24)
            let frames = samples.count / 2
            let threshold = Int32(0.01 * 8_388_608)
            let loud = (0..<frames).filter { f in abs(samples[f * 2]) >= threshold || abs(samples[f * 2 + 1]) >= threshold }
            let first = try #require(loud.first, "\(file) has no loud frame")
            let last = loud.last!
            #expect(abs(first - 48_000) <= period, "\(file): \(first) frames of pre-roll before the crossing, want 48000")
            #expect(abs(frames - 1 - last - 48_000) <= period, "\(file): \(frames - 1 - last) frames after the last loud one, want 48000 (hold 1 s)")
            #expect(last - first > 20_000 && last - first < 24_100, "the burst is 0.5 s: \(last - first) frames")
        }
    }

    @Test("an unattended session (record = mic, trigger_db = -40, trigger_hold_seconds = 0.5) is armed at start; a burst makes one take that ends 0.5 s after it, with its pre-roll")
    func unattendedTrigger() throws {
        let deck = uniqueName("deck")
        let quiet = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "silence"])
        defer { quiet.stop() }
        let daemon = try Daemon(
            extraConfig: """

                [session unattended]
                category = record
                mic_usage = takes
                permission = granted
                record = mic
                pre_roll_seconds = 1
                trigger_db = -40
                trigger_hold_seconds = 0.5

                """, ports: ArchiveEndToEndTests.deckPorts(deck))
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true })
        usleep(2_000_000)
        #expect(archiveFiles(daemon.directory + "/archive").isEmpty, "nothing is recorded while it is quiet")
        let burst = try SignalClient([
            "--name", uniqueName("burst"), "play", "--ports", "out_1", "--signal", "sine:1000", "--level", "-12",
            "--seconds", "0.3", "--connect", "\(try Self.recdClient(daemon)):mic_2",
        ])
        #expect(burst.waitForExit(timeout: 5))
        #expect(try eventually(timeout: 5) { archiveFiles(daemon.directory + "/archive").contains { $0.hasSuffix(".flac") } })
        let file = try #require(archiveFiles(daemon.directory + "/archive").first)
        #expect(try metaflacTag(file, "END_REASON") == "triggerHold")
        let samples = try decodeFLAC(file, bits: 24)
        let frames = samples.count / 2
        let threshold = Int32(0.01 * 8_388_608)
        let loud = (0..<frames).filter { abs(samples[$0 * 2 + 1]) >= threshold }
        let first = try #require(loud.first)
        #expect(abs(first - 48_000) <= 1024, "\(first) frames of pre-roll, want 48000")
        #expect(abs(frames - 1 - loud.last! - 24_000) <= 1024, "\(frames - 1 - loud.last!) frames after, want 24000")
    }
}


// One user's players against another user's logger, end to end: `nobody` plays 16 files of
// 384 kHz and 64 channels (two sessions of 8, inside every count limit) while root's logger
// records recd-signal's counter. The real recd and recctl, jackd (real-time, as an appliance
// runs it), files made by sox and owned by nobody, recctl run as nobody.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("players cannot take a recording's CPU or JACK cycle", .serialized)
struct PlayerLoadTests {
    static let period = 1024
    /// `[daemon] player_load_per_user`'s default (docs/man/recd.conf.5.scd).
    static let defaultBudget = 32_000_000
    /// One file's load: 384 kHz × 64 channels read, 48 kHz × 2 channels (the `mic`/`out`
    /// config's stereo output) mixed.
    static let fileLoad = 384_000 * 64 + 48_000 * 2

    static func cycle(_ daemon: Daemon) throws -> (xruns: Int, overlong: Int) {
        let jack = try daemon.recctl("--json", "status").json?["jack"]
        return (jack?["xruns"]?.intValue ?? 0, jack?["cycle"]?["overlong"]?.intValue ?? 0)
    }

    @Test(
        "nobody starts 16 plays of 384 kHz, 64-channel files at once (2 sessions × 8) beside root's logger: the player budget admits what fits and refuses the rest with resourceNotAvailable naming player_load_per_user; the logger's segment has no gap and its counter runs on, with no more xruns or overlong cycles than while idle. With the budget raised by root to admit all 16, the feeders (nicer than the archiver, mapping channels before converting the rate) still leave the logger whole",
        .timeLimit(.minutes(2)), arguments: [nil, 2_000_000_000])
    func highRateFilesBesideALogger(raisedBudget: Int?) throws {
        try #require(getuid() == 0, "this test plays as user nobody and needs root")
        let jack =
            TestServer.isPipeWire
            ? nil : try PrivateJack(period: Self.period, name: "recd-test-players", realtime: true)
        defer { jack?.stop() }
        let (daemon, source, _) = try ReliabilityTests.counterLogger(
            on: jack,
            extraConfig: """

                [port out]
                type = lineOut
                direction = output
                jack = system:playback_1, system:playback_2

                """)
        defer { source.stop() }
        if let raisedBudget {
            let config = try String(contentsOfFile: daemon.configPath, encoding: .utf8)
            try config.replacingOccurrences(
                of: "[daemon]\n", with: "[daemon]\nplayer_load_per_user = \(raisedBudget)\n"
            ).write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
            try daemon.restart()
            #expect(
                try eventually {
                    try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
                })
        }
        let budget = raisedBudget ?? Self.defaultBudget
        daemon.openSocketToEveryone()

        // Sixteen names of one 4 s file (hard links), nobody's.
        let nobody = try userIDs("nobody")
        let files = (0..<16).map { daemon.directory + "/load-\($0).wav" }
        let sox = try runTool(
            "sox", ["-n", "-r", "384000", "-c", "64", "-b", "16", files[0], "synth", "4", "sine", "440", "vol", "0.1"])
        try #require(sox.status == 0, "sox: \(sox.stderr)")
        try #require(chown(files[0], nobody.uid, nobody.gid) == 0)
        for file in files.dropFirst() { try #require(link(files[0], file) == 0) }
        for app in ["a", "b"] {
            let set = try daemon.recctl(
                "session", "set", app, "--category", "playback", "--options", "mixWithOthers", user: "nobody")
            try #require(set.status == 0, "\(set.stderr)")
        }

        try #require(daemon.recctl("record", "start", "logger").status == 0)
        // The machine's own xruns: a 2 s idle stretch of the recording before the load.
        usleep(500_000)
        let idleStart = try Self.cycle(daemon)
        usleep(2_000_000)
        let idleEnd = try Self.cycle(daemon)

        let results = Locked<[Int: CommandResult]>([:])
        let group = DispatchGroup()
        for index in files.indices {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let result = try? daemon.recctl(
                    "play", index < 8 ? "a" : "b", files[index], "--stream", "s\(index)", user: "nobody")
                results.withLock { $0[index] = result }
            }
        }
        #expect(group.wait(timeout: .now() + 30) == .success, "the plays did not finish")
        let all = results.withLock { $0 }
        let admitted = all.filter { $0.value.status == 0 }
        let refused = all.filter { $0.value.status != 0 }
        #expect(admitted.count == min(16, budget / Self.fileLoad), "admitted: \(admitted.keys.sorted())")
        #expect(admitted.count + refused.count == 16)
        for (index, result) in refused {
            let words = [
                "resourceNotAvailable", "uid \(nobody.uid)", "[daemon] player_load_per_user",
                "384 kHz × 64 channels", "`recctl stop APP --stream NAME`",
            ]
            #expect(words.allSatisfy { result.stderr.contains($0) }, "play \(index): \(result.stderr)")
        }
        // The admitted files play out (4 s).
        #expect(
            try eventually(timeout: 20) { try daemon.recctl("--json", "status").json?["players"]?.arrayValue == [] },
            "the players finish")
        let loadEnd = try Self.cycle(daemon)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        #expect(
            try eventually(timeout: 10) {
                archiveFiles(daemon.directory + "/archive").contains { $0.hasSuffix(".flac") }
            })
        let segments = finishedSegments(daemon.directory + "/archive")
        let file = try #require(segments.longest)

        // The load's xruns and overlong cycles against the idle stretch's, for twice as long.
        let idleXruns = idleEnd.xruns - idleStart.xruns
        let loadXruns = loadEnd.xruns - idleEnd.xruns
        let cause = idleXruns > 0 ? " (JACK reported \(idleXruns) while idle too: the machine's)" : ""
        #expect(loadXruns <= 2 * idleXruns, "xruns under the players: \(loadXruns)\(cause)")
        #expect(
            loadEnd.overlong - idleEnd.overlong <= 2 * (idleEnd.overlong - idleStart.overlong),
            "recd's cycles longer than the period under the players: \(loadEnd.overlong - idleEnd.overlong)")
        let gaps = try segments.all.flatMap {
            try metaflacTag($0, "GAPS").flatMap { TrueTimeEndToEndTests.parseGaps($0) } ?? []
        }
        #expect(gaps.count <= loadXruns + idleXruns, "the logger's gaps: \(gaps.prefix(10))\(cause)")
        try ReliabilityTests.expectIntactCounter(
            file, period: Self.period, xruns: loadXruns + idleXruns, context: "under nobody's players")
    }
}

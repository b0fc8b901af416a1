// Faults heal end to end: the real recd with a declared logger (`[session logger] record =
// mic`, no auto_resume) on a real jackd. A full disk (a small tmpfs) stops it cleanly and it
// records again by itself once space is freed; an input whose JACK client goes away and comes
// back is recorded again by itself; so is it after a JACK server loss. A recorder started by
// `record start` comes back after a full disk too, and `record stop` ends its wait. Each way: a
// `recording` event, a log line, and `status` saying why and since when. Every file passes
// `flac -t`.
import ControlProtocol
import Foundation
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("faults heal: recorders come back by themselves", .serialized)
struct RecoveryTests {
    /// The broadcast logger, declared in the config; no auto_resume: faults heal regardless.
    static let logger = """

        [session logger]
        category = record
        mic_usage = archive
        record = mic
        permission = granted

        """

    static func status(_ daemon: Daemon) throws -> JSONValue {
        try #require(daemon.recctl("--json", "status").json)
    }

    static func isRecording(_ daemon: Daemon) throws -> Bool {
        try status(daemon)["recorders"]?.arrayValue?.count == 1
    }

    static func recording(_ state: String) -> (JSONValue) -> Bool {
        { $0["event"] == "recording" && $0["state"] == .string(state) }
    }

    @Test("a full disk stops the declared logger cleanly; once space is freed it records again within 10 s, with events, log lines and status each way; every file passes flac -t")
    func diskFullHeals() throws {
        try #require(getuid() == 0, "mounting a tmpfs needs root")
        let small = try mountTmpfs(size: "8m", prefix: "recd-heal-tmpfs")
        defer { unmountTmpfs(small) }
        let deck = uniqueName("deck")
        // Pink noise at full scale compresses badly: the space left fills in seconds.
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "pink", "--level", "0"])
        defer { source.stop() }
        let daemon = try Daemon(extraConfig: Self.logger, ports: ArchiveEndToEndTests.deckPorts(deck), archiveDirectory: small)
        let watcher = try daemon.watch("logger")
        #expect(try eventually(timeout: 10) { try Self.isRecording(daemon) }, "the declared logger records from start-up: \(daemon.log)")
        // Leave about 1.5 MiB: the filler (over 4 MiB) is what the operator deletes later.
        let filler = small + "/filler"
        let fillerBytes = Int(FileSystem.space(at: small)?.availableBytes ?? 0) - 1_500_000
        try #require(fillerBytes > 4 << 20)
        try Data(count: fillerBytes).write(to: URL(fileURLWithPath: filler))

        let full = watcher.waitFor(timeout: 40, Self.recording("stopped"))
        let stopped = try #require(full.first(where: Self.recording("stopped")), "no stop: \(daemon.log.suffix(2000))")
        #expect(stopped["reason"] == "diskFull", "\(stopped.jsonText)")
        #expect(stopped["resumesWhen"]?.stringValue?.contains("are free in \(small)") == true, "\(stopped.jsonText)")
        #expect(daemon.log.contains("logger/mic: waits for disk space; records again when"), "\(daemon.log.suffix(2000))")
        let waiting = try #require(try Self.status(daemon)["waiting"]?.arrayValue?.first, "status says why it is not recording")
        #expect(waiting["app"] == "logger" && waiting["stream"] == "mic" && waiting["reason"] == "diskFull")
        #expect(waiting["declared"] == true && waiting["since"]?.stringValue?.hasSuffix("Z") == true)
        let lowWater = try #require(waiting["resumeFreeBytes"]?.doubleValue)
        // Half the 8 MiB (the 16 MiB floor, bounded by half the file system), less than the filler frees.
        #expect(lowWater == 4 * 1_048_576, "\(waiting.jsonText)")
        let text = try daemon.recctl("status").stdout
        #expect(text.contains("logger/mic: waiting (diskFull since ") && text.contains("resumes when 4.0 MiB are free"), "\(text)")
        // Still full: it waits (the space it would need is not there).
        usleep(2_500_000)
        #expect(try !Self.isRecording(daemon), "it must not start again into a full disk")

        try FileManager.default.removeItem(atPath: filler)
        let freed = Date()
        let back = watcher.waitFor(timeout: 10, Self.recording("resumed"))
        let resumed = try #require(back.first(where: Self.recording("resumed")), "not resumed: \(daemon.log.suffix(2000))")
        #expect(Date().timeIntervalSince(freed) < 10)
        #expect(resumed["reason"] == "diskFull" && resumed["stream"] == "mic" && resumed["since"] == waiting["since"], "\(resumed.jsonText)")
        #expect(try Self.isRecording(daemon))
        #expect(try Self.status(daemon)["waiting"]?.arrayValue?.isEmpty == true)
        #expect(daemon.log.contains("logger/mic: records again (stopped by diskFull at"), "\(daemon.log.suffix(2000))")
        #expect(try !daemon.recctl("status").stdout.contains("not recording:"))
        usleep(1_500_000)

        // Stopped by request, a declared recorder says so (and is not started again by itself).
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        let held = try #require(try Self.status(daemon)["waiting"]?.arrayValue?.first)
        #expect(held["reason"] == "stop" && held["resumesWhen"] == .null)
        #expect(try daemon.recctl("status").stdout.contains("logger/mic: stopped (stop since "))
        usleep(1_200_000)
        #expect(try !Self.isRecording(daemon))

        let files = archiveFiles(small).filter { $0.hasSuffix(".flac") }
        #expect(files.count >= 2, "a segment before the full disk and one after: \(archiveFiles(small))")
        for file in files { #expect(try flacTest(file), "flac -t \(file)") }
        #expect(try files.first.map { try metaflacTag($0, "END_REASON") } == "diskFull")
        #expect(try files.last.map { try metaflacTag($0, "END_REASON") } == "stop")
        // The archive says why the stream has a hole, and from when.
        #expect(try files.last.map { try metaflacTag($0, "RESUMED_AFTER") } == "diskFull")
        #expect(try files.last.map { try metaflacTag($0, "STOPPED_AT") } == waiting["since"]?.stringValue)
        #expect(try files.first.flatMap { try metaflacTag($0, "RESUMED_AFTER") } == nil)
        #expect(daemon.process?.isRunning == true)
    }

    @Test("the declared logger's input goes away and comes back (its JACK client restarts): it stops, says why, and records again by itself")
    func vanishedInputHeals() throws {
        let deck = uniqueName("deck")
        let arguments = ["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:1000", "--level", "-12"]
        var source = try SignalClient(arguments)
        defer { source.stop() }
        let daemon = try Daemon(extraConfig: Self.logger, ports: ArchiveEndToEndTests.deckPorts(deck))
        let watcher = try daemon.watch("logger")
        // recctl watch as a person reads it.
        let reader = try ChildProgram(
            daemon.recctlPath, ["--socket", daemon.socket, "watch", "logger"], environment: nil, prefix: "recctl-watch")
        #expect(try eventually(timeout: 10) { try Self.isRecording(daemon) }, "\(daemon.log)")
        usleep(1_000_000)

        source.stop()
        let gone = watcher.waitFor(timeout: 10, Self.recording("stopped"))
        let stopped = try #require(gone.first(where: Self.recording("stopped")), "\(daemon.log.suffix(2000))")
        #expect(stopped["reason"] == "routeChange" && stopped["resumesWhen"] == "input mic is available again", "\(stopped.jsonText)")
        #expect(daemon.log.contains("logger/mic: input mic went away; records again when input mic is available again"))
        let waiting = try #require(try Self.status(daemon)["waiting"]?.arrayValue?.first)
        #expect(waiting["reason"] == "inputGone" && waiting["port"] == "mic", "\(waiting.jsonText)")
        #expect(try daemon.recctl("status").stdout.contains("logger/mic: waiting (inputGone since "))
        usleep(1_000_000)
        #expect(try !Self.isRecording(daemon))

        source = try SignalClient(arguments)
        let back = watcher.waitFor(timeout: 10, Self.recording("resumed"))
        let resumed = try #require(back.first(where: Self.recording("resumed")), "\(daemon.log.suffix(2000))")
        #expect(resumed["reason"] == "inputGone" && resumed["port"] == "mic")
        #expect(try Self.isRecording(daemon) && Self.status(daemon)["waiting"]?.arrayValue?.isEmpty == true)
        #expect(daemon.log.contains("logger/mic: records again (stopped by inputGone at"))
        #expect(reader.waitFor { $0.hasPrefix("logger: recording mic resumed (inputGone); it had stopped at 20") }, "\(reader.output)")
        #expect(reader.lines.contains("logger: recording mic stopped (routeChange); resumes when input mic is available again"), "\(reader.output)")
        usleep(1_500_000)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        // The stopped segment's rename from .partial: the files, not a guess at how long it takes.
        let finished = { archiveFiles(daemon.directory + "/archive").allSatisfy { $0.hasSuffix(".flac") } }
        eventually(timeout: 10) { archiveFiles(daemon.directory + "/archive").count == 2 && finished() }

        let files = archiveFiles(daemon.directory + "/archive")
        #expect(files.count == 2 && files.allSatisfy { $0.hasSuffix(".flac") }, "\(files)")
        for file in files { #expect(try flacTest(file), "flac -t \(file)") }
        #expect(try files.first.map { try metaflacTag($0, "END_REASON") } == "routeChange")
        #expect(try files.last.map { try metaflacTag($0, "END_REASON") } == "stop")
    }

    @Test("jackd killed and started again: the declared logger without auto_resume waits (status: mediaServicesLost) and records again by itself, even when its input comes back after the server")
    func serverLossHeals() throws {
        let jack = try PrivateJack(name: "recd-test-recovery")
        let deck = uniqueName("deck")
        let arguments = ["--server", jack.name, "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:1000", "--level", "-12"]
        var source = try SignalClient(arguments)
        defer { source.stop() }
        let daemon = try Daemon(extraConfig: Self.logger, ports: ArchiveEndToEndTests.deckPorts(deck), jackServer: jack.name)
        let watcher = try daemon.watch("logger")
        #expect(try eventually(timeout: 10) { try Self.isRecording(daemon) }, "\(daemon.log)")
        usleep(1_000_000)

        jack.kill9()
        let lost = watcher.waitFor(timeout: 10, Self.recording("stopped"))
        let stopped = try #require(lost.first(where: Self.recording("stopped")), "\(daemon.log.suffix(2000))")
        #expect(stopped["reason"] == "mediaServicesLost" && stopped["resumesWhen"] == "the JACK server is back", "\(stopped.jsonText)")
        let waiting = try #require(try Self.status(daemon)["waiting"]?.arrayValue?.first)
        #expect(waiting["reason"] == "mediaServicesLost" && waiting["declared"] == true, "\(waiting.jsonText)")
        #expect(source.waitForExit(timeout: 10), "the deck goes with its server")

        // The server first, the deck a second later: at the reset the input is still missing.
        try jack.start()
        #expect(!watcher.waitFor(timeout: 10) { $0["event"] == "mediaServicesWereReset" }.filter { $0["event"] == "mediaServicesWereReset" }.isEmpty)
        usleep(1_000_000)
        #expect(try !Self.isRecording(daemon))
        let missing = try #require(try Self.status(daemon)["waiting"]?.arrayValue?.first)
        #expect(missing["reason"] == "inputGone" && missing["since"] == waiting["since"], "\(missing.jsonText)")
        source = try SignalClient(arguments)
        let back = watcher.waitFor(timeout: 10, Self.recording("resumed"))
        let resumed = try #require(back.first(where: Self.recording("resumed")), "\(daemon.log.suffix(3000))")
        #expect(resumed["reason"] == "inputGone" && resumed["since"] == waiting["since"], "\(resumed.jsonText)")
        #expect(try Self.isRecording(daemon))
        usleep(1_000_000)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        let finished = { archiveFiles(daemon.directory + "/archive").allSatisfy { $0.hasSuffix(".flac") } }
        eventually(timeout: 10) { archiveFiles(daemon.directory + "/archive").count == 2 && finished() }
        let files = archiveFiles(daemon.directory + "/archive")
        #expect(files.count == 2 && files.allSatisfy { $0.hasSuffix(".flac") }, "\(files)")
        for file in files { #expect(try flacTest(file), "flac -t \(file)") }
        #expect(try files.first.map { try metaflacTag($0, "END_REASON") } == "mediaServicesLost")
    }

    @Test("a recorder started by record start comes back after a full disk too (its session stays active); record stop while it waits ends the wait")
    func startedRecorderHealsAndStopEndsTheWait() throws {
        try #require(getuid() == 0, "mounting a tmpfs needs root")
        let small = try mountTmpfs(size: "8m", prefix: "recd-heal-tmpfs")
        defer { unmountTmpfs(small) }
        let deck = uniqueName("deck")
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "pink", "--level", "0"])
        defer { source.stop() }
        let daemon = try Daemon(ports: ArchiveEndToEndTests.deckPorts(deck), archiveDirectory: small)
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true })
        try #require(daemon.recctl("session", "set", "desk", "--category", "record", "--mic-usage", "archive").status == 0)
        try #require(daemon.recctl("permission", "grant", "desk").status == 0)
        let watcher = try daemon.watch("desk")
        try #require(daemon.recctl("record", "start", "desk", "--input", "mic").status == 0)
        let filler = small + "/filler"
        func fill() throws {
            let bytes = Int(FileSystem.space(at: small)?.availableBytes ?? 0) - 1_000_000
            try #require(bytes > 4 << 20, "room for a filler over the 4 MiB low-water mark: \(bytes)")
            // recd writes to the same file system between the reading above and this write:
            // running out of space first leaves the disk full all the same (the write is not
            // atomic: what it wrote stays), which is what the test wants.
            do {
                try Data(count: bytes).write(to: URL(fileURLWithPath: filler))
            } catch let error as CocoaError where error.code == .fileWriteOutOfSpace {}
        }
        try fill()
        let full = watcher.waitFor(timeout: 40, Self.recording("stopped"))
        #expect(full.first(where: Self.recording("stopped"))?["reason"] == "diskFull", "\(daemon.log.suffix(2000))")
        let waiting = try #require(try Self.status(daemon)["waiting"]?.arrayValue?.first)
        #expect(waiting["app"] == "desk" && waiting["reason"] == "diskFull" && waiting["declared"] == false, "\(waiting.jsonText)")

        try FileManager.default.removeItem(atPath: filler)
        let back = watcher.waitFor(timeout: 10, Self.recording("resumed"))
        #expect(back.first(where: Self.recording("resumed"))?["reason"] == "diskFull", "\(daemon.log.suffix(2000))")
        #expect(try Self.isRecording(daemon))

        // Full again, then `record stop` while it waits: the wait ends; freed space starts nothing.
        try fill()
        #expect(watcher.waitFor(count: 2, timeout: 40, Self.recording("stopped")).filter(Self.recording("stopped")).count == 2)
        #expect(try Self.status(daemon)["waiting"]?.arrayValue?.count == 1)
        let stop = try daemon.recctl("--json", "record", "stop", "desk")
        #expect(stop.status == 0 && (stop.json == [] || stop.json?["recorders"] == []), "\(stop.stdout) \(stop.stderr)")
        #expect(try Self.status(daemon)["waiting"]?.arrayValue?.isEmpty == true)
        #expect(daemon.log.contains("desk: mic no longer waits to record again"))
        try FileManager.default.removeItem(atPath: filler)
        usleep(2_500_000)
        #expect(try !Self.isRecording(daemon), "a stopped wait does not start again")
        #expect(watcher.events.filter(Self.recording("resumed")).count == 1)

        let files = archiveFiles(small).filter { $0.hasSuffix(".flac") }
        #expect(files.count >= 2, "\(archiveFiles(small))")
        for file in files { #expect(try flacTest(file), "flac -t \(file)") }
    }
}

// Replication end to end: the real recd records 1 s segments of a tone (recd-signal) and
// copies each finished one with the real rclone: to a local directory, and to rclone's own
// sftp server (`rclone serve sftp` on a free loopback port, user and password, the password
// obscured in an rclone config file) that is killed in the middle of a copy and started again.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A free TCP port on 127.0.0.1: bound to port 0, read back, released.
private func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw DaemonFailure(message: "socket: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
            bind(fd, sa, length) == 0 && getsockname(fd, sa, &length) == 0
        }
    }
    guard bound else { throw DaemonFailure(message: "bind 127.0.0.1:0: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// `rclone serve sftp` over a temporary directory, on a free loopback port, with a user and
/// password; `rcloneConfig` describes it as the remote `box`.
private final class SftpRemote: @unchecked Sendable {
    let directory: String
    var served: String { directory + "/served" }
    var rcloneConfig: String { directory + "/rclone.conf" }
    var logPath: String { directory + "/serve.log" }
    let port: Int
    private let password = "pw-\(UUID().uuidString.prefix(8))"
    private(set) var process: Process?

    /// `hashes: false` tells rclone's sftp client the server cannot hash (as a host without a
    /// shell): recd then reads each copy back to check it.
    init(hashes: Bool = true) throws {
        directory = try makeTemporaryDirectory("recd-sftp")
        try FileManager.default.createDirectory(atPath: directory + "/served", withIntermediateDirectories: false)
        port = try freeLoopbackPort()
        let obscured = try runTool("rclone", ["obscure", password])
        try #require(obscured.status == 0, "rclone obscure: \(obscured.stderr)")
        let config = """
            [box]
            type = sftp
            host = 127.0.0.1
            port = \(port)
            user = recd
            pass = \(obscured.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            \(hashes ? "" : "disable_hashcheck = true")

            """
        try config.write(toFile: rcloneConfig, atomically: true, encoding: .utf8)
        try start()
    }

    func start() throws {
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        let process = try ExternalTools.process(
            "rclone", ["serve", "sftp", served, "--addr", "127.0.0.1:\(port)", "--user", "recd", "--pass", password])
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try log.close()
        self.process = process
        let listening = eventually(timeout: 15) {
            ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").contains("listening on")
        }
        try #require(
            listening,
            "rclone serve sftp did not start: \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
    }

    /// SIGKILL: the remote is gone at once, connections cut.
    func kill9() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit {
        kill9()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Files under `root` (relative paths) ending in `suffix`.
private func files(under root: String, suffix: String) -> [String] {
    guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
    return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(suffix) }.sorted()
}

@Suite("replication with rclone end to end", .serialized)
struct ReplicationEndToEndTests {
    /// How long copies may take to land. The replicator runs 15 nice steps below recd, rclone
    /// with it: copies yield to recording, and on a machine as busy as the test command's (five
    /// passes side by side) each of a copy's seven rclone runs waits seconds for the CPU (1-2 s
    /// each, for 50 ms of CPU: a segment took 10-25 s where it takes 0.5 s on a quiet machine).
    /// What the tests check is that the copies land, not how soon.
    static let copyTimeout = 120.0

    static func replicateSection(_ remote: String, extra: String = "") -> String {
        "[replicate]\nremote = \(remote)\nretry_min_seconds = 0.2\nretry_max_seconds = 1\n"
            + "timeout_seconds = 20\n\(extra)"
    }

    static func replication(_ daemon: Daemon) throws -> JSONValue? {
        try daemon.recctl("--json", "status").json?["replication"]
    }

    static func backlog(_ daemon: Daemon) -> Int? {
        (try? replication(daemon))??["backlog"]?.intValue
    }

    /// Every finished segment of the archive is on the remote under its own relative path,
    /// with the same bytes; nothing else named `.flac` is there, and no `.partial` is left.
    static func expectSameSegments(archive: String, remote: String) {
        let local = files(under: archive, suffix: ".flac")
        #expect(!local.isEmpty)
        #expect(files(under: remote, suffix: ".flac") == local, "the remote holds exactly the archive's segments")
        for name in local {
            let original = FileManager.default.contents(atPath: archive + "/" + name)
            let copy = FileManager.default.contents(atPath: remote + "/" + name)
            #expect(copy != nil && copy == original, "\(name): the copy differs from the segment")
        }
        #expect(
            files(under: remote, suffix: ".partial").isEmpty,
            "left on the remote: \(files(under: remote, suffix: ".partial"))")
    }

    @Test("--check-config names the remote, warns when rclone is missing, and refuses a bad remote at its line")
    func checkConfig() throws {
        let recd = productsDirectory.appendingPathComponent("recd").path
        let directory = try makeTemporaryDirectory("recd-conf")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let good = directory + "/good.conf"
        try "[replicate]\nremote = box:recd\nrclone_config = /etc/recd/rclone.conf\n"
            .write(toFile: good, atomically: true, encoding: .utf8)
        let ok = try runProgram(recd, ["--check-config", good])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(
            ok.stdout.contains(
                "replicate: finished segments to box:recd with /usr/bin/rclone (config /etc/recd/rclone.conf)"),
            "\(ok.stdout)")
        #expect(!ok.stdout.contains("warning"), "rclone is installed: \(ok.stdout)")
        let missing = directory + "/missing.conf"
        try "[replicate]\nremote = /srv/copies\nrclone = \(directory)/no-rclone\n"
            .write(toFile: missing, atomically: true, encoding: .utf8)
        let warned = try runProgram(recd, ["--check-config", missing])
        #expect(warned.status == 0 && warned.stdout.contains("warning: \(directory)/no-rclone is not an executable"))
        let bad = directory + "/bad.conf"
        try "[daemon]\n\n[replicate]\nremote = backup\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = try runProgram(recd, ["--check-config", bad])
        #expect(refused.status == 1 && refused.stderr.contains("\(bad):4:"), "\(refused.stderr)")
        #expect(refused.stderr.contains("is not an rclone remote; write NAME:PATH"), "\(refused.stderr)")
    }

    @Test("a local-path remote gets every finished segment, byte for byte; the backlog drains to 0; status says so")
    func localRemote() throws {
        let remote = try makeTemporaryDirectory("recd-remote")
        defer { try? FileManager.default.removeItem(atPath: remote) }
        let deck = uniqueName("deck")
        let daemon = try Daemon(
            extraConfig: Self.replicateSection(remote + "/copies"), ports: ArchiveEndToEndTests.deckPorts(deck),
            archiveSegmentSeconds: 1)
        let (source, watcher) = try startLoggerRecording(daemon, deck: deck)
        watcher.waitFor(count: 3, timeout: 10) { $0["event"] == "recording" && $0["state"] == "finished" }
        // While recording: the archive lists the segment being written, and
        // only finished ones are copied, never a `.partial`. The third `finished` is a rotation:
        // the next segment opens when the archiver next writes (a moment later on a loaded machine).
        var listed: [JSONValue] = []
        #expect(
            try eventually(timeout: 5) {
                listed = try daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue ?? []
                return listed.contains { $0["state"]?.stringValue == "open" }
            }, "\(listed)")
        // The segment being written is not copied. (A finished one may be on its way, under its
        // name + `.partial` on the remote, while the next copy runs: that is not this.) Checked
        // while it is still open; the recording then stops, so that a machine too busy for the
        // copies (they yield to recording) has a few segments to copy, not one more a second.
        let archive = daemon.directory + "/archive/"
        for open in listed where open["state"]?.stringValue == "open" {
            let path = try #require(open["path"]?.stringValue)
            let relative = path.hasPrefix(archive) ? String(path.dropFirst(archive.count)) : path
            #expect(!FileManager.default.fileExists(atPath: remote + "/copies/" + relative), "\(relative) was copied")
        }
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        source.stop()
        #expect(eventually(timeout: Self.copyTimeout) { !files(under: remote + "/copies", suffix: ".flac").isEmpty })
        #expect(
            eventually(timeout: Self.copyTimeout) { Self.backlog(daemon) == 0 },
            "backlog \(Self.backlog(daemon) ?? -1); log ends: \(daemon.logEnd())\n\(daemon.log)")
        #expect(files(under: remote + "/copies", suffix: ".partial").isEmpty)
        let status = try #require(try Self.replication(daemon))
        #expect(status["remote"] == .string(remote + "/copies"))
        #expect(status["lastSuccess"]?.doubleValue.map { abs($0 - Date().timeIntervalSince1970) < 60 } == true)
        #expect(status["lastError"]?.isNull == true)
        Self.expectSameSegments(archive: daemon.directory + "/archive", remote: remote + "/copies")
        // The copy carries its chains and signatures: it proves on its own with the box's key.
        let key = daemon.directory + "/archive/archive-key.pub"
        let replica = try daemon.recctl("archive", "prove", "--dir", remote + "/copies", "--key", key)
        #expect(replica.status == 0 && replica.stdout.hasPrefix("holds: "), "\(replica.stdout)\(replica.stderr)")
        let human = try daemon.recctl("status").stdout
        #expect(human.contains("replicate: \(remote)/copies, 0 segments waiting, last copy"), "\(human)")
    }

    @Test("sftp to a server that cannot hash: each copy is read back and compared; identical bytes arrive")
    func sftpWithoutHashes() throws {
        let sftp = try SftpRemote(hashes: false)
        let deck = uniqueName("deck")
        let daemon = try Daemon(
            extraConfig: Self.replicateSection("box:recd", extra: "rclone_config = \(sftp.rcloneConfig)\n"),
            ports: ArchiveEndToEndTests.deckPorts(deck), archiveSegmentSeconds: 1)
        let (source, watcher) = try startLoggerRecording(daemon, deck: deck)
        watcher.waitFor(count: 2, timeout: 10) { $0["event"] == "recording" && $0["state"] == "finished" }
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        source.stop()
        #expect(
            eventually(timeout: Self.copyTimeout) { Self.backlog(daemon) == 0 },
            "backlog \(Self.backlog(daemon) ?? -1); log ends: \(daemon.logEnd())\n\(daemon.log)")
        #expect(try Self.replication(daemon)?["lastError"]?.isNull == true)
        Self.expectSameSegments(archive: daemon.directory + "/archive", remote: sftp.served + "/recd")
    }

    @Test("retention (free-space floor 100%) spares every segment not yet copied, and deletes them once copied")
    func retentionWaitsForCopies() throws {
        let remote = try makeTemporaryDirectory("recd-remote")
        defer { try? FileManager.default.removeItem(atPath: remote) }
        // A regular file where the remote's directory should be: every copy fails until it goes.
        let blocker = remote + "/copies"
        try "not a directory".write(toFile: blocker, atomically: true, encoding: .utf8)
        let deck = uniqueName("deck")
        let daemon = try Daemon(
            extraConfig: Self.replicateSection(blocker + "/box"), ports: ArchiveEndToEndTests.deckPorts(deck),
            archiveSegmentSeconds: 1)
        let (source, watcher) = try startLoggerRecording(daemon, deck: deck)
        watcher.waitFor(count: 2, timeout: 10) { $0["event"] == "recording" && $0["state"] == "finished" }
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        source.stop()
        let archive = daemon.directory + "/archive"
        let recorded = files(under: archive, suffix: ".flac")
        try #require(recorded.count >= 2)
        // The last segments join the queue once chained (the prover's worker, nice as the
        // replicator's): wait for the count.
        #expect(
            eventually(timeout: Self.copyTimeout) { Self.backlog(daemon) == recorded.count },
            "backlog \(Self.backlog(daemon) ?? -1), want \(recorded.count)")
        // Retention runs at the first tick after a start: now with a floor no disk can meet.
        let config = try String(contentsOfFile: daemon.configPath, encoding: .utf8)
        try config.replacingOccurrences(of: "[archive]\n", with: "[archive]\nmin_free_percent = 100\n")
            .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        try daemon.restart()
        usleep(1_500_000)
        #expect(files(under: archive, suffix: ".flac") == recorded, "retention deleted uncopied segments")
        #expect(!daemon.log.contains("retention deleted"))
        // The remote comes right: the copies land, and the next retention run deletes them.
        try FileManager.default.removeItem(atPath: blocker)
        let drainStarted = Date()
        #expect(
            eventually(timeout: Self.copyTimeout) { Self.backlog(daemon) == 0 },
            "backlog \(Self.backlog(daemon) ?? -1) of \(recorded.count); log ends: \(daemon.logEnd())\n\(daemon.log)")
        print("retention: \(recorded.count) segments copied in \(Date().timeIntervalSince(drainStarted)) s once the remote came right")
        try daemon.restart()
        #expect(
            eventually(timeout: Self.copyTimeout) { files(under: archive, suffix: ".flac").isEmpty },
            "\(files(under: archive, suffix: ".flac").count) left; log ends: \(daemon.logEnd())\n\(daemon.log)")
        #expect(files(under: blocker + "/box", suffix: ".flac") == recorded)
    }

    @Test(
        "sftp: the server killed mid-copy, recd restarted while it is away, then the server back: the backlog grows, survives, drains; nothing lost"
    )
    func sftpOutage() throws {
        let sftp = try SftpRemote()
        let deck = uniqueName("deck")
        let daemon = try Daemon(
            extraConfig: Self.replicateSection("box:recd", extra: "rclone_config = \(sftp.rcloneConfig)\n"),
            ports: ArchiveEndToEndTests.deckPorts(deck), archiveSegmentSeconds: 1)
        let remoteRoot = sftp.served + "/recd"
        let (source, watcher) = try startLoggerRecording(daemon, deck: deck)
        // The first copies land under their final names.
        try #require(
            eventually(timeout: Self.copyTimeout) { !files(under: remoteRoot, suffix: ".flac").isEmpty }, "\(daemon.log)")
        // The server dies while a copy is under way (its .partial is on the remote).
        var caught = false
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline && !caught {
            caught = !files(under: remoteRoot, suffix: ".partial").isEmpty
            if !caught { usleep(2_000) }
        }
        sftp.kill9()
        #expect(caught, "no copy was seen under way before the kill")
        let copiedBefore = files(under: remoteRoot, suffix: ".flac")
        // More segments finish while the remote is away.
        let isFinished = { (event: JSONValue) in event["event"] == "recording" && event["state"] == "finished" }
        watcher.waitFor(count: watcher.events.filter(isFinished).count + 3, timeout: 10, isFinished)
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        source.stop()
        let archive = daemon.directory + "/archive"
        let finished = files(under: archive, suffix: ".flac")
        // The last segments join the queue once chained (the prover's worker, after `finished`):
        // wait for the count, then read the whole state.
        #expect(
            eventually(timeout: Self.copyTimeout) { Self.backlog(daemon) == finished.count - copiedBefore.count },
            "backlog \(Self.backlog(daemon) ?? -1), want \(finished.count - copiedBefore.count)")
        let away = try #require(try Self.replication(daemon))
        #expect(away["backlog"]?.intValue == finished.count - copiedBefore.count, "\(away.jsonText)")
        #expect((away["backlog"]?.intValue ?? 0) >= 3)
        #expect(away["lastError"]?.stringValue?.contains("rclone") == true, "\(away.jsonText)")
        #expect(files(under: remoteRoot, suffix: ".flac") == copiedBefore, "nothing new appears as finished while away")

        // The queue survives a restart of recd (it is the index), and so does the last success.
        try daemon.restart()
        let restarted = try #require(try Self.replication(daemon))
        #expect(restarted["backlog"]?.intValue == finished.count - copiedBefore.count, "\(restarted.jsonText)")
        #expect(restarted["lastSuccess"] == away["lastSuccess"] && restarted["lastSuccess"]?.doubleValue != nil)

        try sftp.start()
        #expect(
            eventually(timeout: Self.copyTimeout) { Self.backlog(daemon) == 0 },
            "backlog \(Self.backlog(daemon) ?? -1); log ends: \(daemon.logEnd())\n\(daemon.log)")
        #expect(try Self.replication(daemon)?["lastError"]?.isNull == true)
        Self.expectSameSegments(archive: archive, remote: remoteRoot)
    }
}

// The archive's proof against someone who can write the archive directory (docs/security.md,
// "The archive directory"), end to end: the real recd records with 1 s rotation on a real
// jackd; the test, as that writer, re-encodes a segment 20 dB quieter with sox, deletes the
// next and recomputes the chain's unkeyed links; puts an older chain and signature back;
// replaces the chain with a link, a FIFO or 20 MB of newlines; leaves a `.partial` that cannot
// be recovered on a full tmpfs. recd must sign nothing it did not write, raise an alarm, stay
// responsive and small, and recctl's `prove` and `verify` must not say it holds.
import ArchiveProof
import ControlProtocol
import Foundation
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A recording logger with 1 s segments, its chain and its key (TimeStampEndToEndTests' stamped
/// logger is one too).
final class Rotating {
    let daemon: Daemon
    let source: SignalClient
    let watcher: Watcher
    var archive: String { daemon.directory + "/archive" }
    var state: String { daemon.directory + "/state" }

    /// `environment`: recd's (e.g. libfaketime's, for a clock near midnight).
    init(extraConfig: String = "", environment: [String: String] = [:]) throws {
        let deck = uniqueName("deck")
        let daemon = try Daemon(
            extraConfig: extraConfig, ports: ArchiveEndToEndTests.deckPorts(deck), archiveSegmentSeconds: 1,
            environment: environment)
        self.daemon = daemon
        source = try SignalClient([
            "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "pink", "--level", "-6",
        ])
        #expect(
            try eventually(timeout: 10) {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        try #require(
            daemon.recctl("session", "set", "logger", "--category", "record", "--mic-usage", "archive").status == 0)
        try #require(daemon.recctl("permission", "grant", "logger").status == 0)
        watcher = try daemon.watch("logger")
        let started = try daemon.recctl("record", "start", "logger")
        try #require(started.status == 0, "\(started.stderr)")
    }

    deinit { source.stop() }

    var key: String {
        (try? daemon.recctl("archive", "key").stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? ""
    }

    /// Waits until `count` segments have finished in all.
    func waitForSegments(_ count: Int, timeout: Double = 30) {
        watcher.waitFor(count: count, timeout: timeout) { $0["event"] == "recording" && $0["state"] == "finished" }
    }

    /// The one chain file (relative to the archive) once it exists.
    func chain(timeout: Double = 10) throws -> String {
        var found: [String] = []
        _ = eventually(timeout: timeout) {
            found = FileSystem.files(under: archive, withSuffix: ".chain").compactMap {
                ChainLayout.relative($0, to: archive)
            }
            return found.count == 1
        }
        return try #require(found.first, "one chain: \(found)")
    }

    func signatureEntries(_ chain: String) -> Int {
        let text = (try? String(contentsOfFile: archive + "/" + chain + ".sig", encoding: .utf8)) ?? ""
        return Int(text.split(separator: "\t").dropFirst().first ?? "") ?? 0
    }

    func status() throws -> JSONValue { try #require(daemon.recctl("--json", "status").json) }

    func alarms() throws -> [JSONValue] { try status()["archive"]?["chainAlarms"]?.arrayValue ?? [] }
}

/// recd's resident set now and at its peak (kB), from /proc.
private func memory(of pid: Int32) -> (rss: Int, peak: Int) {
    let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    func field(_ name: String) -> Int {
        text.split(separator: "\n").first { $0.hasPrefix(name + ":") }.flatMap {
            Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        } ?? 0
    }
    return (field("VmRSS"), field("VmHWM"))
}

@Suite("the archive's proof against its writers, end to end", .serialized)
struct ChainTamperEndToEndTests {
    @Test(
        "a segment re-encoded 20 dB quieter with sox, the next deleted, the chain's links recomputed: after a rotation recd has signed nothing, raises an alarm naming the entry, in status, /metrics and the log; prove and verify do not hold"
    )
    func forgedChainIsNeverSigned() throws {
        let logger = try Rotating(extraConfig: "\n[http]\nlisten = 127.0.0.1:0\n")
        logger.waitForSegments(5)
        let chain = try logger.chain()
        let key = logger.key
        #expect(
            try eventually(timeout: 10) { try logger.daemon.recctl("archive", "prove", "--key", key).status == 0 },
            "the untouched archive proves")
        let chainPath = logger.archive + "/" + chain
        let signaturePath = chainPath + ".sig"
        // The writer reads the chain as it is now and picks a segment in the middle of it.
        var entries = try String(contentsOfFile: chainPath, encoding: .utf8).split(separator: "\n").map {
            try #require(ChainEntry(line: $0))
        }
        try #require(entries.count >= 4)
        let victim = logger.archive + "/" + entries[1].path
        let deleted = logger.archive + "/" + entries[2].path
        let quieter = logger.daemon.directory + "/quieter.flac"
        let sox = try runTool("sox", [victim, "-b", "24", quieter, "gain", "-20"])
        try #require(sox.status == 0, "sox: \(sox.stderr)")
        try FileManager.default.removeItem(atPath: victim)
        try FileManager.default.moveItem(atPath: quieter, toPath: victim)
        try FileManager.default.removeItem(atPath: deleted)
        entries[1].sha256 = try SHA256Digest.ofFile(victim)
        entries.remove(at: 2)
        var previous = SHA256Digest.zero
        var text = ""
        for (index, entry) in entries.enumerated() {
            var relinked = entry
            relinked.sequence = index + 1
            relinked.previous = previous
            text += relinked.line + "\n"
            previous = relinked.hash
        }
        // Written in place, under the chain's own flock (anyone who can open it may take it): so
        // that recd's prover is not between its check and its write meanwhile.
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: chainPath))
        #expect(flock(handle.fileDescriptor, LOCK_EX) == 0)
        let forgedAt = logger.signatureEntries(chain)
        let signature = try #require(FileManager.default.contents(atPath: signaturePath))
        let original = try #require(FileManager.default.contents(atPath: chainPath))
        let current = try String(contentsOfFile: chainPath, encoding: .utf8).split(separator: "\n").count
        try #require(current == forgedAt, "the chain moved on while sox ran: \(current) lines, signed \(forgedAt)")
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()

        // One rotation: the prover either signs the forged chain (the hole) or raises the alarm.
        let finishedBefore = logger.watcher.events.filter { $0["event"] == "recording" && $0["state"] == "finished" }
        logger.waitForSegments(finishedBefore.count + 2)
        _ = eventually(timeout: 15) {
            (try? logger.alarms().isEmpty == false) == true
                || FileManager.default.contents(atPath: signaturePath) != signature
        }
        #expect(
            FileManager.default.contents(atPath: signaturePath) == signature,
            "recd signed the forged chain: its signature covers \(logger.signatureEntries(chain)), not \(forgedAt)")
        let proven = try logger.daemon.recctl("archive", "prove", "--key", key)
        #expect(proven.status == 1 && !proven.stdout.contains("holds:"), "\(proven.stdout)")
        #expect(proven.stdout.contains("rolled back: \(chain)"), "\(proven.stdout)")
        let verified = try logger.daemon.recctl("archive", "verify")
        #expect(verified.status == 1, "\(verified.stdout)")
        #expect(
            verified.stdout.contains("FAIL \(victim)") && !verified.stdout.contains("ok   \(victim)"),
            "\(verified.stdout)")
        // The alarm: status (JSON and words), /metrics, and the log naming the entry that changed.
        let alarms = try logger.alarms()
        #expect(alarms.count == 1 && alarms.first?["chain"] == .string(chain), "\(alarms)")
        let detail = alarms.first?["detail"]?.stringValue ?? ""
        #expect(detail.contains(entries[1].path) && detail.contains("recd chained"), "\(detail)")
        #expect(try logger.daemon.recctl("status").stdout.contains("ALARM since"))
        let port = try HTTPEndToEndTests.httpPort(logger.daemon)
        let metrics = String(decoding: try HTTPTestClient.get(port: port, path: "/metrics").body, as: UTF8.self)
        #expect(metrics.contains("recd_archive_chain_alarms{chain=\"\(chain)\""), "\(metrics)")
        #expect(logger.daemon.log.contains("ALARM: chain \(chain)"), "\(logger.daemon.log)")
        // Recording goes on.
        #expect(try logger.status()["recorders"]?.arrayValue?.count == 1)
        let more = logger.watcher.events.filter { $0["event"] == "recording" && $0["state"] == "finished" }.count
        logger.waitForSegments(more + 1)
        #expect(FileManager.default.contents(atPath: signaturePath) == signature)

        // The operator restores the day's chain and signature (from the replica or a backup):
        // recd chains again, and the segments it missed; the two changed files stay named.
        try original.write(to: URL(fileURLWithPath: chainPath))
        #expect(
            eventually(timeout: 15) { (try? logger.alarms().isEmpty) == true }, "\(logger.daemon.log.suffix(2000))")
        try #require(logger.daemon.recctl("record", "stop", "logger").status == 0)
        var restored = try logger.daemon.recctl("archive", "prove", "--key", key)
        _ = try eventually(timeout: 15) {
            restored = try logger.daemon.recctl("archive", "prove", "--key", key)
            return !restored.stdout.contains("unchained:") && !restored.stdout.contains("unsigned:")
        }
        let kinds = Set(
            restored.stdout.split(separator: "\n").dropLast().compactMap {
                $0.split(separator: ":").first.map(String.init)
            })
        #expect(kinds == ["altered", "missing"], "\(restored.stdout)")
        #expect(logger.signatureEntries(chain) > forgedAt)
    }

    @Test(
        "an older chain and its signature put back, the later segments deleted: prove on the box (recd's record) says rolled back; off the box without the record it holds and says what it cannot see; recd signs nothing more"
    )
    func rollbackShows() throws {
        let logger = try Rotating()
        logger.waitForSegments(3)
        let chain = try logger.chain()
        let chainPath = logger.archive + "/" + chain
        // A pair the logger is not changing meanwhile (it appends every second): the chain and
        // its signature read between two equal counts of signed entries, and agreeing.
        var snapshot: (entries: Int, chain: Data, signature: Data)?
        #expect(
            eventually(timeout: 10) {
                let entries = logger.signatureEntries(chain)
                guard entries >= 2, let chainBytes = FileManager.default.contents(atPath: chainPath),
                    let signature = FileManager.default.contents(atPath: chainPath + ".sig"),
                    logger.signatureEntries(chain) == entries,
                    String(decoding: chainBytes, as: UTF8.self).split(separator: "\n").count == entries
                else { return false }
                snapshot = (entries, chainBytes, signature)
                return true
            })
        let (oldEntries, oldChain, oldSignature) = try #require(snapshot)
        #expect(eventually(timeout: 20) { logger.signatureEntries(chain) >= oldEntries + 2 })
        try #require(logger.daemon.recctl("record", "stop", "logger").status == 0)
        let key = logger.key
        #expect(try eventually(timeout: 10) { try logger.daemon.recctl("archive", "prove", "--key", key).status == 0 })
        let signed = logger.signatureEntries(chain)

        // The writer puts the older pair back and deletes every segment it does not name.
        try oldChain.write(to: URL(fileURLWithPath: chainPath))
        try oldSignature.write(to: URL(fileURLWithPath: chainPath + ".sig"))
        let named = Set(
            String(decoding: oldChain, as: UTF8.self).split(separator: "\n").compactMap { ChainEntry(line: $0)?.path })
        for file in FileSystem.files(under: logger.archive, withSuffix: ".flac") {
            guard let relative = ChainLayout.relative(file, to: logger.archive), !named.contains(relative) else {
                continue
            }
            try FileManager.default.removeItem(atPath: file)
        }
        // On the box, as root: recd's record in its state directory says the chain was longer.
        let onBox = try logger.daemon.recctl("archive", "prove", "--key", key)
        #expect(onBox.status == 1, "\(onBox.stdout)")
        #expect(
            onBox.stdout.contains("rolled back: \(chain): recd signed \(signed) entries")
                && onBox.stdout.contains("the chain holds \(oldEntries)"), "\(onBox.stdout)")
        // Off the box with only the archive: it holds, and says it could not tell.
        let alone = try logger.daemon.recctl("archive", "prove", "--dir", logger.archive, "--key", key)
        #expect(alone.status == 0 && alone.stdout.contains("not checked against recd's record"), "\(alone.stdout)")
        // With a copy of the record (what an operator keeps off the box): rolled back again.
        let copy = try makeTemporaryDirectory("recd-heads-copy")
        defer { try? FileManager.default.removeItem(atPath: copy) }
        #expect(try runTool("cp", ["-r", logger.state + "/chain-heads", copy + "/"]).status == 0)
        let withCopy = try logger.daemon.recctl(
            "archive", "prove", "--dir", logger.archive, "--key", key, "--heads", copy + "/chain-heads")
        #expect(withCopy.status == 1 && withCopy.stdout.contains("rolled back: \(chain)"), "\(withCopy.stdout)")
        // recd records on: the next segment of the day is not chained into the older chain.
        try #require(logger.daemon.recctl("record", "start", "logger").status == 0)
        #expect(try eventually(timeout: 15) { try !logger.alarms().isEmpty }, "\(logger.daemon.log)")
        #expect(FileManager.default.contents(atPath: chainPath + ".sig") == oldSignature)
        #expect(FileManager.default.contents(atPath: chainPath) == oldChain)
    }

    @Test(
        "the chain path replaced by a link to a root-only file, a link to the signing key, a FIFO, 20 MB of newlines: nothing followed or written, recd records on and keeps its size, SIGTERM stops it at once"
    )
    func unsafeChainPaths() throws {
        let logger = try Rotating()
        logger.waitForSegments(2)
        let chain = try logger.chain()
        let chainPath = logger.archive + "/" + chain
        _ = eventually(timeout: 10) { logger.signatureEntries(chain) >= 1 }
        var finished: Int {
            logger.watcher.events.filter { $0["event"] == "recording" && $0["state"] == "finished" }.count
        }
        /// Replaces the chain with `make`'s file, lets two rotations pass, and waits for recd to
        /// log `expected` about it.
        func replaceChain(_ what: String, expected: String, _ make: (String) throws -> Void) throws {
            let said = logger.daemon.log.components(separatedBy: expected).count
            // Made beside it and renamed over it in one step: removing the chain first would let
            // recd make a new one in between (a segment finishes every second).
            let beside = chainPath + ".replacement"
            try make(beside)
            #expect(rename(beside, chainPath) == 0, "rename over the chain: errno \(errno)")
            logger.waitForSegments(finished + 2)
            #expect(
                eventually(timeout: 15) { logger.daemon.log.components(separatedBy: expected).count > said },
                "\(what): recd never said \"\(expected)\":\n\(logger.daemon.log.suffix(3000))")
        }
        // A root-only file outside the archive: untouched (its last line kept, no line added).
        let secret = logger.daemon.directory + "/root-only"
        try "root's first line\nroot's last line".write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
        try replaceChain("a link to a root-only file", expected: "is a symbolic link") {
            try FileManager.default.createSymbolicLink(atPath: $0, withDestinationPath: secret)
        }
        #expect(try String(contentsOfFile: secret, encoding: .utf8) == "root's first line\nroot's last line")
        // The signing key: untouched, and recd signs on with it after a restart.
        let keyPath = logger.state + "/archive-signing.key"
        let key = try #require(FileManager.default.contents(atPath: keyPath))
        try replaceChain("a link to the signing key", expected: "\(chain) is a symbolic link") {
            try FileManager.default.createSymbolicLink(atPath: $0, withDestinationPath: keyPath)
        }
        #expect(FileManager.default.contents(atPath: keyPath) == key)
        // 20 MB of newlines: refused at its first line; recd's peak memory does not move.
        let before = memory(of: try #require(logger.daemon.pid))
        try replaceChain("20 MB of newlines", expected: "at entry 1 does not hold what recd signed") {
            try Data(repeating: 0x0A, count: 20 << 20).write(to: URL(fileURLWithPath: $0))
        }
        let after = memory(of: try #require(logger.daemon.pid))
        #expect(after.peak - before.peak < 20_000, "peak RSS \(before.peak) kB → \(after.peak) kB")
        #expect(try logger.status()["recorders"]?.arrayValue?.count == 1, "recording goes on")
        // A FIFO: the prover does not wait on it; SIGTERM stops recd promptly.
        try replaceChain("a FIFO", expected: "is a FIFO or device, not a regular file") {
            #expect(mkfifo($0, 0o644) == 0)
        }
        #expect(try logger.daemon.recctl("status").status == 0, "the control socket answers")
        let process = try #require(logger.daemon.process)
        let stopping = Date()
        kill(process.processIdentifier, SIGTERM)
        #expect(eventually(timeout: 10) { !process.isRunning })
        let took = Date().timeIntervalSince(stopping)
        #expect(took < 5, "SIGTERM took \(took) s")
        // Started again: the key loads, the archive proves itself (the day's chain is the writer's FIFO).
        try? FileManager.default.removeItem(atPath: chainPath)
        try logger.daemon.start()
        #expect(!logger.daemon.log.contains("the archive will not prove itself"), "\(logger.daemon.log)")
        #expect(try logger.daemon.recctl("archive", "key").stdout.hasPrefix("ed25519:"))
    }

    @Test(
        "a .partial that cannot be recovered on a full disk at start: listed in status, unproven in prove; recovered, indexed, chained and proven by itself once space returns"
    )
    func partialRecoveredWhenSpaceReturns() throws {
        try #require(getuid() == 0, "mounting a tmpfs needs root")
        let small = try mountTmpfs(size: "8m", prefix: "recd-partial-tmpfs")
        defer { unmountTmpfs(small) }
        let deck = uniqueName("deck")
        let source = try SignalClient([
            "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "pink", "--level", "-6",
        ])
        defer { source.stop() }
        let daemon = try Daemon(ports: ArchiveEndToEndTests.deckPorts(deck), archiveDirectory: small)
        #expect(
            try eventually(timeout: 10) {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        try #require(
            daemon.recctl("session", "set", "logger", "--category", "record", "--mic-usage", "archive").status == 0)
        try #require(daemon.recctl("permission", "grant", "logger").status == 0)
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        #expect(eventually(timeout: 10) { archiveFiles(small).contains { $0.hasSuffix(".partial") } })
        usleep(2_000_000)
        kill(try #require(daemon.pid), SIGKILL)
        daemon.process?.waitUntilExit()
        let partial = try #require(archiveFiles(small).first { $0.hasSuffix(".partial") })
        // The disk full to the last block.
        let filler = small + "/filler"
        #expect(FileManager.default.createFile(atPath: filler, contents: nil))
        let fill = try FileHandle(forWritingTo: URL(fileURLWithPath: filler))
        let block = Data(count: 4096)
        while (try? fill.write(contentsOf: block)) != nil {}
        try? fill.close()
        #expect((FileSystem.space(at: small)?.availableBytes ?? 1) < 65_536)
        try daemon.start()
        let unrecovered = try #require(daemon.recctl("--json", "status").json)["archive"]?["unrecovered"]?.arrayValue
        #expect(unrecovered?.map { $0["path"] } == [.string(partial)], "\(unrecovered ?? [])\n\(daemon.log)")
        #expect(try daemon.recctl("status").stdout.contains("not recovered: \(partial)"))
        let relative = try #require(ChainLayout.relative(partial, to: small))
        let before = try daemon.recctl("archive", "prove", "--app", "logger")
        #expect(
            before.status == 1 && before.stdout.contains("unproven: \(relative)") && !before.stdout.contains("holds:"),
            "\(before.stdout)")
        // Space returns: recovered, indexed, chained and proven without a restart.
        try FileManager.default.removeItem(atPath: filler)
        #expect(
            try eventually(timeout: 20) {
                try daemon.recctl("--json", "status").json?["archive"]?["unrecovered"]?.arrayValue?.isEmpty == true
            }, "\(daemon.log)")
        #expect(!FileManager.default.fileExists(atPath: partial))
        let recovered = String(partial.dropLast(".partial".count))
        #expect(try flacTest(recovered))
        #expect(
            try daemon.recctl("--json", "archive", "list").json?.arrayValue?.contains {
                $0["path"] == .string(recovered) && $0["recovered"] == true
            } == true)
        #expect(
            try eventually(timeout: 10) { try daemon.recctl("archive", "prove", "--app", "logger").status == 0 },
            "\((try? daemon.recctl("archive", "prove", "--app", "logger"))?.stdout ?? "")")
    }

    @Test(
        "a segment someone else put in the archive while recd was stopped (a .partial, an index row over a copied file) is never chained or signed at the next start; prove lists both as unchained"
    )
    func foreignSegmentsAreNeverSigned() throws {
        let logger = try Rotating()
        logger.waitForSegments(3)
        let chain = try logger.chain()
        let key = logger.key
        #expect(try eventually(timeout: 10) { try logger.daemon.recctl("archive", "prove", "--key", key).status == 0 })
        logger.daemon.stop()
        let real = try #require(archiveFiles(logger.archive).last { $0.hasSuffix(".flac") })
        let folder = (real as NSString).deletingLastPathComponent
        let forgedPartial = folder + "/logger-mic-forged-partial.flac.partial"
        let forgedRow = folder + "/logger-mic-forged-row.flac"
        try #require(try runTool("cp", [real, forgedPartial]).status == 0)
        try #require(try runTool("cp", [real, forgedRow]).status == 0)
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            cols = [r[1] for r in db.execute("PRAGMA table_info(segments)")]
            row = dict(zip(cols, db.execute("SELECT * FROM segments WHERE path = ?", (sys.argv[2],)).fetchone()))
            row.update(path=sys.argv[3], sha256=None, chain_previous=None, chain_entry=None)
            db.execute("INSERT INTO segments (%s) VALUES (%s)" % (",".join(row), ",".join("?" * len(row))), list(row.values()))
            db.commit()
            """
        let inserted = try runTool("python3", ["-c", script, logger.archive + "/index.sqlite", real, forgedRow])
        try #require(inserted.status == 0, "\(inserted.stderr)")

        try logger.daemon.start()
        // Both were looked at on the prover's thread and refused.
        #expect(
            eventually(timeout: 20) {
                logger.daemon.log.contains("logger-mic-forged-row.flac is in the archive or its index, but recd has no note")
                    && logger.daemon.log.contains("logger-mic-forged-partial.flac is in the archive or its index")
            }, "\(logger.daemon.log)")
        let chained = (try? String(contentsOfFile: logger.archive + "/" + chain, encoding: .utf8)) ?? ""
        #expect(!chained.contains("forged"), "recd chained a segment it did not write:\n\(chained)")
        let proven = try logger.daemon.recctl("archive", "prove", "--key", key)
        #expect(proven.status == 1 && !proven.stdout.contains("holds:"), "\(proven.stdout)")
        #expect(proven.stdout.contains("logger-mic-forged-row.flac"), "\(proven.stdout)")
        #expect(proven.stdout.contains("logger-mic-forged-partial.flac"), "\(proven.stdout)")
    }
}

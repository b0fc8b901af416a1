// What recd reads back from the archive directory, attacked by someone who may write it: the
// index (a real SQLite file, edited by python3's sqlite3, a third-party program) and segment
// files (tags rewritten by metaflac). Every forged value must be refused where it is read —
// never a trap, never recorded data lost — and the daemon keeps answering.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("forged index rows and segment tags in the archive", .serialized)
struct ArchiveReadBackTests {
    /// A daemon that recorded a few one-second segments of a counter, stopped.
    private func recordedArchive() throws -> Daemon {
        let deck = uniqueName("deck")
        let daemon = try Daemon(ports: ArchiveEndToEndTests.deckPorts(deck), archiveSegmentSeconds: 1)
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "counter"])
        defer { source.stop() }
        try #require(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        try #require(
            daemon.recctl("session", "set", "logger", "--category", "record", "--mic-usage", "forgery").status == 0)
        try #require(daemon.recctl("permission", "grant", "logger").status == 0)
        let watcher = try daemon.watch("logger")
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        watcher.waitFor(count: 2, timeout: 10) { $0["event"] == "recording" && $0["state"] == "finished" }
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        return daemon
    }

    private func listedPaths(_ daemon: Daemon) throws -> [String] {
        let listed = try daemon.recctl("--json", "archive", "list")
        try #require(listed.status == 0, "archive list: \(listed.stderr)")
        return listed.json?.arrayValue?.compactMap { $0["path"]?.stringValue } ?? []
    }

    @Test(
        "index rows no segment can have (times past 2262, infinite clock errors, gaps of 2^63 frames, paths outside the archive) are skipped; recd keeps answering"
    )
    func forgedIndexRows() throws {
        let daemon = try recordedArchive()
        let archive = daemon.directory + "/archive"
        let real = try listedPaths(daemon)
        try #require(real.count >= 2)
        // The forger copies a real row four times and breaks one thing in each copy.
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            cols = [r[1] for r in db.execute("PRAGMA table_info(segments)")]
            row = dict(zip(cols, db.execute("SELECT * FROM segments LIMIT 1").fetchone()))
            def forge(path, **changes):
                r = dict(row, path=path, **changes)
                db.execute("INSERT INTO segments (%s) VALUES (%s)" % (",".join(r), ",".join("?" * len(r))), list(r.values()))
            base = row["path"][:-5]
            forge(base + "-a.flac", start_us=9_300_000_000_000_000, end_us=9_300_000_000_000_001)
            forge(base + "-b.flac", clock_synced_start=1.0, clock_esterror_start_us=1e300, clock_maxerror_start_us=float("inf"))
            forge(base + "-c.flac", frames=9223372036854775807, gaps="0+9223372036854775807")
            forge("/etc/shadow", app=row["app"])
            forge(sys.argv[2] + "/../escape.flac")
            forge(base + "-d.flac", sample_rate=0, loudness_lufs=float("nan"))
            db.commit()
            """
        let forged = try runTool("python3", ["-c", script, archive + "/index.sqlite", archive])
        try #require(forged.status == 0, "the forger's script failed: \(forged.stderr)")

        let listed = try listedPaths(daemon)
        #expect(Set(listed) == Set(real), "only the real segments are listed: \(listed)")
        #expect(daemon.process?.isRunning == true, "recd died reading the forged rows; its log:\n\(daemon.log)")
        #expect(try daemon.recctl("status").status == 0)
        // The whole day exported: the forged rows take no part (and cannot trap the plan).
        let clip = daemon.directory + "/clip.flac"
        let export = try daemon.recctl(
            "archive", "export", "--app", "logger", "--from", "now-1m", "--to", "now", "-o", clip)
        #expect(export.status == 0, "export: \(export.stderr)")
        #expect(daemon.process?.isRunning == true, "recd died exporting past the forged rows; its log:\n\(daemon.log)")
    }

    @Test(
        "a segment whose tags say 2300 or gaps of 2^63 frames is skipped by reindex with its reason; recd keeps answering"
    )
    func forgedSegmentTags() throws {
        let daemon = try recordedArchive()
        let real = try listedPaths(daemon)
        let first = try #require(real.first)
        var forgeries: [String] = []
        for (name, tag) in [
            ("future", "START_TIME=2300-01-01T00:00:00Z"), ("gaps", "GAPS=1+9223372036854775807"),
        ] {
            let copy = (first as NSString).deletingLastPathComponent + "/logger-mic-\(name)-20261206T000000.000Z.flac"
            try #require(try runTool("cp", [first, copy]).status == 0)
            let field = String(tag.prefix { $0 != "=" })
            try #require(try runTool("metaflac", ["--remove-tag=\(field)", "--set-tag=\(tag)", copy]).status == 0)
            forgeries.append(copy)
        }
        let reindex = try daemon.recctl("--json", "archive", "reindex")
        #expect(daemon.process?.isRunning == true, "recd died reindexing the forged files; its log:\n\(daemon.log)")
        #expect(reindex.status == 0, "reindex: \(reindex.stderr)")
        for forgery in forgeries {
            #expect(
                reindex.stdout.contains((forgery as NSString).lastPathComponent),
                "reindex names the skipped \(forgery): \(reindex.stdout)")
        }
        #expect(Set(try listedPaths(daemon)) == Set(real))
    }

    @Test("an export from 9999-01-01 is a badParam, not a crash")
    func exportFromYear9999() throws {
        let daemon = try recordedArchive()
        let export = try daemon.recctl(
            "archive", "export", "--app", "logger", "--from", "9999-01-01T00:00:00Z", "--to", "now", "-o",
            daemon.directory + "/far.flac")
        #expect(daemon.process?.isRunning == true, "recd died on a year-9999 time; its log:\n\(daemon.log)")
        #expect(export.status == 1)
        #expect(export.stderr.contains("badParam"), "\(export.stderr)")
        #expect(try daemon.recctl("status").status == 0)
    }
}

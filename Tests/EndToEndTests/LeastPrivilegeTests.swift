// recd acts with its caller's rights: `archive verify PATH` reads only files inside the
// archive, and only those the caller could read itself.
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("least privilege: archive verify", .serialized)
struct LeastPrivilegeTests {
    /// A daemon whose archive holds one valid FLAC segment (made by the reference encoder).
    static func daemonWithSegment() throws -> (Daemon, archive: String, segment: String) {
        let daemon = try Daemon()
        let archive = daemon.directory + "/archive"
        let day = archive + "/2026/12/01"
        try FileManager.default.createDirectory(atPath: day, withIntermediateDirectories: true)
        let wav = daemon.directory + "/tone.wav"
        try writeWAV(path: wav, sampleRate: 48_000, channels: 1, samples: (0..<4800).map { Int16(($0 * 37) % 2000 - 1000) })
        let segment = day + "/test-main-20261201T000000.000Z.flac"
        let encoded = try runTool("flac", ["-s", "-o", segment, wav])
        try #require(encoded.status == 0, "flac: \(encoded.stderr)")
        return (daemon, archive, segment)
    }

    @Test("verify accepts a segment inside the archive and refuses any path that leads outside it with badParam")
    func confinedToTheArchive() throws {
        let (daemon, archive, segment) = try Self.daemonWithSegment()
        let inside = try daemon.recctl("--json", "archive", "verify", segment)
        #expect(inside.status == 0, "\(inside.stdout)\(inside.stderr)")
        #expect(inside.json?["allOK"]?.boolValue == true, "\(inside.stdout)")

        // A readable FLAC outside the archive, a system file, `..` out of it, a symlink out of it.
        let outsideFLAC = daemon.directory + "/outside.flac"
        try FileManager.default.copyItem(atPath: segment, toPath: outsideFLAC)
        let link = archive + "/2026/12/01/escape.flac"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: outsideFLAC)
        for path in [outsideFLAC, "/etc/passwd", archive + "/2026/../../outside.flac", link, archive + "/missing.flac"] {
            let refused = try daemon.recctl("--json", "archive", "verify", path)
            #expect(refused.status == 1, "\(path) was not refused: \(refused.stdout)")
            let error = refused.json?["error"]
            #expect(error?["name"]?.stringValue == "badParam", "\(path): \(refused.stdout)")
            #expect(error?["code"]?.intValue == -50)
            #expect(error?["message"]?.stringValue?.contains(archive) == true, "the message names the archive: \(refused.stdout)")
            #expect(refused.json?["results"] == nil, "no verdict on a file outside the archive")
        }
        // A relative path in a request is taken inside the archive.
        let client = try RawClient(path: daemon.socket)
        client.send(#"{"id":1,"op":"archive.verify","path":"2026/12/01/test-main-20261201T000000.000Z.flac"}"# + "\n")
        let reply = client.readJSON()
        #expect(reply?["ok"]?.boolValue == true, "\(String(describing: reply))")
    }

    @Test("an unprivileged user cannot verify a segment it cannot read, and can verify one it can")
    func onlyWhatTheCallerCouldRead() throws {
        try #require(getuid() == 0, "this test drops to user nobody and needs root")
        let (daemon, archive, segment) = try Self.daemonWithSegment()
        daemon.openSocketToEveryone()
        for directory in [archive, archive + "/2026", archive + "/2026/12", archive + "/2026/12/01"] {
            chmod(directory, 0o755)
        }
        chmod(segment, 0o600)
        let denied = try daemon.recctl("--json", "archive", "verify", segment, user: "nobody")
        #expect(denied.status == 1)
        #expect(denied.json?["error"]?["name"]?.stringValue == "badParam", "\(denied.stdout)")
        #expect(denied.json?["error"]?["message"]?.stringValue?.contains("may not read") == true, "\(denied.stdout)")
        #expect(try daemon.recctl("--json", "archive", "verify", segment).status == 0, "root may")

        chmod(segment, 0o644)
        let allowed = try daemon.recctl("--json", "archive", "verify", segment, user: "nobody")
        #expect(allowed.status == 0 && allowed.json?["allOK"]?.boolValue == true, "\(allowed.stdout)\(allowed.stderr)")

        // A directory on the way that nobody may not search hides the segment again.
        chmod(archive + "/2026/12", 0o700)
        let hidden = try daemon.recctl("--json", "archive", "verify", segment, user: "nobody")
        #expect(hidden.json?["error"]?["name"]?.stringValue == "badParam", "\(hidden.stdout)")
    }
}

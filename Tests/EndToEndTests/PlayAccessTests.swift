// `play` with the caller's rights: recctl opens the file as the calling user and passes the
// descriptor; recd (root here) never opens a path a client names.
import ControlProtocol
import Foundation
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("play with the caller's rights", .serialized)
struct PlayAccessTests {
    @Test("an unprivileged user cannot play a file it cannot read, and can play one it can")
    func unprivilegedUser() throws {
        try #require(getuid() == 0, "this test drops to user nobody and needs root")
        let nobody = try userIDs("nobody")
        let daemon = try Daemon()
        daemon.openSocketToEveryone()
        try #require(daemon.recctl("session", "set", "mine", "--category", "playback", user: "nobody").status == 0)
        let tone = (0..<(48_000 * 10)).map { Int16(truncatingIfNeeded: ($0 % 100) * 300) }

        // Root's own file, mode 0600: recd runs as root and could read it, nobody cannot.
        let secret = daemon.directory + "/root-only.wav"
        try writeWAV(path: secret, sampleRate: 48_000, channels: 1, samples: tone)
        try #require(chmod(secret, 0o600) == 0)
        let refused = try daemon.recctl("play", "mine", secret, user: "nobody")
        #expect(refused.status == 1)
        #expect(
            refused.stderr.hasPrefix("error: cannot open \(secret): Permission denied"),
            "recctl itself fails, before any request: \(refused.stderr)")
        #expect(try daemon.recctl("--json", "status").json?["players"]?.arrayValue == [])
        #expect(!daemon.log.contains("playing"), "recd played something:\n\(daemon.log)")

        // nobody's own file, mode 0600: only nobody (and root) may read it.
        let own = daemon.directory + "/nobody-only.wav"
        try writeWAV(path: own, sampleRate: 48_000, channels: 1, samples: tone)
        try #require(chown(own, nobody.uid, nobody.gid) == 0 && chmod(own, 0o600) == 0)
        let played = try daemon.recctl("--json", "play", "mine", own, user: "nobody")
        try #require(played.status == 0, "\(played.stderr)")
        #expect(played.json?["file"]?.stringValue == own, "\(played.stdout)")
        #expect(played.json?["state"] == "playing")
        #expect(
            try eventually {
                let player = try daemon.recctl("--json", "status").json?["players"]?.arrayValue?.first
                return player?["app"] == "mine" && (player?["framesPlayed"]?.intValue ?? 0) > 48_000 / 4
            }, "the player plays")
    }

    @Test("a raw play request naming a file without passing its descriptor gets badParam saying how")
    func pathWithoutDescriptor() throws {
        let daemon = try Daemon()
        let wav = daemon.directory + "/readable.wav"
        let dc = [Int16](repeating: 1000, count: 48_000)
        try writeWAV(path: wav, sampleRate: 48_000, channels: 1, samples: dc)
        try #require(daemon.recctl("session", "set", "app", "--category", "playback").status == 0)
        let client = try RawClient(path: daemon.socket)
        client.send(#"{"id":5,"op":"play","app":"app","file":"\#(wav)"}"# + "\n")
        let reply = try #require(client.readJSON())
        #expect(reply["ok"] == false && reply["id"] == 5)
        #expect(reply["error"]?["name"] == "badParam" && reply["error"]?["code"]?.intValue == -50)
        let message = reply["error"]?["message"]?.stringValue ?? ""
        let phrases = ["does not open files", "pass the descriptor with the request line", "SCM_RIGHTS", "recctl play"]
        for phrase in phrases {
            #expect(message.contains(phrase), "\(message)")
        }
        #expect(try daemon.recctl("--json", "status").json?["players"]?.arrayValue == [])
        #expect(try daemon.recctl("--json", "session", "show", "app").json?["state"] == "inactive")
        // Resuming (no file) is unchanged: nothing to resume is cannotStartPlaying.
        client.send(#"{"id":6,"op":"play","app":"app"}"# + "\n")
        #expect(try #require(client.readJSON())["error"]?["name"] == "cannotStartPlaying")
    }

    @Test("descriptors recd does not take are refused with badParam or cannotStartPlaying, and none leaks")
    func descriptorMisuse() throws {
        let daemon = try Daemon()
        let wav = daemon.directory + "/tone.wav"
        try writeWAV(path: wav, sampleRate: 48_000, channels: 1, samples: [Int16](repeating: 500, count: 48_000))
        try #require(daemon.recctl("session", "set", "app", "--category", "playback").status == 0)
        let pid = try #require(daemon.pid)
        /// What recd holds open of this test's files (its own descriptors come and go with its
        /// threads, so count only those that lead to the files passed here).
        func heldTestFiles() -> [String] {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            return fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
                .filter { $0.hasPrefix(daemon.directory) && !$0.hasPrefix(daemon.directory + "/run") && !$0.hasSuffix(".log") }
                .filter { $0 == wav || $0 == daemon.directory || $0.hasSuffix("/w.wav") }
        }
        let client = try RawClient(path: daemon.socket)
        client.send(#"{"id":0,"op":"hello"}"# + "\n")
        _ = client.readJSON()
        let file = open(wav, O_RDONLY | O_CLOEXEC)
        let directory = open(daemon.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        let writeOnly = open(daemon.directory + "/w.wav", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        defer { [file, directory, writeOnly].forEach { close($0) } }
        try #require(file >= 0 && directory >= 0 && writeOnly >= 0)

        func reply(_ line: String, _ descriptors: [Int32]) throws -> JSONValue {
            try DescriptorPassing.sendLine(line, passing: descriptors, over: client.fd)
            return try #require(client.readJSON(), "no reply to \(line)")
        }
        let play = #"{"id":1,"op":"play","app":"app","file":"\#(wav)"}"#
        let cases: [(String, [Int32], String)] = [
            (#"{"id":1,"op":"status"}"#, [file], "badParam"),  // another op
            (play, [file, file], "badParam"),  // two with play
            (#"{"id":1,"op":"play","app":"app"}"#, [file], "badParam"),  // no file name
            (play, [file, file, file, file, file], "badParam"),  // more than a line may carry
            (play, [directory], "cannotStartPlaying"),
            (play, [writeOnly], "cannotStartPlaying"),
        ]
        for (line, descriptors, name) in cases {
            let answer = try reply(line, descriptors)
            #expect(answer["ok"] == false && answer["error"]?["name"]?.stringValue == name, "\(line) with \(descriptors.count): \(answer)")
        }
        #expect(try daemon.recctl("--json", "status").json?["players"]?.arrayValue == [], "nothing plays")
        #expect(heldTestFiles() == [], "recd kept descriptors it refused")

        // The right way plays, and the descriptor is released when the player stops.
        let played = try reply(play, [file])
        #expect(played["ok"] == true, "\(played)")
        #expect(heldTestFiles() == [wav], "the player holds its file")
        #expect(try daemon.recctl("stop", "app").status == 0)
        #expect(eventually { heldTestFiles() == [] }, "the player's descriptor is closed after stop")
    }
}

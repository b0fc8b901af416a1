// `play` with the caller's rights: recctl opens the file as the calling user and passes the
// descriptor; recd (root here) never opens a path a client names.
import ControlProtocol
import Foundation
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
                return player?["app"] == "mine" && (player?["frames_played"]?.intValue ?? 0) > 48_000 / 4
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
}

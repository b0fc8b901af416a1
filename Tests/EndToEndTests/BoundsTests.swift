// What one unprivileged user can make recd do, bounded: a file at a rate that would multiply
// every chunk thousands of times, a flood of sessions, long descriptions. recd runs as root;
// the attacks come as user nobody through a socket open to everyone (as on a shared box).
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("bounded work and quotas per user", .serialized)
struct BoundsTests {
    /// A value of recd's /proc/PID/status in bytes (`VmRSS`, `VmHWM`: the peak).
    static func memory(_ key: String, of pid: Int32) -> Int {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            let kilobytes = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
            return kilobytes * 1024
        }
        return 0
    }

    /// How long `status` takes over a connection already open (recctl's own start-up left
    /// out), and the reply's size.
    static func timedStatus(_ daemon: Daemon) throws -> (seconds: Double, bytes: Int, reply: JSONValue?) {
        let client = try RawClient(path: daemon.socket)
        client.send(#"{"id":1,"v":2,"op":"status"}"# + "\n")
        let clock = ContinuousClock()
        var line: String?
        let took = clock.measure { line = client.readLine() }
        let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
        return (seconds, line?.utf8.count ?? 0, line.flatMap { try? JSONValue.parse($0) })
    }

    @Test(
        "a 10 Hz file is refused before it is read; a 1 kHz one plays with recd's peak RSS within 100 MB",
        .timeLimit(.minutes(1)))
    func lowRateFiles() throws {
        try #require(getuid() == 0, "this test drops to user nobody and needs root")
        let nobody = try userIDs("nobody")
        let daemon = try Daemon()
        daemon.openSocketToEveryone()
        let pid = try #require(daemon.pid)
        try #require(daemon.recctl("session", "set", "x", "--category", "playback", user: "nobody").status == 0)
        let idle = Self.memory("VmRSS", of: pid)

        // 4,800 s at 10 Hz: 48 kHz / 10 Hz made every chunk 4,800 times its size (2.4 GB in 1.4 s).
        // (Written here: sox takes 10 s over a 10 Hz file.)
        let slow = daemon.directory + "/r10.wav"
        let wave = (0..<48_000).map { Int16(truncatingIfNeeded: ($0 % 10) * 3000) }
        try writeWAV(path: slow, sampleRate: 10, channels: 2, samples: wave + wave)
        try #require(chown(slow, nobody.uid, nobody.gid) == 0)
        let refused = try daemon.recctl("play", "x", slow, user: "nobody")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("cannotStartPlaying"), "\(refused.stderr)")
        #expect(refused.stderr.contains("10 Hz") && refused.stderr.contains("1000...384000 Hz"), "\(refused.stderr)")
        #expect(try daemon.recctl("--json", "status").json?["players"]?.arrayValue == [])

        // The floor itself: 48-fold, converted a quarter ring at a time.
        let floor = daemon.directory + "/r1000.wav"
        let tone = (0..<(1000 * 60 * 2)).map { Int16(truncatingIfNeeded: ($0 % 20) * 1500) }
        try writeWAV(path: floor, sampleRate: 1000, channels: 2, samples: tone)
        try #require(chown(floor, nobody.uid, nobody.gid) == 0)
        let played = try daemon.recctl("--json", "play", "x", floor, user: "nobody")
        try #require(played.status == 0, "\(played.stderr)")
        #expect(
            try eventually {
                let player = try daemon.recctl("--json", "status").json?["players"]?.arrayValue?.first
                return (player?["framesPlayed"]?.intValue ?? 0) > 48_000
            }, "the player plays")
        let status = try Self.timedStatus(daemon)
        #expect(status.reply?["ok"] == true)
        #expect(status.seconds < 0.1, "status took \(status.seconds) s while playing")
        let peak = Self.memory("VmHWM", of: pid)
        #expect(peak - idle < 100 << 20, "recd's peak RSS rose \((peak - idle) >> 20) MB over idle")
        // Streams: 8 players in one session, the 9th refused by name; a new file on a stream is not.
        for index in 1..<8 {
            let more = try daemon.recctl("play", "x", floor, "--stream", "s\(index)", user: "nobody")
            #expect(more.status == 0, "stream s\(index): \(more.stderr)")
        }
        let ninth = try daemon.recctl("play", "x", floor, "--stream", "s8", user: "nobody")
        #expect(ninth.status == 1 && ninth.stderr.contains("resourceNotAvailable"), "\(ninth.stderr)")
        let again = try daemon.recctl("play", "x", floor, "--stream", "s1", user: "nobody")
        #expect(again.status == 0, "\(again.stderr)")
        let stopped = try daemon.recctl("stop", "x", user: "nobody")
        #expect(stopped.status == 0, "\(stopped.stderr)")
    }

    @Test(
        "2,000 sessions by one user: 64 made, the rest refused by name; root's goes through; status small and fast",
        .timeLimit(.minutes(2)))
    func sessionFlood() throws {
        try #require(getuid() == 0, "this test drops to user nobody and needs root")
        let nobody = try userIDs("nobody")
        let daemon = try Daemon()
        daemon.openSocketToEveryone()
        // One connection as nobody, 2,000 requests (recctl per request would take minutes).
        let flood = """
            import json, socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            f = s.makefile("rwb")
            counts = {}
            def call(i, request):
                request.update({"id": i, "v": 2})
                f.write((json.dumps(request) + "\\n").encode())
                f.flush()
                reply = json.loads(f.readline())
                key = "ok" if reply.get("ok") else reply["error"]["name"]
                counts[key] = counts.get(key, 0) + 1
                return reply
            for i in range(2000):
                call(i, {"op": "session.set", "app": "flood-%d" % i, "category": "playback"})
            long = call(3000, {"op": "session.set", "app": "flood-0", "category": "record", "micUsage": "m" * 60000})
            print(json.dumps({"counts": counts, "long": long["error"]["name"] if not long["ok"] else "ok"}))
            """
        let python = try ExternalTools.path("python3")
        let result = try runTool(
            "setpriv",
            ["--reuid=\(nobody.uid)", "--regid=\(nobody.gid)", "--clear-groups", python, "-c", flood, daemon.socket],
            timeout: 90)
        try #require(result.status == 0, "\(result.stderr)")
        let outcome = try JSONValue.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(outcome["counts"]?["ok"]?.intValue == 64, "\(result.stdout)")
        #expect(outcome["counts"]?["resourceNotAvailable"]?.intValue == 2000 - 64, "\(result.stdout)")
        #expect(outcome["long"] == "badParam", "a 60 KB micUsage: \(result.stdout)")

        // Root is never locked out, and may go past the global cap.
        let root = try daemon.recctl("session", "set", "roots", "--category", "playback")
        #expect(root.status == 0, "\(root.stderr)")
        // Root's 150 more sessions take status past what it lists.
        let client = try RawClient(path: daemon.socket)
        for index in 0..<150 {
            client.send(
                #"{"id":\#(index),"v":2,"op":"session.set","app":"admin-\#(index)","category":"ambient"}"# + "\n")
            #expect(client.readJSON()?["ok"] == true)
        }
        let status = try Self.timedStatus(daemon)
        #expect(status.seconds < 0.1, "status took \(status.seconds) s")
        #expect(status.bytes < 1 << 20, "status is \(status.bytes) bytes")
        #expect(status.reply?["sessions"]?.arrayValue?.count == StatusInfo.maxListedSessions)
        #expect(status.reply?["sessionCount"]?.intValue == 64 + 1 + 150)
        let text = try daemon.recctl("status")
        #expect(text.stdout.contains("sessions: 215 (0 active; 100 shown"), "\(text.stdout)")

        // A stream name is bounded like an app name.
        let longStream = String(repeating: "s", count: 100)
        client.send(#"{"id":499,"v":2,"op":"play","app":"roots","stream":"\#(longStream)"}"# + "\n")
        let refusedStream = client.readJSON()
        #expect(refusedStream?["error"]?["name"] == "badParam", "\(String(describing: refusedStream))")
        #expect(refusedStream?["error"]?["message"]?.stringValue?.contains("1-64 bytes") == true)

        // session.list pages; recctl joins the pages.
        client.send(#"{"id":500,"v":2,"op":"session.list","offset":200,"limit":10}"# + "\n")
        let page = client.readJSON()
        #expect(page?["sessions"]?.arrayValue?.count == 10)
        #expect(page?["total"]?.intValue == 215 && page?["next"]?.intValue == 210, "\(String(describing: page))")
        client.send(#"{"id":501,"v":2,"op":"session.list","limit":1000}"# + "\n")
        #expect(client.readJSON()?["error"]?["name"] == "badParam")
        let listed = try daemon.recctl("--json", "session", "list", user: "nobody")
        #expect(listed.json?.arrayValue?.count == 215, "every page, one list: \(listed.stderr)")
    }

    @Test(
        "--check-config refuses what recd refuses at start: token file, on_silence = /tmp, a FIFO config",
        .timeLimit(.minutes(1)))
    func checkConfigMatchesTheDaemon() throws {
        let directory = try makeTemporaryDirectory("recd-check")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let recd = productsDirectory.appendingPathComponent("recd").path
        let base = "[daemon]\nsocket = \(directory)/control.sock\nstate_dir = \(directory)/state\n"
        let short = directory + "/short-token"
        try "abc\n".write(toFile: short, atomically: true, encoding: .utf8)
        // Private, as a token file must be: the refusal is for its length alone.
        try #require(chmod(short, 0o600) == 0)
        let cases: [(name: String, text: String, says: String)] = [
            (
                "missing token file", base + "[http]\nlisten = 127.0.0.1:0\ntoken_file = \(directory)/none\n",
                "token_file"
            ),
            ("short token", base + "[http]\nlisten = 127.0.0.1:0\ntoken_file = \(short)\n", "16 characters"),
            (
                "on_silence a directory", base + "[http]\nlisten = no\n[archive]\non_silence = /tmp\n",
                "on_silence = /tmp"
            ),
        ]
        for item in cases {
            let path = directory + "/recd.conf"
            try item.text.write(toFile: path, atomically: true, encoding: .utf8)
            let check = try runProgram(recd, ["--check-config", path], timeout: 10)
            #expect(check.status != 0, "\(item.name): --check-config said \(check.stdout)")
            #expect(check.stderr.contains(item.says), "\(item.name): \(check.stderr)")
            let run = try runProgram(recd, ["--config", path], timeout: 10)
            #expect(run.status == 78, "\(item.name): recd exited \(run.status): \(run.stderr)")
            #expect(run.stderr.contains(item.says), "\(item.name): \(run.stderr)")
        }
        // A FIFO nobody writes to: refused at once, never opened for a blocking read.
        let fifo = directory + "/fifo.conf"
        try #require(mkfifo(fifo, 0o600) == 0)
        let clock = ContinuousClock()
        var check: CommandResult?
        let took = clock.measure { check = try? runProgram(recd, ["--check-config", fifo], timeout: 10) }
        #expect(
            check?.status == 1 && check?.stderr.contains("not a regular file") == true, "\(String(describing: check))")
        #expect(took < .seconds(2))
        let run = try runProgram(recd, ["--config", fifo], timeout: 10)
        #expect(run.status == 78 && run.stderr.contains("not a regular file"), "\(run.stderr)")
    }
}

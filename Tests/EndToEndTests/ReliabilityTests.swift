// Reliability end to end: things that try to break the box while it records. The JACK server
// dies and comes back under a running logger; a crowd of hostile control clients floods the
// socket during a recording. Afterwards the daemon is the same process, other clients are
// served, and every file passes `flac -t` and decodes to an unbroken stretch of the source's
// counter. (kill -9 of recd and a full disk are in ArchiveTests.swift.)
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A 24-bit decode of recd-signal's counter, checked JACK period by JACK period. A file starts
/// on a cycle boundary, so each block of `period` frames is what one process cycle captured.
struct CounterCheck {
    var frames = 0
    /// Frames where a block does not continue the one before it: a period missing, repeated,
    /// out of place or torn. In JACK's asynchronous mode an xrun does exactly that to a client
    /// that ran late: the deck has already written the next cycle into the buffer recd reads
    /// (one period lost, or replaced by the next, or half of each); recd cannot tell which.
    var disturbedBlocks: [Int] = []
    /// Leading periods in which some channel is all zeros: after a reset recd starts recording
    /// while JACK is still making its input connections one port at a time (reported).
    var unconnectedStart = 0

    init(_ samples: [Int32], channels: Int, period: Int) {
        frames = samples.count / channels
        func fits(_ f: Int, _ n: Int) -> Bool {
            (0..<channels).allSatisfy { c in samples[f * channels + c] == Int32((counterK(n, c) - 32768) * 256) }
        }
        /// n mod 65536 of frame f from channel 0 (28087 is the inverse of 7 mod 65536).
        func position(_ f: Int) -> Int { (28087 * Int(samples[f * channels] / 256 + 32768)) % 65536 }
        var expected: Int?
        var start = 0
        while start < frames,
            (0..<channels).contains(where: { c in (start..<min(start + period, frames)).allSatisfy { samples[$0 * channels + c] == 0 } })
        {
            unconnectedStart += 1
            start += period
        }
        while start < frames {
            let end = min(start + period, frames)
            let first = position(start)
            let unbroken = (start..<end).allSatisfy { fits($0, (first + $0 - start) % 65536) }
            if !unbroken || (expected != nil && first != expected) { disturbedBlocks.append(start) }
            expected = unbroken ? (first + end - start) % 65536 : nil
            start = end
        }
    }
}

@Suite("reliability: recording through server loss and hostile clients", .serialized)
struct ReliabilityTests {
    static func deckPorts(_ deck: String) -> String {
        """
        [port mic]
        type = lineIn
        direction = input
        jack = \(deck):out_1, \(deck):out_2

        """
    }

    /// A counter deck and recd with a granted `logger` session (plus `extraSession` lines, and
    /// `extraConfig` after the section) on `jack` (nil: the test's server), its input available
    /// and start-up settled: the set-up of the tests that stop or slow the server. Returns the
    /// xruns counted before the recording, which the caller starts.
    static func counterLogger(
        on jack: PrivateJack?, extraSession: String = "", extraConfig: String = ""
    ) throws -> (daemon: Daemon, source: SignalClient, xrunsBefore: Int) {
        let deck = uniqueName("deck")
        let source = try SignalClient(
            (jack.map { ["--server", $0.name] } ?? [])
                + ["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "counter"])
        let daemon = try Daemon(
            extraConfig: """

                [session logger]
                category = record
                mic_usage = archive
                permission = granted
                \(extraSession)
                \(extraConfig)
                """, ports: deckPorts(deck), jackServer: jack?.name)
        #expect(
            try eventually {
                try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
            })
        // Started once recd's start-up has settled: the xruns it causes on a loaded machine
        // would shift the dummy server's clock before the recording.
        usleep(500_000)
        return (daemon, source, try daemon.xruns())
    }

    /// The headless logger: records the mic from start-up, resumes by itself.
    static let logger = """

        [session logger]
        category = record
        mic_usage = archive
        auto_resume = yes
        record = mic
        permission = granted

        """

    static func recorders(_ daemon: Daemon) throws -> [JSONValue] {
        try daemon.recctl("--json", "status").json?["recorders"]?.arrayValue ?? []
    }

    /// The xruns recd has seen so far (cumulative across JACK servers).
    static func xruns(_ daemon: Daemon) throws -> Int {
        try daemon.recctl("--json", "status").json?["jack"]?["xruns"]?.intValue ?? 0
    }

    /// flac -t, then the counter: every JACK period continues the one before, except at most
    /// two per xrun recd reported while the file was written (this VM has xruns with nothing
    /// else running; see CounterCheck for what an xrun does to the periods around it).
    /// `tornTail`: the server died mid-cycle, so the last periods may hold a deck buffer half
    /// written when JACK went away; they are left out.
    static func expectIntactCounter(_ file: String, period: Int, xruns: Int, tornTail: Bool = false, context: String = "") throws {
        #expect(try flacTest(file), "flac -t \(file)")
        var samples = try decodeFLAC(file, bits: 24)
        if tornTail { samples.removeLast(min(samples.count, period * 2 * 2)) }
        let check = CounterCheck(samples, channels: 2, period: period)
        #expect(check.frames >= 48_000, "\(file): \(check.frames) frames")
        #expect(check.unconnectedStart <= 2, "\(file): \(check.unconnectedStart) periods at the start with a silent channel")
        #expect(check.disturbedBlocks.count <= 2 * xruns,
                "\(file): the counter does not continue at frames \(check.disturbedBlocks.prefix(8)) of \(check.frames), with \(xruns) xrun(s) \(context)")
    }

    @Test("jackd killed and restarted mid-recording: the auto_resume logger goes on in a new segment; each file passes flac -t and is a gapless counter stretch")
    func jackServerRestart() throws {
        let jack = try PrivateJack(name: "recd-test-reliability")
        let deck = uniqueName("deck")
        let deckArguments = ["--server", jack.name, "--name", deck, "play", "--ports", "out_1,out_2", "--signal", "counter"]
        var source = try SignalClient(deckArguments)
        let daemon = try Daemon(extraConfig: Self.logger, ports: Self.deckPorts(deck), jackServer: jack.name)
        let pid = try #require(daemon.process?.processIdentifier)
        #expect(try eventually(timeout: 10) { try Self.recorders(daemon).count == 1 }, "the declared logger records from start-up: \(daemon.log)")
        let watcher = try daemon.watch()
        usleep(1_500_000)

        jack.kill9()
        let lost = watcher.waitFor(timeout: 10) { $0["event"] == "recording" && $0["state"] == "stopped" }
        #expect(lost.contains { $0["event"] == "mediaServicesWereLost" })
        let stopped = try #require(lost.first { $0["event"] == "recording" && $0["state"] == "stopped" }, "\(lost.map(\.jsonText))")
        #expect(stopped["reason"] == "mediaServicesLost")
        #expect(source.waitForExit(timeout: 10), "the deck goes with its server")
        // Every xrun of the old server (recd counts from its start, which began the recording),
        // read after the loss, when recd has drained their notifications.
        let xrunsBeforeLoss = try Self.xruns(daemon)

        // recd reconnects within 250 ms of the server's return. Hold it still meanwhile, so the
        // deck's ports exist by then and the logger goes on through auto_resume at the reset
        // (an input that appears after the reset is RecoveryTests.serverLossHeals).
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        try jack.start()
        source = try SignalClient(deckArguments)
        kill(pid, SIGCONT)
        let reset = watcher.waitFor(timeout: 10) { $0["event"] == "mediaServicesWereReset" }
        #expect(reset.contains { $0["event"] == "mediaServicesWereReset" }, "\(daemon.log)")
        #expect(try eventually(timeout: 10) { try Self.recorders(daemon).count == 1 }, "auto_resume: recording again after the reset: \(daemon.log)")
        usleep(1_500_000)
        let running = try Self.recorders(daemon)
        #expect(running.first?["overruns"]?.intValue == 0, "\(running.map(\.jsonText))")
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        usleep(200_000)  // notifications reach the status on recd's next tick
        let xrunsAfterResume = try Self.xruns(daemon) - xrunsBeforeLoss
        // A gap only where the loaded dummy server lost time (an xrun late by more than a
        // period is a clockStall gap: the time really went unrecorded).
        let resumedGaps = running.first?["gaps"]?.intValue ?? -1
        #expect(resumedGaps >= 0 && resumedGaps <= xrunsAfterResume, "gaps \(resumedGaps), xruns \(xrunsAfterResume)")
        source.stop()
        #expect(daemon.process?.processIdentifier == pid && daemon.process?.isRunning == true, "the same recd throughout")

        let files = archiveFiles(daemon.directory + "/archive")
        #expect(files.count == 2, "one segment before the loss, one after the reset: \(files)")
        #expect(!files.contains { $0.hasSuffix(".partial") })
        for (index, file) in files.enumerated() {
            #expect(try metaflacTag(file, "END_REASON") == (index == 0 ? "mediaServicesLost" : "stop"), "\(file)")
            try Self.expectIntactCounter(file, period: 256, xruns: index == 0 ? xrunsBeforeLoss : xrunsAfterResume, tornTail: index == 0)
        }
    }

    /// What one flooding client did.
    struct FloodReport: Sendable {
        var sent = 0
        var servedAtTheEnd = false
        var problems: [String] = []
    }

    /// Ten hostile messages from one client, then a plain `hello` that must be answered.
    /// Only read-only ops appear well-formed: a valid `session.activate` of a non-mixable
    /// session would rightly interrupt the logger, and that is policy, not robustness.
    static func flood(socket: String, index: Int, seed: UInt64) -> FloodReport {
        var random = SplitMix64(seed: seed &+ UInt64(index))
        var report = FloodReport()
        let readOnly = ["hello", "status", "session.list", "session.show", "routes", "permission.list", "archive.list", "unwatch"]
        func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) } }
        func randomJSON(depth: Int) -> String {
            switch Int.random(in: 0..<(depth > 4 ? 4 : 8), using: &random) {
            case 0: return "null"
            case 1: return Bool.random(using: &random) ? "true" : "false"
            case 2: return ["1e308", "-1e999", "0.000001", "18446744073709551616", "-0", "3.5", "NaN"].randomElement(using: &random)!
            case 3: return ["\"\"", "\"\\ud800\"", "\"\\u0000\"", "\"é🎙\"", "\"\\\"\"", "\"logger\"", "\"../../etc\""].randomElement(using: &random)!
            case 4, 5:
                return "[" + (0..<Int.random(in: 0...4, using: &random)).map { _ in randomJSON(depth: depth + 1) }.joined(separator: ",") + "]"
            default:
                let keys = ["id", "op", "v", "app", "category", "stream", "input", "", "op"]
                return "{" + (0..<Int.random(in: 0...4, using: &random)).map { _ in
                    "\"\(keys.randomElement(using: &random)!)\":\(randomJSON(depth: depth + 1))"
                }.joined(separator: ",") + "}"
            }
        }
        func request(_ id: Int) -> String {
            "{\"id\":\(id),\"op\":\"\(readOnly.randomElement(using: &random)!)\",\"app\":\"flood\(index)\"}"
        }

        guard var client = try? RawClient(path: socket) else {
            report.problems.append("cannot connect")
            return report
        }
        for message in 0..<10 {
            report.sent += 1
            switch Int.random(in: 0..<10, using: &random) {
            case 0:  // binary: random bytes, newlines and NULs included
                client.send(randomBytes(Int.random(in: 1...4096, using: &random)) + [0x0A])
            case 1:  // invalid UTF-8 and control bytes inside a JSON-looking line
                client.send(Array("{\"id\":1,\"op\":\"".utf8) + [0xC0, 0x80, 0xFF, 0xFE, 0x00, 0xED, 0xA0, 0x80] + Array("\"}\n".utf8))
            case 2:  // truncated: a request cut short, then the next message runs into it
                let text = request(message)
                client.send(String(text.prefix(Int.random(in: 1..<text.count, using: &random))) + "\n")
            case 3:  // truncated and abandoned: half a line, then the client hangs up
                if let quitter = try? RawClient(path: socket) {
                    quitter.send(String(request(message).prefix(9)))
                }
            case 4:  // oversized: one line past the limit (its own connection: recd drops it)
                if let big = try? RawClient(path: socket) {
                    big.send([UInt8](repeating: 0x7B, count: maxRequestLineBytes + Int.random(in: 1...4096, using: &random)) + [0x0A])
                    if big.readJSON()?["error"]?["name"] != "badParam" { report.problems.append("oversized line: no badParam") }
                }
            case 5:  // deeply nested
                let depth = Int.random(in: 100...5000, using: &random)
                client.send(String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "\n")
            case 6, 7:  // random JSON of any shape
                client.send(randomJSON(depth: 0) + "\n")
            default:  // well-formed read-only request with junk arguments
                client.send("{\"id\":\(message),\"v\":\(Int.random(in: -1...2, using: &random)),\"op\":\"\(readOnly.randomElement(using: &random)!)\",\"app\":\(randomJSON(depth: 3))}\n")
            }
        }
        // Served: a plain request after all that gets its answer (skipping replies to the junk).
        client.send("{\"id\":\"final-\(index)\",\"op\":\"hello\"}\n")
        while let line = client.readLine() {
            guard let reply = try? JSONValue.parse(line), reply["id"] == .string("final-\(index)") else { continue }
            report.servedAtTheEnd = reply["ok"] == true
            break
        }
        if !report.servedAtTheEnd {
            // recd may have dropped this connection for its junk (e.g. a line it judged too slow);
            // a new one must still be served.
            client = (try? RawClient(path: socket)) ?? client
            client.send("{\"id\":\"again-\(index)\",\"op\":\"hello\"}\n")
            report.servedAtTheEnd = client.readJSON()?["ok"] == true
            report.problems.append("first connection not answered after the junk")
        }
        return report
    }

    @Test("1000 random, truncated, oversized and binary messages from 100 concurrent clients during a recording: recd stays up, serves a bystander, the recording is intact and gapless")
    func hostileFlood() throws {
        let deck = uniqueName("deck")
        let daemon = try Daemon(ports: Self.deckPorts(deck))
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "counter"])
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true })
        try #require(daemon.recctl("session", "set", "logger", "--category", "record", "--mic-usage", "archive").status == 0)
        try #require(daemon.recctl("permission", "grant", "logger").status == 0)
        let status = try #require(daemon.recctl("--json", "status").json)
        let period = try #require(status["jack"]?["bufferSize"]?.intValue)
        let xrunsAtStart = try #require(status["jack"]?["xruns"]?.intValue)
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        let pid = daemon.process?.processIdentifier
        usleep(500_000)

        // A well-behaved client asking for status all along.
        let bystanderDone = Locked(false)
        let bystander = Locked((asked: 0, answered: 0, slowest: 0.0))
        let bystanderFinished = DispatchSemaphore(value: 0)
        let socket = daemon.socket
        Thread.detachNewThread {
            defer { bystanderFinished.signal() }
            guard let client = try? RawClient(path: socket) else { return }
            var id = 0
            while !bystanderDone.withLock({ $0 }) {
                id += 1
                let asked = Date()
                client.send("{\"id\":\(id),\"op\":\"status\"}\n")
                let reply = client.readJSON()
                let took = Date().timeIntervalSince(asked)
                bystander.withLock {
                    $0.asked += 1
                    if reply?["id"] == .number(Double(id)) && reply?["ok"] == true { $0.answered += 1 }
                    $0.slowest = max($0.slowest, took)
                }
                usleep(20_000)
            }
        }

        let seed = UInt64(Date().timeIntervalSince1970 * 1000)
        let reports = Locked<[FloodReport]>([])
        let group = DispatchGroup()
        for index in 0..<100 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let report = Self.flood(socket: socket, index: index, seed: seed)
                reports.withLock { $0.append(report) }
            }
        }
        #expect(group.wait(timeout: .now() + 60) == .success, "the flood did not finish (seed \(seed))")
        usleep(500_000)
        bystanderDone.withLock { $0 = true }
        bystanderFinished.wait()

        let all = reports.withLock { $0 }
        #expect(all.map(\.sent).reduce(0, +) == 1000)
        #expect(all.filter(\.servedAtTheEnd).count == 100, "clients not served after their junk (seed \(seed)): \(all.filter { !$0.servedAtTheEnd }.map(\.problems))")
        let problems = all.flatMap(\.problems)
        #expect(problems.isEmpty, "seed \(seed): \(problems.prefix(5))")
        let seen = bystander.withLock { $0 }
        #expect(seen.asked > 0 && seen.answered == seen.asked, "bystander: \(seen.answered) of \(seen.asked) status requests answered")
        #expect(seen.slowest < 2, "bystander: slowest status took \(seen.slowest) s")
        #expect(daemon.process?.isRunning == true && daemon.process?.processIdentifier == pid, "recd survived the flood: \(daemon.log.suffix(2000))")

        let recording = try #require(try Self.recorders(daemon).first, "still recording after the flood")
        #expect(recording["overruns"]?.intValue == 0, "\(recording.jsonText)")
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        usleep(200_000)
        let xruns = try Self.xruns(daemon) - xrunsAtStart
        // No gap of recd's making: only where the loaded server lost time (clockStall, one per xrun at most).
        let floodGaps = recording["gaps"]?.intValue ?? -1
        #expect(floodGaps >= 0 && floodGaps <= xruns, "gaps \(floodGaps), xruns \(xruns): \(recording.jsonText)")
        source.stop()
        let files = archiveFiles(daemon.directory + "/archive")
        #expect(files.count == 1, "\(files)")
        for file in files { try Self.expectIntactCounter(file, period: period, xruns: xruns, context: "(seed \(seed))") }
    }
}

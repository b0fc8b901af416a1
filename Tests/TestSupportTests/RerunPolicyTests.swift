// scripts/test-causes, the judge of scripts/test's re-runs (docs/testing.md): a failed test is
// named a cause only from what happened while it ran, and a crash or a bare failure never gets one.
import Foundation
import Glibc
import TestSupport
import Testing

@Suite("re-run policy: scripts/test-causes names a failure's causes from its own run only")
struct RerunPolicyTests {
    static let script = ExternalTools.packageRoot + "/scripts/test-causes"

    /// One line of Swift Testing's event stream (--event-stream-output-path, version 0).
    static func event(_ kind: String, _ id: String, at: Double, text: String = "") throws -> String {
        let payload: [String: Any] = [
            "kind": kind, "testID": id, "instant": ["absolute": at, "since1970": at],
            "messages": [["symbol": "fail", "text": text]], "issue": ["isKnown": false],
        ]
        let json = try JSONSerialization.data(withJSONObject: ["kind": "event", "version": 0, "payload": payload])
        return String(decoding: json, as: UTF8.self)
    }

    /// A monitor sample (scripts/test-causes monitor's line) at `t`.
    static func sample(_ t: Double, load: Double = 0.5, xruns: Int = 0, clients: [String] = [], wall: Int = 0) -> String {
        #"{"t": \#(t), "load1": \#(load * 2), "cores": 2, "steal": 0, "total": \#(Int(t * 100)), "#
            + #""xruns": \#(xruns), "clients": [\#(clients.map { "\"\($0)\"" }.joined(separator: ", "))], "#
            + #""wall": \#(5_000_000_000 + wall)}"#
    }

    @Test(
        "each failure's causes are those of its own run: xruns, load, a server that did not start, a stepped wall clock, a late reply recd's work does not explain; none for a bare failure or a crash"
    )
    func judge() throws {
        let directory = NSTemporaryDirectory() + "recd-rerun-policy-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (passed, xruns, loaded, server, bare, stepped, crashed) = (
            "M.S/passed()/F.swift:1:1", "M.S/xruns()/F.swift:2:1", "M.S/loaded()/F.swift:3:1",
            "M.S/server()/F.swift:4:1", "M.S/bare()/F.swift:5:1", "M.S/stepped()/F.swift:7:1", "M.S/crashed()/F.swift:6:1"
        )
        let late = "M.S/late()/F.swift:8:1"
        // One test after another, 2 s each from t = 100: the load comes in the second one's run,
        // the xruns half a second into the last one's, just after the bare failure ended: none of
        // them is the bare failure's; the wall clock steps 1 ms a quarter second in the sixth one's.
        let runs: [(String, String?)] = [
            (passed, nil), (loaded, ""), (server, "jackd did not start [rerun-cause: server-start]"),
            (bare, "expected 1, got 2"), (xruns, ""), (stepped, ""),
            (late, "status took 137 ms (no turn of recd's control thread over 100 ms) [rerun-cause: no-long-turn]"),
        ]
        var events: [String] = []
        for (index, (id, failure)) in runs.enumerated() {
            let start = 100 + Double(index) * 2
            events.append(try Self.event("testStarted", id, at: start))
            if let failure { events.append(try Self.event("issueRecorded", id, at: start + 1, text: failure)) }
            events.append(try Self.event("testEnded", id, at: start + 1.9))
        }
        events.append(try Self.event("testStarted", crashed, at: 114))
        events.append(try Self.event("issueRecorded", crashed, at: 114.5))
        var samples: [String] = []
        for quarter in stride(from: 99.0, through: 116.0, by: 0.25) {
            let xrunsNow = quarter == 108.5 ? 3 : 0
            let load = (102.5...103.5).contains(quarter) ? 2.6 : 0.5
            let steps = Int(((min(quarter, 111.5) - 110) / 0.25).rounded(.down))
            samples.append(
                Self.sample(
                    quarter, load: load, xruns: xrunsNow, clients: xrunsNow > 0 ? ["deck"] : [],
                    wall: max(0, steps) * 1_000_000))
        }
        try events.joined(separator: "\n").write(toFile: directory + "/events", atomically: true, encoding: .utf8)
        try samples.joined(separator: "\n").write(toFile: directory + "/samples", atomically: true, encoding: .utf8)

        // The documented bounds, whatever this run's environment says.
        let bounds = ExternalTools.environment([
            "RECD_TEST_LOAD_BOUND": "1.5", "RECD_TEST_STEAL_BOUND": "10", "RECD_TEST_CLOCK_STEP_BOUND": "2",
        ])
        let result = try ExternalTools.runExecutable(
            Self.script, ["judge", directory + "/events", directory + "/samples"], environment: bounds)
        #expect(result.status == 0, "\(result.stderr)")
        var verdicts: [String: (status: String, cause: String)] = [:]
        for line in result.stdout.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            try #require(fields.count == 4, "\(line)")
            verdicts[fields[1]] = (fields[0], fields[3])
        }
        #expect(verdicts[passed]?.status == "passed")
        #expect(verdicts[xruns]?.status == "failed" && verdicts[xruns]?.cause == "xruns=3 (deck)", "\(verdicts)")
        #expect(verdicts[loaded]?.status == "failed" && verdicts[loaded]?.cause == "load=2.6/core", "\(verdicts)")
        #expect(verdicts[server]?.cause == "server-start", "\(verdicts)")
        #expect(verdicts[late]?.cause == "no-long-turn", "\(verdicts)")
        #expect(verdicts[bare]?.status == "failed" && verdicts[bare]?.cause == "", "a bare failure: \(verdicts)")
        #expect(verdicts[stepped]?.cause == "clock-steps=6ms", "\(verdicts)")
        #expect(verdicts[crashed]?.status == "crashed" && verdicts[crashed]?.cause == "", "\(verdicts)")
    }

    @Test("the monitor counts the xruns a jackd logs after it started, with their clients, and not those before")
    func monitor() throws {
        let directory = NSTemporaryDirectory() + "recd-rerun-monitor-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/recd-jackd-policytest.log"
        let xrun = { (client: String) in "JackEngine::XRun: client = \(client) was not finished, state = Triggered\n" }
        try (xrun("earlier") + "JackAudioDriver::ProcessGraphAsyncMaster: Process error\n")
            .write(toFile: log, atomically: true, encoding: .utf8)
        let samples = directory + "/samples"
        let monitor = try ExternalTools.ownProcess(Self.script, ["monitor", samples, directory, "policytest"])
        try monitor.run()
        defer {
            // SIGKILL: a child of the test runner inherits its blocked signals, SIGTERM among them.
            kill(monitor.processIdentifier, SIGKILL)
            monitor.waitUntilExit()
        }
        let lines = { ((try? String(contentsOfFile: samples, encoding: .utf8)) ?? "").split(separator: "\n") }
        try #require(eventually { !lines().isEmpty }, "the monitor wrote no sample")
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data((xrun("deck") + xrun("recd")).utf8))
        try handle.close()
        let counted = {
            lines().compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .reduce(0) { $0 + (($1["xruns"] as? Int) ?? 0) }
        }
        #expect(eventually { counted() >= 2 }, "\(lines())")
        #expect(counted() == 2, "the xrun before the monitor started is not counted: \(lines())")
        let clients = lines().compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .flatMap { ($0["clients"] as? [String]) ?? [] }
        #expect(Set(clients) == ["deck", "recd"], "\(clients)")
    }
}

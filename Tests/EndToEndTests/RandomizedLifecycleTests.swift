// A seeded, replayable random walk through application lifecycles with real processes:
// applications built from the C library (examples/c/tone.c) and the Swift one
// (audiosession-tone) start, are killed with SIGKILL, are interrupted by recctl's sessions,
// recd restarts, the headphones' JACK client goes and comes back. After every step:
// - no session is held by a process that is gone (recd had 1 s to see it end);
// - no session is interrupted by one that is not active;
// - while the headphones are there, each running application's tone is heard on them exactly
//   when its session is active (each plays its own frequency);
// - `status` answers within 100 ms;
// and at the end no JACK connection churned (restored again and again, or fought over).
//
// RECD_RANDOM_SEED=N replays one walk; RECD_LIFECYCLE_STEPS sets its length (12 in
// scripts/test, on both servers; the issue's 300: `RECD_LIFECYCLE_STEPS=300 scripts/test --filter
// RandomizedLifecycleTests`).
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("randomized application lifecycles with real processes", .serialized)
struct RandomizedLifecycleTests {
    /// One application slot: which library it is built on and the tone it plays.
    struct Slot {
        let app: String
        let c: Bool
        let frequency: Double
        var process: AppProcess?
    }

    enum Step: CaseIterable {
        case start, kill, bossActivate, bossDeactivate, restart, unplug, plug
    }

    /// The random steps' odds: starting an application twice as likely as anything else, so
    /// that a short walk has applications to kill, interrupt and hear.
    static let weightedSteps: [Step] = [.start, .start, .kill, .bossActivate, .bossDeactivate, .restart, .unplug, .plug]

    static var steps: Int {
        ProcessInfo.processInfo.environment["RECD_LIFECYCLE_STEPS"].flatMap(Int.init) ?? 12
    }

    /// The power of `frequency` in `samples` (Goertzel), as an RMS-like amplitude.
    static func level(_ samples: ArraySlice<Float>, frequency: Double, rate: Double = 48_000) -> Double {
        let omega = 2 * Double.pi * frequency / rate
        let coefficient = 2 * cos(omega)
        var s1 = 0.0
        var s2 = 0.0
        for sample in samples {
            let s0 = Double(sample) + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        return (power.squareRoot() * 2 / Double(max(samples.count, 1))) / 2.squareRoot()
    }

    @Test("seeded random lifecycles: holders alive, interrupters active, tones heard exactly when active, status fast, no churn",
        arguments: randomSeeds(count: 1, base: 0x11FE_C7C1E))
    func randomWalk(seed: UInt64) throws {
        print("randomized lifecycle: seed \(seed) (RECD_RANDOM_SEED=\(seed) replays it), \(Self.steps) steps")
        var random = SplitMix64(seed: seed)
        let build = try makeTemporaryDirectory("recd-lifecycle")
        defer { try? FileManager.default.removeItem(atPath: build) }
        let cTone = try Examples.compileC("tone", into: build)
        let phones = uniqueName("lphones")
        var sinkRaw = build + "/phones-0.raw"
        var sink: SignalClient? = try SignalClient(["--name", phones, "capture", "--ports", "in_1,in_2", "--out", sinkRaw])
        defer { sink?.stop() }
        let daemon = try Daemon(
            ports: AttachedApplicationTests.headphonesAndSpeaker(phones: "\(phones):in_", speaker: "system:playback_"))
        try #require(daemon.recctl("session", "set", "boss", "--category", "playback").status == 0)
        var slots = [
            Slot(app: "lswift1", c: false, frequency: 700),
            Slot(app: "lswift2", c: false, frequency: 1300),
            Slot(app: "lc", c: true, frequency: 440),
        ]
        var plugs = 0
        var failures = 0
        var heardChecks = 0
        var heldChecks = 0
        var kills = 0

        func start(_ index: Int) throws {
            let slot = slots[index]
            let client = uniqueName(slot.app)
            let process =
                slot.c
                ? try AppProcess(cTone, [slot.app, client], socket: daemon.socket)
                : try AppProcess(
                    Examples.tone, ["--app", slot.app, "--client", client, "--frequency", "\(Int(slot.frequency))"],
                    socket: daemon.socket)
            slots[index].process = process
            // Up and activated (or refused: a lost server, ...): either way it said so.
            _ = process.waitFor(timeout: 5) { $0 == "active" || $0.hasPrefix("error: active") }
        }

        func sessions() throws -> [String: JSONValue] {
            let client = try RawClient(path: daemon.socket)
            client.send(#"{"id":1,"op":"session.list"}"# + "\n")
            let list = client.readJSON()?["sessions"]?.arrayValue ?? []
            return Dictionary(uniqueKeysWithValues: list.compactMap { s in s["app"]?.stringValue.map { ($0, s) } })
        }

        func check(after step: Step, number: Int) throws {
            let note = "seed \(seed) step \(number) (\(step))"
            // status within 100 ms.
            let client = try RawClient(path: daemon.socket)
            let busyBefore = daemon.controlThreadBusyLines.count
            let asked = Date()
            client.send(#"{"id":1,"op":"status"}"# + "\n")
            let status = client.readJSON()
            let took = Date().timeIntervalSince(asked)
            // Late with no busy turn in recd's log: no one turn of recd's held the reply up.
            let late = "\(note): status took \(Int(took * 1000)) ms"
            let busy = daemon.controlThreadBusyLines.count > busyBefore
            #expect(
                status?["ok"] == true && took < 0.1,
                "\(busy ? late + "; recd: \(daemon.logEnd())" : RerunCause.noLongTurn(late + " (no turn of recd's control thread over 100 ms)"))")
            let all = try sessions()
            for (app, session) in all {
                if let pid = session["heldBy"]?.intValue {
                    heldChecks += 1
                    let alive = kill(Int32(pid), 0) == 0
                        && slots.contains { $0.process?.process.processIdentifier == Int32(pid) && $0.process?.process.isRunning == true }
                    #expect(alive, "\(note): \(app) is held by \(pid), which is gone")
                    if !alive { failures += 1 }
                }
                if session["state"] == "interrupted" {
                    let by = session["interruption"]?["by"]?.stringValue
                    let byActive = by.flatMap { all[$0]?["state"] } == "active"
                    #expect(byActive, "\(note): \(app) is interrupted by \(by ?? "nobody"), which is not active")
                    if !byActive { failures += 1 }
                }
            }
            guard sink != nil else { return }
            let samples = deinterleave(try readRawFloats(path: sinkRaw), channels: 2)[0].suffix(14_400)
            guard samples.count == 14_400 else { return }
            for slot in slots {
                guard let process = slot.process, process.process.isRunning else { continue }
                let active = all[slot.app]?["state"] == "active"
                let heard = Self.level(samples, frequency: slot.frequency)
                // A tone at 0.5 peak has an RMS of 0.35 at full gain; silence is below 1e-3.
                let ok = active ? heard > 0.1 : heard < 0.01
                heardChecks += 1
                #expect(ok, "\(note): \(slot.app) \(active ? "active but not heard" : "not active but heard") (\(heard))")
                if !ok { failures += 1 }
            }
        }

        // Two applications first (a walk that never starts one tests nothing), then the random
        // steps, then every application still running is killed, each followed by the checks.
        var plan: [(step: Step, slot: Int)] = [(.start, 0), (.start, 2)]
        for _ in 0..<Self.steps {
            plan.append((Self.weightedSteps.randomElement(using: &random)!, Int.random(in: 0..<slots.count, using: &random)))
        }
        plan += slots.indices.map { (.kill, $0) }
        for (number, (step, index)) in plan.enumerated() where failures < 5 {
            var settle = 0.8
            switch step {
            case .start:
                if slots[index].process?.process.isRunning != true { try start(index) }
            case .kill:
                if slots[index].process != nil { kills += 1 }
                slots[index].process?.killHard()
                slots[index].process = nil
            case .bossActivate:
                _ = try daemon.recctl("session", "activate", "boss")
            case .bossDeactivate:
                if Bool.random(using: &random) {
                    _ = try daemon.recctl("session", "deactivate", "boss", "--notify-others")
                } else {
                    _ = try daemon.recctl("session", "deactivate", "boss")
                }
            case .restart:
                try daemon.restart()
                settle = 2.5
            case .unplug:
                sink?.stop()
                sink = nil
            case .plug:
                if sink == nil {
                    plugs += 1
                    sinkRaw = build + "/phones-\(plugs).raw"
                    sink = try SignalClient(["--name", phones, "capture", "--ports", "in_1,in_2", "--out", sinkRaw])
                    settle = 1.2
                }
            }
            // The step's effects settle over `settle` seconds of audio as the sink captured it
            // (JACK's frames, not the wall clock); unplugged, there is no capture to count.
            if sink != nil {
                awaitCaptured(sinkRaw, seconds: settle)
            } else {
                usleep(UInt32(settle * 1_000_000))
            }
            try check(after: step, number: number + 1)
        }
        print("randomized lifecycle: \(kills) kills, \(heldChecks) held sessions checked, \(heardChecks) tones checked")
        // The walk did what it is for (a seed that never started an application tests nothing).
        #expect(kills > 0 && heldChecks > 0 && heardChecks >= 3)
        let log = daemon.log
        let churned = log.components(separatedBy: "times since the last notice").count - 1
        #expect(churned == 0, "a connection was restored again and again:\n\(log)")
        #expect(!log.contains("recd leaves it alone"), "a connection was fought over:\n\(log)")
        var bypassed: [String: Int] = [:]
        for line in log.split(separator: "\n") where line.contains("would bypass recd") {
            bypassed[String(line.split(separator: " ").dropFirst(2).prefix(3).joined(separator: " ")), default: 0] += 1
        }
        #expect(bypassed.values.allSatisfy { $0 <= 2 }, "connections fought over: \(bypassed)")
        for slot in slots { slot.process?.killHard() }
    }
}

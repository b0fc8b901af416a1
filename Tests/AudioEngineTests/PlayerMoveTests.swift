// Moving a running player to another output group (streams follow the route): the
// crossfade on the process path without a server, and the same move against a real jackd.

import CJack
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import AudioEngine

/// A tone that never crosses zero, so that each output's share of it (its crossfade weight)
/// can be read off frame by frame: 0.25 + 0.2 sin(2π n / 100).
private func tone(_ frame: Int) -> Float { 0.25 + 0.2 * Float(sin(2 * Double.pi * Double(frame) / 100)) }

@Suite("Player moves on the process path (no server)")
struct PlayerMoveProcessTests {
    /// Groups A (flat outputs 0-1) and B (2-3); a mono tone on A, moved to B.
    private func movedTone(period: Int, crossfade: Int, moveAfterPeriods: Int, periods: Int)
        -> (outputs: [[Float]], moveFrame: Int, player: PlayerHandle)
    {
        let rig = ProcessRig(inputChannels: 0, outputChannels: 4, maxFrames: period)
        let player = rig.addPlayer(
            channels: 1, outputs: PlayerRoute.defaultRoutes(playerChannels: 1, groupChannels: 2),
            capacityFrames: period * (periods + 1))
        _ = player.write((0..<(period * periods)).map(tone))
        var outputs = [[Float]](repeating: [], count: 4)
        for index in 0..<periods {
            if index == moveAfterPeriods {
                player.move(
                    toOutputGroup: "B",
                    routes: PlayerRoute.defaultRoutes(playerChannels: 1, groupChannels: 2),
                    flatOutputBase: 2, crossfadeFrames: crossfade)
            }
            rig.cycle(frames: period)
            for channel in 0..<4 {
                outputs[channel] += UnsafeBufferPointer(start: rig.outputs[channel], count: period)
            }
        }
        return (outputs, moveAfterPeriods * period, player)
    }

    @Test(
        "a tone moved from group A to B: the sum of A and B is the tone at every frame, the crossfade is exactly the ramp"
    )
    func crossfade() {
        let period = 256
        let crossfade = 960  // 20 ms at 48 kHz: spans four periods
        let (outputs, move, player) = movedTone(
            period: period, crossfade: crossfade, moveAfterPeriods: 3, periods: 10)
        #expect(player.outputGroup == "B")
        #expect(player.movesApplied == 1)
        var worst: Float = 0
        for frame in 0..<outputs[0].count {
            worst = max(worst, abs(outputs[0][frame] + outputs[2][frame] - tone(frame)))
            #expect(outputs[0][frame] == outputs[1][frame] && outputs[2][frame] == outputs[3][frame])
        }
        #expect(worst < 1e-6, "A + B departs from the tone by \(worst): a gap or a click")
        // Before the move only A, after the crossfade only B.
        #expect(outputs[0][..<move].indices.allSatisfy { outputs[0][$0] == tone($0) && outputs[2][$0] == 0 })
        let lastOfA = outputs[0].lastIndex { $0 != 0 }!
        let firstOfB = outputs[2].firstIndex { $0 != 0 }!
        #expect(firstOfB == move, "the move starts at the first period after it was published")
        #expect(lastOfA == move + crossfade - 2, "A's last sound is the crossfade's second-to-last frame")
        #expect(outputs[2][(move + crossfade - 1)...].indices.allSatisfy { outputs[2][$0] == tone($0) })
        // Linear: B's share of frame k of the crossfade is k / ramp.
        for step in 1..<crossfade {
            let frame = move + step - 1
            let weight = outputs[2][frame] / tone(frame)
            #expect(abs(weight - Float(step) / Float(crossfade)) < 1e-5)
        }
    }

    @Test("a move at once (no ramp) switches at the period boundary; a paused player moves without a crossfade")
    func immediateAndPaused() {
        let (outputs, move, _) = movedTone(period: 128, crossfade: 0, moveAfterPeriods: 2, periods: 4)
        #expect(outputs[0][move - 1] != 0 && outputs[0][move...].allSatisfy { $0 == 0 })
        #expect(outputs[2][..<move].allSatisfy { $0 == 0 } && outputs[2][move] == tone(move))

        let rig = ProcessRig(inputChannels: 0, outputChannels: 4, maxFrames: 256)
        let player = rig.addPlayer(
            channels: 1, outputs: [PlayerRoute(source: 0, destination: 0)], capacityFrames: 4096)
        _ = player.write([Float](repeating: 0.5, count: 4096))
        player.voice.pointee.command.store(
            PlayerCommand(gain: 1, rampFrames: 0, paused: true).packed, ordering: .releasing)
        rig.cycle(frames: 256)
        player.move(
            toOutputGroup: "B", routes: [PlayerRoute(source: 0, destination: 1)], flatOutputBase: 2,
            crossfadeFrames: 960)
        rig.cycle(frames: 256)
        #expect(player.movesApplied == 1, "taken up while paused")
        player.voice.pointee.command.store(
            PlayerCommand(gain: 1, rampFrames: 0, paused: false).packed, ordering: .releasing)
        rig.cycle(frames: 256)
        #expect(rig.outputs[3][0] == 0.5 && rig.outputs[3][255] == 0.5, "resumes on B at once")
        #expect((0..<3).allSatisfy { channel in (0..<256).allSatisfy { rig.outputs[channel][$0] == 0 } })
    }

    @Test("a second move during a crossfade waits for it to finish, then crossfades again")
    func moveDuringCrossfade() {
        let rig = ProcessRig(inputChannels: 0, outputChannels: 3, maxFrames: 100)
        let player = rig.addPlayer(
            channels: 1, outputs: [PlayerRoute(source: 0, destination: 0)], capacityFrames: 4096)
        _ = player.write([Float](repeating: 1, count: 4096))
        rig.cycle(frames: 100)
        player.move(
            toOutputGroup: "B", routes: [PlayerRoute(source: 0, destination: 0)], flatOutputBase: 1,
            crossfadeFrames: 150)
        rig.cycle(frames: 100)
        player.move(
            toOutputGroup: "C", routes: [PlayerRoute(source: 0, destination: 0)], flatOutputBase: 2,
            crossfadeFrames: 50)
        var sums: [Float] = []
        for _ in 0..<3 {
            rig.cycle(frames: 100)
            for frame in 0..<100 { sums.append(rig.outputs[0][frame] + rig.outputs[1][frame] + rig.outputs[2][frame]) }
        }
        #expect(sums.allSatisfy { abs($0 - 1) < 1e-6 }, "never a gap")
        #expect(rig.outputs[2][99] == 1 && rig.outputs[0][99] == 0 && rig.outputs[1][99] == 0)
        #expect(player.movesApplied == 2)
    }

    @Test("a player that is a monitoring source keeps feeding the buses through a move")
    func monitoringSourceMoves() throws {
        let rig = ProcessRig(inputChannels: 0, outputChannels: 4, maxFrames: 256)
        let player = rig.addPlayer(
            channels: 2, outputs: PlayerRoute.defaultRoutes(playerChannels: 2, groupChannels: 2),
            capacityFrames: 8192)
        _ = player.write([Float](repeating: 0.5, count: 2 * 8192))
        let groups = ["A": GroupLayout(flatBase: 0, channels: 2), "B": GroupLayout(flatBase: 2, channels: 2)]
        try rig.setMonitoring(
            MonitoringSetup(mainOutput: "A", cueOutput: "B", sources: [.player(player.id, toMain: true)]),
            rampFrames: 0, inputs: [:], outputs: groups)
        let tap = rig.addBusTap(.main, capacityFrames: 8192)
        rig.cycle(frames: 256)
        player.move(
            toOutputGroup: "B", routes: PlayerRoute.defaultRoutes(playerChannels: 2, groupChannels: 2),
            flatOutputBase: 2, crossfadeFrames: 300)
        for _ in 0..<4 { rig.cycle(frames: 256) }
        let bus = tap.read(maxFrames: 8192)
        #expect(bus.count == 2 * 5 * 256)
        #expect(bus.allSatisfy { abs($0 - 0.5) < 1e-6 }, "the bus hears the player at full level throughout")
    }

    @Test("the cycle that takes up a move, and the crossfade after it, make no heap allocation")
    func noAllocationWhileMoving() {
        let period = 256
        let rig = ProcessRig(inputChannels: 0, outputChannels: 4, maxFrames: period)
        let player = rig.addPlayer(
            channels: 2, outputs: PlayerRoute.defaultRoutes(playerChannels: 2, groupChannels: 2),
            capacityFrames: 16 * period)
        _ = player.write([Float](repeating: 0.25, count: 2 * 16 * period))
        rig.cycle(frames: period)
        // The control thread's part (building the table) allocates, outside the count.
        player.move(
            toOutputGroup: "B", routes: PlayerRoute.defaultRoutes(playerChannels: 2, groupChannels: 2),
            flatOutputBase: 2, crossfadeFrames: 3 * period)
        let state = rig.memory.state
        let counts = AllocationCounter.counting {
            for round in 0..<6 {
                runCycle(state, frames: period, frameTime: UInt32(round * period))
            }
        }
        #expect(counts.allocations == 0, "\(counts)")
        #expect(player.movesApplied == 1)
        #expect(rig.outputs[2][period - 1] == 0.25 && rig.outputs[0][period - 1] == 0)
    }
}

@Suite("Player moves against jackd", .serialized)
struct PlayerMoveIntegrationTests {
    @Test(
        "a player moved between two output groups arrives at the new JACK ports with no gap: speaker + phones is the tone at every frame",
        .timeLimit(.minutes(1)))
    func moveOnTheServer() throws {
        // One client behind both groups, so that both are recorded in the same cycles.
        let device = try TestJackClient(name: unique("recdtest-move"), inputs: 4)
        defer { device.close() }
        let engine = AudioEngine()
        try engine.start(
            clientName: unique("recdtest-mv"), inputs: [],
            outputs: [
                PortGroupSpec(name: "speaker", channels: 2, connectTo: Array(device.inputPortNames.prefix(2))),
                PortGroupSpec(name: "phones", channels: 2, connectTo: Array(device.inputPortNames.suffix(2))),
            ])
        defer { engine.stop() }
        let rate = try #require(engine.sampleRate)
        let frames = 2 * rate
        var player: PlayerHandle?
        let heard = try measureWithoutXruns(engine) {
            let attempt = try engine.addPlayer(channels: 1, outputGroup: "speaker", bufferFrames: frames)
            defer { engine.removePlayer(attempt) }
            player = attempt
            #expect(attempt.write((0..<frames).map(tone)) == frames)
            attempt.finish()
            _ = device.takeRecording()
            engine.play(attempt)
            #expect(waitUntil(seconds: 10) { attempt.framesPlayed >= rate / 2 })
            try engine.movePlayer(attempt, toOutputGroup: "phones", rampMilliseconds: 20)
            // Published once the connection reconciler has answered for the phones' edges.
            #expect(
                waitUntil(seconds: 10) {
                    _ = engine.drainNotifications()
                    return attempt.outputGroup == "phones"
                })
            #expect(waitUntil(seconds: 10) { attempt.state == .drained })
            usleep(UInt32(4 * 1_000_000 * (engine.bufferSize ?? 1024) / rate))
            return device.takeRecording()
        }
        let moved = try #require(player)
        #expect(moved.movesApplied == 1 && moved.underruns == 0)
        #expect(device.droppedFrames == 0)
        let speaker = stride(from: 0, to: heard.count, by: 4).map { heard[$0] }
        let phones = stride(from: 2, to: heard.count, by: 4).map { heard[$0] }
        let first = try #require(speaker.firstIndex { $0 != 0 })
        var worst: Float = 0
        for index in 0..<frames where first + index < speaker.count {
            worst = max(worst, abs(speaker[first + index] + phones[first + index] - tone(index)))
        }
        #expect(first + frames <= speaker.count, "the whole tone was recorded")
        #expect(worst < 1e-6, "speaker + phones departs from the tone by \(worst)")
        let phonesStart = try #require(phones.firstIndex { $0 != 0 })
        let speakerEnd = try #require(speaker.lastIndex { $0 != 0 })
        let ramp = Int((0.020 * Double(rate)).rounded())
        #expect(speakerEnd - phonesStart + 2 == ramp, "the crossfade takes exactly 20 ms")
        #expect(phones[(speakerEnd + 1)..<(first + frames)].indices.allSatisfy { phones[$0] == tone($0 - first) })
    }
}

@Suite("A player move asks the connection reconciler", .serialized)
struct PlayerMoveRequestTests {
    @Test(
        "a move to a group whose device has just arrived is published once the reconciler has connected it, not before",
        .timeLimit(.minutes(1)))
    func moveWaitsForTheEdges() throws {
        let speaker = try TestJackClient(name: unique("recdtest-spk"), inputs: 2)
        defer { speaker.close() }
        let phonesName = unique("recdtest-ph")
        let engine = AudioEngine()
        try engine.start(
            clientName: unique("recdtest-mw"), inputs: [],
            outputs: [
                PortGroupSpec(name: "speaker", channels: 2, connectTo: speaker.inputPortNames),
                PortGroupSpec(name: "phones", channels: 2, connectTo: ["\(phonesName):in_1", "\(phonesName):in_2"]),
            ])
        defer { engine.stop() }
        let player = try engine.addPlayer(channels: 1, outputGroup: "speaker")
        defer { engine.removePlayer(player) }
        #expect(!engine.isAvailable(group: "phones"))

        // The device arrives; the control loop learns it without repairing (as recd's does
        // before the policy has reacted), so only the move's request can connect it.
        let phones = try TestJackClient(name: phonesName, inputs: 2)
        defer { phones.close() }
        #expect(
            waitUntil(seconds: 10) {
                _ = engine.drainNotifications(repair: false)
                return engine.isAvailable(group: "phones")
            })
        let ours = engine.jackPortNames(ofGroup: "phones")
        var connectedWhenMoved: [String]?
        try engine.movePlayer(player, toOutputGroup: "phones", rampMilliseconds: 0) {
            // JACK shows a connection made a moment ago from the server's next cycle on (a
            // read waits 1.1 periods once, then reads the old graph): a loaded server's cycle
            // may come later, so the read is repeated for up to 20 periods. An edge the move's
            // request did not make is not there however long this looks.
            let period = Double(engine.bufferSize ?? 1024) / Double(engine.sampleRate ?? 48_000)
            var connected = ours.flatMap(engine.connections(of:))
            for _ in 0..<20 where connected != phones.inputPortNames {
                usleep(UInt32(period * 1_000_000))
                connected = ours.flatMap(engine.connections(of:))
            }
            connectedWhenMoved = connected
        }
        // The reconciler's thread may answer before `movePlayer` returns (a loaded machine
        // schedules the control thread late), and then the move is published at once; either
        // way the group is named only with the answer, when `moved` runs.
        #expect(
            (player.outputGroup == "phones") == (connectedWhenMoved != nil),
            "the group changed without the reconciler's answer")
        #expect(
            waitUntil(seconds: 10) {
                _ = engine.drainNotifications(repair: false)
                return connectedWhenMoved != nil
            }, "the reconciler never answered the move")
        #expect(connectedWhenMoved == phones.inputPortNames, "the move was published before its device was connected")
        #expect(player.outputGroup == "phones" && player.movesApplied <= 1)
    }
}

// Main/cue monitoring on the process path without a server: bus sums, cue mix and split,
// gains, ramps, chunking, players on the buses, bus taps, setup checks, and the allocation
// count with monitoring active.

import Glibc
import Synchronization
import TestSupport
import Testing

@testable import AudioEngine

@Suite("Monitoring process path (no server)")
struct MonitoringProcessTests {
    /// Inputs: deckA (flat 0-1), deckB (2-3), mic (4, mono). Outputs: pa (0-1), phones (2-3),
    /// mono (4).
    static let inputs = [
        "deckA": GroupLayout(flatBase: 0, channels: 2), "deckB": GroupLayout(flatBase: 2, channels: 2),
        "mic": GroupLayout(flatBase: 4, channels: 1),
    ]
    static let outputs = [
        "pa": GroupLayout(flatBase: 0, channels: 2), "phones": GroupLayout(flatBase: 2, channels: 2),
        "mono": GroupLayout(flatBase: 4, channels: 1),
    ]
    static let deckA: [Float] = [0.25, 0.125]
    static let deckB: [Float] = [0.5, -0.1]

    private func makeRig(maxFrames: Int = 1024) -> ProcessRig {
        let rig = ProcessRig(inputChannels: 5, outputChannels: 5, maxFrames: maxFrames)
        let levels = Self.deckA + Self.deckB + [0.75]
        for (channel, level) in levels.enumerated() {
            rig.inputs[channel].update(repeating: level, count: maxFrames)
        }
        return rig
    }

    private func set(_ rig: ProcessRig, _ setup: MonitoringSetup, rampFrames: Int = 0) throws {
        try rig.setMonitoring(setup, rampFrames: rampFrames, inputs: Self.inputs, outputs: Self.outputs)
    }

    private func output(_ rig: ProcessRig, _ channel: Int, frames: Int) -> [Float] {
        Array(UnsafeBufferPointer(start: rig.outputs[channel], count: frames))
    }

    private static let djSetup = MonitoringSetup(
        mainOutput: "pa", cueOutput: "phones",
        sources: [.input("deckA", toMain: true), .input("deckB", toCue: true)])

    @Test("main carries deck A only and cue deck B only, exactly; the cue mix blends; split sums to mono")
    func busesMixAndSplit() throws {
        let rig = makeRig()
        var setup = Self.djSetup
        try set(rig, setup)
        rig.cycle(frames: 256)
        let (a, b) = (Self.deckA, Self.deckB)
        #expect(output(rig, 0, frames: 256).allSatisfy { $0 == a[0] })
        #expect(output(rig, 1, frames: 256).allSatisfy { $0 == a[1] })
        #expect(output(rig, 2, frames: 256).allSatisfy { $0 == b[0] })
        #expect(output(rig, 3, frames: 256).allSatisfy { $0 == b[1] })
        #expect(output(rig, 4, frames: 256).allSatisfy { $0 == 0 }, "nothing on an unused group")

        setup.cueMix = 0.5
        try set(rig, setup)
        rig.cycle(frames: 256)
        for channel in 0..<2 {
            let expected = 0.5 * b[channel] + 0.5 * a[channel]
            #expect(output(rig, 2 + channel, frames: 256).allSatisfy { abs($0 - expected) <= 1e-6 })
            #expect(output(rig, channel, frames: 256).allSatisfy { $0 == a[channel] }, "main unchanged")
        }

        setup.splitCue = true
        try set(rig, setup)
        rig.cycle(frames: 256)
        // The law: mono = (L + R) / 2. Not L + R (0.4 / 0.375), not (L + R) / √2.
        #expect(output(rig, 2, frames: 256).allSatisfy { $0 == (b[0] + b[1]) / 2 })
        #expect(output(rig, 3, frames: 256).allSatisfy { $0 == (a[0] + a[1]) / 2 })

        // Both decks on both buses, deck B at -6 dB.
        setup = MonitoringSetup(
            mainOutput: "pa", cueOutput: "phones",
            sources: [
                .input("deckA", toMain: true, toCue: true),
                .input("deckB", toMain: true, toCue: true, gainDecibels: -6),
            ])
        try set(rig, setup)
        rig.cycle(frames: 256)
        let half = AudioEngine.linearGain(decibels: -6)
        #expect(abs(half - 0.501187) < 1e-6)
        for channel in 0..<2 {
            let expected = a[channel] + b[channel] * half
            #expect(output(rig, channel, frames: 256).allSatisfy { abs($0 - expected) <= 1e-7 })
            #expect(output(rig, 2 + channel, frames: 256).allSatisfy { abs($0 - expected) <= 1e-7 })
        }
    }

    @Test("a mono input feeds both bus channels; a mono output takes (L + R) / 2")
    func channelMapping() throws {
        let rig = makeRig()
        try set(
            rig,
            MonitoringSetup(
                mainOutput: "mono", cueOutput: "pa",
                sources: [.input("deckA", toMain: true), .input("mic", toCue: true)]))
        rig.cycle(frames: 64)
        #expect(output(rig, 4, frames: 64).allSatisfy { $0 == (Self.deckA[0] + Self.deckA[1]) / 2 })
        #expect(output(rig, 0, frames: 64).allSatisfy { $0 == 0.75 })
        #expect(output(rig, 1, frames: 64).allSatisfy { $0 == 0.75 })
    }

    @Test("the cue mix ramps linearly and monotonically, no step above the increment, then holds")
    func cueMixRamp() throws {
        let rig = makeRig()
        var setup = Self.djSetup
        try set(rig, setup)
        rig.cycle(frames: 256)
        setup.cueMix = 0.5
        let ramp = 960
        try set(rig, setup, rampFrames: ramp)
        var cue: [Float] = []
        for _ in 0..<8 {
            rig.cycle(frames: 256)
            cue += output(rig, 2, frames: 256)
        }
        let (a, b) = (Self.deckA[0], Self.deckB[0])
        let target = 0.5 * b + 0.5 * a
        let increment = (b - a) * 0.5 / Float(ramp)
        #expect(cue[0] < b && cue[0] >= b - increment * 1.001, "the ramp starts at once")
        #expect(cue[ramp - 1] == target, "and lands on the target after \(ramp) frames")
        #expect(cue[ramp...].allSatisfy { $0 == target })
        var previous = b
        var bad = 0
        for sample in cue[0..<ramp] {
            if sample > previous || previous - sample > increment * 1.001 + 1e-7 { bad += 1 }
            previous = sample
        }
        #expect(bad == 0)
    }

    @Test("a source joining fades in, one leaving fades out; split crossfades; across chunk boundaries")
    func gainRampsAcrossChunks() throws {
        // A period of 4096 frames is mixed in two chunks of 2048.
        let rig = makeRig(maxFrames: 4096)
        try set(rig, MonitoringSetup(mainOutput: "pa", cueOutput: "phones", sources: [.input("deckA", toMain: true)]))
        rig.cycle(frames: 64)
        let ramp = 3000
        try set(rig, Self.djSetup, rampFrames: ramp)  // deck B joins the cue bus
        rig.cycle(frames: 4096)
        let cue = output(rig, 2, frames: 4096)
        let b = Self.deckB[0]
        let increment = b / Float(ramp)
        var previous: Float = 0
        var bad = 0
        for sample in cue[0..<ramp] {
            if sample < previous || sample - previous > increment * 1.001 + 1e-7 { bad += 1 }
            previous = sample
        }
        #expect(bad == 0, "fade-in is monotonic with bounded steps, across the chunk boundary")
        #expect(cue[ramp - 1] == b && cue[ramp...].allSatisfy { $0 == b })
        #expect(output(rig, 0, frames: 4096).allSatisfy { $0 == Self.deckA[0] })

        // Deck B leaves the setup: it fades out rather than stopping dead.
        try set(
            rig, MonitoringSetup(mainOutput: "pa", cueOutput: "phones", sources: [.input("deckA", toMain: true)]),
            rampFrames: 100)
        rig.cycle(frames: 256)
        let fade = output(rig, 2, frames: 256)
        #expect(fade[0] < b && fade[0] > b * 0.9 && fade[99] == 0 && fade[100...].allSatisfy { $0 == 0 })

        // Split on: a crossfade from the blend to the split signal.
        var setup = Self.djSetup
        try set(rig, setup, rampFrames: 0)
        rig.cycle(frames: 64)
        setup.splitCue = true
        try set(rig, setup, rampFrames: 200)
        rig.cycle(frames: 256)
        let split = output(rig, 2, frames: 256)
        let mono = (Self.deckB[0] + Self.deckB[1]) / 2
        #expect(split[0] < b && split[0] > mono)
        #expect(zip(split[0..<199], split[1..<200]).allSatisfy { $0 >= $1 })
        #expect(split[199...].allSatisfy { $0 == mono })
    }

    @Test("a player on the buses is not also heard on its own output group")
    func playerSourceBypassesDirectRoute() throws {
        let rig = makeRig()
        // A mono player on "pa" (flat outputs 0-1): routes to both pa channels.
        let player = rig.addPlayer(
            channels: 1, outputs: PlayerRoute.defaultRoutes(playerChannels: 1, groupChannels: 2),
            capacityFrames: 8192)
        _ = player.write([Float](repeating: 0.375, count: 8192))
        rig.cycle(frames: 64)
        #expect(output(rig, 0, frames: 64).allSatisfy { $0 == 0.375 }, "plays directly at first")
        try set(
            rig,
            MonitoringSetup(
                mainOutput: "pa", cueOutput: "phones",
                sources: [.input("deckA", toMain: true), .player(player.id, toCue: true)]))
        rig.cycle(frames: 64)
        #expect(output(rig, 0, frames: 64).allSatisfy { $0 == Self.deckA[0] }, "pa: deck A only")
        #expect(output(rig, 2, frames: 64).allSatisfy { $0 == 0.375 }, "phones: the player")
        #expect(output(rig, 3, frames: 64).allSatisfy { $0 == 0.375 })
        #expect(player.framesPlayed == 128)
        // Out of the setup: straight back to its own group.
        try set(rig, MonitoringSetup(mainOutput: "pa", cueOutput: "phones", sources: [.input("deckA", toMain: true)]))
        rig.cycle(frames: 64)
        #expect(output(rig, 0, frames: 64).allSatisfy { $0 == Self.deckA[0] + 0.375 })
        #expect(output(rig, 2, frames: 64).allSatisfy { $0 == 0 })
    }

    @Test("bus taps record the buses (post-gain, pre-output) sample-exact, through chunked periods")
    func busTapsAreExact() throws {
        let rig = ProcessRig(inputChannels: 5, outputChannels: 5, maxFrames: 4096)
        try set(
            rig,
            MonitoringSetup(
                mainOutput: "pa", cueOutput: "phones",
                sources: [.input("deckA", toMain: true), .input("deckB", toCue: true, gainDecibels: -6)],
                cueMix: 1))
        let main = rig.addBusTap(.main, capacityFrames: 16384)
        let cue = rig.addBusTap(.cue, capacityFrames: 16384)
        let firstFrameTime = rig.frameTime
        for period in [256, 4096, 1000] {
            rig.feedCounter(frames: period)
            rig.cycle(frames: period)
        }
        let frames = 256 + 4096 + 1000
        let mainFrames = main.read(maxFrames: frames)
        let cueFrames = cue.read(maxFrames: frames)
        #expect(mainFrames.count == 2 * frames && cueFrames.count == 2 * frames)
        #expect(main.firstFrameTime == firstFrameTime && main.bus == .main && cue.bus == .cue)
        let gain = AudioEngine.linearGain(decibels: -6)
        var mismatches = 0
        for frame in 0..<frames {
            let value = Float(frame + 1)
            if mainFrames[2 * frame] != value || mainFrames[2 * frame + 1] != -value { mismatches += 1 }
            // Deck B carries the same counter (channels 2, 3: +, -).
            if cueFrames[2 * frame] != value * gain || cueFrames[2 * frame + 1] != -value * gain {
                mismatches += 1
            }
        }
        #expect(mismatches == 0)
        #expect(main.overruns == 0 && main.drainGaps().isEmpty)
        // The cue mix does not reach the tap; it does reach the cue output (cueMix 1: main).
        #expect(rig.outputs[2][999] == Float(frames))
        let meters = (0..<2).map { rig.memory.meter(bus: .main, channel: $0).pointee.take() }
        #expect(meters[0].peak == Float(frames) && meters[0].frames == frames)
    }

    @Test("a setup that does not fit is rejected and changes nothing")
    func setupChecks() throws {
        let rig = makeRig()
        try set(rig, Self.djSetup)
        let before = rig.memory.graph.monitoring
        let rejected: [(MonitoringSetup, AudioEngineError)] = [
            (MonitoringSetup(mainOutput: "nowhere"), .unknownGroup("nowhere")),
            (MonitoringSetup(sources: [.input("deckZ", toMain: true)]), .unknownGroup("deckZ")),
            (MonitoringSetup(mainOutput: "deckA"), .unknownGroup("deckA")),
        ]
        for (setup, error) in rejected {
            #expect(throws: error) { try set(rig, setup) }
        }
        let invalid = [
            MonitoringSetup(mainOutput: "pa", cueOutput: "pa"),
            MonitoringSetup(cueOutput: "mono", splitCue: true),
            MonitoringSetup(cueMix: 1.5),
            MonitoringSetup(cueMix: .nan),
            MonitoringSetup(busChannels: 0),
            MonitoringSetup(busChannels: 9),
            MonitoringSetup(sources: [.input("deckA"), .input("deckA", toCue: true)]),
            MonitoringSetup(sources: [.input("deckA", gainDecibels: .nan)]),
        ]
        for setup in invalid {
            #expect(throws: AudioEngineError.self) { try set(rig, setup) }
        }
        #expect(rig.memory.graph.monitoring === before)
        let players = (0..<70).map { _ in MonitoringSource.player(PlayerHandleID.next(), toMain: true) }
        #expect(throws: AudioEngineError.self) { try set(rig, MonitoringSetup(sources: players)) }
        try set(rig, MonitoringSetup(sources: Array(players.prefix(40))))
        try set(rig, MonitoringSetup(sources: Array(players.suffix(40))), rampFrames: 10)
    }

    @Test(
        "the process cycle with monitoring active (sources, ramps, split, players, bus taps) makes no heap allocation")
    func noAllocationsWithMonitoring() throws {
        let rig = makeRig(maxFrames: 4096)
        let period = 256
        let player = rig.addPlayer(
            channels: 2, outputs: PlayerRoute.defaultRoutes(playerChannels: 2, groupChannels: 2),
            capacityFrames: 8 * period)
        let direct = rig.addPlayer(
            channels: 1, outputs: PlayerRoute.defaultRoutes(playerChannels: 1, groupChannels: 2),
            capacityFrames: 8 * period, flatOutputBase: 2)
        let mainTap = rig.addBusTap(.main, capacityFrames: 4 * period)
        let cueTap = rig.addBusTap(.cue, capacityFrames: 64 * period)
        let inputTap = rig.addTap(channels: [0, 1], capacityFrames: 4 * period)
        // Three plans the loop swaps between, as publishing would: gains, mix and split move,
        // the player joins and leaves the buses, sources fade in and out.
        let setups = [
            MonitoringSetup(
                mainOutput: "pa", cueOutput: "phones",
                sources: [
                    .input("deckA", toMain: true), .input("deckB", toCue: true, gainDecibels: -3),
                    .player(player.id, toCue: true),
                ], cueMix: 0.3),
            MonitoringSetup(
                mainOutput: "pa", cueOutput: "phones",
                sources: [.input("deckA", toMain: true, toCue: true), .input("mic", toMain: true)],
                cueMix: 0.7, splitCue: true),
            MonitoringSetup(
                mainOutput: "mono", cueOutput: "phones",
                sources: [
                    .input("deckB", toMain: true, gainDecibels: -12), .player(player.id, toMain: true, toCue: true),
                ],
                splitCue: true),
        ]
        var plans: [MonitoringPlan] = []
        for setup in setups {
            plans.append(
                try rig.memory.makeMonitoringPlan(
                    setup, rampFrames: 700, inputGroups: Self.inputs, outputGroups: Self.outputs))
        }
        var graph = rig.memory.graph
        let snapshots = plans.map { plan in
            graph.monitoring = plan
            return UInt(bitPattern: EngineMemory.makeSnapshot(graph))
        }
        let state = rig.memory.state
        let original = state.pointee.graph.load(ordering: .sequentiallyConsistent)
        let feed = [Float](repeating: 0.25, count: 16 * period)
        let drain = UnsafeMutablePointer<Float>.allocate(capacity: 64 * period)
        defer { drain.deallocate() }
        let voices = (player.voice, direct.voice)
        let tapStates = (mainTap.state, cueTap.state, inputTap.state)
        let counts = feed.withUnsafeBufferPointer { source in
            let samples = source.baseAddress!
            return AllocationCounter.counting {
                for round in 0..<3000 {
                    if round % 37 == 0 {
                        state.pointee.graph.store(snapshots[(round / 37) % 3], ordering: .sequentiallyConsistent)
                    }
                    if round % 3 != 0 { _ = voices.0.pointee.ring.write(from: samples, frames: period) }
                    if round % 4 != 0 { _ = voices.1.pointee.ring.write(from: samples, frames: period) }
                    if round % 7 < 3 {
                        _ = tapStates.0.pointee.ring.read(into: drain, frames: 8 * period)
                        _ = tapStates.2.pointee.ring.read(into: drain, frames: 8 * period)
                    }
                    if round % 2 == 0 { _ = tapStates.1.pointee.ring.read(into: drain, frames: 64 * period) }
                    if round % 11 == 0 { _ = tapStates.0.pointee.gaps.pop() }
                    // Now and then a period longer than a monitoring chunk.
                    let frames = round % 50 == 0 ? 4096 : period
                    runCycle(state, frames: frames, frameTime: UInt32(truncatingIfNeeded: round * period))
                }
            }
        }
        state.pointee.graph.store(original, ordering: .sequentiallyConsistent)
        for bits in snapshots {
            EngineMemory.freeSnapshot(UnsafeMutablePointer<GraphSnapshot>(bitPattern: bits)!)
        }
        withExtendedLifetime(plans) {}
        #expect(counts.allocations == 0, "\(counts)")
        #expect(mainTap.overruns > 0 && player.underruns > 0, "the run exercised gaps and underruns")
        #expect(cueTap.framesCaptured > 0 && player.framesPlayed > 0 && direct.framesPlayed > 0)
        #expect(rig.memory.meter(bus: .cue, channel: 0).pointee.take().peak > 0)
    }
}

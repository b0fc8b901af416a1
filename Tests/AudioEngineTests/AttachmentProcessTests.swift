// An attached application's ports on the process path without a server: its play samples
// through a player voice (paused, playing, ducked, paused again), its capture ports fed from
// the inputs or zeros, and no allocation in the cycle.

import Glibc
import TestSupport
import Testing

@testable import AudioEngine

@Suite("Attached application ports (no server)")
struct AttachmentProcessTests {
    static let period = 256

    func buffer(_ value: Float = 0) -> UnsafeMutablePointer<Float> {
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 8192)
        buffer.initialize(repeating: value, count: 8192)
        return buffer
    }

    @Test("the app's play samples reach the output only while its voice plays, same period, at the voice's gain")
    func playPath() {
        let period = Self.period
        let rig = ProcessRig(inputChannels: 0, outputChannels: 2)
        let appOut = buffer()
        defer { appOut.deallocate() }
        let handle = rig.addAttachment(play: [appOut], capture: [], groupChannels: 2)
        let player = try! #require(handle.player)
        for frame in 0..<period { appOut[frame] = Float(frame + 1) / 1024 }

        for _ in 0..<3 { rig.cycle(frames: period) }
        #expect((0..<period).allSatisfy { rig.outputs[0][$0] == 0 }, "paused: nothing reaches the output")
        #expect(player.framesQueued <= period, "a paused voice does not queue the app's audio")

        player.voice.pointee.command.store(
            PlayerCommand(gain: 1, rampFrames: 0, paused: false).packed, ordering: .releasing)
        rig.cycle(frames: period)
        #expect(
            (0..<period).allSatisfy { rig.outputs[0][$0] == appOut[$0] && rig.outputs[1][$0] == appOut[$0] },
            "playing: the same period's samples, mono to both channels")
        #expect(player.underruns == 0)

        let ducked = AudioEngine.linearGain(decibels: -14)
        player.voice.pointee.command.store(
            PlayerCommand(gain: ducked, rampFrames: 0, paused: false).packed, ordering: .releasing)
        rig.cycle(frames: period)
        #expect(abs(rig.outputs[0][period - 1] - appOut[period - 1] * ducked) < 1e-7)

        player.voice.pointee.command.store(
            PlayerCommand(gain: ducked, rampFrames: 128, paused: true).packed, ordering: .releasing)
        rig.cycle(frames: period)
        #expect(
            rig.outputs[0][64] > 0 && rig.outputs[0][127] == 0 && rig.outputs[0][period - 1] == 0,
            "ramped out inside the period")
        #expect(handle.periodsFed == 6)
    }

    @Test("capture ports carry their input channels while open, zeros otherwise")
    func capturePath() {
        let period = Self.period
        let rig = ProcessRig(inputChannels: 2, outputChannels: 0)
        let first = buffer(7)
        let second = buffer(7)
        defer { first.deallocate(); second.deallocate() }
        let handle = rig.addAttachment(play: [], capture: [first, second], groupChannels: 0)
        rig.feedCounter(frames: period)
        rig.cycle(frames: period)
        #expect((0..<period).allSatisfy { first[$0] == 0 && second[$0] == 0 }, "closed: zeros, not what was there")
        handle.setCapture(sources: [1, 0], open: true)
        rig.feedCounter(frames: period)
        rig.cycle(frames: period)
        #expect((0..<period).allSatisfy { first[$0] == rig.inputs[1][$0] && second[$0] == rig.inputs[0][$0] })
        handle.setCapture(sources: [1, -1], open: true)
        rig.cycle(frames: period)
        #expect((0..<period).allSatisfy { second[$0] == 0 }, "a port without a source carries silence")
        handle.setCapture(sources: [1, 0], open: false)
        rig.cycle(frames: period)
        #expect((0..<period).allSatisfy { first[$0] == 0 }, "closed again (permission, mute, inactive): zeros")
    }

    @Test("a cycle with attachments (play and capture, playing and ramping) makes no heap allocation")
    func noAllocation() {
        let period = Self.period
        let rig = ProcessRig(inputChannels: 2, outputChannels: 2)
        let appOut = buffer(0.25)
        let appIn = buffer()
        defer { appOut.deallocate(); appIn.deallocate() }
        let handle = rig.addAttachment(play: [appOut], capture: [appIn], groupChannels: 2)
        handle.setCapture(sources: [0], open: true)
        let player = handle.player!
        player.voice.pointee.command.store(
            PlayerCommand(gain: 0.5, rampFrames: 300, paused: false).packed, ordering: .releasing)
        rig.cycle(frames: period)
        let state = rig.memory.state
        let counts = AllocationCounter.counting {
            for round in 0..<6 { runCycle(state, frames: period, frameTime: UInt32(round * period)) }
        }
        #expect(counts.allocations == 0, "\(counts)")
        #expect(rig.outputs[0][period - 1] == 0.125)
    }

    /// What the worker does, without processing: the tap's frames as they came into the ring.
    func pass(_ processed: ProcessedCapture) {
        let frames = processed.tap.read(maxFrames: processed.tap.availableToRead)
        _ = processed.tap.reference?.read(maxFrames: processed.tap.reference!.availableToRead)
        frames.withUnsafeBufferPointer { _ = processed.write(from: $0.baseAddress!, frames: frames.count) }
    }

    @Test(
        "a processed capture reaches the ports at the slack's fixed delay; a late worker is a period of silence, counted, and the delay stays; a longer period grows the slack once; no allocation"
    )
    func processedCapturePath() {
        let period = Self.period
        let rig = ProcessRig(inputChannels: 1, outputChannels: 1)
        let port = buffer(7)
        defer { port.deallocate() }
        let handle = rig.addAttachment(play: [], capture: [port], groupChannels: 1)
        handle.setCapture(sources: [0], open: true)
        let processed = rig.addProcessedCapture(
            handle, channels: [0], referenceOutputs: [0], portChannels: [0], slackFrames: period)
        // The counter's frame k is k + 1: what the port carries says which input frame it is.
        rig.feedCounter(frames: period)
        rig.cycle(frames: period)
        #expect((0..<period).allSatisfy { port[$0] == 0 }, "the first period is the slack: silence")
        #expect(processed.tap.availableToRead == period, "the tap got the same cycle's input")
        pass(processed)
        rig.feedCounter(frames: period)
        rig.cycle(frames: period)
        #expect((0..<period).allSatisfy { port[$0] == Float($0 + 1) }, "one period later: the first period")
        // The worker is late: silence, counted; once it catches up the delay is what it was.
        pass(processed)
        rig.feedCounter(frames: period)
        rig.cycle(frames: period)
        #expect((0..<period).allSatisfy { port[$0] == Float(period + $0 + 1) })
        rig.feedCounter(frames: period)
        rig.cycle(frames: period)
        #expect((0..<period).allSatisfy { port[$0] == 0 } && processed.underruns == 1)
        pass(processed)
        rig.feedCounter(frames: period)
        rig.cycle(frames: period)
        #expect(
            (0..<period).allSatisfy { port[$0] == Float(3 * period + $0 + 1) }, "the late period dropped, not delayed")
        #expect(processed.underruns == 1 && processed.slackFrames == period)
        // Closed (mute, permission, inactive): zeros, and the ring is read all the same.
        pass(processed)
        handle.setCapture(sources: [0], open: false)
        rig.feedCounter(frames: period)
        rig.cycle(frames: period)
        #expect((0..<period).allSatisfy { port[$0] == 0 })
        handle.setCapture(sources: [0], open: true)
        pass(processed)
        rig.feedCounter(frames: period)
        rig.cycle(frames: period)
        #expect((0..<period).allSatisfy { port[$0] == Float(5 * period + $0 + 1) })
        // A period twice the slack: its first half silence, once; from then on the slack is that period.
        pass(processed)
        rig.feedCounter(frames: 2 * period)
        rig.cycle(frames: 2 * period)
        #expect((0..<period).allSatisfy { port[$0] == 0 })
        #expect((0..<period).allSatisfy { port[period + $0] == Float(6 * period + $0 + 1) })
        #expect(processed.slackFrames == 2 * period && processed.underruns == 1)
        pass(processed)
        rig.feedCounter(frames: 2 * period)
        rig.cycle(frames: 2 * period)
        #expect((0..<(2 * period)).allSatisfy { port[$0] == Float(7 * period + $0 + 1) })

        let state = rig.memory.state
        let counts = AllocationCounter.counting {
            for round in 0..<6 { runCycle(state, frames: period, frameTime: UInt32(round * period)) }
        }
        #expect(counts.allocations == 0, "\(counts)")
    }
}

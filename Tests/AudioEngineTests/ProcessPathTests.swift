// The real-time path without a server: rings, gain ramps, gap logging, snapshot retirement
// and the allocation count of the process cycle.

import Glibc
import Synchronization
import TestSupport
import Testing

@testable import AudioEngine

@Suite("Process path (no server)")
struct ProcessPathTests {
    @Test("a ring hands over whole frames, in order, across the wrap")
    func ringWraps() {
        let ring = FloatRing.allocate(channels: 2, capacityFrames: 5)
        defer { ring.deallocate() }
        var written = 0
        var read = 0
        var scratch = [Float](repeating: 0, count: 16)
        for round in 0..<200 {
            let offer = round % 4 + 1
            var source: [Float] = []
            for frame in 0..<offer {
                let value = Float(written + frame + 1)
                source += [value, -value]
            }
            let accepted = ring.write(from: source, frames: offer)
            #expect(accepted == min(offer, 5 - (written - read)))
            written += accepted
            let wanted = (round * 7) % 4 + 1
            let got = scratch.withUnsafeMutableBufferPointer {
                ring.read(into: $0.baseAddress!, frames: wanted)
            }
            #expect(got == min(wanted, written - read))
            for frame in 0..<got {
                #expect(scratch[frame * 2] == Float(read + frame + 1))
                #expect(scratch[frame * 2 + 1] == -Float(read + frame + 1))
            }
            read += got
        }
        #expect(ring.framesWritten() == written && ring.framesRead() == read)
    }

    @Test("a tap's ring is planar: peek lends each channel's run in place, cut at the ring's end")
    func tapPeekInPlace() {
        let rig = ProcessRig(inputChannels: 3, outputChannels: 0)
        let period = 100
        // Channels out of order: tap channel 0 is input 2, and so on.
        let tap = rig.addTap(channels: [2, 0, 1], capacityFrames: 250)
        let starts = UnsafeMutablePointer<UnsafePointer<Float>>.allocate(capacity: 3)
        defer { starts.deallocate() }
        var consumed = 0
        for _ in 0..<7 {
            rig.feedCounter(frames: period)
            rig.cycle(frames: period)
            // Read it all, in the runs peek gives: never across the end of the 250-frame ring.
            while true {
                let count = tap.peek(maxFrames: 1000, channelStarts: starts)
                if count == 0 { break }
                #expect(consumed % 250 + count <= 250)
                for frame in 0..<count {
                    let value = Float(consumed + frame + 1)
                    // Input c carries (k + 1) × (c even ? 1 : -1).
                    #expect(starts[0][frame] == value && starts[1][frame] == value && starts[2][frame] == -value)
                }
                #expect(tap.discard(frames: count) == count)
                consumed += count
            }
        }
        #expect(consumed == 7 * period && tap.readPosition == consumed && tap.overruns == 0)
    }

    @Test("a removed tap retires once a cycle begun after the removal has finished, or the memory is freed")
    func tapRetirement() {
        let rig = ProcessRig(inputChannels: 1, outputChannels: 0)
        let tap = rig.addTap(channels: [0], capacityFrames: 1000)
        let other = rig.addTap(channels: [0], capacityFrames: 1000)
        rig.feedCounter(frames: 64)
        rig.cycle(frames: 64)
        #expect(!tap.isRetired, "a tap in the graph is not retired")
        rig.memory.publish(players: [], taps: [other])
        tap.detach(after: rig.memory.cycles.markNow())
        #expect(!tap.isAttached)
        #expect(!tap.isRetired, "a cycle that loaded the old snapshot may still be writing it")
        rig.feedCounter(frames: 64)
        rig.cycle(frames: 64)
        #expect(tap.isRetired)

        rig.memory.publish(players: [], taps: [])
        other.detach(after: rig.memory.cycles.markNow())
        #expect(!other.isRetired)
        rig.memory.freeAll()
        #expect(other.isRetired, "no cycle runs once the memory is freed")
    }

    @Test("player commands pack into one word and back")
    func commandPacking() {
        for command in [
            PlayerCommand(gain: 1, rampFrames: 0, paused: false),
            PlayerCommand(gain: 0.1995, rampFrames: 960, paused: true),
            PlayerCommand(gain: 0, rampFrames: PlayerCommand.maximumRampFrames, paused: false),
        ] {
            #expect(PlayerCommand(packed: command.packed) == command)
        }
    }

    @Test("port patterns: globs become anchored regular expressions; numbers sort by value")
    func portPatterns() {
        #expect(PortPattern.isPattern("system:capture_*"))
        #expect(!PortPattern.isPattern("system:capture_1"))
        #expect(PortPattern.regularExpression(forGlob: "system:capture_*") == "^system:capture_.*$")
        #expect(PortPattern.regularExpression(forGlob: "a.b?[12]") == "^a\\.b.[12]$")
        let names = ["s:capture_10", "s:capture_2", "s:capture_1", "s:aux"]
        #expect(
            names.sorted(by: PortPattern.naturallyOrdered) == [
                "s:aux", "s:capture_1", "s:capture_2", "s:capture_10",
            ])
        #expect(AudioEngine.nearestPowerOfTwo(300) == 256)
        #expect(AudioEngine.nearestPowerOfTwo(384) == 512)
        #expect(AudioEngine.nearestPowerOfTwo(5) == 16)
        #expect(AudioEngine.nearestPowerOfTwo(100_000) == 8192)
    }

    @Test("a full ring drops whole periods and logs one gap at the right position (f, no server)")
    func gapOnFullRing() {
        let rig = ProcessRig(inputChannels: 2, outputChannels: 0)
        let period = 256
        let tap = rig.addTap(channels: [0, 1], capacityFrames: 3 * period)
        var frameTimes: [UInt32] = []
        for _ in 0..<5 {
            rig.feedCounter(frames: period)
            frameTimes.append(rig.frameTime)
            rig.cycle(frames: period)
        }
        #expect(tap.framesCaptured == 3 * period)
        #expect(tap.overruns == 2)
        #expect(tap.droppedFrames == 2 * period)
        #expect(tap.drainGaps().isEmpty, "a gap is logged when it ends")
        #expect(tap.firstFrameTime == frameTimes[0])

        let first = tap.read(maxFrames: 10 * period)
        #expect(first.count == 3 * period * 2)
        for frame in 0..<(3 * period) {
            #expect(
                first[frame * 2] == Float(frame + 1) && first[frame * 2 + 1] == -Float(frame + 1))
        }

        rig.feedCounter(frames: period)
        rig.cycle(frames: period)
        #expect(
            tap.drainGaps() == [
                CaptureGap(position: 3 * period, length: 2 * period, frameTime: frameTimes[3])
            ])
        let after = tap.read(maxFrames: 10 * period)
        #expect(after.count == period * 2)
        #expect(
            after.first == Float(5 * period + 1),
            "the frames after the gap are the ones captured after it")
        #expect(tap.overruns == 2)
    }

    @Test(
        "the period may change between cycles (another client's jack_bufsize): taps, players, buses and meters stay whole"
    )
    func periodChangesBetweenCycles() throws {
        // Nothing in the real-time memory is sized by the period: a cycle longer than any
        // before (8192 frames, JACK's largest) overruns nothing, and a short one loses nothing.
        let periods = [256, 8192, 64, 2048, 8192, 100, 1024]
        let total = periods.reduce(0, +)
        let rig = ProcessRig(inputChannels: 2, outputChannels: 4, maxFrames: 8192)
        let tap = rig.addTap(channels: [0, 1], capacityFrames: 2 * 48_000)
        let busTap = rig.addBusTap(.main, capacityFrames: 2 * 48_000)
        try rig.setMonitoring(
            MonitoringSetup(mainOutput: "pa", sources: [.input("deck", toMain: true)]), rampFrames: 0,
            inputs: ["deck": GroupLayout(flatBase: 0, channels: 2)],
            outputs: ["direct": GroupLayout(flatBase: 0, channels: 2), "pa": GroupLayout(flatBase: 2, channels: 2)])
        let player = rig.addPlayer(
            channels: 2, outputs: PlayerRoute.defaultRoutes(playerChannels: 2, groupChannels: 2),
            capacityFrames: total)
        var frames: [Float] = []
        for frame in 0..<total {
            let value = Float(frame + 1) / 65536
            frames += [value, -value]
        }
        #expect(player.write(frames) == total)
        player.finish()

        var played = 0
        for period in periods {
            rig.feedCounter(frames: period)
            let first = rig.counter - period
            rig.cycle(frames: period)
            let direct = UnsafeBufferPointer(start: rig.outputs[0], count: period)
            let main = UnsafeBufferPointer(start: rig.outputs[2], count: period)
            #expect(
                direct.indices.allSatisfy { direct[$0] == Float(played + $0 + 1) / 65536 }, "player, period \(period)")
            #expect(main.indices.allSatisfy { main[$0] == Float(first + $0 + 1) }, "main bus, period \(period)")
            played += period
            let meters = rig.memory.meter(input: 0).pointee.take()
            #expect(meters.frames == period && meters.peak == Float(rig.counter), "input meter, period \(period)")
        }
        #expect(player.framesPlayed == total && player.underruns == 0)
        for (name, capture) in [("input tap", tap), ("bus tap", busTap)] {
            #expect(capture.overruns == 0, "\(name)")
            let samples = capture.read(maxFrames: total)
            #expect(samples.count == 2 * total, "\(name): \(samples.count / 2) of \(total) frames")
            var whole = true
            for frame in 0..<(samples.count / 2) {
                let value = Float(frame + 1)
                if samples[2 * frame] != value || samples[2 * frame + 1] != -value { whole = false }
            }
            #expect(whole, "\(name): every frame in order")
        }
    }

    @Test("when the gap log is full, periods are dropped rather than logged out of order")
    func gapLogFull() {
        let rig = ProcessRig(inputChannels: 1, outputChannels: 0)
        let period = 16
        let tap = rig.addTap(channels: [0], capacityFrames: period)
        // Alternate: write a period, drop one, read; never drain the gap log.
        var delivered: [Float] = []
        for _ in 0..<100 {
            rig.feedCounter(frames: period)
            rig.cycle(frames: period)
            rig.feedCounter(frames: period)
            rig.cycle(frames: period)
            delivered += tap.read(maxFrames: period)
        }
        // 64 gaps logged, then the log was full: later periods were all dropped into one
        // pending gap, so nothing was delivered after the 65th period.
        let gaps = tap.drainGaps()
        #expect(gaps.count == 64)
        #expect(delivered.count == 65 * period)
        #expect(consistentWithGaps(delivered, gaps) == 0)
        // Once the log has room, the pending gap is logged before the next period.
        rig.feedCounter(frames: period)
        rig.cycle(frames: period)
        let late = tap.drainGaps()
        #expect(late.count == 1 && late.first?.position == 65 * period)
        let next = tap.read(maxFrames: period)
        let skipped = gaps.reduce(0) { $0 + $1.length } + (late.first?.length ?? 0)
        #expect(next.first == Float(65 * period + 1 + skipped))
    }

    /// How many delivered samples disagree with "value = stream position + 1", where the
    /// stream position counts the gap frames before each sample.
    private func consistentWithGaps(_ delivered: [Float], _ gaps: [CaptureGap]) -> Int {
        var gapFrames = 0
        var gapIndex = 0
        var mismatches = 0
        for (position, value) in delivered.enumerated() {
            while gapIndex < gaps.count && gaps[gapIndex].position <= position {
                gapFrames += gaps[gapIndex].length
                gapIndex += 1
            }
            if value != Float(position + 1 + gapFrames) { mismatches += 1 }
        }
        return mismatches
    }

    @Test("a gain ramp is linear, monotonic and lands exactly on its target")
    func gainRamp() {
        let rig = ProcessRig(inputChannels: 0, outputChannels: 1)
        let player = rig.addPlayer(
            channels: 1, outputs: [PlayerRoute(source: 0, destination: 0)], capacityFrames: 8192)
        _ = player.write([Float](repeating: 1, count: 8192))
        rig.cycle(frames: 256)
        #expect(rig.outputs[0][255] == 1)
        let target = AudioEngine.linearGain(decibels: -14)
        let ramp = 960
        player.voice.pointee.command.store(
            PlayerCommand(gain: target, rampFrames: ramp, paused: false).packed,
            ordering: .releasing)
        var samples: [Float] = []
        for _ in 0..<8 {
            rig.cycle(frames: 256)
            samples += UnsafeBufferPointer(start: rig.outputs[0], count: 256)
        }
        let increment = (1 - target) / Float(ramp)
        #expect(samples[ramp - 1] == target)
        #expect(samples[ramp..<2048].allSatisfy { $0 == target })
        var previous: Float = 1
        for sample in samples[0..<ramp] {
            #expect(sample <= previous)
            #expect(previous - sample <= increment * 1.001)
            previous = sample
        }
    }

    @Test("pausing fades out, then stops reading; playing resumes where it left off")
    func pauseAndResume() {
        let rig = ProcessRig(inputChannels: 0, outputChannels: 2)
        let player = rig.addPlayer(
            channels: 1, outputs: PlayerRoute.defaultRoutes(playerChannels: 1, groupChannels: 2),
            capacityFrames: 4096)
        _ = player.write([Float](repeating: 0.5, count: 4096))
        rig.cycle(frames: 256)
        #expect(player.state == .playing)
        #expect(rig.outputs[0][0] == 0.5 && rig.outputs[1][255] == 0.5)
        player.voice.pointee.command.store(
            PlayerCommand(gain: 1, rampFrames: 100, paused: true).packed, ordering: .releasing)
        rig.cycle(frames: 256)
        #expect(rig.outputs[0][99] == 0 && rig.outputs[0][50] > 0)
        let played = player.framesPlayed
        rig.cycle(frames: 256)
        #expect(player.state == .paused)
        #expect(player.framesPlayed == played, "a finished pause reads nothing")
        #expect(rig.outputs[0][0] == 0)
        player.voice.pointee.command.store(
            PlayerCommand(gain: 1, rampFrames: 0, paused: false).packed, ordering: .releasing)
        rig.cycle(frames: 256)
        #expect(rig.outputs[0][0] == 0.5)
        #expect(player.underruns == 0)
    }

    @Test("running dry counts an underrun, unless the feeder said it is finished")
    func underruns() {
        let rig = ProcessRig(inputChannels: 0, outputChannels: 1)
        let player = rig.addPlayer(
            channels: 1, outputs: [PlayerRoute(source: 0, destination: 0)], capacityFrames: 1024)
        _ = player.write([Float](repeating: 0.25, count: 300))
        rig.cycle(frames: 256)
        rig.cycle(frames: 256)
        #expect(player.underruns == 1 && player.underrunFrames == 212)
        #expect(rig.outputs[0][43] == 0.25 && rig.outputs[0][44] == 0)
        player.finish()
        rig.cycle(frames: 256)
        #expect(player.underruns == 1)
        #expect(player.state == .drained)
    }

    @Test("retired snapshots are freed only after the process thread has finished a cycle")
    func deadWood() {
        let rig = ProcessRig(inputChannels: 1, outputChannels: 1)
        let tap = rig.addTap(channels: [0], capacityFrames: 1024)
        #expect(rig.memory.deadWoodCount == 1)
        rig.cycle(frames: 64)
        #expect(rig.memory.collectDeadWood() == 0)
        rig.memory.publish(players: [], taps: [])
        #expect(rig.memory.deadWoodCount == 1)
        #expect(rig.memory.collectDeadWood() == 1, "no cycle has run since the swap")
        rig.cycle(frames: 64)
        #expect(rig.memory.collectDeadWood() == 0)
        _ = tap
    }

    @Test("meters: peak and RMS per channel, reset by reading")
    func meters() {
        let rig = ProcessRig(inputChannels: 1, outputChannels: 0)
        for frame in 0..<256 { rig.inputs[0][frame] = frame % 2 == 0 ? 0.5 : -0.5 }
        rig.cycle(frames: 256)
        let taken = rig.memory.meter(input: 0).pointee.take()
        #expect(taken.peak == 0.5 && taken.frames == 256)
        #expect(abs((taken.sumOfSquares / 256).squareRoot() - 0.5) < 1e-6)
        #expect(rig.memory.meter(input: 0).pointee.take().frames == 0)
    }

    @Test("a wide tap (interleaved 16 frames at a time) keeps every sample in place across periods and the wrap")
    func wideTapInterleaves() {
        let channels = 9
        let rig = ProcessRig(inputChannels: 11, outputChannels: 0, maxFrames: 300)
        // Every other input from 10 down: the tap's channel order is not the inputs'.
        let inputs = [10, 8, 6, 4, 2, 0, 1, 3, 5]
        let tap = rig.addTap(channels: inputs, capacityFrames: 1_000)
        var read: [Float] = []
        for period in [256, 37, 16, 300, 1, 255, 64, 300, 300, 17] {
            rig.feedCounter(frames: period)
            rig.cycle(frames: period)
            read += tap.read(maxFrames: tap.availableToRead)
        }
        #expect(tap.overruns == 0 && read.count == rig.counter * channels)
        var misplaced = 0
        for frame in 0..<rig.counter {
            for (channel, input) in inputs.enumerated() {
                let expected = (input % 2 == 0 ? 1 : -1) * Float(frame + 1)
                if read[frame * channels + channel] != expected { misplaced += 1 }
            }
        }
        #expect(misplaced == 0)
    }

    @Test("meters off: the cycle measures no input or output until they are on again")
    func metersOff() {
        let rig = ProcessRig(inputChannels: 2, outputChannels: 1)
        for frame in 0..<256 { rig.inputs[0][frame] = 0.25 }
        rig.memory.state.pointee.metersActive.store(false, ordering: .relaxed)
        rig.cycle(frames: 256)
        #expect(rig.memory.meter(input: 0).pointee.take().frames == 0)
        #expect(rig.memory.meter(output: 0).pointee.take().frames == 0)
        rig.memory.state.pointee.metersActive.store(true, ordering: .relaxed)
        rig.cycle(frames: 256)
        let taken = rig.memory.meter(input: 0).pointee.take()
        #expect(taken.peak == 0.25 && taken.frames == 256)
        #expect(rig.memory.meter(output: 0).pointee.take().frames == 256)
    }

    @Test("the process cycle makes no heap allocation (e)")
    func noAllocationsOnProcessPath() {
        // The counter itself works: deliberate allocations on this thread count.
        final class Box { var value = 1 }
        var keep: [Box] = []
        let control = AllocationCounter.counting {
            let pointer = UnsafeMutablePointer<Float>.allocate(capacity: 16)
            pointer.deallocate()
            keep.append(Box())
            let alias = keep[0]
            keep.append(alias)
        }
        #expect(control.allocations >= 3, "the counter must see allocations (\(control))")

        let rig = ProcessRig(inputChannels: 2, outputChannels: 2)
        let period = 256
        let tap = rig.addTap(channels: [0, 1], capacityFrames: 4 * period)
        let player = rig.addPlayer(
            channels: 2, outputs: PlayerRoute.defaultRoutes(playerChannels: 2, groupChannels: 2),
            capacityFrames: 8 * period)
        let mono = rig.addPlayer(
            channels: 1, outputs: PlayerRoute.defaultRoutes(playerChannels: 1, groupChannels: 2),
            capacityFrames: 8 * period)
        let feed = [Float](repeating: 0.25, count: 16 * period)
        let drain = UnsafeMutablePointer<Float>.allocate(capacity: 8 * period)
        defer { drain.deallocate() }
        let commands = [
            PlayerCommand(gain: 0.2, rampFrames: 960, paused: false).packed,
            PlayerCommand(gain: 1, rampFrames: 0, paused: false).packed,
            PlayerCommand(gain: 1, rampFrames: 100, paused: true).packed,
            PlayerCommand(gain: 0.5, rampFrames: 10, paused: false).packed,
        ]
        rig.feedCounter(frames: period)
        // Only plain pointers inside the counted loop: touching the handles (classes) from
        // unoptimised test code would itself retain and release (harmless, but noise).
        let state = rig.memory.state
        let stereo = player.voice
        let monoVoice = mono.voice
        let tapState = tap.state
        let counts = feed.withUnsafeBufferPointer { source in
            let samples = source.baseAddress!
            return AllocationCounter.counting {
                for round in 0..<4000 {
                    // Control, feeder and archiver work interleaved (no allocation either), so
                    // every branch runs: ramps, pauses, underruns, full rings and gaps.
                    if round % 50 == 0 {
                        stereo.pointee.command.store(
                            commands[(round / 50) % 4], ordering: .releasing)
                        tapState.pointee.zeroed.store(round % 100 == 0, ordering: .relaxed)
                    }
                    if round % 3 != 0 {
                        _ = stereo.pointee.ring.write(from: samples, frames: period)
                    }
                    if round % 5 != 0 {
                        _ = monoVoice.pointee.ring.write(from: samples, frames: period)
                    }
                    if round % 7 < 3 {
                        _ = tapState.pointee.ring.read(into: drain, frames: 8 * period)
                    }
                    if round % 11 == 0 { _ = tapState.pointee.gaps.pop() }
                    runCycle(
                        state, frames: period, frameTime: UInt32(truncatingIfNeeded: round * period)
                    )
                }
            }
        }
        #expect(counts.allocations == 0, "\(counts)")
        #expect(
            tap.overruns > 0 && player.underruns > 0,
            "the run must have exercised gaps and underruns")
    }
}

// The far-end reference of a processed capture: what the process cycle wrote to the output
// buffers, captured in the same periods as the input it goes with.

import Testing

@testable import AudioEngine

@Suite("Reference taps (no server)")
struct ReferenceTapTests {
    @Test("a reference tap holds the period's output as the players wrote it, frame for frame with its input tap")
    func referenceMatchesOutputAndInput() throws {
        let rig = ProcessRig(inputChannels: 1, outputChannels: 2)
        let tap = rig.addProcessedTap(channels: [0], referenceOutputs: [0, 1], capacityFrames: 4096)
        let reference = try #require(tap.reference)
        let player = rig.addPlayer(
            channels: 2, outputs: PlayerRoute.defaultRoutes(playerChannels: 2, groupChannels: 2),
            capacityFrames: 4096)
        var played: [Float] = []
        for frame in 0..<2048 { played += [Float(frame + 1) / 8192, -Float(frame + 1) / 8192] }
        #expect(player.write(played) == 2048)
        var expectedOutput: [Float] = []
        for period in [256, 100, 512, 256] {
            rig.feedCounter(frames: period)
            rig.cycle(frames: period)
            // What the loudspeakers got this period: the reference must hold exactly that.
            for frame in 0..<period { expectedOutput += [rig.outputs[0][frame], rig.outputs[1][frame]] }
        }
        let total = 256 + 100 + 512 + 256
        #expect(tap.availableToRead == total && reference.availableToRead == total)
        #expect(reference.read(maxFrames: total) == expectedOutput)
        let first: [Float] = [1 / 8192, -1 / 8192, 2 / 8192, -2 / 8192]
        #expect(Array(expectedOutput.prefix(4)) == first)
        // The input tap's frame k is the counter's frame k: the two rings start on the same period.
        let input = tap.read(maxFrames: total)
        #expect(input == (0..<total).map { Float($0 + 1) })
        #expect(reference.isReference && !tap.isReference && reference.inputGroup == "out")
    }

    @Test("a tap without a reference has none, and the reference rings stay out of the graph")
    func plainTapHasNoReference() {
        let rig = ProcessRig(inputChannels: 1, outputChannels: 1)
        let tap = rig.addTap(channels: [0], capacityFrames: 1024)
        rig.feedCounter(frames: 64)
        rig.cycle(frames: 64)
        #expect(tap.reference == nil && rig.memory.graph.referenceTaps.isEmpty && tap.availableToRead == 64)
    }
}

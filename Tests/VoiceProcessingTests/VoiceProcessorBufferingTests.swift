// VoiceProcessor's framing: blocks of any size become the library's 10 ms chunks and come back
// as the same frames a fixed number of frames later.

import TestSupport
import Testing
import VoiceProcessing

@Suite("VoiceProcessor: blocks of any size, a fixed latency, bounds where sizes enter")
struct VoiceProcessorBufferingTests {
    /// With nothing switched on the library passes samples through, so the output must be the
    /// input exactly `latencyFrames` later, whatever the block size.
    @Test(
        "unprocessed frames come back exactly latencyFrames later",
        arguments: [
            (period: 64, granularity: 64, latency: 448), (period: 480, granularity: 480, latency: 0),
            (period: 1_024, granularity: 1_024, latency: 448), (period: 1_000, granularity: 1, latency: 479),
            (period: 4_800, granularity: 4_800, latency: 0), (period: 300, granularity: 300, latency: 420),
        ])
    func exactDelay(period: Int, granularity: Int, latency: Int) throws {
        let channels = 2
        let processor = try VoiceProcessor(
            sampleRate: 48_000, captureChannels: channels, referenceChannels: 1, features: [],
            blockGranularity: granularity)
        #expect(processor.chunkFrames == 480)
        #expect(processor.latencyFrames == latency)
        #expect(processor.processingDelayFrames == 0, "the library delays nothing it does not process")
        var random = SplitMix64(seed: UInt64(period))
        // Values the library's float → 16-bit-scale → float round trip keeps exactly.
        let frames = 12_000
        let input = (0..<frames * channels).map { _ in Float(random.below(65_535) - 32_767) / 32_768 }
        var output: [Float] = []
        var reference = [Float](repeating: 0.25, count: period)
        var position = 0
        while position + period <= frames {
            var block = Array(input[(position * channels)..<((position + period) * channels)])
            try block.withUnsafeMutableBufferPointer { capture in
                try reference.withUnsafeMutableBufferPointer { reference in
                    try processor.process(capture: capture, reference: UnsafeBufferPointer(reference), frames: period)
                }
            }
            output += block
            position += period
        }
        #expect(output[0..<(latency * channels)].allSatisfy { $0 == 0 }, "the first latencyFrames are silence")
        // The library scales floats to 16-bit range and back: equal to within rounding.
        var mismatches = 0
        var largest: Float = 0
        for index in (latency * channels)..<output.count {
            let difference = abs(output[index] - input[index - latency * channels])
            largest = max(largest, difference)
            if difference > 1e-6 { mismatches += 1 }
        }
        print("period \(period): largest difference \(largest)")
        #expect(mismatches == 0, "\(mismatches) samples differ from the input \(latency) frames earlier")
        #expect(processor.chunksProcessed == position / 480)
    }

    /// The processor is made for a worker that must keep up with the engine: once made, a block
    /// costs no heap allocation, neither in the framing nor in the library (its C++ `new` goes
    /// through malloc, which the counter sees in every loaded object).
    @Test("process allocates nothing after init, the library included", arguments: [1_024, 64, 1_000])
    func noAllocationPerBlock(period: Int) throws {
        let processor = try VoiceProcessor(
            sampleRate: 48_000, captureChannels: 2, referenceChannels: 2, features: .voiceChat,
            blockGranularity: period == 1_000 ? 1 : period)
        processor.echoPathDelayMilliseconds = 20
        var random = SplitMix64(seed: 7)
        var capture = (0..<period * 2).map { _ in Float(random.below(2_000) - 1_000) / 10_000 }
        let reference = (0..<period * 2).map { _ in Float(random.below(2_000) - 1_000) / 10_000 }
        var failure: VoiceProcessingError?
        try capture.withUnsafeMutableBufferPointer { capture in
            try reference.withUnsafeBufferPointer { reference in
                // The first chunks may set up what the library makes lazily; then none may.
                for _ in 0..<8 { try processor.process(capture: capture, reference: reference, frames: period) }
                let counts = AllocationCounter.counting {
                    for _ in 0..<50 {
                        do throws(VoiceProcessingError) {
                            try processor.process(capture: capture, reference: reference, frames: period)
                        } catch {
                            failure = error
                        }
                    }
                }
                #expect(counts.allocations == 0, "\(counts) in 50 blocks of \(period) frames")
            }
        }
        #expect(failure == nil)
        #expect(processor.chunksProcessed >= 50 * period / processor.chunkFrames)
    }

    /// JACK servers run at 44.1, 88.2, 96 and 192 kHz too: SpeexDSP takes any rate in chunks of
    /// the power of two nearest 10 ms, and the added latency (framing and the preprocessor's
    /// window, measured) stays under 30 ms.
    @Test(
        "every rate from 8 to 192 kHz processes, in power-of-two chunks near 10 ms, at an added latency under 30 ms",
        arguments: [8_000, 16_000, 44_100, 96_000, 192_000])
    func everyRate(rate: Int) throws {
        let processor = try VoiceProcessor(
            sampleRate: rate, captureChannels: 1, referenceChannels: 1, features: .voiceChat, blockGranularity: 256)
        let chunkSeconds = Double(processor.chunkFrames) / Double(rate)
        #expect(processor.chunkFrames & (processor.chunkFrames - 1) == 0, "\(processor.chunkFrames) frames")
        #expect(chunkSeconds > 0.007 && chunkSeconds < 0.015, "a chunk of \(chunkSeconds) s")
        #expect(processor.processingDelayFrames > 0)
        #expect(processor.latencySeconds > 0.005 && processor.latencySeconds < 0.03, "\(processor.latencySeconds) s")
        var capture = [Float](repeating: 0.01, count: 256)
        let reference = [Float](repeating: 0.01, count: 256)
        try capture.withUnsafeMutableBufferPointer { capture in
            try reference.withUnsafeBufferPointer { reference in
                for _ in 0..<20 { try processor.process(capture: capture, reference: reference, frames: 256) }
            }
        }
        #expect(processor.chunksProcessed == 20 * 256 / processor.chunkFrames)
    }

    @Test("sizes out of bounds are named errors that say what to do")
    func bounds() {
        for (rate, channels, granularity, code) in [
            (4_000, 1, 1, VoiceProcessingError.Code.badSampleRate), (384_000, 1, 1, .badSampleRate),
            (48_000, 0, 1, .badNumberOfChannels), (48_000, 9, 1, .badNumberOfChannels), (48_000, 1, 0, .badParameter),
        ] {
            #expect {
                _ = try VoiceProcessor(
                    sampleRate: rate, captureChannels: channels, referenceChannels: 1, features: .voiceChat,
                    blockGranularity: granularity)
            } throws: { error in
                (error as? VoiceProcessingError)?.code == code && !"\(error)".isEmpty
            }
        }
    }
}

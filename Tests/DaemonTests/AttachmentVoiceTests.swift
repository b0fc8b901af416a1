// An attached application's processed capture without a server: the worker reads the capture
// and reference taps by their timelines (a period the capture tap dropped is silence of its
// length, so the processed stream keeps one frame per frame of the graph and the app's delay
// stays fixed) and writes every frame into the ring the process callback reads.
import Glibc
import SessionPolicy
import SystemSupport
import Testing

@testable import AudioEngine
@testable import Daemon

@Suite("attached applications' processed capture (no server)")
struct AttachmentVoiceTests {
    /// A capture tap over input channel 0 with its reference tap over output channel 0, fed a
    /// period at a time as the process callback feeds them (reference first): input frame k is
    /// k + 1, the reference its negative.
    final class Feeder {
        let tap: CaptureTap
        let reference: CaptureTap
        let period: Int
        private(set) var periods = 0
        private let input: UnsafeMutablePointer<Float>
        private let output: UnsafeMutablePointer<Float>
        private let inputs = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 1)
        private let outputs = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 1)

        init(capacity: Int, period: Int) {
            self.period = period
            reference = CaptureTap(
                inputGroup: "out", flatInputChannels: [0], capacityFrames: 2 * capacity, zeroed: false,
                isReference: true)
            tap = CaptureTap(
                inputGroup: "in", flatInputChannels: [0], capacityFrames: capacity, zeroed: false,
                reference: reference)
            input = .allocate(capacity: period)
            output = .allocate(capacity: period)
            inputs[0] = input
            outputs[0] = output
        }

        deinit {
            input.deallocate()
            output.deallocate()
            inputs.deallocate()
            outputs.deallocate()
        }

        func feed(_ count: Int) {
            for _ in 0..<count {
                for frame in 0..<period {
                    input[frame] = Float(periods * period + frame + 1)
                    output[frame] = -input[frame]
                }
                let time = UInt32(periods * period)
                reference.state.pointee.capture(frames: period, frameTime: time, inputs: outputs)
                tap.state.pointee.capture(frames: period, frameTime: time, inputs: inputs)
                periods += 1
            }
        }
    }

    @Test("an overrun of the capture tap reads as silence of its length, in step with the reference")
    func overrunIsSilence() {
        // A 512-frame ring and four 256-frame periods unread: the last two are dropped; the gap
        // is logged with the next period that fits.
        let feeder = Feeder(capacity: 512, period: 256)
        feeder.feed(4)
        #expect(feeder.tap.overruns == 2 && feeder.tap.droppedFrames == 512)
        var capture = TimelineReader(tap: feeder.tap)
        var reference = TimelineReader(tap: feeder.reference)
        var near = [Float](repeating: 7, count: 1280)
        var far = [Float](repeating: 7, count: 1280)
        capture.collectGaps()
        reference.collectGaps()
        #expect(capture.available == 512 && reference.available == 1024)
        // In reads of uneven size, across the gap.
        near.withUnsafeMutableBufferPointer { capture.read(into: $0, frames: 300) }
        near.withUnsafeMutableBufferPointer {
            capture.read(into: UnsafeMutableBufferPointer(rebasing: $0[300...]), frames: 212)
        }
        far.withUnsafeMutableBufferPointer { reference.read(into: $0, frames: 512) }
        feeder.feed(1)
        capture.collectGaps()
        reference.collectGaps()
        #expect(capture.available == 768 && reference.available == 768, "the gap's 512 frames and the new period")
        near.withUnsafeMutableBufferPointer {
            capture.read(into: UnsafeMutableBufferPointer(rebasing: $0[512...]), frames: 768)
        }
        far.withUnsafeMutableBufferPointer {
            reference.read(into: UnsafeMutableBufferPointer(rebasing: $0[512...]), frames: 768)
        }
        #expect(Array(near[..<512]) == (0..<512).map { Float($0 + 1) })
        #expect(near[512..<1024].allSatisfy { $0 == 0 }, "the dropped periods are silence")
        #expect(Array(near[1024...]) == (1024..<1280).map { Float($0 + 1) }, "then the next period, in its place")
        #expect(far == (0..<1280).map { -Float($0 + 1) }, "the reference keeps every period")
        #expect(capture.available == 0 && reference.available == 0)
    }

    @Test("the worker writes one processed frame per frame of the graph, an overrun's included, after the slack")
    func workerKeepsTheTimeline() throws {
        let feeder = Feeder(capacity: 512, period: 256)
        feeder.feed(4)
        let processed = ProcessedCapture(tap: feeder.tap, portChannels: [0], slackFrames: 256)
        let voice = AttachmentVoice(
            processed: processed, processing: .echoCancellation, echoSuppression: VoiceSection().echoSuppression,
            sampleRate: 48_000, periodFrames: 256, echoPathDelayMilliseconds: nil)
        defer { voice.stop(wait: true) }
        let ring = processed.state.pointee.ring
        func settle(at frames: Int) -> Int {
            var written = ring.framesWritten()
            for _ in 0..<200 where written < frames {
                usleep(10_000)
                written = ring.framesWritten()
            }
            usleep(50_000)
            return ring.framesWritten()
        }
        #expect(settle(at: 256 + 512) == 256 + 512, "the slack and what the tap held")
        // The worker read the ring empty; the next period logs the overrun of the two before it.
        feeder.feed(1)
        #expect(settle(at: 256 + 1280) == 256 + 1280, "the dropped two as silence, and the new one")
        let latency = try #require(voice.latencySeconds)
        // Echo cancellation alone at 48 kHz: 479 frames of framing, the library's delay, and the slack.
        #expect(latency > Double(479 + 256) / 48_000 && latency < 0.05, "\(latency) s")
        voice.stop(wait: true)
        feeder.feed(1)
        usleep(50_000)
        #expect(ring.framesWritten() == 256 + 1280, "stopped: nothing more")
    }
}

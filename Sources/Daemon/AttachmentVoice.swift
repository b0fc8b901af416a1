// An attached application's processed capture: a worker thread runs the voice processor over
// the attachment's capture tap against its reference tap (what recd wrote to the session's route
// output in the same periods) and writes the processed frames into the ring the process callback
// reads into the app's capture ports at a fixed delay (docs/voice-processing.md, "Attached
// applications").
//
// Threads: the control thread makes, asks and stops it; `Job` is the worker thread's alone.
import AudioEngine
import Dispatch
import Platform
import SessionPolicy
import Synchronization
import SystemSupport
import VoiceProcessing

/// One processed attachment's worker ("attach voice"): one thread per processed attachment, as
/// each recorder has its archiver. Attachments are few (an app or two in a call), each has its
/// own period deadline and its own processor, and a thread per attachment starts and stops with
/// its processing without touching any other's: a shared worker would make every call wait for
/// the slowest processor and need its own bookkeeping of who joins and leaves.
///
/// The worker wakes once a period, just after the period's frames should be in the tap (from the
/// tap's clock stamp: JACK's monotonic microseconds of the latest cycle), processes what came,
/// and writes it into the `ProcessedCapture`'s ring; it has one period (the ring's slack) before
/// the process callback wants it. Its processor is made on the worker at start (its init
/// measures the library's delay, ~10 ms of CPU the control thread does not spend): the frames
/// the app gets meanwhile are the ring's slack and the processor's latency, silence anyway.
///
/// The capture and the reference are read in step by their timelines: a period the tap dropped
/// (an overrun: the worker more than a second late) is silence of its length in that stream, so
/// the processed stream keeps one frame per frame of the graph and the delay stays fixed. (A
/// recorder's `VoiceCaptureSource` instead leaves a capture gap a gap in the file.) Clock stalls
/// are time in which no cycle ran, neither for the taps nor for the ring: nothing to fill.
final class AttachmentVoice: @unchecked Sendable {
    // @unchecked: the control thread alone touches `thread`; the rest is immutable or atomic.

    let processed: ProcessedCapture
    let processing: CaptureProcessing
    let sampleRate: Int
    private let shared: Shared
    private var thread: NamedThread?

    /// Control thread. `echoPathDelayMilliseconds`: JACK's playback plus capture latency of the
    /// output and input groups; nil when JACK knows neither (the processor finds it itself).
    init(
        processed: ProcessedCapture, processing: CaptureProcessing, echoSuppression: EchoSuppressionSetting,
        sampleRate: Int, periodFrames: Int, echoPathDelayMilliseconds: Int?
    ) {
        self.processed = processed
        self.processing = processing
        self.sampleRate = sampleRate
        shared = Shared(periodFrames: periodFrames)
        let job = Job(
            processed: processed, sampleRate: sampleRate,
            features: VoiceProcessingFeatures(
                processing, echoPathKnown: echoPathDelayMilliseconds != nil, suppression: echoSuppression),
            echoPathDelayMilliseconds: echoPathDelayMilliseconds ?? 0, shared: shared)
        do {
            thread = try NamedThread(name: "attach voice") { job.run() }
        } catch {
            // No thread: the app gets silence (the ring's underruns) rather than the raw echo.
            Log.error("no thread for an attached application's voice processing: \(error)")
        }
    }

    deinit { stop() }

    /// Control thread: the server's period now (the worker's wake-up schedule).
    func setPeriod(frames: Int) { shared.periodFrames.store(max(frames, 1), ordering: .relaxed) }

    /// Control thread: asks the worker to end and returns at once: it is woken and ends after the
    /// block it is processing (or, at its start, after making its processor: ~10 ms), so the
    /// control thread does not wait for it. Not joined, its thread is detached and cleans up
    /// as it returns; what it still holds (the `ProcessedCapture`, already out of the graph) is
    /// freed with it. `wait`: wait for it (tests).
    func stop(wait: Bool = false) {
        guard let running = thread else { return }
        shared.stopRequested.store(true, ordering: .releasing)
        shared.wake.signal()
        if wait { running.join() }
        thread = nil
    }

    /// Any thread: the delay the app's capture has beyond the raw input's: the processing's
    /// latency plus the ring's slack, in seconds; nil until the processor is made.
    var latencySeconds: Double? {
        let frames = shared.processorLatency.load(ordering: .acquiring)
        guard frames >= 0 else { return nil }
        return Double(frames + processed.slackFrames) / Double(sampleRate)
    }

    /// Any thread: periods the app got silence for because the worker was late.
    var underruns: Int { processed.underruns }

    /// What the worker and the control thread share.
    private final class Shared: Sendable {
        let stopRequested = Atomic<Bool>(false)
        let periodFrames: Atomic<Int>
        /// Frames the processor adds (framing plus the library's delay); -1 until it is made, 0
        /// when it could not be (the capture is then passed on unprocessed).
        let processorLatency = Atomic<Int>(-1)
        /// Cuts a sleep short (`stop`).
        let wake = DispatchSemaphore(value: 0)

        init(periodFrames: Int) { self.periodFrames = Atomic(max(periodFrames, 1)) }
    }

    /// The worker thread's state.
    private final class Job: @unchecked Sendable {
        // @unchecked: handed to the worker thread at start and used by it alone.
        let processed: ProcessedCapture
        let sampleRate: Int
        let features: VoiceProcessingFeatures
        let echoPathDelayMilliseconds: Int
        let shared: Shared
        var capture: TimelineReader
        var reference: TimelineReader
        /// Frames per processing call: the longest period JACK allows.
        let blockFrames = 8_192
        var captureBlock: [Float]
        var referenceBlock: [Float]
        var processingErrors = 0

        init(
            processed: ProcessedCapture, sampleRate: Int, features: VoiceProcessingFeatures,
            echoPathDelayMilliseconds: Int, shared: Shared
        ) {
            self.processed = processed
            self.sampleRate = sampleRate
            self.features = features
            self.echoPathDelayMilliseconds = echoPathDelayMilliseconds
            self.shared = shared
            let far = processed.tap.reference ?? processed.tap
            capture = TimelineReader(tap: processed.tap)
            reference = TimelineReader(tap: far)
            captureBlock = [Float](repeating: 0, count: blockFrames * processed.channels)
            referenceBlock = [Float](repeating: 0, count: blockFrames * far.channels)
        }

        func run() {
            let processor = makeProcessor()
            while !shared.stopRequested.load(ordering: .acquiring) {
                let moved = pump(processor)
                if moved == 0 && processed.tap.isRetired && processed.tap.availableToRead == 0 { return }
                _ = shared.wake.wait(timeout: .now() + nextWait(moved: moved))
            }
        }

        /// The processor for this rate, channels and features; nil (the capture passed on as it
        /// came, never nothing) when the library refuses them, with an error in the log.
        private func makeProcessor() -> VoiceProcessor? {
            do {
                let made = try VoiceProcessor(
                    sampleRate: sampleRate, captureChannels: processed.channels,
                    referenceChannels: reference.tap.channels, features: features)
                made.echoPathDelayMilliseconds = echoPathDelayMilliseconds
                shared.processorLatency.store(made.latencyFrames + made.processingDelayFrames, ordering: .releasing)
                return made
            } catch {
                shared.processorLatency.store(0, ordering: .releasing)
                Log.error(
                    "voice processing of an attached application's capture could not start: \(error); it gets the "
                        + "input unprocessed")
                return nil
            }
        }

        /// Processes every frame both taps hold into the ring (as far as it has room); returns
        /// how many frames.
        private func pump(_ processor: VoiceProcessor?) -> Int {
            capture.collectGaps()
            reference.collectGaps()
            var moved = 0
            while true {
                let frames = min(capture.available, reference.available, blockFrames, processed.writableFrames)
                guard frames > 0 else { break }
                captureBlock.withUnsafeMutableBufferPointer { capture.read(into: $0, frames: frames) }
                referenceBlock.withUnsafeMutableBufferPointer { reference.read(into: $0, frames: frames) }
                if let processor {
                    do {
                        try captureBlock.withUnsafeMutableBufferPointer { near in
                            try referenceBlock.withUnsafeBufferPointer { far in
                                try processor.process(capture: near, reference: far, frames: frames)
                            }
                        }
                    } catch {
                        // The processor wrote silence for what the library refused: said once, counted.
                        processingErrors += 1
                        if processingErrors == 1 { Log.warning("voice processing failed on a chunk: \(error)") }
                    }
                }
                let written = captureBlock.withUnsafeBufferPointer {
                    processed.write(from: $0.baseAddress!, frames: frames)
                }
                moved += written
            }
            return moved
        }

        /// Seconds to sleep: until just after the next period should be in the tap (the tap's
        /// latest cycle on JACK's monotonic clock plus a period), or an eighth of a period when
        /// that moment is past and nothing came.
        private func nextWait(moved: Int) -> Double {
            let period = Double(shared.periodFrames.load(ordering: .relaxed)) / Double(sampleRate)
            let margin = min(0.002, period / 4)
            var wait = period / 8
            if moved > 0, let stamp = processed.tap.clockStamp {
                let due = Double(stamp.micros) / 1e6 + period + margin - SystemClock.monotonicSeconds()
                // A stamp off JACK's clock by more than two periods is not one to plan by.
                if due > 0 && due < 2 * period { wait = due }
            }
            return min(max(wait, 0.000_5), 0.05)
        }
    }
}

/// One tap read as its timeline: the frames the process thread delivered, with a period it
/// dropped (an overrun) read as silence of its length, so two taps written in the same cycles
/// stay in step however late their reader is. Worker thread.
struct TimelineReader {
    let tap: CaptureTap
    /// Overruns not yet reached: delivered position and length.
    private var overruns: [(position: Int, length: Int)] = []
    /// Silence still to give at the current position (an overrun reached).
    private var silence = 0

    init(tap: CaptureTap) { self.tap = tap }

    /// Takes the tap's new gaps (a gap is logged before any frame after it is readable).
    mutating func collectGaps() {
        for gap in tap.drainGaps() where gap.cause == .overrun { overruns.append((gap.position, gap.length)) }
    }

    /// Frames ready: the readable ones and the silence of every overrun before them.
    var available: Int { tap.availableToRead + silence + overruns.reduce(0) { $0 + $1.length } }

    /// Reads `frames` (at most `available`) interleaved frames into `buffer`.
    mutating func read(into buffer: UnsafeMutableBufferPointer<Float>, frames: Int) {
        let channels = tap.channels
        var done = 0
        while done < frames {
            if silence == 0, let next = overruns.first, next.position <= tap.readPosition {
                overruns.removeFirst()
                silence = next.length
            }
            let rest = UnsafeMutableBufferPointer(rebasing: buffer[(done * channels)...])
            if silence > 0 {
                let count = min(silence, frames - done)
                rest.baseAddress!.update(repeating: 0, count: count * channels)
                silence -= count
                done += count
                continue
            }
            var count = frames - done
            if let next = overruns.first { count = min(count, next.position - tap.readPosition) }
            let got = tap.read(into: UnsafeMutableBufferPointer(rebasing: rest[..<(count * channels)]))
            if got == 0 { break }
            done += got
        }
    }
}

extension VoiceProcessingFeatures {
    /// What a session's `CaptureProcessing` asks of the processor: voiceChat's whole chain, or
    /// echo cancellation alone; finding the echo path itself when JACK reports no latency.
    init(_ processing: CaptureProcessing, echoPathKnown: Bool, suppression: EchoSuppressionSetting) {
        self = processing == .voice ? .voiceChat : .echoCancellationOnly
        if !echoPathKnown { formUnion([.delayAgnostic, .extendedFilter]) }
        switch suppression {
        case .low: formUnion(.suppressionLow)
        case .moderate: break
        case .high: formUnion(.suppressionHigh)
        }
    }
}

// A processed recording's samples: the capture tap's frames run through the voice processor
// against the reference tap's (what recd wrote to the session's route output in the same
// periods), on the recorder's archiver thread, never in the process callback
// (docs/voice-processing.md, "Wiring into the daemon").
//
// Threads: the archiver thread, except where a member says otherwise.
import Archive
import AudioEngine
import SessionPolicy
import Synchronization
import SystemSupport
import VoiceProcessing

/// The archive's sample source for a session whose capture is processed (voiceChat and
/// videoChat; `CaptureProcessing`): the capture's `TapSource` (start time, gaps, a stop while
/// stalled: as for any recording) and its reference tap, through a `VoiceProcessor`.
///
/// The processor is made on the archiver thread at the first read: its init measures the
/// library's delay (about 10 ms of CPU the control thread does not spend). Its block
/// granularity is 1 frame: reads come in whatever sizes the ring and the archiver give, and a
/// period change needs no new processor; that costs `gcd`'s saving of 31 frames (0.6 ms at
/// 48 kHz) over the period's granularity.
///
/// Output frame k is capture frame k − `latencyFrames`, processed: the stream begins that many
/// frames earlier (`startTime` moved back by them), a capture gap is that much later in it, and
/// once the tap has retired the processor is flushed with silence so that the last captured
/// frame is in the file too (the file is `latencyFrames` longer than the capture). A gap does
/// not reset the processor: the frames it holds are captured samples, kept.
///
/// A source that continues a stream (`continuing`: a route or processing change started it
/// where the previous segment ended) leaves the processor's first `latencyFrames` out instead
/// (silence from before its first captured frame): its start time is the capture's, so the
/// new segment begins where the last one ended, not that much before it.
///
/// The two taps' streams are aligned by their timelines: an overrun of the capture (its frames
/// dropped, the reference's not: its ring is twice as long) skips the reference's frames of
/// that time; an overrun of the reference gives silence as the far end for the frames it lost.
/// Clock stalls are logged alike in both taps and move neither.
final class VoiceCaptureSource: SampleSource, @unchecked Sendable {
    // @unchecked: after the recorder starts, the mutable state below is the archiver thread's
    // alone; `latency` is an atomic any thread may read.

    let capture: TapSource
    /// The reference tap, aligned with the capture.
    let farEnd: FarEnd
    let features: VoiceProcessingFeatures
    let sampleRate: Int
    /// The echo path's delay JACK reports (playback plus capture latency), in ms; nil when JACK
    /// knows neither: the processor then finds it itself (`.delayAgnostic`, `.extendedFilter`).
    let echoPathDelayMilliseconds: Int?

    /// Frames the processing adds (framing plus the library's delay); -1 until the processor is
    /// made, 0 when it could not be (the capture is then recorded as it came).
    private let latency = Atomic<Int>(-1)

    private var processor: VoiceProcessor?
    private var processorFailed = false
    private var processingErrors = 0
    /// Capture frames read but not yet processed, waiting for their reference (interleaved).
    private var held: [Float] = []
    private var heldFrames = 0
    /// The capture's delivered position of the first held frame.
    private var captureConsumed = 0
    /// The capture's overruns not yet passed (delivered positions), and the frames of those passed.
    private var captureShifts: [SourceGap] = []
    private var captureDropped = 0
    /// The capture's gaps moved to the output's positions, to hand on.
    private var gapsOut: [SourceGap] = []
    /// Frames of silence still to push through to flush the processor after the last frame.
    private var flushRemaining: Int?
    /// It continues a stream: its output starts at the capture's first frame.
    let continuing: Bool
    /// The processor's first frames still to leave out (`continuing`).
    private var leadingToDrop = 0

    /// Control thread: `capture` over the tap whose `reference` is given.
    init(
        capture: TapSource, reference: CaptureTap, processing: CaptureProcessing,
        echoSuppression: EchoSuppressionSetting, sampleRate: Int, echoPathDelayMilliseconds: Int?,
        continuing: Bool = false
    ) {
        self.continuing = continuing
        self.capture = capture
        farEnd = FarEnd(reference)
        self.sampleRate = sampleRate
        self.echoPathDelayMilliseconds = echoPathDelayMilliseconds
        features = VoiceProcessingFeatures(
            processing, echoPathKnown: echoPathDelayMilliseconds != nil, suppression: echoSuppression)
    }

    /// Any thread: the added latency in seconds, once the processor is made.
    var latencySeconds: Double? {
        let frames = latency.load(ordering: .acquiring)
        return frames < 0 ? nil : Double(frames) / Double(sampleRate)
    }

    private var latencyFrames: Int { max(latency.load(ordering: .relaxed), 0) }
    /// Where a capture frame lands in the output: `latencyFrames` later, or at its own position
    /// when the processor's first frames are left out.
    private var outputShift: Int { continuing ? 0 : latencyFrames }

    var channels: Int { capture.channels }

    /// The capture's start, moved back by the processing's latency (nil until both are known);
    /// a continuing source's is the capture's own.
    var startTime: UTCTime? {
        let frames = latency.load(ordering: .acquiring)
        guard frames >= 0, let start = capture.startTime else { return nil }
        return start.advanced(byFrames: continuing ? 0 : -frames, sampleRate: sampleRate)
    }

    var producerRetired: Bool { capture.producerRetired }
    func clockStamp() -> ClockStamp? { capture.clockStamp() }
    func wallClockOffset() -> Int64? { capture.wallClockOffset() }
    func trailingStallFrames() -> Int? { capture.trailingStallFrames() }

    func drainGaps() -> [SourceGap] {
        defer { gapsOut.removeAll(keepingCapacity: true) }
        return gapsOut
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        var frames = readProcessed(into: buffer)
        while leadingToDrop > 0 && frames > 0, let base = buffer.baseAddress {
            let dropped = min(leadingToDrop, frames)
            base.update(from: base + dropped * channels, count: (frames - dropped) * channels)
            leadingToDrop -= dropped
            frames -= dropped
            if frames == 0 { frames = readProcessed(into: buffer) }
        }
        return frames
    }

    private func readProcessed(into buffer: UnsafeMutableBufferPointer<Float>) -> Int {
        let maxFrames = buffer.count / channels
        guard maxFrames > 0, let base = buffer.baseAddress else { return 0 }
        if processor == nil && !processorFailed { makeProcessor(blockFrames: maxFrames) }
        guard let processor else {
            // No processor: the capture as it came, rather than nothing.
            let frames = capture.read(into: buffer)
            gapsOut += capture.drainGaps()
            return frames
        }
        if let remaining = flushRemaining {
            return flush(into: base, maxFrames: maxFrames, remaining: remaining, processor)
        }
        let room = min(maxFrames, held.count / channels) - heldFrames
        if room > 0 {
            let slots = heldFrames * channels..<(heldFrames + room) * channels
            heldFrames += held.withUnsafeMutableBufferPointer { all in
                capture.read(into: UnsafeMutableBufferPointer(rebasing: all[slots]))
            }
        }
        for gap in capture.drainGaps() {
            gapsOut.append(SourceGap(position: gap.position + outputShift, length: gap.length, cause: gap.cause))
            if gap.cause == .overrun { captureShifts.append(gap) }
        }
        farEnd.drainGaps()
        let done = process(into: base, maxFrames: maxFrames, processor)
        if done == 0 && heldFrames == 0 && capture.exhausted {
            // The last frame is in: push the frames the processor holds out with silence.
            flushRemaining = latencyFrames
            return flush(into: base, maxFrames: maxFrames, remaining: latencyFrames, processor)
        }
        return done
    }

    /// Makes the processor for this rate, channels and features; on failure the capture is
    /// recorded unprocessed (never nothing) and the log says why.
    private func makeProcessor(blockFrames: Int) {
        do {
            let made = try VoiceProcessor(
                sampleRate: sampleRate, captureChannels: channels, referenceChannels: farEnd.channels,
                features: features)
            made.echoPathDelayMilliseconds = echoPathDelayMilliseconds ?? 0
            processor = made
            held = [Float](repeating: 0, count: blockFrames * channels)
            farEnd.allocate(frames: blockFrames)
            if continuing { leadingToDrop = made.latencyFrames + made.processingDelayFrames }
            latency.store(made.latencyFrames + made.processingDelayFrames, ordering: .releasing)
        } catch {
            processorFailed = true
            latency.store(0, ordering: .releasing)
            Log.error(
                "voice processing against \(farEnd.tap.inputGroup) could not start: \(error); the capture is "
                    + "recorded unprocessed")
        }
    }

    /// Processes the held frames whose reference is there into `base`; returns how many.
    private func process(into base: UnsafeMutablePointer<Float>, maxFrames: Int, _ processor: VoiceProcessor) -> Int {
        var done = 0
        while done < min(heldFrames, maxFrames) {
            while let gap = captureShifts.first, gap.position <= captureConsumed {
                captureShifts.removeFirst()
                captureDropped += gap.length
            }
            var piece = min(heldFrames, maxFrames) - done
            if let next = captureShifts.first { piece = min(piece, next.position - captureConsumed) }
            let covered = farEnd.fill(from: captureConsumed + captureDropped, frames: piece)
            guard covered > 0 else { break }
            let output = base + done * channels
            held.withUnsafeBufferPointer {
                output.update(from: $0.baseAddress! + done * channels, count: covered * channels)
            }
            do {
                try farEnd.block.withUnsafeBufferPointer { far in
                    try processor.process(
                        capture: UnsafeMutableBufferPointer(start: output, count: covered * channels), reference: far,
                        frames: covered)
                }
            } catch {
                // The processor wrote silence for what the library refused: said once, counted.
                processingErrors += 1
                if processingErrors == 1 { Log.warning("voice processing failed on a chunk: \(error)") }
            }
            done += covered
            captureConsumed += covered
            if covered < piece { break }
        }
        if done > 0 {
            held.withUnsafeMutableBufferPointer { all in
                let start = all.baseAddress!
                start.update(from: start + done * channels, count: (heldFrames - done) * channels)
            }
            heldFrames -= done
        }
        return done
    }

    /// Silence through the processor to bring out the frames it still holds.
    private func flush(
        into base: UnsafeMutablePointer<Float>, maxFrames: Int, remaining: Int, _ processor: VoiceProcessor
    ) -> Int {
        let frames = min(remaining, maxFrames, farEnd.blockFrames)
        guard frames > 0 else { return 0 }
        base.update(repeating: 0, count: frames * channels)
        farEnd.silence()
        do {
            try farEnd.block.withUnsafeBufferPointer { far in
                try processor.process(
                    capture: UnsafeMutableBufferPointer(start: base, count: frames * channels), reference: far,
                    frames: frames)
            }
        } catch {
            processingErrors += 1
        }
        flushRemaining = remaining - frames
        return frames
    }
}

/// What a processed recorder needs beyond its capture tap: the processing, the output group
/// of its far end and the echo path's delay. Control thread.
struct VoiceSetup {
    var processing: CaptureProcessing
    var outputGroup: String
    /// JACK's playback latency of the output plus capture latency of the input, in ms; nil
    /// when JACK knows neither (ports connected to other clients, not to a device).
    var echoPathDelayMilliseconds: Int?
    /// `[voice] echo_suppression`.
    var echoSuppression: EchoSuppressionSetting

    /// The setup for a recorder of `inputGroup` in `context`; nil when its capture is not
    /// processed or its route has no output the engine plays to.
    init?(
        _ context: RecordingContext, inputGroup: String, engine: any RecorderEngine, ports: any EnginePorts
    ) {
        guard context.processing != .none, let port = context.referencePort,
            let output = ports.output(port: port)
        else { return nil }
        processing = context.processing
        echoSuppression = context.echoSuppression
        outputGroup = output.group
        echoPathDelayMilliseconds = Self.echoPathDelayMilliseconds(
            outputSeconds: engine.latencySeconds(ofGroup: output.group),
            inputSeconds: engine.latencySeconds(ofGroup: inputGroup))
    }

    /// The echo path's delay given to the processor (recorders and attached applications alike):
    /// JACK's playback latency of the output group plus the capture latency of the input group,
    /// in ms; nil when JACK knows neither.
    static func echoPathDelayMilliseconds(outputSeconds: Double?, inputSeconds: Double?) -> Int? {
        let seconds = (outputSeconds ?? 0) + (inputSeconds ?? 0)
        return seconds > 0 ? Int((seconds * 1_000).rounded()) : nil
    }

    /// The processed source over `capture`, when the engine gave `tap` its reference.
    /// `continuing`: it goes on from a previous segment's end (`VoiceCaptureSource.continuing`).
    func source(capturing capture: TapSource, tap: CaptureTap, sampleRate: Int, continuing: Bool = false)
        -> VoiceCaptureSource?
    {
        guard let reference = tap.reference else { return nil }
        return VoiceCaptureSource(
            capture: capture, reference: reference, processing: processing, echoSuppression: echoSuppression,
            sampleRate: sampleRate, echoPathDelayMilliseconds: echoPathDelayMilliseconds, continuing: continuing)
    }
}

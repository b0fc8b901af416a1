// The archiver thread's work: read the source, place its gaps, transform, hand the frames to
// the segment files (which cut them at wall-clock boundaries, run the stages, encode, report),
// flush, stop.
//
// Frames travel as one run per channel ("planar"): a `PlanarSampleSource` (the capture tap's
// ring) lends them in place and they reach libFLAC without a copy; an interleaved source (tests)
// and a transform's output are taken apart once (`SourceReader`, `OutputTransform`).
//
// Runs on the recorder's **archiver** thread only; it owns the source, the transform and the
// segment files. It talks to the control thread only through `RecorderControl`.

import Platform

final class ArchiverLoop {
    private let configuration: RecorderConfiguration
    private let control: RecorderControl
    private let reader: SourceReader
    private let transform: OutputTransform?
    private let files: SegmentFiles
    /// The source's wall-clock offset the time line was placed with (nil: not read yet).
    private var wallOffset: Int64?
    /// Stopping: no new segment is opened for a trailing gap.
    private var closing = false

    init(
        configuration: RecorderConfiguration, inputs: SegmentInputs, source: any SampleSource,
        transform: (any SampleTransform)?, control: RecorderControl
    ) {
        self.configuration = configuration
        self.control = control
        reader = SourceReader(
            source: source, channels: configuration.channels, chunkFrames: configuration.timing.chunkFrames)
        self.transform = transform.map {
            OutputTransform(
                $0, channels: configuration.channels, inputRate: configuration.sampleRate,
                chunkFrames: configuration.timing.chunkFrames)
        }
        files = SegmentFiles(
            configuration: configuration, inputs: inputs, source: source,
            outputRate: transform?.outputSampleRate ?? configuration.sampleRate, control: control)
    }

    func run() {
        let source = reader.source
        var reason = EndReason.stop
        var failure: ArchiveError?
        var retirementDeadline: Double?
        do throws(ArchiveError) {
            while true {
                // Read the stop request first: everything the source held when it came is
                // drained. Once stopping, no long wait: a live source keeps delivering, and only
                // reading faster than it does reaches the empty read that ends the loop.
                let stopReason = control.stopReason
                // Before the read: once the producer is retired, this read sees its last frames
                // (a JACK cycle that began before the tap left the graph still writes its period,
                // and a successor tap counts on it being in this file), whatever the period.
                let retired = stopReason != nil && source.producerRetired
                let frames = reader.take()
                reader.collectGaps()
                if let stamp = source.clockStamp() { files.note(.clockStamp(stamp)) }
                try followClockStep()
                if frames > 0 {
                    try consume(frames: frames)
                    reader.release(frames: frames)
                } else if let stopReason {
                    let now = SystemClock.monotonicSeconds()
                    let deadline = retirementDeadline ?? now + configuration.timing.retirementLimit
                    retirementDeadline = deadline
                    // A producer that never retires has stopped running (a lost server): what
                    // it wrote is all there is.
                    if retired || now >= deadline {
                        reason = stopReason
                        break
                    }
                    SystemClock.sleep(seconds: ArchiverLoop.retirementPollSeconds)
                } else {
                    try applyDueGaps()
                }
                try files.syncIfDue()
                files.publishOpen()
                // A short read means the source is drained (or lent up to its ring's end, the
                // rest waits in the ring): wait for more to gather rather than chase every period
                // with a small read (a stop request ends the wait).
                if frames < configuration.timing.chunkFrames && stopReason == nil {
                    control.waitForStop(seconds: configuration.timing.pollInterval)
                }
            }
            // Gaps after the last frame go into the open segment, but open no new one.
            closing = true
            try flushTransform()
            reader.collectGaps()
            reader.collectTrailingStall()
            try applyDueGaps()
            try files.finishSegment(reason: reason)
        } catch {
            failure = error
            if case .diskFull = error { reason = .diskFull } else { reason = .error }
            files.finishAfterFailure(reason: reason, error: error)
        }
        control.setRunning(false)
        control.post(.stopped(reason: reason, error: failure))
    }

    /// How often a stopping archiver looks whether its producer has retired: the last period
    /// is at most one cycle away.
    static let retirementPollSeconds = 0.002

    /// Passes the current read on, part by part between the gaps it holds.
    private func consume(frames: Int) throws(ArchiveError) {
        var offset = 0
        while offset < frames {
            try applyDueGaps()
            let (starts, take) = reader.part(from: offset, of: frames)
            try emit(starts, frames: take)
            offset += take
        }
        try applyDueGaps()
    }

    /// Applies the gaps whose position has been reached.
    private func applyDueGaps() throws(ArchiveError) {
        while let gap = reader.nextDueGap() {
            control.post(.gap(gap))
            guard gap.length > 0 else { continue }
            try flushTransform()
            let length = transform?.outputLength(ofInputFrames: gap.length) ?? gap.length
            try files.advanceOverGap(outputFrames: length, closing: closing)
        }
    }

    private func emit(_ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int) throws(ArchiveError) {
        guard let transform else {
            try files.write(channelStarts, frames: frames)
            return
        }
        try transform.process(channelStarts, frames: frames) { starts, count throws(ArchiveError) in
            try files.write(starts, frames: count)
        }
    }

    private func flushTransform() throws(ArchiveError) {
        try transform?.flush { starts, count throws(ArchiveError) in try files.write(starts, frames: count) }
    }

    /// A stepped wall clock: the segment files move their time line by the step.
    private func followClockStep() throws(ArchiveError) {
        guard let offset = reader.source.wallClockOffset() else { return }
        guard let base = wallOffset, files.timeLinePlaced else {
            // The time line is placed when the first segment opens: measure from then on.
            wallOffset = offset
            return
        }
        guard let delta = ClockStep.step(from: base, to: offset) else { return }
        wallOffset = offset
        try files.stepClock(by: delta)
    }
}

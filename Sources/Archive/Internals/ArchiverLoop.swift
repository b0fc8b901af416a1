// The archiver thread's work: read the source, place its gaps, transform, split into channel
// groups, cut at wall-clock boundaries, encode, flush, report.
//
// Frames travel as one run per channel ("planar"): a `PlanarSampleSource` (the capture tap's
// ring) lends them in place and they reach libFLAC without a copy; an interleaved source (tests)
// and a transform's output are taken apart once, into `inputRuns`/`outputRuns`.
//
// Runs on the recorder's **archiver** thread only; it owns the source, the transform and the
// segment writers. It talks to the control thread only through `RecorderControl`.

import Codec
import Platform

final class ArchiverLoop {
    private let configuration: RecorderConfiguration
    private let source: any SampleSource
    private let transform: (any SampleTransform)?
    private let control: RecorderControl
    private let outputRate: Int
    /// First channel and channel count of each file (one entry unless more than 8 channels).
    private let groups: [(first: Int, count: Int)]
    private var schedule: RotationSchedule?
    private var writers: [SegmentWriter] = []
    private var segmentNumber: Int
    private var segmentStart = UTCTime(nanosecondsSinceEpoch: 0)
    /// Frames of the written stream since its start, gaps included (at the output rate).
    private var timeline = 0
    /// Timeline frame where the open segment ends.
    private var boundary = 0
    /// Source frames read so far.
    private var inputDelivered = 0
    private var pendingGaps: [SourceGap] = []
    /// The source, when it lends its frames in place.
    private let planarSource: (any PlanarSampleSource)?
    /// An interleaved source's frames as read, and taken apart into `inputRuns`.
    private var readBuffer: [Float]
    private let inputRuns: ChannelRuns
    /// The frames of the current read, one run per channel (in the source or in `inputRuns`).
    private let sourceStarts: UnsafeMutablePointer<UnsafePointer<Float>>
    /// Scratch channel pointers for a part of a read (`consume`) and of a write (`write`).
    private let partStarts: UnsafeMutablePointer<UnsafePointer<Float>>
    private let writeStarts: UnsafeMutablePointer<UnsafePointer<Float>>
    /// A transform's input (interleaved), its output, and that taken apart.
    private var transformInput: [Float] = []
    private var transformed: [Float] = []
    private let outputRuns: ChannelRuns
    /// Monotonic seconds of the last fdatasync round (`syncIfDue`).
    private var lastSyncRound = 0.0
    /// Remainder when converting gap lengths to the output rate (units of 1/inputRate frames).
    private var gapRemainder = 0
    /// Stopping: no new segment is opened for a trailing gap.
    private var closing = false
    /// Silence detection on the frames written, at the output rate (nil: off).
    private var silence: SilenceDetector?
    /// The open segment's clock stamps (CLOCK_DRIFT_PPM).
    fileprivate var drift = ClockDriftFit()
    /// CLOCK_DRIFT_PPM of the segment just ended, as written (nil: not measured).
    fileprivate var endedDriftPPM: Double?
    /// The source's wall-clock offset the time line was placed with (nil: not read yet).
    private var wallOffset: Int64?
    /// How good the wall clock was when the open segment started, and when the last one ended.
    private var clockAtStart: ClockSynchronization?
    /// Who kept the clock when the open segment started (CLOCK_SOURCE), as the monitor kept it.
    private var sourceAtStart: TimeSource?
    fileprivate var endedClock: ClockSynchronization?
    /// The source's latest clock stamp: where monotonic time falls in the time line (NETWORK_LOSS).
    fileprivate var lastStamp: ClockStamp?
    /// The open segment's first time-line frame, and the network's counts when it opened.
    fileprivate var segmentTimelineStart = 0
    fileprivate var networkAtStart: NetworkPacketCounts?

    init(
        configuration: RecorderConfiguration, source: any SampleSource, transform: (any SampleTransform)?,
        control: RecorderControl
    ) {
        self.configuration = configuration
        self.source = source
        self.transform = transform
        self.control = control
        outputRate = transform?.outputSampleRate ?? configuration.sampleRate
        var groups: [(first: Int, count: Int)] = []
        var first = 0
        while first < configuration.channels {
            groups.append((first, min(8, configuration.channels - first)))
            first += 8
        }
        self.groups = groups
        segmentNumber = configuration.firstSegmentNumber
        planarSource = source as? any PlanarSampleSource
        let channels = configuration.channels
        readBuffer = planarSource == nil ? [Float](repeating: 0, count: configuration.chunkFrames * channels) : []
        inputRuns = ChannelRuns(channels: channels, frames: planarSource == nil ? configuration.chunkFrames : 0)
        outputRuns = ChannelRuns(channels: channels, frames: transform == nil ? 0 : configuration.chunkFrames)
        sourceStarts = .allocate(capacity: channels)
        partStarts = .allocate(capacity: channels)
        writeStarts = .allocate(capacity: channels)
        silence = configuration.silence.map { SilenceDetector(detection: $0, sampleRate: outputRate) }
    }

    deinit {
        sourceStarts.deallocate()
        partStarts.deallocate()
        writeStarts.deallocate()
    }

    func run() {
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
                let frames = take()
                collectGaps()
                if let stamp = source.clockStamp() {
                    drift.add(stamp)
                    lastStamp = stamp
                }
                try followClockStep()
                if frames > 0 {
                    try consume(frames: frames)
                    planarSource?.release(frames: frames)
                    // The first file's (the first 8 channels of a wider recorder).
                    control.publishLoudness(
                        momentary: writers.first?.momentaryLUFS, shortTerm: writers.first?.shortTermLUFS)
                } else if let stopReason {
                    let now = SystemClock.monotonicSeconds()
                    let deadline = retirementDeadline ?? now + configuration.retirementLimit
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
                try syncIfDue()
                publishOpen()
                // A short read means the source is drained (or lent up to its ring's end, the
                // rest waits in the ring): wait for more to gather rather than chase every period
                // with a small read (a stop request ends the wait).
                if frames < configuration.chunkFrames && stopReason == nil {
                    control.waitForStop(seconds: configuration.pollInterval)
                }
            }
            // Gaps after the last frame go into the open segment, but open no new one.
            closing = true
            try flushTransform()
            collectGaps()
            // Stopped while stalled: the time from the last frame to the stop is a gap too.
            if let frames = source.trailingStallFrames(), frames > 0 {
                pendingGaps.append(SourceGap(position: inputDelivered, length: frames, cause: .clockStall))
                pendingGaps.sort { $0.position < $1.position }
            }
            try applyDueGaps()
            try finishSegment(reason: reason)
        } catch {
            failure = error
            if case .diskFull = error { reason = .diskFull } else { reason = .error }
            finishAfterFailure(reason: reason, error: error)
        }
        control.setRunning(false)
        control.post(.stopped(reason: reason, error: failure))
    }

    /// How often a stopping archiver looks whether its producer has retired: the last period
    /// is at most one cycle away.
    static let retirementPollSeconds = 0.002

    /// fdatasync of every open file, together, once per `flushInterval` of wall time (a crash
    /// loses at most that): one round per recorder however many files it has and however fast
    /// a backlog drains.
    private func syncIfDue() throws(ArchiveError) {
        let now = SystemClock.monotonicSeconds()
        guard now - lastSyncRound >= configuration.flushInterval else { return }
        lastSyncRound = now
        for writer in writers { try writer.flushIfUnsynced() }
    }

    // MARK: Input

    /// The next frames into `sourceStarts`: lent in place, or read and taken apart.
    private func take() -> Int {
        if let planarSource {
            return planarSource.peek(maxFrames: configuration.chunkFrames, channelStarts: sourceStarts)
        }
        let frames = readBuffer.withUnsafeMutableBufferPointer { source.read(into: $0) }
        readBuffer.withUnsafeBufferPointer { inputRuns.fill(from: $0.baseAddress!, frames: frames) }
        for channel in 0..<configuration.channels { sourceStarts[channel] = inputRuns.starts[channel] }
        return frames
    }

    private func collectGaps() {
        let gaps = source.drainGaps()
        guard !gaps.isEmpty else { return }
        pendingGaps += gaps
        pendingGaps.sort { $0.position < $1.position }
    }

    private func consume(frames: Int) throws(ArchiveError) {
        var offset = 0
        while offset < frames {
            try applyDueGaps()
            var take = frames - offset
            if let next = pendingGaps.first { take = min(take, next.position - inputDelivered) }
            for channel in 0..<configuration.channels { partStarts[channel] = sourceStarts[channel] + offset }
            try emit(partStarts, frames: take)
            inputDelivered += take
            offset += take
        }
        try applyDueGaps()
    }

    /// Applies the gaps whose position has been reached (a gap never splits a frame: positions
    /// are whole frames).
    private func applyDueGaps() throws(ArchiveError) {
        while let gap = pendingGaps.first, gap.position <= inputDelivered {
            pendingGaps.removeFirst()
            control.post(.gap(gap))
            guard gap.length > 0 else { continue }
            try flushTransform()
            try advanceOverGap(outputFrames: outputLength(ofInputFrames: gap.length))
        }
    }

    private func outputLength(ofInputFrames frames: Int) -> Int {
        guard transform != nil, outputRate != configuration.sampleRate else { return frames }
        let scaled = frames * outputRate + gapRemainder
        gapRemainder = scaled % configuration.sampleRate
        return scaled / configuration.sampleRate
    }

    private func emit(_ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int) throws(ArchiveError) {
        guard let transform else {
            try write(channelStarts, frames: frames)
            return
        }
        // The HFP transform (1–2 channels at 8–16 kHz) takes interleaved frames.
        let channels = configuration.channels
        transformInput.removeAll(keepingCapacity: true)
        transformInput.reserveCapacity(frames * channels)
        for frame in 0..<frames {
            for channel in 0..<channels { transformInput.append(channelStarts[channel][frame]) }
        }
        transformed.removeAll(keepingCapacity: true)
        transformInput.withUnsafeBufferPointer { transform.process($0, frames: frames, into: &transformed) }
        try writeTransformed()
    }

    private func flushTransform() throws(ArchiveError) {
        guard let transform else { return }
        transformed.removeAll(keepingCapacity: true)
        transform.flush(into: &transformed)
        try writeTransformed()
    }

    /// Writes `transformed` (interleaved), taken apart into `outputRuns` a chunk at a time.
    private func writeTransformed() throws(ArchiveError) {
        let channels = configuration.channels
        precondition(transformed.count % channels == 0, "a transform must produce whole frames")
        let frames = transformed.count / channels
        var done = 0
        while done < frames {
            let count = min(outputRuns.frames, frames - done)
            transformed.withUnsafeBufferPointer {
                outputRuns.fill(from: $0.baseAddress! + done * channels, frames: count)
            }
            try write(outputRuns.starts, frames: count)
            done += count
        }
    }

    // MARK: Output

    /// Writes frames at the output rate, cutting at segment boundaries: each file takes its
    /// channels' runs as they are.
    private func write(_ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int) throws(ArchiveError) {
        var done = 0
        while done < frames {
            try ensureSegment()
            let take = min(frames - done, boundary - timeline)
            for channel in 0..<configuration.channels { writeStarts[channel] = channelStarts[channel] + done }
            // Before the files encode, while the frames are still in the cache (libFLAC's work
            // pushes them out). Should the write fail, the recorder stops with an error; a silence
            // change these frames completed is still reported.
            observeSilence(writeStarts, frames: take)
            for (writer, group) in zip(writers, groups) {
                try writer.write(planar: writeStarts + group.first, frames: take)
            }
            timeline += take
            done += take
            if let full = writers.first(where: { $0.isLowOnSpace }) {
                throw .diskFull(path: full.partialPath)
            }
        }
    }

    private func advanceOverGap(outputFrames: Int) throws(ArchiveError) {
        var remaining = outputFrames
        while remaining > 0 {
            if closing && (writers.isEmpty || timeline >= boundary) { return }
            try ensureSegment()
            let take = min(remaining, boundary - timeline)
            for writer in writers { writer.markGap(length: take) }
            timeline += take
            remaining -= take
        }
    }

    private func ensureSegment() throws(ArchiveError) {
        if writers.isEmpty {
            try openSegment()
        } else if timeline >= boundary {
            try finishSegment(reason: .rotation)
            segmentNumber += 1
            try openSegment()
        }
    }

    /// A stepped wall clock: the open segment ends (`clockStep`) and the time line moves by
    /// the step, so the next segment starts at the true time of its first frame.
    private func followClockStep() throws(ArchiveError) {
        guard let offset = source.wallClockOffset() else { return }
        guard let base = wallOffset, let old = schedule else {
            // The time line is placed when the first segment opens: measure from then on.
            wallOffset = offset
            return
        }
        guard let delta = ClockStep.step(from: base, to: offset) else { return }
        wallOffset = offset
        if !writers.isEmpty {
            try finishSegment(reason: .clockStep)
            segmentNumber += 1
        }
        schedule = RotationSchedule(
            start: UTCTime(nanosecondsSinceEpoch: old.start.nanosecondsSinceEpoch &+ delta), sampleRate: old.sampleRate,
            segmentSeconds: old.segmentSeconds)
    }

    private func openSegment() throws(ArchiveError) {
        if schedule == nil {
            schedule = RotationSchedule(
                start: source.startTime ?? UTCTime.now(), sampleRate: outputRate,
                segmentSeconds: configuration.segmentSeconds)
        }
        let schedule = schedule!
        segmentStart = schedule.time(atFrame: timeline)
        boundary = schedule.nextBoundary(afterFrame: timeline)
        segmentTimelineStart = timeline
        // After a rotation the last segment's end counts are this one's start.
        if networkAtStart == nil { networkAtStart = configuration.network?.packetCounts() }
        let grouped = groups.count > 1
        // One read for all the groups' files (a few µs: adjtimex, reading only).
        clockAtStart = ClockSynchronization.current()
        // The monitor's kept answer (a lock, no program run here).
        sourceAtStart = configuration.timeSource?.current
        var opened: [SegmentWriter] = []
        for (index, group) in groups.enumerated() {
            let path = ArchiveLayout.segmentPath(
                archiveDirectory: configuration.archiveDirectory, app: configuration.app,
                stream: configuration.stream, group: grouped ? index + 1 : nil, start: segmentStart)
            let format = SegmentFormat(
                sampleRate: outputRate, channels: group.count, bitsPerSample: configuration.bitsPerSample,
                compressionLevel: configuration.compressionLevel, measuresLoudness: configuration.measuresLoudness,
                loudnessEngine: configuration.loudnessEngine)
            do throws(ArchiveError) {
                // Noted before the file exists (a crash leaves no partial recd did not note). A
                // note that cannot be written costs only the proof of this segment after a crash.
                try? configuration.ledger?.owe(path)
                let writer = try SegmentWriter(
                    path: path, format: format,
                    comments: comments(group: grouped ? index + 1 : nil, channels: group),
                    expectedFrames: boundary - timeline)
                opened.append(writer)
            } catch {
                for writer in opened { writer.discardEmpty() }
                throw error
            }
        }
        writers = opened
        // Each file synced its header when it opened: the next round is a flush interval on.
        lastSyncRound = SystemClock.monotonicSeconds()
        drift = ClockDriftFit()
        control.opened(opened.flatMap { [$0.path, $0.partialPath] })
        // At once, empty: a snapshot taken before the first frames still ends the clip here.
        publishOpen()
        for (index, writer) in opened.enumerated() {
            control.post(
                .segmentStarted(
                    path: writer.path, group: grouped ? index + 1 : 0, segment: segmentNumber,
                    startTime: segmentStart))
        }
    }

    private func comments(group: Int?, channels: (first: Int, count: Int)) -> [VorbisComment] {
        var comments = [
            VorbisComment(CommentName.startTime, segmentStart.iso8601),
            VorbisComment(CommentName.app, configuration.app),
            VorbisComment(CommentName.stream, configuration.stream),
        ]
        let optional: [(String, String?)] = [
            (CommentName.category, configuration.category), (CommentName.mode, configuration.mode),
            (CommentName.inputPort, configuration.inputPort), (CommentName.inputType, configuration.inputType),
            (CommentName.bandwidth, configuration.bandwidth),
        ]
        for (name, value) in optional { if let value { comments.append(VorbisComment(name, value)) } }
        comments.append(VorbisComment(CommentName.segment, String(segmentNumber)))
        if let group {
            comments.append(VorbisComment(CommentName.group, String(group)))
            comments.append(
                VorbisComment(CommentName.groupChannels, "\(channels.first + 1)-\(channels.first + channels.count)"))
        }
        if outputRate != configuration.sampleRate {
            comments.append(VorbisComment(CommentName.sourceSampleRate, String(configuration.sampleRate)))
        }
        comments.append(VorbisComment(CommentName.encoder, encoderDescription(recdVersion: configuration.recdVersion)))
        comments.append(VorbisComment(CommentName.date, String(segmentStart.iso8601.prefix(10))))
        if let clockAtStart { comments += CommentName.clockComments(clockAtStart, atEnd: false) }
        if let source = sourceAtStart {
            comments.append(VorbisComment(CommentName.clockSource, source.description))
        }
        return comments + configuration.extraComments
    }

    private func finishSegment(reason: EndReason) throws(ArchiveError) {
        let current = writers
        writers = []
        let endComments = segmentEndComments(reason: reason, gaps: current.first?.gaps ?? [])
        var firstError: ArchiveError?
        for (index, writer) in current.enumerated() {
            do throws(ArchiveError) {
                let finished = try writer.finish(reason: reason, extraComments: endComments)
                // Posted before closed: a snapshot between the two finds it in both, never in neither.
                control.post(.segmentFinished(record(for: finished, group: current.count > 1 ? index + 1 : 0)))
                control.closed([writer.path, writer.partialPath])
            } catch {
                writer.abandon()
                control.closed([writer.path, writer.partialPath])
                control.post(.segmentAbandoned(partialPath: writer.partialPath, error: error))
                if firstError == nil { firstError = error }
            }
        }
        if let firstError { throw firstError }
    }

    /// After a failure: finish what can still be finished (reason `diskFull` or `error`),
    /// abandon the rest as `.partial`.
    private func finishAfterFailure(reason: EndReason, error: ArchiveError) {
        let current = writers
        writers = []
        let endComments = segmentEndComments(reason: reason, gaps: current.first?.gaps ?? [])
        for (index, writer) in current.enumerated() {
            if writer.isOpen, let finished = try? writer.finish(reason: reason, extraComments: endComments) {
                control.post(.segmentFinished(record(for: finished, group: current.count > 1 ? index + 1 : 0)))
                control.closed([writer.path, writer.partialPath])
            } else {
                writer.abandon()
                control.closed([writer.path, writer.partialPath])
                control.post(.segmentAbandoned(partialPath: writer.partialPath, error: error))
            }
        }
    }

    /// The open segments as far as their complete frames go, for `Recorder.snapshot`.
    private func publishOpen() {
        let open = writers.enumerated().map { index, writer in
            let group = writers.count > 1 ? index + 1 : 0
            let frames = writer.completeFrames
            return OpenSegment(
                record: SegmentRecord(
                    path: writer.path, app: configuration.app, stream: configuration.stream, group: group,
                    segment: segmentNumber,
                    startTime: UTCTime(microsecondsSinceEpoch: segmentStart.microsecondsSinceEpoch), frames: frames,
                    sampleRate: outputRate, channels: group == 0 ? configuration.channels : groups[group - 1].count,
                    bitsPerSample: configuration.bitsPerSample, endReason: nil,
                    gaps: writer.gaps.filter { $0.position <= frames }, recovered: false,
                    bytes: writer.completeBytes),
                partialPath: writer.partialPath)
        }
        control.publishOpen(open)
    }

    private func record(for finished: FinishedSegment, group: Int) -> SegmentRecord {
        SegmentRecord(
            path: finished.path, app: configuration.app, stream: configuration.stream, group: group,
            segment: segmentNumber, startTime: UTCTime(microsecondsSinceEpoch: segmentStart.microsecondsSinceEpoch),
            frames: finished.frames, sampleRate: outputRate,
            channels: group == 0 ? configuration.channels : groups[group - 1].count,
            bitsPerSample: configuration.bitsPerSample, endReason: finished.endReason, gaps: finished.gaps,
            recovered: false, bytes: finished.bytes, loudness: finished.loudness, clockDriftPPM: endedDriftPPM,
            clockAtStart: clockAtStart, clockAtEnd: endedClock, clockSource: sourceAtStart?.description)
    }
}

// MARK: Silence

extension ArchiverLoop {
    /// Frames just written to the open segment, from timeline frame `timeline`.
    fileprivate func observeSilence(_ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int) {
        guard silence != nil else { return }
        silence!.observe(
            planar: channelStarts, frames: frames, channels: configuration.channels, position: timeline
        ) { postSilence($0) }
    }

    /// The comments the open segment ends with: SILENCE_SECONDS when detection is on,
    /// CLOCK_DRIFT_PPM when the source's clock was measured long enough.
    fileprivate func segmentEndComments(reason: EndReason, gaps: [SegmentGap]) -> [VorbisComment] {
        // The segment the stop ends carries what the stop said beside END_REASON
        // (INTERRUPTED_BY); a rotation, even one while draining after the request, has none.
        var comments: [VorbisComment] = reason == control.stopReason ? control.stopComments : []
        endedDriftPPM = nil
        endedClock = ClockSynchronization.current()
        if let endedClock { comments += CommentName.clockComments(endedClock, atEnd: true) }
        if let ppm = drift.partsPerMillion(nominalRate: configuration.sampleRate) {
            let text = ClockDriftFit.commentValue(ppm)
            endedDriftPPM = Double(text)
            comments.append(VorbisComment(CommentName.clockDriftPPM, text))
        }
        comments += networkComments(gaps: gaps)
        guard silence != nil else { return comments }
        let frames = silence!.endSegment { postSilence($0) }
        return comments + [
            VorbisComment(
                CommentName.silenceSeconds, SilenceDetector.secondsText(frames: frames, sampleRate: outputRate))
        ]
    }

    /// NETWORK_PACKETS, NETWORK_PACKETS_LOST and NETWORK_LOSS of the segment ending at `timeline`
    /// (`gaps`: its GAPS), when the input's audio came over the network.
    private func networkComments(gaps: [SegmentGap]) -> [VorbisComment] {
        guard let network = configuration.network else { return [] }
        var outages: [SegmentGap] = []
        if let stamp = lastStamp, timeline > segmentTimelineStart {
            let inputRate = Double(configuration.sampleRate)
            let scale = Double(outputRate) / inputRate
            // Time line frames (output rate) and monotonic µs, through the source's clock stamp.
            func micros(_ frame: Int) -> Int {
                stamp.micros + Int(((Double(frame) / scale - Double(stamp.frames)) * 1e6 / inputRate).rounded())
            }
            func frame(_ micros: Int) -> Int {
                Int(((Double(stamp.frames) + Double(micros - stamp.micros) * inputRate / 1e6) * scale).rounded())
            }
            let span = micros(segmentTimelineStart)..<micros(timeline)
            for outage in network.outages(overlapping: span) {
                let first = min(max(frame(outage.lowerBound), segmentTimelineStart), timeline)
                let end = min(max(frame(outage.upperBound), segmentTimelineStart), timeline)
                let position = NetworkComments.filePosition(timelineOffset: first - segmentTimelineStart, gaps: gaps)
                let length =
                    NetworkComments.filePosition(timelineOffset: end - segmentTimelineStart, gaps: gaps) - position
                if length > 0 { outages.append(SegmentGap(position: position, length: length)) }
            }
        }
        let end = network.packetCounts()
        defer { networkAtStart = end }
        return NetworkComments.comments(start: networkAtStart, end: end, outages: outages)
    }

    private func postSilence(_ transition: SilenceTransition) {
        guard let schedule else { return }
        control.post(
            .silence(
                SilenceChange(
                    state: transition.state, since: schedule.time(atFrame: transition.sinceFrame),
                    decided: schedule.time(atFrame: transition.decidedFrame), peak: transition.peak)))
    }
}

/// `recd <version> / libFLAC <version>`: the ENCODER comment.
func encoderDescription(recdVersion: String) -> String {
    "recd \(recdVersion) / libFLAC \(FLACEncoder.libraryVersion)"
}

/// Planar scratch: `frames` samples for each of `channels` channels, channel `c` from
/// `starts[c]`. Archiver thread only; freed with its owner.
final class ChannelRuns {
    let channels: Int
    let frames: Int
    private let samples: UnsafeMutablePointer<Float>
    /// Channel `c`'s run at `starts[c]`.
    let starts: UnsafeMutablePointer<UnsafePointer<Float>>

    init(channels: Int, frames: Int) {
        self.channels = channels
        self.frames = frames
        samples = .allocate(capacity: max(channels * frames, 1))
        starts = .allocate(capacity: max(channels, 1))
        for channel in 0..<channels { starts[channel] = UnsafePointer(samples + channel * frames) }
    }

    deinit {
        samples.deallocate()
        starts.deallocate()
    }

    /// Takes `count` (≤ `frames`) interleaved frames of `channels` channels apart.
    func fill(from interleaved: UnsafePointer<Float>, frames count: Int) {
        precondition(count <= frames, "more frames than the runs hold")
        for channel in 0..<channels {
            let run = samples + channel * frames
            var from = interleaved + channel
            for frame in 0..<count {
                run[frame] = from.pointee
                from += channels
            }
        }
    }
}

// The archiver's output: the open segment's files (one per group of up to 8 channels), cut at
// wall-clock boundaries of the time line, opened with recd's tags and the stages', finished with
// the stages' closing tags and index columns, and reported to the control thread.
//
// Runs on the recorder's **archiver** thread only; owns the segment writers and the stages.

import Codec
import Platform

final class SegmentFiles {
    private let configuration: RecorderConfiguration
    /// Read for its start time when the time line is placed.
    private let source: any SampleSource
    private let control: RecorderControl
    private let outlet: StageOutlet
    private let stages: [any SegmentStage]
    private let outputRate: Int
    /// First channel and channel count of each file (one entry unless more than 8 channels).
    private let groups: [(first: Int, count: Int)]
    private var writers: [SegmentWriter] = []
    private(set) var segmentNumber: Int
    private var segmentStart = UTCTime(nanosecondsSinceEpoch: 0)
    /// Frames of the written stream since its start, gaps included (at the output rate).
    private var timeline = 0
    /// Timeline frame where the open segment ends.
    private var boundary = 0
    /// Scratch channel pointers for a part of a write.
    private let writeStarts: UnsafeMutablePointer<UnsafePointer<Float>>
    /// Monotonic seconds of the last fdatasync round (`syncIfDue`).
    private var lastSyncRound = 0.0

    init(
        configuration: RecorderConfiguration, inputs: SegmentInputs, source: any SampleSource, outputRate: Int,
        control: RecorderControl
    ) {
        self.configuration = configuration
        self.source = source
        self.control = control
        self.outputRate = outputRate
        var groups: [(first: Int, count: Int)] = []
        var first = 0
        while first < configuration.channels {
            groups.append((first, min(8, configuration.channels - first)))
            first += 8
        }
        self.groups = groups
        segmentNumber = configuration.firstSegmentNumber
        writeStarts = .allocate(capacity: configuration.channels)
        outlet = StageOutlet(control: control)
        stages = SegmentStages.make(
            StageSetup(
                configuration: configuration, inputs: inputs, outputRate: outputRate, files: groups, outlet: outlet))
    }

    deinit { writeStarts.deallocate() }

    /// True once the first segment has placed the time line.
    var timeLinePlaced: Bool { outlet.schedule != nil }

    /// A fact from outside the samples, for the stages.
    func note(_ fact: SegmentFact) {
        for stage in stages { stage.note(fact) }
    }

    /// Writes frames at the output rate, cutting at segment boundaries: each file takes its
    /// channels' runs as they are.
    func write(_ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int) throws(ArchiveError) {
        var done = 0
        while done < frames {
            try ensureSegment()
            let take = min(frames - done, boundary - timeline)
            for channel in 0..<configuration.channels { writeStarts[channel] = channelStarts[channel] + done }
            // Before the files encode, while the frames are still in the cache (libFLAC's work
            // pushes them out). Should the write fail, the recorder stops with an error; what
            // a stage reports of these frames (a silence change) is still reported.
            for stage in stages { stage.observe(writeStarts, frames: take, at: timeline) }
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

    /// Marks `outputFrames` missing frames (a gap) in the segments they fall in; `closing`: a
    /// trailing gap opens no new segment.
    func advanceOverGap(outputFrames: Int, closing: Bool) throws(ArchiveError) {
        var remaining = outputFrames
        while remaining > 0 {
            if closing && (writers.isEmpty || timeline >= boundary) { return }
            try ensureSegment()
            let take = min(remaining, boundary - timeline)
            for writer in writers { writer.markGap(length: take) }
            note(.gap(position: timeline, length: take))
            timeline += take
            remaining -= take
        }
    }

    /// A stepped wall clock: the open segment ends (`clockStep`) and the time line moves by
    /// `delta`, so the next segment starts at the true time of its first frame.
    func stepClock(by delta: Int64) throws(ArchiveError) {
        guard let old = outlet.schedule else { return }
        if !writers.isEmpty {
            try finishSegment(reason: .clockStep)
            segmentNumber += 1
        }
        outlet.schedule = RotationSchedule(
            start: UTCTime(nanosecondsSinceEpoch: old.start.nanosecondsSinceEpoch &+ delta), sampleRate: old.sampleRate,
            segmentSeconds: old.segmentSeconds)
    }

    /// fdatasync of every open file, together, once per `ArchiverTiming.flushInterval` of wall time (a crash
    /// loses at most that): one round per recorder however many files it has and however fast
    /// a backlog drains.
    func syncIfDue() throws(ArchiveError) {
        let now = SystemClock.monotonicSeconds()
        guard now - lastSyncRound >= configuration.timing.flushInterval else { return }
        lastSyncRound = now
        for writer in writers { try writer.flushIfUnsynced() }
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

    private func openSegment() throws(ArchiveError) {
        let schedule =
            outlet.schedule
            ?? RotationSchedule(
                start: source.startTime ?? UTCTime.now(), sampleRate: outputRate,
                segmentSeconds: configuration.segmentSeconds)
        outlet.schedule = schedule
        segmentStart = schedule.time(atFrame: timeline)
        boundary = schedule.nextBoundary(afterFrame: timeline)
        let opening = SegmentOpening(number: segmentNumber, startTime: segmentStart, timelineStart: timeline)
        let stageTags = stages.flatMap { $0.open(opening) }
        let grouped = groups.count > 1
        var opened: [SegmentWriter] = []
        for (index, group) in groups.enumerated() {
            let path = ArchiveLayout.segmentPath(
                archiveDirectory: configuration.archiveDirectory, app: configuration.app,
                stream: configuration.stream, group: grouped ? index + 1 : nil, start: segmentStart)
            // Loudness is measured by a stage, not by the writer.
            let format = SegmentFormat(
                sampleRate: outputRate, channels: group.count, bitsPerSample: configuration.bitsPerSample,
                compressionLevel: configuration.compressionLevel, measuresLoudness: false)
            do throws(ArchiveError) {
                // Noted before the file exists (a crash leaves no partial recd did not note). A
                // note that cannot be written costs only the proof of this segment after a crash.
                try? configuration.ledger?.owe(path)
                let writer = try SegmentWriter(
                    path: path, format: format,
                    comments: recdComments(group: grouped ? index + 1 : nil, channels: group) + stageTags
                        + configuration.comments.extra,
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

    /// recd's own opening tags: who, what, which part of the recording, how it was encoded.
    private func recdComments(group: Int?, channels: (first: Int, count: Int)) -> [VorbisComment] {
        var comments = [
            VorbisComment(CommentName.startTime, segmentStart.iso8601),
            VorbisComment(CommentName.app, configuration.app),
            VorbisComment(CommentName.stream, configuration.stream),
        ]
        let optional: [(String, String?)] = [
            (CommentName.category, configuration.comments.category), (CommentName.mode, configuration.comments.mode),
            (CommentName.inputPort, configuration.comments.inputPort),
            (CommentName.inputType, configuration.comments.inputType),
            (CommentName.bandwidth, configuration.comments.bandwidth),
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
        comments.append(
            VorbisComment(CommentName.encoder, encoderDescription(recdVersion: configuration.comments.recdVersion)))
        comments.append(VorbisComment(CommentName.date, String(segmentStart.iso8601.prefix(10))))
        return comments
    }

    /// Runs the stages' close: each file's closing tags (after what the stop said beside
    /// END_REASON, INTERRUPTED_BY; a rotation, even one while draining after the request, has
    /// none) and index columns.
    private func closeStages(reason: EndReason) -> SegmentEnding {
        let closing = SegmentClosing(reason: reason, timelineEnd: timeline, gaps: writers.first?.gaps ?? [])
        var ending = SegmentEnding(files: writers.count)
        if reason == control.stopReason { ending.appendToEveryFile(control.stopComments) }
        for stage in stages { stage.close(closing, into: &ending) }
        return ending
    }

    func finishSegment(reason: EndReason) throws(ArchiveError) {
        let ending = closeStages(reason: reason)
        let current = writers
        writers = []
        var firstError: ArchiveError?
        for (index, writer) in current.enumerated() {
            do throws(ArchiveError) {
                let finished = try writer.finish(reason: reason, extraComments: ending.files[index].tags)
                // Posted before closed: a snapshot between the two finds it in both, never in neither.
                control.post(.segmentFinished(record(for: finished, file: index, of: ending)))
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
    func finishAfterFailure(reason: EndReason, error: ArchiveError) {
        let ending = closeStages(reason: reason)
        let current = writers
        writers = []
        for (index, writer) in current.enumerated() {
            if writer.isOpen, let finished = try? writer.finish(reason: reason, extraComments: ending.files[index].tags)
            {
                control.post(.segmentFinished(record(for: finished, file: index, of: ending)))
                control.closed([writer.path, writer.partialPath])
            } else {
                writer.abandon()
                control.closed([writer.path, writer.partialPath])
                control.post(.segmentAbandoned(partialPath: writer.partialPath, error: error))
            }
        }
    }

    /// The open segments as far as their complete frames go, for `Recorder.snapshot`.
    func publishOpen() {
        let open = writers.enumerated().map { index, writer in
            let group = writers.count > 1 ? index + 1 : 0
            let frames = writer.completeFrames
            return OpenSegment(
                record: SegmentRecord(
                    path: writer.path, app: configuration.app, stream: configuration.stream, group: group,
                    segment: segmentNumber,
                    startTime: UTCTime(microsecondsSinceEpoch: segmentStart.microsecondsSinceEpoch), frames: frames,
                    sampleRate: outputRate, channels: groups[index].count,
                    bitsPerSample: configuration.bitsPerSample, endReason: nil,
                    gaps: writer.gaps.filter { $0.position <= frames }, recovered: false,
                    bytes: writer.completeBytes),
                partialPath: writer.partialPath)
        }
        control.publishOpen(open)
    }

    private func record(for finished: FinishedSegment, file index: Int, of ending: SegmentEnding) -> SegmentRecord {
        var record = SegmentRecord(
            path: finished.path, app: configuration.app, stream: configuration.stream,
            group: groups.count > 1 ? index + 1 : 0, segment: segmentNumber,
            startTime: UTCTime(microsecondsSinceEpoch: segmentStart.microsecondsSinceEpoch), frames: finished.frames,
            sampleRate: outputRate, channels: groups[index].count, bitsPerSample: configuration.bitsPerSample,
            endReason: finished.endReason, gaps: finished.gaps, recovered: false, bytes: finished.bytes)
        ending.files[index].columns.apply(to: &record)
        return record
    }
}

/// `recd <version> / libFLAC <version>`: the ENCODER comment.
func encoderDescription(recdVersion: String) -> String {
    "recd \(recdVersion) / libFLAC \(FLACEncoder.libraryVersion)"
}

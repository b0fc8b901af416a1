// Clip export (`archive.export`): the samples of one stream between two wall-clock times, as
// one FLAC or WAV file, sample-exact across segment boundaries, with recorded gaps and
// missing stretches filled with silence.
//
// Threads: the calling thread (recd's slow worker). Nothing here touches the index or the
// recorders; the caller picks the segments (`ArchiveIndex.list`) and hands in the output.

import Codec
import Platform

/// What an export covers and where each output frame comes from, worked out from the index
/// rows alone (no file is opened). A plain value: any thread.
public struct ClipPlan: Sendable {
    /// One stretch of the output, in output frames.
    public enum Piece: Sendable, Equatable {
        /// `frames` frames of the segment at `source` (an index into `segments`), from its
        /// file frame `fileFrame`.
        case audio(source: Int, fileFrame: Int, frames: Int)
        /// `frames` frames of silence (a recorded gap, or no segment covered the time).
        case silence(frames: Int)
    }

    public var from: UTCTime
    public var to: UTCTime
    public var sampleRate: Int
    public var channels: Int
    public var bitsPerSample: Int
    /// (to - from) x rate, rounded to the nearest frame.
    public var frames: Int
    /// The segments that give audio, in time order.
    public var segments: [SegmentRecord]
    public var pieces: [Piece]
    /// The segments among `segments` still being written, by path: read only up to their
    /// snapshot (`OpenSegment.open`), never into what their writer added since.
    public var openSegments: [String: OpenSegment] = [:]

    /// The file of `segments[source]`, for reading.
    func file(_ source: Int) throws(MediaError) -> ReadOnlyFile {
        let record = segments[source]
        if let open = openSegments[record.path] { return try open.open() }
        return try ReadOnlyFile(path: record.path)
    }

    /// The silent stretches, as GAPS positions in the clip's frames (adjacent ones merged).
    public var gaps: [SegmentGap] {
        var gaps: [SegmentGap] = []
        var position = 0
        for piece in pieces {
            switch piece {
            case .audio(_, _, let frames):
                position += frames
            case .silence(let frames):
                if let last = gaps.last, last.position + last.length == position {
                    gaps[gaps.count - 1].length += frames
                } else {
                    gaps.append(SegmentGap(position: position, length: frames))
                }
                position += frames
            }
        }
        return gaps
    }

    /// Plans the clip [from, to) of `records` (one stream's segments; any order). Segments of
    /// channel group 0 only (a recorder wider than 8 channels writes groups 1... beside it).
    ///
    /// A segment's file frame `i` is at START_TIME + (i + the gap frames recorded before it) /
    /// rate. START_TIME is stored to the microsecond: a segment that starts within half a frame
    /// of the previous one's end continues it exactly (a rotation), so no frame is lost or
    /// doubled at a boundary.
    public static func plan(records: [SegmentRecord], from: UTCTime, to: UTCTime) throws(ArchiveError) -> ClipPlan {
        guard to > from else {
            throw .invalidArgument("the clip must end after it begins (from \(from), to \(to))")
        }
        let sorted = records.filter { $0.group == 0 && $0.frames > 0 && $0.endTime > from && $0.startTime < to }
            .sorted { $0.startTime < $1.startTime }
        guard let first = sorted.first else {
            throw .invalidArgument("no recorded audio between \(from) and \(to)")
        }
        for record in sorted where record.sampleRate != first.sampleRate || record.channels != first.channels {
            throw .invalidArgument(
                "the stream changes from \(first.sampleRate) Hz, \(first.channels) channels to \(record.sampleRate) Hz, "
                    + "\(record.channels) channels at \(record.startTime); export the parts before and after separately"
            )
        }
        let rate = first.sampleRate
        func frameOffset(_ time: UTCTime) -> Int {
            // Nanoseconds to frames, rounded to the nearest, without overflowing Int64.
            let nanos = time.nanosecondsSinceEpoch - from.nanosecondsSinceEpoch
            let whole = nanos / 1_000_000_000
            let rest = nanos % 1_000_000_000
            return Int(whole) * rate + Int((Double(rest) * Double(rate) / 1e9).rounded())
        }
        let total = frameOffset(to)
        var plan = ClipPlan(
            from: from, to: to, sampleRate: rate, channels: first.channels,
            bitsPerSample: sorted.map(\.bitsPerSample).max() ?? first.bitsPerSample, frames: total, segments: [],
            pieces: [])
        var cursor = 0
        var previousEnd: (time: UTCTime, frame: Int)?
        for record in sorted {
            var start = frameOffset(record.startTime)
            if let previousEnd {
                let apart = abs(record.startTime.nanosecondsSinceEpoch - previousEnd.time.nanosecondsSinceEpoch)
                if apart * Int64(rate) < 500_000_000 { start = previousEnd.frame }
            }
            // The file's runs of audio between its recorded gaps, on the clip's frame line.
            var runs: [(clipFrame: Int, fileFrame: Int, frames: Int)] = []
            var fileFrame = 0
            var clipFrame = start
            for gap in record.gaps.sorted(by: { $0.position < $1.position }) where gap.position <= record.frames {
                if gap.position > fileFrame {
                    runs.append((clipFrame, fileFrame, gap.position - fileFrame))
                    clipFrame += gap.position - fileFrame
                    fileFrame = gap.position
                }
                clipFrame += gap.length
            }
            if record.frames > fileFrame { runs.append((clipFrame, fileFrame, record.frames - fileFrame)) }
            previousEnd = (record.endTime, clipFrame + record.frames - fileFrame)
            var used = false
            for run in runs {
                let begin = max(run.clipFrame, cursor)
                let end = min(run.clipFrame + run.frames, total)
                guard end > begin else { continue }
                if begin > cursor { plan.pieces.append(.silence(frames: begin - cursor)) }
                if !used {
                    plan.segments.append(record)
                    used = true
                }
                plan.pieces.append(
                    .audio(
                        source: plan.segments.count - 1, fileFrame: run.fileFrame + begin - run.clipFrame,
                        frames: end - begin))
                cursor = end
            }
        }
        guard !plan.segments.isEmpty else {
            throw .invalidArgument("no recorded audio between \(from) and \(to)")
        }
        if total > cursor { plan.pieces.append(.silence(frames: total - cursor)) }
        return plan
    }
}

/// The container of an exported clip.
public enum ClipFormat: String, Sendable {
    case flac
    case wav
}

/// Writes a planned clip into an open file or pipe. Not thread-safe: one thread (the worker).
public enum ClipExporter {
    /// Frames decoded and encoded per step.
    static let chunk = 8192

    /// The Vorbis comments of a clip: APP, STREAM, START_TIME (the clip's `from`), END_TIME,
    /// GAPS (silent stretches in clip frames), and one SOURCE_SEGMENT per segment used
    /// (`path@fileFrame+frames` of each piece it gave, relative to the archive).
    public static func comments(_ plan: ClipPlan, app: String, stream: String, archiveDirectory: String) -> [(
        String, String
    )] {
        var comments: [(String, String)] = [
            (CommentName.app, app), (CommentName.stream, stream), (CommentName.startTime, plan.from.iso8601),
            ("END_TIME", plan.to.iso8601), (CommentName.gaps, SegmentGap.commentValue(plan.gaps)),
            (CommentName.encoder, "recd archive export"),
        ]
        let prefix = archiveDirectory.hasSuffix("/") ? archiveDirectory : archiveDirectory + "/"
        for piece in plan.pieces {
            guard case .audio(let source, let fileFrame, let frames) = piece else { continue }
            let path = plan.segments[source].path
            let relative = path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
            comments.append(("SOURCE_SEGMENT", "\(relative)@\(fileFrame)+\(frames)"))
        }
        return comments
    }

    /// Writes exactly `plan.frames` frames to `output` (a regular file open for writing, empty;
    /// or, for FLAC, a pipe). FLAC (`copyFrames`, the default): the sources' frames are copied
    /// where they verify, only the edges encoded (`writeByCopyingFrames`); WAV, or FLAC without
    /// `copyFrames`: every segment decoded and the clip encoded whole (a pipe's STREAMINFO then
    /// lacks the total and MD5). `name` is the output's name for messages. Stops early, with
    /// an error, when `isCancelled` says so (checked every chunk).
    /// Returns what copying frames did (nil when it was not used).
    @discardableResult
    public static func write(
        _ plan: ClipPlan, format: ClipFormat, to output: OwnedFile, name: String, comments: [(String, String)],
        compressionLevel: Int = 1, copyFrames: Bool = true, isCancelled: @escaping () -> Bool = { false }
    ) throws(ArchiveError) -> ClipCopyStatistics? {
        let channels = plan.channels
        if format == .flac && copyFrames {
            // Frames of the sources copied where they verify; decoded and encoded only at the edges.
            let isPipe = (try? output.status().kind) != .regular
            let sink: any FLACStreamSink =
                isPipe ? PipeSink(file: output, name: name, isCancelled: isCancelled) : FLACFileSink(file: output)
            do throws(MediaError) {
                return try writeByCopyingFrames(
                    plan, sink: sink,
                    seekable: !isPipe, name: name, comments: comments, compressionLevel: compressionLevel,
                    isCancelled: isCancelled)
            } catch {
                throw .unreadableFile(path: error.path.isEmpty ? name : error.path, reason: error.message)
            }
        }
        let sink: any ClipSink
        switch format {
        case .flac:
            do {
                let isPipe = (try? output.status().kind) != .regular
                let encoder = try FLACEncoder(
                    sink: isPipe
                        ? PipeSink(file: output, name: name, isCancelled: isCancelled) : FLACFileSink(file: output),
                    settings: FLACEncoder.Settings(
                        sampleRate: plan.sampleRate, channels: channels, bitsPerSample: plan.bitsPerSample,
                        compressionLevel: compressionLevel, vorbisComments: comments,
                        expectedTotalSamples: plan.frames),
                    path: name)
                sink = FLACClipSink(encoder: encoder)
            } catch {
                throw .unreadableFile(path: name, reason: "cannot write FLAC to it: \(error.message)")
            }
        case .wav:
            do {
                sink = WAVClipSink(
                    writer: try WAVWriter(
                        descriptor: output.descriptor, name: name, sampleRate: plan.sampleRate, channels: channels,
                        bitsPerSample: plan.bitsPerSample))
            } catch {
                throw .unreadableFile(path: name, reason: "cannot write WAV to it: \(error.message)")
            }
        }
        var buffer = [Int32](repeating: 0, count: chunk * channels)
        var decoders: [Int: (decoder: FLACDecoder, position: Int)] = [:]
        do throws(MediaError) {
            let cancelled = MediaError(.invalidArgument, path: name, message: "cancelled: nobody waits for the clip")
            for piece in plan.pieces {
                switch piece {
                case .silence(let frames):
                    for i in buffer.indices { buffer[i] = 0 }
                    var left = frames
                    while left > 0 {
                        if isCancelled() { throw cancelled }
                        let n = min(left, chunk)
                        try buffer.withUnsafeBufferPointer { b throws(MediaError) in try sink.write(b, frames: n) }
                        left -= n
                    }
                case .audio(let source, let fileFrame, let frames):
                    let record = plan.segments[source]
                    var state: (decoder: FLACDecoder, position: Int)
                    if let open = decoders[source] {
                        state = open
                    } else {
                        state = (try FLACDecoder(file: plan.file(source), mode: .strict, checkMD5: false), 0)
                    }
                    // The other segments are done with: one decoder open at a time.
                    decoders = [:]
                    let shift = Int32(plan.bitsPerSample - record.bitsPerSample)
                    while state.position < fileFrame {
                        let skipped = try state.decoder.skip(maxFrames: fileFrame - state.position)
                        guard skipped > 0 else { throw short(record, at: state.position) }
                        state.position += skipped
                    }
                    var left = frames
                    while left > 0 {
                        if isCancelled() { throw cancelled }
                        let n = try buffer.withUnsafeMutableBufferPointer { b throws(MediaError) in
                            try state.decoder.read(into: b.baseAddress!, maxFrames: min(left, chunk))
                        }
                        guard n > 0 else { throw short(record, at: state.position) }
                        if shift > 0 { for i in 0..<(n * channels) { buffer[i] <<= shift } }
                        try buffer.withUnsafeBufferPointer { b throws(MediaError) in try sink.write(b, frames: n) }
                        state.position += n
                        left -= n
                    }
                    decoders[source] = state
                }
            }
            try sink.finish()
        } catch {
            throw .unreadableFile(path: error.path.isEmpty ? name : error.path, reason: error.message)
        }
        return nil
    }

    static func short(_ record: SegmentRecord, at frame: Int) -> MediaError {
        MediaError(
            .invalidArgument, path: record.path,
            message: "the segment ends at frame \(frame), before the \(record.frames) frames the index lists; "
                + "run `recctl archive verify` and `recctl archive reindex`")
    }
}

/// A FLAC clip into a pipe or socket (`-o -`): waits for the reader at most `stallLimit`
/// seconds per write, so a reader that stops reading cannot hold the worker (and the verify,
/// reindex and retention jobs behind it) for ever; no seeking (STREAMINFO keeps no total).
final class PipeSink: FLACStreamSink {
    static let stallLimit = 30
    let file: OwnedFile
    let name: String
    let isCancelled: () -> Bool
    private(set) var failure: MediaError?

    init(file: OwnedFile, name: String, isCancelled: @escaping () -> Bool) {
        self.file = file
        self.name = name
        self.isCancelled = isCancelled
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard failure == nil else { return false }
        var done = 0
        var idle = 0
        while done < bytes.count {
            do throws(SystemError) {
                var entries = [PollEntry(descriptor: file.descriptor, events: .writable)]
                if try Descriptor.poll(&entries, timeoutMilliseconds: 1000) == 0 {
                    idle += 1
                    if isCancelled() || idle >= Self.stallLimit {
                        failure = MediaError(
                            .io, path: name,
                            message:
                                "the reader took no data for \(idle) s; read the clip as it comes (`recctl archive export ... -o - | flac -d -`)"
                        )
                        return false
                    }
                    continue
                }
                idle = 0
                // One write of at most what a pipe takes without blocking for long.
                let slice = UnsafeRawBufferPointer(rebasing: bytes[done..<min(bytes.count, done + 4096)])
                switch try Descriptor.write(file.descriptor, slice) {
                case .transferred(let count): done += count
                default: continue
                }
            } catch {
                failure = MediaError(
                    .io, path: name, message: "writing the clip failed: \(error.message)", cause: error)
                return false
            }
        }
        return true
    }
}

/// Where a clip's samples go: FLAC through the one encoder, or WAV through libsndfile.
private protocol ClipSink {
    func write(_ samples: UnsafeBufferPointer<Int32>, frames: Int) throws(MediaError)
    func finish() throws(MediaError)
}

private final class FLACClipSink: ClipSink {
    let encoder: FLACEncoder
    init(encoder: FLACEncoder) { self.encoder = encoder }
    func write(_ samples: UnsafeBufferPointer<Int32>, frames: Int) throws(MediaError) {
        try encoder.encode(UnsafeBufferPointer(rebasing: samples[..<(frames * encoder.settings.channels)]))
    }
    func finish() throws(MediaError) { try encoder.finish() }
}

private final class WAVClipSink: ClipSink {
    let writer: WAVWriter
    init(writer: WAVWriter) { self.writer = writer }
    func write(_ samples: UnsafeBufferPointer<Int32>, frames: Int) throws(MediaError) {
        try writer.write(samples: Array(samples[..<(frames * writer.channels)]))
    }
    func finish() throws(MediaError) { writer.close() }
}

extension UTCTime {
    /// Parses ISO 8601 with a zone: `YYYY-MM-DDTHH:MM:SS[.fraction]` then `Z`, `±HH:MM` or
    /// `±HHMM`. nil without a zone: a local time would mean different instants on different
    /// machines.
    public init?(iso8601WithZone text: String) {
        if text.hasSuffix("Z") || text.hasSuffix("z") {
            self.init(iso8601: text)
            return
        }
        var zone = Substring(text.suffix(6))
        if zone.count == 6, zone.dropFirst(3).first == ":" {
            zone = zone.prefix(3) + zone.suffix(2)
        } else {
            zone = text.suffix(5)
        }
        guard zone.count == 5, let sign = zone.first, sign == "+" || sign == "-",
            let hours = Int(zone.dropFirst().prefix(2)), let minutes = Int(zone.suffix(2)), hours < 24, minutes < 60
        else { return nil }
        let zoneLength = text.suffix(6).dropFirst(3).first == ":" ? 6 : 5
        guard let local = UTCTime(iso8601: String(text.dropLast(zoneLength)) + "Z") else { return nil }
        let offset = Int64(hours * 3600 + minutes * 60) * 1_000_000_000
        let (instant, overflow) = local.nanosecondsSinceEpoch.subtractingReportingOverflow(sign == "+" ? offset : -offset)
        guard !overflow else { return nil }
        self.init(nanosecondsSinceEpoch: instant)
    }
}

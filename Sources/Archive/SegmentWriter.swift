// One crash-safe FLAC segment (SPEC §9): written as `<name>.flac.partial`, flushed at least
// every second (the recorder syncs all its files together), finished by rewriting STREAMINFO
// (total samples, MD5) and adding the end comments in place, then renamed to its final name
// without ever replacing a file.

import Codec
import Platform

/// What a finished segment is: where it ended up and what it holds. A plain value: any thread.
public struct FinishedSegment: Hashable, Sendable {
    /// The final path (the planned one, or `-1`, `-2`... when that name was taken meanwhile).
    public var path: String
    /// Frames (samples per channel) in the file.
    public var frames: Int
    /// File size in bytes.
    public var bytes: Int64
    public var endReason: EndReason
    /// Every gap recorded, even those that did not fit in the GAPS comment.
    public var gaps: [SegmentGap]
    /// Integrated loudness, range and true peak of the samples written (also in the file's
    /// LOUDNESS_LUFS, LOUDNESS_RANGE_LU, TRUE_PEAK_DBTP comments); all nil when not measured.
    public var loudness = LoudnessSummary(integratedLUFS: nil, rangeLU: nil, truePeakDBTP: nil)
}

/// A FLAC file being written: Codec's `FLACEncoder` into a space-reserving `FLACFileSink` on
/// `<path>.partial`, created with O_EXCL (an existing file is never overwritten or reopened).
///
/// - 1...8 channels, 16 or 24 bits, compression 0...8, MD5 on, a seek table (a point every
///   10 s of the planned length), the opening Vorbis comments and 8 KiB of padding that the
///   end comments (END_REASON, GAPS) grow into at `finish`.
/// - Float samples are clamped to [-1, 1) before conversion: an out-of-range value never
///   reaches libFLAC. NaN becomes 0.
/// - Bytes go to the kernel frame by frame; fdatasync runs when its owner says (`flushIfUnsynced`:
///   the recorder does it for all its files together once per `flushInterval`, a second by
///   default, so a crash loses at most the last second, and a backlog drained fast after a
///   stall costs no more syncs than a steady stream), and at `finish`.
/// - Frames come interleaved (`write(interleaved:…)`) or one run per channel
///   (`write(planar:frames:)`: the recorder's path, straight from the capture ring); the file
///   is the same.
/// - While the file system supports it, disk space is reserved ahead of the data; when the
///   disk fills, `isLowOnSpace` turns true while enough is still reserved to finish cleanly.
///
/// Threads: one thread at a time — the recorder's archiver thread, or whoever runs recovery.
/// Releasing an unfinished writer abandons it: the `.partial` stays for `PartialRecovery`.
public final class SegmentWriter {
    /// Bytes of PADDING written after the opening comments, for the end comments.
    public static let paddingBytes = 8192
    /// Seconds between seek points.
    public static let seekPointSeconds = 10
    /// The suffix of a segment being written.
    public static let partialSuffix = ".partial"

    public let format: SegmentFormat
    /// The final path planned; `finish` returns the one actually used.
    public let path: String
    /// Where the data is written until `finish`.
    public let partialPath: String
    /// Frames handed to the encoder so far.
    public private(set) var framesWritten = 0
    /// Gaps recorded so far, positions in frames of this file.
    public private(set) var gaps: [SegmentGap] = []
    /// False: no fdatasync until `finish` (recovery, whose source stays until then).
    var syncsPeriodically = true

    private enum State {
        case open
        case finished
        case failed(ArchiveError)
        case abandoned
    }

    private var state = State.open
    private let file: OwnedFile
    private var encoder: FLACEncoder?
    private let sink: FLACFileSink
    /// One block of integers: interleaved, or (planar writes) channel `c` at `c * blocksize`.
    private let scratch: UnsafeMutablePointer<Int32>
    /// Each channel's run in `scratch`, for a planar block.
    private let scratchChannels: UnsafeMutablePointer<UnsafePointer<Int32>?>
    private let quantizer: SampleQuantizer
    private let blocksize: Int
    /// File bytes written when the last fdatasync ran.
    private var syncedBytes: Int64 = 0
    /// The metadata blocks as written at the start (the seek table never moves).
    private var headerBlocks: [MetadataBlockLocation] = []
    /// The loudness of what was written, measured here on the writer's thread (the archiver,
    /// or recovery's, which re-encodes a partial from its first frame).
    private var loudnessMeter: LoudnessMeter?

    /// Creates `<path>.partial` (or, if `path` or its partial exist, `<name>-1.flac.partial`,
    /// `-2`, ...), creating the directories on the way, and writes the stream header.
    ///
    /// - Parameters:
    ///   - comments: the opening Vorbis comments (START_TIME, APP, ...), in order.
    ///   - expectedFrames: the planned length, for the seek table (0: unknown).
    public convenience init(
        path: String, format: SegmentFormat, comments: [VorbisComment], expectedFrames: Int = 0
    ) throws(ArchiveError) {
        try self.init(
            path: path, temporarySuffix: SegmentWriter.partialSuffix, format: format, comments: comments,
            expectedFrames: expectedFrames)
    }

    /// `reservesSpace: false` behaves as on a file system without fallocate (tests use it).
    init(
        path requestedPath: String, temporarySuffix: String, format: SegmentFormat, comments: [VorbisComment],
        expectedFrames: Int, reservesSpace: Bool = true
    ) throws(ArchiveError) {
        try format.validate()
        guard requestedPath.hasSuffix(".flac") else {
            throw .invalidArgument("a segment's path must end in .flac: \(requestedPath)")
        }
        try archiveCall { () throws(SystemError) in
            try FileSystem.makeDirectories(FileSystem.directoryName(of: requestedPath))
        }
        var attempt = 0
        var created: (String, OwnedFile)?
        while created == nil {
            let candidate = SegmentWriter.suffixed(requestedPath, attempt)
            attempt += 1
            if FileSystem.exists(candidate) { continue }
            do throws(SystemError) {
                created = (candidate, try OwnedFile(candidate + temporarySuffix, .createExclusive(permissions: 0o644)))
            } catch {
                guard error.errno == .fileExists, attempt < 10_000 else { throw ArchiveError(error) }
            }
        }
        let (finalPath, file) = created!
        path = finalPath
        partialPath = finalPath + temporarySuffix
        self.file = file
        self.format = format
        blocksize = FLACEncoder.blocksize(compressionLevel: format.compressionLevel)
        // The lock tells recovery that this partial is being written.
        _ = file.tryLockExclusive()
        let frameBytes = FLACEncoder.maximumFrameBytes(
            channels: format.channels, bitsPerSample: format.bitsPerSample, blocksize: blocksize)
        sink = FLACFileSink(
            file: file,
            reservation: reservesSpace
                ? FLACFileSink.Reservation(headroom: 3 * frameBytes + 65_536, growth: max(4 * frameBytes, 1 << 20))
                : nil)
        scratch = .allocate(capacity: blocksize * format.channels)
        scratchChannels = .allocate(capacity: format.channels)
        for channel in 0..<format.channels { scratchChannels[channel] = UnsafePointer(scratch + channel * blocksize) }
        quantizer = SampleQuantizer(bitsPerSample: format.bitsPerSample)
        if format.measuresLoudness {
            loudnessMeter = try? LoudnessMeter(
                channels: format.channels, sampleRate: format.sampleRate, engine: format.loudnessEngine)
        }
        do throws(ArchiveError) {
            guard sink.reserveInitialSpace() else { throw .diskFull(path: file.path) }
            let settings = FLACEncoder.Settings(
                sampleRate: format.sampleRate, channels: format.channels, bitsPerSample: format.bitsPerSample,
                compressionLevel: format.compressionLevel, vorbisComments: comments.map { ($0.name, $0.value) },
                expectedTotalSamples: expectedFrames,
                seekPointInterval: SegmentWriter.seekPointSeconds * format.sampleRate,
                paddingBytes: SegmentWriter.paddingBytes, blocksize: blocksize, streamableSubset: true,
                layout: .editableInPlace)
            do throws(MediaError) {
                encoder = try FLACEncoder(sink: sink, settings: settings, path: partialPath)
            } catch {
                throw encoderFailure(error)
            }
            headerBlocks = try FLACHeaderEditor.blocks(of: file)
            try archiveCall { () throws(SystemError) in
                try file.syncData()
                // The new name must survive a power cut too, not only the data behind it.
                try FileSystem.syncDirectory(FileSystem.directoryName(of: partialPath))
            }
            syncedBytes = sink.highWater
        } catch {
            // Nothing of value is in the file yet: remove what we created.
            dropEncoder()
            state = .abandoned
            try? FileSystem.remove(partialPath)
            throw error
        }
    }

    deinit {
        if case .open = state { abandon() }
        scratch.deallocate()
        scratchChannels.deallocate()
    }

    /// True once the disk is nearly full: stop writing and `finish` (the space to do so is
    /// reserved). Always false on file systems that cannot reserve space.
    public var isLowOnSpace: Bool { sink.isLowOnSpace }

    /// Samples (per channel) in the complete FLAC frames in the file, and the byte where the
    /// last of them ends: what a reader may take while the segment is written (libFLAC still
    /// holds the block it collects).
    public var completeFrames: Int { sink.framesInFile }
    public var completeBytes: Int64 { sink.endOfLastFrame }

    /// Whether `finish` can still succeed (no write has failed and it was not finished).
    public var isOpen: Bool {
        if case .open = state { return true }
        return false
    }

    /// Encodes interleaved frames (`samples.count` a multiple of `format.channels`).
    public func write(_ samples: UnsafeBufferPointer<Float>) throws(ArchiveError) {
        precondition(samples.count % format.channels == 0, "write whole frames")
        guard let base = samples.baseAddress else { return }
        try write(
            interleaved: base, frames: samples.count / format.channels, stride: format.channels, firstChannel: 0)
    }

    /// Encodes `frames` frames taken from a wider interleaved buffer: channels
    /// `firstChannel ..< firstChannel + format.channels` of frames `stride` samples apart.
    public func write(
        interleaved base: UnsafePointer<Float>, frames: Int, stride: Int, firstChannel: Int
    ) throws(ArchiveError) {
        precondition(firstChannel >= 0 && firstChannel + format.channels <= stride, "channel range outside the frame")
        try checkOpen()
        var done = 0
        while done < frames {
            let count = min(blocksize, frames - done)
            quantizer.quantize(
                base + done * stride, stride: stride, firstChannel: firstChannel, channels: format.channels,
                frames: count, into: scratch)
            try encode(scratch, frames: count)
            loudnessMeter?.add(
                interleaved: base + done * stride, frames: count, stride: stride, firstChannel: firstChannel)
            done += count
        }
    }

    /// Encodes `frames` frames held one run per channel: channel `c`'s samples start at
    /// `channelStarts[c]` (`format.channels` entries). Each channel is quantized into its own
    /// run and libFLAC takes the runs as they are: no interleaving on the way in, none taken
    /// apart inside libFLAC.
    public func write(planar channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int) throws(ArchiveError) {
        try checkOpen()
        var done = 0
        while done < frames {
            let count = min(blocksize, frames - done)
            for channel in 0..<format.channels {
                quantizer.quantize(
                    channelStarts[channel] + done, stride: 1, firstChannel: 0, channels: 1, frames: count,
                    into: scratch + channel * blocksize)
            }
            try encode(planar: count)
            loudnessMeter?.add(planar: channelStarts, offset: done, frames: count)
            done += count
        }
    }

    /// Momentary (400 ms) and short-term (3 s) loudness of the latest samples written, LUFS;
    /// nil while too little was written, for silence, or when not measured.
    public var momentaryLUFS: Double? { loudnessMeter?.momentaryLUFS }
    public var shortTermLUFS: Double? { loudnessMeter?.shortTermLUFS }

    /// Encodes integer samples already in the format's range (recovery's re-encode path).
    func write(integers base: UnsafePointer<Int32>, frames: Int) throws(ArchiveError) {
        try checkOpen()
        var done = 0
        while done < frames {
            let count = min(blocksize, frames - done)
            try encode(base + done * format.channels, frames: count)
            loudnessMeter?.add(
                integers: base + done * format.channels, frames: count, bitsPerSample: format.bitsPerSample)
            done += count
        }
    }

    /// Records that `length` frames are missing here (after the frames written so far). The
    /// GAPS comment in the file is updated at once, so a crash keeps it too.
    public func markGap(length: Int) {
        guard length > 0 else { return }
        if let last = gaps.last, last.position == framesWritten {
            gaps[gaps.count - 1].length += length
        } else {
            gaps.append(SegmentGap(position: framesWritten, length: length))
        }
        guard case .open = state else { return }
        // Best effort: when the list no longer fits, `finish` writes a shortened one.
        _ = try? writeComments([], reason: nil)
    }

    /// Adds a gap at an explicit position (recovery carrying over a partial's gaps).
    func recordGap(_ gap: SegmentGap) {
        gaps.append(gap)
        gaps.sort { $0.position < $1.position }
    }

    /// fdatasync now if bytes reached the file since the last one. The recorder calls it for
    /// all its files together, once per `ArchiverTiming.flushInterval`.
    public func flushIfUnsynced() throws(ArchiveError) {
        guard case .open = state, syncsPeriodically, sink.highWater > syncedBytes else { return }
        try flush()
    }

    /// fdatasync now.
    public func flush() throws(ArchiveError) {
        try checkOpen()
        do throws(ArchiveError) {
            try archiveCall { () throws(SystemError) in try file.syncData() }
        } catch {
            state = .failed(error)
            throw error
        }
        syncedBytes = sink.highWater
    }

    /// Finishes the segment: the last block, STREAMINFO with total samples and MD5, the end
    /// comments (END_REASON, GAPS, the loudness comments, then `extraComments`) in place of padding, fsync, rename to
    /// the final name (never replacing a file: `-1`, `-2`... if it was taken), fsync of the
    /// directory. On failure the `.partial` stays for recovery.
    public func finish(reason: EndReason, extraComments: [VorbisComment] = []) throws(ArchiveError) -> FinishedSegment {
        try checkOpen()
        do throws(ArchiveError) {
            guard let encoder else { throw .encoder(.uninitialized, path: partialPath) }
            do throws(MediaError) {
                try encoder.finish()
            } catch {
                throw encoderFailure(error)
            }
            dropEncoder()
            try FLACHeaderEditor.retireUnusedSeekPoints(in: file, blocks: headerBlocks)
            let loudness = CommentName.stored(
                loudnessMeter?.summary ?? LoudnessSummary(integratedLUFS: nil, rangeLU: nil, truePeakDBTP: nil))
            try writeComments(CommentName.loudnessComments(loudness) + extraComments, reason: reason)
            let size = try archiveCall { () throws(SystemError) in try file.size() }
            try archiveCall { () throws(SystemError) in try sink.releaseReservation(size: size) }
            try archiveCall { () throws(SystemError) in try file.sync() }
            let finalPath = try publish()
            state = .finished
            // The rename is durable once the directory is; a failure here cannot undo it.
            try? FileSystem.syncDirectory(FileSystem.directoryName(of: finalPath))
            try? file.close()
            return FinishedSegment(
                path: finalPath, frames: framesWritten, bytes: size, endReason: reason, gaps: gaps, loudness: loudness)
        } catch {
            state = .failed(error)
            dropEncoder()
            try? file.close()
            throw error
        }
    }

    /// Stops without finishing: closes the file as a crash would leave it (what reached the
    /// kernel stays; libFLAC's unfinished block is lost). The `.partial` stays for recovery.
    public func abandon() {
        dropEncoder()
        try? file.close()
        if case .open = state { state = .abandoned }
    }

    /// Abandons and deletes the partial file; only for a segment that holds no frames.
    func discardEmpty() {
        precondition(framesWritten == 0, "only an empty segment may be discarded")
        abandon()
        try? FileSystem.remove(partialPath)
    }

    /// Writes END_REASON (when given), GAPS (as many as fit, with GAPS_TRUNCATED when not all
    /// do) and `extra` into the comment block, in place.
    private func writeComments(_ extra: [VorbisComment], reason: EndReason?) throws(ArchiveError) {
        var kept = gaps.count
        while true {
            var comments: [VorbisComment] = []
            if let reason { comments.append(VorbisComment(CommentName.endReason, reason.rawValue)) }
            if !gaps.isEmpty {
                comments.append(VorbisComment(CommentName.gaps, SegmentGap.commentValue(Array(gaps.prefix(kept)))))
                if kept < gaps.count { comments.append(VorbisComment(CommentName.gapsTruncated, String(gaps.count))) }
            }
            comments += extra
            // Read the block layout afresh: each edit moves the boundary between comments and padding.
            if try FLACHeaderEditor.setComments(comments, in: file, blocks: FLACHeaderEditor.blocks(of: file)) {
                return
            }
            guard kept > 0 else {
                throw .invalidArgument("the end comments do not fit in \(SegmentWriter.paddingBytes) bytes of padding")
            }
            kept = kept > 16 ? kept * 3 / 4 : kept - 1
        }
    }

    private func checkOpen() throws(ArchiveError) {
        switch state {
        case .open: return
        case .failed(let error): throw error
        case .finished, .abandoned:
            throw .invalidArgument("segment \(path) is no longer open for writing")
        }
    }

    private func encode(_ samples: UnsafePointer<Int32>, frames: Int) throws(ArchiveError) {
        do throws(MediaError) {
            guard let encoder else { throw MediaError(.encoderFailed, path: partialPath, message: "no encoder") }
            // Quantized (or decoded at this width): every sample is in range.
            try encoder.encode(inRange: samples, frames: frames)
        } catch {
            let failure = encoderFailure(error)
            state = .failed(failure)
            throw failure
        }
        framesWritten += frames
    }

    /// `encode` of the planar block in `scratchChannels`.
    private func encode(planar frames: Int) throws(ArchiveError) {
        do throws(MediaError) {
            guard let encoder else { throw MediaError(.encoderFailed, path: partialPath, message: "no encoder") }
            try encoder.encode(inRangePlanar: scratchChannels, frames: frames)
        } catch {
            let failure = encoderFailure(error)
            state = .failed(failure)
            throw failure
        }
        framesWritten += frames
    }

    /// The archive's error for what the encoder threw: a failed write or seek of the sink as
    /// the system error it was (`diskFull` for ENOSPC), a refused setting or a stopped encoder
    /// by libFLAC's status.
    private func encoderFailure(_ error: MediaError) -> ArchiveError {
        if let cause = sink.failure?.cause, cause.errno != .badFileDescriptor {
            return ArchiveError(SystemError(cause.errno, operation: "write", path: partialPath))
        }
        if let status = error.encoderInitStatus { return .encoderInit(status, path: partialPath) }
        if error.kind == .invalidArgument { return .invalidArgument(error.message) }
        return .encoder(encoder?.state ?? error.encoderState ?? .uninitialized, path: partialPath)
    }

    /// Lets the encoder go, after sealing the sink: nothing reaches the file from it any more.
    private func dropEncoder() {
        sink.seal()
        encoder = nil
    }

    private func publish() throws(ArchiveError) -> String {
        var attempt = 0
        while true {
            let candidate = SegmentWriter.suffixed(path, attempt)
            do throws(SystemError) {
                try FileSystem.renameNoReplace(partialPath, candidate)
                return candidate
            } catch {
                guard error.errno == .fileExists, attempt < 10_000 else { throw ArchiveError(error) }
            }
            attempt += 1
        }
    }

    /// `name.flac` for 0, `name-1.flac` for 1, ...
    static func suffixed(_ path: String, _ attempt: Int) -> String {
        guard attempt > 0 else { return path }
        return String(path.dropLast(5)) + "-\(attempt).flac"
    }
}

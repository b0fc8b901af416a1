// libFLAC's stream encoder over a POSIX file descriptor, with our own write, seek and tell
// callbacks. The only file that touches FLAC__StreamEncoder.
//
// Threads: a FLACStreamEncoder and its EncoderSink belong to the one thread that owns the
// SegmentWriter using them (the archiver); libFLAC calls the callbacks on that same thread,
// from inside process and finish.

internal import CFLAC
import Platform

/// Where the encoder's bytes go: the segment's file. Writes go straight to the kernel (no
/// user-space buffer), one write(2) per FLAC frame, so a crash loses at most the block libFLAC
/// is still collecting.
///
/// Space reservation: while the file system allows it (fallocate KEEP_SIZE), blocks are
/// reserved `headroom` bytes past the end of what was written. When the disk fills, growing
/// the reservation fails *before* a write can fail, `isLowOnSpace` turns true, and the
/// headroom left is enough to finish the segment cleanly (last frame, STREAMINFO, comments).
final class EncoderSink {
    let file: OwnedFile
    /// The first failed write or seek; nil while healthy. Nothing is written after one.
    private(set) var failure: SystemError?
    private(set) var highWater: Int64 = 0
    /// End of the last whole audio frame written, and the samples (per channel) before it.
    private(set) var endOfLastFrame: Int64 = 0
    private(set) var framesInFile = 0
    private(set) var isLowOnSpace = false
    private(set) var reservedEnd: Int64 = 0
    private var reserving: Bool
    private var position: Int64 = 0
    let headroom: Int64
    let growth: Int64

    init(file: OwnedFile, headroom: Int64, growth: Int64, reserving: Bool) {
        self.file = file
        self.headroom = headroom
        self.growth = growth
        self.reserving = reserving
    }

    /// Reserves the first stretch; throws `.diskFull` when not even the headroom fits.
    func reserveInitialSpace() throws(ArchiveError) {
        maintainReservation()
        if isLowOnSpace { throw .diskFull(path: file.path) }
    }

    /// Rejects all further writes (the segment is being abandoned).
    func seal() {
        if failure == nil { failure = SystemError(.badFileDescriptor, operation: "write", path: file.path) }
    }

    fileprivate func write(_ bytes: UnsafeRawBufferPointer, samples: UInt32) -> Bool {
        guard failure == nil else { return false }
        do throws(SystemError) {
            try file.writeAll(bytes)
        } catch {
            failure = error
            return false
        }
        position += Int64(bytes.count)
        highWater = max(highWater, position)
        if samples > 0 {
            endOfLastFrame = position
            framesInFile += Int(samples)
        }
        maintainReservation()
        return true
    }

    fileprivate func seek(to offset: UInt64) -> Bool {
        guard failure == nil else { return false }
        do throws(SystemError) {
            position = try file.seek(to: Int64(offset))
            return true
        } catch {
            failure = error
            return false
        }
    }

    fileprivate var tell: UInt64? { failure == nil ? UInt64(position) : nil }

    private func maintainReservation() {
        guard reserving, highWater + headroom > reservedEnd else { return }
        let target = highWater + headroom + growth
        do throws(SystemError) {
            try file.reserve(offset: reservedEnd, length: target - reservedEnd)
            reservedEnd = target
            return
        } catch where error.errno == .noSpace || error.errno == .diskQuotaExceeded {
            let minimum = highWater + headroom
            do throws(SystemError) {
                try file.reserve(offset: reservedEnd, length: minimum - reservedEnd)
                reservedEnd = minimum
            } catch {
                isLowOnSpace = true
            }
            return
        } catch {}
        // EOPNOTSUPP and friends: this file system cannot reserve; a full disk will then show
        // up as a failed write and the segment stays a .partial for recovery.
        reserving = false
    }

    /// Gives back the reserved blocks past `size` (punch hole for tmpfs, truncate for ext4).
    func releaseReservation(size: Int64) throws(ArchiveError) {
        if reservedEnd > size { file.release(offset: size, length: reservedEnd - size) }
        reservedEnd = 0
        try archiveCall { () throws(SystemError) in try file.truncate(to: size) }
    }
}

/// One FLAC stream being encoded into an `EncoderSink`. Owns the FLAC__StreamEncoder and the
/// metadata objects it was given; deletes them in `deinit`.
final class FLACStreamEncoder {
    private let encoder: UnsafeMutablePointer<FLAC__StreamEncoder>
    private let metadataBlocks: UnsafeMutablePointer<UnsafeMutablePointer<FLAC__StreamMetadata>?>
    private let metadataCount: Int
    let sink: EncoderSink
    let blocksize: Int
    private let sinkReference: Unmanaged<EncoderSink>

    /// Worst-case bytes of one FLAC frame for this format (verbatim subframes, the side
    /// channel one bit wider, frame header and footer).
    static func maximumFrameBytes(format: SegmentFormat, blocksize: Int) -> Int64 {
        Int64(blocksize * format.channels * (format.bitsPerSample + 1) / 8 + 128)
    }

    /// The block size libFLAC uses at a compression level (levels 0...2: 1152, 3...8: 4096).
    static func blocksize(compressionLevel: Int) -> Int { compressionLevel <= 2 ? 1152 : 4096 }

    /// Sets up the encoder; `start()` then writes the stream header: STREAMINFO, a SEEKTABLE with a point
    /// every `seekPointSpacing` frames up to `expectedFrames`, the VORBIS_COMMENT block and
    /// `paddingBytes` of PADDING (last, so end comments can grow into it in place).
    init(
        sink: EncoderSink, format: SegmentFormat, comments: [VorbisComment], seekPointSpacing: Int,
        expectedFrames: Int, paddingBytes: Int
    ) throws(ArchiveError) {
        let path = sink.file.path
        guard let encoder = FLAC__stream_encoder_new() else { throw .encoder(.memoryAllocationError, path: path) }
        self.encoder = encoder
        self.sink = sink
        sinkReference = Unmanaged.passRetained(sink)

        var blocks: [UnsafeMutablePointer<FLAC__StreamMetadata>] = []
        let seekTable = FLAC__metadata_object_new(FLAC__METADATA_TYPE_SEEKTABLE)!
        blocks.append(seekTable)
        if expectedFrames > 0 && seekPointSpacing > 0 {
            _ = FLAC__metadata_object_seektable_template_append_spaced_points_by_samples(
                seekTable, UInt32(clamping: seekPointSpacing), UInt64(expectedFrames))
        } else {
            _ = FLAC__metadata_object_seektable_template_append_point(seekTable, 0)
        }
        _ = FLAC__metadata_object_seektable_template_sort(seekTable, 1)
        let vorbis = FLAC__metadata_object_new(FLAC__METADATA_TYPE_VORBIS_COMMENT)!
        blocks.append(vorbis)
        for comment in comments {
            var entry = FLAC__StreamMetadata_VorbisComment_Entry()
            guard
                FLAC__metadata_object_vorbiscomment_entry_from_name_value_pair(&entry, comment.name, comment.value)
                    != 0,
                FLAC__metadata_object_vorbiscomment_append_comment(vorbis, entry, 0) != 0
            else {
                for block in blocks { FLAC__metadata_object_delete(block) }
                FLAC__stream_encoder_delete(encoder)
                sinkReference.release()
                throw .invalidArgument("Vorbis comment name \"\(comment.name)\" is not allowed (ASCII, no '=')")
            }
        }
        let padding = FLAC__metadata_object_new(FLAC__METADATA_TYPE_PADDING)!
        padding.pointee.length = UInt32(paddingBytes)
        blocks.append(padding)
        metadataCount = blocks.count
        metadataBlocks = .allocate(capacity: blocks.count)
        for (index, block) in blocks.enumerated() { (metadataBlocks + index).initialize(to: block) }

        blocksize = FLACStreamEncoder.blocksize(compressionLevel: format.compressionLevel)
        _ = FLAC__stream_encoder_set_verify(encoder, 0)
        _ = FLAC__stream_encoder_set_compression_level(encoder, UInt32(format.compressionLevel))
        _ = FLAC__stream_encoder_set_blocksize(encoder, UInt32(blocksize))
        _ = FLAC__stream_encoder_set_channels(encoder, UInt32(format.channels))
        _ = FLAC__stream_encoder_set_bits_per_sample(encoder, UInt32(format.bitsPerSample))
        _ = FLAC__stream_encoder_set_sample_rate(encoder, UInt32(format.sampleRate))
        if expectedFrames > 0 { _ = FLAC__stream_encoder_set_total_samples_estimate(encoder, UInt64(expectedFrames)) }
        _ = FLAC__stream_encoder_set_metadata(encoder, metadataBlocks, UInt32(metadataCount))
    }

    /// Initializes the encoder, which writes the stream header through the sink.
    func start() throws(ArchiveError) {
        let status = FLAC__stream_encoder_init_stream(
            encoder, encoderWrite, encoderSeek, encoderTell, nil, sinkReference.toOpaque())
        guard status == FLAC__STREAM_ENCODER_INIT_STATUS_OK else {
            if let failure = sink.failure {
                throw ArchiveError(SystemError(failure.errno, operation: "write", path: sink.file.path))
            }
            throw .encoderInit(FLACEncoderInitStatus(cValue: status.rawValue), path: sink.file.path)
        }
    }

    deinit {
        // Deleting an encoder that was not finished writes nothing (libFLAC skips the last
        // block and the metadata rewrite while deleting); the sink is sealed anyway.
        sink.seal()
        FLAC__stream_encoder_delete(encoder)
        for index in 0..<metadataCount { FLAC__metadata_object_delete(metadataBlocks[index]) }
        metadataBlocks.deallocate()
        sinkReference.release()
    }

    var state: FLACEncoderState { FLACEncoderState(cValue: FLAC__stream_encoder_get_state(encoder).rawValue) }

    /// Encodes `frames` interleaved frames (each sample within the format's bit range).
    func process(_ samples: UnsafePointer<Int32>, frames: Int) -> Bool {
        FLAC__stream_encoder_process_interleaved(encoder, samples, UInt32(frames)) != 0
    }

    /// Encodes the last block and rewrites STREAMINFO (total samples, MD5, frame sizes) and the
    /// seek table through the seek callback.
    func finish() -> Bool { FLAC__stream_encoder_finish(encoder) != 0 }
}

private func encoderWrite(
    _ encoder: UnsafePointer<FLAC__StreamEncoder>?, _ buffer: UnsafePointer<FLAC__byte>?, _ bytes: Int,
    _ samples: UInt32, _ currentFrame: UInt32, _ clientData: UnsafeMutableRawPointer?
) -> FLAC__StreamEncoderWriteStatus {
    let sink = Unmanaged<EncoderSink>.fromOpaque(clientData!).takeUnretainedValue()
    let ok = sink.write(UnsafeRawBufferPointer(start: buffer, count: bytes), samples: samples)
    return ok ? FLAC__STREAM_ENCODER_WRITE_STATUS_OK : FLAC__STREAM_ENCODER_WRITE_STATUS_FATAL_ERROR
}

private func encoderSeek(
    _ encoder: UnsafePointer<FLAC__StreamEncoder>?, _ offset: FLAC__uint64, _ clientData: UnsafeMutableRawPointer?
) -> FLAC__StreamEncoderSeekStatus {
    let sink = Unmanaged<EncoderSink>.fromOpaque(clientData!).takeUnretainedValue()
    return sink.seek(to: offset) ? FLAC__STREAM_ENCODER_SEEK_STATUS_OK : FLAC__STREAM_ENCODER_SEEK_STATUS_ERROR
}

private func encoderTell(
    _ encoder: UnsafePointer<FLAC__StreamEncoder>?, _ offset: UnsafeMutablePointer<FLAC__uint64>?,
    _ clientData: UnsafeMutableRawPointer?
) -> FLAC__StreamEncoderTellStatus {
    let sink = Unmanaged<EncoderSink>.fromOpaque(clientData!).takeUnretainedValue()
    guard let position = sink.tell else { return FLAC__STREAM_ENCODER_TELL_STATUS_ERROR }
    offset?.pointee = position
    return FLAC__STREAM_ENCODER_TELL_STATUS_OK
}

/// `recd <version> / libFLAC <version>`: the ENCODER comment.
func encoderDescription(recdVersion: String) -> String {
    let flac = recd_flac_version().map { String(cString: $0) } ?? "unknown"
    return "recd \(recdVersion) / libFLAC \(flac)"
}

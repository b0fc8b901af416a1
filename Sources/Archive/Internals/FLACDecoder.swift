// libFLAC's stream decoder over a file: frames handed over interleaved, decoding stops at the
// first error (so "as far as valid frames go" means exactly that), STREAMINFO and Vorbis
// comments collected on the way. The only file that touches FLAC__StreamDecoder.
//
// Threads: the calling thread; libFLAC calls back on it.

internal import CFLAC

/// What STREAMINFO says.
struct StreamInfo: Equatable {
    var sampleRate: Int
    var channels: Int
    var bitsPerSample: Int
    /// 0 when unknown (a partial file's STREAMINFO is rewritten only at finish).
    var totalFrames: Int
    var md5: [UInt8]

    var hasMD5: Bool { md5.contains { $0 != 0 } }
}

/// The outcome of decoding one file.
struct DecodeSummary {
    var streamInfo: StreamInfo?
    var comments: [VorbisComment] = []
    /// Frames (samples per channel) decoded without error and handed over.
    var frames = 0
    /// The first decoder error (libFLAC's name for it), if any.
    var error: String?
    /// Decoding ran to the end without error and the MD5 in STREAMINFO did not match.
    var md5Mismatch = false
}

/// Holds the decoding state libFLAC's callbacks reach through client_data.
private final class DecoderContext {
    var summary = DecodeSummary()
    var interleaved: [Int32] = []
    var frameLimit: Int
    let onFrame: ((UnsafePointer<Int32>, Int, StreamInfo) -> Bool)?
    var stoppedByCaller = false

    init(frameLimit: Int, onFrame: ((UnsafePointer<Int32>, Int, StreamInfo) -> Bool)?) {
        self.frameLimit = frameLimit
        self.onFrame = onFrame
    }
}

enum FLACFileDecoder {
    /// Decodes `path` from the start. `onFrame` gets each frame's samples interleaved (and may
    /// return false to stop); decoding stops at the first decoder error or after `frameLimit`
    /// frames.
    static func decode(
        path: String, checkMD5: Bool, frameLimit: Int = .max,
        onFrame: ((UnsafePointer<Int32>, Int, StreamInfo) -> Bool)? = nil
    ) throws(ArchiveError) -> DecodeSummary {
        guard let decoder = FLAC__stream_decoder_new() else {
            throw .unreadableFile(path: path, reason: "libFLAC could not allocate a decoder")
        }
        defer { FLAC__stream_decoder_delete(decoder) }
        let context = DecoderContext(frameLimit: frameLimit, onFrame: onFrame)
        let reference = Unmanaged.passRetained(context)
        defer { reference.release() }
        _ = FLAC__stream_decoder_set_md5_checking(decoder, checkMD5 ? 1 : 0)
        _ = FLAC__stream_decoder_set_metadata_respond(decoder, FLAC__METADATA_TYPE_VORBIS_COMMENT)
        let status = FLAC__stream_decoder_init_file(
            decoder, path, decoderWrite, decoderMetadata, decoderError, reference.toOpaque())
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
            if status == FLAC__STREAM_DECODER_INIT_STATUS_ERROR_OPENING_FILE {
                throw .unreadableFile(path: path, reason: "cannot open it")
            }
            throw .unreadableFile(path: path, reason: "libFLAC decoder init status \(status.rawValue)")
        }
        let completed = FLAC__stream_decoder_process_until_end_of_stream(decoder) != 0
        let state = FLAC__stream_decoder_get_state(decoder)
        if context.summary.error == nil && !context.stoppedByCaller && !completed {
            context.summary.error = decoderStateName(state.rawValue)
        }
        if context.summary.error == nil && !context.stoppedByCaller && context.summary.streamInfo == nil {
            context.summary.error = "no STREAMINFO"
        }
        let md5Matches = FLAC__stream_decoder_finish(decoder) != 0
        if checkMD5 && context.summary.error == nil && !context.stoppedByCaller && !md5Matches {
            context.summary.md5Mismatch = true
        }
        return context.summary
    }
}

private func decoderWrite(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ frame: UnsafePointer<FLAC__Frame>?,
    _ buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>?, _ clientData: UnsafeMutableRawPointer?
) -> FLAC__StreamDecoderWriteStatus {
    let context = Unmanaged<DecoderContext>.fromOpaque(clientData!).takeUnretainedValue()
    // libFLAC reports a CRC mismatch and then still delivers the (silenced) frame: refuse it.
    guard context.summary.error == nil, let frame, let buffer, let info = context.summary.streamInfo else {
        return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
    }
    let channels = Int(frame.pointee.header.channels)
    guard channels == info.channels else {
        context.summary.error = "a frame has \(channels) channels, STREAMINFO says \(info.channels)"
        return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
    }
    let frames = min(Int(frame.pointee.header.blocksize), context.frameLimit - context.summary.frames)
    if let onFrame = context.onFrame, frames > 0 {
        if context.interleaved.count < frames * channels {
            context.interleaved = [Int32](repeating: 0, count: frames * channels)
        }
        let keepGoing = context.interleaved.withUnsafeMutableBufferPointer { target -> Bool in
            for channel in 0..<channels {
                let source = buffer[channel]!
                for index in 0..<frames { target[index * channels + channel] = source[index] }
            }
            return onFrame(UnsafePointer(target.baseAddress!), frames, info)
        }
        guard keepGoing else {
            context.stoppedByCaller = true
            return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
        }
    }
    context.summary.frames += max(frames, 0)
    if context.summary.frames >= context.frameLimit {
        context.stoppedByCaller = true
        return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
    }
    return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
}

private func decoderMetadata(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ metadata: UnsafePointer<FLAC__StreamMetadata>?,
    _ clientData: UnsafeMutableRawPointer?
) {
    let context = Unmanaged<DecoderContext>.fromOpaque(clientData!).takeUnretainedValue()
    guard let metadata else { return }
    if metadata.pointee.type == FLAC__METADATA_TYPE_STREAMINFO {
        let info = metadata.pointee.data.stream_info
        let md5 = withUnsafeBytes(of: info.md5sum) { Array($0) }
        context.summary.streamInfo = StreamInfo(
            sampleRate: Int(info.sample_rate), channels: Int(info.channels), bitsPerSample: Int(info.bits_per_sample),
            totalFrames: Int(info.total_samples), md5: md5)
    } else if metadata.pointee.type == FLAC__METADATA_TYPE_VORBIS_COMMENT {
        context.summary.comments = vorbisComments(of: metadata)
    }
}

private func decoderError(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ status: FLAC__StreamDecoderErrorStatus,
    _ clientData: UnsafeMutableRawPointer?
) {
    let context = Unmanaged<DecoderContext>.fromOpaque(clientData!).takeUnretainedValue()
    if context.summary.error == nil { context.summary.error = decoderErrorName(status.rawValue) }
}

/// The comments of a VORBIS_COMMENT metadata object, in order (entries without `=` skipped).
func vorbisComments(of metadata: UnsafePointer<FLAC__StreamMetadata>) -> [VorbisComment] {
    let block = metadata.pointee.data.vorbis_comment
    var comments: [VorbisComment] = []
    guard let entries = block.comments else { return comments }
    for index in 0..<Int(block.num_comments) {
        let entry = entries[index]
        guard let bytes = entry.entry else { continue }
        let text = String(decoding: UnsafeBufferPointer(start: bytes, count: Int(entry.length)), as: UTF8.self)
        if let comment = VorbisComment(entry: text) { comments.append(comment) }
    }
    return comments
}

/// FLAC__StreamDecoderErrorStatus names.
private func decoderErrorName(_ value: UInt32) -> String {
    switch value {
    case 0: return "LOST_SYNC"
    case 1: return "BAD_HEADER"
    case 2: return "FRAME_CRC_MISMATCH"
    case 3: return "UNPARSEABLE_STREAM"
    case 4: return "BAD_METADATA"
    default: return "decoder error \(value)"
    }
}

/// FLAC__StreamDecoderState names.
private func decoderStateName(_ value: UInt32) -> String {
    switch value {
    case 0: return "SEARCH_FOR_METADATA"
    case 1: return "READ_METADATA"
    case 2: return "SEARCH_FOR_FRAME_SYNC"
    case 3: return "READ_FRAME"
    case 4: return "END_OF_STREAM"
    case 5: return "OGG_ERROR"
    case 6: return "SEEK_ERROR"
    case 7: return "ABORTED"
    case 8: return "MEMORY_ALLOCATION_ERROR"
    case 9: return "UNINITIALIZED"
    default: return "decoder state \(value)"
    }
}

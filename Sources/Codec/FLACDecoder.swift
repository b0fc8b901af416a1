// libFLAC's stream decoder, wrapped once for every FLAC reader of recd: players and
// AudioFileReader (strict), archive verification and partial recovery (lenient). A pull
// interface: `read` asks libFLAC for one frame at a time and hands out interleaved integers.
// libFLAC calls back (read, seek, tell, length, eof for the bytes; write, metadata, error for
// the results) on the thread that called `init`/`read`, with this object as its client data.
// The bytes come from a FileCursor (pread), never from the descriptor's shared offset.

internal import CFLAC

/// What STREAMINFO says about a FLAC stream. A plain value: any thread.
public struct FLACStreamInfo: Equatable, Sendable {
    public var sampleRate: Int
    public var channels: Int
    public var bitsPerSample: Int
    /// Samples per channel; 0 when the encoder could not write it back (a partial file's
    /// STREAMINFO is rewritten only at finish).
    public var totalSamples: Int
    /// MD5 of the decoded audio; all zeros when unknown.
    public var md5: [UInt8]
    public var minBlockSize: Int
    public var maxBlockSize: Int

    /// Whether the MD5 was filled in.
    public var hasMD5: Bool { md5.contains { $0 != 0 } }
}

/// Decodes one native FLAC stream into interleaved integer samples.
///
/// Two modes:
/// - `.strict` (playing, reading a file): any damage throws `.corrupt`: a bad header at
///   `init`; a decoder error, a frame whose channels disagree with STREAMINFO, fewer frames
///   than STREAMINFO announces, or an MD5 mismatch from `read`. Refuses streams recd cannot
///   play (more than 8 channels, odd widths) at `init`.
/// - `.lenient` (verifying, recovering a partial file): decoding stops quietly at the first
///   problem, and `stopReason` says which (libFLAC's short name, e.g. `LOST_SYNC`); `read`
///   returns 0 from then on. Every frame handed out decoded without error ("as far as valid
///   frames go" means exactly that: a frame libFLAC delivers after a CRC error is refused).
///
/// Owns the `FLAC__StreamDecoder` (deleted in `deinit`) and its cursor; holds the
/// `ReadOnlyFile`, which owns the descriptor. One thread at a time.
public final class FLACDecoder {
    public enum Mode: Sendable {
        case strict
        case lenient
    }

    /// What a lenient decode found wrong, in libFLAC's terms.
    private enum Problem {
        case decoderError(FLAC__StreamDecoderErrorStatus)
        case channelMismatch(frame: Int, streamInfo: Int)
        case io(MediaError)
        case noStreamInfo
        case state(FLAC__StreamDecoderState)
    }

    public let name: String
    public let mode: Mode
    /// STREAMINFO, once the metadata has been read (always after a strict `init`).
    public private(set) var streamInfo: FLACStreamInfo?
    /// The VORBIS_COMMENT entries as stored (`NAME=value`), in order.
    public private(set) var commentEntries: [String] = []
    /// Frames decoded without error so far (handed out or waiting to be).
    public private(set) var framesDecoded = 0
    /// Lenient mode: why decoding stopped early (nil: it did not, or has not yet).
    public var stopReason: String? { problem.map(Self.shortName) }
    /// The end of the stream was reached without a problem; with MD5 checking on,
    /// `md5Mismatch` then says whether the audio matched STREAMINFO's MD5.
    public private(set) var reachedEnd = false
    /// Lenient mode with MD5 checking: the whole stream decoded and did not match.
    public private(set) var md5Mismatch = false

    fileprivate let cursor: FileCursor
    private let decoder: UnsafeMutablePointer<FLAC__StreamDecoder>
    private let checksMD5: Bool
    /// Frames libFLAC gave us that `read` has not handed out yet, interleaved.
    private var pending: [Int32] = []
    private var pendingOffset = 0
    /// The first problem a callback reported.
    private var problem: Problem?
    private var finished = false
    /// `skip` is decoding: frames are checked and counted, their samples not kept.
    private var discarding = false

    /// Reads the metadata of `file` (STREAMINFO, Vorbis comments). `checkMD5`: compare the
    /// decoded audio with STREAMINFO's MD5 at the end (costs a pass of MD5 over the samples).
    public init(file: ReadOnlyFile, mode: Mode, checkMD5: Bool = true) throws(MediaError) {
        name = file.name
        self.mode = mode
        checksMD5 = checkMD5
        cursor = FileCursor(file: file)
        guard let decoder = FLAC__stream_decoder_new() else {
            throw MediaError(.io, path: file.name, message: "libFLAC could not allocate a decoder")
        }
        self.decoder = decoder
        // libFLAC compares the decoded audio with STREAMINFO's MD5 at the end: a damaged file
        // whose frames still parse is caught there.
        FLAC__stream_decoder_set_md5_checking(decoder, checkMD5 ? 1 : 0)
        FLAC__stream_decoder_set_metadata_respond(decoder, FLAC__METADATA_TYPE_VORBIS_COMMENT)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let status = FLAC__stream_decoder_init_stream(
            decoder, flacDecoderRead, flacDecoderSeek, flacDecoderTell, flacDecoderLength,
            flacDecoderEOF, flacDecoderWrite, flacDecoderMetadata, flacDecoderError, context)
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
            let text = String(cString: recd_flac_decoder_init_status_string(status))
            throw MediaError(.io, path: name, message: "libFLAC cannot open it: \(text)")
        }
        let ok = FLAC__stream_decoder_process_until_end_of_metadata(decoder) != 0
        if let failure = cursor.failure, problem == nil { problem = .io(failure) }
        if problem == nil && !ok { problem = .state(FLAC__stream_decoder_get_state(decoder)) }
        if problem == nil && streamInfo == nil { problem = .noStreamInfo }
        guard mode == .strict else { return }
        if case .io(let failure) = problem { throw failure }
        if case .decoderError = problem { throw strictError(problem!) }
        guard problem == nil, let info = streamInfo else {
            throw MediaError(
                .corrupt, path: name,
                message: "its FLAC header is damaged or cut short (\(stateText)); "
                    + "re-encode it from the original, or " + MediaError.convertAdvice)
        }
        guard (1...8).contains(info.channels), (4...32).contains(info.bitsPerSample), info.sampleRate > 0 else {
            throw MediaError(
                .unsupportedFormat, path: name,
                message: "STREAMINFO says \(info.channels) channels, \(info.bitsPerSample) bits, "
                    + "\(info.sampleRate) Hz, which recd cannot play; " + MediaError.convertAdvice)
        }
    }

    deinit {
        FLAC__stream_decoder_delete(decoder)
    }

    /// The most samples per channel one frame may hold (STREAMINFO's, FLAC's 65535 if unknown).
    private var largestFrame: Int {
        guard let maxBlockSize = streamInfo?.maxBlockSize, maxBlockSize > 0 else { return 65_535 }
        return maxBlockSize
    }

    /// Interleaved channels per frame (STREAMINFO's; 0 before it is known).
    public var channels: Int { streamInfo?.channels ?? 0 }

    /// Up to `maxFrames` interleaved frames into `destination`; 0 at the end of the stream (in
    /// lenient mode also once a problem stopped it).
    public func read(into destination: UnsafeMutablePointer<Int32>, maxFrames: Int) throws(MediaError) -> Int {
        try decode(into: destination, maxFrames: maxFrames)
    }

    /// Decodes up to `maxFrames` frames without handing their samples out (checking a file:
    /// CRCs, frame count and MD5 are checked as by `read`); 0 at the end, as `read`.
    public func skip(maxFrames: Int) throws(MediaError) -> Int {
        try decode(into: nil, maxFrames: maxFrames)
    }

    /// Moves so the next `read` starts at frame (sample per channel) `frame`: libFLAC's seek
    /// (the seek table, then a search through the file; decoding only the target frame). For
    /// reading one stretch of a long file (clip export). Throws `.corrupt` when the seek fails;
    /// the decoder is then unusable (open a new one).
    public func seek(toFrame frame: Int) throws(MediaError) {
        guard problem == nil, !finished, frame >= 0 else {
            throw MediaError(.corrupt, path: name, message: "cannot seek after the end or a problem; open it again")
        }
        pending.removeAll(keepingCapacity: true)
        pendingOffset = 0
        // libFLAC hands over the target frame from `frame` on; its samples count from there.
        framesDecoded = frame
        guard FLAC__stream_decoder_seek_absolute(decoder, FLAC__uint64(frame)) != 0 else {
            problem = .state(FLAC__stream_decoder_get_state(decoder))
            throw MediaError(
                .corrupt, path: name,
                message: "seeking to frame \(frame) failed (\(stateText)); run `flac -t` on it")
        }
        if let failure = cursor.failure { throw failure }
    }

    private func decode(into destination: UnsafeMutablePointer<Int32>?, maxFrames: Int) throws(MediaError) -> Int {
        let channels = self.channels
        var produced = 0
        while produced < maxFrames {
            let available = channels > 0 ? (pending.count - pendingOffset) / channels : 0
            if available > 0 {
                let take = min(available, maxFrames - produced)
                if let destination {
                    pending.withUnsafeBufferPointer { source in
                        (destination + produced * channels).update(
                            from: source.baseAddress! + pendingOffset, count: take * channels)
                    }
                }
                pendingOffset += take * channels
                produced += take
                continue
            }
            pending.removeAll(keepingCapacity: true)
            pendingOffset = 0
            if finished || problem != nil { break }
            // A frame larger than what is left to skip still goes through `pending`.
            discarding = destination == nil && maxFrames - produced >= largestFrame
            let decodedBefore = framesDecoded
            let ok = FLAC__stream_decoder_process_single(decoder) != 0
            if discarding { produced += framesDecoded - decodedBefore }
            discarding = false
            if let failure = cursor.failure, problem == nil { problem = .io(failure) }
            let state = FLAC__stream_decoder_get_state(decoder)
            if problem == nil && state == FLAC__STREAM_DECODER_END_OF_STREAM {
                try finishStream()
            } else if problem == nil && !ok {
                problem = .state(state)
            }
            if let problem, mode == .strict { throw strictError(problem) }
        }
        return produced
    }

    /// At the end: the frame count must match STREAMINFO and the MD5 must check out.
    private func finishStream() throws(MediaError) {
        finished = true
        reachedEnd = true
        let totalFrames = streamInfo.map(\.totalSamples) ?? 0
        if mode == .strict, totalFrames > 0, framesDecoded != totalFrames {
            throw MediaError(
                .corrupt, path: name,
                message: "the file is cut short: it holds \(framesDecoded) of the \(totalFrames) "
                    + "frames its header announces; re-encode it from the original")
        }
        let md5Matches = FLAC__stream_decoder_finish(decoder) != 0
        guard checksMD5, !md5Matches else { return }
        md5Mismatch = true
        if mode == .strict {
            throw MediaError(
                .corrupt, path: name,
                message: "the decoded audio does not match the MD5 in its header; "
                    + "run `flac -t` on it, and re-encode it from the original")
        }
    }

    private var stateText: String {
        String(cString: recd_flac_decoder_state_string(FLAC__stream_decoder_get_state(decoder)))
    }

    private func strictError(_ problem: Problem) -> MediaError {
        switch problem {
        case .io(let failure):
            return failure
        case .decoderError(let status):
            let text = String(cString: recd_flac_decoder_error_status_string(status))
            return MediaError(
                .corrupt, path: name,
                message: "libFLAC reports \(text) after \(framesDecoded) frames; "
                    + "run `flac -t` on it, and re-encode it from the original")
        case .channelMismatch(let frame, let streamInfo):
            return MediaError(
                .corrupt, path: name,
                message: "a frame has \(frame) channels where STREAMINFO says "
                    + "\(streamInfo); re-encode it from the original")
        case .noStreamInfo, .state:
            return MediaError(
                .corrupt, path: name,
                message: "decoding stopped after \(framesDecoded) frames (\(stateText)); "
                    + "run `flac -t` on it, and re-encode it from the original")
        }
    }

    /// libFLAC's short names: FLAC__StreamDecoderErrorStatus and FLAC__StreamDecoderState.
    private static func shortName(_ problem: Problem) -> String {
        switch problem {
        case .decoderError(let status):
            switch status.rawValue {
            case 0: return "LOST_SYNC"
            case 1: return "BAD_HEADER"
            case 2: return "FRAME_CRC_MISMATCH"
            case 3: return "UNPARSEABLE_STREAM"
            case 4: return "BAD_METADATA"
            default: return "decoder error \(status.rawValue)"
            }
        case .channelMismatch(let frame, let streamInfo):
            return "a frame has \(frame) channels, STREAMINFO says \(streamInfo)"
        case .io(let failure):
            return failure.message
        case .noStreamInfo:
            return "no STREAMINFO"
        case .state(let state):
            switch state.rawValue {
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
            default: return "decoder state \(state.rawValue)"
            }
        }
    }

    // MARK: Callbacks (on the thread inside libFLAC's process call)

    fileprivate func received(
        frame: UnsafePointer<FLAC__Frame>, buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>
    ) -> Bool {
        // libFLAC reports a CRC mismatch and then still delivers the (silenced) frame: refuse it.
        guard problem == nil, let info = streamInfo else { return false }
        let header = frame.pointee.header
        let channels = Int(header.channels)
        guard channels == info.channels else {
            problem = .channelMismatch(frame: channels, streamInfo: info.channels)
            return false
        }
        let blockSize = Int(header.blocksize)
        if discarding {
            framesDecoded += blockSize
            return true
        }
        let start = pending.count
        pending.append(contentsOf: repeatElement(0, count: blockSize * channels))
        pending.withUnsafeMutableBufferPointer { samples in
            for channel in 0..<channels {
                let source = buffer[channel]!
                var index = start + channel
                for frameIndex in 0..<blockSize {
                    samples[index] = source[frameIndex]
                    index += channels
                }
            }
        }
        framesDecoded += blockSize
        return true
    }

    fileprivate func received(metadata: UnsafePointer<FLAC__StreamMetadata>) {
        if metadata.pointee.type == FLAC__METADATA_TYPE_STREAMINFO {
            streamInfo = FLACStreamInfo(metadata.pointee.data.stream_info)
        } else if metadata.pointee.type == FLAC__METADATA_TYPE_VORBIS_COMMENT {
            commentEntries = vorbisCommentEntries(of: metadata)
        }
    }

    fileprivate func received(error status: FLAC__StreamDecoderErrorStatus) {
        if problem == nil { problem = .decoderError(status) }
    }
}

extension FLACStreamInfo {
    init(_ info: FLAC__StreamMetadata_StreamInfo) {
        var md5sum = info.md5sum
        self.init(
            sampleRate: Int(info.sample_rate), channels: Int(info.channels), bitsPerSample: Int(info.bits_per_sample),
            totalSamples: Int(info.total_samples), md5: withUnsafeBytes(of: &md5sum) { Array($0) },
            minBlockSize: Int(info.min_blocksize), maxBlockSize: Int(info.max_blocksize))
    }
}

/// The entries of a VORBIS_COMMENT metadata object as stored (`NAME=value`), in order.
func vorbisCommentEntries(of metadata: UnsafePointer<FLAC__StreamMetadata>) -> [String] {
    let block = metadata.pointee.data.vorbis_comment
    guard let entries = block.comments else { return [] }
    return (0..<Int(block.num_comments)).compactMap { index in
        let entry = entries[index]
        guard let bytes = entry.entry else { return nil }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(entry.length)), as: UTF8.self)
    }
}

// The C callbacks: client data is the unretained FLACDecoder that owns the decoder.

private func flacDecoderRead(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ buffer: UnsafeMutablePointer<FLAC__byte>?,
    _ bytes: UnsafeMutablePointer<Int>?, _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamDecoderReadStatus {
    let cursor = Unmanaged<FLACDecoder>.fromOpaque(context!).takeUnretainedValue().cursor
    let got = cursor.read(into: buffer!, count: bytes!.pointee)
    bytes!.pointee = got
    if cursor.failure != nil { return FLAC__STREAM_DECODER_READ_STATUS_ABORT }
    return got == 0 ? FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM : FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
}

private func flacDecoderSeek(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ offset: FLAC__uint64, _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamDecoderSeekStatus {
    let cursor = Unmanaged<FLACDecoder>.fromOpaque(context!).takeUnretainedValue().cursor
    return cursor.seek(to: Int64(clamping: offset))
        ? FLAC__STREAM_DECODER_SEEK_STATUS_OK : FLAC__STREAM_DECODER_SEEK_STATUS_ERROR
}

private func flacDecoderTell(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ offset: UnsafeMutablePointer<FLAC__uint64>?,
    _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamDecoderTellStatus {
    let cursor = Unmanaged<FLACDecoder>.fromOpaque(context!).takeUnretainedValue().cursor
    offset!.pointee = FLAC__uint64(cursor.position)
    return FLAC__STREAM_DECODER_TELL_STATUS_OK
}

private func flacDecoderLength(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ length: UnsafeMutablePointer<FLAC__uint64>?,
    _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamDecoderLengthStatus {
    let cursor = Unmanaged<FLACDecoder>.fromOpaque(context!).takeUnretainedValue().cursor
    guard let size = cursor.length else { return FLAC__STREAM_DECODER_LENGTH_STATUS_ERROR }
    length!.pointee = FLAC__uint64(size)
    return FLAC__STREAM_DECODER_LENGTH_STATUS_OK
}

private func flacDecoderEOF(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ context: UnsafeMutableRawPointer?
) -> FLAC__bool {
    let cursor = Unmanaged<FLACDecoder>.fromOpaque(context!).takeUnretainedValue().cursor
    return cursor.reachedEnd ? 1 : 0
}

private func flacDecoderWrite(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ frame: UnsafePointer<FLAC__Frame>?,
    _ buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>?, _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamDecoderWriteStatus {
    let owner = Unmanaged<FLACDecoder>.fromOpaque(context!).takeUnretainedValue()
    return owner.received(frame: frame!, buffer: buffer!)
        ? FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE : FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
}

private func flacDecoderMetadata(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?,
    _ metadata: UnsafePointer<FLAC__StreamMetadata>?, _ context: UnsafeMutableRawPointer?
) {
    let owner = Unmanaged<FLACDecoder>.fromOpaque(context!).takeUnretainedValue()
    owner.received(metadata: metadata!)
}

private func flacDecoderError(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ status: FLAC__StreamDecoderErrorStatus,
    _ context: UnsafeMutableRawPointer?
) {
    let owner = Unmanaged<FLACDecoder>.fromOpaque(context!).takeUnretainedValue()
    owner.received(error: status)
}

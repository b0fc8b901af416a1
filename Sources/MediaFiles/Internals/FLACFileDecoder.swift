// libFLAC's stream decoder behind a pull interface: `read` asks libFLAC for one frame at a
// time and hands out interleaved floats. libFLAC calls back (read, seek, tell, length, eof for
// the bytes; write, metadata, error for the results) on the thread that called `read`/`init`,
// with this object as its client data. The bytes come from a FileCursor (pread), never from
// the descriptor's shared offset.

internal import CFLAC

/// Decodes one native FLAC file.
///
/// Owns the `FLAC__StreamDecoder` (deleted in `deinit`) and its cursor; holds the
/// `ReadOnlyFile`, which owns the descriptor. One thread at a time.
final class FLACFileDecoder {
    let path: String
    fileprivate let cursor: FileCursor
    private(set) var sampleRate = 0
    private(set) var channels = 0
    private(set) var bitsPerSample = 0
    /// From STREAMINFO; nil when the encoder did not know it (0 there).
    private(set) var totalFrames: Int?

    private let decoder: UnsafeMutablePointer<FLAC__StreamDecoder>
    /// Frames libFLAC gave us that `read` has not handed out yet, interleaved floats.
    private var pending: [Float] = []
    private var pendingOffset = 0
    private var framesDecoded = 0
    private var sawStreamInfo = false
    private var atEnd = false
    /// The first problem a callback reported, turned into an error by the caller of libFLAC.
    private var failure: MediaError?

    init(file: ReadOnlyFile) throws(MediaError) {
        self.path = file.name
        self.cursor = FileCursor(file: file)
        guard let decoder = FLAC__stream_decoder_new() else {
            throw MediaError(.io, path: path, message: "libFLAC could not allocate a decoder")
        }
        self.decoder = decoder
        // libFLAC compares the decoded audio with STREAMINFO's MD5 at the end: a damaged file
        // whose frames still parse is caught there.
        FLAC__stream_decoder_set_md5_checking(decoder, 1)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let status = FLAC__stream_decoder_init_stream(
            decoder, flacDecoderRead, flacDecoderSeek, flacDecoderTell, flacDecoderLength,
            flacDecoderEOF, flacDecoderWrite, flacDecoderMetadata, flacDecoderError, context)
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
            let text = String(cString: recd_flac_decoder_init_status_string(status))
            throw MediaError(.io, path: path, message: "libFLAC cannot open it: \(text)")
        }
        let ok = FLAC__stream_decoder_process_until_end_of_metadata(decoder) != 0
        if let failure = cursor.failure ?? failure { throw failure }
        guard ok, sawStreamInfo else {
            throw MediaError(
                .corrupt, path: path,
                message: "its FLAC header is damaged or cut short (\(stateText)); "
                    + "re-encode it from the original, or " + MediaError.convertAdvice)
        }
        guard (1...8).contains(channels), (4...32).contains(bitsPerSample), sampleRate > 0 else {
            throw MediaError(
                .unsupportedFormat, path: path,
                message: "STREAMINFO says \(channels) channels, \(bitsPerSample) bits, "
                    + "\(sampleRate) Hz, which recd cannot play; " + MediaError.convertAdvice)
        }
    }

    deinit {
        FLAC__stream_decoder_delete(decoder)
    }

    /// Up to `maxFrames` interleaved frames into `destination`; 0 at the end of the file.
    func read(into destination: UnsafeMutablePointer<Float>, maxFrames: Int) throws(MediaError)
        -> Int
    {
        var produced = 0
        while produced < maxFrames {
            let available = (pending.count - pendingOffset) / channels
            if available > 0 {
                let take = min(available, maxFrames - produced)
                pending.withUnsafeBufferPointer { source in
                    (destination + produced * channels).update(
                        from: source.baseAddress! + pendingOffset, count: take * channels)
                }
                pendingOffset += take * channels
                produced += take
                continue
            }
            pending.removeAll(keepingCapacity: true)
            pendingOffset = 0
            if atEnd { break }
            let ok = FLAC__stream_decoder_process_single(decoder) != 0
            if let failure = cursor.failure ?? failure { throw failure }
            let state = FLAC__stream_decoder_get_state(decoder)
            if state == FLAC__STREAM_DECODER_END_OF_STREAM {
                try finishStream()
            } else if !ok {
                throw MediaError(
                    .corrupt, path: path,
                    message: "decoding stopped after \(framesDecoded) frames (\(stateText)); "
                        + "run `flac -t` on it, and re-encode it from the original")
            }
        }
        return produced
    }

    /// At the end: the frame count must match STREAMINFO and the MD5 must check out.
    private func finishStream() throws(MediaError) {
        atEnd = true
        if let totalFrames, framesDecoded != totalFrames {
            throw MediaError(
                .corrupt, path: path,
                message: "the file is cut short: it holds \(framesDecoded) of the \(totalFrames) "
                    + "frames its header announces; re-encode it from the original")
        }
        if FLAC__stream_decoder_finish(decoder) == 0 {
            throw MediaError(
                .corrupt, path: path,
                message: "the decoded audio does not match the MD5 in its header; "
                    + "run `flac -t` on it, and re-encode it from the original")
        }
    }

    private var stateText: String {
        let state = FLAC__stream_decoder_get_state(decoder)
        return String(cString: recd_flac_decoder_state_string(state))
    }

    // MARK: Callbacks (on the thread inside libFLAC's process call)

    fileprivate func received(
        frame: UnsafePointer<FLAC__Frame>, buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>
    ) -> Bool {
        let header = frame.pointee.header
        let blockSize = Int(header.blocksize)
        guard Int(header.channels) == channels else {
            failure = MediaError(
                .corrupt, path: path,
                message: "a frame has \(header.channels) channels where STREAMINFO says "
                    + "\(channels); re-encode it from the original")
            return false
        }
        let scale = 1 / Float(sign: .plus, exponent: bitsPerSample - 1, significand: 1)
        let start = pending.count
        pending.append(contentsOf: repeatElement(0, count: blockSize * channels))
        pending.withUnsafeMutableBufferPointer { samples in
            for channel in 0..<channels {
                let source = buffer[channel]!
                var index = start + channel
                for frameIndex in 0..<blockSize {
                    samples[index] = Float(source[frameIndex]) * scale
                    index += channels
                }
            }
        }
        framesDecoded += blockSize
        return true
    }

    fileprivate func received(metadata: UnsafePointer<FLAC__StreamMetadata>) {
        guard metadata.pointee.type == FLAC__METADATA_TYPE_STREAMINFO else { return }
        let info = metadata.pointee.data.stream_info
        sampleRate = Int(info.sample_rate)
        channels = Int(info.channels)
        bitsPerSample = Int(info.bits_per_sample)
        totalFrames = info.total_samples > 0 ? Int(info.total_samples) : nil
        sawStreamInfo = true
    }

    fileprivate func received(error status: FLAC__StreamDecoderErrorStatus) {
        guard failure == nil else { return }
        let text = String(cString: recd_flac_decoder_error_status_string(status))
        failure = MediaError(
            .corrupt, path: path,
            message: "libFLAC reports \(text) after \(framesDecoded) frames; "
                + "run `flac -t` on it, and re-encode it from the original")
    }
}

// The C callbacks: client data is the unretained FLACFileDecoder that owns the decoder.

private func flacDecoderRead(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ buffer: UnsafeMutablePointer<FLAC__byte>?,
    _ bytes: UnsafeMutablePointer<Int>?, _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamDecoderReadStatus {
    let cursor = Unmanaged<FLACFileDecoder>.fromOpaque(context!).takeUnretainedValue().cursor
    let got = cursor.read(into: buffer!, count: bytes!.pointee)
    bytes!.pointee = got
    if cursor.failure != nil { return FLAC__STREAM_DECODER_READ_STATUS_ABORT }
    return got == 0 ? FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM : FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
}

private func flacDecoderSeek(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ offset: FLAC__uint64, _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamDecoderSeekStatus {
    let cursor = Unmanaged<FLACFileDecoder>.fromOpaque(context!).takeUnretainedValue().cursor
    return cursor.seek(to: Int64(clamping: offset))
        ? FLAC__STREAM_DECODER_SEEK_STATUS_OK : FLAC__STREAM_DECODER_SEEK_STATUS_ERROR
}

private func flacDecoderTell(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ offset: UnsafeMutablePointer<FLAC__uint64>?,
    _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamDecoderTellStatus {
    let cursor = Unmanaged<FLACFileDecoder>.fromOpaque(context!).takeUnretainedValue().cursor
    offset!.pointee = FLAC__uint64(cursor.position)
    return FLAC__STREAM_DECODER_TELL_STATUS_OK
}

private func flacDecoderLength(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ length: UnsafeMutablePointer<FLAC__uint64>?,
    _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamDecoderLengthStatus {
    let cursor = Unmanaged<FLACFileDecoder>.fromOpaque(context!).takeUnretainedValue().cursor
    guard let size = cursor.length else { return FLAC__STREAM_DECODER_LENGTH_STATUS_ERROR }
    length!.pointee = FLAC__uint64(size)
    return FLAC__STREAM_DECODER_LENGTH_STATUS_OK
}

private func flacDecoderEOF(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ context: UnsafeMutableRawPointer?
) -> FLAC__bool {
    let cursor = Unmanaged<FLACFileDecoder>.fromOpaque(context!).takeUnretainedValue().cursor
    return cursor.reachedEnd ? 1 : 0
}

private func flacDecoderWrite(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ frame: UnsafePointer<FLAC__Frame>?,
    _ buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>?, _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamDecoderWriteStatus {
    let owner = Unmanaged<FLACFileDecoder>.fromOpaque(context!).takeUnretainedValue()
    return owner.received(frame: frame!, buffer: buffer!)
        ? FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE : FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
}

private func flacDecoderMetadata(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?,
    _ metadata: UnsafePointer<FLAC__StreamMetadata>?, _ context: UnsafeMutableRawPointer?
) {
    let owner = Unmanaged<FLACFileDecoder>.fromOpaque(context!).takeUnretainedValue()
    owner.received(metadata: metadata!)
}

private func flacDecoderError(
    _ decoder: UnsafePointer<FLAC__StreamDecoder>?, _ status: FLAC__StreamDecoderErrorStatus,
    _ context: UnsafeMutableRawPointer?
) {
    let owner = Unmanaged<FLACFileDecoder>.fromOpaque(context!).takeUnretainedValue()
    owner.received(error: status)
}

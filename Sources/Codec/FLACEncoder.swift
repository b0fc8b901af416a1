// libFLAC's stream encoder, wrapped once for every FLAC writer of recd: the archive's
// crash-safe segments, FLACWriter's plain files, test streams. Integer samples in, bytes out
// through a sink.

internal import CFLAC

/// Where an encoder's bytes go. libFLAC calls these on the thread that calls the encoder's
/// `init`, `encode` and `finish` (the encoder's one thread).
///
/// A sink that can `seek` and `tell` lets libFLAC go back at `finish` and fill in STREAMINFO
/// (total samples, MD5, frame sizes) and the seek table; one that cannot gets a valid stream
/// whose STREAMINFO lacks them.
public protocol FLACStreamSink: AnyObject {
    /// Appends `bytes`; false on failure (the encoder then stops with `.clientError` and
    /// throws the sink's `failure`).
    func write(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// Appends `bytes`, which end a whole audio frame of `samples` samples per channel when
    /// `samples` > 0 (0: metadata, or a rewrite at `finish`). For sinks that track where the
    /// last whole frame ends; the default forgets `samples`.
    func write(_ bytes: UnsafeRawBufferPointer, samples: Int) -> Bool
    /// Moves to `offset` from the start of the stream.
    func seek(to offset: UInt64) -> FLACSinkSeekResult
    /// The current offset from the start of the stream; nil when not supported.
    func tell() -> UInt64?
    /// Why the last `write`/`seek` failed, for the error the encoder throws.
    var failure: MediaError? { get }
}

extension FLACStreamSink {
    public func write(_ bytes: UnsafeRawBufferPointer, samples: Int) -> Bool { write(bytes) }
    public func seek(to offset: UInt64) -> FLACSinkSeekResult { .unsupported }
    public func tell() -> UInt64? { nil }
    public var failure: MediaError? { nil }
}

/// What a sink's `seek` did.
public enum FLACSinkSeekResult: Sendable {
    case ok
    case failed
    /// The sink cannot seek (a pipe, a socket).
    case unsupported
}

/// One FLAC stream being encoded from integer samples.
///
/// Owns the `FLAC__StreamEncoder` and the metadata blocks it writes (deleted in `deinit`;
/// deleting an unfinished encoder writes nothing more: libFLAC skips the last block and the
/// metadata rewrite), and holds its sink strongly. Not thread-safe: one thread (the archiver,
/// a test) makes, feeds and finishes it; the sink is called on that thread.
public final class FLACEncoder {
    /// How the metadata blocks before the audio are laid out.
    public enum MetadataLayout: Sendable {
        /// VORBIS_COMMENT (when there are comments), SEEKTABLE (with `seekPointInterval` and
        /// `expectedTotalSamples`), PADDING (when `paddingBytes` > 0): the blocks asked for.
        case compact
        /// What editing in place needs (crash-safe segments): a SEEKTABLE always (points every
        /// `seekPointInterval` samples up to `expectedTotalSamples`, else one point at sample
        /// 0), then VORBIS_COMMENT always, then PADDING that end comments grow into.
        case editableInPlace
    }

    /// How to encode.
    public struct Settings: Sendable {
        public var sampleRate: Int
        /// 1...8.
        public var channels: Int
        /// 4...32 (FLAC's range); recd writes 16 or 24.
        public var bitsPerSample: Int
        /// 0 (fastest) ... 8 (smallest); libFLAC's presets.
        public var compressionLevel: Int
        /// NAME=value pairs for the VORBIS_COMMENT block, in order. libFLAC adds its vendor
        /// string itself.
        public var vorbisComments: [(String, String)]
        /// A hint for libFLAC and the seek table's extent; nil when unknown.
        public var expectedTotalSamples: Int?
        /// Samples between seek points; needs `expectedTotalSamples` in the compact layout.
        /// nil: no seek table (compact), a single point (editable in place).
        public var seekPointInterval: Int?
        /// Bytes of PADDING after the other metadata, so tags can be rewritten in place.
        public var paddingBytes: Int
        /// Decode every frame again while encoding and compare (slower; for tests).
        public var verify: Bool
        /// Samples per block; nil: the compression level's (`FLACEncoder.blocksize`).
        public var blocksize: Int?
        /// Keep to FLAC's streamable subset (libFLAC then refuses settings outside it). Off by
        /// default: rates and widths outside it (8 bits at 192 kHz) are legal FLAC.
        public var streamableSubset: Bool
        public var layout: MetadataLayout

        public init(
            sampleRate: Int, channels: Int, bitsPerSample: Int, compressionLevel: Int = 5,
            vorbisComments: [(String, String)] = [], expectedTotalSamples: Int? = nil,
            seekPointInterval: Int? = nil, paddingBytes: Int = 0, verify: Bool = false, blocksize: Int? = nil,
            streamableSubset: Bool = false, layout: MetadataLayout = .compact
        ) {
            self.sampleRate = sampleRate
            self.channels = channels
            self.bitsPerSample = bitsPerSample
            self.compressionLevel = compressionLevel
            self.vorbisComments = vorbisComments
            self.expectedTotalSamples = expectedTotalSamples
            self.seekPointInterval = seekPointInterval
            self.paddingBytes = paddingBytes
            self.verify = verify
            self.blocksize = blocksize
            self.streamableSubset = streamableSubset
            self.layout = layout
        }
    }

    /// The block size libFLAC uses at a compression level (levels 0...2: 1152, 3...8: 4096).
    public static func blocksize(compressionLevel: Int) -> Int { compressionLevel <= 2 ? 1152 : 4096 }

    /// Worst-case bytes of one FLAC frame (verbatim subframes, the side channel one bit wider,
    /// frame header and footer): how much room finishing a stream may take per frame.
    public static func maximumFrameBytes(channels: Int, bitsPerSample: Int, blocksize: Int) -> Int64 {
        Int64(blocksize * channels * (bitsPerSample + 1) / 8 + 128)
    }

    /// libFLAC's version, e.g. `1.4.2` (`FLAC__VERSION_STRING`).
    public static var libraryVersion: String { recd_flac_version().map { String(cString: $0) } ?? "unknown" }

    public let settings: Settings
    /// The file written, or empty for a caller's sink (used in errors).
    public let path: String
    /// The sink the bytes go to.
    public let sink: any FLACStreamSink
    /// Frames (samples per channel) given to `encode` so far.
    public private(set) var samplesEncoded = 0
    public private(set) var isFinished = false

    private let encoder: UnsafeMutablePointer<FLAC__StreamEncoder>
    private var metadata: [UnsafeMutablePointer<FLAC__StreamMetadata>] = []
    private var metadataArray: UnsafeMutablePointer<UnsafeMutablePointer<FLAC__StreamMetadata>?>?
    /// The sink was made here (`init(path:settings:)`), so `finish` closes it.
    private let ownsSink: Bool

    /// Creates `path` (which must not exist: an existing file is never overwritten) and
    /// starts a stream into it. The file is written through a `FLACFileSink`, so STREAMINFO
    /// and the seek table are filled in at `finish`, which also closes it.
    public convenience init(path: String, settings: Settings) throws(MediaError) {
        try Self.validate(settings, path: path)
        let sink = try FLACFileSink(creating: path)
        do {
            try self.init(sink: sink, settings: settings, path: path, ownsSink: true)
        } catch {
            // Nothing usable was written: leave no empty or headless file behind.
            sink.discard()
            throw error
        }
    }

    /// Starts a stream into `sink`: libFLAC writes the `fLaC` marker and the metadata blocks
    /// before this returns. `path` names the stream in errors. The caller keeps `sink` (a
    /// `FLACFileSink`'s file stays open after `finish`).
    public convenience init(sink: any FLACStreamSink, settings: Settings, path: String = "") throws(MediaError) {
        try self.init(sink: sink, settings: settings, path: path, ownsSink: false)
    }

    private init(sink: any FLACStreamSink, settings: Settings, path: String, ownsSink: Bool) throws(MediaError) {
        try Self.validate(settings, path: path)
        guard let encoder = FLAC__stream_encoder_new() else {
            throw MediaError(.io, path: path, message: "libFLAC could not allocate an encoder")
        }
        self.encoder = encoder
        self.settings = settings
        self.sink = sink
        self.path = path
        self.ownsSink = ownsSink
        FLAC__stream_encoder_set_verify(encoder, settings.verify ? 1 : 0)
        FLAC__stream_encoder_set_compression_level(encoder, UInt32(settings.compressionLevel))
        if let blocksize = settings.blocksize { FLAC__stream_encoder_set_blocksize(encoder, UInt32(blocksize)) }
        FLAC__stream_encoder_set_channels(encoder, UInt32(settings.channels))
        FLAC__stream_encoder_set_bits_per_sample(encoder, UInt32(settings.bitsPerSample))
        FLAC__stream_encoder_set_sample_rate(encoder, UInt32(settings.sampleRate))
        if !settings.streamableSubset { FLAC__stream_encoder_set_streamable_subset(encoder, 0) }
        if let expected = settings.expectedTotalSamples, expected > 0 {
            FLAC__stream_encoder_set_total_samples_estimate(encoder, UInt64(expected))
        }
        try buildMetadata()
        if !metadata.isEmpty {
            let array = UnsafeMutablePointer<UnsafeMutablePointer<FLAC__StreamMetadata>?>
                .allocate(capacity: metadata.count)
            for (index, block) in metadata.enumerated() { (array + index).initialize(to: block) }
            metadataArray = array
            FLAC__stream_encoder_set_metadata(encoder, array, UInt32(metadata.count))
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        let status = FLAC__stream_encoder_init_stream(
            encoder, flacEncoderWrite, flacEncoderSeek, flacEncoderTell, nil, context)
        guard status == FLAC__STREAM_ENCODER_INIT_STATUS_OK else {
            if let failure = sink.failure { throw failure }
            let text = String(cString: recd_flac_encoder_init_status_string(status))
            throw MediaError(
                .encoderFailed, path: path, message: "libFLAC refused to start: \(text)",
                encoderState: state, encoderInitStatus: FLACEncoderInitStatus(cValue: status.rawValue))
        }
    }

    deinit {
        FLAC__stream_encoder_delete(encoder)
        for block in metadata { FLAC__metadata_object_delete(block) }
        metadataArray?.deallocate()
    }

    /// libFLAC's state now.
    public var state: FLACEncoderState {
        FLACEncoderState(cValue: FLAC__stream_encoder_get_state(encoder).rawValue)
    }

    /// Encodes whole interleaved frames. Every sample must fit in `bitsPerSample` signed bits
    /// (libFLAC does not check, and an out-of-range sample breaks the stream for good), so
    /// that is checked here and a violation traps: convert floats with `FLACWriter` or
    /// `SampleQuantizer`, which clamp.
    public func encode(_ interleaved: UnsafeBufferPointer<Int32>) throws(MediaError) {
        precondition(interleaved.count % settings.channels == 0, "a buffer of whole frames")
        guard let base = interleaved.baseAddress, !interleaved.isEmpty else { return }
        let highest = Int32(truncatingIfNeeded: (Int64(1) << (settings.bitsPerSample - 1)) - 1)
        let lowest = -highest - 1
        for sample in interleaved {
            precondition(
                sample >= lowest && sample <= highest,
                "sample \(sample) does not fit in \(settings.bitsPerSample) bits")
        }
        try encode(inRange: base, frames: interleaved.count / settings.channels)
    }

    /// `encode` for an array.
    public func encode(_ interleaved: [Int32]) throws(MediaError) {
        try interleaved.withUnsafeBufferPointer { buffer throws(MediaError) in
            try encode(buffer)
        }
    }

    /// Encodes `frames` interleaved frames whose samples the caller guarantees to fit in
    /// `bitsPerSample` bits: `SampleQuantizer`'s output, or a decoder's of the same width. The
    /// archiver's per-period path, so it does not look at every sample again.
    package func encode(inRange samples: UnsafePointer<Int32>, frames: Int) throws(MediaError) {
        precondition(!isFinished, "encode after finish")
        guard frames > 0 else { return }
        guard FLAC__stream_encoder_process_interleaved(encoder, samples, UInt32(frames)) != 0 else {
            throw failure(doing: "encoding")
        }
        samplesEncoded += frames
    }

    /// `encode(inRange:frames:)` for frames held one channel per run: `channels[c]` is channel
    /// `c`'s `frames` samples. libFLAC keeps its input planar, so it takes these as they are
    /// (`FLAC__stream_encoder_process`) where interleaved input is first taken apart sample by
    /// sample. Same guarantee: every sample fits in `bitsPerSample` bits.
    package func encode(inRangePlanar channels: UnsafePointer<UnsafePointer<Int32>?>, frames: Int) throws(MediaError) {
        precondition(!isFinished, "encode after finish")
        guard frames > 0 else { return }
        guard FLAC__stream_encoder_process(encoder, channels, UInt32(frames)) != 0 else {
            throw failure(doing: "encoding")
        }
        samplesEncoded += frames
    }

    /// Encodes the last partial block and, if the sink can seek, rewrites STREAMINFO (total
    /// samples, MD5) and the seek table. The stream is complete afterwards; a sink made by
    /// `init(path:settings:)` is closed. Calling it twice does nothing.
    public func finish() throws(MediaError) {
        guard !isFinished else { return }
        isFinished = true
        let stateBefore = state
        if FLAC__stream_encoder_finish(encoder) == 0 {
            if let failure = sink.failure { throw failure }
            throw MediaError(
                .encoderFailed, path: path,
                message: "libFLAC could not finish the stream (state before: \(stateBefore))",
                encoderState: stateBefore == .ok ? nil : stateBefore)
        }
        if ownsSink, let fileSink = sink as? FLACFileSink { try fileSink.close() }
    }

    // MARK: Internals

    private func failure(doing action: String) -> MediaError {
        let state = self.state
        if state == .clientError, let failure = sink.failure { return failure }
        let text = String(
            cString: FLAC__stream_encoder_get_resolved_state_string(encoder))
        return MediaError(
            state == .ioError || state == .clientError ? .io : .encoderFailed, path: path,
            message: "libFLAC failed while \(action): \(text)", encoderState: state)
    }

    private func buildMetadata() throws(MediaError) {
        switch settings.layout {
        case .compact:
            if !settings.vorbisComments.isEmpty { try appendComments() }
            if let interval = settings.seekPointInterval, let total = settings.expectedTotalSamples {
                try appendSeekTable(pointEvery: interval, totalSamples: total)
            }
            if settings.paddingBytes > 0 { try appendPadding() }
        case .editableInPlace:
            if let interval = settings.seekPointInterval, let total = settings.expectedTotalSamples, total > 0 {
                try appendSeekTable(pointEvery: interval, totalSamples: total)
            } else {
                try appendSeekTable(pointEvery: nil, totalSamples: 0)
            }
            try appendComments()
            try appendPadding()
        }
    }

    private func appendComments() throws(MediaError) {
        guard let block = FLAC__metadata_object_new(FLAC__METADATA_TYPE_VORBIS_COMMENT) else {
            throw MediaError(.io, path: path, message: "out of memory for Vorbis comments")
        }
        metadata.append(block)
        for (name, value) in settings.vorbisComments {
            var entry = FLAC__StreamMetadata_VorbisComment_Entry()
            guard
                FLAC__metadata_object_vorbiscomment_entry_from_name_value_pair(&entry, name, value) != 0,
                FLAC__metadata_object_vorbiscomment_append_comment(block, entry, 0) != 0
            else {
                throw MediaError(
                    .invalidArgument, path: path,
                    message: "'\(name)' is not a valid Vorbis comment name (printable ASCII without '=')")
            }
        }
    }

    /// Points every `pointEvery` samples up to `totalSamples`, or (nil) one point at sample 0.
    private func appendSeekTable(pointEvery interval: Int?, totalSamples total: Int) throws(MediaError) {
        guard let block = FLAC__metadata_object_new(FLAC__METADATA_TYPE_SEEKTABLE) else {
            throw MediaError(.io, path: path, message: "out of memory for the seek table")
        }
        metadata.append(block)
        let filled =
            if let interval {
                FLAC__metadata_object_seektable_template_append_spaced_points_by_samples(
                    block, UInt32(clamping: interval), UInt64(total)) != 0
            } else {
                FLAC__metadata_object_seektable_template_append_point(block, 0) != 0
            }
        guard filled, FLAC__metadata_object_seektable_template_sort(block, 1) != 0 else {
            throw MediaError(.io, path: path, message: "out of memory for the seek table")
        }
    }

    private func appendPadding() throws(MediaError) {
        guard let block = FLAC__metadata_object_new(FLAC__METADATA_TYPE_PADDING) else {
            throw MediaError(.io, path: path, message: "out of memory for padding")
        }
        block.pointee.length = UInt32(settings.paddingBytes)
        metadata.append(block)
    }

    private static func validate(_ settings: Settings, path: String) throws(MediaError) {
        func invalid(_ message: String) -> MediaError {
            MediaError(.invalidArgument, path: path, message: message)
        }
        guard (1...8).contains(settings.channels) else {
            throw invalid(
                "FLAC holds 1 to 8 channels, not \(settings.channels); split wider streams "
                    + "into groups of up to 8")
        }
        guard (4...32).contains(settings.bitsPerSample) else {
            throw invalid("FLAC holds 4 to 32 bits per sample, not \(settings.bitsPerSample)")
        }
        guard settings.sampleRate > 0,
            FLAC__format_sample_rate_is_valid(UInt32(clamping: settings.sampleRate)) != 0
        else {
            throw invalid("\(settings.sampleRate) Hz is not a sample rate FLAC can store")
        }
        guard (0...8).contains(settings.compressionLevel) else {
            throw invalid("compression level \(settings.compressionLevel) is not within 0...8")
        }
        guard settings.paddingBytes >= 0, settings.paddingBytes < 1 << 24 else {
            throw invalid("padding of \(settings.paddingBytes) bytes is not within 0..<16 MiB")
        }
        if let interval = settings.seekPointInterval {
            guard interval > 0, interval <= Int(UInt32.max) else {
                throw invalid("a seek point interval of \(interval) samples is not usable")
            }
            guard settings.expectedTotalSamples != nil || settings.layout == .editableInPlace else {
                throw invalid("a seek table needs expectedTotalSamples")
            }
        }
        if let expected = settings.expectedTotalSamples, expected < 0 {
            throw invalid("expectedTotalSamples cannot be negative")
        }
        for (name, value) in settings.vorbisComments {
            guard FLAC__format_vorbiscomment_entry_name_is_legal(name) != 0, !name.isEmpty else {
                throw invalid(
                    "'\(name)' is not a valid Vorbis comment name (printable ASCII without '=')")
            }
            let legal = Array(value.utf8).withUnsafeBufferPointer {
                FLAC__format_vorbiscomment_entry_value_is_legal($0.baseAddress, UInt32($0.count))
            }
            guard legal != 0 else { throw invalid("the value of '\(name)' is not valid UTF-8") }
        }
    }

    // MARK: Callbacks (on the encoder's thread, inside libFLAC)

    fileprivate func sinkWrite(_ bytes: UnsafeRawBufferPointer, samples: UInt32) -> Bool {
        sink.write(bytes, samples: Int(samples))
    }
    fileprivate func sinkSeek(_ offset: UInt64) -> FLACSinkSeekResult { sink.seek(to: offset) }
    fileprivate func sinkTell() -> UInt64? { sink.tell() }
}

extension FLACEncoder.MetadataLayout: Equatable {}

// The C callbacks: client data is the unretained FLACEncoder that owns the libFLAC encoder.

private func flacEncoderWrite(
    _ encoder: UnsafePointer<FLAC__StreamEncoder>?, _ buffer: UnsafePointer<FLAC__byte>?,
    _ bytes: Int, _ samples: UInt32, _ currentFrame: UInt32, _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamEncoderWriteStatus {
    let owner = Unmanaged<FLACEncoder>.fromOpaque(context!).takeUnretainedValue()
    return owner.sinkWrite(UnsafeRawBufferPointer(start: buffer, count: bytes), samples: samples)
        ? FLAC__STREAM_ENCODER_WRITE_STATUS_OK : FLAC__STREAM_ENCODER_WRITE_STATUS_FATAL_ERROR
}

private func flacEncoderSeek(
    _ encoder: UnsafePointer<FLAC__StreamEncoder>?, _ offset: FLAC__uint64,
    _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamEncoderSeekStatus {
    let owner = Unmanaged<FLACEncoder>.fromOpaque(context!).takeUnretainedValue()
    switch owner.sinkSeek(offset) {
    case .ok: return FLAC__STREAM_ENCODER_SEEK_STATUS_OK
    case .failed: return FLAC__STREAM_ENCODER_SEEK_STATUS_ERROR
    case .unsupported: return FLAC__STREAM_ENCODER_SEEK_STATUS_UNSUPPORTED
    }
}

private func flacEncoderTell(
    _ encoder: UnsafePointer<FLAC__StreamEncoder>?, _ offset: UnsafeMutablePointer<FLAC__uint64>?,
    _ context: UnsafeMutableRawPointer?
) -> FLAC__StreamEncoderTellStatus {
    let owner = Unmanaged<FLACEncoder>.fromOpaque(context!).takeUnretainedValue()
    guard let position = owner.sinkTell() else {
        return FLAC__STREAM_ENCODER_TELL_STATUS_UNSUPPORTED
    }
    offset!.pointee = position
    return FLAC__STREAM_ENCODER_TELL_STATUS_OK
}

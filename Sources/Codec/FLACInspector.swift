// Reading FLAC metadata without decoding audio: libFLAC's level-0 calls for STREAMINFO, the
// level-1 simple iterator for the other blocks (it reports why it failed, level 0 does not).

internal import CFLAC

/// One SEEKTABLE entry.
public struct FLACSeekPoint: Equatable, Sendable {
    /// First sample of the target frame.
    public var sampleNumber: UInt64
    /// Bytes from the first frame header to the target frame's header.
    public var streamOffset: UInt64
    public var frameSamples: Int

    /// A reserved slot that points nowhere (FLAC's placeholder sample number).
    public var isPlaceholder: Bool { sampleNumber == UInt64.max }
}

/// Reads FLAC metadata blocks without decoding audio: the one metadata reader of recd (the
/// archive's index and recovery, tests). Stateless; any thread.
public enum FLACInspector {
    /// STREAMINFO of a FLAC file.
    public static func streamInfo(path: String) throws(MediaError) -> FLACStreamInfo {
        try requireFLAC(path)
        var block = FLAC__StreamMetadata()
        guard FLAC__metadata_get_streaminfo(path, &block) != 0 else {
            // Level 0 does not say why; the iterator does.
            try forEachBlock(path) { _ in }
            throw corrupt(path, "it has no readable STREAMINFO")
        }
        return FLACStreamInfo(block.data.stream_info)
    }

    /// The Vorbis comments as NAME/value pairs, in file order (names as written; an entry
    /// without `=` is a name with an empty value). Empty when the file has no VORBIS_COMMENT
    /// block.
    public static func vorbisComments(path: String) throws(MediaError) -> [(String, String)] {
        try commentEntries(path: path).map { text in
            guard let equals = text.firstIndex(of: "=") else { return (text, "") }
            return (String(text[..<equals]), String(text[text.index(after: equals)...]))
        }
    }

    /// The VORBIS_COMMENT entries as stored (`NAME=value`), in file order.
    public static func commentEntries(path: String) throws(MediaError) -> [String] {
        var result: [String] = []
        try forEachBlock(path) { block in
            guard block.pointee.type == FLAC__METADATA_TYPE_VORBIS_COMMENT else { return }
            result += vorbisCommentEntries(of: block)
        }
        return result
    }

    /// The vendor string of the VORBIS_COMMENT block (which encoder wrote the file).
    public static func vendor(path: String) throws(MediaError) -> String? {
        var vendor: String?
        try forEachBlock(path) { block in
            guard block.pointee.type == FLAC__METADATA_TYPE_VORBIS_COMMENT else { return }
            let entry = block.pointee.data.vorbis_comment.vendor_string
            vendor = String(
                decoding: UnsafeBufferPointer(start: entry.entry, count: Int(entry.length)),
                as: UTF8.self)
        }
        return vendor
    }

    /// The SEEKTABLE's points (placeholders included); empty without a seek table.
    public static func seekPoints(path: String) throws(MediaError) -> [FLACSeekPoint] {
        var points: [FLACSeekPoint] = []
        try forEachBlock(path) { block in
            guard block.pointee.type == FLAC__METADATA_TYPE_SEEKTABLE else { return }
            let table = block.pointee.data.seek_table
            for index in 0..<Int(table.num_points) {
                let point = table.points[index]
                points.append(
                    FLACSeekPoint(
                        sampleNumber: point.sample_number, streamOffset: point.stream_offset,
                        frameSamples: Int(point.frame_samples)))
            }
        }
        return points
    }

    // MARK: Internals

    /// Not found, not FLAC, and unreadable files fail here with the right kind.
    private static func requireFLAC(_ path: String) throws(MediaError) {
        guard try FileProbe.container(of: path) == .flac else {
            throw MediaError(
                .unsupportedFormat, path: path,
                message: "this is a WAV file, not FLAC; encode it with `flac` first")
        }
    }

    /// Calls `body` with every metadata block of the file (each freed after the call).
    private static func forEachBlock(
        _ path: String, _ body: (UnsafeMutablePointer<FLAC__StreamMetadata>) -> Void
    ) throws(MediaError) {
        try requireFLAC(path)
        guard let iterator = FLAC__metadata_simple_iterator_new() else {
            throw MediaError(.io, path: path, message: "libFLAC could not allocate an iterator")
        }
        defer { FLAC__metadata_simple_iterator_delete(iterator) }
        guard FLAC__metadata_simple_iterator_init(iterator, path, 1, 0) != 0 else {
            throw error(iterator, path)
        }
        repeat {
            guard let block = FLAC__metadata_simple_iterator_get_block(iterator) else {
                throw error(iterator, path)
            }
            body(block)
            FLAC__metadata_object_delete(block)
        } while FLAC__metadata_simple_iterator_next(iterator) != 0
        let status = FLAC__metadata_simple_iterator_status(iterator)
        if status != FLAC__METADATA_SIMPLE_ITERATOR_STATUS_OK { throw error(status, path) }
    }

    private static func error(_ iterator: OpaquePointer, _ path: String) -> MediaError {
        error(FLAC__metadata_simple_iterator_status(iterator), path)
    }

    private static func error(_ status: FLAC__Metadata_SimpleIteratorStatus, _ path: String)
        -> MediaError
    {
        let text = String(
            cString: recd_flac_simple_iterator_status_string(status))
        switch status {
        case FLAC__METADATA_SIMPLE_ITERATOR_STATUS_NOT_A_FLAC_FILE:
            return MediaError(
                .unsupportedFormat, path: path,
                message: "libFLAC says it is not a FLAC file (\(text)); "
                    + MediaError.convertAdvice)
        case FLAC__METADATA_SIMPLE_ITERATOR_STATUS_ERROR_OPENING_FILE,
            FLAC__METADATA_SIMPLE_ITERATOR_STATUS_READ_ERROR,
            FLAC__METADATA_SIMPLE_ITERATOR_STATUS_SEEK_ERROR,
            FLAC__METADATA_SIMPLE_ITERATOR_STATUS_MEMORY_ALLOCATION_ERROR:
            return MediaError(.io, path: path, message: "cannot read its metadata: \(text)")
        default:
            return corrupt(path, "its metadata is damaged (\(text))")
        }
    }

    private static func corrupt(_ path: String, _ what: String) -> MediaError {
        MediaError(
            .corrupt, path: path,
            message: "\(what); run `flac -t` on it, and re-encode it from the original")
    }
}

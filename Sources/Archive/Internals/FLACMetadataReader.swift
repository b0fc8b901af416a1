// Reading a FLAC file's STREAMINFO and Vorbis comments with libFLAC's level-0 metadata API
// (no audio decoded). Threads: the calling thread.

internal import CFLAC

enum FLACMetadataReader {
    static func streamInfo(path: String) throws(ArchiveError) -> StreamInfo {
        var metadata = FLAC__StreamMetadata()
        guard FLAC__metadata_get_streaminfo(path, &metadata) != 0 else {
            throw .unreadableFile(path: path, reason: "no readable STREAMINFO")
        }
        let info = metadata.data.stream_info
        return StreamInfo(
            sampleRate: Int(info.sample_rate), channels: Int(info.channels), bitsPerSample: Int(info.bits_per_sample),
            totalFrames: Int(info.total_samples), md5: withUnsafeBytes(of: info.md5sum) { Array($0) })
    }

    static func comments(path: String) throws(ArchiveError) -> [VorbisComment] {
        var tags: UnsafeMutablePointer<FLAC__StreamMetadata>?
        guard FLAC__metadata_get_tags(path, &tags) != 0, let tags else {
            throw .unreadableFile(path: path, reason: "no readable VORBIS_COMMENT block")
        }
        defer { FLAC__metadata_object_delete(tags) }
        return vorbisComments(of: tags)
    }
}

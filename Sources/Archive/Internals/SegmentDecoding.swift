// Decoding a segment as far as valid frames go, for verification and recovery: Codec's
// FLACDecoder in its lenient mode, and what it found.
//
// Threads: the calling thread.

import Codec

/// The outcome of decoding one file.
struct DecodeSummary {
    var streamInfo: FLACStreamInfo?
    var comments: [VorbisComment] = []
    /// Frames (samples per channel) decoded without error and handed over.
    var frames = 0
    /// The first decoder error (libFLAC's name for it), if any.
    var error: String?
    /// Decoding ran to the end without error and the MD5 in STREAMINFO did not match.
    var md5Mismatch = false
}

enum SegmentDecoding {
    /// Decodes `path` from the start. `onFrame` gets the samples interleaved (and may return
    /// false to stop); decoding stops at the first decoder error or after `frameLimit` frames.
    static func decode(
        path: String, checkMD5: Bool, frameLimit: Int = .max,
        onFrame: ((UnsafePointer<Int32>, Int) -> Bool)? = nil
    ) throws(ArchiveError) -> DecodeSummary {
        let file: ReadOnlyFile
        do {
            file = try ReadOnlyFile(path: path)
        } catch {
            throw .unreadableFile(path: path, reason: "cannot open it")
        }
        let decoder: FLACDecoder
        do {
            decoder = try FLACDecoder(file: file, mode: .lenient, checkMD5: checkMD5)
        } catch {
            throw .unreadableFile(path: path, reason: error.message)
        }
        var summary = DecodeSummary(
            streamInfo: decoder.streamInfo, comments: decoder.commentEntries.compactMap(VorbisComment.init(entry:)))
        let chunk = 4096
        var buffer = [Int32](repeating: 0, count: chunk * max(decoder.channels, 1))
        var stoppedByCaller = false
        while summary.frames < frameLimit {
            let frames: Int
            do {
                if onFrame == nil {
                    // Only checking: no samples are handed out.
                    frames = try decoder.skip(maxFrames: frameLimit - summary.frames)
                } else {
                    frames = try buffer.withUnsafeMutableBufferPointer { samples throws(MediaError) in
                        try decoder.read(into: samples.baseAddress!, maxFrames: min(chunk, frameLimit - summary.frames))
                    }
                }
            } catch {
                // Lenient decoding reports problems in `stopReason` instead; nothing else throws.
                summary.error = error.message
                break
            }
            if frames == 0 { break }
            if let onFrame, !buffer.withUnsafeBufferPointer({ onFrame($0.baseAddress!, frames) }) {
                stoppedByCaller = true
                break
            }
            summary.frames += frames
        }
        if !stoppedByCaller {
            summary.error = summary.error ?? decoder.stopReason
            summary.md5Mismatch = decoder.md5Mismatch
        }
        return summary
    }
}

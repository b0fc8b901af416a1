// libFuzzer target: audio files handed to recd, as bytes in an in-memory file. What `recctl play`
// passes (AudioFileReader: WAV through libsndfile, FLAC through libFLAC, the header probe a
// player starter runs and the feeder's reads), and what the archive reads back from its FLAC
// files (the FLAC decoder in its lenient mode, the metadata reader, the frame walker of clip
// export). Every input must give a reader or a MediaError with a message; nothing may trap,
// and what a reader says about the file stays inside what recd can hold.
// Built and run by fuzz/run (swiftc -sanitize=fuzzer,address); not part of the package.
import Codec
import Glibc

/// One anonymous in-memory file for every input (rewritten each time), reopened as
/// /proc/self/fd/N by the readers that take a path.
private let memoryFile: Int32 = {
    var template = Array("/dev/shm/recd-audiofile-fuzz-XXXXXX".utf8CString)
    var fd = mkstemp(&template)
    if fd < 0 {
        template = Array("/tmp/recd-audiofile-fuzz-XXXXXX".utf8CString)
        fd = mkstemp(&template)
    }
    precondition(fd >= 0, "no temporary file for the fuzzer")
    unlink(template)
    return fd
}()

/// Samples a reader may hand out per input: a tiny FLAC frame can stand for 65535 × 8 of them,
/// so a short input may hold far more audio than a fuzzer can decode in time.
private let sampleBudget = 1 << 20

@_cdecl("LLVMFuzzerTestOneInput")
public func audioFileFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    precondition(ftruncate(memoryFile, 0) == 0)
    var written = 0
    while written < size {
        let got = pwrite(memoryFile, data + written, size - written, off_t(written))
        precondition(got > 0, "cannot write the input")
        written += got
    }
    let path = "/proc/self/fd/\(memoryFile)"
    func file() -> ReadOnlyFile? {
        let copy = dup(memoryFile)
        precondition(copy >= 0)
        return try? ReadOnlyFile(adopting: copy, name: "fuzz.wav")
    }

    // A played file: the header probe, then the feeder's reads.
    if let file = file() {
        do {
            let reader = try AudioFileReader(file: file)
            precondition(reader.sampleRate > 0 && reader.channels > 0, "a reader of \(reader.channels) channels")
            // libsndfile's own bound; recd's players take 1...64 after this.
            precondition(reader.channels <= 1024, "\(reader.channels) channels")
            if let frames = reader.totalFrames { precondition(frames >= 0) }
            let chunk = 4096
            var buffer = [Float](repeating: 0, count: chunk * reader.channels)
            var samples = 0
            while samples < sampleBudget {
                let frames = try buffer.withUnsafeMutableBufferPointer {
                    buffer throws(MediaError) in try reader.read(into: buffer, maxFrames: chunk)
                }
                if frames == 0 { break }
                precondition(frames <= chunk, "\(frames) frames for \(chunk) asked")
                samples += frames * reader.channels
            }
        } catch {
            precondition(!error.message.isEmpty, "an error without a message")
        }
    }

    // The archive's reads of a FLAC file: lenient decoding (verification, recovery), ...
    if let file = file() {
        do {
            let decoder = try FLACDecoder(file: file, mode: .lenient)
            if let info = decoder.streamInfo, (1...8).contains(info.channels) {
                let chunk = 4096
                var buffer = [Int32](repeating: 0, count: chunk * info.channels)
                var samples = 0
                while samples < sampleBudget {
                    let frames = try buffer.withUnsafeMutableBufferPointer {
                        buffer throws(MediaError) in try decoder.read(into: buffer.baseAddress!, maxFrames: chunk)
                    }
                    if frames == 0 { break }
                    samples += frames * info.channels
                }
            }
            _ = decoder.stopReason
        } catch {
            precondition(!error.message.isEmpty, "an error without a message")
        }
    }
    // ... the metadata reader (by path, as the index and recovery call it), ...
    do {
        _ = try FLACInspector.streamInfo(path: path)
        _ = try FLACInspector.vorbisComments(path: path)
        _ = try FLACInspector.vendor(path: path)
        _ = try FLACInspector.seekPoints(path: path)
    } catch {
        precondition(!error.message.isEmpty, "an error without a message")
    }
    // ... and clip export's frame walker, from the start and through the seek table.
    if let file = file() {
        do {
            let reader = try FLACFrameReader(file: file)
            var frames = 0
            var samples = 0
            while samples < sampleBudget, let frame = try reader.next() {
                precondition(frame.bytes.count > 0 && frame.blockSize > 0)
                frames += 1
                samples += frame.blockSize * reader.streamInfo.channels
            }
            let probe = size > 8 ? Int(data[size - 1]) << 12 | Int(data[size - 2]) << 4 : 4096
            try reader.position(at: probe)
            _ = try reader.next()
            _ = frames
        } catch {
            precondition(!error.message.isEmpty, "an error without a message")
        }
    }
    return 0
}

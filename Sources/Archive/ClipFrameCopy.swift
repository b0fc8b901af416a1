// FLAC clip export by copying frames: the source segments' FLAC frames that
// lie wholly inside the clip go into it verbatim, their headers rewritten for a
// variable-blocksize stream (the first sample's number; CRC-8 and CRC-16 anew). Only what must
// be is decoded and encoded with the one FLAC encoder: the partial frames at the clip's two
// ends and at segment boundaries, silence for gaps, and any stretch whose frames do not verify
// or whose format differs from the clip's (rate, channels, bits). Those encoded frames go
// through the same header rewriter.
//
// Threads: the calling thread (recd's slow worker).

import Codec
import Platform

extension ClipExporter {
    /// Writes `plan` as FLAC into `sink` (a file sink: STREAMINFO is completed at the end; a
    /// pipe: it carries the total and block-size bounds 16...65535, frame sizes unknown). MD5
    /// stays zero ("unset"): computing it would mean decoding every copied frame.
    static func writeByCopyingFrames(
        _ plan: ClipPlan, sink: any FLACStreamSink, seekable: Bool, name: String, comments: [(String, String)],
        compressionLevel: Int, isCancelled: @escaping () -> Bool
    ) throws(MediaError) -> ClipCopyStatistics {
        let assembler = try FLACClipAssembler(
            plan: plan, sink: sink, seekable: seekable, name: name, comments: comments,
            compressionLevel: compressionLevel)
        let cancelled = MediaError(.invalidArgument, path: name, message: "cancelled: nobody waits for the clip")
        var reader: (source: Int, reader: FLACFrameReader?)?
        var decoder: (source: Int, decoder: FLACDecoder, position: Int)?
        var buffer = [Int32](repeating: 0, count: chunk * plan.channels)

        /// Decodes file frames [from, to) of segment `source` into the assembler.
        func decode(_ source: Int, from: Int, to: Int) throws(MediaError) {
            let record = plan.segments[source]
            if decoder?.source != source || decoder!.position != from {
                var state: (source: Int, decoder: FLACDecoder, position: Int)
                if let open = decoder, open.source == source {
                    state = open
                } else {
                    decoder = nil
                    state = (
                        source, try FLACDecoder(file: plan.file(source), mode: .strict, checkMD5: false),
                        0
                    )
                }
                do {
                    try state.decoder.seek(toFrame: from)
                    state.position = from
                } catch {
                    // No seek: decode from the start (the slow way, as before frames were copied).
                    state = (
                        source, try FLACDecoder(file: plan.file(source), mode: .strict, checkMD5: false),
                        0
                    )
                    while state.position < from {
                        let skipped = try state.decoder.skip(maxFrames: from - state.position)
                        guard skipped > 0 else { throw short(record, at: state.position) }
                        state.position += skipped
                    }
                }
                decoder = state
            }
            let shift = Int32(plan.bitsPerSample - record.bitsPerSample)
            var left = to - from
            while left > 0 {
                if isCancelled() { throw cancelled }
                let n = try buffer.withUnsafeMutableBufferPointer { b throws(MediaError) in
                    try decoder!.decoder.read(into: b.baseAddress!, maxFrames: min(left, chunk))
                }
                guard n > 0 else { throw short(record, at: decoder!.position) }
                if shift > 0 { for i in 0..<(n * plan.channels) { buffer[i] <<= shift } }
                try buffer.withUnsafeBufferPointer { b throws(MediaError) in
                    try assembler.add(UnsafeBufferPointer(rebasing: b[..<(n * plan.channels)]))
                }
                decoder!.position += n
                left -= n
            }
        }

        for piece in plan.pieces {
            if isCancelled() { throw cancelled }
            switch piece {
            case .silence(let frames):
                try assembler.addSilence(frames: frames)
            case .audio(let source, let fileFrame, let frames):
                let record = plan.segments[source]
                let end = fileFrame + frames
                var cursor = fileFrame
                if reader?.source != source {
                    // One segment open at a time; an unreadable layout means decoding.
                    var opened: FLACFrameReader?
                    do throws(MediaError) { opened = try FLACFrameReader(file: plan.file(source)) } catch {
                        assembler.statistics.fallbacks.append("\(record.path): \(error.message)")
                    }
                    let info = opened?.streamInfo
                    let fits =
                        info?.sampleRate == plan.sampleRate && info?.channels == plan.channels
                        && info?.bitsPerSample == plan.bitsPerSample
                    reader = (source, fits ? opened : nil)
                }
                if let frames = reader?.reader {
                    // Reader errors mean "decode the rest of this piece"; decoding and writing
                    // errors end the export, as before.
                    var readable = true
                    do { try frames.position(at: cursor) } catch {
                        readable = false
                        assembler.statistics.fallbacks.append("\(record.path): \(error.message)")
                    }
                    while readable && cursor < end {
                        if isCancelled() { throw cancelled }
                        let next: FLACFrameReader.Frame?
                        do { next = try frames.next() } catch {
                            readable = false
                            assembler.statistics.fallbacks.append("\(record.path): \(error.message)")
                            break
                        }
                        guard let frame = next else { break }
                        let frameEnd = frame.sampleNumber + frame.blockSize
                        guard frame.sampleNumber <= cursor, frameEnd > cursor else { break }
                        // A frame wholly inside is copied, unless what waits to be encoded before
                        // it is shorter than FLAC's smallest block (16): then it joins that.
                        if frame.sampleNumber == cursor && frameEnd <= end && !assembler.needsMoreBeforeCopy {
                            try assembler.copy(frame)
                            assembler.statistics.copiedFrames += frame.blockSize
                            cursor = frameEnd
                        } else {
                            let stop = min(end, frameEnd)
                            try decode(source, from: cursor, to: stop)
                            cursor = stop
                        }
                    }
                    if !readable { reader = (source, nil) }
                }
                if cursor < end { try decode(source, from: cursor, to: end) }
            }
        }
        try assembler.finish()
        return assembler.statistics
    }
}

/// What a frame-copying export did: for tests and the bench.
public struct ClipCopyStatistics: Sendable {
    /// Frames (samples per channel) copied as FLAC frames, and encoded.
    public var copiedFrames = 0
    public var encodedFrames = 0
    /// Why a stretch was decoded instead of copied (a segment's path and the reason).
    public var fallbacks: [String] = []
}

/// Collects a FLAC stream's bytes in memory: the edge encoder's output, one frame per write.
private final class MemorySink: FLACStreamSink {
    var bytes: [UInt8] = []
    /// Where each frame ends (libFLAC writes a frame in one call with its sample count).
    var frameEnds: [Int] = []
    func write(_ bytes: UnsafeRawBufferPointer) -> Bool { write(bytes, samples: 0) }
    func write(_ bytes: UnsafeRawBufferPointer, samples: Int) -> Bool {
        self.bytes += bytes
        if samples > 0 { frameEnds.append(self.bytes.count) }
        return true
    }
}

/// Builds the output stream: metadata, then frames numbered by their first sample, each either
/// copied (rewritten) or encoded from pending samples. One thread.
private final class FLACClipAssembler {
    let plan: ClipPlan
    let sink: any FLACStreamSink
    let seekable: Bool
    let name: String
    let level: Int
    let blocksize: Int
    var statistics = ClipCopyStatistics()
    /// Interleaved samples waiting to be encoded.
    private var pending: [Int32] = []
    private var pendingFrames: Int { pending.count / plan.channels }
    private var output: [UInt8] = []
    private var written: Int64 = 0
    private var sampleNumber: UInt64 = 0
    private var header: [UInt8]
    private var minBlock = Int.max
    private var maxBlock = 0
    private var lastBlock: Int?
    private var minFrame = Int.max
    private var maxFrame = 0
    static let flushBytes = 1 << 20

    init(
        plan: ClipPlan, sink: any FLACStreamSink, seekable: Bool, name: String, comments: [(String, String)],
        compressionLevel: Int
    ) throws(MediaError) {
        self.plan = plan
        self.sink = sink
        self.seekable = seekable
        self.name = name
        level = compressionLevel
        blocksize = FLACEncoder.blocksize(compressionLevel: compressionLevel)
        // The metadata as the one encoder writes it (fLaC, STREAMINFO, VORBIS_COMMENT); the
        // encoder is then dropped unfinished, which writes nothing more.
        let memory = MemorySink()
        do {
            _ = try FLACEncoder(
                sink: memory,
                settings: FLACEncoder.Settings(
                    sampleRate: plan.sampleRate, channels: plan.channels, bitsPerSample: plan.bitsPerSample,
                    compressionLevel: compressionLevel, vorbisComments: comments, expectedTotalSamples: plan.frames),
                path: name)
        }
        header = Array(memory.bytes.prefix(Self.metadataLength(memory.bytes)))
        guard header.count >= 42, header[4] & 0x7F == 0 else {
            throw MediaError(.encoderFailed, path: name, message: "libFLAC wrote no STREAMINFO first")
        }
        // Bounds until the end is known (what a pipe keeps): blocks 16...65535, frame sizes unknown.
        patchStreamInfo(minBlock: 16, maxBlock: 65_535, minFrame: 0, maxFrame: 0)
        output.reserveCapacity(Self.flushBytes * 2)
        output += header
    }

    /// A stretch waiting to be encoded must reach 16 samples before a copied frame may follow.
    var needsMoreBeforeCopy: Bool { pendingFrames > 0 && pendingFrames < 16 }

    func add(_ samples: UnsafeBufferPointer<Int32>) throws(MediaError) {
        pending += samples
        if pendingFrames >= 64 * blocksize { try encodePending(all: false) }
    }

    func addSilence(frames: Int) throws(MediaError) {
        var left = frames
        while left > 0 {
            let n = min(left, 64 * blocksize)
            pending += repeatElement(0, count: n * plan.channels)
            if pendingFrames >= 64 * blocksize { try encodePending(all: false) }
            left -= n
        }
    }

    func copy(_ frame: FLACFrameReader.Frame) throws(MediaError) {
        try encodePending(all: true)
        append(frame.bytes, header: frame.header)
    }

    func finish() throws(MediaError) {
        try encodePending(all: true)
        try flush()
        guard seekable else { return }
        let blocks = lastBlock.map { minBlock == .max ? ($0, $0) : (minBlock, max(maxBlock, $0)) } ?? (16, 16)
        patchStreamInfo(
            minBlock: blocks.0, maxBlock: blocks.1, minFrame: minFrame == .max ? 0 : minFrame, maxFrame: maxFrame)
        switch sink.seek(to: 0) {
        case .ok: break
        default: throw sink.failure ?? MediaError(.io, path: name, message: "cannot seek back to complete STREAMINFO")
        }
        let ok = header.withUnsafeBytes { sink.write(UnsafeRawBufferPointer(rebasing: $0[0..<42])) }
        guard ok else { throw sink.failure ?? MediaError(.io, path: name, message: "rewriting STREAMINFO failed") }
    }

    // MARK: Internals

    private func append(_ frame: UnsafeRawBufferPointer, header: FLACFrameHeader) {
        let before = output.count
        FLACFrameRewriter.append(frame, header: header, sampleNumber: sampleNumber, to: &output)
        let size = output.count - before
        sampleNumber += UInt64(header.blockSize)
        if let lastBlock {
            minBlock = min(minBlock, lastBlock)
            maxBlock = max(maxBlock, lastBlock)
        }
        lastBlock = header.blockSize
        minFrame = min(minFrame, size)
        maxFrame = max(maxFrame, size)
    }

    /// Encodes the pending samples (`all`: every one, else whole blocks only) into frames.
    private func encodePending(all: Bool) throws(MediaError) {
        var frames = pendingFrames
        guard frames > 0 else { return try flushIfFull() }
        var size = blocksize
        if all {
            // No short block but the clip's last: a block size that leaves 0 or >= 16 over.
            if frames <= size {
                size = max(frames, 16)
            } else {
                while frames % size != 0 && frames % size < 16 { size -= 1 }
            }
        } else {
            frames -= frames % size
            guard frames > 0 else { return }
        }
        let memory = MemorySink()
        let encoder = try FLACEncoder(
            sink: memory,
            settings: FLACEncoder.Settings(
                sampleRate: plan.sampleRate, channels: plan.channels, bitsPerSample: plan.bitsPerSample,
                compressionLevel: level, blocksize: size),
            path: name)
        try pending.withUnsafeBufferPointer { b throws(MediaError) in
            try encoder.encode(inRange: b.baseAddress!, frames: frames)
        }
        try encoder.finish()
        pending.removeFirst(frames * plan.channels)
        statistics.encodedFrames += frames
        let checked = memory.bytes.withUnsafeBytes { bytes in
            var start = Self.metadataLength(memory.bytes)
            for end in memory.frameEnds {
                let frame = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
                guard let header = FLACFrameHeader.parse(frame, at: 0), FLACCRC.crc16(frame) == 0 else { return false }
                append(frame, header: header)
                start = end
            }
            return true
        }
        guard checked else {
            throw MediaError(.encoderFailed, path: name, message: "libFLAC wrote a frame that does not check")
        }
        try flushIfFull()
    }

    /// Bytes of `fLaC` and the metadata blocks at the start of `bytes`.
    private static func metadataLength(_ bytes: [UInt8]) -> Int {
        var offset = 4
        while offset + 4 <= bytes.count {
            let last = bytes[offset] & 0x80 != 0
            offset += 4 + (Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
            if last { break }
        }
        return offset
    }

    private func flushIfFull() throws(MediaError) {
        if output.count >= Self.flushBytes { try flush() }
    }

    private func flush() throws(MediaError) {
        guard !output.isEmpty else { return }
        let ok = output.withUnsafeBytes { sink.write($0) }
        guard ok else { throw sink.failure ?? MediaError(.io, path: name, message: "writing the clip failed") }
        written += Int64(output.count)
        output.removeAll(keepingCapacity: true)
    }

    /// STREAMINFO's block and frame sizes, total samples (the plan's), MD5 zero.
    private func patchStreamInfo(minBlock: Int, maxBlock: Int, minFrame: Int, maxFrame: Int) {
        let base = 8
        header[base] = UInt8(minBlock >> 8)
        header[base + 1] = UInt8(minBlock & 0xFF)
        header[base + 2] = UInt8(maxBlock >> 8)
        header[base + 3] = UInt8(maxBlock & 0xFF)
        for (index, value) in [(4, minFrame), (7, maxFrame)] {
            header[base + index] = UInt8(value >> 16 & 0xFF)
            header[base + index + 1] = UInt8(value >> 8 & 0xFF)
            header[base + index + 2] = UInt8(value & 0xFF)
        }
        // Bits 108...143: total samples (36 bits); byte 13 keeps its high 4 bits (bits per sample).
        let total = UInt64(plan.frames)
        header[base + 13] = header[base + 13] & 0xF0 | UInt8(total >> 32 & 0x0F)
        for index in 0..<4 { header[base + 14 + index] = UInt8(total >> (24 - 8 * index) & 0xFF) }
        for index in 18..<34 { header[base + index] = 0 }
    }
}

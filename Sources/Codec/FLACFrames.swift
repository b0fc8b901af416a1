// FLAC frames without decoding them: the frame header (parse, rewrite as a variable-blocksize
// header with a new sample number), FLAC's CRC-8 and CRC-16, and a reader that walks a file's
// frames, each confirmed by its header's CRC-8, the number it carries and its CRC-16 footer.
// What clip export copies verbatim; nothing here decodes audio.
//
// Stateless parts: any thread. `FLACFrameReader`: one thread at a time.

/// One FLAC frame header, as parsed (RFC 9639 §9.1). A plain value: any thread.
public struct FLACFrameHeader: Equatable, Sendable {
    /// Blocking strategy bit: true when the coded number is the first sample's number
    /// (variable blocksize), false when it is the frame's number (fixed blocksize).
    public var variableBlocksize: Bool
    public var blockSize: Int
    /// nil: "see STREAMINFO" (code 0000).
    public var sampleRate: Int?
    /// Channel assignment code (0...10): 0...7 independent, 8 left/side, 9 right/side, 10 mid/side.
    public var channelAssignment: Int
    public var channels: Int { channelAssignment < 8 ? channelAssignment + 1 : 2 }
    /// nil: "see STREAMINFO" (code 000).
    public var bitsPerSample: Int?
    /// The frame number (fixed) or first sample number (variable).
    public var codedNumber: UInt64
    /// Bytes from the sync code to the CRC-8, inclusive.
    public var length: Int

    /// Parses the header at `bytes[offset...]` and checks its CRC-8; nil when the bytes there
    /// are not a valid frame header (no sync code, a reserved code, a bad CRC-8, too few bytes).
    public static func parse(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> FLACFrameHeader? {
        let count = bytes.count - offset
        guard offset >= 0, count >= 6 else { return nil }
        let b = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + offset
        guard b[0] == 0xFF, b[1] & 0xFE == 0xF8 else { return nil }
        let blockCode = Int(b[2] >> 4)
        let rateCode = Int(b[2] & 0x0F)
        let channelCode = Int(b[3] >> 4)
        let sizeCode = Int((b[3] >> 1) & 0x07)
        guard blockCode != 0, rateCode != 15, channelCode <= 10, sizeCode != 3, b[3] & 1 == 0 else { return nil }
        // The coded number: UTF-8-style, 1 to 7 bytes.
        var index = 4
        let lead = b[index]
        var extra: Int
        var value: UInt64
        switch lead {
        case 0x00...0x7F: (extra, value) = (0, UInt64(lead))
        case 0xC0...0xDF: (extra, value) = (1, UInt64(lead & 0x1F))
        case 0xE0...0xEF: (extra, value) = (2, UInt64(lead & 0x0F))
        case 0xF0...0xF7: (extra, value) = (3, UInt64(lead & 0x07))
        case 0xF8...0xFB: (extra, value) = (4, UInt64(lead & 0x03))
        case 0xFC...0xFD: (extra, value) = (5, UInt64(lead & 0x01))
        case 0xFE: (extra, value) = (6, 0)
        default: return nil
        }
        let variable = b[1] & 1 == 1
        // A frame number has at most 31 bits (6 bytes); a sample number at most 36 (7 bytes).
        guard variable || extra < 6 else { return nil }
        guard count >= index + 1 + extra + 1 else { return nil }
        index += 1
        for _ in 0..<extra {
            let byte = b[index]
            guard byte & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt64(byte & 0x3F)
            index += 1
        }
        var blockSize: Int
        switch blockCode {
        case 1: blockSize = 192
        case 2...5: blockSize = 576 << (blockCode - 2)
        case 6:
            guard count >= index + 2 else { return nil }
            blockSize = Int(b[index]) + 1
            index += 1
        case 7:
            guard count >= index + 3 else { return nil }
            blockSize = (Int(b[index]) << 8 | Int(b[index + 1])) + 1
            index += 2
        default: blockSize = 256 << (blockCode - 8)
        }
        var rate: Int?
        switch rateCode {
        case 0: rate = nil
        case 12:
            guard count >= index + 2 else { return nil }
            rate = Int(b[index]) * 1000
            index += 1
        case 13, 14:
            guard count >= index + 3 else { return nil }
            rate = (Int(b[index]) << 8 | Int(b[index + 1])) * (rateCode == 14 ? 10 : 1)
            index += 2
        default: rate = Self.rates[rateCode]
        }
        guard count >= index + 1, FLACCRC.crc8(UnsafeRawBufferPointer(start: b, count: index)) == b[index] else {
            return nil
        }
        return FLACFrameHeader(
            variableBlocksize: variable, blockSize: blockSize, sampleRate: rate, channelAssignment: channelCode,
            bitsPerSample: Self.sizes[sizeCode], codedNumber: value, length: index + 1)
    }

    private static let rates: [Int?] = [
        nil, 88_200, 176_400, 192_000, 8_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000, 96_000, nil, nil, nil,
        nil,
    ]
    private static let sizes: [Int?] = [nil, 8, 12, nil, 16, 20, 24, 32]

    /// The UTF-8-style coding of `number` (< 2^36): 1 to 7 bytes.
    public static func codedNumberBytes(_ number: UInt64) -> [UInt8] {
        precondition(number < 1 << 36, "FLAC codes numbers of at most 36 bits")
        if number < 0x80 { return [UInt8(number)] }
        let extra: Int
        switch number {
        case ..<0x800: extra = 1
        case ..<0x10000: extra = 2
        case ..<0x20_0000: extra = 3
        case ..<0x400_0000: extra = 4
        case ..<0x8000_0000: extra = 5
        default: extra = 6
        }
        var bytes = [UInt8](repeating: 0, count: extra + 1)
        var rest = number
        for index in stride(from: extra, to: 0, by: -1) {
            bytes[index] = 0x80 | UInt8(rest & 0x3F)
            rest >>= 6
        }
        let leadMarks: [UInt8] = [0, 0xC0, 0xE0, 0xF0, 0xF8, 0xFC, 0xFE]
        bytes[0] = leadMarks[extra] | UInt8(rest)
        return bytes
    }
}

/// FLAC's checksums: CRC-8 (polynomial x^8+x^2+x+1) over a frame header, CRC-16 (x^16+x^15+x^2+1)
/// over a whole frame; both start at 0, unreflected. A frame followed by its CRC-16 checks to 0.
public enum FLACCRC {
    static let table8: [UInt8] = (0..<256).map { value in
        var crc = UInt8(value)
        for _ in 0..<8 { crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1 }
        return crc
    }
    static let table16: [UInt16] = (0..<256).map { value in
        var crc = UInt16(value) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x8005 : crc << 1 }
        return crc
    }

    public static func crc8(_ bytes: UnsafeRawBufferPointer) -> UInt8 {
        table8.withUnsafeBufferPointer { table in
            var crc: UInt8 = 0
            for byte in bytes { crc = table[Int(crc ^ byte)] }
            return crc
        }
    }

    /// `table16` for bytes 0...7 places before the end: slicing by 8.
    static let sliced16: [UInt16] = {
        var tables = table16
        for k in 1..<8 {
            for value in 0..<256 {
                let previous = tables[(k - 1) * 256 + value]
                tables.append((previous << 8) ^ table16[Int(previous >> 8)])
            }
        }
        return tables
    }()

    /// CRC-16 of `bytes`, continuing from `crc`; 8 bytes a step.
    public static func crc16(_ bytes: UnsafeRawBufferPointer, from crc: UInt16 = 0) -> UInt16 {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return crc }
        return sliced16.withUnsafeBufferPointer { t in
            var crc = crc
            var p = base
            let count = bytes.count
            let end = base + count
            let wholeEnd = base + (count & ~7)
            while p < wholeEnd {
                let b0 = p[0] ^ UInt8(crc >> 8)
                let b1 = p[1] ^ UInt8(crc & 0xFF)
                crc =
                    t[7 * 256 + Int(b0)] ^ t[6 * 256 + Int(b1)] ^ t[5 * 256 + Int(p[2])] ^ t[4 * 256 + Int(p[3])]
                    ^ t[3 * 256 + Int(p[4])] ^ t[2 * 256 + Int(p[5])] ^ t[256 + Int(p[6])] ^ t[Int(p[7])]
                p += 8
            }
            while p < end {
                crc = (crc << 8) ^ t[Int(UInt8(crc >> 8) ^ p[0])]
                p += 1
            }
            return crc
        }
    }

    /// The CRC-16 of A‖B from crc(A), crc(B) and B's length: crc(A)·x^(8·|B|) + crc(B) mod the
    /// polynomial. Lets a frame whose header changed get its new footer without a second pass.
    public static func combine16(_ crcA: UInt16, _ crcB: UInt16, lengthB: Int) -> UInt16 {
        var result = crcA
        var length = lengthB
        var bit = 0
        while length > 0 {
            if length & 1 != 0 { result = multiply16(result, powers[bit]) }
            length >>= 1
            bit += 1
        }
        return result ^ crcB
    }

    /// x^(8·2^k) mod P for k = 0...47.
    private static let powers: [UInt16] = {
        var result: [UInt16] = []
        var value: UInt16 = 0x0100  // x^8
        for _ in 0..<48 {
            result.append(value)
            value = multiply16(value, value)
        }
        return result
    }()

    /// a·b mod x^16+x^15+x^2+1 (carry-less).
    private static func multiply16(_ a: UInt16, _ b: UInt16) -> UInt16 {
        var product: UInt32 = 0
        for bit in 0..<16 where b & (1 << bit) != 0 { product ^= UInt32(a) << bit }
        for bit in stride(from: 31, through: 16, by: -1) where product & (1 << bit) != 0 {
            product ^= 0x18005 << (bit - 16)
        }
        return UInt16(product)
    }
}

/// Rewrites frames into a variable-blocksize stream.
public enum FLACFrameRewriter {
    /// Appends `frame` (a whole frame whose CRC-16 checks, `header` its parsed header) to `output`
    /// with its header rewritten: blocking strategy variable, coded number `sampleNumber`, new
    /// CRC-8, new CRC-16 (worked out from the old one, without another pass over the frame).
    public static func append(
        _ frame: UnsafeRawBufferPointer, header: FLACFrameHeader, sampleNumber: UInt64, to output: inout [UInt8]
    ) {
        let old = UnsafeRawBufferPointer(rebasing: frame[..<header.length])
        // Sync, codes, the new number, then the block size and rate bytes as they were.
        var newHeader: [UInt8] = [0xFF, 0xF9, old[2], old[3]]
        newHeader += FLACFrameHeader.codedNumberBytes(sampleNumber)
        let numberLength = Self.codedLength(old[4])
        newHeader += old[(4 + numberLength)..<(header.length - 1)]
        newHeader.append(newHeader.withUnsafeBytes { FLACCRC.crc8($0) })
        let bodyLength = frame.count - header.length - 2
        let oldFooter = UInt16(frame[frame.count - 2]) << 8 | UInt16(frame[frame.count - 1])
        let oldHeaderCRC = FLACCRC.crc16(old)
        let newHeaderCRC = newHeader.withUnsafeBytes { FLACCRC.crc16($0) }
        // crc(H‖B) = crc(H)·x^(8|B|) + crc(B): only the header's term changes.
        let footer = oldFooter ^ FLACCRC.combine16(oldHeaderCRC ^ newHeaderCRC, 0, lengthB: bodyLength)
        output += newHeader
        let body = UnsafeRawBufferPointer(rebasing: frame[header.length..<(frame.count - 2)])
        output.append(
            contentsOf: UnsafeBufferPointer(
                start: body.baseAddress?.assumingMemoryBound(to: UInt8.self), count: body.count))
        output.append(UInt8(footer >> 8))
        output.append(UInt8(footer & 0xFF))
    }

    static func codedLength(_ lead: UInt8) -> Int {
        switch lead {
        case 0x00...0x7F: 1
        case 0xC0...0xDF: 2
        case 0xE0...0xEF: 3
        case 0xF0...0xF7: 4
        case 0xF8...0xFB: 5
        case 0xFC...0xFD: 6
        default: 7
        }
    }
}

/// The STREAMINFO and SEEKTABLE a `FLACFrameReader` read itself from a file's metadata blocks.
public struct FLACStreamLayout: Sendable {
    public var streamInfo: FLACStreamInfo
    public var seekPoints: [FLACSeekPoint]
    /// Byte offset of the first frame.
    public var firstFrameOffset: Int64
}

/// Walks the frames of a FLAC file without decoding them. A frame is handed out only when its
/// header parses with a good CRC-8, agrees with STREAMINFO (channels, rate, width), carries the
/// number expected after the previous frame, and its bytes up to the next such header (or the
/// end of the file) check with its CRC-16 footer; a false sync code inside audio data fails
/// those and the scan goes on. Anything else throws `.corrupt`: the caller decodes instead.
///
/// Reads with `pread` in chunks of `chunkBytes`; a frame's bytes stay valid until the next call.
/// One thread at a time.
public final class FLACFrameReader {
    public struct Frame {
        /// The first sample's number in the file (per channel).
        public var sampleNumber: Int
        public var header: FLACFrameHeader
        /// The whole frame, header to CRC-16; valid until the next call on the reader.
        public var bytes: UnsafeRawBufferPointer
        public var blockSize: Int { header.blockSize }
    }

    public let name: String
    public let layout: FLACStreamLayout
    public var streamInfo: FLACStreamInfo { layout.streamInfo }
    static let chunkBytes = 4 << 20

    private let file: ReadOnlyFile
    private let fileSize: Int64
    /// Bytes of the file from `bufferOffset`, `bufferCount` of them valid.
    private let buffer: UnsafeMutableRawBufferPointer
    private var bufferOffset: Int64 = 0
    private var bufferCount = 0
    /// Where the next frame starts (a file offset), and its first sample's number.
    private var nextOffset: Int64
    private var nextSample = 0
    /// The blocking strategy of the stream, from its first frame seen.
    private var variable: Bool?
    private let largestFrame: Int

    public convenience init(path: String) throws(MediaError) {
        try self.init(file: ReadOnlyFile(path: path))
    }

    public init(file: ReadOnlyFile) throws(MediaError) {
        self.file = file
        name = file.name
        fileSize = try file.size()
        layout = try Self.readLayout(file)
        nextOffset = layout.firstFrameOffset
        let info = layout.streamInfo
        largestFrame = Int(
            FLACEncoder.maximumFrameBytes(
                channels: info.channels, bitsPerSample: info.bitsPerSample + 1, blocksize: 65_535))
        buffer = .allocate(byteCount: max(Self.chunkBytes, 2 * largestFrame), alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// Places the reader at the frame holding sample `sample`: from the last seek point at or
    /// before it whose target frame verifies (else from the first frame), then frame by frame.
    public func position(at sample: Int) throws(MediaError) {
        // Seek points are the file's bytes: one past the file, or past Int64, is passed over.
        let points = layout.seekPoints.filter {
            !$0.isPlaceholder && $0.sampleNumber <= UInt64(max(sample, 0)) && $0.streamOffset < UInt64(fileSize)
        }
        for point in points.reversed() {
            let offset = layout.firstFrameOffset + Int64(point.streamOffset)
            guard offset < fileSize, let header = try headerAt(offset) else { continue }
            guard sampleNumber(of: header) == Int(point.sampleNumber) else { continue }
            nextOffset = offset
            nextSample = Int(point.sampleNumber)
            variable = header.variableBlocksize
            return try skip(to: sample)
        }
        nextOffset = layout.firstFrameOffset
        nextSample = 0
        try skip(to: sample)
    }

    private func skip(to sample: Int) throws(MediaError) {
        while true {
            let start = (nextOffset, nextSample)
            guard let frame = try next() else { break }
            if frame.sampleNumber + frame.blockSize > sample {
                (nextOffset, nextSample) = start
                return
            }
        }
    }

    /// The next frame; nil at the end of the file.
    public func next() throws(MediaError) -> Frame? {
        guard nextOffset < fileSize else { return nil }
        guard let header = try headerAt(nextOffset) else {
            throw corrupt("no valid frame header at byte \(nextOffset)")
        }
        if variable == nil { variable = header.variableBlocksize }
        guard header.variableBlocksize == variable, sampleNumber(of: header) == nextSample else {
            throw corrupt("the frame at byte \(nextOffset) does not follow sample \(nextSample)")
        }
        // The frame's bytes, up to the next header that checks (or the end of the file).
        let start = nextOffset
        try load(start, count: min(Int64(largestFrame) + 32, fileSize - start))
        let base = Int(start - bufferOffset)
        let available = bufferCount - base
        let bytes = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[base..<(base + available)])
        let following = nextSample + header.blockSize
        let atEnd = start + Int64(available) == fileSize
        // Candidates: a sync code followed by a header that parses (CRC-8), agrees with
        // STREAMINFO and carries the next number; the bytes before one must check with the
        // frame's CRC-16. Sync codes are looked for a word at a time, the CRC-16 worked out
        // only up to each candidate (sliced, 8 bytes a step), once per byte.
        var crc: UInt16 = 0
        var checked = 0
        var end: Int?
        let p = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var index = header.length
        let limit = available - 1
        while index < limit {
            if index + 8 <= limit {
                let word = ~UnsafeRawPointer(p + index).loadUnaligned(as: UInt64.self)
                // No 0xFF byte among these 8: skip them.
                if (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 == 0 {
                    index += 8
                    continue
                }
            }
            if p[index] == 0xFF && p[index + 1] & 0xFE == 0xF8, let next = FLACFrameHeader.parse(bytes, at: index),
                next.variableBlocksize == header.variableBlocksize, agrees(next)
            {
                crc = FLACCRC.crc16(UnsafeRawBufferPointer(rebasing: bytes[checked..<index]), from: crc)
                checked = index
                if crc == 0 {
                    // A frame ends here. The CRC-16 of whole frames one after another is 0 too,
                    // so one whose number is not the next must stop the walk, not be passed over.
                    guard sampleNumber(of: next) == following else {
                        throw corrupt(
                            "the frame at byte \(start + Int64(index)) is numbered for sample \(sampleNumber(of: next)), "
                                + "not \(following)")
                    }
                    end = index
                    break
                }
            }
            index += 1
        }
        if end == nil && atEnd {
            crc = FLACCRC.crc16(UnsafeRawBufferPointer(rebasing: bytes[checked..<available]), from: crc)
            if crc == 0 { end = available }
        }
        guard let end else {
            throw corrupt("the frame at byte \(start) (sample \(nextSample)) fails its CRC-16 or is cut short")
        }
        let frame = Frame(
            sampleNumber: nextSample, header: header, bytes: UnsafeRawBufferPointer(rebasing: bytes[..<end]))
        nextOffset = start + Int64(end)
        nextSample = following
        return frame
    }

    private func sampleNumber(of header: FLACFrameHeader) -> Int {
        header.variableBlocksize ? Int(header.codedNumber) : Int(header.codedNumber) * streamInfo.maxBlockSize
    }

    private func agrees(_ header: FLACFrameHeader) -> Bool {
        header.channels == streamInfo.channels && (header.sampleRate ?? streamInfo.sampleRate) == streamInfo.sampleRate
            && (header.bitsPerSample ?? streamInfo.bitsPerSample) == streamInfo.bitsPerSample
    }

    private func headerAt(_ offset: Int64) throws(MediaError) -> FLACFrameHeader? {
        try load(offset, count: min(32, fileSize - offset))
        let base = Int(offset - bufferOffset)
        let bytes = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[base..<bufferCount])
        guard let header = FLACFrameHeader.parse(bytes, at: 0), agrees(header) else { return nil }
        return header
    }

    /// Makes bytes [offset, offset + count) available in the buffer (count ≤ its size).
    private func load(_ offset: Int64, count: Int64) throws(MediaError) {
        if offset >= bufferOffset && offset + count <= bufferOffset + Int64(bufferCount) { return }
        var kept = 0
        if offset >= bufferOffset && offset < bufferOffset + Int64(bufferCount) {
            kept = Int(bufferOffset + Int64(bufferCount) - offset)
            let from = Int(offset - bufferOffset)
            buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + from, byteCount: kept)
        }
        bufferOffset = offset
        bufferCount = kept
        while bufferCount < buffer.count && bufferOffset + Int64(bufferCount) < fileSize {
            let got = try file.read(
                into: buffer.baseAddress! + bufferCount, count: buffer.count - bufferCount,
                at: bufferOffset + Int64(bufferCount))
            guard got > 0 else { break }
            bufferCount += got
        }
        guard Int64(bufferCount) >= count else {
            throw MediaError(.io, path: name, message: "the file shrank while it was read; try again")
        }
    }

    private func corrupt(_ what: String) -> MediaError {
        MediaError(.corrupt, path: name, message: "\(what); run `recctl archive verify` on it")
    }

    /// Reads the metadata blocks: STREAMINFO (required, first), SEEKTABLE (if any).
    private static func readLayout(_ file: ReadOnlyFile) throws(MediaError) -> FLACStreamLayout {
        func read(_ count: Int, at offset: Int64) throws(MediaError) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            let got = try bytes.withUnsafeMutableBufferPointer { b throws(MediaError) in
                try file.read(into: b.baseAddress!, count: count, at: offset)
            }
            guard got == count else {
                throw MediaError(.corrupt, path: file.name, message: "its FLAC metadata is cut short")
            }
            return bytes
        }
        guard try read(4, at: 0) == Array("fLaC".utf8) else {
            throw MediaError(.unsupportedFormat, path: file.name, message: "it is not a native FLAC file")
        }
        var offset: Int64 = 4
        var info: FLACStreamInfo?
        var points: [FLACSeekPoint] = []
        while true {
            let head = try read(4, at: offset)
            let type = head[0] & 0x7F
            let length = Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
            offset += 4
            if type == 0 && length == 34 && info == nil {
                let s = try read(34, at: offset)
                func bits(_ from: Int, _ count: Int) -> Int {
                    var value = 0
                    for bit in from..<(from + count) { value = value << 1 | Int(s[bit / 8] >> (7 - bit % 8) & 1) }
                    return value
                }
                info = FLACStreamInfo(
                    sampleRate: bits(80, 20), channels: bits(100, 3) + 1, bitsPerSample: bits(103, 5) + 1,
                    totalSamples: bits(108, 36), md5: Array(s[18..<34]), minBlockSize: bits(0, 16),
                    maxBlockSize: bits(16, 16))
            } else if type == 3 && length % 18 == 0 {
                let t = try read(length, at: offset)
                for index in 0..<(length / 18) {
                    func value(_ at: Int, _ count: Int) -> UInt64 {
                        (0..<count).reduce(UInt64(0)) { $0 << 8 | UInt64(t[index * 18 + at + $1]) }
                    }
                    points.append(
                        FLACSeekPoint(
                            sampleNumber: value(0, 8), streamOffset: value(8, 8), frameSamples: Int(value(16, 2))))
                }
            }
            guard info != nil else {
                throw MediaError(.corrupt, path: file.name, message: "it does not begin with STREAMINFO")
            }
            offset += Int64(length)
            if head[0] & 0x80 != 0 { break }
        }
        guard let info else {
            throw MediaError(.corrupt, path: file.name, message: "it does not begin with STREAMINFO")
        }
        return FLACStreamLayout(streamInfo: info, seekPoints: points, firstFrameOffset: offset)
    }
}

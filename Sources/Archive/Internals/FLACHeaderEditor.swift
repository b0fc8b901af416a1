// In-place edits of a finished segment's metadata, without rewriting the file: the seek
// table's unused template points become placeholders, and the end-of-segment comments
// (END_REASON, GAPS) grow the VORBIS_COMMENT block into the PADDING block that follows it.
// Each edit is a single pwrite of blocks whose total size does not change, so a crash sees
// either the old or the new header, never a broken block chain.
//
// Threads: whoever owns the file (the archiver, or recovery).

import Platform

/// A metadata block's place in a FLAC file.
struct MetadataBlockLocation: Equatable {
    static let streamInfo: UInt8 = 0
    static let padding: UInt8 = 1
    static let seekTable: UInt8 = 3
    static let vorbisComment: UInt8 = 4

    var type: UInt8
    var isLast: Bool
    /// Offset of the block's 4-byte header.
    var offset: Int64
    /// Length of the block's body.
    var length: Int

    var bodyOffset: Int64 { offset + 4 }
}

enum FLACHeaderEditor {
    /// The metadata blocks of `file`, in order.
    static func blocks(of file: OwnedFile) throws(ArchiveError) -> [MetadataBlockLocation] {
        let magic = try read(file, count: 4, at: 0)
        guard magic == Array("fLaC".utf8) else {
            throw .unreadableFile(path: file.path, reason: "no fLaC signature")
        }
        var blocks: [MetadataBlockLocation] = []
        var offset: Int64 = 4
        while blocks.count < 1024 {
            let header = try read(file, count: 4, at: offset)
            guard header.count == 4 else {
                throw .unreadableFile(path: file.path, reason: "metadata ends early")
            }
            let length = Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
            let block = MetadataBlockLocation(
                type: header[0] & 0x7F, isLast: header[0] & 0x80 != 0, offset: offset, length: length)
            blocks.append(block)
            offset += 4 + Int64(length)
            if block.isLast { return blocks }
        }
        throw .unreadableFile(path: file.path, reason: "too many metadata blocks")
    }

    /// Turns seek points the encoder never reached (a segment shorter than planned) into
    /// placeholders, sorted last, as FLAC requires.
    static func retireUnusedSeekPoints(in file: OwnedFile, blocks: [MetadataBlockLocation]) throws(ArchiveError) {
        guard let table = blocks.first(where: { $0.type == MetadataBlockLocation.seekTable }),
            table.length % 18 == 0, table.length > 0
        else { return }
        let body = try read(file, count: table.length, at: table.bodyOffset)
        guard body.count == table.length else { return }
        let placeholder = UInt64.max
        var points: [(sample: UInt64, offset: UInt64, frameSamples: UInt16)] = []
        for index in 0..<(table.length / 18) {
            let base = index * 18
            points.append(
                (
                    readBigEndian(body, base, 8), readBigEndian(body, base + 8, 8),
                    UInt16(readBigEndian(body, base + 16, 2))
                ))
        }
        var used = points.filter { $0.sample != placeholder && $0.frameSamples > 0 }
        used.sort { $0.sample < $1.sample }
        var kept: [(sample: UInt64, offset: UInt64, frameSamples: UInt16)] = []
        for point in used where kept.last?.sample != point.sample { kept.append(point) }
        let fixed = kept + Array(repeating: (placeholder, 0, 0), count: points.count - kept.count)
        guard !fixed.elementsEqual(points, by: { $0 == $1 }) else { return }
        var out: [UInt8] = []
        out.reserveCapacity(table.length)
        for point in fixed {
            appendBigEndian(&out, point.sample, 8)
            appendBigEndian(&out, point.offset, 8)
            appendBigEndian(&out, UInt64(point.frameSamples), 2)
        }
        try archiveCall { () throws(SystemError) in try file.writeAll(out, at: table.bodyOffset) }
    }

    /// Sets `comments` in the VORBIS_COMMENT block: entries with the same names (ignoring
    /// case) are replaced, the rest kept in order, the new ones appended. The room comes from
    /// the PADDING block right after it. Returns false (and changes nothing) when they do not fit.
    static func setComments(
        _ comments: [VorbisComment], in file: OwnedFile, blocks: [MetadataBlockLocation]
    ) throws(ArchiveError) -> Bool {
        guard let index = blocks.firstIndex(where: { $0.type == MetadataBlockLocation.vorbisComment }),
            index + 1 < blocks.count, blocks[index + 1].type == MetadataBlockLocation.padding
        else {
            throw .unreadableFile(path: file.path, reason: "no VORBIS_COMMENT block followed by PADDING")
        }
        let vorbis = blocks[index]
        let padding = blocks[index + 1]
        let body = try read(file, count: vorbis.length, at: vorbis.bodyOffset)
        guard body.count == vorbis.length, body.count >= 8 else {
            throw .unreadableFile(path: file.path, reason: "VORBIS_COMMENT block is truncated")
        }
        let damaged = ArchiveError.unreadableFile(path: file.path, reason: "VORBIS_COMMENT block is damaged")
        let vendorLength = Int(readLittleEndian(body, 0))
        guard 4 + vendorLength + 4 <= body.count else { throw damaged }
        var entries: [[UInt8]] = []
        var cursor = 4 + vendorLength + 4
        for _ in 0..<readLittleEndian(body, 4 + vendorLength) {
            guard cursor + 4 <= body.count else { throw damaged }
            let length = Int(readLittleEndian(body, cursor))
            guard cursor + 4 + length <= body.count else { throw damaged }
            entries.append(Array(body[(cursor + 4)..<(cursor + 4 + length)]))
            cursor += 4 + length
        }
        let replaced = Set(comments.map { $0.name.uppercased() })
        entries.removeAll { entry in
            guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { return false }
            return replaced.contains(String(decoding: entry[..<equals], as: UTF8.self).uppercased())
        }
        entries += comments.map { Array("\($0.name)=\($0.value)".utf8) }

        var newBody = Array(body[0..<(4 + vendorLength)])
        appendLittleEndian(&newBody, UInt32(entries.count))
        for entry in entries {
            appendLittleEndian(&newBody, UInt32(entry.count))
            newBody += entry
        }
        let available = vorbis.length + padding.length
        guard newBody.count <= available else { return false }
        let paddingLength = available - newBody.count
        var region: [UInt8] = []
        region.reserveCapacity(8 + available)
        region += blockHeader(type: MetadataBlockLocation.vorbisComment, isLast: false, length: newBody.count)
        region += newBody
        region += blockHeader(type: MetadataBlockLocation.padding, isLast: padding.isLast, length: paddingLength)
        region += [UInt8](repeating: 0, count: paddingLength)
        try archiveCall { () throws(SystemError) in try file.writeAll(region, at: vorbis.offset) }
        return true
    }

    private static func read(_ file: OwnedFile, count: Int, at offset: Int64) throws(ArchiveError) -> [UInt8] {
        try archiveCall { () throws(SystemError) in try file.read(count: count, at: offset) }
    }

    private static func blockHeader(type: UInt8, isLast: Bool, length: Int) -> [UInt8] {
        [(isLast ? 0x80 : 0) | type, UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
    }
}

private func readBigEndian(_ bytes: [UInt8], _ start: Int, _ count: Int) -> UInt64 {
    var value: UInt64 = 0
    for index in start..<(start + count) { value = value << 8 | UInt64(bytes[index]) }
    return value
}

private func appendBigEndian(_ bytes: inout [UInt8], _ value: UInt64, _ count: Int) {
    for shift in stride(from: (count - 1) * 8, through: 0, by: -8) {
        bytes.append(UInt8(value >> UInt64(shift) & 0xFF))
    }
}

private func readLittleEndian(_ bytes: [UInt8], _ start: Int) -> UInt32 {
    UInt32(bytes[start]) | UInt32(bytes[start + 1]) << 8 | UInt32(bytes[start + 2]) << 16 | UInt32(bytes[start + 3])
        << 24
}

private func appendLittleEndian(_ bytes: inout [UInt8], _ value: UInt32) {
    bytes += [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24 & 0xFF)]
}

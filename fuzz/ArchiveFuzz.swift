import Glibc
import Platform

// libFuzzer target: what recd reads back from the archive directory, which others may write —
// the index (a whole SQLite file: recd's hardened connection, then its rows), an index row's
// columns one by one, segment file names, the tags of a segment (START_TIME, GAPS, loudness,
// clock) and the ISO 8601 times recctl sends. Nothing may trap, and every record that is let
// through must give end times, durations and names without overflow.
// Built and run by fuzz/run (swiftc -sanitize=fuzzer,address); not part of the package.
@testable import Archive
@testable import Codec

/// A scratch file for whole-index inputs (one per process: libFuzzer runs one input at a time).
private let indexPath = "/tmp/recd-fuzz-archive-\(getpid())/index.sqlite"

@_cdecl("LLVMFuzzerTestOneInput")
public func archiveFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let body = Array(bytes.dropFirst())
    switch bytes[0] % 5 {
    case 0: wholeIndex(body)
    case 1: indexRow(body)
    case 2: texts(body)
    case 3: tags(body)
    default: times(body)
    }
    return 0
}

/// Every derived value of a record that was let through: none may trap.
private func exercise(_ record: SegmentRecord) {
    precondition(record.isPlausible, "an implausible record was let through: \(record)")
    let end = record.endTime
    _ = (end.iso8601, end.fileNameStamp, end.dayPath, record.duration, record.startTime.iso8601)
    _ = record.startTime.advanced(bySeconds: record.duration)
}

/// The bytes as an index database file, opened and listed as recd does.
private func wholeIndex(_ body: [UInt8]) {
    let directory = FileSystem.directoryName(of: indexPath)
    _ = try? FileSystem.makeDirectories(directory)
    for suffix in ["", "-wal", "-shm"] { unlink(indexPath + suffix) }
    let fd = open(indexPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return }
    _ = body.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    guard let index = try? ArchiveIndex(path: indexPath) else { return }
    for record in (try? index.list()) ?? [] { exercise(record) }
    for record in (try? index.latest(limit: 20)) ?? [] { exercise(record) }
    for record in (try? index.unchained(since: UTCTime(nanosecondsSinceEpoch: 0))) ?? [] { exercise(record) }
    _ = try? index.count()
    // The day view's readers (ArchiveIndex+Day.swift) over the same forged tables.
    let (from, to) = (UTCTime(nanosecondsSinceEpoch: 0), UTCTime(secondsSinceEpoch: 4_000_000_000))
    _ = try? index.feeds(from: from, to: to, limit: 200)
    for feed in (try? index.feeds(from: from, to: to, limit: 4)) ?? [] {
        for run in (try? index.levelOverviews(app: feed.app, stream: feed.stream, from: from, to: to, limit: 100)) ?? [] {
            precondition(run.codes.count % 2 == 0 && run.codes.count <= LevelOverview.maximumCells * 2)
        }
        _ = try? index.daySegments(app: feed.app, stream: feed.stream, from: from, to: to, limit: 100)
    }
    for entry in (try? index.journal(app: nil, stream: nil, from: from, to: to, limit: 100)) ?? [] {
        _ = (entry.time.iso8601, entry.text.count, entry.seconds.map { $0.isFinite } ?? true)
    }
}

/// Reads bytes as fields: 8-byte integers and doubles, NUL-terminated texts.
private struct Fields {
    var bytes: ArraySlice<UInt8>
    mutating func int() -> Int64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(bytes.popFirst() ?? 0) }
        return Int64(bitPattern: value)
    }
    mutating func real() -> Double? {
        let raw = int()
        return raw & 0xF == 0 ? nil : Double(bitPattern: UInt64(bitPattern: raw))
    }
    mutating func text() -> String? {
        guard let first = bytes.first, first != 0xFF else {
            _ = bytes.popFirst()
            return nil
        }
        let end = bytes.firstIndex(of: 0) ?? bytes.endIndex
        let text = String(decoding: bytes[bytes.startIndex..<end], as: UTF8.self)
        bytes = bytes[min(end + 1, bytes.endIndex)...]
        return text
    }
}

/// The bytes as one row's columns.
private func indexRow(_ body: [UInt8]) {
    var fields = Fields(bytes: body[...])
    let row = SegmentRow(
        path: fields.text(), app: fields.text(), stream: fields.text(), group: fields.int(), segment: fields.int(),
        startMicroseconds: fields.int(), frames: fields.int(), sampleRate: fields.int(), channels: fields.int(),
        bitsPerSample: fields.int(), endReason: fields.text(), gaps: fields.text(), recovered: fields.int(),
        bytes: fields.int(), reals: (0..<10).map { _ in fields.real() }, clockSource: fields.text(),
        networkLoss: fields.text())
    for archive in ["/archive", "archive", "/"] {
        if let record = row.record(inArchive: archive) { exercise(record) }
    }
}

/// The bytes as a file name, a GAPS value and an ISO 8601 time.
private func texts(_ body: [UInt8]) {
    let text = String(decoding: body, as: UTF8.self)
    if let start = ArchiveLayout.startTime(fromFileName: text) { _ = start.iso8601 }
    if let gaps = SegmentGap.parse(commentValue: text) {
        precondition(gaps.count <= SegmentRecord.maximumGaps)
        _ = SegmentGap.commentValue(gaps)
    }
    for time in [UTCTime(iso8601: text), UTCTime(iso8601WithZone: text)] {
        if let time { _ = (time.iso8601, time.fileNameStamp, time.dayPath) }
    }
}

/// The bytes as STREAMINFO numbers and `NAME=value` comments, as `reindex` reads a file.
private func tags(_ body: [UInt8]) {
    var fields = Fields(bytes: body[...])
    let info = FLACStreamInfo(
        sampleRate: Int(truncatingIfNeeded: fields.int() & 0xF_FFFF),
        channels: Int(truncatingIfNeeded: fields.int() & 0xF),
        bitsPerSample: Int(truncatingIfNeeded: fields.int() & 0x3F),
        totalSamples: Int(truncatingIfNeeded: fields.int() & 0xF_FFFF_FFFF), md5: [],
        minBlockSize: 0, maxBlockSize: 0)
    var comments: [VorbisComment] = []
    while let entry = fields.text(), comments.count < 64 {
        if let comment = VorbisComment(entry: entry) { comments.append(comment) }
    }
    let record = SegmentRecord(
        path: "/archive/2026/12/06/a-b-20261206T101010.000Z.flac", streamInfo: info, comments: comments,
        bytes: fields.int())
    if record.isPlausible { exercise(record) }
}

/// The bytes as instants and steps: the arithmetic must saturate, never trap.
private func times(_ body: [UInt8]) {
    var fields = Fields(bytes: body[...])
    let time = UTCTime(nanosecondsSinceEpoch: fields.int())
    _ = time.advanced(
        byFrames: Int(truncatingIfNeeded: fields.int()), sampleRate: Int(truncatingIfNeeded: fields.int()))
    _ = time.advanced(bySeconds: fields.real() ?? 0)
    _ = UTCTime(checkedMicrosecondsSinceEpoch: fields.int())
    _ = UTCTime(checkedSecondsSinceEpoch: fields.int(), nanoseconds: fields.int())
    // The day view's query parameters (Sources/Daemon/DayQuery.swift, linked in): the rest as
    // NUL-separated key=value pairs; every answer is a query within its bounds or a refusal.
    var query: [String: String] = [:]
    for pair in fields.bytes.split(separator: 0, omittingEmptySubsequences: false).prefix(16) {
        let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
        query[String(decoding: parts[0], as: UTF8.self)] = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : ""
    }
    let now = UTCTime(secondsSinceEpoch: 1_796_342_400)  // the parsers are given the real clock
    if case .success(let day) = DayQuery.day(query, now: now) {
        precondition(day.from < day.to && day.to.microsecondsSinceEpoch - day.from.microsecondsSinceEpoch
            <= Int64(DayQuery.maxDayHours) * 3_600_000_000)
    }
    if case .success(let events) = EventsQuery.events(query, now: now) {
        precondition(events.from < events.to && (1...EventsQuery.maxLimit).contains(events.limit)
            && events.kinds.count <= EventsQuery.maxKinds)
    }
}

// The level overview stage (peak and RMS per second, into the index) from a recorder of real
// files, and the day view's tables of the index: the overview rows and the journal's reader,
// with rows written by someone else.

import Foundation
import Codec
import Testing

@testable import Archive

@Suite("Level overview and journal (the day view's tables)")
struct LevelOverviewTests {
    @Test("codes: 0.5 dB steps from 0 dBFS, 0 for no sound, clamped")
    func codes() {
        #expect(LevelOverview.code(decibels: 0) == 255)
        #expect(LevelOverview.code(decibels: -6.02) == 243)
        #expect(LevelOverview.code(decibels: -127) == 1)
        #expect(LevelOverview.code(decibels: -200) == 0)
        #expect(LevelOverview.code(decibels: -.infinity) == 0)
        #expect(LevelOverview.code(decibels: .nan) == 0)
        #expect(LevelOverview.code(decibels: 3) == 255)
        #expect(LevelOverview.decibels(code: 243) == -6)
        #expect(LevelOverview.decibels(code: 0) == nil)
        for amplitude in [1.0, 0.5, 0.1, 0.001] {
            #expect(abs(LevelOverview.decibels(amplitude: amplitude) - 20 * log10(amplitude)) < 1e-9)
        }
    }

    @Test("a recorder's segments carry peak and RMS per second: loud, digital silence, quiet, a gap; in the index")
    func recorderOverview() throws {
        let directory = TemporaryDirectory("overview")
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path + "/archive", app: "app", stream: "mic", channels: 2,
            sampleRate: 8000, bitsPerSample: 16, segmentSeconds: 3)
        // Second 0: a ±0.5 square wave (peak = RMS = −6.02 dBFS); second 1: zeros; second 2: 0.1
        // (−20 dBFS); then 1 s the source lost (a gap), then 2 s of the square wave again.
        let source = MemorySource(
            channels: 2, startTime: iso("2026-12-02T10:00:00.000000Z"), totalFrames: 8000 * 6,
            gaps: [SourceGap(position: 8000 * 3, length: 8000)]
        ) { n, _ in
            let second = n / 8000
            switch second {
            case 1: return 0
            case 2: return 0.1
            default: return n % 2 == 0 ? 0.5 : -0.5
            }
        }
        let records = finishedRecords(try record(configuration, source: source))
        try #require(records.count == 2)
        #expect(records[0].levelOverview.codes == [243, 243, 0, 0, 215, 215])
        #expect(records[1].levelOverview.codes == [0, 0, 243, 243, 243, 243])

        let index = try ArchiveIndex(path: directory.path + "/archive/index.sqlite")
        for record in records { try index.add(record) }
        let from = iso("2026-12-02T00:00:00.000000Z")
        let to = iso("2026-12-03T00:00:00.000000Z")
        let runs = try index.levelOverviews(app: "app", stream: "mic", from: from, to: to, limit: 10)
        #expect(runs.map(\.codes) == records.map(\.levelOverview.codes))
        #expect(runs.map(\.start) == records.map(\.startTime))
        #expect(try index.levelOverviews(app: "app", stream: "other", from: from, to: to, limit: 10).isEmpty)
        // A rebuild from the files keeps the overviews of files that are still there.
        _ = try index.reindex(from: directory.path + "/archive")
        #expect(try index.levelOverviews(app: "app", stream: "mic", from: from, to: to, limit: 10).count == 2)
        try index.remove(path: records[0].path)
        #expect(try index.levelOverviews(app: "app", stream: "mic", from: from, to: to, limit: 10).count == 1)
        #expect(try index.feeds(from: from, to: to, limit: 5).map { "\($0.app)/\($0.stream)" } == ["app/mic"])
    }

    @Test("cells: frames split across cell edges at any chunk size give the same codes")
    func chunking() {
        let frames = 8000 * 3 + 123
        let samples = (0..<frames).map { n in Float(sin(Double(n) * 0.05) * (n < 8000 ? 0.9 : 0.01)) }
        var reference: [UInt8]?
        for chunk in [1, 7, 1000, 8000, frames] {
            var cells = LevelCells(sampleRate: 8000, walks: Walks.current)
            cells.begin(at: 100)
            var position = 100
            samples.withUnsafeBufferPointer { buffer in
                while position - 100 < frames {
                    let count = min(chunk, frames - (position - 100))
                    let start = buffer.baseAddress! + (position - 100)
                    withUnsafePointer(to: start) { channels in
                        let pointer = UnsafeRawPointer(channels).assumingMemoryBound(to: UnsafePointer<Float>.self)
                        cells.add(pointer, channels: 0..<1, frames: count, at: position)
                    }
                    position += count
                }
            }
            let codes = cells.finish(at: position)
            #expect(codes.count == 8)
            if let reference { #expect(codes == reference, "chunk \(chunk)") } else { reference = codes }
        }
        #expect(reference?[0] == LevelOverview.code(decibels: 20 * log10(0.9)))
    }

    @Test("the journal: feed, kinds, range and limit filters; bounded in rows; others' rows out of bounds skipped")
    func journal() throws {
        let directory = TemporaryDirectory("journal")
        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        let base = iso("2026-12-02T10:00:00.000000Z")
        let entries = [
            JournalEntry(time: base, app: "a", stream: "mic", kind: "silence", text: "silent for 6 min", seconds: 360),
            JournalEntry(time: base.advanced(bySeconds: 60), app: "a", stream: "line", kind: "stall", text: "stalled"),
            JournalEntry(time: base.advanced(bySeconds: 120), app: "a", stream: nil, kind: "interruption", text: "i"),
            JournalEntry(
                time: base.advanced(bySeconds: 180), app: nil, stream: nil, kind: "recd", text: "recd started"),
            JournalEntry(time: base.advanced(bySeconds: 240), app: "b", stream: "mic", kind: "gap", text: "gap"),
        ]
        for entry in entries { try index.appendJournal(entry) }
        let day = (from: iso("2026-12-02T00:00:00.000000Z"), to: iso("2026-12-03T00:00:00.000000Z"))
        let all = try index.journal(app: nil, stream: nil, from: day.from, to: day.to, limit: 100)
        #expect(all.map(\.text) == entries.map(\.text))
        #expect(all[0].seconds == 360)
        let feed = try index.journal(app: "a", stream: "mic", from: day.from, to: day.to, limit: 100)
        #expect(feed.map(\.kind) == ["silence", "interruption", "recd"])
        let kinds = try index.journal(
            app: nil, stream: nil, from: day.from, to: day.to, kinds: ["gap", "stall"], limit: 100)
        #expect(kinds.map(\.kind) == ["stall", "gap"])
        #expect(try index.journal(app: nil, stream: nil, from: day.from, to: day.to, limit: 2).count == 2)
        let range = try index.journal(
            app: nil, stream: nil, from: base.advanced(bySeconds: 60), to: base.advanced(bySeconds: 180), limit: 100)
        #expect(range.map(\.kind) == ["stall", "interruption"])

        // Someone else's rows: a text beyond the bounds, a time no clock has: skipped, not trapped.
        let huge = String(repeating: "x", count: 100_000)
        try index.database.execute(
            "INSERT INTO journal (time_us, kind, text) VALUES (\(base.microsecondsSinceEpoch + 1), 'x', '\(huge)');"
                + "INSERT INTO journal (time_us, kind, text) VALUES (9223372036854775807, 'x', 'late');"
                + "INSERT INTO journal (time_us, kind, text, seconds) VALUES (\(base.microsecondsSinceEpoch + 2), "
                + "'x', 'ok', 1e999)")
        let read = try index.journal(app: nil, stream: nil, from: day.from, to: day.to, kinds: ["x"], limit: 100)
        #expect(read.map(\.text) == ["ok"])
        #expect(read[0].seconds == nil)
        // A text written longer than the bound is cut at a character's end.
        try index.appendJournal(
            JournalEntry(time: base, app: nil, stream: nil, kind: "long", text: String(repeating: "é", count: 600)))
        let long = try index.journal(app: nil, stream: nil, from: day.from, to: day.to, kinds: ["long"], limit: 1)
        #expect(long.first?.text.utf8.count == ArchiveIndex.journalTextBytes)

        // Bounded: with a limit of 300 rows, 1 000 more entries leave at most 300 + 255.
        index.journalLimit = 300
        for n in 0..<1_000 {
            try index.appendJournal(
                JournalEntry(
                    time: base.advanced(bySeconds: Double(n)), app: "a", stream: "mic", kind: "y", text: "\(n)"))
        }
        let kept = try index.journal(app: nil, stream: nil, from: day.from, to: day.to, limit: 10_000)
        #expect(kept.count <= 300 + 255 && kept.count >= 300)
        #expect(kept.last?.text == "999")
    }
}

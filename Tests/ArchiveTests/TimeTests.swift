// Time arithmetic: wall-clock aligned boundaries, UTC formatting and parsing.

import Testing

@testable import Archive

@Suite("Time")
struct TimeTests {
    @Test("a 3600 s segment started at 10:17:23 ends exactly on the sample of 11:00:00")
    func hourBoundary() {
        let start = iso("2026-11-29T10:17:23.000000Z")
        let schedule = RotationSchedule(start: start, sampleRate: 48000, segmentSeconds: 3600)
        let boundary = schedule.nextBoundary(afterFrame: 0)
        #expect(boundary == (42 * 60 + 37) * 48000)
        #expect(schedule.time(atFrame: boundary).iso8601 == "2026-11-29T11:00:00.000000Z")
        #expect(schedule.nextBoundary(afterFrame: boundary) == boundary + 3600 * 48000)
        #expect(schedule.nextBoundary(afterFrame: boundary - 1) == boundary)
    }

    @Test("boundaries fall on the first sample at or after the wall-clock second")
    func fractionalStart() {
        // 44.1 kHz from x.3 s: 0.7 s is 30870 frames exactly; from x.123456789 it is not whole.
        let schedule = RotationSchedule(
            start: iso("2026-01-01T00:00:00.3Z"), sampleRate: 44100, segmentSeconds: 1)
        #expect(schedule.nextBoundary(afterFrame: 0) == 30870)
        let odd = RotationSchedule(
            start: iso("2026-01-01T00:00:00.123456789Z"), sampleRate: 44100, segmentSeconds: 1)
        let first = odd.nextBoundary(afterFrame: 0)
        #expect(first == 38656)  // ceil(0.876543211 * 44100) = ceil(38655.55...)
        #expect(odd.time(atFrame: first) >= iso("2026-01-01T00:00:01Z"))
        #expect(odd.time(atFrame: first - 1) < iso("2026-01-01T00:00:01Z"))
        // Months into a recording the arithmetic still holds (no overflow, no drift).
        let far = first + 90 * 86400 * 44100
        #expect(odd.time(atFrame: odd.nextBoundary(afterFrame: far)).fileNameStamp.hasSuffix(".000Z"))
    }

    @Test("UTC text: ISO 8601 with microseconds, file-name stamps, day folders, and back")
    func formatting() {
        let time = UTCTime(secondsSinceEpoch: 1_795_994_221, nanoseconds: 123_456_789)
        #expect(time.iso8601 == "2026-11-29T23:17:01.123456Z")
        #expect(time.fileNameStamp == "20261129T231701.123Z")
        #expect(time.dayPath == "2026/11/29")
        #expect(UTCTime(iso8601: time.iso8601) == UTCTime(microsecondsSinceEpoch: time.microsecondsSinceEpoch))
        #expect(UTCTime(iso8601: "2026-11-29T23:17:01Z") == UTCTime(secondsSinceEpoch: 1_795_994_221))
        #expect(UTCTime(iso8601: "2026-11-29 23:17:01Z") == nil)
        #expect(UTCTime(iso8601: "2026-13-29T23:17:01Z") == nil)
        #expect(
            ArchiveLayout.startTime(fromFileName: "a-b-20261129T231701.123Z-2.flac")?.iso8601
                == "2026-11-29T23:17:01.123000Z")
        #expect(ArchiveLayout.fileNameComponent("../x/y") == "_._x_y")
        #expect(
            UTCTime(secondsSinceEpoch: 0).advanced(byFrames: 48000 * 86400 * 365 * 30 + 1, sampleRate: 48000)
                .nanosecondsSinceEpoch == 946_080_000_000_000_000 + 20833)
    }
}

// ClipPlan: which output frame comes from where, from index rows alone (no files).
import Testing

@testable import Archive

@Suite("clip export plans")
struct ClipPlanTests {
    static let t0 = UTCTime(secondsSinceEpoch: 1_795_000_000)

    static func record(
        _ name: String, start: UTCTime, frames: Int, gaps: [SegmentGap] = [], group: Int = 0, rate: Int = 48_000,
        channels: Int = 2
    ) -> SegmentRecord {
        SegmentRecord(
            path: "/archive/\(name).flac", app: "a", stream: "s", group: group, segment: 1, startTime: start,
            frames: frames, sampleRate: rate, channels: channels, bitsPerSample: 24, endReason: nil, gaps: gaps,
            recovered: false, bytes: 0)
    }

    /// START_TIME rounded to the microsecond as the archiver stores it.
    static func stored(_ time: UTCTime) -> UTCTime { UTCTime(microsecondsSinceEpoch: time.microsecondsSinceEpoch) }

    @Test("rotations continue exactly: 3 segments of 48000 + 47999 + 48001 frames, microsecond START_TIMEs")
    func rotationsAreSampleExact() throws {
        let a = Self.record("a", start: Self.t0.advanced(bySeconds: 0.000_013), frames: 48_000)
        let b = Self.record("b", start: Self.stored(a.endTime), frames: 47_999)
        let c = Self.record("c", start: Self.stored(b.endTime), frames: 48_001)
        let from = a.startTime.advanced(byFrames: 1000, sampleRate: 48_000)
        let plan = try ClipPlan.plan(records: [c, a, b], from: from, to: from.advanced(byFrames: 140_000, sampleRate: 48_000))
        #expect(plan.frames == 140_000)
        #expect(plan.pieces == [
            .audio(source: 0, fileFrame: 1000, frames: 47_000), .audio(source: 1, fileFrame: 0, frames: 47_999),
            .audio(source: 2, fileFrame: 0, frames: 45_001),
        ])
        #expect(plan.gaps.isEmpty)
    }

    @Test("recorded gaps and uncovered time become silence, merged when adjacent, and listed")
    func gapsAreSilence() throws {
        let a = Self.record("a", start: Self.t0, frames: 1000, gaps: [SegmentGap(position: 400, length: 100)])
        let b = Self.record("b", start: Self.t0.advanced(byFrames: 1500, sampleRate: 48_000), frames: 1000)
        let plan = try ClipPlan.plan(records: [a, b], from: Self.t0, to: Self.t0.advanced(byFrames: 3000, sampleRate: 48_000))
        #expect(plan.pieces == [
            .audio(source: 0, fileFrame: 0, frames: 400), .silence(frames: 100), .audio(source: 0, fileFrame: 400, frames: 600),
            .silence(frames: 400), .audio(source: 1, fileFrame: 0, frames: 1000), .silence(frames: 500),
        ])
        #expect(SegmentGap.commentValue(plan.gaps) == "400+100,1100+400,2500+500")
    }

    @Test("refused: to not after from, nothing recorded, a rate change inside; groups past 0 are not used")
    func refusals() throws {
        let a = Self.record("a", start: Self.t0, frames: 48_000)
        #expect(throws: ArchiveError.self) { try ClipPlan.plan(records: [a], from: Self.t0, to: Self.t0) }
        #expect(throws: ArchiveError.self) {
            try ClipPlan.plan(records: [a], from: Self.t0.advanced(bySeconds: 5), to: Self.t0.advanced(bySeconds: 6))
        }
        let b = Self.record("b", start: a.endTime, frames: 44_100, rate: 44_100)
        #expect(throws: ArchiveError.self) { try ClipPlan.plan(records: [a, b], from: Self.t0, to: Self.t0.advanced(bySeconds: 2)) }
        let wide = Self.record("g1", start: Self.t0, frames: 48_000, group: 1)
        let plan = try ClipPlan.plan(records: [a, wide], from: Self.t0, to: Self.t0.advanced(bySeconds: 1))
        #expect(plan.segments.map(\.path) == ["/archive/a.flac"])
    }

    @Test("ISO 8601 with a zone: Z, +HH:MM, -HHMM; none without one")
    func zones() {
        let utc = UTCTime(iso8601: "2026-12-01T10:02:00.5Z")
        #expect(UTCTime(iso8601WithZone: "2026-12-01T11:02:00.5+01:00") == utc)
        #expect(UTCTime(iso8601WithZone: "2026-12-01T05:32:00.5-0430") == utc)
        #expect(UTCTime(iso8601WithZone: "2026-12-01T10:02:00.5Z") == utc)
        #expect(UTCTime(iso8601WithZone: "2026-12-01T10:02:00.5") == nil)
        #expect(UTCTime(iso8601WithZone: "yesterday") == nil)
    }
}

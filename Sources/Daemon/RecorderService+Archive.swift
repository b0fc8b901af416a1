// RecorderService's archive queries: `archive.list` pages and the archive's part of `status`,
// from the control thread's own index connection.
//
// Threads: the control thread.
import Archive
import AudioEngine
import Codec
import ControlProtocol
import Foundation
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

extension RecorderService {

    /// The most segments one `archive.list` reply holds; a client pages on with `next`.
    static let maxListedSegments = 1000

    /// `archive.list`: a page of at most `limit` segments from the `offset`th, and `next`, the
    /// offset of the page after it (null on the last): however large the archive, the reply
    /// stays well inside a client's 4 MiB and the query short on the control thread.
    func archiveList(app: String?, since text: String?, offset: Int = 0, limit: Int? = nil) throws -> [(
        String, JSONValue
    )] {
        let limit = try RequestGate.checkedPageLimit(
            .archiveList, offset: offset, limit: limit, max: Self.maxListedSegments)
        guard let index else {
            throw SessionError(.unspecified, "the archive index is not open; run `recctl archive reindex`")
        }
        var since: UTCTime?
        if let text {
            // recctl sends UTC (it resolves "today", "-1h" and local times itself); other clients
            // may give any zone, or a bare date (UTC midnight).
            guard let time = UTCTime(iso8601WithZone: text) ?? UTCTime(iso8601: text + "T00:00:00Z") else {
                throw SessionError(
                    .badParam,
                    "since \(text) is not a time; use ISO 8601 with a zone like 2026-11-29T23:00:00Z, "
                        + "2026-11-30T00:00:00+01:00, or a date (2026-11-29, UTC)")
            }
            since = time
        }
        // One more than the page: whether a next page exists, without counting them all.
        let records = try index.list(app: app, since: since, offset: offset, limit: limit + 1)
        let next: JSONValue = records.count > limit ? .number(Double(offset + limit)) : .null
        var listed = records.prefix(limit).map { Self.segmentInfo($0).json }
        // The segments being written come last (they are the newest), on the last page: at most
        // one file per channel group of each recorder, so the page stays bounded.
        if records.count <= limit { listed += openSegments(app: app, since: since).map(\.json) }
        return [("segments", .array(listed)), ("next", next)]
    }

    /// The open segments of the running (and still finishing) recorders, up to their last
    /// complete FLAC frame: `state` `open`, `path` the `.partial`.
    func openSegments(app: String?, since: UTCTime?) -> [SegmentInfo] {
        (recorders + stopping).filter { app == nil || $0.spec.app == app }.flatMap { $0.recorder.snapshot.open }
            .filter { open in since.map { open.record.endTime > $0 } ?? true }
            .map { open in
                var info = Self.segmentInfo(open.record)
                info.path = open.partialPath
                info.state = "open"
                return info
            }
    }

    static func segmentInfo(_ record: SegmentRecord) -> SegmentInfo {
        SegmentInfo(
            path: record.path, app: record.app, stream: record.stream, group: record.group,
            segment: record.segment, start: record.startTime.iso8601, seconds: record.duration,
            frames: record.frames, sampleRate: record.sampleRate, channels: record.channels,
            bits: record.bitsPerSample, endReason: record.endReason?.rawValue, gaps: record.gaps.count,
            recovered: record.recovered, bytes: Int(record.bytes), loudnessLufs: record.loudness.integratedLUFS,
            loudnessRangeLu: record.loudness.rangeLU, truePeakDbtp: record.loudness.truePeakDBTP,
            clockDriftPpm: record.clockDriftPPM)
    }

    /// Disk space of the archive, for `recctl status`.
    func archiveStatus() -> StatusInfo.Archive {
        let alarms = prover?.alarmInfos ?? []
        let partials = unrecovered.infos(archiveDir: archiveDir)
        guard let bytes = FileSystem.space(at: archiveDir) else {
            return StatusInfo.Archive(dir: archiveDir, space: nil, chainAlarms: alarms, unrecovered: partials)
        }
        let free = Double(bytes.availableBytes)
        let total = Double(bytes.totalBytes)
        let space = StatusInfo.Archive.Space(
            freeBytes: free.rounded(), freePercent: total > 0 ? (free / total * 1000).rounded() / 10 : 0,
            segments: (try? index?.count()) ?? nil)
        return StatusInfo.Archive(dir: archiveDir, space: space, chainAlarms: alarms, unrecovered: partials)
    }
}

// The archive as the control thread serves it: its own connection to the index (a row added for
// every finished segment: a `SegmentFeature`), `archive.list` pages, the archive's part of
// `status`, and the slow requests it hands to the worker: `archive.verify` and `archive.reindex`
// (ArchiveMaintenance.swift), `archive.export` (ArchiveExportService.swift).
//
// The index: the worker has its own connection to index.sqlite (WAL, 5 s busy timeout), the
// control thread keeps `ArchiveService.index`. Readers never wait for a writer in WAL mode;
// writers take turns, and the worker's write transactions are short.
//
// Threads: the control thread; worker jobs touch only `ArchiveMaintenance`.
import Archive
import ArchiveProof
import AudioEngine
import Codec
import ControlProtocol
import Foundation
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

/// The control thread's side of the archive. Confined to the control thread (hence
/// `@unchecked Sendable`: worker completions that capture it run there too).
final class ArchiveService: SegmentFeature, @unchecked Sendable {
    let directory: String
    /// The archive as worker jobs see it (used on the worker thread only).
    let maintenance: ArchiveMaintenance
    /// The daemon's worker for slow requests: verify, reindex, export.
    let worker: SlowRequestWorker
    /// The recorders whose open segments `archive.list` and `archive.export` include.
    let recorders: RecorderService
    /// The hash chains' keeper (nil: no key): exports with `--proof`, verify. Set once by the
    /// composition root, before any request.
    var chains: ChainKeeper? { didSet { maintenance.chains = chains } }
    /// What signs clips' Content Credentials (nil: no key or no certificate). Set once, as `chains`.
    var credentials: ClipCredentials? { didSet { maintenance.credentials = credentials } }
    /// The control thread's connection to the index (the worker has its own).
    private(set) var index: ArchiveIndex?
    /// `archive.reindex` requests on the worker, and the segments finished meanwhile, which
    /// the rebuild may have missed (added again when the last one is done).
    private var reindexesRunning = 0
    private var finishedDuringReindex: [SegmentRecord] = []

    init(directory: String, worker: SlowRequestWorker, recorders: RecorderService) {
        self.directory = directory
        maintenance = ArchiveMaintenance(directory: directory)
        self.worker = worker
        self.recorders = recorders
    }

    var archiveDir: String { directory }

    /// Start-up: the index opens, and takes the segments recovered from partials.
    func archiveOpened(recovered: [SegmentRecord]) {
        do {
            index = try ArchiveIndex(path: maintenance.indexPath)
        } catch {
            Log.error("cannot open the archive index: \(error); `recctl archive reindex` rebuilds it")
        }
        for record in recovered { try? index?.add(record) }
        journal(EventJournal.daemon("recd started", at: .now()))
    }

    /// Journals `event` for the day view (EventJournal.swift), if it is part of a feed's day.
    func journal(_ event: Event) {
        guard let entry = EventJournal.entry(for: event, at: .now()) else { return }
        journal(entry)
    }

    func journal(_ entry: JournalEntry) {
        do { try index?.appendJournal(entry) } catch { Log.warning("journal: \(error)") }
    }

    /// A finished segment's row; one recovered later may find the index that could not open
    /// at start (the same full disk) openable again.
    func segmentFinished(_ record: SegmentRecord) {
        if index == nil, record.recovered { index = try? ArchiveIndex(path: maintenance.indexPath) }
        do { try index?.add(record) } catch { Log.warning("index: \(error)") }
        if reindexesRunning > 0 { finishedDuringReindex.append(record) }
    }

    /// Called when the rebuild (and any before it) is done: segments finished meanwhile again.
    func reindexFinished() {
        reindexesRunning -= 1
        if index == nil {
            do { index = try ArchiveIndex(path: maintenance.indexPath) } catch {
                Log.error("cannot open the archive index: \(error)")
            }
        }
        guard reindexesRunning == 0 else { return }
        for record in finishedDuringReindex {
            do { try index?.add(record) } catch { Log.warning("index: \(error)") }
        }
        finishedDuringReindex.removeAll()
    }

    /// An `archive.reindex` goes to the worker (`reindex`, ArchiveMaintenance.swift).
    func reindexStarted() { reindexesRunning += 1 }

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
        // one file per channel group of each recorder, so the page stays bounded. A segment that
        // has just finished is listed once, as the index has it: a recorder's snapshot still
        // holds it open until its next segment's file opens (so that an export never misses
        // it), and its row may be indexed before then.
        if records.count <= limit {
            let indexed = Set(records.map(\.path))
            listed += openSegments(app: app, since: since, except: indexed).map(\.json)
        }
        return [("segments", .array(listed)), ("next", next)]
    }

    /// The open segments of the running (and still finishing) recorders, up to their last
    /// complete FLAC frame: `state` `open`, `path` the `.partial`; those whose finished file is
    /// among `indexed` left out.
    func openSegments(app: String?, since: UTCTime?, except indexed: Set<String>) -> [SegmentInfo] {
        recorders.live.filter { app == nil || $0.spec.app == app }.flatMap { $0.recorder.snapshot.open }
            .filter { open in !indexed.contains(open.record.path) && (since.map { open.record.endTime > $0 } ?? true) }
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

    /// Disk space of the archive, for `recctl status`; the recorders add the partials left
    /// unrecovered, the prover its chain alarms.
    func archiveStatus() -> StatusInfo.Archive {
        let alarms: [StatusInfo.ChainAlarm] = []
        let partials = recorders.unrecoveredInfos
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

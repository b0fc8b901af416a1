// The day view's tables in the archive index: each segment file's level overview
// (`level_overview`, written with the segment's row) and the journal of what happened per feed
// (`journal`: the daemon's events as a person reads them, bounded to `journalLimit` rows).
// Segment boundaries, loudness, gaps and network losses (NETWORK_LOSS, the `network_loss`
// column) are not copied here: the `segments` rows own them.
//
// The index lives in the archive directory, which others may write: every row read here is
// outside bytes, taken only when its sizes are within bounds (others are skipped).

import Platform

/// One entry of the journal. A plain value: any thread.
public struct JournalEntry: Hashable, Sendable {
    /// Its row number (increasing with every entry written; the order of writing).
    public var id: Int64
    public var time: UTCTime
    /// The feed's app and stream; nil for what concerns the whole app (stream) or box (both).
    public var app: String?
    public var stream: String?
    /// What kind of thing happened: `silence`, `stall`, `gap`, `interruption`, `recording`,
    /// `network`, `health`, `recd`, ... (a short word the filters take).
    public var kind: String
    /// What happened, as a person reads it.
    public var text: String
    /// The event as recd sent it to its watchers (JSON text), if it came from one.
    public var detail: String?
    /// How long it lasted, when it is known (seconds).
    public var seconds: Double?

    public init(
        id: Int64 = 0, time: UTCTime, app: String?, stream: String?, kind: String, text: String,
        detail: String? = nil, seconds: Double? = nil
    ) {
        (self.id, self.time, self.app, self.stream, self.kind) = (id, time, app, stream, kind)
        (self.text, self.detail, self.seconds) = (text, detail, seconds)
    }
}

/// A segment as the day view draws it: its span, loudness, end, gaps and network losses. Any thread.
public struct DaySegment: Hashable, Sendable {
    public var start: UTCTime
    public var end: UTCTime
    public var segment: Int
    public var endReason: String?
    public var loudnessLUFS: Double?
    public var truePeakDBTP: Double?
    /// Each gap's start and length in microseconds (in the time line, as the day view draws it).
    public var gaps: [(at: Int64, microseconds: Int64)]
    /// Each network loss's (NETWORK_LOSS: the receiver's zeros) start and length, as `gaps`.
    public var networkLosses: [(at: Int64, microseconds: Int64)] = []

    public static func == (lhs: DaySegment, rhs: DaySegment) -> Bool {
        lhs.start == rhs.start && lhs.end == rhs.end && lhs.segment == rhs.segment
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(start) }
}

/// A run of level overview cells: one segment file's (`LevelOverview`). Any thread.
public struct LevelOverviewRun: Hashable, Sendable {
    public var start: UTCTime
    public var codes: [UInt8]
}

extension ArchiveIndex {
    /// The most journal rows kept (about 20 MB at most: texts are at most `journalTextBytes`,
    /// details `journalDetailBytes`): the oldest go first when more are written.
    public static let defaultJournalLimit: Int64 = 50_000
    public static let journalTextBytes = 512
    public static let journalDetailBytes = 2_048
    /// The most overview bytes one row may hold when read (a day of cells).
    static let overviewBytes = LevelOverview.maximumCells * 2

    func createDayTables() throws(ArchiveError) {
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS level_overview (
                path TEXT PRIMARY KEY NOT NULL,
                app TEXT NOT NULL,
                stream TEXT NOT NULL,
                grp INTEGER NOT NULL,
                start_us INTEGER NOT NULL,
                end_us INTEGER NOT NULL,
                cell_seconds INTEGER NOT NULL,
                codes BLOB NOT NULL
            );
            CREATE INDEX IF NOT EXISTS level_overview_by_feed ON level_overview(app, stream, end_us);
            CREATE TABLE IF NOT EXISTS journal (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                time_us INTEGER NOT NULL,
                app TEXT,
                stream TEXT,
                kind TEXT NOT NULL,
                text TEXT NOT NULL,
                detail TEXT,
                seconds REAL
            );
            CREATE INDEX IF NOT EXISTS journal_by_time ON journal(time_us);
            """)
    }

    func addLevelOverview(_ record: SegmentRecord) throws(ArchiveError) {
        let codes = record.levelOverview.codes
        guard !codes.isEmpty else { return }
        let statement = try database.statement(
            "INSERT OR REPLACE INTO level_overview (path, app, stream, grp, start_us, end_us, cell_seconds, codes) "
                + "VALUES (?1, ?2, ?3, ?4, ?5, ?8, ?6, ?7)")
        statement.bind(1, record.path)
        statement.bind(2, record.app)
        statement.bind(3, record.stream)
        statement.bind(4, record.group)
        statement.bind(5, record.startTime.microsecondsSinceEpoch)
        statement.bind(6, LevelOverview.cellSeconds)
        let kept = Array(codes.prefix(Self.overviewBytes))
        statement.bind(7, bytes: kept)
        statement.bind(
            8, record.startTime.microsecondsSinceEpoch &+ Int64(kept.count / 2 * LevelOverview.cellSeconds) &* 1_000_000
        )
        try statement.run()
    }

    func removeLevelOverview(path: String) throws(ArchiveError) {
        let statement = try database.statement("DELETE FROM level_overview WHERE path = ?1")
        statement.bind(1, path)
        try statement.run()
    }

    /// The overview runs of the feed's first file (group 0 or 1) that overlap `from`..<`to`,
    /// oldest first, at most `limit` of them.
    public func levelOverviews(
        app: String, stream: String, from: UTCTime, to: UTCTime, limit: Int
    ) throws(ArchiveError) -> [LevelOverviewRun] {
        let statement = try database.statement(
            "SELECT start_us, cell_seconds, codes FROM level_overview WHERE app = ?1 AND stream = ?2 "
                + "AND grp <= 1 AND end_us > ?3 AND start_us < ?4 ORDER BY start_us LIMIT ?5")
        statement.bind(1, app)
        statement.bind(2, stream)
        statement.bind(3, from.microsecondsSinceEpoch)
        statement.bind(4, to.microsecondsSinceEpoch)
        statement.bind(5, max(0, limit))
        defer { statement.reset() }
        var runs: [LevelOverviewRun] = []
        while try statement.step() {
            guard statement.int64(1) == Int64(LevelOverview.cellSeconds),
                let start = UTCTime(checkedMicrosecondsSinceEpoch: statement.int64(0)),
                let codes = statement.boundedBytes(2, maximumBytes: Self.overviewBytes), codes.count % 2 == 0
            else { continue }
            runs.append(LevelOverviewRun(start: start, codes: codes))
        }
        return runs
    }

    /// The feed's first files (group 0 or 1) that hold audio in the range, oldest first, at
    /// most `limit`: the few columns the day view draws, rows out of bounds skipped.
    public func daySegments(
        app: String, stream: String, from: UTCTime, to: UTCTime, limit: Int
    ) throws(ArchiveError) -> [DaySegment] {
        let statement = try database.statement(
            "SELECT start_us, end_us, segment, end_reason, loudness_lufs, true_peak_dbtp, gaps, sample_rate, "
                + "network_loss FROM segments WHERE app = ?1 AND stream = ?2 AND grp <= 1 AND end_us > ?3 AND start_us < ?4 "
                + "ORDER BY start_us LIMIT ?5")
        statement.bind(1, app)
        statement.bind(2, stream)
        statement.bind(3, from.microsecondsSinceEpoch)
        statement.bind(4, to.microsecondsSinceEpoch)
        statement.bind(5, max(0, limit))
        defer { statement.reset() }
        var segments: [DaySegment] = []
        while try statement.step() {
            let rate = statement.int64(7)
            guard let start = UTCTime(checkedMicrosecondsSinceEpoch: statement.int64(0)),
                let end = UTCTime(checkedMicrosecondsSinceEpoch: statement.int64(1)), start < end,
                case .some(let reason) = statement.boundedText(3, maximumBytes: 64),
                case .some(.some(let gapsText)) = statement.boundedText(6, maximumBytes: 4_096),
                case .some(let lossText) = statement.boundedText(8, maximumBytes: 4_096),
                (1...768_000).contains(rate)
            else { continue }
            let fileGaps = SegmentGap.parse(commentValue: gapsText) ?? []
            var segment = DaySegment(
                start: start, end: end, segment: statement.int(2), endReason: reason,
                loudnessLUFS: statement.double(4).flatMap { $0.isFinite ? $0 : nil },
                truePeakDBTP: statement.double(5).flatMap { $0.isFinite ? $0 : nil },
                gaps: Self.timeLine(fileGaps, gaps: fileGaps, start: start, rate: rate, skipped: true))
            segment.networkLosses = Self.timeLine(
                SegmentGap.parse(commentValue: lossText ?? "") ?? [], gaps: fileGaps, start: start, rate: rate,
                skipped: false)
            segments.append(segment)
        }
        return segments
    }

    /// `stretches` of a file (positions in its frames, as GAPS) as times (µs since the epoch) and
    /// lengths (µs) in the segment's time line, which the file's `gaps` lengthen where they are.
    /// `skipped`: the stretches are those gaps themselves (their frames are not in the file).
    /// Stops at a number past 64 bits.
    static func timeLine(
        _ stretches: [SegmentGap], gaps: [SegmentGap], start: UTCTime, rate: Int64, skipped: Bool
    ) -> [(at: Int64, microseconds: Int64)] {
        var result: [(at: Int64, microseconds: Int64)] = []
        var before: Int64 = 0
        var nextGap = 0
        for stretch in stretches where stretch.length > 0 && stretch.position >= 0 {
            // The gaps at or before the stretch's position lie before it in the time line.
            while !skipped, nextGap < gaps.count, gaps[nextGap].position <= stretch.position {
                before &+= Int64(max(0, gaps[nextGap].length))
                nextGap += 1
            }
            let at = (Int64(stretch.position) &+ before).multipliedReportingOverflow(by: 1_000_000)
            let length = Int64(stretch.length).multipliedReportingOverflow(by: 1_000_000)
            guard !at.overflow, !length.overflow else { break }
            result.append((start.microsecondsSinceEpoch &+ at.partialValue / rate, length.partialValue / rate))
            if skipped { before &+= Int64(stretch.length) }
        }
        return result
    }

    /// The feeds (app, stream) with segments in the range, by name, at most `limit`.
    public func feeds(from: UTCTime, to: UTCTime, limit: Int) throws(ArchiveError) -> [(app: String, stream: String)] {
        let statement = try database.statement(
            "SELECT DISTINCT app, stream FROM segments WHERE end_us > ?1 AND start_us < ?2 ORDER BY app, stream "
                + "LIMIT ?3")
        statement.bind(1, from.microsecondsSinceEpoch)
        statement.bind(2, to.microsecondsSinceEpoch)
        statement.bind(3, max(0, limit))
        defer { statement.reset() }
        var feeds: [(app: String, stream: String)] = []
        while try statement.step() {
            guard case .some(.some(let app)) = statement.boundedText(0, maximumBytes: 256),
                case .some(.some(let stream)) = statement.boundedText(1, maximumBytes: 256)
            else { continue }
            feeds.append((app, stream))
        }
        return feeds
    }

    /// Writes `entry` (its `id` is ignored), its text and detail cut to their bounds; every
    /// 256th entry also drops those older than the newest `journalLimit`.
    public func appendJournal(_ entry: JournalEntry) throws(ArchiveError) {
        let statement = try database.statement(
            "INSERT INTO journal (time_us, app, stream, kind, text, detail, seconds) "
                + "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
        statement.bind(1, entry.time.microsecondsSinceEpoch)
        statement.bind(2, entry.app)
        statement.bind(3, entry.stream)
        statement.bind(4, Self.cut(entry.kind, 32))
        statement.bind(5, Self.cut(entry.text, Self.journalTextBytes))
        statement.bind(6, entry.detail.flatMap { $0.utf8.count <= Self.journalDetailBytes ? $0 : nil })
        statement.bind(7, entry.seconds)
        try statement.run()
        let id = database.lastInsertedRow
        if id % 256 == 0 {
            let prune = try database.statement("DELETE FROM journal WHERE id <= ?1")
            prune.bind(1, id &- journalLimit)
            try prune.run()
        }
    }

    /// Journal entries from `from` (inclusive) to `to` (exclusive), oldest first, at most
    /// `limit`: of the feed `app`/`stream` (with what concerned its whole app or the whole box)
    /// when given, of the kinds in `kinds` when not empty. Rows whose sizes exceed the bounds
    /// are skipped.
    public func journal(
        app: String?, stream: String?, from: UTCTime, to: UTCTime, kinds: [String] = [], limit: Int
    ) throws(ArchiveError) -> [JournalEntry] {
        var conditions = ["time_us >= ?1", "time_us < ?2"]
        if app != nil { conditions.append("(app IS NULL OR app = ?3)") }
        if stream != nil { conditions.append("(stream IS NULL OR stream = ?4)") }
        if !kinds.isEmpty {
            conditions.append("kind IN (" + kinds.indices.map { "?\($0 + 6)" }.joined(separator: ", ") + ")")
        }
        let statement = try database.statement(
            "SELECT id, time_us, app, stream, kind, text, detail, seconds FROM journal WHERE "
                + conditions.joined(separator: " AND ") + " ORDER BY time_us, id LIMIT ?5")
        statement.bind(1, from.microsecondsSinceEpoch)
        statement.bind(2, to.microsecondsSinceEpoch)
        if let app { statement.bind(3, app) }
        if let stream { statement.bind(4, stream) }
        statement.bind(5, max(0, limit))
        for (offset, kind) in kinds.enumerated() { statement.bind(Int32(offset + 6), kind) }
        defer { statement.reset() }
        var entries: [JournalEntry] = []
        while try statement.step() {
            let bound = SegmentRow.maximumTextBytes
            guard let time = UTCTime(checkedMicrosecondsSinceEpoch: statement.int64(1)),
                case .some(let app) = statement.boundedText(2, maximumBytes: bound),
                case .some(let stream) = statement.boundedText(3, maximumBytes: bound),
                case .some(.some(let kind)) = statement.boundedText(4, maximumBytes: 64),
                case .some(.some(let text)) = statement.boundedText(5, maximumBytes: Self.journalTextBytes * 2),
                case .some(let detail) = statement.boundedText(6, maximumBytes: Self.journalDetailBytes)
            else { continue }
            entries.append(
                JournalEntry(
                    id: statement.int64(0), time: time, app: app, stream: stream, kind: kind, text: text,
                    detail: detail, seconds: statement.double(7).flatMap { $0.isFinite ? $0 : nil }))
        }
        return entries
    }

    /// `text` cut to at most `bytes` UTF-8 bytes, at a character's end.
    static func cut(_ text: String, _ bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var out = ""
        for character in text {
            guard out.utf8.count + character.utf8.count <= bytes else { break }
            out.append(character)
        }
        return out
    }
}

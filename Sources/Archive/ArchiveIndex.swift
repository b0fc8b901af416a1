// The archive's index over SQLite (SPEC §9): what, when, where, how long — answering
// `recctl archive list` fast, and rebuilt from the files alone by `reindex`.
// Threads: each `ArchiveIndex` (one SQLite connection) is used by one thread at a time.

import ArchiveProof
import Codec
import Platform

/// What `ArchiveIndex.reindex` did. A plain value: any thread.
public struct ReindexSummary: Hashable, Sendable {
    /// Segments now in the index.
    public var indexed: Int
    /// Files that could not be read, with why (they are left alone).
    public var skipped: [String: ArchiveError]
}

/// A segment's place in its hash chain, as the index keeps it. A plain value: any thread.
public struct SegmentProof: Hashable, Sendable {
    /// The file's SHA-256; the previous chain entry's hash; this entry's hash.
    public var sha256: SHA256Digest
    public var chainPrevious: SHA256Digest
    public var chainEntry: SHA256Digest

    public init(sha256: SHA256Digest, chainPrevious: SHA256Digest, chainEntry: SHA256Digest) {
        self.sha256 = sha256
        self.chainPrevious = chainPrevious
        self.chainEntry = chainEntry
    }
}

/// The index of finished segments, in an SQLite database (WAL mode, a busy timeout, prepared
/// statements). Rows are keyed by path; lists come ordered by start time.
///
/// Threads: one thread at a time per object. recd has two connections to one file, the control
/// thread's and the worker's; other processes may use it too (WAL, busy timeout).
public final class ArchiveIndex {
    public let path: String
    /// The archive directory: the folder the index is in. Rows name segments inside it.
    private let directory: String
    /// Internal: the day view's tables (ArchiveIndex+Day.swift) use it too.
    let database: SQLiteDatabase
    /// `count()`'s last answer and the index's state it was counted in.
    private var counted: (rows: Int, dataVersion: Int, changes: Int64)?
    /// Rows read so far that could not describe a segment of this archive (skipped): someone
    /// wrote the index who was not recd. `recctl archive reindex` rebuilds it from the files.
    public private(set) var implausibleRows = 0
    /// The most journal rows kept (ArchiveIndex+Day.swift); a test sets a smaller one.
    var journalLimit = ArchiveIndex.defaultJournalLimit

    private static let columns =
        "path, app, stream, grp, segment, start_us, end_us, frames, sample_rate, channels, bits, end_reason, gaps, recovered, size, "
        + "loudness_lufs, loudness_range_lu, true_peak_dbtp, clock_drift_ppm, "
        + "clock_synced_start, clock_esterror_start_us, clock_maxerror_start_us, "
        + "clock_synced_end, clock_esterror_end_us, clock_maxerror_end_us, clock_source, network_loss"

    /// `column = excluded.column` for every column but the key.
    private static let upsertAssignments = columns.split(separator: ",").dropFirst()
        .map { column in String(column.filter { $0 != " " }) }.map { "\($0) = excluded.\($0)" }
        .joined(separator: ", ")

    /// Opens (or creates) the index at `path`.
    public init(path: String) throws(ArchiveError) {
        self.path = path
        directory = FileSystem.directoryName(of: path)
        database = try SQLiteDatabase(path: path)
        database.setBusyTimeout(milliseconds: 5_000)
        try database.execute("PRAGMA journal_mode = WAL")
        try database.execute("PRAGMA synchronous = NORMAL")
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS segments (
                path TEXT PRIMARY KEY NOT NULL,
                app TEXT NOT NULL,
                stream TEXT NOT NULL,
                grp INTEGER NOT NULL,
                segment INTEGER NOT NULL,
                start_us INTEGER NOT NULL,
                end_us INTEGER NOT NULL,
                frames INTEGER NOT NULL,
                sample_rate INTEGER NOT NULL,
                channels INTEGER NOT NULL,
                bits INTEGER NOT NULL,
                end_reason TEXT,
                gaps TEXT NOT NULL,
                recovered INTEGER NOT NULL,
                size INTEGER NOT NULL,
                loudness_lufs REAL,
                loudness_range_lu REAL,
                true_peak_dbtp REAL,
                replicated TEXT,
                clock_drift_ppm REAL,
                sha256 TEXT,
                chain_previous TEXT,
                chain_entry TEXT,
                clock_synced_start INTEGER,
                clock_esterror_start_us INTEGER,
                clock_maxerror_start_us INTEGER,
                clock_synced_end INTEGER,
                clock_esterror_end_us INTEGER,
                clock_maxerror_end_us INTEGER,
                clock_source TEXT,
                network_loss TEXT
            );
            CREATE INDEX IF NOT EXISTS segments_by_app_start ON segments(app, start_us);
            CREATE INDEX IF NOT EXISTS segments_by_app_end ON segments(app, end_us);
            CREATE INDEX IF NOT EXISTS segments_by_start ON segments(start_us);
            """)
        try createDayTables()
        // Written once: a needless write here would invalidate other connections' snapshots.
        let version = try database.statement("PRAGMA user_version")
        let current = try version.step() ? version.int(0) : 0
        version.reset()
        if current == 0 {
            try database.execute("PRAGMA user_version = 7")
        } else if current < 7 {
            try migrate()
        }
    }

    /// Brings an older index up to version 7, in one transaction with the version, so two
    /// processes opening an old index at once cannot both change it. The new columns are NULL
    /// until `reindex` reads the files' comments (loudness, drift), the first copy
    /// (`replicated`) or the segment's chain entry (`sha256`, ...). Version 1 had no loudness,
    /// version 2 no `replicated` (the remote each segment was copied to), version 3 no
    /// clock drift, version 4 no hash chain nor clock synchronisation, version 5 no clock source,
    /// version 6 no network loss (`network_loss`: NETWORK_LOSS's list, NULL until `reindex`).
    private func migrate() throws(ArchiveError) {
        try database.execute("BEGIN IMMEDIATE")
        do throws(ArchiveError) {
            let version = try database.statement("PRAGMA user_version")
            let current = try version.step() ? version.int(0) : 0
            version.reset()
            if current == 1 {
                try database.execute(
                    """
                    ALTER TABLE segments ADD COLUMN loudness_lufs REAL;
                    ALTER TABLE segments ADD COLUMN loudness_range_lu REAL;
                    ALTER TABLE segments ADD COLUMN true_peak_dbtp REAL;
                    PRAGMA user_version = 2;
                    """)
            }
            if (1...2).contains(current) {
                try database.execute("ALTER TABLE segments ADD COLUMN replicated TEXT; PRAGMA user_version = 3;")
            }
            if (1...3).contains(current) {
                try database.execute("ALTER TABLE segments ADD COLUMN clock_drift_ppm REAL; PRAGMA user_version = 4;")
            }
            if (1...4).contains(current) {
                try database.execute(
                    """
                    ALTER TABLE segments ADD COLUMN sha256 TEXT;
                    ALTER TABLE segments ADD COLUMN chain_previous TEXT;
                    ALTER TABLE segments ADD COLUMN chain_entry TEXT;
                    ALTER TABLE segments ADD COLUMN clock_synced_start INTEGER;
                    ALTER TABLE segments ADD COLUMN clock_esterror_start_us INTEGER;
                    ALTER TABLE segments ADD COLUMN clock_maxerror_start_us INTEGER;
                    ALTER TABLE segments ADD COLUMN clock_synced_end INTEGER;
                    ALTER TABLE segments ADD COLUMN clock_esterror_end_us INTEGER;
                    ALTER TABLE segments ADD COLUMN clock_maxerror_end_us INTEGER;
                    PRAGMA user_version = 5;
                    """)
            }
            if (1...5).contains(current) {
                try database.execute("ALTER TABLE segments ADD COLUMN clock_source TEXT; PRAGMA user_version = 6;")
            }
            if (1...6).contains(current) {
                try database.execute("ALTER TABLE segments ADD COLUMN network_loss TEXT; PRAGMA user_version = 7;")
            }
            try database.execute("COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }

    /// Adds a segment, replacing the row of the same path if there is one (keeping where it
    /// was copied: `replicated`).
    public func add(_ record: SegmentRecord) throws(ArchiveError) {
        let statement = try database.statement(
            "INSERT INTO segments (\(ArchiveIndex.columns)) "
                + "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, "
                + "?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27) "
                + "ON CONFLICT(path) DO UPDATE SET \(ArchiveIndex.upsertAssignments)")
        bind(record, to: statement)
        try statement.run()
        try addLevelOverview(record)
    }

    /// Replaces the row of `record.path`; throws `.invalidArgument` when there is none.
    public func update(_ record: SegmentRecord) throws(ArchiveError) {
        let statement = try database.statement(
            "UPDATE segments SET app = ?2, stream = ?3, grp = ?4, segment = ?5, start_us = ?6, end_us = ?7, "
                + "frames = ?8, sample_rate = ?9, channels = ?10, bits = ?11, end_reason = ?12, gaps = ?13, "
                + "recovered = ?14, size = ?15, loudness_lufs = ?16, loudness_range_lu = ?17, true_peak_dbtp = ?18, "
                + "clock_drift_ppm = ?19, clock_synced_start = ?20, clock_esterror_start_us = ?21, "
                + "clock_maxerror_start_us = ?22, clock_synced_end = ?23, clock_esterror_end_us = ?24, "
                + "clock_maxerror_end_us = ?25, clock_source = ?26, network_loss = ?27 "
                + "WHERE path = ?1")
        bind(record, to: statement)
        try statement.run()
        guard database.changes == 1 else { throw .invalidArgument("the index has no segment \(record.path)") }
    }

    /// Removes the row of `path`; false when there was none.
    @discardableResult
    public func remove(path: String) throws(ArchiveError) -> Bool {
        let statement = try database.statement("DELETE FROM segments WHERE path = ?1")
        statement.bind(1, path)
        try statement.run()
        let removed = database.changes > 0
        try removeLevelOverview(path: path)
        return removed
    }

    /// The row of `path`, if any.
    public func record(path: String) throws(ArchiveError) -> SegmentRecord? {
        let statement = try database.statement("SELECT \(ArchiveIndex.columns) FROM segments WHERE path = ?1")
        statement.bind(1, path)
        defer { statement.reset() }  // ends the read transaction
        return try statement.step() ? record(from: statement) : nil
    }

    /// Segments of `app` (all apps when nil) that hold audio after `since` (their end is
    /// later) and start before `until`, ordered by start time, oldest first; of those, at most
    /// `limit` from the `offset`th on (nil: all).
    public func list(
        app: String? = nil, since: UTCTime? = nil, until: UTCTime? = nil, offset: Int = 0, limit: Int? = nil
    ) throws(ArchiveError) -> [SegmentRecord] {
        var conditions: [String] = []
        if app != nil { conditions.append("app = ?1") }
        if since != nil { conditions.append("end_us > ?2") }
        if until != nil { conditions.append("start_us < ?3") }
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        let statement = try database.statement(
            "SELECT \(ArchiveIndex.columns) FROM segments\(filter) ORDER BY start_us, path LIMIT ?4 OFFSET ?5")
        if let app { statement.bind(1, app) }
        if let since { statement.bind(2, since.microsecondsSinceEpoch) }
        if let until { statement.bind(3, until.microsecondsSinceEpoch) }
        statement.bind(4, limit ?? -1)  // SQLite: a negative LIMIT is none
        statement.bind(5, offset)
        defer { statement.reset() }
        return try records(from: statement)
    }

    /// Segments not yet copied to `remote` (never copied, or to another remote), oldest
    /// first: replication's queue, and what retention spares while a remote is set.
    public func unreplicated(to remote: String) throws(ArchiveError) -> [SegmentRecord] {
        let statement = try database.statement(
            "SELECT \(ArchiveIndex.columns) FROM segments WHERE replicated IS NULL OR replicated != ?1 "
                + "ORDER BY start_us, path")
        statement.bind(1, remote)
        defer { statement.reset() }
        return try records(from: statement)
    }

    /// The `limit` most recently started segments (all apps), newest first: the status page's
    /// "recent segments".
    public func latest(limit: Int) throws(ArchiveError) -> [SegmentRecord] {
        let statement = try database.statement(
            "SELECT \(ArchiveIndex.columns) FROM segments ORDER BY start_us DESC, path DESC LIMIT ?1")
        statement.bind(1, max(0, limit))
        defer { statement.reset() }
        return try records(from: statement)
    }

    /// Notes that `path` has a checked copy on `remote`; false when the index has no such row.
    @discardableResult
    public func markReplicated(path: String, to remote: String) throws(ArchiveError) -> Bool {
        let statement = try database.statement("UPDATE segments SET replicated = ?2 WHERE path = ?1")
        statement.bind(1, path)
        statement.bind(2, remote)
        try statement.run()
        return database.changes > 0
    }

    /// Notes the segment's chain entry (its file's SHA-256, the entry before it, the entry's own
    /// hash); false when the index has no such row. Kept when the row is added again.
    @discardableResult
    public func setProof(path: String, _ proof: SegmentProof) throws(ArchiveError) -> Bool {
        let statement = try database.statement(
            "UPDATE segments SET sha256 = ?2, chain_previous = ?3, chain_entry = ?4 WHERE path = ?1")
        statement.bind(1, path)
        statement.bind(2, proof.sha256.hex)
        statement.bind(3, proof.chainPrevious.hex)
        statement.bind(4, proof.chainEntry.hex)
        try statement.run()
        return database.changes > 0
    }

    /// The segment's chain entry as `setProof` noted it; nil when it has none (or no row).
    public func proof(path: String) throws(ArchiveError) -> SegmentProof? {
        let statement = try database.statement(
            "SELECT sha256, chain_previous, chain_entry FROM segments WHERE path = ?1")
        statement.bind(1, path)
        defer { statement.reset() }
        guard try statement.step(), let sha = statement.text(0).flatMap({ SHA256Digest(hex: $0) }),
            let previous = statement.text(1).flatMap({ SHA256Digest(hex: $0) }),
            let entry = statement.text(2).flatMap({ SHA256Digest(hex: $0) })
        else { return nil }
        return SegmentProof(sha256: sha, chainPrevious: previous, chainEntry: entry)
    }

    /// Segments without a chain entry that start at or after `since`, oldest first: those a
    /// crash finished (or recovered) before recd chained them.
    public func unchained(since: UTCTime) throws(ArchiveError) -> [SegmentRecord] {
        let statement = try database.statement(
            "SELECT \(ArchiveIndex.columns) FROM segments WHERE sha256 IS NULL AND start_us >= ?1 "
                + "ORDER BY start_us, path")
        statement.bind(1, since.microsecondsSinceEpoch)
        defer { statement.reset() }
        return try records(from: statement)
    }

    /// How many segments the index holds. Counted again only when the index changed since the
    /// last count (`status` asks every second, and a year's archive is hundreds of thousands of
    /// rows): changed by this connection (its total changes) or by another (SQLite's
    /// `data_version`, which moves when another connection commits).
    public func count() throws(ArchiveError) -> Int {
        let version = try database.statement("PRAGMA data_version")
        let dataVersion = try version.step() ? version.int(0) : -1
        version.reset()
        let changes = database.totalChanges
        if let counted, counted.dataVersion == dataVersion, counted.changes == changes { return counted.rows }
        let statement = try database.statement("SELECT count(*) FROM segments")
        defer { statement.reset() }
        let rows = try statement.step() ? statement.int(0) : 0
        counted = (rows, dataVersion, changes)
        return rows
    }

    /// Rebuilds the index from the `.flac` files under `archiveDirectory` alone (STREAMINFO
    /// and Vorbis comments), in one transaction: the old rows are replaced only if it succeeds.
    public func reindex(from archiveDirectory: String) throws(ArchiveError) -> ReindexSummary {
        var skipped: [String: ArchiveError] = [:]
        var records: [SegmentRecord] = []
        for file in FileSystem.files(under: archiveDirectory, withSuffix: ".flac") {
            do throws(ArchiveError) {
                records.append(try SegmentRecord.read(path: file))
            } catch {
                skipped[file] = error
            }
        }
        try database.execute("BEGIN IMMEDIATE")
        do throws(ArchiveError) {
            // Where each file was copied, and its chain entry, survive the rebuild: the files
            // cannot tell them (the chains can, and `recctl archive prove` reads those).
            try database.execute(
                "CREATE TEMP TABLE IF NOT EXISTS kept_marks (path TEXT PRIMARY KEY, replicated TEXT, sha256 TEXT, "
                    + "chain_previous TEXT, chain_entry TEXT); "
                    + "DELETE FROM kept_marks; "
                    + "INSERT INTO kept_marks SELECT path, replicated, sha256, chain_previous, chain_entry "
                    + "FROM segments WHERE replicated IS NOT NULL OR sha256 IS NOT NULL")
            try database.execute("DELETE FROM segments")
            for record in records { try add(record) }
            try database.execute(
                "UPDATE segments SET (replicated, sha256, chain_previous, chain_entry) = "
                    + "(SELECT replicated, sha256, chain_previous, chain_entry FROM kept_marks k "
                    + "WHERE k.path = segments.path); "
                    + "DELETE FROM kept_marks; "
                    + "DELETE FROM level_overview WHERE path NOT IN (SELECT path FROM segments)")
            try database.execute("COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
        return ReindexSummary(indexed: records.count, skipped: skipped)
    }

    private func bind(_ record: SegmentRecord, to statement: SQLiteStatement) {
        statement.bind(1, record.path)
        statement.bind(2, record.app)
        statement.bind(3, record.stream)
        statement.bind(4, record.group)
        statement.bind(5, record.segment)
        statement.bind(6, record.startTime.microsecondsSinceEpoch)
        statement.bind(7, record.endTime.microsecondsSinceEpoch)
        statement.bind(8, record.frames)
        statement.bind(9, record.sampleRate)
        statement.bind(10, record.channels)
        statement.bind(11, record.bitsPerSample)
        statement.bind(12, record.endReason?.rawValue)
        statement.bind(13, SegmentGap.commentValue(record.gaps))
        statement.bind(14, record.recovered ? 1 : 0)
        statement.bind(15, record.bytes)
        statement.bind(16, record.loudness.integratedLUFS)
        statement.bind(17, record.loudness.rangeLU)
        statement.bind(18, record.loudness.truePeakDBTP)
        statement.bind(19, record.clockDriftPPM)
        for (offset, clock) in [(Int32(20), record.clockAtStart), (Int32(23), record.clockAtEnd)] {
            statement.bind(offset, clock.map { $0.synchronized ? 1.0 : 0.0 })
            statement.bind(offset + 1, clock.map { Double($0.estimatedErrorMicroseconds) })
            statement.bind(offset + 2, clock.map { Double($0.maximumErrorMicroseconds) })
        }
        statement.bind(26, record.clockSource)
        statement.bind(27, record.networkLosses.isEmpty ? nil : SegmentGap.commentValue(record.networkLosses))
    }

    /// Every row the statement still has that describes a segment (see `record(from:)`).
    private func records(from statement: SQLiteStatement) throws(ArchiveError) -> [SegmentRecord] {
        var records: [SegmentRecord] = []
        while try statement.step() {
            if let record = record(from: statement) { records.append(record) }
        }
        return records
    }

    /// The row under the statement as a segment; nil — and counted in `implausibleRows` — when
    /// it cannot describe a segment recd wrote in this archive. The index lives in the archive
    /// directory, which others may write: its rows are read as outside bytes (`SegmentRow`).
    private func record(from statement: SQLiteStatement) -> SegmentRecord? {
        var texts: [String?] = []
        for column: Int32 in [0, 1, 2, 11, 12, 25, 26] {
            guard let text = statement.boundedText(column, maximumBytes: SegmentRow.maximumTextBytes) else {
                implausibleRows += 1
                return nil
            }
            texts.append(text)
        }
        let row = SegmentRow(
            path: texts[0], app: texts[1], stream: texts[2], group: statement.int64(3),
            segment: statement.int64(4), startMicroseconds: statement.int64(5), frames: statement.int64(7),
            sampleRate: statement.int64(8), channels: statement.int64(9), bitsPerSample: statement.int64(10),
            endReason: texts[3], gaps: texts[4], recovered: statement.int64(13), bytes: statement.int64(14),
            reals: (15...24).map { statement.double(Int32($0)) }, clockSource: texts[5], networkLoss: texts[6])
        guard let record = row.record(inArchive: directory) else {
            implausibleRows += 1
            return nil
        }
        return record
    }
}

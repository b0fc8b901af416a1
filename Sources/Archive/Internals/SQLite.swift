// SQLite: one connection and its prepared statements. The only file that touches sqlite3.
//
// Threads: one thread at a time (the owner of the ArchiveIndex).

internal import CSQLite
import Platform

final class SQLiteDatabase {
    private let handle: OpaquePointer
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens (or creates) the database at `path`, which lies in a directory others may write:
    /// the file and its `-wal` and `-shm` companions must each be a regular file or absent
    /// (never a link, a FIFO or a device: SQLite would follow or block), the database is opened
    /// without following a link, and read as SQLite advises for files from outside
    /// ("defense against the dark arts": defensive mode, no trusted schema, cell size checks,
    /// no memory mapping, 1 MiB at most per value).
    init(path: String) throws(ArchiveError) {
        for file in [path, path + "-wal", path + "-shm"] {
            guard let kind = FileSystem.linkStatus(of: file)?.kind, kind != .regular else { continue }
            throw .index(
                code: SQLITE_CANTOPEN,
                message: "\(file) is not a regular file (a link, FIFO, directory or device): recd did not make "
                    + "it; move it away and run recctl archive reindex")
        }
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close_v2(handle)
            throw .index(code: code, message: "\(message) (\(path))")
        }
        self.handle = handle
        sqlite3_extended_result_codes(handle, 1)
        _ = recd_sqlite_db_config_flag(handle, SQLITE_DBCONFIG_DEFENSIVE, 1)
        _ = recd_sqlite_db_config_flag(handle, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)
        sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, 1 << 20)
        sqlite3_limit(handle, SQLITE_LIMIT_SQL_LENGTH, 1 << 20)
        try execute("PRAGMA cell_size_check = ON; PRAGMA mmap_size = 0")
    }

    deinit {
        statements.removeAll()  // finalized by their deinit, before the connection closes
        sqlite3_close_v2(handle)
    }

    /// Waits up to `milliseconds` for another connection's lock instead of failing with BUSY.
    func setBusyTimeout(milliseconds: Int32) { sqlite3_busy_timeout(handle, milliseconds) }

    /// Runs statements that return no rows.
    func execute(_ sql: String) throws(ArchiveError) {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(message)
            throw .index(code: code, message: text)
        }
    }

    /// A prepared statement for `sql`, prepared once and reused (reset, bindings cleared).
    /// Reset it after reading: an unfinished SELECT keeps its read transaction open.
    func statement(_ sql: String) throws(ArchiveError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let code = sqlite3_prepare_v2(handle, sql, -1, &raw, nil)
        guard code == SQLITE_OK, let raw else { throw .index(code: code, message: lastMessage) }
        let statement = SQLiteStatement(handle: raw, database: self)
        statements[sql] = statement
        return statement
    }

    var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }
    var changes: Int { Int(sqlite3_changes(handle)) }
    /// Rows this connection has inserted, updated or deleted since it opened.
    var totalChanges: Int64 { sqlite3_total_changes64(handle) }
    /// The rowid of the last row this connection inserted.
    var lastInsertedRow: Int64 { sqlite3_last_insert_rowid(handle) }
}

/// A prepared statement, owned: finalized in `deinit`.
final class SQLiteStatement {
    private let handle: OpaquePointer
    private unowned let database: SQLiteDatabase

    init(handle: OpaquePointer, database: SQLiteDatabase) {
        self.handle = handle
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
    func bind(_ index: Int32, _ value: Int) { sqlite3_bind_int64(handle, index, Int64(value)) }
    func bind(_ index: Int32, _ value: Double?) {
        if let value { sqlite3_bind_double(handle, index, value) } else { sqlite3_bind_null(handle, index) }
    }
    func bind(_ index: Int32, _ value: String?) {
        if let value {
            sqlite3_bind_text(handle, index, value, -1, recd_sqlite_transient())
        } else {
            sqlite3_bind_null(handle, index)
        }
    }

    func bind(_ index: Int32, bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            _ = sqlite3_bind_blob(handle, index, raw.baseAddress, Int32(raw.count), recd_sqlite_transient())
        }
    }

    /// The column's bytes (text or blob) when it has at most `maximumBytes`; nil when longer or NULL.
    func boundedBytes(_ column: Int32, maximumBytes: Int) -> [UInt8]? {
        guard sqlite3_column_type(handle, column) != SQLITE_NULL else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count <= maximumBytes else { return nil }
        guard count > 0, let start = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: start, count: count))
    }

    /// Advances: true with a row to read, false when done.
    func step() throws(ArchiveError) -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw .index(code: code, message: database.lastMessage)
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws(ArchiveError) {
        while try step() {}
        sqlite3_reset(handle)
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }
    /// nil for NULL.
    func double(_ column: Int32) -> Double? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_double(handle, column)
    }
    /// The column's text when it has at most `maximumBytes` (`.some(nil)` for NULL); nil when it
    /// is longer: a file others may write is not read into memory whole.
    func boundedText(_ column: Int32, maximumBytes: Int) -> String?? {
        guard sqlite3_column_type(handle, column) != SQLITE_NULL else { return .some(nil) }
        guard Int(sqlite3_column_bytes(handle, column)) <= maximumBytes else { return nil }
        return .some(text(column))
    }
    func text(_ column: Int32) -> String? {
        guard sqlite3_column_type(handle, column) != SQLITE_NULL, let bytes = sqlite3_column_text(handle, column) else {
            return nil
        }
        return String(cString: bytes)
    }
}

// Indexes as older recd versions wrote them, for the migration tests: version 1 (before
// loudness) and version 2 (loudness, before replication and clock drift), with one row.
@testable import Archive

enum OldIndex {
    /// The columns every version has, then version 2's loudness columns.
    private static let version1Columns = """
        path TEXT PRIMARY KEY NOT NULL, app TEXT NOT NULL, stream TEXT NOT NULL,
        grp INTEGER NOT NULL, segment INTEGER NOT NULL, start_us INTEGER NOT NULL,
        end_us INTEGER NOT NULL, frames INTEGER NOT NULL, sample_rate INTEGER NOT NULL,
        channels INTEGER NOT NULL, bits INTEGER NOT NULL, end_reason TEXT, gaps TEXT NOT NULL,
        recovered INTEGER NOT NULL, size INTEGER NOT NULL
        """
    private static let version2Columns = version1Columns + ", loudness_lufs REAL, loudness_range_lu REAL, true_peak_dbtp REAL"

    /// Writes an index of `version` (1 or 2) at `path` holding one row: `values` is the
    /// SQL list of that version's columns.
    static func write(version: Int, at path: String, values: String) throws {
        precondition(version == 1 || version == 2, "only versions 1 and 2 are known here")
        let old = try SQLiteDatabase(path: path)
        try old.execute(
            """
            CREATE TABLE segments (\(version == 1 ? version1Columns : version2Columns));
            INSERT INTO segments VALUES (\(values));
            PRAGMA user_version = \(version);
            """)
    }
}

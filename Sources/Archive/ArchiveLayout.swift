// Where segments live: ARCHIVE/YYYY/MM/DD/<app>-<stream>[-g<n>]-<UTC start>.flac (SPEC §9).

import ArchiveProof

/// Paths of the archive. Pure functions: any thread.
public enum ArchiveLayout {
    /// `ARCHIVE/2026/11/29/<app>-<stream>-20261129T231701.123Z.flac`, with `-g<group>` before
    /// the time for the channel groups of a recorder wider than 8 channels (group 1...).
    public static func segmentPath(
        archiveDirectory: String, app: String, stream: String, group: Int? = nil, start: UTCTime
    ) -> String {
        let root = archiveDirectory.hasSuffix("/") ? String(archiveDirectory.dropLast()) : archiveDirectory
        let groupPart = group.map { "-g\($0)" } ?? ""
        return "\(root)/\(start.dayPath)/\(fileNameComponent(app))-\(fileNameComponent(stream))\(groupPart)-"
            + "\(start.fileNameStamp).flac"
    }

    /// A name made safe for one path component (`ChainLayout.fileNameComponent`: the chains'
    /// names and the segments' are made by the one rule).
    public static func fileNameComponent(_ text: String) -> String { ChainLayout.fileNameComponent(text) }

    /// The start time in a segment file name (`...-20261129T231701.123Z.flac`, also with a
    /// `-1` collision suffix); nil when the name has none.
    public static func startTime(fromFileName name: String) -> UTCTime? {
        // Bytes, not Characters: a name is outside text, and a grapheme cluster can span the
        // stamp's edge.
        let bytes = Array(name.utf8)
        guard let zIndex = bytes.lastIndex(of: UInt8(ascii: "Z")), zIndex >= 19 else { return nil }
        // YYYYMMDDTHHMMSS.mmm
        let stamp = bytes[(zIndex - 19)..<zIndex].map { Character(Unicode.Scalar($0)) }
        guard stamp[8] == "T", stamp[15] == "." else { return nil }  // the digits: iso8601's check
        let text = String(stamp)
        func part(_ range: Range<Int>) -> Substring {
            text.dropFirst(range.lowerBound).prefix(range.count)
        }
        let iso =
            "\(part(0..<4))-\(part(4..<6))-\(part(6..<8))T\(part(9..<11)):\(part(11..<13)):"
            + "\(part(13..<15)).\(part(16..<19))Z"
        return UTCTime(iso8601: iso)
    }
}

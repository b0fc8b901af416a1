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
        guard let zIndex = name.lastIndex(of: "Z") else { return nil }
        let head = name[..<zIndex]
        guard head.count >= 19 else { return nil }
        let stamp = Array(head.suffix(19).utf8)
        // YYYYMMDDTHHMMSS.mmm
        guard stamp[8] == UInt8(ascii: "T"), stamp[15] == UInt8(ascii: ".") else { return nil }
        let text = String(decoding: stamp, as: UTF8.self)
        let chars = Array(text)
        let iso =
            "\(String(chars[0..<4]))-\(String(chars[4..<6]))-\(String(chars[6..<8]))T"
            + "\(String(chars[9..<11])):\(String(chars[11..<13])):\(String(chars[13..<15])).\(String(chars[16..<19]))Z"
        return UTCTime(iso8601: iso)
    }
}

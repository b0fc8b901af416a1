// What the HTTP `/archive/` route may serve: `ArchivePath.openFinishedSegment`.

import Foundation
import Platform
import Testing

@testable import Archive

@Suite("Serving finished segments")
struct ServedSegmentTests {
    @Test(
        "an indexed segment opens; .., hidden, absolute, .partial, unindexed, a symlink in the index or a directory under the archive: refused"
    )
    func confinement() throws {
        let directory = TemporaryDirectory("served")
        let root = directory.path + "/archive"
        let configuration = RecorderConfiguration(
            archiveDirectory: root, app: "alpha", stream: "s", channels: 1, sampleRate: 8000, bitsPerSample: 16,
            segmentSeconds: 1)
        let records = finishedRecords(
            try record(
                configuration,
                source: MemorySource(channels: 1, startTime: iso("2026-06-01T10:00:00Z"), totalFrames: 24000, gaps: []))
        )
        try #require(records.count == 3)
        let index = try ArchiveIndex(path: root + "/index.sqlite")
        for record in records { try index.add(record) }
        func relative(_ record: SegmentRecord) -> String { String(record.path.dropFirst(root.count + 1)) }

        let served = try ArchivePath.openFinishedSegment(relative(records[0]), archiveDirectory: root, index: index)
        #expect(served.size == FileSystem.size(of: records[0].path) && served.record == records[0])
        #expect(try served.file.read(count: 4, at: 0) == Array("fLaC".utf8))
        #expect(try index.latest(limit: 2).map(\.path) == [records[2].path, records[1].path])

        // Outside the archive: a file the index cannot know, reached by .. or an absolute path.
        try Data("secret".utf8).write(to: URL(fileURLWithPath: directory.path + "/secret.flac"))
        let bad = [
            "../secret.flac", relative(records[0]).replacingOccurrences(of: "/", with: "/../alpha/"),
            "/" + records[0].path, "./" + relative(records[0]), relative(records[0]) + ".partial",
            "alpha/.hidden.flac", "index.sqlite", "", "alpha//x.flac", "nothing/here.flac",
        ]
        for path in bad {
            #expect(throws: ArchiveError.self, "\(path) must be refused") {
                try ArchivePath.openFinishedSegment(path, archiveDirectory: root, index: index)
            }
        }
        // An indexed path that became a symbolic link to a file outside.
        try FileManager.default.moveItem(atPath: records[1].path, toPath: directory.path + "/moved.flac")
        try FileManager.default.createSymbolicLink(
            atPath: records[1].path, withDestinationPath: directory.path + "/moved.flac")
        #expect(throws: ArchiveError.self) {
            try ArchivePath.openFinishedSegment(relative(records[1]), archiveDirectory: root, index: index)
        }
        // An indexed path below a directory that became a symbolic link.
        let appDirectory = FileSystem.directoryName(of: records[2].path)
        try FileManager.default.moveItem(atPath: appDirectory, toPath: directory.path + "/elsewhere")
        try FileManager.default.createSymbolicLink(
            atPath: appDirectory, withDestinationPath: directory.path + "/elsewhere")
        #expect(throws: ArchiveError.self) {
            try ArchivePath.openFinishedSegment(relative(records[2]), archiveDirectory: root, index: index)
        }
    }
}

// Crash safety: a segment abandoned mid-write (what kill -9 leaves), a torn last frame, an
// undecodable partial, a partial still being written.

import Foundation
import Platform
import TestSupport
import Testing

@testable import Archive

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Crash recovery")
struct RecoveryTests {
    @Test("an abandoned segment and a torn snapshot recover into valid FLAC equal to the source prefix")
    func abandonedAndTorn() throws {
        let directory = TemporaryDirectory("crash")
        let rate = 48000
        let start = iso("2026-04-04T04:04:04.000000Z")
        let path = ArchiveLayout.segmentPath(
            archiveDirectory: directory.path, app: "app", stream: "crash", start: start)
        let writer = try SegmentWriter(
            path: path, format: SegmentFormat(sampleRate: rate, channels: 2, bitsPerSample: 16),
            comments: [
                VorbisComment("START_TIME", start.iso8601), VorbisComment("APP", "app"),
                VorbisComment("STREAM", "crash"),
            ],
            expectedFrames: rate * 3600)
        let chunk = rate / 10
        var snapshot = Data()
        for step in 0..<30 {
            let samples = (0..<(chunk * 2)).map { counterSample(step * chunk + $0 / 2, $0 % 2) }
            try samples.withUnsafeBufferPointer { try writer.write($0) }
            if step == 9 { writer.markGap(length: 480) }
            if step == 24 { snapshot = try Data(contentsOf: URL(fileURLWithPath: writer.partialPath)) }
        }
        let written = writer.framesWritten
        #expect(written == 3 * rate)
        // The GAPS comment is in the partial already.
        #expect(try metaflacTags(writer.partialPath)["GAPS"] == "48000+480")
        writer.abandon()  // the crash: the encoder never finishes

        // A second partial: the snapshot cut in the middle of its last frame.
        let tornPath = directory.path + "/2026/04/04/app-torn-20260404T040404.000Z.flac.partial"
        try snapshot.prefix(snapshot.count - 300).write(to: URL(fileURLWithPath: tornPath))
        // A third: nothing decodable.
        let junkPath = directory.path + "/2026/04/04/app-junk-20260404T040404.000Z.flac.partial"
        let junk = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 131) })
        try junk.write(to: URL(fileURLWithPath: junkPath))

        let results = PartialRecovery.recoverAll(in: directory.path)
        #expect(results.count == 3)
        #expect(FileSystem.files(under: directory.path, withSuffix: ".partial").isEmpty)

        func recovered(_ partial: String) -> SegmentRecord? {
            guard case .recovered(let record)? = results.first(where: { $0.partialPath == partial })?.outcome else {
                return nil
            }
            return record
        }
        let main = try #require(recovered(path + ".partial"))
        #expect(main.path == path)
        #expect(main.frames >= written - rate, "lost more than a second")
        #expect(main.frames > written - 4096 - 1, "lost more than libFLAC's unfinished block")
        #expect(main.recovered && main.endReason == .crash)
        #expect(main.gaps == [SegmentGap(position: 48000, length: 480)])
        #expect(main.startTime == start)
        #expect(try flacTestPasses(main.path))
        let decoded = try decodeWithFlacCLI(main.path, bits: 16)
        let expected = (0..<(main.frames * 2)).map { counterInteger($0 / 2, $0 % 2, bits: 16) }
        #expect(mismatch(decoded, expected) == nil)
        let (total, md5) = try metaflacTotalsAndMD5(main.path)
        #expect(total == main.frames)
        #expect(md5 == (try md5Hex(pcmBytes(expected, bits: 16))))
        let tags = try metaflacTags(main.path)
        #expect(tags["RECOVERED"] == "yes" && tags["END_REASON"] == "crash" && tags["APP"] == "app")

        let torn = try #require(recovered(tornPath))
        #expect(torn.frames > 0 && torn.frames < main.frames)
        #expect(try flacTestPasses(torn.path))
        #expect(
            mismatch(
                try decodeWithFlacCLI(torn.path, bits: 16),
                (0..<(torn.frames * 2)).map { counterInteger($0 / 2, $0 % 2, bits: 16) }) == nil)

        let junkResult = results.first { $0.partialPath == junkPath }
        #expect(junkResult?.outcome == .unrecoverable(movedTo: String(junkPath.dropLast(8)) + ".unrecoverable"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: String(junkPath.dropLast(8)) + ".unrecoverable")) == junk)

        // Nothing left to do the second time.
        #expect(PartialRecovery.recoverAll(in: directory.path).isEmpty)
    }

    @Test("a partial that a writer still holds is left alone")
    func inUse() throws {
        let directory = TemporaryDirectory("inuse")
        let writer = try SegmentWriter(
            path: directory.path + "/live.flac",
            format: SegmentFormat(sampleRate: 8000, channels: 1, bitsPerSample: 16),
            comments: [])
        let samples = (0..<8000).map { counterSample($0, 0) }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        #expect(PartialRecovery.recoverAll(in: directory.path).map(\.outcome) == [.inUse])
        let finished = try writer.finish(reason: .stop)
        #expect(try flacTestPasses(finished.path))
    }

    @Test("a finish interrupted after its rename (both names on one file) only drops the partial")
    func interruptedRename() throws {
        let directory = TemporaryDirectory("renamed")
        let writer = try SegmentWriter(
            path: directory.path + "/done.flac",
            format: SegmentFormat(sampleRate: 8000, channels: 1, bitsPerSample: 16),
            comments: [])
        let samples = (0..<8000).map { counterSample($0, 0) }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        let finished = try writer.finish(reason: .stop)
        #expect(link(finished.path, finished.path + ".partial") == 0)
        let results = PartialRecovery.recoverAll(in: directory.path)
        #expect(results.map(\.outcome) == [.alreadyRecovered(path: finished.path)])
        #expect(try flacTestPasses(finished.path))
        #expect(!FileManager.default.fileExists(atPath: finished.path + ".partial"))
    }

    @Test("kill -9 of a process writing in real time: the partial recovers, losing under a second")
    func killNine() throws {
        let directory = TemporaryDirectory("kill9")
        let binary = CommandLine.arguments[0]
        guard binary.hasSuffix(".xctest"), FileManager.default.isExecutableFile(atPath: binary) else {
            print("SKIPPED kill -9 test: cannot re-run the test binary (\(binary))")
            return
        }
        let progress = directory.path + "/progress"
        let child = try ExternalTools.ownProcess(binary, ["--testing-library", "swift-testing", "--filter", "crashChildWriter"])
        child.environment = ExternalTools.environment(["RECD_CRASH_CHILD_DIR": directory.path])
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        func framesLogged() -> Int {
            let text = (try? String(contentsOfFile: progress, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { Int($0) }.last ?? 0
        }
        let deadline = Date().addingTimeInterval(30)
        while framesLogged() < 48000 * 5 / 2 && Date() < deadline && child.isRunning { usleep(20_000) }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        let logged = framesLogged()
        try #require(logged >= 48000 * 5 / 2, "the child did not write (exit \(child.terminationStatus))")

        let results = PartialRecovery.recoverAll(in: directory.path + "/archive")
        guard case .recovered(let record)? = results.first?.outcome, results.count == 1 else {
            Issue.record("recovery: \(results)")
            return
        }
        // Everything handed to the writer before the last log line, minus at most the block
        // libFLAC was still collecting; certainly less than a second.
        #expect(record.frames >= logged - 4096)
        #expect(record.frames >= logged - 48000)
        #expect(record.recovered && record.endReason == .crash)
        #expect(try flacTestPasses(record.path))
        let decoded = try decodeWithFlacCLI(record.path, bits: 24)
        #expect(mismatch(decoded, (0..<(record.frames * 2)).map { counterInteger($0 / 2, $0 % 2, bits: 24) }) == nil)
    }

    /// The child side of `killNine`: runs only when that test starts it. Writes a segment at
    /// the pace of real audio (0.05 s chunks) and logs the frames handed over after each.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["RECD_CRASH_CHILD_DIR"] != nil))
    func crashChildWriter() throws {
        let directory = ProcessInfo.processInfo.environment["RECD_CRASH_CHILD_DIR"]!
        let start = iso("2026-10-10T10:10:10.000000Z")
        let writer = try SegmentWriter(
            path: ArchiveLayout.segmentPath(
                archiveDirectory: directory + "/archive", app: "app", stream: "kill", start: start),
            format: SegmentFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24),
            comments: [VorbisComment("START_TIME", start.iso8601)], expectedFrames: 48000 * 60)
        let log = try FileHandle(
            forWritingTo: URL(
                fileURLWithPath: { () -> String in
                    _ = FileManager.default.createFile(atPath: directory + "/progress", contents: nil)
                    return directory + "/progress"
                }()))
        let chunk = 2400
        for step in 0..<(20 * 60) {
            let samples = (0..<(chunk * 2)).map { counterSample(step * chunk + $0 / 2, $0 % 2) }
            try samples.withUnsafeBufferPointer { try writer.write($0) }
            log.write(Data("\(writer.framesWritten)\n".utf8))
            usleep(50_000)
        }
        writer.abandon()
    }
}

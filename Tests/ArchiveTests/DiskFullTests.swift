// A full disk: a 256 KiB tmpfs. The recorder must stop cleanly with diskFull, every finished
// file must be valid, nothing may be overwritten and nothing left half-written.

import Foundation
import Platform
import Testing

@testable import Archive

@Suite("Disk full")
struct DiskFullTests {
    @Test("the recorder stops with diskFull; what it wrote is valid and finished")
    func diskFull() throws {
        let directory = TemporaryDirectory("diskfull")
        let mountPoint = directory.path + "/mnt"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
        let mount = try run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mountPoint])
        guard mount.status == 0 else {
            print("SKIPPED disk-full test: cannot mount a tmpfs (needs root / CAP_SYS_ADMIN): \(mount.error)")
            return
        }
        defer { _ = try? run(["umount", mountPoint]) }

        let keep = mountPoint + "/keep.txt"
        try Data("do not touch".utf8).write(to: URL(fileURLWithPath: keep))
        let source = MemorySource(
            channels: 1, startTime: iso("2026-08-08T08:08:08.000000Z"), totalFrames: 48000 * 10, chunk: 4800,
            signal: noiseSample)
        let configuration = RecorderConfiguration(
            archiveDirectory: mountPoint + "/archive", app: "app", stream: "full", channels: 1, sampleRate: 48000,
            bitsPerSample: 16, segmentSeconds: 1)
        let events = try record(configuration, source: source)

        guard case .stopped(let reason, let error)? = events.last else {
            Issue.record("no stopped event: \(events)")
            return
        }
        #expect(reason == .diskFull)
        if case .diskFull? = error {
        } else {
            Issue.record("expected a diskFull error, got \(String(describing: error))")
        }
        #expect(error?.sessionError.code == .cannotStartRecording)
        #expect(error?.message.contains("full") == true)

        let records = finishedRecords(events)
        #expect(!records.isEmpty)
        #expect(records.last?.endReason == .diskFull)
        #expect(records.dropLast().allSatisfy { $0.endReason == .rotation })
        #expect(!events.contains { if case .segmentAbandoned = $0 { return true } else { return false } })
        var offset = 0
        for record in records {
            #expect(try flacTestPasses(record.path))
            #expect(try metaflacTags(record.path)["END_REASON"] == record.endReason?.rawValue)
            let decoded = try decodeWithFlacCLI(record.path, bits: 16)
            let expected = (offset..<(offset + record.frames)).map { Int32((noiseSample($0, 0) * 32768).rounded()) }
            #expect(mismatch(decoded, expected) == nil)
            offset += record.frames
        }
        #expect(FileSystem.files(under: mountPoint, withSuffix: ".partial").isEmpty)
        #expect(try String(contentsOfFile: keep, encoding: .utf8) == "do not touch")
        // The reservation was given back: the finished files are all that is used.
        let used = records.reduce(Int64(0)) { $0 + $1.bytes }
        #expect((FileSystem.freePercent(at: mountPoint) ?? 0) > Double(262_144 - used - 16_384) / 262_144 * 100 - 1)

        // A new recorder on the full disk refuses at once, with the same clear error.
        let again = try record(
            configuration,
            source: MemorySource(
                channels: 1, startTime: iso("2026-08-08T09:00:00.000000Z"),
                totalFrames: 48000, signal: noiseSample))
        if case .stopped(.diskFull, .diskFull?)? = again.last {} else { Issue.record("second recorder: \(again)") }
        #expect(FileSystem.files(under: mountPoint, withSuffix: ".partial").isEmpty)
    }

    @Test("without space reservation a full disk fails the write; the partial waits for recovery")
    func diskFullWithoutReservation() throws {
        let directory = TemporaryDirectory("diskfull-raw")
        let mountPoint = directory.path + "/mnt"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
        let mount = try run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", mountPoint])
        guard mount.status == 0 else {
            print("SKIPPED disk-full test: cannot mount a tmpfs (needs root / CAP_SYS_ADMIN): \(mount.error)")
            return
        }
        defer { _ = try? run(["umount", mountPoint]) }

        let writer = try SegmentWriter(
            path: mountPoint + "/raw.flac", temporarySuffix: SegmentWriter.partialSuffix,
            format: SegmentFormat(sampleRate: 48000, channels: 1, bitsPerSample: 16), comments: [],
            expectedFrames: 0, reservesSpace: false)
        var failure: ArchiveError?
        var step = 0
        while failure == nil && step < 100 {
            let samples = (0..<4800).map { noiseSample(step * 4800 + $0, 0) }
            do throws(ArchiveError) {
                try samples.withUnsafeBufferPointer { (buffer) throws(ArchiveError) in try writer.write(buffer) }
            } catch {
                failure = error
            }
            step += 1
        }
        #expect(failure == .diskFull(path: mountPoint + "/raw.flac.partial"))
        #expect(!writer.isOpen)
        #expect(throws: ArchiveError.self) { try writer.finish(reason: .diskFull) }
        writer.abandon()
        #expect(FileManager.default.fileExists(atPath: mountPoint + "/raw.flac.partial"))

        // On the full disk recovery cannot write either: it fails and keeps the partial.
        let stuck = PartialRecovery.recoverAll(in: mountPoint)
        #expect(stuck.map(\.outcome) == [.failed(.diskFull(path: mountPoint + "/raw.flac.recovering"))])
        #expect(FileManager.default.fileExists(atPath: mountPoint + "/raw.flac.partial"))
        #expect(!FileManager.default.fileExists(atPath: mountPoint + "/raw.flac.recovering"))
        // With room again, it recovers what was written.
        #expect(try run(["mount", "-o", "remount,size=1m", mountPoint]).status == 0)
        let results = PartialRecovery.recoverAll(in: mountPoint)
        guard case .recovered(let record)? = results.first?.outcome else {
            Issue.record("recovery: \(results)")
            return
        }
        #expect(record.frames > 0 && record.frames <= writer.framesWritten)
        #expect(try flacTestPasses(record.path))
        let expected = (0..<record.frames).map { Int32((noiseSample($0, 0) * 32768).rounded()) }
        #expect(mismatch(try decodeWithFlacCLI(record.path, bits: 16), expected) == nil)
    }
}

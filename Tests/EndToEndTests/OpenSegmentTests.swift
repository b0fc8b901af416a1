// The open segment end to end: the segment being written is part of the archive. The real recd
// records recd-signal's counter; `recctl archive list` shows the open segment, and
// `recctl archive export --to now` clips it, up to its last complete FLAC frame, sample for
// sample what the finished files hold once the recording stops (decoded by the reference
// decoder), alone and across a rotation.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Samples (of both channels) of a 24-bit decoded counter that do not continue the first frame
/// of their run; runs are the stretches between `gaps` (`pos+len,...`, silence in the clip,
/// where the recording has frames missing: the counter resumes further on after each).
private func counterBreaks(_ samples: [Int32], gaps: String) -> Int {
    var breaks = 0
    var runStart = 0
    let frames = samples.count / 2
    for (position, length) in (TrueTimeEndToEndTests.parseGaps(gaps) ?? []) + [(frames, 0)] {
        if position > runStart {
            let first = Int(samples[runStart * 2] / 256 + 32768)
            guard let n0 = (0..<65536).first(where: { counterK($0, 0) == first }) else { return samples.count }
            for f in runStart..<min(position, frames) {
                for c in 0..<2 where samples[f * 2 + c] != Int32((counterK(n0 + f - runStart, c) - 32768) * 256) {
                    breaks += 1
                }
            }
        }
        for f in position..<min(position + length, frames) where samples[f * 2] != 0 || samples[f * 2 + 1] != 0 {
            breaks += 1
        }
        runStart = position + length
    }
    return breaks
}

@Suite("the open segment in archive list and export", .serialized)
struct OpenSegmentExportTests {
    /// A recorder of the counter; the caller stops `source` and the recording.
    private static func recording(segmentSeconds: Int) throws -> (Daemon, SignalClient) {
        let deck = uniqueName("deck")
        let daemon = try Daemon(ports: ArchiveEndToEndTests.deckPorts(deck), archiveSegmentSeconds: segmentSeconds)
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "counter"])
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true })
        try #require(daemon.recctl("session", "set", "logger", "--category", "record", "--mic-usage", "archive").status == 0)
        try #require(daemon.recctl("permission", "grant", "logger").status == 0)
        let started = try daemon.recctl("record", "start", "logger")
        try #require(started.status == 0, "\(started.stderr)")
        return (daemon, source)
    }

    /// Stops the recording and lays its finished files out on one time line, as an export
    /// would: each at its START_TIME (continuing the previous one exactly at a rotation), its
    /// recorded gaps (GAPS) as silence. The time line, and the first START_TIME in microseconds.
    private static func finishedRecording(_ daemon: Daemon, _ source: SignalClient) throws -> ([Int32], Int64) {
        let watcher = try daemon.watch("logger")
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        _ = watcher.waitFor(timeout: 10) { $0["event"] == "recording" && $0["state"] == "finished" }
        source.stop()
        let listed = try #require(daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue)
            .sorted { ($0["start"]?.stringValue ?? "") < ($1["start"]?.stringValue ?? "") }
        #expect(listed.allSatisfy { $0["state"]?.stringValue == "finished" }, "\(listed)")
        let start0 = try #require(exportMicros(listed.first?["start"]?.stringValue ?? ""))
        var timeline: [Int32] = []
        for segment in listed {
            let path = try #require(segment["path"]?.stringValue)
            let start = try #require(exportMicros(segment["start"]?.stringValue ?? ""))
            let offset = Int((Double(start - start0) * 48_000 / 1e6).rounded())
            // A rotation continues the previous segment exactly (within half a frame of its end).
            if abs(offset - timeline.count / 2) > 1 {
                timeline += [Int32](repeating: 0, count: max(0, offset * 2 - timeline.count))
            }
            let samples = try decodeFLAC(path, bits: 24)
            var taken = 0
            let gaps = TrueTimeEndToEndTests.parseGaps(try metaflacTag(path, "GAPS") ?? "") ?? []
            for (position, length) in gaps where position <= samples.count / 2 {
                timeline += samples[(taken * 2)..<(position * 2)]
                timeline += [Int32](repeating: 0, count: length * 2)
                taken = position
            }
            timeline += samples[(taken * 2)...]
        }
        return (timeline, start0)
    }

    /// `clip` is the recording's time line from `start` (microseconds) on. (Compared as a
    /// whole, reported by the first differing frame: the arrays are too long to print.)
    private static func expectWithin(
        _ clip: [Int32], from start: Int64, recording: [Int32], recordingStart: Int64, _ what: String
    ) {
        let offset = Int((Double(start - recordingStart) * 48_000 / 1e6).rounded())
        guard offset >= 0, (offset * 2 + clip.count) <= recording.count else {
            Issue.record("\(what): frames \(offset)... lie outside the \(recording.count / 2) recorded")
            return
        }
        let expected = recording[(offset * 2)..<(offset * 2 + clip.count)]
        let differing = zip(clip, expected).enumerated().first { $0.element.0 != $0.element.1 }.map { $0.offset / 2 }
        #expect(differing == nil, "\(what) differs from the recording at frame \(differing ?? -1) of \(clip.count / 2)")
    }

    @Test("6 s into a 300 s segment: archive list shows it open, the last 4 s (--to now) export sample-exact")
    func lastSecondsOfOpenSegment() throws {
        let out = try ExportTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let (daemon, source) = try Self.recording(segmentSeconds: 300)
        // Six seconds in (the segment may begin up to a second after the request).
        var open: JSONValue?
        // (The last: should the wall clock pass a multiple of 300 s meanwhile, a new one opens.)
        #expect(
            try eventually(timeout: 20) {
                open = try daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue?.last
                return (open?["frames"]?.intValue ?? 0) >= 6 * 48_000
            })
        let listed = try #require(open)
        #expect(listed["state"]?.stringValue == "open", "\(listed)")
        let partial = try #require(listed["path"]?.stringValue)
        #expect(partial.hasSuffix(".flac.partial"), "\(listed)")
        #expect(listed["endReason"] == .null)
        #expect(exportMicros(listed["start"]?.stringValue ?? "") != nil, "\(listed)")
        // Frames up to a complete FLAC frame: what the file holds, never more.
        #expect((listed["bytes"]?.intValue ?? 0) > 0 && (listed["bytes"]?.intValue ?? 0) <= Int(FileManager.default.sizeOfFile(partial)))
        let text = try daemon.recctl("archive", "list", "--app", "logger")
        #expect(text.stdout.contains(" open ") && text.stdout.contains(partial), "\(text.stdout)")

        let flac = out + "/last4.flac"
        let exported = try daemon.recctl("--json", "archive", "export", "--app", "logger", "--from", "now-4s", "--to", "now", "-o", flac)
        try #require(exported.status == 0, "\(exported.stdout)\(exported.stderr)")
        let reply = try #require(exported.json)
        // Clamped to what is written: shorter than 4 s by the frames not yet complete.
        #expect(reply["requestedEnd"]?.stringValue != nil, "\(reply)")
        let frames = try #require(reply["frames"]?.intValue)
        #expect(frames > 3 * 48_000 && frames < 4 * 48_000, "\(reply)")
        // (Gaps the recorder recorded, if any, are silence in the clip: the comparison with the
        // recording's time line below covers them.)
        #expect(reply["segments"]?.arrayValue?.compactMap(\.stringValue) == [partial], "\(reply)")
        #expect(try flacTest(flac))
        let clip = try decodeFLAC(flac, bits: 24)
        #expect(clip.count == frames * 2)
        #expect(counterBreaks(clip, gaps: reply["gaps"]?.stringValue ?? "") == 0)
        // WAV, the last 2 s; and recctl's words for the clamp.
        let asWAV = try daemon.recctl(
            "--json", "archive", "export", "--app", "logger", "--from", "now-2s", "--to", "now", "-o", out + "/last2.wav")
        try #require(asWAV.status == 0, "\(asWAV.stderr)")
        let wavReply = try #require(asWAV.json)
        #expect(try runTool("flac", ["-s", "-o", out + "/last2.flac", out + "/last2.wav"]).status == 0)
        let wavClip = try decodeFLAC(out + "/last2.flac", bits: 24)
        #expect(wavClip.count == (wavReply["frames"]?.intValue ?? 0) * 2 && wavClip.count > 48_000 * 2)
        #expect(counterBreaks(wavClip, gaps: wavReply["gaps"]?.stringValue ?? "") == 0)
        let said = try daemon.recctl("archive", "export", "--app", "logger", "--from", "now-1s", "--to", "now", "-o", out + "/last1.flac")
        try #require(said.status == 0, "\(said.stderr)")
        #expect(said.stdout.contains("the recording has written no more yet"), "\(said.stdout)")

        let (recording, recordingStart) = try Self.finishedRecording(daemon, source)
        let start = try #require(exportMicros(reply["start"]?.stringValue ?? ""))
        Self.expectWithin(clip, from: start, recording: recording, recordingStart: recordingStart, "the FLAC clip")
        let wavStart = try #require(exportMicros(wavReply["start"]?.stringValue ?? ""))
        Self.expectWithin(wavClip, from: wavStart, recording: recording, recordingStart: recordingStart, "the WAV clip")
        #expect(!FileManager.default.fileExists(atPath: partial))
    }

    @Test("an export from a finished segment into the open one, while recording, is sample-exact across the rotation")
    func acrossRotationIntoOpenSegment() throws {
        let out = try ExportTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let (daemon, source) = try Self.recording(segmentSeconds: 3)
        var segments: [JSONValue] = []
        // Every listing names each file once: a segment that has just finished is not also
        // listed open (its recorder's snapshot holds it until the next file opens).
        var listedTwice: [String] = []
        // A finished segment, and the open one after it holding at least a second.
        #expect(
            try eventually(timeout: 15) {
                segments = try daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue ?? []
                let files = segments.compactMap { $0["path"]?.stringValue }.map {
                    $0.hasSuffix(".partial") ? String($0.dropLast(".partial".count)) : $0
                }
                listedTwice += Dictionary(grouping: files, by: { $0 }).filter { $0.value.count > 1 }.keys
                guard segments.count >= 2, let last = segments.last, last["state"]?.stringValue == "open" else {
                    return false
                }
                // The first segment may be short (it ends at the first multiple of 3 s).
                return (last["frames"]?.intValue ?? 0) >= 48_000
                    && (segments[segments.count - 2]["frames"]?.intValue ?? 0) >= 48_000
            }, "\(segments)")
        #expect(listedTwice.isEmpty, "listed twice: \(listedTwice)")
        let open = try #require(segments.last)
        let openStart = try #require(exportMicros(open["start"]?.stringValue ?? ""))
        let from = openStart - 1_000_000
        let flac = out + "/across.flac"
        let exported = try daemon.recctl(
            "--json", "archive", "export", "--app", "logger", "--from", exportISO(from), "--to", "now", "-o", flac)
        try #require(exported.status == 0, "\(exported.stdout)\(exported.stderr)")
        let reply = try #require(exported.json)
        let paths = reply["segments"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let openPath = try #require(open["path"]?.stringValue)
        // The open segment by its `.partial` (or by its final name, should it have rotated
        // between the listing and the request).
        #expect(paths.first == segments[segments.count - 2]["path"]?.stringValue, "\(reply)")
        #expect(paths.contains(openPath) || paths.contains(String(openPath.dropLast(".partial".count))), "\(reply)")
        let frames = try #require(reply["frames"]?.intValue)
        #expect(frames >= 2 * 48_000, "\(reply)")
        #expect(try flacTest(flac))
        let clip = try decodeFLAC(flac, bits: 24)
        #expect(clip.count == frames * 2)
        #expect(counterBreaks(clip, gaps: reply["gaps"]?.stringValue ?? "") == 0)

        let (recording, recordingStart) = try Self.finishedRecording(daemon, source)
        Self.expectWithin(clip, from: from, recording: recording, recordingStart: recordingStart, "the clip across the rotation")
    }

    /// 35 s of recording: outside scripts/test's budget. `RECD_LONG_TESTS=1 scripts/test --filter
    /// OpenSegmentExportTests` runs it (the 4 s and across-rotation exports above run always).
    @Test(
        "a listener complains: the last 30 s (--from now-30s --to now) over 10 s segments, sample-exact",
        .enabled(if: ProcessInfo.processInfo.environment["RECD_LONG_TESTS"] == "1", "RECD_LONG_TESTS=1 runs it"))
    func lastThirtySeconds() throws {
        let out = try ExportTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let (daemon, source) = try Self.recording(segmentSeconds: 10)
        // 31 s of recording, then the clip of the last 30 s: three rotations inside, the open
        // segment last.
        var first: Int64?
        #expect(
            try eventually(timeout: 45) {
                let segments = try daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue ?? []
                guard let text = segments.first?["start"]?.stringValue, let start = exportMicros(text) else {
                    return false
                }
                first = start
                let now = Int64(Date().timeIntervalSince1970 * 1e6)
                return now - start > 31_000_000 && segments.last?["state"]?.stringValue == "open"
            })
        let flac = out + "/last30.flac"
        let exported = try daemon.recctl(
            "--json", "archive", "export", "--app", "logger", "--from", "now-30s", "--to", "now", "-o", flac)
        try #require(exported.status == 0, "\(exported.stdout)\(exported.stderr)")
        let reply = try #require(exported.json)
        let frames = try #require(reply["frames"]?.intValue)
        #expect(frames > 29 * 48_000 && frames < 30 * 48_000, "\(reply)")
        #expect(reply["requestedEnd"]?.stringValue != nil, "\(reply)")
        let paths = reply["segments"]?.arrayValue?.compactMap(\.stringValue) ?? []
        // (The last is the `.partial`, unless the export came in a rotation's first moment.)
        #expect(paths.count >= 3 && paths.contains { $0.hasSuffix(".partial") } || paths.count >= 4, "\(reply)")
        #expect(try flacTest(flac))
        let clip = try decodeFLAC(flac, bits: 24)
        #expect(clip.count == frames * 2)
        #expect(counterBreaks(clip, gaps: reply["gaps"]?.stringValue ?? "") == 0)
        let (recording, recordingStart) = try Self.finishedRecording(daemon, source)
        #expect(first == recordingStart)
        let start = try #require(exportMicros(reply["start"]?.stringValue ?? ""))
        Self.expectWithin(clip, from: start, recording: recording, recordingStart: recordingStart, "the last 30 s")
        print("last 30 s: \(frames) frames from \(paths.count) segments, gaps \(reply["gaps"]?.stringValue ?? "?")")
    }
}

extension FileManager {
    fileprivate func sizeOfFile(_ path: String) -> Int64 {
        ((try? attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}

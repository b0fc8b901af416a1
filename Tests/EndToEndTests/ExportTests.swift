// Export end to end: `recctl archive export` through the real recd and recctl, from a
// real recording (recd-signal's counter, 1 s rotations) and from segments made by the
// reference encoder with known gaps; clips decoded by the reference decoder.
import ControlProtocol
import Foundation
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Microseconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`.
func exportMicros(_ text: String) -> Int64? {
    let parts = text.dropLast().split(separator: ".", maxSplits: 1)
    guard let head = parts.first, let base = ISO8601DateFormatter().date(from: String(head) + "Z") else { return nil }
    var fraction: Int64 = 0
    if parts.count == 2 {
        let digits = String(parts[1].prefix(6)).padding(toLength: 6, withPad: "0", startingAt: 0)
        fraction = Int64(digits) ?? 0
    }
    return Int64(base.timeIntervalSince1970) * 1_000_000 + fraction
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` of microseconds since the epoch.
func exportISO(_ micros: Int64) -> String {
    let seconds = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
    let whole = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(seconds)))
    let fraction = String(micros - seconds * 1_000_000)
    return whole.dropLast() + "." + String(repeating: "0", count: 6 - fraction.count) + fraction + "Z"
}

@Suite("archive export end to end", .serialized)
struct ExportTests {
    /// A scratch directory anyone may write into (the clip of a test run as nobody goes there).
    static func scratch() throws -> String {
        let directory = NSTemporaryDirectory() + "recd-export-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        chmod(directory, 0o1777)
        return directory
    }

    @Test("an export spanning rotations equals the recorded counter sample for sample, as FLAC, WAV and on stdout")
    func acrossRotations() throws {
        let out = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let (daemon, segments) = try withoutXruns { () throws -> (result: (Daemon, [JSONValue]), xruns: Int) in
            let deck = uniqueName("deck")
            let daemon = try Daemon(ports: ArchiveEndToEndTests.deckPorts(deck), archiveSegmentSeconds: 1)
            let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "counter"])
            #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true })
            try #require(daemon.recctl("session", "set", "logger", "--category", "record", "--mic-usage", "archive").status == 0)
            try #require(daemon.recctl("permission", "grant", "logger").status == 0)
            let watcher = try daemon.watch("logger")
            try #require(daemon.recctl("record", "start", "logger").status == 0)
            watcher.waitFor(count: 4, timeout: 10) { $0["event"] == "recording" && $0["state"] == "finished" }
            try #require(daemon.recctl("record", "stop", "logger").status == 0)
            source.stop()
            let listed = try #require(daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue)
            return ((daemon, listed.sorted { ($0["start"]?.stringValue ?? "") < ($1["start"]?.stringValue ?? "") }), try daemon.xruns())
        }
        try #require(segments.count >= 4, "want three rotations: \(segments)")
        // The source: every segment decoded, one after the other (the recording is gapless).
        var source: [Int32] = []
        for segment in segments { source += try decodeFLAC(try #require(segment["path"]?.stringValue), bits: 24) }
        let start0 = try #require(exportMicros(segments[0]["start"]?.stringValue ?? ""))
        let start1 = try #require(exportMicros(segments[1]["start"]?.stringValue ?? ""))
        let start3 = try #require(exportMicros(segments[3]["start"]?.stringValue ?? ""))
        // From 0.25 s before the second segment to 0.25 s into the fourth: three boundaries inside,
        // four source segments.
        // (The first segment ends at a rotation boundary: it may be shorter than 0.25 s.)
        let from = start1 - min(250_000, (start1 - start0) / 2)
        let to = start3 + 250_000
        let expectedFrames = Int(((Double(to - from) * 48_000 / 1e6)).rounded())
        let offset = Int((Double(from - start0) * 48_000 / 1e6).rounded())
        let expected = Array(source[(offset * 2)..<((offset + expectedFrames) * 2)])

        let flac = out + "/clip.flac"
        let exported = try daemon.recctl("--json", "archive", "export", "--app", "logger", "--from", exportISO(from), "--to", exportISO(to), "-o", flac)
        try #require(exported.status == 0, "\(exported.stdout)\(exported.stderr)")
        #expect(exported.json?["frames"]?.intValue == expectedFrames, "\(exported.stdout)")
        #expect(exported.json?["gaps"]?.stringValue == "", "\(exported.stdout)")
        #expect(exported.json?["segments"]?.arrayValue?.count == 4, "\(exported.stdout)")
        #expect(try flacTest(flac))
        let clip = try decodeFLAC(flac, bits: 24)
        #expect(clip.count == expectedFrames * 2)
        #expect(clip == expected, "the clip differs from the recording at frame \(zip(clip, expected).enumerated().first { $0.element.0 != $0.element.1 }.map { $0.offset / 2 } ?? -1)")
        #expect(try metaflacTag(flac, "START_TIME") == exportISO(from))
        #expect(try metaflacTag(flac, "APP") == "logger")
        let sources = try runTool("metaflac", ["--show-tag=SOURCE_SEGMENT", flac]).stdout.split(separator: "\n")
        #expect(sources.count == 4, "\(sources)")
        // Made by copying the segments' frames: a variable-blocksize stream (the first frame's
        // blocking strategy bit), and no stretch had to be decoded instead.
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: flac)))
        var frameStart = 4
        while frameStart + 4 < bytes.count {
            let last = bytes[frameStart] & 0x80 != 0
            let high = Int(bytes[frameStart + 1]) << 16
            let length: Int = high | Int(bytes[frameStart + 2]) << 8 | Int(bytes[frameStart + 3])
            frameStart += 4 + length
            if last { break }
        }
        #expect(frameStart + 1 < bytes.count && bytes[frameStart] == 0xFF && bytes[frameStart + 1] == 0xF9)
        #expect(!daemon.log.contains("decoded, not copied"), "\(daemon.log)")

        // WAV: the same samples (the reference encoder reads it back into FLAC).
        let wav = out + "/clip.wav"
        let asWAV = try daemon.recctl("archive", "export", "--app", "logger", "--from", exportISO(from), "--to", exportISO(to), "-o", wav)
        try #require(asWAV.status == 0, "\(asWAV.stderr)")
        #expect(try runTool("flac", ["-s", "-o", wav + ".flac", wav]).status == 0)
        #expect(try decodeFLAC(wav + ".flac", bits: 24) == expected)

        // `-o -`: FLAC on standard output, the summary on standard error.
        let piped = try ExternalTools.runExecutable(
            daemon.recctlPath,
            ["--socket", daemon.socket, "archive", "export", "--app", "logger", "--from", exportISO(from), "--to", exportISO(to), "-o", "-"])
        try #require(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stderr.contains("\(expectedFrames) frames"), "\(piped.stderr)")
        let stdoutFLAC = out + "/stdout.flac"
        try piped.output.write(to: URL(fileURLWithPath: stdoutFLAC))
        #expect(try decodeFLAC(stdoutFLAC, bits: 24) == expected)
    }

    /// An archive of two 1 s mono segments made by the reference encoder: A at T0 with a
    /// recorded gap of 4800 frames after its frame 24000, B at T0 + 1.5 s (0.4 s after A ends).
    /// A's frame n is n % 1000 + 1, B's is -(n % 1000 + 1).
    static let t0: Int64 = 1_795_000_000 * 1_000_000
    static func daemonWithGappedArchive() throws -> (Daemon, archive: String) {
        let daemon = try Daemon()
        let archive = daemon.directory + "/archive"
        let day = archive + "/2026/11/18"
        try FileManager.default.createDirectory(atPath: day, withIntermediateDirectories: true)
        for (name, start, sign, gaps) in [("a", t0, Int16(1), "24000+4800"), ("b", t0 + 1_500_000, Int16(-1), "")] {
            let wav = daemon.directory + "/\(name).wav"
            try writeWAV(path: wav, sampleRate: 48_000, channels: 1, samples: (0..<48_000).map { sign * Int16($0 % 1000 + 1) })
            let segment = day + "/show-main-\(name).flac"
            var tags = ["-T", "APP=show", "-T", "STREAM=main", "-T", "START_TIME=\(exportISO(start))"]
            if !gaps.isEmpty { tags += ["-T", "GAPS=\(gaps)"] }
            let encoded = try runTool("flac", ["-s", "-o", segment] + tags + [wav])
            try #require(encoded.status == 0, "flac: \(encoded.stderr)")
        }
        try #require(daemon.recctl("archive", "reindex").status == 0)
        return (daemon, archive)
    }

    @Test("an export over recorded and unrecorded gaps carries silence there and lists both in GAPS")
    func overGaps() throws {
        let out = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let (daemon, _) = try Self.daemonWithGappedArchive()
        let flac = out + "/gaps.flac"
        // `to` with a zone offset: T0 + 2 s written as local time at +01:00.
        let toLocal = String(exportISO(Self.t0 + 2_000_000 + 3_600_000_000).dropLast()) + "+01:00"
        let result = try daemon.recctl("--json", "archive", "export", "--app", "show", "--from", exportISO(Self.t0 + 250_000), "--to", toLocal, "-o", flac)
        try #require(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.json?["frames"]?.intValue == 84_000)
        #expect(result.json?["gaps"]?.stringValue == "12000+4800,40800+19200", "\(result.stdout)")
        #expect(try metaflacTag(flac, "GAPS") == "12000+4800,40800+19200")
        let clip = try decodeFLAC(flac, bits: 16)
        var expected = [Int32](repeating: 0, count: 84_000)
        for i in 0..<12_000 { expected[i] = Int32((12_000 + i) % 1000 + 1) }
        for i in 0..<24_000 { expected[16_800 + i] = Int32((24_000 + i) % 1000 + 1) }
        for i in 0..<24_000 { expected[60_000 + i] = -Int32(i % 1000 + 1) }
        #expect(clip.count == expected.count)
        #expect(clip == expected, "first difference at \(zip(clip, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
    }

    @Test("a raw request with a pipe's write end gets the FLAC stream through it; WAV into a pipe and a read-only descriptor are refused")
    func intoAPipe() throws {
        let out = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let (daemon, _) = try Self.daemonWithGappedArchive()
        let session = try ProtocolSession(socket: daemon.socket)
        let fields: [(String, JSONValue)] = [
            ("app", "show"), ("from", .string(exportISO(Self.t0 + 250_000))), ("to", .string(exportISO(Self.t0 + 2_000_000))),
        ]
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let received = Locked(Data())
        let readEnd = ends[0]
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(readEnd, &buffer, buffer.count)
                if n <= 0 { break }
                received.withLock { $0.append(contentsOf: buffer[0..<n]) }
            }
        }
        reader.start()
        let reply = try session.request("archive.export", fields + [("format", "flac"), ("file", "-")], passing: ends[1])
        close(ends[1])
        #expect(reply["ok"]?.boolValue == true, "\(reply)")
        #expect(reply["frames"]?.intValue == 84_000)
        #expect(try eventually { received.withLock { $0.count } > 0 && reader.isFinished })
        close(ends[0])
        let streamed = out + "/piped.flac"
        try received.withLock { $0 }.write(to: URL(fileURLWithPath: streamed))
        let samples = try decodeFLAC(streamed, bits: 16)
        #expect(samples.count == 84_000)
        #expect(samples.prefix(3) == [Int32(12_000 % 1000 + 1), Int32(12_001 % 1000 + 1), Int32(12_002 % 1000 + 1)])

        try #require(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let wav = try session.request("archive.export", fields + [("format", "wav"), ("file", "-")], passing: ends[1])
        #expect(wav["error"]?["name"]?.stringValue == "badParam", "\(wav)")
        #expect(wav["error"]?["message"]?.stringValue?.contains("regular file") == true, "\(wav)")
        let readOnly = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(readOnly) }
        let refused = try session.request("archive.export", fields + [("format", "flac"), ("file", "/dev/null")], passing: readOnly)
        #expect(refused["error"]?["message"]?.stringValue?.contains("not open for writing") == true, "\(refused)")
        let none = try session.request("archive.export", fields + [("format", "flac"), ("file", "/tmp/x.flac")])
        #expect(none["error"]?["message"]?.stringValue?.contains("SCM_RIGHTS") == true, "\(none)")
    }

    @Test("refusals: bad times, to before from, nothing recorded, an unknown extension, an existing file, a user who may not read the segments")
    func refusals() throws {
        let out = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let (daemon, archive) = try Self.daemonWithGappedArchive()
        let from = exportISO(Self.t0)
        let to = exportISO(Self.t0 + 1_000_000)
        func refused(_ arguments: [String], user: String? = nil) throws -> JSONValue? {
            let result = try daemon.recctl(arguments: ["--json", "archive", "export", "--app", "show"] + arguments, user: user)
            #expect(result.status == 1, "\(arguments): \(result.stdout)\(result.stderr)")
            return result.json?["error"]
        }
        let clip = out + "/r.flac"
        // What recctl cannot read as a time (RecctlTimeTests has the table) is a usage error
        // naming the forms, before recd is asked.
        for typed in ["tomorrow", "now-30x"] {
            let result = try daemon.recctl(
                "archive", "export", "--app", "show", "--from", typed, "--to", to, "-o", clip)
            #expect(
                result.status == 2 && result.stderr.contains("yesterday") && result.stderr.contains("-30s"),
                "\(result)")
        }
        // A zone recd cannot read: recd's refusal, naming the forms it takes.
        let badTime = try refused(["--from", String(from.dropLast()) + "+25:00", "--to", to, "-o", clip])
        #expect(badTime?["name"]?.stringValue == "badParam")
        #expect(badTime?["message"]?.stringValue?.contains("ISO 8601") == true)
        // At most a clip's length back.
        let tooFarBack = try refused(["--from", "now-200h", "--to", "now", "-o", clip])
        #expect(tooFarBack?["name"]?.stringValue == "badParam")
        // No recording of the app now, so nothing is clamped: a relative clip of the past is
        // refused as any clip without audio is.
        let nothingNow = try refused(["--from", "now-30s", "--to", "now", "-o", clip])
        #expect(nothingNow?["message"]?.stringValue?.contains("archive list") == true, "\(String(describing: nothingNow))")
        let backwards = try refused(["--from", to, "--to", from, "-o", clip])
        #expect(backwards?["message"]?.stringValue?.contains("after") == true, "\(String(describing: backwards))")
        let nothing = try refused(["--from", exportISO(Self.t0 - 86_400_000_000), "--to", exportISO(Self.t0 - 86_000_000_000), "-o", clip])
        #expect(nothing?["name"]?.stringValue == "badParam")
        #expect(nothing?["message"]?.stringValue?.contains("archive list") == true)
        #expect(!FileManager.default.fileExists(atPath: clip), "a refused export leaves no file")

        let mp3 = try daemon.recctl("archive", "export", "--app", "show", "--from", from, "--to", to, "-o", out + "/x.mp3")
        #expect(mp3.status == 2, "\(mp3.stderr)")
        FileManager.default.createFile(atPath: out + "/exists.flac", contents: Data([1]))
        let exists = try daemon.recctl("archive", "export", "--app", "show", "--from", from, "--to", to, "-o", out + "/exists.flac")
        #expect(exists.status == 1 && exists.stderr.contains("exists"), "\(exists.stderr)")

        // Another user: refused while a segment is unreadable to it, served once it may read them.
        try #require(getuid() == 0, "this part drops to user nobody and needs root")
        daemon.openSocketToEveryone()
        for directory in [archive, archive + "/2026", archive + "/2026/11", archive + "/2026/11/18"] { chmod(directory, 0o755) }
        chmod(archive + "/2026/11/18/show-main-a.flac", 0o600)
        chmod(archive + "/2026/11/18/show-main-b.flac", 0o644)
        let denied = try refused(["--from", from, "--to", to, "-o", out + "/nobody.flac"], user: "nobody")
        #expect(denied?["name"]?.stringValue == "badParam")
        #expect(denied?["message"]?.stringValue?.contains("may not read") == true, "\(String(describing: denied))")
        #expect(!FileManager.default.fileExists(atPath: out + "/nobody.flac"))
        chmod(archive + "/2026/11/18/show-main-a.flac", 0o644)
        let allowed = try daemon.recctl(arguments: ["--json", "archive", "export", "--app", "show", "--from", from, "--to", to, "-o", out + "/nobody.flac"], user: "nobody")
        #expect(allowed.status == 0, "\(allowed.stdout)\(allowed.stderr)")
        #expect(try flacTest(out + "/nobody.flac"))
    }
}

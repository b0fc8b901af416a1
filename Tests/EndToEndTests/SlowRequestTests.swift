// Slow requests run on recd's worker thread: while `recctl archive verify` decodes 50 minutes
// of 8-channel audio, `status` still answers within 100 ms (systemd's watchdog is fed from the
// same control loop), and replies that come later are matched by id.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Writes `segments` FLAC segments of `seconds` of 8-channel 48 kHz 16-bit noise into the
/// archive's folder of `day` (2026-12-01), named and tagged as recd names its own; returns
/// their paths.
///
/// The noise (13 bits, so the encoder has to use residual coding) is one second long, repeated:
/// FLAC predicts over at most 32 samples, so decoding it costs what fresh noise would. One
/// segment is encoded by the reference encoder, the others are copies with their own tags.
func writeNoiseSegments(archive: String, day: String = "2026-12-01", segments: Int, seconds: Int) throws -> [String] {
    let folder = archive + "/" + day.replacingOccurrences(of: "-", with: "/")
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let channels = 8
    let rate = 48_000
    var second = [Int16](repeating: 0, count: rate * channels)
    var state: UInt32 = 0x2545_F491
    for index in second.indices {
        state = state &* 1_664_525 &+ 1_013_904_223
        second[index] = Int16(truncatingIfNeeded: Int32(bitPattern: state) >> 19)
    }
    let raw = archive + "/../noise.raw"
    _ = FileManager.default.createFile(atPath: raw, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: raw))
    let block = second.withUnsafeBytes { Data($0) }
    for _ in 0..<seconds { try handle.write(contentsOf: block) }
    try handle.close()
    defer { unlink(raw) }

    func start(_ segment: Int, _ format: String) -> String {
        String(format: format, segment * seconds / 3600, segment * seconds / 60 % 60)
    }
    func tags(_ segment: Int) -> [String] {
        [
            "APP=noise", "STREAM=main", "SEGMENT=\(segment + 1)", "END_REASON=rotation",
            "START_TIME=" + start(segment, day + "T%02d:%02d:00.000Z"),
        ]
    }
    let compact = day.replacingOccurrences(of: "-", with: "")
    let paths = (0..<segments).map { folder + "/noise-main-" + start($0, compact + "T%02d%02d00.000Z") + ".flac" }
    let encoded = try runTool(
        "flac",
        [
            "-0", "-s", "-f", "--force-raw-format", "--endian=little", "--sign=signed", "--channels=\(channels)",
            "--bps=16", "--sample-rate=\(rate)", "-o", paths[0], raw,
        ] + tags(0).flatMap { ["-T", $0] })
    try #require(encoded.status == 0, "flac: \(encoded.stderr)")
    for segment in 1..<segments {
        try FileManager.default.copyItem(atPath: paths[0], toPath: paths[segment])
        let retagged = try runTool(
            "metaflac", ["--remove-all-tags"] + tags(segment).map { "--set-tag=\($0)" } + [paths[segment]])
        try #require(retagged.status == 0, "metaflac: \(retagged.stderr)")
    }
    return paths
}

@Suite("slow requests on the worker thread", .serialized)
struct SlowRequestTests {
    @Test("status answers within 100 ms while archive verify decodes 25 minutes of 8-channel audio")
    func statusDuringVerify() throws {
        let daemon = try Daemon()
        let archive = daemon.directory + "/archive"
        let generated = Date()
        let paths = try writeNoiseSegments(archive: archive, segments: 5, seconds: 300)
        print("generated 25 min of 8-channel noise in \(String(format: "%.1f", Date().timeIntervalSince(generated))) s")
        let reindexed = try daemon.recctl("--json", "archive", "reindex")
        try #require(reindexed.status == 0, "\(reindexed.stdout)\(reindexed.stderr)")
        try #require(reindexed.json?["indexed"]?.intValue == 5, "\(reindexed.stdout)")

        // The verify of everything, by the real recctl, in the background.
        let verify = Locked<CommandResult?>(nil)
        let verifyStarted = Date()
        let recctlPath = daemon.recctlPath
        let socket = daemon.socket
        Thread.detachNewThread {
            let result = try? runProgram(recctlPath, ["--socket", socket, "--json", "archive", "verify"], timeout: 120)
            verify.withLock { $0 = result ?? CommandResult(status: -1, stdout: "", stderr: "recctl did not run") }
        }
        usleep(200_000)

        // Another connection asks for a one-file verify (with progress), then a status: the
        // status reply must come first, the verify's after it (behind the big one on the
        // worker). Read after the timing below.
        let later = try RawClient(path: daemon.socket)
        var patience = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(later.fd, SOL_SOCKET, SO_RCVTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))
        later.send(#"{"id":"one","op":"archive.verify","path":"\#(paths[4])","progress":true}"# + "\n")
        later.send(#"{"id":2,"op":"status"}"# + "\n")

        // Meanwhile `status`, timed, every 50 ms until the verify is done.
        let status = try RawClient(path: daemon.socket)
        var wait = timeval(tv_sec: 60, tv_usec: 0)  // measure a blocked loop too, do not give up on it
        setsockopt(status.fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var latencies: [Double] = []
        var number = 100
        while verify.withLock({ $0 == nil }) && Date().timeIntervalSince(verifyStarted) < 120 {
            number += 1
            // Every status asked while the verify still ran counts, however late its answer.
            let duringVerify = verify.withLock { $0 == nil }
            let asked = Date()
            status.send(#"{"id":\#(number),"op":"status"}"# + "\n")
            let reply = status.readJSON()
            let latency = Date().timeIntervalSince(asked)
            #expect(reply?["id"]?.intValue == number && reply?["ok"]?.boolValue == true, "\(String(describing: reply))")
            if duringVerify { latencies.append(latency) }
            usleep(50_000)
        }
        let verifySeconds = Date().timeIntervalSince(verifyStarted)
        let worst = latencies.max() ?? 0
        print(
            "verify took \(String(format: "%.1f", verifySeconds)) s; \(latencies.count) status replies meanwhile, "
                + "worst \(String(format: "%.1f", worst * 1000)) ms, median "
                + "\(String(format: "%.1f", (latencies.sorted().dropFirst(latencies.count / 2).first ?? 0) * 1000)) ms")
        #expect(latencies.count >= 10, "want at least 10 status replies during the verify")
        #expect(worst < 0.1, "status took \(String(format: "%.0f", worst * 1000)) ms during archive verify")

        let result = try #require(verify.withLock { $0 })
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.json?["allOK"]?.boolValue == true, "\(result.stdout.prefix(2000))")
        #expect(result.json?["results"]?.arrayValue?.count == 5)

        let first = later.readJSON()
        let statusFirst = first?["id"]?.intValue == 2 && first?["ok"]?.boolValue == true
        #expect(statusFirst, "the status waited for the verify asked before it: \(String(describing: first))")
        guard statusFirst else { return }
        // Then the one-file verify's progress line, then its reply.
        let progress = later.readJSON()
        #expect(progress?["id"]?.stringValue == "one" && progress?["ok"] == nil, "\(String(describing: progress))")
        #expect(progress?["progress"]?["done"]?.intValue == 1 && progress?["progress"]?["total"]?.intValue == 1)
        let one = later.readJSON()
        #expect(one?["id"]?.stringValue == "one" && one?["all_ok"]?.boolValue == true, "\(String(describing: one))")
    }

    @Test("retention runs on the worker: an over-age segment leaves the disk and the index")
    func retentionOnTheWorker() throws {
        let daemon = try Daemon(archiveMaxAgeDays: 1)
        let archive = daemon.directory + "/archive"
        let old = try writeNoiseSegments(archive: archive, day: "2020-01-01", segments: 1, seconds: 1)[0]
        let today = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: .withFullDate)
        let recent = try writeNoiseSegments(archive: archive, day: today, segments: 1, seconds: 1)[0]
        try #require(daemon.recctl("archive", "reindex").status == 0)
        // Retention runs at the first tick after start, then every 60 s; the worker logs what it
        // deleted (file and index row) as it is done, so a deletion by the first recd (its first
        // tick may come after the reindex) is in the log though recd stops right after it.
        try daemon.restart()
        #expect(eventually(timeout: 10) { daemon.log.contains("retention deleted \(old)") }, "\(daemon.log)")
        #expect(!FileManager.default.fileExists(atPath: old))
        #expect(FileManager.default.fileExists(atPath: recent))
        let listed = try daemon.recctl("--json", "archive", "list").json?.arrayValue
        #expect(listed?.compactMap { $0["path"]?.stringValue } == [recent])
    }
}

// Files handed in with lying headers, end to end: `nobody` plays WAVs whose headers say no
// channels, 65 channels, 0 Hz, 4 GHz, 10 MHz, 4 GiB of data, or that are cut short, and a FLAC
// of 0 Hz. Each gets cannotStartPlaying with what is wrong and what to do (or plays what is
// really there); recd is the same process afterwards and plays a good file. The real recd and
// recctl, recctl run as nobody.
import ControlProtocol
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("forged files handed to play", .serialized)
struct ForgedPlayTests {
    /// A good 16-bit WAV of 4800 frames, with the header's bytes at `patches` (offset → bytes,
    /// little-endian) replaced and cut to `length` bytes.
    static func forged(
        _ path: String, channels: Int = 1, patches: [Int: [UInt8]] = [:], length: Int? = nil
    ) throws {
        try writeWAV(
            path: path, sampleRate: 48_000, channels: channels,
            samples: (0..<(4800 * channels)).map { Int16(truncatingIfNeeded: $0 * 37) })
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for (offset, patch) in patches { bytes.replaceSubrange(offset..<(offset + patch.count), with: patch) }
        if let length { bytes = Array(bytes.prefix(length)) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    static func le32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }

    @Test(
        "WAVs saying 0 or 65 channels, 0 Hz, 4 GHz or 10 MHz, cut inside their header, and a FLAC of 0 Hz are refused with cannotStartPlaying saying what to do; one announcing 4 GiB of data plays the 4800 frames it holds; recd lives on and plays a good file"
    )
    func forgedHeaders() throws {
        try #require(getuid() == 0, "this test plays as user nobody and needs root")
        let nobody = try userIDs("nobody")
        let daemon = try Daemon()
        daemon.openSocketToEveryone()
        let pid = try #require(daemon.pid)
        try #require(
            daemon.recctl("session", "set", "mine", "--category", "playback", user: "nobody").status == 0)
        let directory = daemon.directory
        let refusals: [(name: String, advice: String)] = [
            ("no-channels", "re-create it"), ("65-channels", "recd plays files of 1...64 channels"),
            ("zero-hertz", "re-create it"), ("four-gigahertz", "re-create it"),
            ("ten-megahertz", "recd plays files of 1000...384000 Hz"), ("cut-header", "re-create it"),
            ("zero-hertz-flac", "convert it"),
        ]
        try Self.forged(directory + "/no-channels.wav", patches: [22: [0, 0]])
        try Self.forged(directory + "/65-channels.wav", channels: 65)
        try Self.forged(directory + "/zero-hertz.wav", patches: [24: Self.le32(0)])
        try Self.forged(directory + "/four-gigahertz.wav", patches: [24: Self.le32(0xFFFF_FFFF)])
        try Self.forged(directory + "/ten-megahertz.wav", patches: [24: Self.le32(10_000_000)])
        try Self.forged(directory + "/cut-header.wav", length: 30)
        try Self.forged(directory + "/four-gibibytes.wav", patches: [40: Self.le32(0xFFFF_FFF0)])
        try Self.forged(directory + "/good.wav")
        // A FLAC whose STREAMINFO says 0 Hz (its rate: bits 80..<100 of the block at byte 8).
        let flac = directory + "/zero-hertz-flac.wav"
        let encoded = try runTool("flac", ["-s", "-f", "--no-padding", "-o", flac, directory + "/good.wav"])
        try #require(encoded.status == 0, "flac: \(encoded.stderr)")
        var flacBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: flac)))
        flacBytes[18] = 0
        flacBytes[19] = 0
        flacBytes[20] &= 0x0F
        try Data(flacBytes).write(to: URL(fileURLWithPath: flac))
        for name in refusals.map(\.name) + ["four-gibibytes", "good"] {
            try #require(chown(directory + "/\(name).wav", nobody.uid, nobody.gid) == 0)
        }

        for (name, advice) in refusals {
            let path = directory + "/\(name).wav"
            let refused = try daemon.recctl("play", "mine", path, user: "nobody")
            #expect(refused.status == 1, "\(name): \(refused.stdout)")
            #expect(
                refused.stderr.contains("cannotStartPlaying") && refused.stderr.contains("cannot play \(path)"),
                "\(name): \(refused.stderr)")
            #expect(refused.stderr.contains(advice), "\(name): \(refused.stderr)")
        }
        #expect(try daemon.recctl("--json", "status").json?["players"]?.arrayValue == [])

        // 4 GiB announced, 4800 frames there: those play, then the player finishes.
        let watcher = try daemon.watch("mine")
        let huge = try daemon.recctl("--json", "play", "mine", directory + "/four-gibibytes.wav", user: "nobody")
        #expect(huge.status == 0, "\(huge.stderr)")
        let ended = watcher.waitFor(timeout: 10) { $0["event"] == "player" && $0["state"] == "stopped" }
            .first { $0["event"] == "player" && $0["state"] == "stopped" }
        #expect(ended?["reason"] == "finished", "\(ended?.jsonText ?? "no stop")")

        #expect(daemon.process?.isRunning == true && daemon.pid == pid, "recd is the same process")
        let good = try daemon.recctl("--json", "play", "mine", directory + "/good.wav", user: "nobody")
        #expect(good.status == 0 && good.json?["state"] == "playing", "\(good.stderr)")
    }
}

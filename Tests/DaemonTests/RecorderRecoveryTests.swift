// RecorderRecovery alone: which waiting recorders are ready to start again, the low-water mark
// of free space, the rate of the free-space check, and the words status shows. The file system
// asked is a real one (a temporary directory on this machine's disk).
import AudioTestSupport
import ControlProtocol
import Foundation
import Platform
import Testing

@testable import Daemon

@Suite("recorder recovery: what brings a stopped recorder back")
struct RecorderRecoveryTests {
    static let mic = RecorderSpec(app: "logger", stream: "mic", port: "mic")
    static let route = RecorderSpec(app: "desk", stream: "line", port: "line", followsRoute: true)

    @Test("the low-water mark: 5% of the file system, at least 16 MiB (at most half of it), at most 1 GiB, and never below min_free_percent")
    func lowWater() {
        let plain = RecorderRecovery(archiveDir: "/", minFreePercent: nil)
        #expect(plain.lowWaterBytes(totalBytes: 8 << 20) == 4 << 20)
        #expect(plain.lowWaterBytes(totalBytes: 100 << 20) == 16 << 20)
        #expect(plain.lowWaterBytes(totalBytes: 10 << 30) == Int64(Double(10 << 30) * 0.05))
        #expect(plain.lowWaterBytes(totalBytes: 1 << 40) == 1 << 30)
        let floored = RecorderRecovery(archiveDir: "/", minFreePercent: 20)
        #expect(floored.lowWaterBytes(totalBytes: 100 << 30) == 20 << 30)
        #expect(floored.lowWaterBytes(totalBytes: 8 << 20) == 4 << 20, "20% is below half of 8 MiB")
        let most = RecorderRecovery(archiveDir: "/", minFreePercent: 60)
        #expect(most.lowWaterBytes(totalBytes: 8 << 20) == Int64(Double(8 << 20) * 0.6))
    }

    @Test("ready: nothing while the server is lost; then the reset's, the interrupted (for the router to judge), the inputs that are back, the disk-full ones with room; never the stopped or failed")
    func readiness() throws {
        let directory = try TemporaryDirectory()
        let recovery = RecorderRecovery(archiveDir: directory.path, minFreePercent: nil)
        let disk = RecorderSpec(app: "logger", stream: "bus", port: "bus:main")
        recovery.wait(Self.mic, cause: .inputGone, declared: true)
        recovery.wait(Self.route, cause: .inputGone, declared: false)
        recovery.wait(disk, cause: .diskFull, declared: true)
        recovery.wait(RecorderSpec(app: "a", stream: "s", port: "mic"), cause: .mediaServicesLost, declared: false)
        for cause in [StopCause.interruption, .stop, .failed] {
            recovery.wait(RecorderSpec(app: cause.rawValue, stream: "s", port: "mic"), cause: cause, declared: true)
        }
        #expect(recovery.ready(now: 0, servicesAvailable: false) { _ in true }.isEmpty)
        let lost = recovery.ready(now: 0, servicesAvailable: true) { _ in false }.map(\.spec.app)
        #expect(lost == ["a", "interruption"], "the server's and the interrupted, with no input back")
        // This machine's disk has more than the low-water mark free (the test needs that).
        let space = try #require(FileSystem.space(at: directory.path))
        try #require(space.availableBytes >= recovery.lowWaterBytes(totalBytes: space.totalBytes))
        let all = recovery.ready(now: 10, servicesAvailable: true) { _ in true }.map(\.spec.stream)
        #expect(all == ["mic", "line", "bus", "s", "s"])
        let onlyMic = recovery.ready(now: 10.5, servicesAvailable: true) { $0.port == "mic" }.map(\.spec.app)
        #expect(onlyMic == ["logger", "a", "interruption"], "the explicit port, the server's, the interrupted: \(onlyMic)")
    }

    @Test("a recorder that stops for a full disk is not ready until the next free-space check, at most once a second")
    func spaceCheckRate() throws {
        let directory = try TemporaryDirectory()
        let recovery = RecorderRecovery(archiveDir: directory.path, minFreePercent: nil)
        recovery.wait(Self.mic, cause: .diskFull, declared: true)
        #expect(recovery.ready(now: 100, servicesAvailable: true) { _ in true }.count == 1)
        // Full again (a start into a disk that filled meanwhile): not before the next check.
        recovery.wait(Self.mic, cause: .diskFull, declared: true)
        #expect(recovery.ready(now: 100.5, servicesAvailable: true) { _ in true }.isEmpty)
        #expect(recovery.ready(now: 101, servicesAvailable: true) { _ in true }.count == 1)
        // A recheck demands the whole low-water mark: with min_free_percent 100 nothing is enough.
        let strict = RecorderRecovery(archiveDir: directory.path, minFreePercent: 100)
        strict.wait(Self.mic, cause: .diskFull, declared: true)
        #expect(strict.ready(now: 0, servicesAvailable: true) { _ in true }.isEmpty)
    }

    @Test("a failed start waits again with its first time kept, not before its retry time")
    func retryKeepsSince() throws {
        let recovery = RecorderRecovery(archiveDir: "/", minFreePercent: nil)
        recovery.wait(Self.mic, cause: .inputGone, declared: true)
        let since = try #require(recovery.entry(app: "logger", stream: "mic")?.since)
        usleep(2_000)
        recovery.wait(Self.mic, cause: .inputGone, declared: true, detail: "no")
        recovery.delay(app: "logger", stream: "mic", until: 5)
        #expect(recovery.waiting.count == 1 && recovery.entry(app: "logger", stream: "mic")?.since == since)
        #expect(recovery.ready(now: 4.9, servicesAvailable: true) { _ in true }.isEmpty)
        #expect(recovery.ready(now: 5, servicesAvailable: true) { _ in true }.count == 1)
    }

    @Test("status says why and what brings each back")
    func words() {
        let recovery = RecorderRecovery(archiveDir: "/srv/archive", minFreePercent: nil)
        recovery.wait(Self.mic, cause: .inputGone, declared: true)
        recovery.wait(Self.route, cause: .inputGone, declared: false)
        recovery.wait(RecorderSpec(app: "x", stream: "s", port: "p"), cause: .stop, declared: true)
        recovery.wait(RecorderSpec(app: "y", stream: "s", port: "p"), cause: .mediaServicesLost, declared: true)
        let infos = recovery.infos()
        #expect(infos.map(\.resumesWhen) == [
            "input mic is available again", "the session's route has an input again", nil, "the JACK server is back",
        ])
        #expect(infos[2].reason == "stop" && infos[2].detail == "`recctl record start x` starts it")
        #expect(infos.allSatisfy { $0.since?.hasSuffix("Z") == true })
        #expect(RecorderRecovery.mebibytes(512 << 20) == "512 MiB" && RecorderRecovery.mebibytes(419_430) == "0.4 MiB")
    }
}

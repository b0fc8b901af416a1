// Trusted time, the source (docs/archive-proof.md): what chronyc and timesyncd
// say, parsed from output captured from chrony 4.3 (Debian 12), then the real chronyd (`-x`: it
// never touches the clock) asked through the real chronyc — one with a reference (a second
// chronyd on loopback serving its local clock), one with none — and a segment that records it.

import Foundation
import Platform
import TestSupport
import Testing

@testable import Archive

/// `chronyc -n -c tracking` as chrony 4.3 printed it.
private enum ChronycOutput {
    /// A chronyd with no source at all (`chronyd -x`, no `server` line).
    static let noReference =
        "00000000,,0,0.000000000,0.000000000,0.000000000,0.000000000,0.000,0.000,0.000,1.000000000,1.000000000,0.0,Not synchronised\n"
    /// Synchronised to a server at 127.0.0.1 ("System time: 0.000001571 seconds fast of NTP time").
    static let server =
        "7F000001,127.0.0.1,4,1796226844.144640265,-0.000001571,0.000000007,0.000000140,-0.039,0.002,0.146,0.000007536,0.000000546,0.1,Normal\n"
    /// Its own `local stratum 3` reference (127.127.1.1, no name with -n).
    static let local =
        "7F7F0101,,3,1796226832.297343239,0.000000000,0.000000000,0.000000000,0.000,0.000,0.000,0.000000000,0.000000000,0.0,Normal\n"
}

/// Real chronyd processes under a temporary directory (each its own config, pid file and
/// command socket; `-x`: the clock is never adjusted), stopped when released.
private final class ChronyDaemons {
    let directory = TemporaryDirectory("chrony")
    private var daemons: [Process] = []

    /// Starts one; `lines` are its config beyond the pid file, socket and user. Returns its
    /// command socket, once chronyc can reach it.
    func start(_ name: String, _ lines: [String]) throws -> String {
        let home = directory.path + "/" + name
        // chronyd refuses a socket directory others can reach.
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false)
        chmod(home, 0o700)
        let socket = home + "/chronyd.sock"
        let config = [
            "user \(String(cString: getpwuid(getuid())!.pointee.pw_name))", "pidfile \(home)/chronyd.pid",
            "bindcmdaddress \(socket)", "cmdport 0",
        ]
        try (config + lines).joined(separator: "\n")
            .write(toFile: home + "/chrony.conf", atomically: true, encoding: .utf8)
        let process = try ExternalTools.process("chronyd", ["-x", "-d", "-f", home + "/chrony.conf"])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        daemons.append(process)
        #expect(eventually { FileManager.default.fileExists(atPath: socket) }, "chronyd \(name) made its socket")
        return socket
    }

    deinit {
        // SIGKILL: chronyd started by Foundation's Process keeps SIGTERM blocked.
        for daemon in daemons where daemon.isRunning {
            kill(daemon.processIdentifier, SIGKILL)
            daemon.waitUntilExit()
        }
    }
}

private let chronyInstalled = (try? ExternalTools.path("chronyd")) != nil && (try? ExternalTools.path("chronyc")) != nil

@Suite("Time source")
struct TimeSourceTests {
    @Test("chronyc's tracking line: a server, stratum, offset (ahead +); a local reference; none; not it: nil")
    func chronyParsing() {
        #expect(TimeSource.chrony(tracking: ChronycOutput.noReference) == TimeSource("chrony: no reference"))
        #expect(
            TimeSource.chrony(tracking: ChronycOutput.server)
                == TimeSource("chrony: 127.0.0.1, stratum 4, offset +0.000002 s"))
        #expect(
            TimeSource.chrony(tracking: ChronycOutput.local)
                == TimeSource("chrony: local clock (no outside time), stratum 3, offset +0.000000 s"))
        // Slow by 1.25 ms (a positive correction): the clock is behind.
        let slow = ChronycOutput.server.replacingOccurrences(of: "-0.000001571", with: "0.001250000")
        #expect(TimeSource.chrony(tracking: slow) == TimeSource("chrony: 127.0.0.1, stratum 4, offset -0.001250 s"))
        let bigOffset = ChronycOutput.server.replacingOccurrences(of: "-0.000001571", with: "-12.5")
        #expect(TimeSource.chrony(tracking: bigOffset)?.description.hasSuffix("offset +12.500000 s") == true)
        for text in ["", "506 Cannot talk to daemon", "Reference ID    : 7F000001 (127.0.0.1)", "7F000001,x,4"] {
            #expect(TimeSource.chrony(tracking: text) == nil, "\(text)")
        }
        #expect(TimeSource.timesyncd(server: "ntp.example.net").description == "systemd-timesyncd: ntp.example.net")
        #expect(TimeSource.timesyncd(server: "").description == "systemd-timesyncd")
    }

    @Test("with neither daemon, 'none'; timesyncd's flag file alone names timesyncd (no timedatectl to ask)")
    func noDaemon() throws {
        let directory = TemporaryDirectory("timesync")
        let missing = directory.path + "/missing"
        let flag = directory.path + "/synchronized"
        var locations = TimeSource.Locations(chronyc: missing, timedatectl: missing, timesyncdFlag: flag)
        #expect(TimeSource.query(locations) == .none)
        FileManager.default.createFile(atPath: flag, contents: nil)
        #expect(TimeSource.query(locations) == TimeSource("systemd-timesyncd"))
        // A chronyc whose daemon is not there falls through to timesyncd as well.
        if chronyInstalled {
            locations.chronyc = try ExternalTools.path("chronyc")
            locations.chronycArguments = ["-h", directory.path + "/no-chronyd.sock"]
            #expect(TimeSource.query(locations) == TimeSource("systemd-timesyncd"))
        }
    }

    @Test(
        "the real chronyd through the real chronyc: one synchronised to a server on loopback, one with no reference; a segment records it",
        .enabled(if: chronyInstalled, "chrony is not installed (Debian package chrony, scripts/packages.list)"),
        .enabled(if: getuid() == 0, "chronyd runs only as root (it says \"Not superuser\"), even with -x"))
    func realChrony() throws {
        let daemons = ChronyDaemons()
        let port = 20_000 + Int(getpid() % 20_000)
        _ = try daemons.start(
            "server", ["port \(port)", "bindaddress 127.0.0.1", "allow 127.0.0.1", "local stratum 3"])
        let client = try daemons.start(
            "client", ["port 0", "server 127.0.0.1 port \(port) iburst minpoll -4 maxpoll -4"])
        let lone = try daemons.start("lone", ["port 0"])
        let chronyc = try ExternalTools.path("chronyc")
        func locations(_ socket: String) -> TimeSource.Locations {
            TimeSource.Locations(
                chronyc: chronyc, chronycArguments: ["-h", socket], timedatectl: "/nonexistent",
                timesyncdFlag: "/nonexistent")
        }
        #expect(TimeSource.query(locations(lone)) == TimeSource("chrony: no reference"))
        var synchronised = TimeSource.none
        #expect(
            eventually(timeout: 10) {
                synchronised = TimeSource.query(locations(client))
                return synchronised.description.hasPrefix("chrony: 127.0.0.1, stratum 4, offset ")
            }, "\(synchronised)")

        // The monitor keeps the answer; a recorder writes it at each segment's start, and the
        // file and the index give it back.
        let monitor = TimeSourceMonitor(locations: locations(client))
        #expect(monitor.current == nil)
        monitor.refresh()
        let kept = try #require(monitor.current)
        #expect(kept.description.hasPrefix("chrony: 127.0.0.1, stratum 4"))
        let directory = TemporaryDirectory("clock-source")
        let configuration = RecorderConfiguration(
            archiveDirectory: directory.path + "/archive", app: "app", stream: "main", channels: 1, sampleRate: 8000,
            bitsPerSample: 16, segmentSeconds: 1)
        let source = MemorySource(
            channels: 1, startTime: iso("2026-12-02T10:00:00.000000Z"), totalFrames: 8000 * 2, signal: noiseSample)
        let records = finishedRecords(
            try record(configuration, inputs: SegmentInputs(timeSource: monitor), source: source))
        try #require(records.count == 2)
        let index = try ArchiveIndex(path: directory.path + "/index.sqlite")
        for segment in records {
            #expect(try metaflacTags(segment.path)["CLOCK_SOURCE"] == kept.description)
            #expect(try SegmentRecord.read(path: segment.path).clockSource == kept.description)
            try index.add(segment)
            #expect(try index.record(path: segment.path)?.clockSource == kept.description)
        }
    }

    @Test("the monitor asks when its owner runs the due refresh: at once, then once per period")
    func monitorRefresh() throws {
        let directory = TemporaryDirectory("timesync-refresh")
        let flag = directory.path + "/synchronized"
        _ = FileManager.default.createFile(atPath: flag, contents: nil)
        let monitor = TimeSourceMonitor(
            locations: TimeSource.Locations(chronyc: "/nonexistent", timedatectl: "/nonexistent", timesyncdFlag: flag),
            refreshSeconds: 60)
        #expect(monitor.current == nil)
        #expect(monitor.claimRefresh(now: 100))
        #expect(!monitor.claimRefresh(now: 100))
        #expect(!monitor.claimRefresh(now: 159.9))
        monitor.refresh()
        #expect(monitor.current == TimeSource("systemd-timesyncd"))
        #expect(monitor.claimRefresh(now: 160))
        #expect(!monitor.claimRefresh(now: 219))
    }
}

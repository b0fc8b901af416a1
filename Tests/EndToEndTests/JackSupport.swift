// JACK helpers for end-to-end tests: recd-signal clients standing in for devices, private
// jackd servers, WAV files with known samples, raw capture files.
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A unique JACK client name for this test run.
func uniqueName(_ base: String) -> String { "\(base)\(UUID().uuidString.prefix(6).lowercased())" }

/// A running program of this package (recd-signal, an example application, a compiled C
/// example) whose stdout and stderr go to a file the test reads.
class ChildProgram: @unchecked Sendable {
    let process: Process
    let outputPath: String
    let directory: String

    init(_ executable: String, _ arguments: [String], environment: [String: String]?, prefix: String) throws {
        directory = try makeTemporaryDirectory(prefix)
        outputPath = directory + "/stdout"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        process = try ExternalTools.ownProcess(executable, arguments)
        if let environment { process.environment = environment }
        process.standardOutput = out
        process.standardError = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try out.close()
    }

    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    var lines: [String] { output.split(separator: "\n").map(String.init) }

    /// Waits until a line of its output satisfies `predicate`.
    @discardableResult
    func waitFor(timeout: Double = 5, _ predicate: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if lines.contains(where: predicate) { return true }
            usleep(10_000)
        }
        return false
    }

    /// SIGTERM (a JACK client's ports go away) and wait.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// SIGKILL, as a crash or an impatient operator ends it, and wait.
    func killHard() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func waitForExit(timeout: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        return !process.isRunning
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A running `recd-signal` (play, capture or ports), ready (its ports registered) once made.
final class SignalClient: ChildProgram, @unchecked Sendable {
    init(_ arguments: [String], environment: [String: String]? = nil) throws {
        try super.init(
            productsDirectory.appendingPathComponent("recd-signal").path, arguments, environment: environment,
            prefix: "recd-signal")
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            // Its ready line ("ready CLIENT:port,…"), at a line's start: not "already" in an error.
            if lines.contains(where: { $0.hasPrefix("ready ") }) { return }
            guard process.isRunning else { break }
            usleep(10_000)
        }
        throw DaemonFailure(message: "recd-signal \(arguments) did not get ready:\n\(output)")
    }
}

/// A private `jackd -d dummy` with its own name, for tests that kill the server.
final class PrivateJack: @unchecked Sendable {
    let name: String
    private(set) var process: Process?

    /// A stable name, one suite's own: JACK's shared-memory registry holds 8 server names and
    /// frees a dead server's slot only when a server of the same name starts again, so a name
    /// per run would fill it after a few killed runs; the tests of one suite run one at a time,
    /// but scripts/test's passes run side by side, and two suites sharing a name would start
    /// (and kill) each other's server.
    /// `environment`: more of jackd's environment (a server whose clock runs slow: `slowClock`).
    /// `driver`: jackd's driver and its options instead of the dummy one (a netjack2 satellite:
    /// `-d net ...`); `namespace`: the network namespace it runs in (NamespacePair).
    /// `realtime`: SCHED_FIFO for the server and its clients' process threads where this machine
    /// allows it (as scripts/test's servers and jackd.service), for a test that measures when
    /// the server's cycles run: a server of normal priority waits behind the other passes'
    /// CPU-bound work.
    init(
        period: Int = 256, name: String, environment: [String: String] = [:],
        driver: [String]? = nil, namespace: (pair: NamespacePair, side: NamespacePair.Side)? = nil,
        realtime: Bool = false
    ) throws {
        self.name = name
        self.environment = environment
        self.driver = driver
        self.namespace = namespace
        self.realtime = realtime && Self.realtimeAllowed
        try? FileManager.default.removeItem(atPath: logPath)
        try start(period: period)
    }

    private let environment: [String: String]
    private let driver: [String]?
    private let namespace: (pair: NamespacePair, side: NamespacePair.Side)?
    private let realtime: Bool

    /// Whether this process may run threads SCHED_FIFO (root, or an rtprio limit).
    static let realtimeAllowed: Bool = {
        var parameter = sched_param(sched_priority: 1)
        var previous = sched_param()
        let policy = sched_getscheduler(0)
        guard sched_getparam(0, &previous) == 0 else { return false }
        guard sched_setscheduler(0, SCHED_FIFO, &parameter) == 0 else { return false }
        _ = sched_setscheduler(0, policy, &previous)
        return true
    }()

    func start(period: Int = 256, rate: Int = 48_000) throws {
        let arguments =
            ["-n", name] + (realtime ? ["-R", "-P", "70"] : ["--no-realtime"]) + (driver ?? ["-d", "dummy", "-r", "\(rate)", "-p", "\(period)"])
        let process =
            try namespace.map { try $0.pair.process(in: $0.side, ExternalTools.path("jackd"), arguments) }
            ?? ExternalTools.process("jackd", arguments)
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let logHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try logHandle.seekToEnd()
        process.standardOutput = logHandle
        process.standardError = logHandle
        process.standardInput = FileHandle.nullDevice
        process.environment = ExternalTools.environment(environment.merging(["JACK_NO_AUDIO_RESERVATION": "1"]) { $1 })
        try process.run()
        try logHandle.close()
        self.process = process
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let r = try? runTool("jack_lsp", ["-s", name]), r.status == 0, r.stdout.contains("system:") { return }
            usleep(50_000)
        }
        throw DaemonFailure(message: RerunCause.serverDidNotStart("jackd -n \(name)") + "; its log:\n\(log)")
    }

    /// Where jackd's output goes (every start of this server appends to it; made afresh by `init`).
    var logPath: String { NSTemporaryDirectory() + "recd-jackd-\(name).log" }
    /// Everything jackd wrote so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// jackd's environment for a dummy server whose clock runs at `speed` (0.99: 1 % slow, every
    /// period 1 % long in real time): libfaketime (Debian's libfaketime, scripts/packages.list)
    /// slows the server's CLOCK_MONOTONIC and its sleeps alike, so the dummy driver's timer runs
    /// slow as a sound card's crystal would. Its clients keep the true clock.
    static func slowClock(speed: Double) throws -> [String: String] {
        let library = ["x86_64-linux-gnu", "aarch64-linux-gnu"].map { "/usr/lib/\($0)/faketime/libfaketimeMT.so.1" }
            .first { FileManager.default.fileExists(atPath: $0) }
        guard let library else {
            throw DaemonFailure(message: "no libfaketimeMT.so.1: install libfaketime (scripts/packages.list)")
        }
        return ["LD_PRELOAD": library, "FAKETIME": "+0 x\(speed)"]
    }

    /// SIGTERM and wait: the server shuts down cleanly (its clients hear it go) and frees its
    /// slot in JACK's registry. `grace`: SIGKILL after that many seconds (a jackd with netjack2's
    /// netmanager loaded takes 6 to 17 s over its shutdown, waiting out its network clients).
    func stop(grace: Double? = nil) {
        guard let process, process.isRunning else { return }
        process.terminate()
        if let grace {
            let deadline = Date().addingTimeInterval(grace)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
    }

    func kill9() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        // libjack leaves the dead server's files behind; a new server of the same name cleans up.
    }

    deinit {
        if let process, process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

/// A headless PipeWire of a test's own, started as scripts/test starts its own (lib.sh's
/// `start_pipewire`, through bash: one recipe for both), optionally inside a network namespace,
/// with drop-ins of its own beside this tree's headless-system.conf (PipeWire reads one
/// `XDG_CONFIG_HOME`: `directory`/config). JACK clients reach it with `environment`
/// (PIPEWIRE_RUNTIME_DIR) under PipeWire's libjack (the PipeWire pass runs under `pw-jack`).
///
/// The directory is stable (`/tmp/recd-test-pipewire-NAME`), like the private jackds' names: a
/// PipeWire a killed run left there is stopped by the next start and by scripts/test's cleanup.
final class PrivatePipeWire: @unchecked Sendable {
    let directory: String
    /// The drop-in (PipeWire's SPA-JSON config) loaded after headless-system.conf.
    let dropIn: String
    let namespace: (pair: NamespacePair, side: NamespacePair.Side)?
    /// More of PipeWire's environment (PIPEWIRE_DEBUG for a module's log lines).
    let extraEnvironment: [String: String]

    /// Starts it (`start`). `name`: the directory's last part.
    init(
        name: String, dropIn: String, namespace: (pair: NamespacePair, side: NamespacePair.Side)? = nil,
        environment: [String: String] = [:], period: Int = 1024
    ) throws {
        directory = NSTemporaryDirectory() + "recd-test-pipewire-\(name)"
        self.dropIn = dropIn
        self.namespace = namespace
        extraEnvironment = environment
        try start(period: period)
    }

    /// The environment a JACK client (recd, recd-signal, pw-jack's tools) reaches this PipeWire with.
    var environment: [String: String] { ["PIPEWIRE_RUNTIME_DIR": directory + "/run"] }
    /// Everything PipeWire wrote since it last started.
    var log: String { (try? String(contentsOfFile: directory + "/pw.log", encoding: .utf8)) ?? "" }
    /// The running pipewire's process ID (lib.sh's pid file).
    var pid: Int32? {
        (try? String(contentsOfFile: directory + "/pw.pid", encoding: .utf8))
            .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Starts PipeWire (a PipeWire of an earlier run in the directory is stopped first) and waits
    /// until it serves JACK clients, with its quantum forced to `period`.
    func start(period: Int = 1024) throws {
        let config = directory + "/config/pipewire/pipewire.conf.d"
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        let system = ExternalTools.packageRoot + "/config/pipewire/pipewire.conf.d/headless-system.conf"
        try? FileManager.default.removeItem(atPath: config + "/headless-system.conf")
        try FileManager.default.copyItem(atPath: system, toPath: config + "/headless-system.conf")
        try dropIn.write(toFile: config + "/test.conf", atomically: true, encoding: .utf8)
        // PipeWire's own output goes to pw.log (start_pipewire's); start.log is the script's. A
        // file, not a pipe: PipeWire outlives the script. And no other descriptor of this test
        // process reaches PipeWire: Foundation's Process sees its child end only when every holder
        // of a socket it gives the child has closed it, so a PipeWire left holding it would keep
        // this start waiting for ever (seen). The script closes every descriptor above 2 first.
        let script =
            #"for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done 2>/dev/null; "#
            + "source \(ExternalTools.packageRoot)/scripts/lib.sh && "
            + "start_pipewire \(directory) \(period) \(directory)/config"
        let bash = try ExternalTools.path("bash")
        let process =
            try namespace.map { try $0.pair.process(in: $0.side, bash, ["-c", script]) }
            ?? ExternalTools.process("bash", ["-c", script])
        process.environment = ExternalTools.environment(extraEnvironment)
        let startLog = directory + "/start.log"
        _ = FileManager.default.createFile(atPath: startLog, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: startLog))
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try output.close()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let said = (try? String(contentsOfFile: startLog, encoding: .utf8)) ?? ""
            throw DaemonFailure(message: RerunCause.serverDidNotStart("PipeWire in \(directory)") + ": \(said)")
        }
    }

    /// Waits until a JACK port named `port` is there (a module's node registers its ports a moment
    /// after PipeWire serves clients).
    @discardableResult
    func waitForPort(_ port: String, timeout: Double = 5) -> Bool {
        eventually(timeout: timeout) {
            (try? runTool("jack_lsp", [], environment: environment))?.stdout.split(separator: "\n")
                .contains { $0 == port } == true
        }
    }

    /// SIGKILL, as a crash ends it, and wait until it is gone.
    func kill9() {
        guard let pid else { return }
        Glibc.kill(pid, SIGKILL)
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, Glibc.kill(pid, 0) == 0 { usleep(10_000) }
    }

    /// SIGTERM and wait (lib.sh's stop_stale_pipewire: only a pipewire serving this directory).
    func stop() {
        let script = "source \(ExternalTools.packageRoot)/scripts/lib.sh && stop_stale_pipewire \(directory)"
        _ = try? ExternalTools.run("bash", ["-c", script], timeout: 10)
    }

    deinit { stop() }
}

/// Writes a 16-bit PCM WAV file.
func writeWAV(path: String, sampleRate: Int, channels: Int, samples: [Int16]) throws {
    var data = Data()
    func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
    let dataBytes = samples.count * 2
    data.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36 + dataBytes))
    data.append(contentsOf: Array("WAVE".utf8)); data.append(contentsOf: Array("fmt ".utf8))
    append(UInt32(16)); append(UInt16(1)); append(UInt16(channels)); append(UInt32(sampleRate))
    append(UInt32(sampleRate * channels * 2)); append(UInt16(channels * 2)); append(UInt16(16))
    data.append(contentsOf: Array("data".utf8)); append(UInt32(dataBytes))
    for sample in samples { append(sample) }
    try data.write(to: URL(fileURLWithPath: path))
}

/// Reads a raw interleaved float32 little-endian capture.
func readRawFloats(path: String) throws -> [Float] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return data.withUnsafeBytes { raw in
        (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
    }
}

/// Waits until the raw float capture at `path` holds `seconds` more audio than now: JACK's
/// frames as the capture client wrote them, not the wall clock, so that the audio a test judges
/// next was played after what it just did, however late a busy machine ran the cycles.
func awaitCaptured(_ path: String, seconds: Double, channels: Int = 2, rate: Int = 48_000) {
    let size = { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0 }
    let target = size() + Int(seconds * Double(rate)) * channels * MemoryLayout<Float>.size
    eventually(timeout: seconds + 10) { size() >= target }
}

/// Splits interleaved samples into channels.
func deinterleave(_ samples: [Float], channels: Int) -> [[Float]] {
    (0..<channels).map { c in stride(from: c, to: samples.count - channels + 1, by: channels).map { samples[$0] } }
}

/// Runs a measurement on JACK up to `attempts` times. A missed period (an xrun, which a busy
/// 2-core machine can cause) breaks any sample-exact signal through no fault of recd, so a run
/// during which JACK reported xruns is repeated; the first clean run's result is returned (or
/// the last run's, which then fails the test on its own evidence). PipeWire's JACK never calls
/// the xrun callback, so recd's count stays 0 there: the first run is the one judged.
func withoutXruns<T>(attempts: Int = 3, _ run: () throws -> (result: T, xruns: Int)) throws -> T {
    var last: T?
    for attempt in 1...attempts {
        let (result, xruns) = try run()
        if xruns == 0 { return result }
        print("JACK reported \(xruns) xrun(s) during attempt \(attempt); measuring again")
        last = result
    }
    return last!
}

extension Daemon {
    /// Xruns recd's JACK client has seen since it started.
    func xruns() throws -> Int {
        try recctl("--json", "status").json?["jack"]?["xruns"]?.intValue ?? 0
    }
}

/// How a tone of one cycle per `cycle` frames at peak `full` left an output: frames from the
/// first cycle below full level (the fade began) to the first silent one, and whether it was
/// ramped (the first faded cycle not yet silent) and stayed silent. Nil when it never faded
/// or never went silent.
func fadeOut(_ samples: [Float], full: Float, cycle: Int = 48) -> (frames: Int, ramped: Bool, staysSilent: Bool)? {
    let windows = stride(from: 0, to: samples.count - cycle, by: cycle).map {
        samples[$0..<$0 + cycle].map(abs).max() ?? 0
    }
    guard let start = windows.firstIndex(where: { $0 < full - 1e-3 }),
        let silent = windows[start...].firstIndex(where: { $0 == 0 })
    else { return nil }
    return ((silent - start) * cycle, start > 0 && windows[start] > 0, windows[silent...].allSatisfy { $0 == 0 })
}

/// A recd-signal sine at `level` dBFS on a fresh deck (`ArchiveEndToEndTests.deckPorts`), and the
/// `logger` session (record, permission granted) recording it; a watcher of `logger` from
/// before the start.
func startLoggerRecording(
    _ daemon: Daemon, deck: String, level: Int = -12, signal: [String]? = nil
) throws -> (SignalClient, Watcher) {
    // `signal`: recd-signal's own arguments for what the deck plays (default a 1 kHz sine at `level`).
    let playing = signal ?? ["--signal", "sine:1000", "--level", "\(level)"]
    let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2"] + playing)
    #expect(
        try eventually {
            try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true
        })
    try #require(
        daemon.recctl("session", "set", "logger", "--category", "record", "--mic-usage", "archive").status == 0)
    try #require(daemon.recctl("permission", "grant", "logger").status == 0)
    let watcher = try daemon.watch("logger")
    let started = try daemon.recctl("record", "start", "logger")
    try #require(started.status == 0, "\(started.stderr)")
    return (source, watcher)
}

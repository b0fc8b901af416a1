// End-to-end harness: the real recd and recctl binaries, a temporary socket, state dir and
// config, real child processes. Nothing here is a stand-in for a part of the product.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Where `swift build` put the executables (next to the test bundle).
let productsDirectory = ExternalTools.productsDirectory

struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String

    var json: JSONValue? { try? JSONValue.parse(stdout.trimmingCharacters(in: .whitespacesAndNewlines)) }
}

/// Runs an executable this suite owns (recd, recctl, a compiled helper) to completion and
/// captures its output. `environment` replaces the inherited one.
func runProgram(_ path: String, _ arguments: [String], environment: [String: String]? = nil, timeout: Double = 30) throws -> CommandResult {
    let result = try ExternalTools.runExecutable(path, arguments, environment: environment, timeout: timeout)
    if result.stderr.contains("did not finish within") { Issue.record("\(path) \(arguments) did not finish within \(timeout) s") }
    return CommandResult(status: result.status, stdout: result.stdout, stderr: result.stderr)
}

/// Runs a declared outside program (scripts/packages.list) by name; `environment` is added to
/// the inherited one.
func runTool(_ program: String, _ arguments: [String], environment: [String: String] = [:], timeout: Double = 60) throws -> CommandResult {
    let result = try ExternalTools.run(program, arguments, environment: environment, timeout: timeout)
    return CommandResult(status: result.status, stdout: result.stdout, stderr: result.stderr)
}

/// A value behind a lock, for test threads.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// A running recd on private paths. Stops it when done.
final class Daemon: @unchecked Sendable {
    let directory: String
    let socket: String
    let configPath: String
    private(set) var process: Process?
    /// Extra environment for recd (e.g. RECD_DEVICE_EVENTS=scripted).
    let environment: [String: String]
    /// The network namespace recd runs in (`ip netns exec`); nil: this process's.
    let networkNamespace: String?
    var logPath: String { directory + "/recd.log" }
    /// Everything recd wrote to stderr so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    /// recd's last `count` log lines on one line, for the first line of a failure's message
    /// (what scripts/test repeats at the end of a run), before the whole log.
    func logEnd(_ count: Int = 3) -> String {
        log.split(separator: "\n").suffix(count).joined(separator: " | ")
    }
    /// recd's "control thread busy" lines so far: each a request or tick that held the control
    /// thread past its threshold, the time it waited for a CPU left out (ControlFrontEnd).
    var controlThreadBusyLines: [Substring] {
        log.split(separator: "\n").filter { $0.contains("control thread busy") }
    }

    /// For a failure where recd did not see a client's ports: recd's routes, the ports a JACK
    /// client opened now lists (jack_lsp: whether the server has them, so the delay is recd's
    /// or the server's), and the log's end, each on one line.
    func portFacts() -> String {
        func line(_ text: String?) -> String { (text ?? "?").split(separator: "\n").joined(separator: " | ") }
        return "routes: \(line(try? recctl("routes").stdout)); jack_lsp now: \(line(try? runTool("jack_lsp", []).stdout)); "
            + "log ends: \(logEnd(8))"
    }

    static let systemPorts = """
        [port mic]
        type = builtInMic
        direction = input
        jack = system:capture_1, system:capture_2

        [port out]
        type = lineOut
        direction = output
        jack = system:playback_1, system:playback_2

        """

    /// A daemon on private paths. `ports` replaces the default port sections (the dummy
    /// server's system ports); `jackServer` names a private JACK server.
    init(extraConfig: String = "", adminGroup: String? = nil, ports: String = Daemon.systemPorts, jackServer: String? = nil,
         allowBufferSizeChanges: Bool = false, archiveSegmentSeconds: Int? = nil, archiveDirectory: String? = nil,
         archiveMaxAgeDays: Int? = nil, environment: [String: String] = [:], networkNamespace: String? = nil,
         idleClientTimeout: Int? = nil, sessionExpiryDays: Double? = nil) throws {
        self.environment = environment
        self.networkNamespace = networkNamespace
        directory = try makeTemporaryDirectory("recd-e2e")
        socket = directory + "/run/control.sock"
        configPath = directory + "/recd.conf"
        var config = "[daemon]\nsocket = \(socket)\nstate_dir = \(directory)/state\n"
        if let adminGroup { config += "admin_group = \(adminGroup)\n" }
        if let idleClientTimeout { config += "idle_client_timeout = \(idleClientTimeout)\n" }
        if let sessionExpiryDays { config += "session_expiry_days = \(String(format: "%.6f", sessionExpiryDays))\n" }
        config += "\n[jack]\nclient_name = \(uniqueName("recd"))\n"
        if let jackServer { config += "server = \(jackServer)\n" }
        if allowBufferSizeChanges { config += "allow_buffer_size_changes = yes\n" }
        config += "\n[archive]\ndir = \(archiveDirectory ?? directory + "/archive")\n"
        // A day's segments unless the test asks for rotation (or its own sections set the length,
        // as the shipped examples do): with the default hour a test that runs across an hour in
        // UTC gets two files where it judges one recording (crashRecovery, RTPAudioTests and
        // SharedBoxTests each failed so); at a day's end it still can, once a day.
        if let archiveSegmentSeconds {
            config += "segment_seconds = \(archiveSegmentSeconds)\n"
        } else if !(ports + extraConfig).contains("segment_seconds") {
            config += "segment_seconds = 86400\n"
        }
        if let archiveMaxAgeDays { config += "max_age_days = \(archiveMaxAgeDays)\n" }
        config += "\n" + ports
        // No HTTP listener unless the test asks for one: test daemons run side by side.
        if !extraConfig.contains("[http]") { config += "\n[http]\nlisten = no\n" }
        try (config + extraConfig).write(toFile: configPath, atomically: true, encoding: .utf8)
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The running recd's process ID.
    var pid: Int32? { process.map(\.processIdentifier) }

    var recdPath: String { productsDirectory.appendingPathComponent("recd").path }
    var recctlPath: String { productsDirectory.appendingPathComponent("recctl").path }

    func start() throws {
        // `ip netns exec` execs recd in place: the process is recd's, its signals recd's.
        let arguments = ["--config", configPath]
        let process =
            try networkNamespace.map { try ExternalTools.process("ip", ["netns", "exec", $0, recdPath] + arguments) }
            ?? ExternalTools.ownProcess(recdPath, arguments)
        // The config in the environment too: with libfaketime preloaded recd's Swift runtime saw
        // no arguments (it ran on its embedded default), RECD_CONFIG it reads all the same.
        process.environment = ExternalTools.environment(environment.merging(["RECD_CONFIG": configPath]) { own, _ in own })
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let logHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try logHandle.seekToEnd()
        process.standardError = logHandle
        process.standardOutput = logHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try logHandle.close()
        self.process = process
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? recctl("status")).map({ $0.status == 0 }) == true { return }
            guard process.isRunning else { break }
            usleep(20_000)
        }
        throw DaemonFailure(message: "recd did not come up on \(socket); its log:\n\(log)")
    }

    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    func restart() throws {
        stop()
        try start()
    }

    /// Runs the real recctl against this daemon.
    @discardableResult
    func recctl(_ arguments: String..., user: String? = nil) throws -> CommandResult {
        try recctl(arguments: arguments, user: user)
    }

    func recctl(arguments: [String], user: String? = nil) throws -> CommandResult {
        let args = ["--socket", socket] + arguments
        if let user {
            // Another Unix user: setpriv drops to its uid/gid, so SO_PEERCRED sees that user.
            let ids = try userIDs(user)
            return try runTool("setpriv", ["--reuid=\(ids.uid)", "--regid=\(ids.gid)", "--clear-groups", recctlPath] + args)
        }
        return try runProgram(recctlPath, args)
    }

    /// Lets other users reach the socket (the test runs as root; the daemon keeps 0660).
    func openSocketToEveryone() {
        var path = socket
        chmod(path, 0o666)
        while path != "/" && path != "" {
            path = (path as NSString).deletingLastPathComponent
            chmod(path, 0o755)
            if path == "/tmp" { break }
        }
    }

    func watch(_ arguments: String...) throws -> Watcher {
        try Watcher(recctl: recctlPath, arguments: ["--socket", socket, "--json", "watch"] + arguments)
    }

    /// `recctl watch` without `--json`: its lines in words are the watcher's `texts`.
    func watchInWords(_ arguments: String...) throws -> Watcher {
        try Watcher(recctl: recctlPath, arguments: ["--socket", socket, "watch"] + arguments)
    }
}

struct DaemonFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

func userIDs(_ name: String) throws -> (uid: UInt32, gid: UInt32) {
    guard let entry = getpwnam(name) else { throw DaemonFailure(message: "no user \(name)") }
    return (entry.pointee.pw_uid, entry.pointee.pw_gid)
}

/// `recctl --json watch` as a child process, its lines collected as they come (`texts`: every
/// line as printed, for a watch in words).
final class Watcher: @unchecked Sendable {
    let process: Process
    let lines = Locked<[JSONValue]>([])
    let printed = Locked<[String]>([])

    init(recctl: String, arguments: [String]) throws {
        let pipe = Pipe()
        process = try ExternalTools.ownProcess(recctl, arguments)
        process.standardOutput = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let handle = pipe.fileHandleForReading
        let lines = self.lines
        let printed = self.printed
        Thread.detachNewThread {
            var pending = ""
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                pending += String(decoding: data, as: UTF8.self)
                while let newline = pending.firstIndex(of: "\n") {
                    let line = String(pending[..<newline])
                    pending = String(pending[pending.index(after: newline)...])
                    printed.withLock { $0.append(line) }
                    if let value = try? JSONValue.parse(line), !Self.isWatching(line) {
                        lines.withLock { $0.append(value) }
                    }
                }
            }
        }
        // The watch is registered once recctl says it is watching (its first line, which is
        // not one of the events): a fixed pause here missed the first event on a loaded machine.
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline
            && !printed.withLock({ $0.contains { Self.isWatching($0) } })
        {
            usleep(5_000)
        }
    }

    /// `recctl watch`'s line saying the watch has begun (in --json or in words).
    static func isWatching(_ line: String) -> Bool {
        line.hasPrefix("recctl: watching ")
            || (try? JSONValue.parse(line)).map { $0["event"] == "watch" && $0["state"] == "watching" } == true
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Waits until `count` events satisfy the predicate; returns all collected events.
    @discardableResult
    func waitFor(count: Int = 1, timeout: Double = 5, _ predicate: (JSONValue) -> Bool) -> [JSONValue] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let all = lines.withLock { $0 }
            if all.filter(predicate).count >= count { return all }
            usleep(10_000)
        }
        return lines.withLock { $0 }
    }

    var events: [JSONValue] { lines.withLock { $0 } }

    var texts: [String] { printed.withLock { $0 } }

    /// Waits until every one of `expected` was printed; returns every line printed.
    @discardableResult
    func waitForTexts(_ expected: [String], timeout: Double = 5) -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let all = texts
            if expected.allSatisfy(all.contains) { return all }
            usleep(10_000)
        }
        return texts
    }
}

/// A raw control-socket client for protocol-level tests.
final class RawClient {
    let fd: Int32

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    private var buffer: [UInt8] = []

    /// Reads one line; nil on EOF or timeout.
    func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { return nil }
            buffer += chunk[..<count]
        }
    }

    func readJSON() -> JSONValue? { readLine().flatMap { try? JSONValue.parse($0) } }
}

/// A fresh directory with a tmpfs of `size` (mount's syntax: "1m", "8m") mounted on it, for
/// the full-disk tests (root only); the caller unmounts it with `unmountTmpfs`.
func mountTmpfs(size: String, prefix: String) throws -> String {
    let directory = try makeTemporaryDirectory(prefix)
    let mounted = try runTool("mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory])
    try #require(mounted.status == 0, "mount: \(mounted.stderr)")
    return directory
}

func unmountTmpfs(_ directory: String) { _ = try? runTool("umount", ["-l", directory]) }

/// A fresh private directory under the temporary directory.
func makeTemporaryDirectory(_ prefix: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    return path
}

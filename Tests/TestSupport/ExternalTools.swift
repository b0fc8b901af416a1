// The outside programs the tests start (flac, sox, jackd, setpriv, ...), and only those.
//
// Every program a test starts must be one that scripts/lib.sh installs on a fresh machine, or
// the suite passes here and fails for the next person (sox was missing that way). So the
// programs are declared once, in scripts/packages.list, beside the package each comes from;
// lib.sh installs those packages, and `ExternalTools.path` refuses any program not listed.
// ExternalToolsTests checks that every listed program resolves to its listed package.
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A program that may not be started: not declared, or declared but not installed.
public struct ExternalToolError: Error, CustomStringConvertible {
    public var description: String
}

/// What a finished program did.
public struct ExternalToolResult: Sendable {
    public var status: Int32
    /// Standard output, as bytes (decoders write audio there).
    public var output: Data
    public var stderr: String
    /// Standard output as text.
    public var stdout: String { String(decoding: output, as: UTF8.self) }
}

/// The declared outside programs: where they are and how to run them.
public enum ExternalTools {
    /// The package root (this file is Tests/TestSupport/ExternalTools.swift).
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// The one declared list: scripts/packages.list.
    public static let listPath = packageRoot + "/scripts/packages.list"

    /// Pseudo-package for programs that come with the Swift toolchain.
    public static let toolchainPackage = "swift-toolchain"

    /// One line of the list: a package and the programs it provides.
    public struct Entry: Sendable, Equatable {
        public var package: String
        public var programs: [String]
    }

    /// The list's lines, in order (comments and blank lines dropped).
    public static let entries: [Entry] = {
        guard let text = try? String(contentsOfFile: listPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { raw in
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard var package = words.first else { return nil }
            if package.hasSuffix(":") { package.removeLast() }
            return Entry(package: package, programs: Array(words.dropFirst()))
        }
    }()

    /// The package that provides `program`, if the list names it.
    public static func package(of program: String) -> String? {
        entries.first { $0.programs.contains(program) }?.package
    }

    /// The absolute path of a declared program. Throws, naming the list, for a program the
    /// list does not declare (add it there, with its package, so lib.sh installs it) or one
    /// that is not installed (run scripts/test, which installs the list).
    public static func path(_ program: String) throws -> String {
        guard let package = package(of: program) else {
            throw ExternalToolError(
                description: "\(program) is not declared in \(listPath): add it to the line of the Debian "
                    + "package that provides it, so scripts/lib.sh installs it on a fresh machine")
        }
        guard let found = locate(program, toolchain: package == toolchainPackage) else {
            throw ExternalToolError(
                description: "\(program) (package \(package), declared in \(listPath)) is not installed; "
                    + "scripts/test installs every package of that list")
        }
        return found
    }

    /// The environment every outside program gets: the caller's, with a UTF-8 locale that
    /// every Debian system has (C.UTF-8), whatever the caller's locale, so tools print
    /// non-ASCII text as it is; `overrides` last.
    public static func environment(_ overrides: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["LC_ALL"] = "C.UTF-8"
        environment.removeValue(forKey: "LANGUAGE")
        environment.merge(overrides) { $1 }
        return environment
    }

    /// Runs a declared program to completion (killed after `timeout` seconds). Output goes
    /// through files, not pipes: a pipe's write end can leak into a child that another test
    /// spawns at the same moment, and its reader would then wait forever.
    public static func run(
        _ program: String, _ arguments: [String], environment overrides: [String: String] = [:],
        timeout: Double = 120
    ) throws -> ExternalToolResult {
        try runToCompletion(path(program), arguments, environment: environment(overrides), timeout: timeout)
    }

    /// A declared program as a `Process`, not yet started: for long-running ones (jackd) whose
    /// standard streams the caller sets. Its environment is `environment()`.
    public static func process(_ program: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try path(program))
        process.arguments = arguments
        process.environment = environment()
        return process
    }

    /// Where `swift build` put the package's executables (recd, recctl, recd-signal): the
    /// nearest directory above the test bundle that holds `recd`.
    public static let productsDirectory: URL = {
        let exe = URL(
            fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0])
        var dir = exe.deletingLastPathComponent()
        while dir.path != "/" {
            if FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("recd").path) { return dir }
            dir = dir.deletingLastPathComponent()
        }
        return exe.deletingLastPathComponent()
    }()

    /// An executable this test suite owns (recd, recctl, recd-signal, a helper a test
    /// compiled) as a `Process`, not yet started. Refuses a system program's path.
    public static func ownProcess(_ executable: String, _ arguments: [String]) throws -> Process {
        try refuseSystemProgram(executable)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment()
        return process
    }

    private static func refuseSystemProgram(_ executable: String) throws {
        if systemDirectories.contains(where: { executable.hasPrefix($0) }) {
            throw ExternalToolError(
                description: "\(executable) is a system program: start it by name through ExternalTools, "
                    + "which checks that \(listPath) declares it")
        }
    }

    /// Runs an executable this test suite owns (built by swift build or by a test) the same
    /// way; outside programs go through `run`. Refuses a system program's path.
    public static func runExecutable(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, timeout: Double = 120
    ) throws -> ExternalToolResult {
        try refuseSystemProgram(executable)
        return try runToCompletion(executable, arguments, environment: environment ?? Self.environment(), timeout: timeout)
    }

    private static func runToCompletion(
        _ executable: String, _ arguments: [String], environment: [String: String], timeout: Double
    ) throws -> ExternalToolResult {
        let scratch = NSTemporaryDirectory() + "recd-tool-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: scratch + ".out", contents: nil)
        _ = FileManager.default.createFile(atPath: scratch + ".err", contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: scratch + ".out")
            try? FileManager.default.removeItem(atPath: scratch + ".err")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + ".out"))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + ".err"))
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try out.close()
        try err.close()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(2000) }
        var timedOut = false
        if process.isRunning {
            process.terminate()
            timedOut = true
            // A program that does not end on SIGTERM (jack_unload waiting on a netmanager whose
            // thread hangs: seen for 10 minutes) gets SIGKILL 5 s later.
            let killAt = Date().addingTimeInterval(5)
            while process.isRunning && Date() < killAt { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        let stderr = (try? String(contentsOfFile: scratch + ".err", encoding: .utf8)) ?? ""
        return ExternalToolResult(
            status: process.terminationStatus,
            output: (try? Data(contentsOf: URL(fileURLWithPath: scratch + ".out"))) ?? Data(),
            stderr: timedOut ? "\(executable) did not finish within \(timeout) s\n" + stderr : stderr)
    }

    /// Where installed programs live; an executable there is an outside program.
    static let systemDirectories = ["/usr/", "/bin/", "/sbin/", "/lib/", "/opt/"]

    /// Where a program is. A Debian package's program is taken from where dpkg installs it
    /// (never a same-named one earlier on PATH, such as a pyenv shim); the toolchain's own
    /// programs from the directory of the `swift` on PATH.
    static func locate(_ program: String, toolchain: Bool) -> String? {
        let systemBin = ["/usr/bin", "/usr/sbin", "/bin", "/sbin"]
        guard toolchain else { return systemBin.map { $0 + "/" + program }.first(where: isExecutable) }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/opt/swift/usr/bin"]
        guard let swift = directories.map({ $0 + "/swift" }).first(where: isExecutable) else { return nil }
        let toolchainBin = URL(fileURLWithPath: swift).resolvingSymlinksInPath().deletingLastPathComponent().path
        return [toolchainBin + "/" + program].first(where: isExecutable)
    }

    private static func isExecutable(_ path: String) -> Bool {
        FileManager.default.isExecutableFile(atPath: path)
    }
}

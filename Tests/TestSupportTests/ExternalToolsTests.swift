// The declared list of outside programs is the truth: lib.sh installs exactly its packages,
// every program on it comes from the package on its line, and nothing else can be started.
import Foundation
import Testing
import TestSupport

@Suite("outside programs: one declared list, installed by scripts/lib.sh")
struct ExternalToolsTests {
    /// The packages scripts/lib.sh installs, as it computes them.
    static func libInstallList() throws -> [String] {
        let result = try ExternalTools.runExecutable(
            ExternalTools.packageRoot + "/scripts/print-packages", [], environment: ExternalTools.environment())
        #expect(result.status == 0, "scripts/print-packages: \(result.stderr)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    @Test("scripts/lib.sh installs exactly the list's Debian packages")
    func libInstallsTheList() throws {
        let declared = ExternalTools.entries.map(\.package).filter { $0 != ExternalTools.toolchainPackage }
        #expect(!declared.isEmpty, "no entries read from \(ExternalTools.listPath)")
        #expect(try Self.libInstallList() == declared)
    }

    @Test("every declared program is installed and comes from the package on its line")
    func programsResolveToTheirPackages() throws {
        let installed = Set(try Self.libInstallList())
        let programs = ExternalTools.entries.flatMap { entry in entry.programs.map { (entry.package, $0) } }
        #expect(programs.count >= 15)
        for (package, program) in programs {
            let path = try ExternalTools.path(program)
            if package == ExternalTools.toolchainPackage {
                // Beside the swift that builds the tests, not from a Debian package.
                let swift = try ExternalTools.path("swift")
                let toolchainBin = URL(fileURLWithPath: swift).resolvingSymlinksInPath().deletingLastPathComponent().path
                #expect(path.hasPrefix(toolchainBin + "/"), "\(program) at \(path), not in the toolchain \(toolchainBin)")
                continue
            }
            #expect(installed.contains(package), "\(package) (for \(program)) is not in lib.sh's install list")
            let owners = try owningPackages(of: path)
            // The package ships the program, or depends directly on the one that does
            // (python3 → python3-minimal, which ships /usr/bin/python3).
            let depends = try ExternalTools.run("dpkg-query", ["-W", "-f=${Pre-Depends},${Depends}", package]).stdout
                .split(separator: ",").compactMap { $0.split(separator: " ").first.map(String.init) }
            #expect(
                owners.contains(package) || owners.contains(where: depends.contains),
                "\(program) at \(path) belongs to \(owners), not \(package) (which depends on \(depends))")
        }
    }

    @Test("a program the list does not declare is refused with a message naming the list")
    func undeclaredIsRefused() throws {
        #expect(throws: ExternalToolError.self) { try ExternalTools.path("ls") }
        do {
            _ = try ExternalTools.run("gzip", ["--version"])
            Issue.record("gzip ran although the list does not declare it")
        } catch let error as ExternalToolError {
            #expect(error.description.contains("scripts/packages.list"), "\(error)")
            #expect(error.description.contains("gzip"))
        }
        // Nor by path: a system program's path is refused too.
        #expect(throws: ExternalToolError.self) { try ExternalTools.runExecutable("/usr/bin/gzip", ["--version"]) }
    }

    @Test("a program that ignores SIGTERM at its timeout gets SIGKILL 5 s later")
    func timeoutKills() throws {
        let started = Date()
        let result = try ExternalTools.run(
            "bash", ["-c", "trap '' TERM; s=$SECONDS; while [ $((SECONDS - s)) -lt 30 ]; do sleep 0.1; done"],
            timeout: 1)
        let took = Date().timeIntervalSince(started)
        #expect(took > 5.5 && took < 15, "took \(took) s")
        #expect(result.status != 0)
        #expect(result.stderr.contains("did not finish within 1.0 s"), "\(result.stderr)")
    }

    @Test("declared programs run in a UTF-8 locale whatever the caller's")
    func utf8Locale() throws {
        let result = try ExternalTools.run(
            "python3", ["-c", "import locale, sys; print(locale.getlocale()[1], sys.stdout.encoding)"],
            environment: [:])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "UTF-8 utf-8", "\(result.stdout)")
    }

    @Test("no test starts a program by a system path: every launch goes through ExternalTools")
    func noLaunchBypassesTheList() throws {
        let tests = ExternalTools.packageRoot + "/Tests"
        let enumerator = try #require(FileManager.default.enumerator(atPath: tests))
        var offenders: [String] = []
        for case let file as String in enumerator where file.hasSuffix(".swift") && !file.hasPrefix("TestSupport") {
            let text = try String(contentsOfFile: tests + "/" + file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false)[0]
                if code.contains("executableURL") || code.range(of: #"(^|[^A-Za-z0-9_])Process\(\)"#, options: .regularExpression) != nil || code.contains("posix_spawn(") {
                    offenders.append("\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(offenders.isEmpty, "start programs through TestSupport's ExternalTools:\n\(offenders.joined(separator: "\n"))")
    }

    /// The Debian packages whose file lists hold `path` (merged /usr: try both spellings).
    private func owningPackages(of path: String) throws -> [String] {
        var candidates = [path, URL(fileURLWithPath: path).resolvingSymlinksInPath().path]
        for spelling in candidates {
            if spelling.hasPrefix("/usr/bin/") || spelling.hasPrefix("/usr/sbin/") {
                candidates.append(String(spelling.dropFirst(4)))
            } else if spelling.hasPrefix("/bin/") || spelling.hasPrefix("/sbin/") {
                candidates.append("/usr" + spelling)
            }
        }
        for candidate in candidates {
            let result = try ExternalTools.run("dpkg-query", ["-S", candidate])
            guard result.status == 0 else { continue }
            // "jackd2: /usr/bin/jackd" (one line per package; "diversion by" lines aside).
            return result.stdout.split(separator: "\n").compactMap { line in
                guard let colon = line.firstIndex(of: ":"), !line.hasPrefix("diversion") else { return nil }
                return line[..<colon].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.first
            }.map { $0.split(separator: ":").first.map(String.init) ?? $0 }
        }
        return []
    }
}

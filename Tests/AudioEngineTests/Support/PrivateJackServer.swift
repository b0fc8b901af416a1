// A jackd of the test's own, under a private name, for the server-loss test.

import Foundation

/// `jackd -n NAME --no-realtime -d dummy` as a child process.
final class PrivateJackServer {
    let name: String
    private var process: Process?

    init(name: String = "recdtest-\(UInt32.random(in: 0...UInt32.max))") {
        self.name = name
    }

    func start(period: Int = 256) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.jackdPath)
        process.arguments = [
            "-n", name, "--no-realtime", "-d", "dummy", "-r", "48000", "-p", "\(period)",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
    }

    /// Kills the server the hard way (what a crash looks like to clients) and reaps it.
    func kill(signal: Int32 = SIGKILL) {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, signal)
        process.waitUntilExit()
        self.process = nil
    }

    deinit { kill(signal: SIGTERM) }

    static var jackdPath: String {
        for candidate in ["/usr/bin/jackd", "/usr/local/bin/jackd"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        return "/usr/bin/jackd"
    }
}

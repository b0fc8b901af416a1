// A jackd of the test's own, under a private name, for the server-loss test.

import Foundation
import TestSupport

/// `jackd -n NAME --no-realtime -d dummy` as a child process.
final class PrivateJackServer {
    let name: String
    private var process: Process?

    /// A stable name: JACK's shared-memory registry holds 8 server names and frees a dead
    /// server's slot only when a server of the same name starts again, so a new name per run
    /// would fill it after a few killed runs.
    init(name: String = "recd-test-loss") {
        self.name = name
    }

    func start(period: Int = 256) throws {
        let process = try ExternalTools.process(
            "jackd", ["-n", name, "--no-realtime", "-d", "dummy", "-r", "48000", "-p", "\(period)"])
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
}

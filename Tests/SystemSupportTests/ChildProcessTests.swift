// Platform's ChildProcess, which runs the operator's hooks (on_silence): exit statuses, the
// time limit, a program that cannot run, its output in a file. The programs come from scripts/packages.list.
import Foundation
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("running a hook program")
struct ChildProcessTests {
    @Test("exit statuses come back; past its time limit a program is ended with SIGTERM; a missing one throws")
    func outcomes() throws {
        let sleep = try ExternalTools.path("sleep")
        let quick = try ChildProcess.run(path: sleep, arguments: ["0"], environment: [:], timeLimit: 5)
        #expect(quick.succeeded && quick.termination == .exited(0))
        let refused = try ChildProcess.run(path: sleep, arguments: ["not-a-number"], environment: [:], timeLimit: 5)
        #expect(refused.termination == .exited(1) && !refused.succeeded && !refused.timedOut)
        let long = try ChildProcess.run(path: sleep, arguments: ["30"], environment: [:], timeLimit: 0.3)
        #expect(long.timedOut && long.termination == .signaled(SIGTERM), "\(long)")
        #expect(long.seconds < 2, "ended \(long.seconds) s after it started")
        #expect(throws: SystemError.self) {
            try ChildProcess.run(path: "/nonexistent/on-silence", environment: [:], timeLimit: 1)
        }
    }

    @Test("a program's standard output is kept and returned, at most the bytes asked for (pw-dump's JSON, chronyc's CSV are read so)")
    func outputCaptured() throws {
        let directory = NSTemporaryDirectory() + "recd-child-output-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = directory + "/input"
        try "abc\n".write(toFile: input, atomically: true, encoding: .utf8)
        let md5sum = try ExternalTools.path("md5sum")
        let (outcome, output) = try ChildProcess.runCapturingOutput(
            path: md5sum, arguments: [input], environment: [:], timeLimit: 5)
        #expect(outcome.succeeded, "\(outcome)")
        let text = String(decoding: output, as: UTF8.self)
        #expect(text == "0bee89b07a248e27c83fc3d5951213c1  \(input)\n", "\(text)")
        let (_, cut) = try ChildProcess.runCapturingOutput(
            path: md5sum, arguments: [input], environment: [:], timeLimit: 5, maximumOutputBytes: 8)
        #expect(cut == Array("0bee89b0".utf8), "\(cut)")
    }
}

// Platform's ChildProcess, which runs the operator's hooks (on_silence): exit statuses, the
// time limit, a program that cannot run. The programs come from scripts/packages.list.
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
}

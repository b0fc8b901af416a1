// Running another program: the operator's hooks (`on_silence`), rclone, chronyc. Never through
// a shell, never without a time limit.

/// How a child program ended. A plain value: any thread.
public enum ChildTermination: Hashable, Sendable, CustomStringConvertible {
    /// It exited with this status.
    case exited(Int32)
    /// A signal ended it (one it got from elsewhere, or ours after the time limit).
    case signaled(Int32)

    public var description: String {
        switch self {
        case .exited(let status): "exit status \(status)"
        case .signaled(let signal): "signal \(signal)"
        }
    }
}

/// What one run of a program came to. A plain value: any thread.
public struct ChildOutcome: Hashable, Sendable {
    public var termination: ChildTermination
    /// It ran past its time limit (or was cancelled) and was ended with SIGTERM, then SIGKILL.
    public var timedOut: Bool
    /// Wall seconds from start to end.
    public var seconds: Double

    public init(termination: ChildTermination, timedOut: Bool, seconds: Double) {
        self.termination = termination
        self.timedOut = timedOut
        self.seconds = seconds
    }

    /// Exit status 0 within the time limit.
    public var succeeded: Bool { termination == .exited(0) && !timedOut }
}

/// Runs a program and waits for it, within a time limit.
///
/// The program is executed directly (`posix_spawn`, no shell, no PATH search: `path` is
/// absolute) with `arguments` and exactly `environment`; stdin is /dev/null, stdout and stderr
/// go to recd's stderr (the journal), or stdout is kept and returned (`runCapturingOutput`:
/// `chronyc`'s, `timedatectl`'s, `pw-dump`'s answers); it inherits no other descriptor, no
/// blocked or ignored signal, and runs in a process group of its own. Past `timeLimit` seconds (or once
/// `isCancelled` says so) the whole group gets SIGTERM, and SIGKILL `graceSeconds` later.
///
/// Blocks its caller for as long as the program runs: call it on a worker thread, never on
/// the control thread.
public enum ChildProcess {
    /// How often a running child is checked for its end, the time limit and cancellation.
    static let pollSeconds = 0.01

    public static func run(
        path: String, arguments: [String] = [], environment: [String: String], timeLimit: Double,
        graceSeconds: Double = 1, isCancelled: () -> Bool = { false }
    ) throws(SystemError) -> ChildOutcome {
        try run(
            path: path, arguments: arguments, environment: environment, output: -1, timeLimit: timeLimit,
            graceSeconds: graceSeconds, isCancelled: isCancelled)
    }

    /// Runs the program as `run` does, its standard output kept (in an anonymous file in
    /// memory, not a pipe: a child that writes more than we read never blocks) and returned, at
    /// most the first `maximumOutputBytes` of it; stderr still goes to recd's log. For programs
    /// whose answer is their output (`chronyc`, `timedatectl`, `pw-dump`).
    public static func runCapturingOutput(
        path: String, arguments: [String] = [], environment: [String: String], timeLimit: Double,
        maximumOutputBytes: Int = 65536
    ) throws(SystemError) -> (outcome: ChildOutcome, output: [UInt8]) {
        let descriptor = try Syscall.memoryFile("recd-child-output").orThrow("memfd_create", path: path)
        let capture = OwnedFile(adopting: descriptor, path: "memfd:recd-child-output")
        let outcome = try run(
            path: path, arguments: arguments, environment: environment, output: descriptor, timeLimit: timeLimit,
            graceSeconds: 1, isCancelled: { false })
        return (outcome, try capture.read(count: maximumOutputBytes, at: 0))
    }

    private static func run(
        path: String, arguments: [String], environment: [String: String], output: Int32, timeLimit: Double,
        graceSeconds: Double, isCancelled: () -> Bool
    ) throws(SystemError) -> ChildOutcome {
        let started = SystemClock.monotonicSeconds()
        let pairs = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let pid = try Syscall.spawn(path, arguments: arguments, environment: pairs, output: output)
            .orThrow("posix_spawn", path: path)
        var timedOut = false
        var killAt: Double?
        while true {
            if let ended = try Syscall.waitChild(pid, nohang: true).orThrow("waitpid", path: path) {
                let termination: ChildTermination = ended.exited ? .exited(ended.code) : .signaled(ended.code)
                return ChildOutcome(
                    termination: termination, timedOut: timedOut, seconds: SystemClock.monotonicSeconds() - started)
            }
            let now = SystemClock.monotonicSeconds()
            if !timedOut && (now - started >= timeLimit || isCancelled()) {
                timedOut = true
                _ = Syscall.killGroup(pid, _SIGTERM)
                killAt = now + graceSeconds
            } else if let deadline = killAt, now >= deadline {
                _ = Syscall.killGroup(pid, _SIGKILL)
                killAt = nil
            }
            SystemClock.sleep(seconds: pollSeconds)
        }
    }
}

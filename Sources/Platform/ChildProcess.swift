// Running another program: the operator's hooks (`on_silence`). Never through a shell, never
// without a time limit.

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
/// go to recd's stderr (the journal), or stdout to the file `output` names (created with mode
/// 0600, or emptied: what a caller reads afterwards, such as `pw-dump`'s JSON); it inherits no
/// other descriptor, no blocked or ignored
/// signal, and runs in a process group of its own. Past `timeLimit` seconds (or once
/// `isCancelled` says so) the whole group gets SIGTERM, and SIGKILL `graceSeconds` later.
///
/// Blocks its caller for as long as the program runs: call it on a worker thread, never on
/// the control thread.
public enum ChildProcess {
    /// How often a running child is checked for its end, the time limit and cancellation.
    static let pollSeconds = 0.01

    public static func run(
        path: String, arguments: [String] = [], environment: [String: String], timeLimit: Double,
        graceSeconds: Double = 1, output: String? = nil, isCancelled: () -> Bool = { false }
    ) throws(SystemError) -> ChildOutcome {
        let started = SystemClock.monotonicSeconds()
        let pairs = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        // Open in this process (close-on-exec: only the child's dup onto its stdout survives the
        // exec) and closed here once the child has it.
        var file: OwnedFile?
        if let output { file = try OwnedFile(output, .createOrTruncate(permissions: 0o600)) }
        let spawned = Syscall.spawn(path, arguments: arguments, environment: pairs, output: file?.descriptor ?? -1)
        try? file?.close()
        let pid = try spawned.orThrow("posix_spawn", path: path)
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

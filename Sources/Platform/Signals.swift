// Signals without handlers: masks, and signalfd records a poll loop reads.

/// Signal numbers, and the calling thread's signal mask. Any thread (each call acts on its
/// caller's mask, or on the process's dispositions).
public enum SignalMask {
    /// `SIGTERM`.
    public static let terminate = _SIGTERM
    /// `SIGINT`.
    public static let interrupt = _SIGINT
    /// `SIGHUP`.
    public static let hangUp = _SIGHUP
    /// `SIGQUIT`.
    public static let quit = _SIGQUIT
    /// `SIGUSR1`.
    public static let user1 = _SIGUSR1
    /// `SIGUSR2`.
    public static let user2 = _SIGUSR2
    /// `SIGPIPE`.
    public static let brokenPipe = _SIGPIPE
    /// `SIGKILL`.
    public static let kill = _SIGKILL

    /// Blocks `signals` in the calling thread (`pthread_sigmask`); threads it creates
    /// afterwards inherit the mask.
    public static func block(_ signals: [Int32]) throws(SystemError) {
        try Syscall.changeSignalMask(block: true, signals).orThrow("pthread_sigmask")
    }

    /// Unblocks `signals` in the calling thread.
    public static func unblock(_ signals: [Int32]) throws(SystemError) {
        try Syscall.changeSignalMask(block: false, signals).orThrow("pthread_sigmask")
    }

    /// Ignores `signal` process-wide (`SIG_IGN`).
    public static func ignore(_ signal: Int32) {
        Syscall.ignoreSignal(signal)
    }

    /// Waits up to `seconds` for one of `signals` (blocked by the caller) to be pending, and
    /// takes it (`sigtimedwait`). The signal number, or nil on timeout.
    public static func wait(for signals: [Int32], seconds: Double) -> Int32? {
        Syscall.waitForSignal(signals, seconds: seconds)
    }
}

/// A signalfd: blocked signals turned into readable records for a poll loop.
public enum SignalFD {
    /// `signalfd(-1, signals, SFD_NONBLOCK | SFD_CLOEXEC)`. The caller owns the descriptor.
    public static func make(_ signals: [Int32]) throws(SystemError) -> Int32 {
        try Syscall.signalfd(signals).orThrow("signalfd")
    }

    /// Reads every pending record and returns their signal numbers.
    public static func readSignals(_ fd: Int32) -> [Int32] {
        var signals: [Int32] = []
        var record = [UInt8](repeating: 0, count: Syscall.signalInfoSize)
        while true {
            let result = record.withUnsafeMutableBytes { Syscall.read(fd, $0.baseAddress, $0.count) }
            guard (try? result.get()) == Syscall.signalInfoSize else { return signals }
            let signo = record.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
            signals.append(Int32(bitPattern: signo))
        }
    }
}

// Who we are and who others are: the process, the user database, signals and the wake-up
// descriptors a poll loop waits on.

/// The calling process. Any thread.
public enum CurrentProcess {
    /// `getpid()`.
    public static var id: Int32 { Syscall.processID() }

    /// `getuid()`: the real user id.
    public static var userID: UInt32 { Syscall.userID() }

    /// True when running as root (uid 0).
    public static var isRoot: Bool { userID == 0 }
}

/// The user and group database (passwd, group: files, LDAP, whatever NSS says). Any thread;
/// each call may block on a network lookup.
public enum UserDatabase {
    /// The gid of the group called `name`, nil when there is none (`getgrnam`).
    public static func groupID(named name: String) -> UInt32? {
        Syscall.groupID(name)
    }

    /// `getpwuid_r` + `getgrouplist`: the groups the user database gives `uid`, including
    /// `gid`. Empty when the uid has no passwd entry.
    public static func groupList(uid: UInt32, gid: UInt32) -> [UInt32] {
        guard let name = Syscall.userName(uid) else { return [] }
        var capacity: Int32 = 32
        while true {
            var wanted: Int32 = 0
            if let groups = Syscall.groupList(name, gid, capacity: capacity, wanted: &wanted) { return groups }
            // Too small a list: `wanted` now holds the size needed.
            if wanted <= capacity || wanted > 1 << 16 { return [] }
            capacity = wanted
        }
    }
}

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

/// An eventfd: a counter one thread adds to and a poll loop waits on, to be woken.
public enum EventFD {
    /// `eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)`. The caller owns the returned descriptor.
    public static func make() throws(SystemError) -> Int32 {
        try Syscall.eventfd().orThrow("eventfd")
    }

    /// Adds 1 to the counter, waking whoever polls it. Any thread; async-signal-safe.
    public static func signal(_ fd: Int32) {
        var one: UInt64 = 1
        // EAGAIN only if the counter would overflow 2^64-2, which still leaves it readable.
        _ = withUnsafeBytes(of: &one) { Syscall.write(fd, $0.baseAddress, $0.count) }
    }

    /// Reads (and so resets) the counter. False if it was already zero.
    @discardableResult
    public static func drain(_ fd: Int32) -> Bool {
        var value: UInt64 = 0
        let result = withUnsafeMutableBytes(of: &value) { Syscall.read(fd, $0.baseAddress, $0.count) }
        return (try? result.get()) == MemoryLayout<UInt64>.size
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

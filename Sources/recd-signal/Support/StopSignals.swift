// SIGTERM/SIGINT without signal handlers: they are blocked in every thread (main blocks them
// before any other thread exists, and threads inherit the mask), and the main thread
// collects them with sigtimedwait. No work ever runs in signal context.

#if canImport(Glibc)
    import Glibc
#endif

/// The signals that stop recd-signal, blocked and waited for. Main thread only.
struct StopSignals {
    private var set = sigset_t()

    /// Blocks SIGTERM and SIGINT in the calling thread (call it from main before opening
    /// JACK, whose threads inherit the mask) and ignores SIGPIPE, so a closed stdout is an
    /// error from write(2), not death.
    init() {
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        pthread_sigmask(SIG_BLOCK, &set, nil)
        signal(SIGPIPE, SIG_IGN)
    }

    /// Waits up to `seconds` for SIGTERM or SIGINT; returns the signal number, or nil on
    /// timeout.
    func wait(seconds: Double) -> Int32? {
        var copy = set
        var timeout = timespec(
            tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        let received = sigtimedwait(&copy, nil, &timeout)
        return received > 0 ? received : nil
    }

    /// Waits until a stop signal arrives or `stopped()` becomes true (checked every 5 ms:
    /// the process thread cannot wake us without a system call, so we look).
    func waitUntil(_ stopped: () -> Bool) -> Int32? {
        while !stopped() {
            if let signal = wait(seconds: 0.005) { return signal }
        }
        return nil
    }
}

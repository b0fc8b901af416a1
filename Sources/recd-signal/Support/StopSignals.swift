// SIGTERM/SIGINT without signal handlers: they are blocked in every thread (main blocks them
// before any other thread exists, and threads inherit the mask), and the main thread
// collects them with sigtimedwait. No work ever runs in signal context.

import Platform

/// The signals that stop recd-signal, blocked and waited for. Main thread only.
struct StopSignals {
    private let signals = [SignalMask.terminate, SignalMask.interrupt]

    /// Blocks SIGTERM and SIGINT in the calling thread (call it from main before opening
    /// JACK, whose threads inherit the mask) and ignores SIGPIPE, so a closed stdout is an
    /// error from write(2), not death.
    init() {
        try? SignalMask.block(signals)
        SignalMask.ignore(SignalMask.brokenPipe)
    }

    /// Waits up to `seconds` for SIGTERM or SIGINT; returns the signal number, or nil on
    /// timeout.
    func wait(seconds: Double) -> Int32? {
        SignalMask.wait(for: signals, seconds: seconds)
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

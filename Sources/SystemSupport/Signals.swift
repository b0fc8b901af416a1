// How the daemon learns of SIGTERM, SIGINT and SIGHUP without doing work in a signal handler.
//
// The mechanism: the signals are blocked in every thread, so the kernel never runs a
// handler for them; they stay pending and show up as readable records on a signalfd that the
// control server polls next to its sockets. The control thread then handles them like any
// other input, through `ControlServerHandler.signalReceived`. In `main`:
//
//     try Signals.block(Signals.shutdownAndReload)      // first, before any thread starts
//     Signals.ignoreBrokenPipe()
//     let server = try ControlServer(listeningFD: fd, watchingSignals: Signals.shutdownAndReload)
//     ... start JACK, the archiver ...
//     server.run(handler: daemon)                        // signalReceived(SIGTERM) → stop()
//
// Threads created before `block` keep their old mask, and a process-directed signal may be
// delivered to such a thread with its default action (terminate) — hence "first".
import Platform

/// Signal masking helpers for the signalfd mechanism described above.
public enum Signals {
    /// `SIGTERM` (systemd stop), `SIGINT` (Ctrl-C), `SIGHUP` (reload).
    public static let shutdownAndReload: [Int32] = [SignalMask.terminate, SignalMask.interrupt, SignalMask.hangUp]

    /// Blocks `signals` in the calling thread; threads it creates afterwards inherit the
    /// mask. Call on the main thread before any other thread exists.
    public static func block(_ signals: [Int32]) throws(SystemError) {
        try SignalMask.block(signals)
    }

    /// Unblocks `signals` in the calling thread (for a child process about to `exec`).
    public static func unblock(_ signals: [Int32]) throws(SystemError) {
        try SignalMask.unblock(signals)
    }

    /// Ignores `SIGPIPE` process-wide, so a write to a closed pipe or socket returns `EPIPE`
    /// instead of killing the daemon. The control server does not need it (it sends with
    /// `MSG_NOSIGNAL`); other writers (stderr to a dead pipe, libraries) do.
    public static func ignoreBrokenPipe() {
        SignalMask.ignore(SignalMask.brokenPipe)
    }

    /// `"SIGTERM"` etc., for log lines.
    public static func name(_ signo: Int32) -> String {
        switch signo {
        case SignalMask.terminate: "SIGTERM"
        case SignalMask.interrupt: "SIGINT"
        case SignalMask.hangUp: "SIGHUP"
        case SignalMask.quit: "SIGQUIT"
        case SignalMask.user1: "SIGUSR1"
        case SignalMask.user2: "SIGUSR2"
        case SignalMask.brokenPipe: "SIGPIPE"
        default: "signal \(signo)"
        }
    }
}

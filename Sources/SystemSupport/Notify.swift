// The systemd service protocol (sd_notify(3)): readiness, status text, watchdog, stopping.
import Glibc  // getenv
import Platform

/// Tells systemd how the daemon is doing (`Type=notify`, `WatchdogSec=`).
///
/// Every call is a no-op when `NOTIFY_SOCKET` is unset (run by hand, or in tests), so callers
/// need no checks. Any thread. Failures are thrown so the caller can decide; a daemon usually
/// logs them (`try?` is fine for `watchdog`: a missed ping shows up as a watchdog restart).
public enum SystemdNotify {
    /// `READY=1` (and `STATUS=` when given): startup is complete.
    public static func ready(status: String? = nil) throws(SystemError) {
        var state = "READY=1"
        if let status { state += "\nSTATUS=" + singleLine(status) }
        try send(state)
    }

    /// `STATUS=…`: free-form text that `systemctl status` shows.
    public static func status(_ text: String) throws(SystemError) {
        try send("STATUS=" + singleLine(text))
    }

    /// `WATCHDOG=1`: keep-alive ping; send every `watchdogInterval / 2` seconds.
    public static func watchdog() throws(SystemError) {
        try send("WATCHDOG=1")
    }

    /// `STOPPING=1`: shutdown has begun.
    public static func stopping() throws(SystemError) {
        try send("STOPPING=1")
    }

    /// `RELOADING=1` … then `ready()`: a configuration reload (SIGHUP) is under way.
    /// Carries `MONOTONIC_USEC`, which `Type=notify-reload` (systemd 253+) requires.
    public static func reloading() throws(SystemError) {
        let microseconds = UInt64(SystemClock.monotonicSeconds() * 1_000_000)
        try send("RELOADING=1\nMONOTONIC_USEC=\(microseconds)")
    }

    /// The watchdog timeout in seconds when systemd expects pings (`WATCHDOG_USEC` set for
    /// this process), else nil (`sd_watchdog_enabled`).
    public static var watchdogInterval: Double? {
        guard let microseconds = try? Systemd.watchdogMicroseconds() else { return nil }
        return Double(microseconds) / 1_000_000
    }

    /// Whether a service manager listens (`NOTIFY_SOCKET` is set).
    public static var isSupervised: Bool {
        getenv("NOTIFY_SOCKET") != nil
    }

    /// One `sd_notify` datagram. Returns quietly when `NOTIFY_SOCKET` is unset.
    static func send(_ state: String) throws(SystemError) {
        try Systemd.notify(state)
    }

    /// A newline would start another assignment; status text must stay one.
    private static func singleLine(_ text: String) -> String {
        String(text.map { $0 == "\n" || $0 == "\r\n" || $0 == "\r" ? " " : $0 })
    }
}

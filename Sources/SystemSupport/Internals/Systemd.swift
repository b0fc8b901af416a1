// The C contact with libsystemd (sd-daemon.h): one Swift function per call.
internal import CSystemd
import Glibc
import Platform

enum Systemd {
    /// `SD_LISTEN_FDS_START`: the first descriptor systemd passes (3).
    static let firstListenFD: Int32 = SD_LISTEN_FDS_START

    /// `sd_listen_fds(1)`: how many descriptors were passed; clears `LISTEN_FDS`/`LISTEN_PID`.
    static func listenFDCount() throws(SystemError) -> Int {
        let count = sd_listen_fds(1)
        if count < 0 { throw SystemError(errno: -count, operation: "sd_listen_fds") }
        return Int(count)
    }

    /// `sd_is_socket_unix(fd, SOCK_STREAM, listening: 1, any path)`.
    static func isListeningUnixStreamSocket(_ fd: Int32) throws(SystemError) -> Bool {
        let result = sd_is_socket_unix(fd, UnixSocket.streamType, 1, nil, 0)
        if result < 0 { throw SystemError(errno: -result, operation: "sd_is_socket_unix") }
        return result > 0
    }

    /// `sd_notify(0, state)`: false when `NOTIFY_SOCKET` is unset, true when sent.
    @discardableResult
    static func notify(_ state: String) throws(SystemError) -> Bool {
        let result = sd_notify(0, state)
        if result < 0 {
            let socket = getenv("NOTIFY_SOCKET").map { String(cString: $0) }
            throw SystemError(errno: -result, operation: "sd_notify", path: socket)
        }
        return result > 0
    }

    /// `sd_watchdog_enabled(0, &usec)`: the watchdog timeout in microseconds, or nil.
    static func watchdogMicroseconds() throws(SystemError) -> UInt64? {
        var microseconds: UInt64 = 0
        let result = sd_watchdog_enabled(0, &microseconds)
        if result < 0 { throw SystemError(errno: -result, operation: "sd_watchdog_enabled") }
        return result > 0 && microseconds > 0 ? microseconds : nil
    }
}

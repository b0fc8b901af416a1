import Foundation
import Glibc
import Platform
import Testing

@testable import SystemSupport

@Suite("Log")
struct LogTests {
    @Test("each line gets the sd-daemon priority prefix")
    func format() {
        #expect(String(decoding: Log.format(.error, "disk full"), as: UTF8.self) == "<3>disk full\n")
        #expect(String(decoding: Log.format(.debug, "a\nb"), as: UTF8.self) == "<7>a\n<7>b\n")
        #expect(Log.Level.allCases.map(\.rawValue) == [3, 4, 5, 6, 7])
        #expect(Log.Level.warning < Log.Level.info)
    }

    @Test("the threshold filters, and messages below it are not even built")
    func threshold() {
        let saved = Log.threshold
        defer { Log.threshold = saved }
        Log.threshold = .warning
        #expect(Log.threshold == .warning)
        var built = false
        func expensive() -> String {
            built = true
            return "never"
        }
        Log.debug(expensive())
        #expect(!built)
    }
}

@Suite("SystemdNotify", .serialized)
struct NotifyTests {
    @Test("READY=1 and STATUS reach the NOTIFY_SOCKET datagram socket; unset is a no-op")
    func readyReachesSocket() throws {
        let directory = makeTemporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/notify.sock"
        let fd = try UnixSocket.make(datagram: true)
        defer { close(fd) }
        try UnixSocket.bind(fd, path: path)
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        setenv("NOTIFY_SOCKET", path, 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        #expect(SystemdNotify.isSupervised)
        try SystemdNotify.ready(status: "serving\n3 sessions")
        try SystemdNotify.watchdog()

        func receive() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
        }
        #expect(receive() == "READY=1\nSTATUS=serving 3 sessions")
        #expect(receive() == "WATCHDOG=1")

        unsetenv("NOTIFY_SOCKET")
        #expect(!SystemdNotify.isSupervised)
        try SystemdNotify.stopping()
        #expect(SystemdNotify.watchdogInterval == nil)
    }
}

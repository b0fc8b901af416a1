// Linux-only calls that the toolchain's Glibc module does not export (it is built without
// `_GNU_SOURCE`, and <sys/eventfd.h> / <sys/signalfd.h> are not part of it): reached through
// the static-inline wrappers of the CLinux shim target.
internal import CLinux
import Glibc

enum LinuxExtensions {
    /// `sizeof(struct signalfd_siginfo)`; `ssi_signo` (uint32) is its first field.
    static let signalInfoSize = Int(recd_signalfd_siginfo_size())

    /// `eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)`. The caller owns the returned descriptor.
    static func eventFD() throws(SystemError) -> Int32 {
        let fd = recd_eventfd_nonblocking()
        if fd < 0 { throw SystemError(errno: Glibc.errno, operation: "eventfd") }
        return fd
    }

    /// Adds 1 to an eventfd counter, waking whoever polls it. Any thread; async-signal-safe.
    static func signalEventFD(_ fd: Int32) {
        var one: UInt64 = 1
        // EAGAIN only if the counter would overflow 2^64-2, which still leaves it readable.
        _ = withUnsafeBytes(of: &one) { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    /// Reads (and so resets) an eventfd counter. Returns false if it was already zero.
    @discardableResult
    static func drainEventFD(_ fd: Int32) -> Bool {
        var value: UInt64 = 0
        let count = withUnsafeMutableBytes(of: &value) { Glibc.read(fd, $0.baseAddress, $0.count) }
        return count == MemoryLayout<UInt64>.size
    }

    /// `signalfd(-1, {signals}, SFD_NONBLOCK | SFD_CLOEXEC)`. The caller owns the descriptor.
    static func signalFD(_ signals: [Int32]) throws(SystemError) -> Int32 {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        let fd = recd_signalfd_nonblocking(&set)
        if fd < 0 { throw SystemError(errno: Glibc.errno, operation: "signalfd") }
        return fd
    }

    /// Reads every pending `signalfd_siginfo` and returns their signal numbers.
    static func readSignals(_ fd: Int32) -> [Int32] {
        var signals: [Int32] = []
        var record = [UInt8](repeating: 0, count: signalInfoSize)
        while true {
            let count = record.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            guard count == signalInfoSize else { return signals }
            let signo = record.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
            signals.append(Int32(bitPattern: signo))
        }
    }
}

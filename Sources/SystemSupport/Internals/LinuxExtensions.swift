// Linux-only calls that the toolchain's Glibc module does not export (it is built without
// `_GNU_SOURCE`, and <sys/eventfd.h> / <sys/signalfd.h> are not part of it).
//
// They are looked up once in the already-loaded libc with `dlsym` and called through a
// `@convention(c)` function type, which is the C calling convention, so this is sound as
// long as the prototypes below match glibc's (they are fixed Linux ABI). A `CLinux` shim
// target with static-inline wrappers would be the tidier home; until one exists, this file
// is the only place that knows.
import Glibc

enum LinuxExtensions {
    /// `int eventfd(unsigned int initval, int flags)`.
    private typealias EventFDFunction = @convention(c) (UInt32, Int32) -> Int32
    /// `int signalfd(int fd, const sigset_t *mask, int flags)`.
    private typealias SignalFDFunction = @convention(c) (Int32, UnsafePointer<sigset_t>?, Int32) -> Int32

    /// `EFD_NONBLOCK` / `SFD_NONBLOCK` are defined as `O_NONBLOCK`, `*_CLOEXEC` as `O_CLOEXEC`.
    private static let nonBlockingCloseOnExec = O_NONBLOCK | O_CLOEXEC

    /// `sizeof(struct signalfd_siginfo)`; `ssi_signo` (uint32) is its first field.
    static let signalInfoSize = 128

    private static func lookUp(_ name: String) -> UnsafeMutableRawPointer? {
        // A nil handle is RTLD_DEFAULT: search the objects already loaded, libc among them.
        dlsym(nil, name)
    }

    /// `eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)`. The caller owns the returned descriptor.
    static func eventFD() throws(SystemError) -> Int32 {
        guard let symbol = lookUp("eventfd") else {
            throw SystemError(errno: ENOSYS, operation: "dlsym(eventfd)")
        }
        let function = unsafeBitCast(symbol, to: EventFDFunction.self)
        let fd = function(0, nonBlockingCloseOnExec)
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
        guard let symbol = lookUp("signalfd") else {
            throw SystemError(errno: ENOSYS, operation: "dlsym(signalfd)")
        }
        let function = unsafeBitCast(symbol, to: SignalFDFunction.self)
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        let fd = function(-1, &set, nonBlockingCloseOnExec)
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

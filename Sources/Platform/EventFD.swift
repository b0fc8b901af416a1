// Waking a poll loop from another thread: an eventfd.

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

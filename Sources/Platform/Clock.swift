// The clocks: the monotonic one for intervals and deadlines, the real-time one for wall-clock
// instants, UTC calendar conversion, and sleeping.

/// The system's clocks. Any thread.
public enum SystemClock {
    /// `CLOCK_MONOTONIC` in seconds: for intervals, timeouts and uptime (never jumps).
    public static func monotonicSeconds() -> Double {
        Double(Syscall.monotonicNanoseconds()) / 1_000_000_000
    }

    /// `CLOCK_REALTIME` in nanoseconds since 1970-01-01T00:00:00Z: the wall clock.
    public static func realtimeNanoseconds() -> Int64 {
        Syscall.realtimeNanoseconds()
    }

    /// `CLOCK_REALTIME` less `CLOCK_MONOTONIC`, nanoseconds: constant while the wall clock runs
    /// freely or is slewed (both slew alike); it moves by the size of a step of the wall clock
    /// (settimeofday, an NTP or chrony step).
    ///
    /// The two clocks cannot be read at once: the wall clock is read between two readings of
    /// the monotonic one and set against their middle. A thread preempted between the readings
    /// (a busy machine: real-time audio threads take the core for milliseconds) would see a
    /// step that never happened, so a bracket wider than `offsetBracketNanoseconds` is read
    /// again, up to four times, and the narrowest is used.
    public static func wallClockOffsetNanoseconds() -> Int64 {
        var best: (offset: Int64, width: Int64) = (0, .max)
        for _ in 0..<4 {
            let before = Syscall.monotonicNanoseconds()
            let wall = Syscall.realtimeNanoseconds()
            let after = Syscall.monotonicNanoseconds()
            let width = after &- before
            if width < best.width { best = (wall &- (before &+ width / 2), width) }
            if width <= offsetBracketNanoseconds { break }
        }
        return best.offset
    }

    /// The widest bracket of monotonic readings around a wall-clock reading that
    /// `wallClockOffsetNanoseconds` takes without reading again.
    public static let offsetBracketNanoseconds: Int64 = 100_000

    /// Sleeps the calling thread for `seconds` (nothing for 0 or less), continuing after
    /// signals until the whole time has passed.
    public static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        let whole = Int(seconds)
        Syscall.nanosleep(seconds: whole, nanoseconds: Int((seconds - Double(whole)) * 1e9))
    }

    /// The UTC calendar time of `secondsSinceEpoch` (`gmtime_r`).
    public static func utcCalendar(secondsSinceEpoch: Int64) -> CalendarParts {
        Syscall.gmtime(secondsSinceEpoch)
    }

    /// Seconds since the epoch of a UTC calendar time (`timegm`; out-of-range fields roll
    /// over, February 30 being March 2).
    public static func secondsSinceEpoch(utc parts: CalendarParts) -> Int64 {
        Syscall.timegm(parts)
    }
}

/// How good the wall clock is, as the kernel's clock discipline says (`adjtimex`, read only):
/// whether NTP, chrony or systemd-timesyncd keep it synchronised, and the error bounds they
/// set. A plain value: any thread.
public struct ClockSynchronization: Hashable, Sendable {
    /// False when the kernel marks the clock unsynchronised (`STA_UNSYNC`, or `TIME_ERROR`):
    /// nothing disciplines it, or its discipline lost track.
    public var synchronized: Bool
    /// The estimated and the maximum error, microseconds (`esterror`, `maxerror`; the kernel
    /// lets `maxerror` grow by 500 µs a second while nothing refreshes it, up to 16 s).
    public var estimatedErrorMicroseconds: Int
    public var maximumErrorMicroseconds: Int

    public init(synchronized: Bool, estimatedErrorMicroseconds: Int, maximumErrorMicroseconds: Int) {
        self.synchronized = synchronized
        self.estimatedErrorMicroseconds = estimatedErrorMicroseconds
        self.maximumErrorMicroseconds = maximumErrorMicroseconds
    }

    /// The kernel's view now (a few µs); nil when the call fails (it does not on Linux).
    public static func current() -> ClockSynchronization? {
        guard case .success(let read) = Syscall.adjtimexRead() else { return nil }
        return ClockSynchronization(
            synchronized: !read.unsynchronized, estimatedErrorMicroseconds: read.esterror,
            maximumErrorMicroseconds: read.maxerror)
    }
}

/// A UTC calendar time, as `gmtime_r` and `timegm` see it.
public struct CalendarParts: Hashable, Sendable {
    public var year: Int
    /// 1...12.
    public var month: Int
    /// 1...31.
    public var day: Int
    public var hour: Int
    public var minute: Int
    public var second: Int

    public init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.second = second
    }
}

/// How long one thread has stood runnable but waiting for a CPU, from its
/// `/proc/thread-self/schedstat` (the second field of the kernel's per-thread scheduler
/// statistics): what a busy machine adds to the thread's wall-clock time, not its own work or
/// waits. The file is opened once, by the first reading, on the thread it then describes; each
/// reading after that is one `pread`. Use it on that thread only.
public final class ThreadRunQueueClock {
    private var file: OwnedFile?
    private var opened = false

    public init() {}

    /// Seconds waited for a CPU so far; nil where the kernel keeps no such statistics.
    public func waitedSeconds() -> Double? {
        if !opened {
            opened = true
            file = try? OwnedFile("/proc/thread-self/schedstat", .readOnly)
        }
        guard let bytes = try? file?.read(count: 128, at: 0) else { return nil }
        let fields = bytes.split(separator: UInt8(ascii: " "))
        guard fields.count >= 2, let waited = UInt64(String(decoding: fields[1], as: UTF8.self)) else { return nil }
        return Double(waited) / 1_000_000_000
    }
}

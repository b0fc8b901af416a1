// Syscall: clocks, sleeping and calendar conversion. The folder's rules are at the top of
// Syscalls.swift.
internal import CLinux
import Glibc

extension Syscall {
    /// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds.
    static func monotonicNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// `clock_gettime(CLOCK_REALTIME)` in nanoseconds since the epoch.
    static func realtimeNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// `adjtimex(2)` reading only (`modes = 0`, allowed to any user): whether the kernel marks
    /// the clock unsynchronised (`STA_UNSYNC` in `status`, or the call's `TIME_ERROR` state),
    /// and its estimated and maximum error in microseconds (`esterror`, `maxerror`).
    static func adjtimexRead() -> Result<(unsynchronized: Bool, esterror: Int, maxerror: Int), Errno> {
        var buffer = timex()
        buffer.modes = 0
        let state = adjtimex(&buffer)
        guard state >= 0 else { return .failure(Errno(rawValue: Glibc.errno)) }
        let unsynchronized = buffer.status & Int32(STA_UNSYNC) != 0 || state == TIME_ERROR
        return .success((unsynchronized, Int(buffer.esterror), Int(buffer.maxerror)))
    }

    /// `nanosleep(2)`, continued after signals until the whole time has passed.
    static func nanosleep(seconds: Int, nanoseconds: Int) {
        var request = timespec(tv_sec: seconds, tv_nsec: nanoseconds)
        var remaining = timespec()
        while Glibc.nanosleep(&request, &remaining) != 0 && Glibc.errno == EINTR { request = remaining }
    }

    /// `gmtime_r(3)`: (year, month 1...12, day, hour, minute, second) in UTC.
    static func gmtime(_ secondsSinceEpoch: Int64) -> CalendarParts {
        var seconds = time_t(secondsSinceEpoch)
        var broken = tm()
        gmtime_r(&seconds, &broken)
        return CalendarParts(
            year: Int(broken.tm_year) + 1900, month: Int(broken.tm_mon) + 1, day: Int(broken.tm_mday),
            hour: Int(broken.tm_hour), minute: Int(broken.tm_min), second: Int(broken.tm_sec))
    }

    /// `timegm(3)`: seconds since the epoch of a UTC calendar time (out-of-range fields roll
    /// over, as C does).
    static func timegm(_ parts: CalendarParts) -> Int64 {
        var broken = tm()
        broken.tm_year = Int32(parts.year - 1900)
        broken.tm_mon = Int32(parts.month - 1)
        broken.tm_mday = Int32(parts.day)
        broken.tm_hour = Int32(parts.hour)
        broken.tm_min = Int32(parts.minute)
        broken.tm_sec = Int32(parts.second)
        return Int64(Glibc.timegm(&broken))
    }
}

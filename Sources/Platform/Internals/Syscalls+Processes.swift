// Syscall: users and groups, the process, signals and wake-ups, child processes. The folder's
// rules are at the top of Syscalls.swift.
internal import CLinux
import Glibc

extension Syscall {
    // MARK: Users and the process

    /// `getpid(2)`.
    static func processID() -> Int32 { getpid() }

    /// `getuid(2)`.
    static func userID() -> UInt32 { getuid() }

    /// `getpwuid_r(3)`: the user name of `uid`, nil without a passwd entry.
    static func userName(_ uid: UInt32) -> String? {
        var record = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var scratch = [CChar](repeating: 0, count: 16 * 1024)
        return scratch.withUnsafeMutableBufferPointer { buffer -> String? in
            let status = getpwuid_r(uid, &record, buffer.baseAddress!, buffer.count, &result)
            guard status == 0, result != nil, let name = record.pw_name else { return nil }
            return String(cString: name)
        }
    }

    /// `getpwuid_r(3)` or `getpwnam_r(3)`: a user's name, uid and primary gid, nil without a
    /// passwd entry.
    static func userEntry(uid: UInt32?, name: String?) -> (name: String, uid: UInt32, gid: UInt32)? {
        var record = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var scratch = [CChar](repeating: 0, count: 16 * 1024)
        return scratch.withUnsafeMutableBufferPointer { buffer -> (String, UInt32, UInt32)? in
            let status: Int32
            if let uid {
                status = getpwuid_r(uid, &record, buffer.baseAddress!, buffer.count, &result)
            } else if let name {
                status = getpwnam_r(name, &record, buffer.baseAddress!, buffer.count, &result)
            } else {
                return nil
            }
            guard status == 0, result != nil, let found = record.pw_name else { return nil }
            return (String(cString: found), record.pw_uid, record.pw_gid)
        }
    }

    /// `memchr(3)`: the offset of the first `byte` in `bytes`, nil when there is none.
    static func firstOffset(of byte: UInt8, in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress, let found = memchr(base, Int32(byte), bytes.count) else { return nil }
        return UnsafeRawPointer(found) - base
    }

    /// `getgrouplist(3)`: nil when `capacity` is too small (then `wanted` holds the size needed).
    static func groupList(_ user: String, _ gid: UInt32, capacity: Int32, wanted: inout Int32) -> [UInt32]? {
        var groups = [gid_t](repeating: 0, count: Int(capacity))
        wanted = capacity
        guard getgrouplist(user, gid, &groups, &wanted) >= 0 else { return nil }
        return Array(groups.prefix(Int(wanted)))
    }

    /// `getgrnam(3)`: the gid of group `name`, nil when there is none.
    static func groupID(_ name: String) -> UInt32? {
        getgrnam(name).map { $0.pointee.gr_gid }
    }

    // MARK: Signals and wake-ups

    /// `pthread_sigmask(SIG_BLOCK or SIG_UNBLOCK, signals)` for the calling thread.
    static func changeSignalMask(block: Bool, _ signals: [Int32]) -> Result<Void, Errno> {
        var set = signalSet(signals)
        // pthread_sigmask returns the error number instead of setting errno.
        let code = pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, nil)
        return code == 0 ? .success(()) : .failure(Errno(rawValue: code))
    }

    /// `signal(signo, SIG_IGN)`.
    static func ignoreSignal(_ signo: Int32) {
        _ = Glibc.signal(signo, SIG_IGN)
    }

    /// `sigtimedwait(2)`: the first of `signals` pending within `seconds`, nil on timeout.
    static func waitForSignal(_ signals: [Int32], seconds: Double) -> Int32? {
        var set = signalSet(signals)
        var timeout = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        let received = sigtimedwait(&set, nil, &timeout)
        return received > 0 ? received : nil
    }

    private static func signalSet(_ signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        return set
    }

    /// `eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)`. The caller owns the returned descriptor.
    static func eventfd() -> Result<Int32, Errno> {
        valueOrErrno(recd_eventfd_nonblocking())
    }

    /// `signalfd(-1, signals, SFD_NONBLOCK | SFD_CLOEXEC)`. The caller owns the descriptor.
    static func signalfd(_ signals: [Int32]) -> Result<Int32, Errno> {
        var set = signalSet(signals)
        return valueOrErrno(recd_signalfd_nonblocking(&set))
    }

    /// `sizeof(struct signalfd_siginfo)`; `ssi_signo` (uint32) is its first field.
    static let signalInfoSize = Int(recd_signalfd_siginfo_size())

    // MARK: Processes

    /// `posix_spawn(3)` through `recd_spawn`: the child's pid, or the error number. `output`: the
    /// descriptor the child's stdout goes to (-1: onto its stderr).
    static func spawn(
        _ path: String, arguments: [String], environment: [String], output: Int32 = -1
    ) -> Result<Int32, Errno> {
        func cStrings(_ strings: [String]) -> [UnsafeMutablePointer<CChar>?] { strings.map { strdup($0) } + [nil] }
        let argv = cStrings([path] + arguments)
        let envp = cStrings(environment)
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let result = recd_spawn(&pid, path, argv, envp, output)
        return result == 0 ? .success(pid) : .failure(Errno(rawValue: result))
    }

    /// `memfd_create(2)` (close-on-exec): a new descriptor, or errno.
    static func memoryFile(_ name: String) -> Result<Int32, Errno> {
        let descriptor = recd_memfd(name)
        return descriptor >= 0 ? .success(descriptor) : .failure(Errno(rawValue: Glibc.errno))
    }

    /// `waitpid(2)`: nil while the child runs (`nohang`), else how it ended (`exited`: its
    /// exit status; else the signal that ended it).
    static func waitChild(_ pid: Int32, nohang: Bool) -> Result<(exited: Bool, code: Int32)?, Errno> {
        var exited: Int32 = 0
        var code: Int32 = 0
        let result = recd_wait_child(pid, nohang ? 1 : 0, &exited, &code)
        if result < 0 { return .failure(Errno(rawValue: Glibc.errno)) }
        return .success(result == 0 ? nil : (exited != 0, code))
    }

    /// `kill(-group, signal)`.
    static func killGroup(_ group: Int32, _ signal: Int32) -> Result<Void, Errno> {
        nothingOrErrno(recd_kill_group(group, signal))
    }
}

// Syscall: pthreads (create, join, detach, identity, name, priority). The folder's rules are
// at the top of Syscalls.swift.
internal import CLinux
import Glibc

/// A `pthread_t`, for the files above this folder.
struct ThreadHandle: Sendable {
    let thread: pthread_t
}

extension Syscall {
    /// `pthread_create(3)` running `start(context)`. Returns the error number (pthreads do not
    /// set `errno`).
    static func pthreadCreate(
        _ start: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?,
        _ context: UnsafeMutableRawPointer
    ) -> Result<ThreadHandle, Errno> {
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, start, context)
        return result == 0 ? .success(ThreadHandle(thread: thread)) : .failure(Errno(rawValue: result))
    }

    /// `pthread_join(3)`.
    static func pthreadJoin(_ handle: ThreadHandle) {
        _ = pthread_join(handle.thread, nil)
    }

    /// `pthread_detach(3)`.
    static func pthreadDetach(_ handle: ThreadHandle) {
        _ = pthread_detach(handle.thread)
    }

    /// `pthread_equal(thread, pthread_self())`.
    static func isCurrentThread(_ handle: ThreadHandle) -> Bool {
        pthread_equal(handle.thread, pthread_self()) != 0
    }

    /// `pthread_self(3)`.
    static func currentThread() -> ThreadHandle { ThreadHandle(thread: pthread_self()) }

    /// `pthread_equal(3)`.
    static func sameThread(_ a: ThreadHandle, _ b: ThreadHandle) -> Bool {
        pthread_equal(a.thread, b.thread) != 0
    }

    /// `pthread_setname_np(pthread_self())`: at most 15 bytes are kept.
    static func nameCurrentThread(_ name: String) {
        _ = recd_name_current_thread(String(decoding: name.utf8.prefix(15), as: UTF8.self))
    }

    /// `setpriority(PRIO_PROCESS, gettid())`: the calling thread `increment` steps nicer.
    static func reniceCurrentThread(_ increment: Int32) -> Result<Void, Errno> {
        nothingOrErrno(recd_renice_current_thread(increment))
    }
}

extension Syscall {
    /// CPUID and XGETBV (`recd_cpu_x86_64_v3`): whether x86-64-v3 code may run here.
    static func cpuRunsX86_64v3() -> Bool { recd_cpu_x86_64_v3() != 0 }
}

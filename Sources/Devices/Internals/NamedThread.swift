// A named POSIX thread for one role of this module ("alsa monitor").

import Glibc

/// A joinable thread with a name (`top`, `ps -L` and gdb show it; Linux allows 15 bytes).
///
/// Owns the pthread until `join()`; one never joined is detached in `deinit` so it does not
/// leak. `@unchecked Sendable`: `join` is called once, by whoever stops the role (under the
/// owner's lock), and `thread` is not touched otherwise.
final class NamedThread: @unchecked Sendable {
    private var thread: pthread_t?

    /// Starts `body` on a new thread called `name`.
    init(name: String, body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(ThreadBody(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                let box = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
                NamedThread.nameCurrentThread(box.name)
                box.body()
                return nil
            }, box)
        // No thread means the process is out of resources: nothing this module can recover.
        precondition(result == 0, "pthread_create failed: \(result)")
        self.thread = thread
    }

    deinit {
        if let thread { pthread_detach(thread) }
    }

    /// True when called on this thread.
    var isCurrent: Bool {
        guard let thread else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    /// Waits for the body to return. From the thread itself (a callback that stops its own
    /// source) it cannot wait, so the thread is detached and cleans up when it returns.
    func join() {
        guard let thread else { return }
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
        self.thread = nil
    }

    /// Names the calling thread, through /proc: pthread_setname_np is declared only under
    /// _GNU_SOURCE and does not reach Swift.
    static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }  // no /proc: the thread keeps its inherited name
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

private final class ThreadBody: Sendable {
    let name: String
    let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}

// The one thread type of the package: a joinable POSIX thread named by its role (archiver,
// player feeder, alsa monitor, writer), as `top -H`, `ps -L` and gdb show it.

/// A joinable thread with a name (Linux keeps 15 bytes), optionally nicer than the process.
///
/// Owns its pthread until `join()`; one never joined is detached in `deinit`, so it does not
/// leak. `@unchecked Sendable`: `join` is called once, by whoever stops the role (under that
/// owner's lock), and `thread` is not touched otherwise.
public final class NamedThread: @unchecked Sendable {
    private var thread: ThreadHandle?

    /// Starts `body` on a new thread called `name`, `niceIncrement` steps nicer than the
    /// process (best effort: a thread that stays at the process's priority still works).
    /// `body` is handed over to the new thread: its captures belong to that thread from now
    /// on. Throws when the system has no thread to give (`EAGAIN`: out of resources).
    public init(name: String, niceIncrement: Int32 = 0, body: sending @escaping () -> Void) throws(SystemError) {
        let start = Unmanaged.passRetained(ThreadStart(name: name, niceIncrement: niceIncrement, body: body))
        let created = Syscall.pthreadCreate(
            { context in
                let start = Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue()
                Syscall.nameCurrentThread(start.name)
                if start.niceIncrement > 0 { _ = Syscall.reniceCurrentThread(start.niceIncrement) }
                start.body()
                return nil
            }, start.toOpaque())
        switch created {
        case .success(let thread):
            self.thread = thread
        case .failure(let errno):
            start.release()
            throw SystemError(errno, operation: "pthread_create", path: name)
        }
    }

    deinit {
        if let thread { Syscall.pthreadDetach(thread) }
    }

    /// True when called on this thread.
    public var isCurrent: Bool {
        guard let thread else { return false }
        return Syscall.isCurrentThread(thread)
    }

    /// Waits for the body to return. From the thread itself (a callback that stops its own
    /// role) it cannot wait, so the thread is detached and cleans up when it returns. Safe to
    /// call more than once.
    public func join() {
        guard let thread else { return }
        if Syscall.isCurrentThread(thread) {
            Syscall.pthreadDetach(thread)
        } else {
            Syscall.pthreadJoin(thread)
        }
        self.thread = nil
    }
}

/// The body of a thread, kept alive until the thread has taken it.
private final class ThreadStart {
    let name: String
    let niceIncrement: Int32
    let body: () -> Void

    init(name: String, niceIncrement: Int32, body: @escaping () -> Void) {
        self.name = name
        self.niceIncrement = niceIncrement
        self.body = body
    }
}

/// Which thread this is, for "is this the thread that owns X?" checks. A plain value.
public struct ThreadID: Equatable, Sendable {
    private let handle: ThreadHandle

    /// The calling thread.
    public static var current: ThreadID { ThreadID(handle: Syscall.currentThread()) }

    public static func == (lhs: ThreadID, rhs: ThreadID) -> Bool {
        Syscall.sameThread(lhs.handle, rhs.handle)
    }
}

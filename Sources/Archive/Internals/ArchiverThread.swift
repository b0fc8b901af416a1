// A named POSIX thread for the archiver role (and the daemon's worker threads), and the
// lock-protected state the archiver shares with the control thread.
//
// Threads: a `NamedThread` is started and joined by its owner's thread (the control thread),
// never joined from itself; `RecorderControl` may be used from any thread (a mutex).

internal import CLinux
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

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

/// A joinable pthread running `body`, named `name` (ps/top/gdb show it), `niceIncrement`
/// steps nicer than the process. Public for the daemon's worker thread, so that the two share
/// one helper (until a Platform module owns named threads).
public struct NamedThread: Sendable {
    private let handle: pthread_t

    public init(name: String, niceIncrement: Int32 = 0, body: @escaping () -> Void) throws(ArchiveError) {
        let start = Unmanaged.passRetained(ThreadStart(name: name, niceIncrement: niceIncrement, body: body))
            .toOpaque()
        var handle = pthread_t()
        let result = pthread_create(
            &handle, nil,
            { raw in
                let start = Unmanaged<ThreadStart>.fromOpaque(raw!).takeRetainedValue()
                _ = recd_name_current_thread(String(start.name.prefix(15)))
                // Best effort: a thread that stays at the process's priority still works.
                if start.niceIncrement > 0 { _ = recd_renice_current_thread(start.niceIncrement) }
                start.body()
                return nil
            }, start)
        guard result == 0 else {
            Unmanaged<ThreadStart>.fromOpaque(start).release()
            throw .system(operation: "pthread_create", path: name, errno: SystemErrno(result))
        }
        self.handle = handle
    }

    /// Waits for the thread to end. Once, and not from the thread itself.
    public func join() { pthread_join(handle, nil) }
}

/// What the control thread and the archiver thread share: the stop request, the event queue
/// and the set of open files. Every access takes the mutex; nothing blocks while holding it.
final class RecorderControl: Sendable {
    private struct State {
        var stopReason: EndReason?
        var events: [RecorderEvent] = []
        var openPaths: Set<String> = []
        var running = false
    }

    private let state = Mutex(State())
    private let wake: @Sendable () -> Void

    init(wake: @escaping @Sendable () -> Void) { self.wake = wake }

    var stopReason: EndReason? { state.withLock { $0.stopReason } }

    func requestStop(_ reason: EndReason) {
        state.withLock { if $0.stopReason == nil { $0.stopReason = reason } }
    }

    func post(_ event: RecorderEvent) {
        state.withLock { $0.events.append(event) }
        wake()
    }

    func drainEvents() -> [RecorderEvent] {
        state.withLock {
            let events = $0.events
            $0.events.removeAll()
            return events
        }
    }

    var openPaths: Set<String> { state.withLock { $0.openPaths } }

    func opened(_ paths: [String]) { state.withLock { $0.openPaths.formUnion(paths) } }
    func closed(_ paths: [String]) { state.withLock { $0.openPaths.subtract(paths) } }

    var isRunning: Bool { state.withLock { $0.running } }
    func setRunning(_ running: Bool) { state.withLock { $0.running = running } }
}

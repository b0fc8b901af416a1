// A named POSIX thread for a feeder role, and the seam between a feeder and the player it
// fills.

import AudioEngine
import Glibc

/// A joinable thread with a name (`top`, `ps -L` and gdb show it; Linux allows 15 bytes).
///
/// Owns the pthread until `join()`; a thread that was never joined is detached in `deinit`
/// so it does not leak.
final class FeederThread {
    private var thread: pthread_t?

    /// Starts `body` on a new thread called `name`.
    init(name: String, body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(ThreadBody(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                let box = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
                FeederThread.nameCurrentThread(box.name)
                box.body()
                return nil
            }, box)
        // Failing to make a thread means the process is out of resources: a programmer or
        // configuration error, not a state a feeder can recover from.
        precondition(result == 0, "pthread_create failed: \(result)")
        self.thread = thread
    }

    deinit {
        if let thread { pthread_detach(thread) }
    }

    /// Names the calling thread. Through /proc rather than pthread_setname_np, which glibc
    /// declares only under _GNU_SOURCE and so does not reach Swift.
    static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }  // no /proc: the thread just keeps its inherited name
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Waits for the body to return. Safe to call more than once.
    func join() {
        guard let thread else { return }
        if pthread_equal(thread, pthread_self()) != 0 {
            // The body itself asked (a callback that stops its own player): it cannot wait
            // for itself, so let the thread clean up after itself when it returns.
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
        self.thread = nil
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

/// What a feeder writes into: the producer end of a player's ring. `PlayerHandle` is the real
/// one; tests stand in their own to watch every sample.
///
/// Every member is called on the feeder thread only.
protocol PlayerSink: AnyObject, Sendable {
    /// Interleaved channels per frame.
    var channels: Int { get }
    /// Ring size in frames.
    var capacityFrames: Int { get }
    /// Frames `write` would take now.
    var availableToWrite: Int { get }
    /// Appends whole frames; returns how many it took.
    func write(_ samples: UnsafeBufferPointer<Float>) -> Int
    /// No more frames will come.
    func finish()
    /// False once nobody will read the ring any more.
    var isAttached: Bool { get }
}

extension PlayerHandle: PlayerSink {}

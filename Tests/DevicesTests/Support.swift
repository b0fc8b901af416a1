// Shared helpers for the Devices tests: thread names, collecting
// deliveries from another thread.

import Glibc
import Platform
import Synchronization

@testable import Devices

/// The calling thread's name, from /proc (what `ps -L` shows).
func currentThreadName() -> String {
    let fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 32)
    let count = read(fd, &buffer, buffer.count)
    guard count > 0 else { return "" }
    return String(decoding: buffer[..<count], as: UTF8.self).trimmingSuffix("\n")
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}

/// What a source delivered, and on which threads, collected under a lock.
final class Deliveries: Sendable {
    struct Batch: Sendable {
        var events: [DeviceEvent]
        var thread: pthread_t
        var threadName: String
    }

    private let batches = Mutex<[Batch]>([])

    var deliver: @Sendable ([DeviceEvent]) -> Void {
        { [self] events in
            let batch = Batch(events: events, thread: pthread_self(), threadName: currentThreadName())
            batches.withLock { $0.append(batch) }
        }
    }

    var all: [Batch] { batches.withLock { $0 } }
    var count: Int { batches.withLock { $0.count } }
    var events: [DeviceEvent] { batches.withLock { $0.flatMap(\.events) } }
}

/// A card for scripted events.
func card(_ id: String, _ index: Int, driver: String = "HDA-Intel", longName: String? = nil) -> SoundCard {
    SoundCard(index: index, id: id, name: "\(id) card", longName: longName ?? "\(id) card at \(index)", driver: driver)
}

/// Starts `count` threads running `body(index)` and waits for all of them.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let threads = (0..<count).map { index in try! NamedThread(name: "test pusher \(index)") { body(index) } }
    for thread in threads { thread.join() }
}

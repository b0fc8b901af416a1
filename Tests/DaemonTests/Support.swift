// A test thread standing in for the control thread: it runs what workers deliver, as
// ControlServer.post would.
import Foundation
import Glibc
import Synchronization

@testable import Daemon

/// What the worker delivers, kept until the test thread runs it.
final class Mailbox: Sendable {
    private let posted = Mutex<[@Sendable () -> Void]>([])

    var deliver: SlowRequestWorker.Deliver { { [self] work in posted.withLock { $0.append(work) } } }

    /// Runs what was delivered so far, on the calling thread; how many closures ran.
    @discardableResult
    func run() -> Int {
        let work = posted.withLock { posted in
            defer { posted.removeAll() }
            return posted
        }
        for item in work { item() }
        return work.count
    }

    /// Runs deliveries until `condition` holds (false after `timeout` seconds).
    func run(until condition: () -> Bool, timeout: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline { return false }
            if run() == 0 { usleep(1_000) }
        }
        return true
    }
}

/// A value behind a lock, for closures on both threads.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    var get: Value { value.withLock { $0 } }
    func update(_ body: (inout Value) -> Void) { value.withLock { body(&$0) } }
}

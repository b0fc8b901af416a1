// Waiting for something another process or thread does, with a time limit.
import Foundation

/// Waits until a condition holds, polling every 20 ms; its last answer after `timeout` seconds.
@discardableResult
public func eventually(timeout: Double = 5, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

// Waiting for something another process or thread does, with a time limit: the one `eventually`
// of every test target (a test waits on a fact it can read, not on a guessed sleep).
import Foundation

/// Waits until a condition holds; its last answer after `timeout` seconds. It polls every
/// millisecond at first, then less often, up to every 20 ms: a fact that comes quickly is seen
/// quickly, a slow one costs the machine little while the test waits for it.
@discardableResult
public func eventually(timeout: Double = 5, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    var pause: useconds_t = 1_000
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        usleep(pause)
        pause = min(pause * 2, 20_000)
    }
    return try condition()
}

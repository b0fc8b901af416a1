// Platform's ThreadRunQueueClock: the control thread's "busy" log lines leave out the time it
// waited for a CPU, read from its own /proc/thread-self/schedstat.
import Foundation
import Platform
import Testing

@Suite("the run-queue clock of a thread")
struct RunQueueClockTests {
    @Test("reads the thread's schedstat: a number that never goes back; a thread crowded by busy ones waits")
    func waits() throws {
        let clock = ThreadRunQueueClock()
        let first = try #require(clock.waitedSeconds(), "no /proc/thread-self/schedstat")
        // Four busy threads on this machine's cores make this one wait for a CPU at times.
        let stop = Date().addingTimeInterval(0.5)
        for _ in 0..<4 { Thread.detachNewThread { while Date() < stop {} } }
        while Date() < stop { usleep(1_000) }
        let second = try #require(clock.waitedSeconds())
        #expect(second >= first)
        #expect(second > first, "500 wake-ups among four busy threads never waited for a CPU")
    }
}

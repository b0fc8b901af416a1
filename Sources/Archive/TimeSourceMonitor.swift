// The time source (chrony, systemd-timesyncd), asked on a thread of its own and kept, so that
// the archiver (each segment's CLOCK_SOURCE) and the control thread (`status.clock`) only read
// a value and never wait for chronyc.

import Platform
import Synchronization

/// Keeps the latest `TimeSource`: asked once at `start`, then every `refreshSeconds` on its
/// "time source" thread. Made by the daemon's composition root, read by recorders and `status`.
/// `current` from any thread (one lock, no I/O); `start` and `stop` by its owner.
public final class TimeSourceMonitor: Sendable {
    /// How often the source is asked again: its name or offset changes slowly, and each ask runs
    /// a program (a few ms).
    public static let defaultRefreshSeconds = 60.0

    private let latest = Mutex<TimeSource?>(nil)
    private let stopping = Atomic<Bool>(false)
    private let thread = Mutex<NamedThread?>(nil)
    private let locations: TimeSource.Locations
    private let refreshSeconds: Double

    public init(
        locations: TimeSource.Locations = TimeSource.Locations(), refreshSeconds: Double = defaultRefreshSeconds
    ) {
        self.locations = locations
        self.refreshSeconds = max(refreshSeconds, 1)
    }

    /// The latest answer; nil before the first one came (the first seconds after `start`).
    public var current: TimeSource? { latest.withLock { $0 } }

    /// Asks now, on the calling thread (a worker's or a test's: it runs programs).
    public func refresh() {
        let source = TimeSource.query(locations)
        latest.withLock { $0 = source }
    }

    /// Starts the thread: it asks at once, then every `refreshSeconds`, until `stop`.
    public func start() throws(SystemError) {
        let started = try NamedThread(name: "time source", niceIncrement: 5) { [self] in
            var nextAsk = 0.0
            while !stopping.load(ordering: .acquiring) {
                let now = SystemClock.monotonicSeconds()
                if now >= nextAsk {
                    refresh()
                    nextAsk = now + refreshSeconds
                }
                // Short naps: `stop` waits at most this long for the thread.
                SystemClock.sleep(seconds: 0.2)
            }
        }
        thread.withLock { $0 = started }
    }

    /// Ends the thread and waits for it (at most one ask, `TimeSource.queryTimeLimit` per program).
    public func stop() {
        stopping.store(true, ordering: .releasing)
        let running = thread.withLock { held -> NamedThread? in
            defer { held = nil }
            return held
        }
        running?.join()
    }
}

/// The same monitor, not an equal value: configurations that share it are equal.
extension TimeSourceMonitor: Hashable {
    public static func == (lhs: TimeSourceMonitor, rhs: TimeSourceMonitor) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

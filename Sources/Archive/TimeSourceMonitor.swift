// The time source (chrony, systemd-timesyncd) as last asked, kept so that the archiver (each
// segment's CLOCK_SOURCE, a stage's) and the control thread (`status.clock`) only read
// a value and never wait for chronyc. Asking runs programs: whoever owns the monitor runs
// `refresh` as a job on a worker when `claimRefresh` says it is due (the daemon's slow worker,
// from its tick); the monitor has no thread of its own.

import Platform
import Synchronization

/// Keeps the latest `TimeSource`, asked again every `refreshSeconds`. Made by the daemon's
/// composition root, read by recorders and `status`. `current` and `claimRefresh` from any
/// thread (one lock, no I/O); `refresh` on a worker's thread (it runs programs).
public final class TimeSourceMonitor: Sendable {
    /// How often the source is asked again: its name or offset changes slowly, and each ask runs
    /// a program (a few ms).
    public static let defaultRefreshSeconds = 60.0

    private struct State {
        var latest: TimeSource?
        /// Monotonic seconds when the next ask is due (0: at once).
        var nextAsk = 0.0
    }

    private let state = Mutex(State())
    private let locations: TimeSource.Locations
    private let refreshSeconds: Double

    public init(
        locations: TimeSource.Locations = TimeSource.Locations(), refreshSeconds: Double = defaultRefreshSeconds
    ) {
        self.locations = locations
        self.refreshSeconds = max(refreshSeconds, 1)
    }

    /// The latest answer; nil before the first one came (the first seconds after recd starts).
    public var current: TimeSource? { state.withLock { $0.latest } }

    /// Whether an ask is due at monotonic second `now` (the first at once); when it is, the next
    /// is due `refreshSeconds` later, so one caller runs one `refresh` per period.
    public func claimRefresh(now: Double) -> Bool {
        state.withLock {
            guard now >= $0.nextAsk else { return false }
            $0.nextAsk = now + refreshSeconds
            return true
        }
    }

    /// Asks now, on the calling thread (a worker's or a test's: it runs programs, each for at
    /// most `TimeSource.queryTimeLimit`).
    public func refresh() {
        let source = TimeSource.query(locations)
        state.withLock { $0.latest = source }
    }
}

// Who keeps the clock, asked again once a minute as a job on the slow worker (chronyc and
// timedatectl are programs: never on the control thread, and no thread of their own). The
// monitor keeps the answer for each segment's CLOCK_SOURCE and `status.clock.source`.

import Archive

/// The time source's periodic asking, from the coordinator's tick. Control thread.
final class TimeSourceRefresh: DaemonFeature {
    let monitor: TimeSourceMonitor
    private let worker: SlowRequestWorker

    init(monitor: TimeSourceMonitor, worker: SlowRequestWorker) {
        self.monitor = monitor
        self.worker = worker
    }

    func tick(now: Double) {
        guard monitor.claimRefresh(now: now) else { return }
        let monitor = monitor
        worker.submit(for: nil, { _ in monitor.refresh() }, completion: { _ in })
    }
}

// The time source as a feature: who keeps the clock (chrony, systemd-timesyncd), for each
// segment's CLOCK_SOURCE and `status.clock`. Archive's TimeSourceMonitor keeps the latest
// answer; this type owns it and asks again once a minute as a job on the slow worker (chronyc
// and timedatectl are programs: never on the control thread, and no thread of their own).
// Segments and `status` read the monitor without waiting.
//
// Threads: the control thread; the asking on the slow worker.
import Archive
import ControlProtocol
import Platform
import SystemSupport

/// The time source's owner in the daemon.
final class TimeSourceFeature: SegmentFeature, DaemonFeature {
    private let monitor: TimeSourceMonitor
    private let worker: SlowRequestWorker

    init(monitor: TimeSourceMonitor, worker: SlowRequestWorker) {
        self.monitor = monitor
        self.worker = worker
    }

    /// The next ask when it is due (the first at once): one job on the slow worker.
    func tick(now: Double) {
        guard monitor.claimRefresh(now: now) else { return }
        let monitor = monitor
        worker.submit(for: nil, { _ in monitor.refresh() }, completion: { _ in })
    }

    func configure(
        _ configuration: inout RecorderConfiguration, inputs: inout SegmentInputs, for spec: RecorderSpec
    ) {
        inputs.timeSource = monitor
    }

    /// `status.clock`: adjtimex, reading only (a few µs, fine on the control thread); the source
    /// as last heard on the worker (a lock, never chronyc here), said explicitly
    /// before its first answer: a reply is never without a key (docs/protocol.md).
    func contribute(to status: inout StatusInfo) {
        let source = monitor.current?.description ?? StatusInfo.Clock.sourcePending
        status.clock = ClockSynchronization.current().map {
            StatusInfo.Clock(
                synchronized: $0.synchronized, estimatedErrorSeconds: Double($0.estimatedErrorMicroseconds) / 1e6,
                maximumErrorSeconds: Double($0.maximumErrorMicroseconds) / 1e6, source: source)
        }
    }
}

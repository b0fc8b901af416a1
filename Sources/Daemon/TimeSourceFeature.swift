// The time source as a feature: who keeps the clock (chrony, systemd-timesyncd), for each
// segment's CLOCK_SOURCE and `status.clock`. The monitor asks on its own thread and is read
// here without waiting (Archive's TimeSourceMonitor); this type owns it: started by the
// composition root, stopped with the features at shutdown.
//
// Threads: the control thread.
import Archive
import ControlProtocol
import Platform
import SystemSupport

/// The time source's owner in the daemon.
final class TimeSourceFeature: SegmentFeature, DaemonFeature {
    /// Nil when its thread could not start: segments then go without CLOCK_SOURCE.
    private let monitor: TimeSourceMonitor?

    init(monitor: TimeSourceMonitor?) { self.monitor = monitor }

    /// A monitor started now, or none (logged) when it has no thread to ask on.
    static func started() -> TimeSourceFeature {
        let monitor = TimeSourceMonitor()
        do {
            try monitor.start()
            return TimeSourceFeature(monitor: monitor)
        } catch {
            Log.warning("segments go without CLOCK_SOURCE: no thread to ask chrony or timesyncd on (\(error))")
            return TimeSourceFeature(monitor: nil)
        }
    }

    func configure(_ configuration: inout RecorderConfiguration, for spec: RecorderSpec) {
        configuration.timeSource = monitor
    }

    /// `status.clock`: adjtimex, reading only (a few µs, fine on the control thread); the source
    /// as the monitor's thread last heard it (a lock, never chronyc here), said explicitly
    /// before its first answer: a reply is never without a key (docs/protocol.md).
    func contribute(to status: inout StatusInfo) {
        let source =
            monitor.map { $0.current?.description ?? StatusInfo.Clock.sourcePending }
            ?? StatusInfo.Clock.sourceUnknown
        status.clock = ClockSynchronization.current().map {
            StatusInfo.Clock(
                synchronized: $0.synchronized, estimatedErrorSeconds: Double($0.estimatedErrorMicroseconds) / 1e6,
                maximumErrorSeconds: Double($0.maximumErrorMicroseconds) / 1e6, source: source)
        }
    }

    func stop() { monitor?.stop() }
}

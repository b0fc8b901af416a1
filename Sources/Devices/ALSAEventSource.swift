// The real device event source: a ControlMonitor on its own thread, "alsa monitor".

import Platform
import Synchronization

/// Device events from ALSA: every card's jack-sense and capture-switch controls, and cards
/// coming and going.
///
/// Threads: `start` and `stop` may be called from any thread (the daemon calls them from its
/// control thread). `start` opens the cards on the caller's thread, so an unusable card is an
/// error there, then hands the `ControlMonitor` to a thread named "alsa monitor", which owns
/// it from then on. That thread polls the cards' control descriptors and a wake-up eventfd, and
/// calls `deliver` with each batch: first the initial state (always, even when empty), then
/// every change. New cards are found by rescanning every `rescanInterval` (hot-plugging shows
/// up on no descriptor recd already has); removed ones as soon as their descriptor reports it.
/// `stop` signals the wake-up eventfd and joins the thread, which closes every card.
public final class ALSAEventSource: DeviceEventSource, Sendable {
    /// How often the list of cards is compared with the cards watched; nil: never (cards
    /// present at `start` are watched until they go, new ones are not noticed).
    public let rescanInterval: Duration?

    private struct Running: Sendable {
        var thread: NamedThread
        /// The wake-up eventfd, owned here: `stop` closes it once the thread has ended.
        var wakeFD: Int32
    }

    private let running = Mutex<Running?>(nil)

    public init(rescanInterval: Duration? = .seconds(2)) {
        self.rescanInterval = rescanInterval
    }

    deinit {
        stop()
    }

    public func start(deliver: @escaping @Sendable ([DeviceEvent]) -> Void) throws {
        try running.withLock { running throws(ALSAError) in
            precondition(running == nil, "ALSAEventSource.start called while it is running; stop it first")
            let monitor = ControlMonitor()
            let initial = try monitor.start()
            let wakeFD: Int32
            do throws(SystemError) {
                wakeFD = try EventFD.make()
            } catch {
                monitor.close()
                throw ALSAError(
                    code: -error.errno.rawValue, operation: "create the alsa monitor's wake-up eventfd",
                    message: error.message)
            }
            let loop = MonitorLoop(
                monitor: monitor, initial: initial, stopFD: wakeFD, rescanInterval: rescanInterval,
                deliver: deliver)
            let thread: NamedThread
            do throws(SystemError) {
                thread = try NamedThread(name: "alsa monitor") { loop.run() }
            } catch {
                monitor.close()
                Descriptor.close(wakeFD)
                throw ALSAError(
                    code: -error.errno.rawValue, operation: "start the alsa monitor thread", message: error.message)
            }
            running = Running(thread: thread, wakeFD: wakeFD)
        }
    }

    public func stop() {
        guard let stopping = running.withLock({ running in running.take() }) else { return }
        EventFD.signal(stopping.wakeFD)
        stopping.thread.join()
        Descriptor.close(stopping.wakeFD)
    }
}

/// The body of the "alsa monitor" thread. `@unchecked Sendable`: `start` builds it and hands
/// it over; from then on only that thread touches it (the monitor is not thread-safe).
private final class MonitorLoop: @unchecked Sendable {
    private let monitor: ControlMonitor
    private let initial: [DeviceEvent]
    private let stopFD: Int32
    private let rescanInterval: Duration?
    private let deliver: @Sendable ([DeviceEvent]) -> Void

    init(
        monitor: ControlMonitor, initial: [DeviceEvent], stopFD: Int32, rescanInterval: Duration?,
        deliver: @escaping @Sendable ([DeviceEvent]) -> Void
    ) {
        self.monitor = monitor
        self.initial = initial
        self.stopFD = stopFD
        self.rescanInterval = rescanInterval
        self.deliver = deliver
    }

    /// "alsa monitor" thread: until the wake-up eventfd is signalled.
    func run() {
        defer { monitor.close() }
        deliver(initial)
        let clock = ContinuousClock()
        var nextRescan = rescanInterval.map { clock.now + $0 }
        while true {
            var descriptors = [PollEntry(descriptor: stopFD, events: .readable)]
            descriptors += monitor.pollDescriptors().map {
                PollEntry(descriptor: $0.fd, events: PollEvents(rawValue: $0.events))
            }
            let timeout = nextRescan.map { Self.milliseconds(until: $0, clock: clock) } ?? -1
            let ready: Int
            do {
                ready = try Descriptor.poll(&descriptors, timeoutMilliseconds: timeout)
            } catch {
                // ENOMEM and the like: worth another try after a pause (a signal counts as 0 ready).
                SystemClock.sleep(seconds: 0.1)
                continue
            }
            if !descriptors[0].returned.isEmpty { return }
            var events: [DeviceEvent] = []
            if ready > 0 {
                var revents: [Int32: Int16] = [:]
                for descriptor in descriptors.dropFirst() where !descriptor.returned.isEmpty {
                    revents[descriptor.descriptor] = descriptor.returned.rawValue
                }
                events += monitor.process(revents: revents)
            }
            if let interval = rescanInterval, let due = nextRescan, clock.now >= due {
                events += monitor.rescan()
                nextRescan = clock.now + interval
            }
            if !events.isEmpty { deliver(events) }
        }
    }

    private static func milliseconds(until deadline: ContinuousClock.Instant, clock: ContinuousClock) -> Int32 {
        let remaining = clock.now.duration(to: deadline)
        guard remaining > .zero else { return 0 }
        let (seconds, attoseconds) = remaining.components
        // Round up, so the wake-up is never early (an early one would just poll again).
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }
}

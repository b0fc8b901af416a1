// The real device event source: a ControlMonitor on its own thread, "alsa monitor".

import Glibc
import Platform
import Synchronization

/// Device events from ALSA: every card's jack-sense and capture-switch controls, and cards
/// coming and going.
///
/// Threads: `start` and `stop` may be called from any thread (the daemon calls them from its
/// control thread). `start` opens the cards on the caller's thread, so an unusable card is an
/// error there, then hands the `ControlMonitor` to a thread named "alsa monitor", which owns
/// it from then on. That thread polls the cards' control descriptors and a wake-up pipe, and
/// calls `deliver` with each batch: first the initial state (always, even when empty), then
/// every change. New cards are found by rescanning every `rescanInterval` (hot-plugging shows
/// up on no descriptor recd already has); removed ones as soon as their descriptor reports it.
/// `stop` writes to the wake-up pipe and joins the thread, which closes every card.
public final class ALSAEventSource: DeviceEventSource, Sendable {
    /// How often the list of cards is compared with the cards watched; nil: never (cards
    /// present at `start` are watched until they go, new ones are not noticed).
    public let rescanInterval: Duration?

    private struct Running: Sendable {
        var thread: NamedThread
        /// Write end of the wake-up pipe; the monitor thread owns the read end.
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
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else {
                let code = errno
                throw ALSAError(
                    code: -code, operation: "create the alsa monitor's wake-up pipe",
                    message: String(cString: strerror(code)))
            }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
            let loop = MonitorLoop(
                monitor: monitor, initial: initial, stopFD: fds[0], rescanInterval: rescanInterval,
                deliver: deliver)
            let thread: NamedThread
            do throws(SystemError) {
                thread = try NamedThread(name: "alsa monitor") { loop.run() }
            } catch {
                monitor.close()
                for fd in fds { close(fd) }
                throw ALSAError(
                    code: -error.errno.rawValue, operation: "start the alsa monitor thread", message: error.message)
            }
            running = Running(thread: thread, wakeFD: fds[1])
        }
    }

    public func stop() {
        guard let stopping = running.withLock({ running in running.take() }) else { return }
        var byte: UInt8 = 1
        _ = write(stopping.wakeFD, &byte, 1)
        stopping.thread.join()
        close(stopping.wakeFD)
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

    /// "alsa monitor" thread: until the wake-up pipe is written to (or its write end closed).
    func run() {
        defer {
            monitor.close()
            close(stopFD)
        }
        deliver(initial)
        let clock = ContinuousClock()
        var nextRescan = rescanInterval.map { clock.now + $0 }
        while true {
            var descriptors = [pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0)]
            descriptors += monitor.pollDescriptors().map { pollfd(fd: $0.fd, events: $0.events, revents: 0) }
            let timeout = nextRescan.map { Self.milliseconds(until: $0, clock: clock) } ?? -1
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0 {
                // EINTR: a signal; anything else (ENOMEM) is worth another try after a pause.
                if errno != EINTR { usleep(100_000) }
                continue
            }
            if descriptors[0].revents != 0 { return }
            var events: [DeviceEvent] = []
            if ready > 0 {
                var revents: [Int32: Int16] = [:]
                for descriptor in descriptors.dropFirst() where descriptor.revents != 0 {
                    revents[descriptor.fd] = descriptor.revents
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

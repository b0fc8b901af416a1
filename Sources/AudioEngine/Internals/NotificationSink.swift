// JACK's notification callbacks. They record what happened and wake the control thread;
// they never act in place (no connecting, no engine changes: JACK forbids server requests
// from its callbacks, and the engine belongs to the control thread).

internal import CJack
import Synchronization

/// Where JACK's callbacks leave their news for the control thread.
///
/// Port registration and connection callbacks come on JACK's notification thread: they may
/// allocate and take `lock` briefly. Xrun, buffer-size, sample-rate and shutdown may come from
/// other JACK threads (shutdown even from the process thread as it dies), so they only touch
/// atomics and preallocated memory. Every callback ends by calling `wake`.
///
/// `@unchecked Sendable`: the mutable state is behind `lock` or atomic; `lostReason` is
/// written once (before `serverLost` is set, released) and read after it is seen (acquired).
final class NotificationSink: @unchecked Sendable {
    private struct Shared {
        var messages: [EngineNotification] = []
        /// Every port name known to exist, to diff against when a port goes away.
        var knownPorts: Set<String> = []
        /// Names of ports registered since we opened, by JACK port id.
        var namesByID: [UInt32: String] = [:]
        /// jack_client_t * as an integer (0: closed); the callbacks use it to look names up.
        var client: UInt = 0
        var xrunsReported = 0
        /// JACK frame time when the latest port disappearance was heard of.
        var lastPortLossFrameTime: UInt32?
        var lastPortLossMicros: UInt64?
    }

    private let lock = Mutex(Shared())
    /// Called after each notification, on whichever JACK thread delivered it.
    let wake: @Sendable () -> Void

    let xruns = Atomic<Int>(0)
    let pendingBufferSize = Atomic<Int>(0)
    let pendingSampleRate = Atomic<Int>(0)
    let serverLost = Atomic<Bool>(false)
    private let lostReported = Atomic<Bool>(false)
    private let lostReason: UnsafeMutablePointer<UInt8>
    private let lostReasonLength = Atomic<Int>(0)
    private let lostStatus = Atomic<UInt32>(0)
    private static let lostReasonCapacity = 256

    init(wake: @escaping @Sendable () -> Void) {
        self.wake = wake
        lostReason = .allocate(capacity: Self.lostReasonCapacity)
        lostReason.initialize(repeating: 0, count: Self.lostReasonCapacity)
    }

    deinit {
        lostReason.deallocate()
    }

    /// Control thread, before activation: which client to look names up on, and the ports
    /// that exist now.
    func attach(client: OpaquePointer, existingPorts: [String]) {
        lock.withLock {
            $0.client = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(client)))
            $0.knownPorts = Set(existingPorts)
        }
    }

    /// Control thread, before jack_client_close.
    func detach() {
        lock.withLock { $0.client = 0 }
    }

    /// Any thread: the JACK frame time at which the latest port disappearance was heard of.
    var lastPortLossFrameTime: UInt32? { lock.withLock { $0.lastPortLossFrameTime } }
    /// Any thread: JACK's microsecond clock (jack_get_time) at the same moment.
    var lastPortLossMicros: UInt64? { lock.withLock { $0.lastPortLossMicros } }

    private var client: OpaquePointer? {
        let bits = lock.withLock { $0.client }
        return OpaquePointer(bitPattern: bits)
    }

    // MARK: Callbacks (JACK threads)

    /// Notification thread. A port's name cannot always be found from its id once it is gone,
    /// so names are remembered on registration, and every change is also checked against a
    /// fresh port list, which catches ports that existed before we opened.
    func portRegistration(id: UInt32, registered: Bool) {
        guard let client else { return }
        var name: String?
        if registered, let port = jack_port_by_id(client, id), let cName = jack_port_name(port) {
            name = String(cString: cName)
        }
        let current = Set(JackClient.portNames(client: client, pattern: nil, flags: 0))
        let heardAt = jack_frame_time(client)
        let heardAtMicros = jack_get_time()
        lock.withLock { shared in
            let before = shared.knownPorts
            if registered {
                if let name {
                    shared.namesByID[id] = name
                    if !shared.knownPorts.contains(name) {
                        shared.knownPorts.insert(name)
                        shared.messages.append(.portRegistered(name))
                    }
                }
            } else if let name = shared.namesByID.removeValue(forKey: id),
                shared.knownPorts.contains(name), !current.contains(name)
            {
                shared.knownPorts.remove(name)
                shared.messages.append(.portUnregistered(name))
            }
            for name in current.subtracting(shared.knownPorts).sorted() {
                shared.messages.append(.portRegistered(name))
            }
            for name in shared.knownPorts.subtracting(current).sorted() {
                shared.messages.append(.portUnregistered(name))
            }
            shared.knownPorts = current
            if !before.subtracting(current).isEmpty {
                shared.lastPortLossFrameTime = heardAt
                shared.lastPortLossMicros = heardAtMicros
            }
        }
        wake()
    }

    /// Notification thread.
    func portConnection(source: UInt32, destination: UInt32, connected: Bool) {
        guard let client,
            let sourcePort = jack_port_by_id(client, source),
            let destinationPort = jack_port_by_id(client, destination),
            let sourceName = jack_port_name(sourcePort),
            let destinationName = jack_port_name(destinationPort)
        else { return }
        let message = EngineNotification.portConnectionChanged(
            source: String(cString: sourceName), destination: String(cString: destinationName),
            connected: connected)
        lock.withLock { $0.messages.append(message) }
        wake()
    }

    /// Any JACK thread: atomics only.
    func xrun() {
        xruns.add(1, ordering: .relaxed)
        wake()
    }

    /// Any JACK thread: atomics only.
    func bufferSizeChanged(_ frames: Int) {
        pendingBufferSize.store(frames, ordering: .releasing)
        wake()
    }

    /// Any JACK thread: atomics only.
    func sampleRateChanged(_ rate: Int) {
        pendingSampleRate.store(rate, ordering: .releasing)
        wake()
    }

    /// Any JACK thread, possibly the dying process thread: treat as a signal handler. Copies
    /// the reason into preallocated memory and raises a flag; no allocation, no lock.
    func shutdown(status: UInt32, reason: UnsafePointer<CChar>?) {
        if serverLost.load(ordering: .acquiring) { return }
        var length = 0
        if let reason {
            while length < Self.lostReasonCapacity - 1 {
                let byte = UInt8(bitPattern: reason[length])
                if byte == 0 { break }
                lostReason[length] = byte
                length += 1
            }
        }
        lostReasonLength.store(length, ordering: .relaxed)
        lostStatus.store(status, ordering: .relaxed)
        serverLost.store(true, ordering: .releasing)
        wake()
    }

    // MARK: Control thread

    /// Everything recorded since the last drain: port and connection messages in the order
    /// they happened, then xruns, buffer size, sample rate and server loss.
    func drain() -> [EngineNotification] {
        let totalXruns = xruns.load(ordering: .relaxed)
        var drained = lock.withLock { shared -> [EngineNotification] in
            var messages = shared.messages
            shared.messages.removeAll()
            if totalXruns > shared.xrunsReported {
                messages.append(.xrun(count: totalXruns - shared.xrunsReported))
                shared.xrunsReported = totalXruns
            }
            return messages
        }
        let bufferSize = pendingBufferSize.exchange(0, ordering: .acquiring)
        if bufferSize > 0 { drained.append(.bufferSize(bufferSize)) }
        let sampleRate = pendingSampleRate.exchange(0, ordering: .acquiring)
        if sampleRate > 0 { drained.append(.sampleRate(sampleRate)) }
        if let reason = lostReasonIfNew() { drained.append(.serverLost(reason)) }
        return drained
    }

    /// The server-loss reason, once: nil if the server is there or the loss was reported.
    private func lostReasonIfNew() -> String? {
        guard serverLost.load(ordering: .acquiring),
            !lostReported.exchange(true, ordering: .relaxed)
        else { return nil }
        return reasonText()
    }

    /// The server-loss reason (nil while the server is there).
    func lossReason() -> String? {
        guard serverLost.load(ordering: .acquiring) else { return nil }
        return reasonText()
    }

    private func reasonText() -> String {
        let length = lostReasonLength.load(ordering: .relaxed)
        let text = String(
            decoding: UnsafeBufferPointer(start: lostReason, count: length), as: UTF8.self)
        return text.isEmpty ? "the JACK server shut down" : text
    }
}

// MARK: C entry points. `argument` is an unretained NotificationSink that JackClient keeps
// alive until after jack_client_close.

private func sink(_ argument: UnsafeMutableRawPointer?) -> NotificationSink? {
    guard let argument else { return nil }
    return Unmanaged<NotificationSink>.fromOpaque(argument).takeUnretainedValue()
}

func recdPortRegistration(
    _ id: jack_port_id_t, _ registered: Int32, _ argument: UnsafeMutableRawPointer?
) {
    sink(argument)?.portRegistration(id: id, registered: registered != 0)
}

func recdPortConnect(
    _ source: jack_port_id_t, _ destination: jack_port_id_t, _ connected: Int32,
    _ argument: UnsafeMutableRawPointer?
) {
    sink(argument)?.portConnection(
        source: source, destination: destination, connected: connected != 0)
}

func recdXrun(_ argument: UnsafeMutableRawPointer?) -> Int32 {
    sink(argument)?.xrun()
    return 0
}

func recdBufferSize(_ frames: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    sink(argument)?.bufferSizeChanged(Int(frames))
    return 0
}

func recdSampleRate(_ rate: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    sink(argument)?.sampleRateChanged(Int(rate))
    return 0
}

func recdInfoShutdown(
    _ status: jack_status_t, _ reason: UnsafePointer<CChar>?, _ argument: UnsafeMutableRawPointer?
) {
    sink(argument)?.shutdown(status: status.rawValue, reason: reason)
}

// JACK's notification callbacks. They record what happened and wake the control thread;
// they never act in place (no connecting, no engine changes: JACK forbids server requests
// from its callbacks, and the engine belongs to the control thread).

internal import CJack
import Synchronization

/// Where JACK's callbacks leave their news for the control thread.
///
/// Port and client registration, rename and connection callbacks come on JACK's notification
/// thread: they may allocate and take `lock` briefly. Xrun, buffer-size, sample-rate and
/// shutdown may come from other JACK threads (shutdown even from the process thread as it
/// dies), so they only touch atomics and preallocated memory. Every callback ends by calling `wake`.
///
/// `@unchecked Sendable`: the mutable state is behind `lock` or atomic; `lostReason` is
/// written once (before `serverLost` is set, released) and read after it is seen (acquired).
final class NotificationSink: @unchecked Sendable {
    private struct Shared {
        var messages: [EngineNotification] = []
        /// Ports JACK announced as unregistered (or renamed away from) that may still be
        /// listed until its graph settles.
        var vanishedPorts: Set<String> = []
        /// Clients JACK announced as closed (and not back since).
        var goneClients: Set<String> = []
        /// A port or client came or went since the control thread last looked.
        var portsChanged = false
        /// Names of ports registered since we opened, by JACK port id.
        var namesByID: [UInt32: String] = [:]
        /// jack_client_t * as an integer (0: closed); the callbacks use it to look names up.
        var client: UInt = 0
        var xrunsReported = 0
        /// JACK's frame time and microsecond clock when the latest port disappearance was heard of.
        var lastPortLoss: (frameTime: UInt32, micros: UInt64)?
        /// The same for the latest port registration (a device arriving).
        var lastPortArrival: (frameTime: UInt32, micros: UInt64)?
    }

    private let lock = Mutex(Shared())
    /// A turn on the graph: one of the callbacks that come on JACK's notification thread (port
    /// and client registration, rename, connection) for all of its run, or a port listing
    /// (`JackClient.ports`) — one at a time. On PipeWire's JACK (0.3.65) that thread is also the
    /// one that frees the port objects, and jack_get_ports sorts and names the ports it found
    /// after releasing its own lock: a port removed and its object zeroed for reuse meanwhile
    /// crashed recd (docs/jack-servers.md). Each port's removal calls the port-registration
    /// callback before it frees the object, so while a listing holds the turn no listed port
    /// goes. Taken before `lock`, never inside it.
    private let graphTurn = Mutex(())
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

    /// Control thread, before activation: which client to look names up on.
    func attach(client: OpaquePointer) {
        lock.withLock { $0.client = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(client))) }
    }

    /// Control thread, before jack_client_close.
    func detach() {
        lock.withLock { $0.client = 0 }
    }

    /// Any thread: the JACK frame time and microsecond clock (jack_get_time) at which the
    /// latest port disappearance was heard of.
    var lastPortLoss: (frameTime: UInt32, micros: UInt64)? { lock.withLock { $0.lastPortLoss } }
    /// Any thread: the JACK frame time and microsecond clock at which the latest port
    /// registration was heard of.
    var lastPortArrival: (frameTime: UInt32, micros: UInt64)? { lock.withLock { $0.lastPortArrival } }

    private var client: OpaquePointer? {
        let bits = lock.withLock { $0.client }
        return OpaquePointer(bitPattern: bits)
    }

    /// Runs `body` in a turn on the graph (`graphTurn`): a notification callback's or a listing's.
    func inGraphTurn<Result>(_ body: () -> Result) -> Result {
        graphTurn.withLock { _ in body() }
    }

    // MARK: Callbacks (JACK threads)

    /// Notification thread. Records what JACK said and nothing more: the port list read here
    /// may still hold the ports of a client that is closing (JACK announces before its graph
    /// settles), so removals are never decided from it. The control thread recomputes
    /// (`takePortsChanged`, `vanished`). A port's name cannot be found from its id
    /// once it is gone, so names are remembered on registration.
    func portRegistration(id: UInt32, registered: Bool) {
        guard let client else { return }
        // Naming the port (not judging whether it exists) from the graph is fine here.
        var name: String?
        if let port = jack_port_by_id(client, id), let cName = jack_port_name(port) {
            name = String(cString: cName)
        }
        let heardAt = jack_frame_time(client)
        let heardAtMicros = jack_get_time()
        lock.withLock { shared in
            shared.portsChanged = true
            if registered {
                guard let name else { return }
                shared.namesByID[id] = name
                shared.vanishedPorts.remove(name)
                shared.messages.append(.portRegistered(name))
                shared.lastPortArrival = (heardAt, heardAtMicros)
            } else {
                // Registered since we opened: the remembered name; else (it existed before)
                // the name JACK still gives for the id, if any.
                if let gone = shared.namesByID.removeValue(forKey: id) ?? name {
                    shared.vanishedPorts.insert(gone)
                    shared.messages.append(.portUnregistered(gone))
                }
                shared.lastPortLoss = (heardAt, heardAtMicros)
            }
        }
        wake()
    }

    /// Notification thread. A client that closes cleanly (jack_client_close without
    /// unregistering) takes its ports with it; until JACK's graph settles they may still be
    /// listed, so the client is remembered as gone and its ports are excluded.
    func clientRegistration(name: String, registered: Bool) {
        let heardAt = client.map { jack_frame_time($0) }
        let heardAtMicros = jack_get_time()
        lock.withLock { shared in
            shared.portsChanged = true
            if registered {
                shared.goneClients.remove(name)
            } else {
                shared.goneClients.insert(name)
                if let heardAt { shared.lastPortLoss = (heardAt, heardAtMicros) }
            }
        }
        wake()
    }

    /// Notification thread: a port was renamed; the control thread re-reads the list.
    func portRename(id: UInt32, oldName: String, newName: String) {
        lock.withLock { shared in
            shared.portsChanged = true
            shared.vanishedPorts.insert(oldName)
            shared.vanishedPorts.remove(newName)
            if shared.namesByID[id] != nil { shared.namesByID[id] = newName }
            shared.messages.append(.portUnregistered(oldName))
            shared.messages.append(.portRegistered(newName))
        }
        wake()
    }

    /// Control thread: whether any port or client came or went since the last call (and
    /// clears the flag).
    func takePortsChanged() -> Bool {
        lock.withLock { shared in
            defer { shared.portsChanged = false }
            return shared.portsChanged
        }
    }

    /// Control thread: ports JACK said are gone and clients JACK said closed, to exclude from
    /// a port list that may not have settled yet. What `stillListed` (the current port list)
    /// no longer holds is forgotten: the graph has settled for it, and it does not come back.
    func vanished(stillListed: Set<String>) -> (ports: Set<String>, clients: Set<String>) {
        let listedClients = Set(stillListed.map(Self.clientName(ofPort:)))
        return lock.withLock { shared in
            shared.vanishedPorts.formIntersection(stillListed)
            shared.goneClients.formIntersection(listedClients)
            return (shared.vanishedPorts, shared.goneClients)
        }
    }

    /// The client part of a full port name (`client:port`).
    static func clientName(ofPort name: String) -> String {
        String(name.prefix { $0 != ":" })
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
    guard let sink = sink(argument) else { return }
    sink.inGraphTurn { sink.portRegistration(id: id, registered: registered != 0) }
}

func recdClientRegistration(
    _ name: UnsafePointer<CChar>?, _ registered: Int32, _ argument: UnsafeMutableRawPointer?
) {
    guard let name, let sink = sink(argument) else { return }
    sink.inGraphTurn { sink.clientRegistration(name: String(cString: name), registered: registered != 0) }
}

func recdPortRename(
    _ id: jack_port_id_t, _ oldName: UnsafePointer<CChar>?, _ newName: UnsafePointer<CChar>?,
    _ argument: UnsafeMutableRawPointer?
) {
    guard let oldName, let newName, let sink = sink(argument) else { return }
    sink.inGraphTurn {
        sink.portRename(id: id, oldName: String(cString: oldName), newName: String(cString: newName))
    }
}

func recdPortConnect(
    _ source: jack_port_id_t, _ destination: jack_port_id_t, _ connected: Int32,
    _ argument: UnsafeMutableRawPointer?
) {
    guard let sink = sink(argument) else { return }
    sink.inGraphTurn { sink.portConnection(source: source, destination: destination, connected: connected != 0) }
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

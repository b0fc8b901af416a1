// The JACK client: the one place that owns a jack_client_t * and turns libjack's C calls into
// Swift ones with typed errors. Control thread only, unless a method says otherwise.
//
// Requests to the server (activate, ports registered and unregistered, connections made and
// broken, the buffer size, a client's UUID) go one at a time (`serverRequests`): jackd2's
// libjack writes each request and reads its answer on the client's one request socket with no
// lock of its own, so two threads asking at once (the control thread registering an attached
// application's ports while the connection worker connects) can read each other's answers —
// seen as "JACK refused the port" for a free name under load. Reads of the graph in shared
// memory (ports, connections, flags) need no lock.

internal import CJack
import Synchronization

/// An open JACK client. Owns the `jack_client_t *` from `init` until `close()` (or deinit)
/// and the notification sink its callbacks point at.
///
/// Never starts a server. All methods are for the control thread; the process callback is
/// plain C-convention code in `RealTime/` that receives its own state, not this object.
final class JackClient {
    /// jack_client_t *; nil once closed.
    private(set) var handle: OpaquePointer?
    /// Held for each request to the server: one at a time on the request socket.
    private let serverRequests = Mutex(())
    let sink: NotificationSink
    /// The name JACK gave us (it may add a suffix when the requested one is taken).
    let name: String
    let serverName: String?

    /// Opens a client and installs the notification callbacks (they fire once activated).
    ///
    /// A name already taken gets a suffix, `NAME-01`, `NAME-02`, ... on both servers: jackd2
    /// picks it and `jack_get_client_name` tells it. PipeWire's JACK (0.3.65) does not: the
    /// client keeps calling itself NAME while every other client sees it as NAME-<node id>, so
    /// the port names it builds (NAME:port) would reach the other client's ports. So a client
    /// whose name the server resolves to another client (jack_get_uuid_for_client_name) is
    /// closed and opened again under the next suffix.
    init(name requestedName: String, serverName: String?, sink: NotificationSink) throws(JackError)
    {
        var attempt = 0
        var opened = try Self.open(requestedName, serverName: serverName)
        while Self.nameBelongsToAnotherClient(opened) {
            _ = jack_client_close(opened)
            attempt += 1
            let suffix = attempt < 10 ? "0\(attempt)" : "\(attempt)"
            guard attempt < 100 else {
                throw JackError.openFailure(
                    status: .nameNotUnique, clientName: requestedName, serverName: serverName)
            }
            opened = try Self.open("\(requestedName)-\(suffix)", serverName: serverName)
        }
        handle = opened
        self.sink = sink
        self.serverName = serverName
        name = jack_get_client_name(opened).map { String(cString: $0) } ?? requestedName

        let argument = Unmanaged.passUnretained(sink).toOpaque()
        jack_set_port_registration_callback(opened, recdPortRegistration, argument)
        jack_set_client_registration_callback(opened, recdClientRegistration, argument)
        jack_set_port_rename_callback(opened, recdPortRename, argument)
        jack_set_port_connect_callback(opened, recdPortConnect, argument)
        jack_set_xrun_callback(opened, recdXrun, argument)
        jack_set_buffer_size_callback(opened, recdBufferSize, argument)
        jack_set_sample_rate_callback(opened, recdSampleRate, argument)
        jack_on_info_shutdown(opened, recdInfoShutdown, argument)
        sink.attach(client: opened)
    }

    deinit { close() }

    private static func open(_ name: String, serverName: String?) throws(JackError) -> OpaquePointer {
        let jack = JackImplementation.loaded
        if jack.kind == .jackd, name == jack.serverName(configured: serverName) {
            throw JackError.clientNamedLikeServer(name)
        }
        var status = jack_status_t(rawValue: 0)
        let opened: OpaquePointer? =
            if let serverName {
                recd_jack_client_open(name, serverName, &status)
            } else {
                recd_jack_client_open(name, nil, &status)
            }
        guard let opened else {
            throw JackError.openFailure(
                status: JackError.Status(rawValue: status.rawValue), clientName: name,
                serverName: serverName)
        }
        return opened
    }

    /// Whether the server resolves this client's own name to another client (PipeWire's JACK
    /// with a duplicate name; the older client is found first, measured on 0.3.65).
    private static func nameBelongsToAnotherClient(_ client: OpaquePointer) -> Bool {
        guard let name = jack_get_client_name(client), let own = jack_client_get_uuid(client) else {
            return false
        }
        defer { jack_free(own) }
        guard let found = jack_get_uuid_for_client_name(client, name) else { return false }
        defer { jack_free(found) }
        return String(cString: own) != String(cString: found)
    }

    private func client(_ operation: @autoclosure () -> String) throws(JackError) -> OpaquePointer {
        guard let handle else {
            throw JackError(
                status: .failure, operation: operation(), message: "the JACK client is closed")
        }
        return handle
    }

    // MARK: Lifecycle

    /// Installs the process callback; `state` must stay valid until after `deactivate()` or
    /// `close()`. Call before `activate()`.
    func setProcess(state: UnsafeMutablePointer<ProcessState>) throws(JackError) {
        let client = try client("set process callback")
        let result = jack_set_process_callback(client, recdProcess, UnsafeMutableRawPointer(state))
        if result != 0 {
            throw JackError(
                code: result, operation: "set process callback",
                message: "libjack refused the process callback (is the client active already?)")
        }
    }

    func activate() throws(JackError) {
        let client = try client("activate")
        let result = serverRequests.withLock { _ in jack_activate(client) }
        if result != 0 {
            throw JackError(
                code: result, operation: "activate",
                message: "the JACK server refused to activate recd")
        }
    }

    /// Stops the process callback; when it returns, JACK will not call it again.
    func deactivate() {
        if let handle { _ = serverRequests.withLock { _ in jack_deactivate(handle) } }
    }

    /// Closes the client (deactivating it first); safe to call twice and after server loss.
    func close() {
        guard let handle else { return }
        sink.detach()
        _ = serverRequests.withLock { _ in jack_client_close(handle) }
        self.handle = nil
    }

    // MARK: Server facts

    var sampleRate: Int { handle.map { Int(jack_get_sample_rate($0)) } ?? 0 }
    var bufferSize: Int { handle.map { Int(jack_get_buffer_size($0)) } ?? 0 }

    func setBufferSize(_ frames: Int) throws(JackError) {
        let client = try client("set buffer size")
        let result = serverRequests.withLock { _ in jack_set_buffer_size(client, jack_nframes_t(frames)) }
        if result != 0 {
            throw JackError(
                code: result, operation: "set buffer size to \(frames)",
                message: "the JACK server refused the buffer size (its backend may not allow it)")
        }
    }

    // MARK: Ports

    /// Registers one of our audio ports; returns jack_port_t *.
    func registerPort(name portName: String, direction: GroupDirection) throws(JackError)
        -> OpaquePointer
    {
        let client = try client("register port \(portName)")
        let flags = direction == .input ? JackPortIsInput : JackPortIsOutput
        guard
            // As an address: the lock hands back a plain value (jack_port_t * is not Sendable).
            let port = OpaquePointer(
                bitPattern: serverRequests.withLock { _ in
                    UInt(bitPattern: jack_port_register(client, portName, JACK_DEFAULT_AUDIO_TYPE, UInt(flags.rawValue), 0))
                })
        else {
            throw JackError(
                status: .failure, operation: "register port \(portName)",
                message: "JACK refused the port (name taken, too long, or the port table is full)")
        }
        return port
    }

    /// Unregisters one of our ports (the process thread must no longer use it).
    func unregisterPort(_ port: OpaquePointer) {
        guard let handle else { return }
        _ = serverRequests.withLock { _ in jack_port_unregister(handle, port) }
    }

    /// The process id JACK reports for the client named `name`, nil when it does not know
    /// (jackd2's libjack answers 0: "not implemented on library side"; PipeWire's knows).
    /// Not a server request in either (a local lookup), so it does not wait behind one.
    func processID(ofClient name: String) -> Int32? {
        guard handle != nil else { return nil }
        let pid = jack_get_client_pid(name)
        return pid > 0 ? pid : nil
    }

    /// The full name (`client:port`) of one of our ports.
    func fullName(of port: OpaquePointer) -> String {
        jack_port_name(port).map { String(cString: $0) } ?? ""
    }

    /// Connects `source` (an output port) to `destination` (an input port). Already connected
    /// is success; the answer says whether the connection is new.
    @discardableResult
    func connect(source: String, destination: String) throws(JackError) -> Bool {
        let client = try client("connect \(source) → \(destination)")
        let result = serverRequests.withLock { _ in jack_connect(client, source, destination) }
        if result != 0 && result != alreadyConnected {
            throw JackError(
                code: result, operation: "connect \(source) → \(destination)",
                message: "JACK refused the connection (a port is missing or the types differ)")
        }
        return result == 0
    }

    func disconnect(source: String, destination: String) throws(JackError) {
        let client = try client("disconnect \(source) → \(destination)")
        let result = serverRequests.withLock { _ in jack_disconnect(client, source, destination) }
        if result != 0 {
            throw JackError(
                code: result, operation: "disconnect \(source) → \(destination)",
                message: "JACK refused to disconnect (the ports were not connected?)")
        }
    }

    /// Whether our `port` is connected to the port named `other`.
    func isConnected(_ port: OpaquePointer, to other: String) -> Bool {
        jack_port_connected_to(port, other) != 0
    }

    /// Full names of the ports connected to the port named `name`.
    func connections(of name: String) -> [String] {
        guard let handle, let port = jack_port_by_name(handle, name),
            let list = jack_port_get_all_connections(handle, port)
        else { return [] }
        defer { jack_free(list) }
        return Self.strings(list)
    }

    func portExists(_ name: String) -> Bool {
        guard let handle else { return false }
        return jack_port_by_name(handle, name) != nil
    }

    /// The JACK flags (JackPortIsInput, ...) of the port named `name`, nil if it is gone.
    func portFlags(_ name: String) -> Int32? {
        guard let handle, let port = jack_port_by_name(handle, name) else { return nil }
        return jack_port_flags(port)
    }

    /// Ports whose full names match the POSIX extended regular expression `pattern` (all
    /// when nil) and have all of `flags`, in JACK's order: jack_get_ports, in a turn on the
    /// graph (`NotificationSink.inGraphTurn`: never while a notification callback runs).
    func ports(matching pattern: String?, flags: Int32 = 0) -> [String] {
        guard let handle else { return [] }
        return sink.inGraphTurn {
            guard let list = jack_get_ports(handle, pattern, nil, UInt(flags)) else { return [] }
            defer { jack_free(list) }
            return Self.strings(list)
        }
    }

    private static func strings(_ list: UnsafeMutablePointer<UnsafePointer<CChar>?>) -> [String] {
        var names: [String] = []
        var index = 0
        while let name = list[index] {
            names.append(String(cString: name))
            index += 1
        }
        return names
    }

    /// The latency range (frames) JACK computed for our `port`: capture latency (from the
    /// outside world to this port) for an input, playback latency (from this port to the
    /// outside world) for an output.
    func latencyRange(of port: OpaquePointer, direction: GroupDirection) -> ClosedRange<Int> {
        var range = jack_latency_range_t(min: 0, max: 0)
        jack_port_get_latency_range(
            port, direction == .input ? JackCaptureLatency : JackPlaybackLatency, &range)
        return Int(range.min)...Int(max(range.min, range.max))
    }

    /// Any thread: jack_frame_time (0 when closed).
    var frameTime: UInt32 { handle.map { jack_frame_time($0) } ?? 0 }

    /// JACK's microsecond clock (jack_get_time) at a frame time.
    ///
    /// Placed from the frame JACK estimates it is at now (jack_frame_time, read beside
    /// jack_get_time), not with jack_frames_to_time: PipeWire's (0.3.65) subtracts the 32-bit
    /// frame from its 64-bit position unsigned and answers about 2^63 µs for any frame before
    /// the current cycle (measured), which is every tap's first frame by the time it is asked.
    func microseconds(forFrameTime frameTime: UInt32) -> UInt64? {
        guard let handle else { return nil }
        let nowFrame = jack_frame_time(handle)
        return AudioEngine.microseconds(
            ofFrame: frameTime, nowFrame: nowFrame, nowMicros: jack_get_time(),
            sampleRate: Int(jack_get_sample_rate(handle)))
    }

    /// JACK's microsecond clock now (jack_get_time).
    static func now() -> UInt64 { jack_get_time() }
}

/// EEXIST, which jack_connect returns when the connection already exists.
private let alreadyConnected: Int32 = 17

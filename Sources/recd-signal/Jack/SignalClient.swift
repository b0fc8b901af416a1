// The one place that owns recd-signal's jack_client_t * and turns libjack calls into Swift
// ones. Main thread only, unless a function says otherwise.

internal import CJack
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Port direction, from our side.
enum PortDirection {
    /// We write: JackPortIsOutput.
    case output
    /// We read: JackPortIsInput.
    case input
}

/// What JACK's non-process threads tell us, in plain memory: the xrun callback and the
/// shutdown callback write it, the main thread reads it. Owned by `SignalClient`.
struct ClientEvents: ~Copyable {
    let xruns = Atomic<Int>(0)
    let serverGone = Atomic<Bool>(false)
}

/// JackXRunCallback. Called by libjack on its notification thread.
private func signalXrun(_ argument: UnsafeMutableRawPointer?) -> Int32 {
    argument?.assumingMemoryBound(to: ClientEvents.self).pointee.xruns.add(
        1, ordering: .relaxed)
    return 0
}

/// JackShutdownCallback: the server went away or threw us out. Called by libjack on one of
/// its threads.
private func signalShutdown(_ argument: UnsafeMutableRawPointer?) {
    argument?.assumingMemoryBound(to: ClientEvents.self).pointee.serverGone.store(
        true, ordering: .releasing)
}

/// An open JACK client: owns the `jack_client_t *` from `init` to `close()` and the
/// `ClientEvents` its callbacks write to (freed in deinit, after close).
final class SignalClient {
    /// jack_client_t *; nil once closed.
    private(set) var handle: OpaquePointer?
    /// The name JACK gave us (it may differ from the one asked for).
    let name: String
    let events: UnsafeMutablePointer<ClientEvents>
    private var active = false

    /// Opens a client; never starts a server. `serverName` nil: libjack's default.
    init(name requestedName: String, serverName: String?) throws(Failure) {
        var status = jack_status_t(rawValue: 0)
        let opened: OpaquePointer? =
            if let serverName {
                recd_jack_client_open(requestedName, serverName, &status)
            } else {
                recd_jack_client_open(requestedName, nil, &status)
            }
        guard let opened else {
            throw Self.openFailure(status: status.rawValue, serverName: serverName)
        }
        handle = opened
        name = jack_get_client_name(opened).map { String(cString: $0) } ?? requestedName
        events = .allocate(capacity: 1)
        events.initialize(to: ClientEvents())
        let argument = UnsafeMutableRawPointer(events)
        jack_set_xrun_callback(opened, signalXrun, argument)
        jack_on_shutdown(opened, signalShutdown, argument)
    }

    deinit {
        close()
        events.deinitialize(count: 1)
        events.deallocate()
    }

    private static func openFailure(status: UInt32, serverName: String?) -> Failure {
        let server =
            serverName
            ?? getenv("JACK_DEFAULT_SERVER").map {
                "'\(String(cString: $0))' (JACK_DEFAULT_SERVER)"
            }
            ?? "'default'"
        let serverFailed = UInt32(JackServerFailed.rawValue)
        let serverError = UInt32(JackServerError.rawValue)
        let sharedMemoryFailure = UInt32(JackShmFailure.rawValue)
        let bits = String(status, radix: 16)
        if status & (serverFailed | serverError | sharedMemoryFailure) != 0 {
            let named = serverName.map { "'\($0)'" } ?? server
            return .jack(
                "cannot connect to the JACK server \(named): is it running? "
                    + "`jackd -d dummy -r 48000` starts one [jack status 0x\(bits)]")
        }
        return .jack("jack_client_open failed [jack status 0x\(bits)]")
    }

    private func client() throws(Failure) -> OpaquePointer {
        guard let handle else { throw .jack("the JACK client is closed") }
        return handle
    }

    // MARK: Server facts

    var sampleRate: Int { handle.map { Int(jack_get_sample_rate($0)) } ?? 0 }

    /// JACK's estimate of the current frame time (for --rate-check).
    var frameTime: UInt32 { handle.map { jack_frame_time($0) } ?? 0 }

    /// JACK's microsecond clock (jack_get_time: CLOCK_MONOTONIC_RAW on jackd2, CLOCK_MONOTONIC on PipeWire) at frame
    /// time `frame`, placed from the frame JACK estimates it is at now. Not jack_frames_to_time:
    /// PipeWire's (0.3.65) answers about 2^63 µs for a frame before the current cycle. Lets a
    /// test put two servers' frames on one clock (netjack2's latency).
    func microseconds(ofFrame frame: UInt32) -> UInt64 {
        guard let handle else { return 0 }
        let nowFrame = jack_frame_time(handle)
        let nowMicros = Int64(jack_get_time())
        let behind = Int64(Int32(bitPattern: nowFrame &- frame))
        return UInt64(max(0, nowMicros - behind * 1_000_000 / Int64(max(1, sampleRate))))
    }

    var xruns: Int { events.pointee.xruns.load(ordering: .relaxed) }
    var serverGone: Bool { events.pointee.serverGone.load(ordering: .acquiring) }

    // MARK: Ports

    /// Registers one audio port per name; returns the jack_port_t * values, in order.
    func registerPorts(_ names: [String], direction: PortDirection) throws(Failure)
        -> [OpaquePointer]
    {
        let client = try client()
        let flags = direction == .input ? JackPortIsInput : JackPortIsOutput
        var ports: [OpaquePointer] = []
        for portName in names {
            guard
                let port = jack_port_register(
                    client, portName, JACK_DEFAULT_AUDIO_TYPE, UInt(flags.rawValue), 0)
            else {
                throw .jack(
                    "cannot register port '\(portName)' (name taken or too long, or the "
                        + "server's port table is full)")
            }
            ports.append(port)
        }
        return ports
    }

    func unregister(_ port: OpaquePointer) {
        if let handle { _ = jack_port_unregister(handle, port) }
    }

    /// `client:port` of one of our ports.
    func fullName(of port: OpaquePointer) -> String {
        jack_port_name(port).map { String(cString: $0) } ?? ""
    }

    /// Connects `source` (an output port) to `destination` (an input port).
    func connect(source: String, destination: String) throws(Failure) {
        let result = jack_connect(try client(), source, destination)
        if result != 0 && result != EEXIST {
            throw .jack(
                "cannot connect \(source) -> \(destination) (does the port exist, with "
                    + "this direction?) [code \(result)]")
        }
    }

    // MARK: Lifecycle

    /// Installs the process callback. `argument` must stay valid until `deactivate()` or
    /// `close()` has returned.
    func setProcess(_ callback: JackProcessCallback, argument: UnsafeMutableRawPointer)
        throws(Failure)
    {
        if jack_set_process_callback(try client(), callback, argument) != 0 {
            throw .jack("libjack refused the process callback")
        }
    }

    func activate() throws(Failure) {
        if jack_activate(try client()) != 0 {
            throw .jack("the JACK server refused to activate us")
        }
        active = true
    }

    /// When this returns, JACK calls the process callback no more. Skipped once the server
    /// is gone (there is nothing left to deactivate).
    func deactivate() {
        guard let handle, active, !serverGone else { return }
        _ = jack_deactivate(handle)
        active = false
    }

    /// Closes the client (libjack deactivates it first); safe to call twice.
    func close() {
        guard let handle else { return }
        _ = jack_client_close(handle)
        self.handle = nil
        active = false
    }
}

import Synchronization

/// An application's own JACK client under a session (`session.attach`): recd's ports for it,
/// the player voice its audio plays through, and the capture feed of its inputs.
///
/// Made by `AudioEngine.beginAttach` and `finishedAttachments`; the control thread steers it through the engine: the play
/// side is a `PlayerHandle` (`player`: `play`, `pause`, `setGain`, `movePlayer` as for any
/// player), the capture side through `setCapture`. `AudioEngine.detach` takes it out of the
/// graph. The handle owns the real-time memory (`AttachmentFeed`, the player) and recd's JACK
/// ports made for it; both are released in `deinit`, which runs only once the process thread
/// can no longer reach them (the engine's retired snapshots hold the handle until then).
///
/// Threads: control thread, except the counters.
public final class AttachmentHandle: @unchecked Sendable {
    // @unchecked: the mutable state is the real-time memory (atomics).

    /// The application's JACK client.
    public let clientName: String
    /// The app's output ports, and recd's input ports they are connected to (same order).
    public let playPorts: [String]
    public let recdPlayPorts: [String]
    /// The app's input ports, and recd's output ports connected to them (same order).
    public let capturePorts: [String]
    public let recdCapturePorts: [String]
    /// Plays the app's audio (nil without play ports).
    public let player: PlayerHandle?

    let feed: UnsafeMutablePointer<AttachmentFeed>
    /// jack_port_t * of recd's ports for the attachment, play side then capture side.
    private let ownPorts: [OpaquePointer]
    /// Unregisters `ownPorts` when the handle goes (on the connection thread; nothing once the
    /// client has closed: JACK dropped them then). nil in tests.
    private let release: (([OpaquePointer]) -> Void)?

    /// One of recd's ports for an attachment: jack_port_t * (nil in tests) and full name.
    struct OwnPort {
        var port: OpaquePointer?
        var name: String
    }

    /// Control thread; `player` is the voice of the play side (its ring has one channel per
    /// play port). `release` is nil in tests.
    init(
        clientName: String, playPorts: [String], recdPlayPorts: [OwnPort], capturePorts: [String],
        recdCapturePorts: [OwnPort], player: PlayerHandle?, release: (([OpaquePointer]) -> Void)?
    ) {
        self.clientName = clientName
        self.playPorts = playPorts
        self.capturePorts = capturePorts
        self.recdPlayPorts = recdPlayPorts.map(\.name)
        self.recdCapturePorts = recdCapturePorts.map(\.name)
        self.player = player
        self.release = release
        ownPorts = (recdPlayPorts + recdCapturePorts).compactMap(\.port)

        let placeholder = UnsafeMutablePointer<Float>.allocate(capacity: 1)
        placeholder.initialize(to: 0)
        self.placeholder = placeholder
        func list(_ ports: [OwnPort]) -> UnsafeMutablePointer<OpaquePointer?> {
            let list = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: max(ports.count, 1))
            list.initialize(from: ports.map(\.port), count: ports.count)
            return list
        }
        func buffers(_ count: Int) -> UnsafeMutablePointer<UnsafeMutablePointer<Float>> {
            let list = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(count, 1))
            list.initialize(repeating: placeholder, count: count)
            return list
        }
        let sources = UnsafeMutablePointer<Atomic<Int>>.allocate(capacity: max(recdCapturePorts.count, 1))
        for index in 0..<recdCapturePorts.count { (sources + index).initialize(to: Atomic(-1)) }
        feed = .allocate(capacity: 1)
        feed.initialize(
            to: AttachmentFeed(
                playPorts: list(recdPlayPorts), playBuffers: buffers(recdPlayPorts.count),
                playCount: recdPlayPorts.count, voice: player?.voice, capturePorts: list(recdCapturePorts),
                captureBuffers: buffers(recdCapturePorts.count), captureCount: recdCapturePorts.count,
                captureSources: sources))
    }

    private let placeholder: UnsafeMutablePointer<Float>

    deinit {
        if !ownPorts.isEmpty { release?(ownPorts) }
        let playCount = feed.pointee.playCount
        let captureCount = feed.pointee.captureCount
        feed.pointee.playPorts.deinitialize(count: playCount)
        feed.pointee.playPorts.deallocate()
        feed.pointee.playBuffers.deinitialize(count: playCount)
        feed.pointee.playBuffers.deallocate()
        feed.pointee.capturePorts.deinitialize(count: captureCount)
        feed.pointee.capturePorts.deallocate()
        feed.pointee.captureBuffers.deinitialize(count: captureCount)
        feed.pointee.captureBuffers.deallocate()
        feed.pointee.captureSources.deinitialize(count: captureCount)
        feed.pointee.captureSources.deallocate()
        feed.deinitialize(count: 1)
        feed.deallocate()
        placeholder.deallocate()
    }

    /// Periods the process thread has fed (any thread).
    public var periodsFed: Int { feed.pointee.periods.load(ordering: .relaxed) }

    /// Whether the capture ports carry their sources now (any thread).
    public var isCaptureOpen: Bool { feed.pointee.captureOpen.load(ordering: .acquiring) }

    /// Control thread: capture port k carries flat input channel `sources[k]` (−1 or missing:
    /// silence), if `open`; zeros otherwise. From the process thread's next period.
    func setCapture(sources: [Int], open: Bool) {
        for index in 0..<feed.pointee.captureCount {
            feed.pointee.captureSources[index].store(index < sources.count ? sources[index] : -1, ordering: .relaxed)
        }
        feed.pointee.captureOpen.store(open, ordering: .releasing)
    }

    /// Tests: the buffers of recd's play and capture ports, for a cycle driven without a
    /// server (`runCycle`); only for a handle whose ports are nil.
    func setTestBuffers(play: [UnsafeMutablePointer<Float>], capture: [UnsafeMutablePointer<Float>]) {
        for (index, buffer) in play.enumerated() where index < feed.pointee.playCount {
            feed.pointee.playBuffers[index] = buffer
        }
        for (index, buffer) in capture.enumerated() where index < feed.pointee.captureCount {
            feed.pointee.captureBuffers[index] = buffer
        }
    }
}

/// An attach under way (`AudioEngine.beginAttach`): its ports are being registered on the
/// connection thread; `AudioEngine.finishedAttachments` answers for it.
public struct AttachmentTicket: Hashable, Sendable {
    let serial: Int
}

/// What `beginAttach` checked and made, kept until the worker has registered the ports.
struct PendingAttachment {
    let clientName: String
    let playPorts: [String]
    let capturePorts: [String]
    let player: PlayerHandle?
}

/// One of recd's ports the connection thread registered: jack_port_t * and full name.
/// `@unchecked Sendable`: the pointer is only an address handed from that thread to the
/// control thread; JACK's port stays valid until it is unregistered.
struct RegisteredPort: @unchecked Sendable {
    let port: OpaquePointer
    let name: String
}

/// jack_port_t * of ports to unregister on the connection thread (see `RegisteredPort`).
struct RegisteredPorts: @unchecked Sendable {
    let ports: [OpaquePointer]
    init(_ ports: [OpaquePointer]) { self.ports = ports }
}

/// What the connection thread made of attaches under way, until the control thread takes it
/// (`AudioEngine.finishedAttachments`).
final class Registrations: Sendable {
    let results = Mutex<[AttachmentTicket: Result<[RegisteredPort], JackError>]>([:])
}

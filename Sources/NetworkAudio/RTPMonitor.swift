// recd's own ear on the RTP streams PipeWire receives: for each stream whose node `pw-dump`
// shows (PipeWireDump.swift), recd joins the stream's multicast group on a socket of its own,
// beside module-rtp-source's (SO_REUSEADDR/SO_REUSEPORT: both get every packet), reads only the
// RTP headers, and counts packets received and lost (sequence numbers) and losses (audio no
// packet brought). PipeWire 0.3.65 keeps no such count a client can read (docs/network-audio.md).
//
// Where a stream's group and port come from: its SAP announcement (the SDP's `c=` and `m=`),
// heard on SAP's group as module-rtp-source hears it, and taken only for a session whose SDP
// origin (`o=`) is a node's `rtp.origin` in the last `pw-dump`: recd listens only to what
// PipeWire receives, never to an address a client names, and at most `maximumStreams` of them.
// Which announcements and packets count: RTPMonitorCore.swift and RTPStream.swift.
//
// Threads: `watch` and `stop` on the control thread; the sockets, the parsing and the counting
// on the **rtp monitor** thread (one poll over all the sockets and an eventfd); `facts` from any
// thread: the counts are published under a mutex after each poll round.
import Platform
import Synchronization

/// The RTP monitor (see the top of this file). Made and stopped by its owner (recd's engine
/// controller); the thread it starts holds it until `stop`.
public final class RTPMonitor: Sendable {
    /// The most streams listened to at once.
    public static let maximumStreams = 64
    /// The receiver's buffer when the node does not say (module-rtp-source's default).
    public static let defaultLatencyMilliseconds = 100
    /// Bytes read of a datagram: an SAP announcement's header (at most 1040 bytes with its
    /// authentication data), its payload type and `SDPStreamDescription.maximumBytes` of SDP fit; a longer
    /// announcement is not read (an RTP packet's rest is never needed).
    public static let receiveBytes = 6144
    /// Datagrams read from one socket before the poll turns to the others (a round is a few ms
    /// of packets at AES67's 1 ms; the kernel's queue holds the rest).
    public static let packetsPerRound = 256

    /// A stream PipeWire receives, as the last `pw-dump` showed its node.
    public struct Wanted: Hashable, Sendable {
        /// The JACK client the node shows as.
        public var client: String
        public var session: String
        /// The sender as `routes` names it.
        public var address: String?
        public var latencyMilliseconds: Int

        public init(client: String, session: String, address: String?, latencyMilliseconds: Int) {
            self.client = client
            self.session = session
            self.address = address
            self.latencyMilliseconds = latencyMilliseconds
        }
    }

    /// Where the monitor's lines go (recd's log). Called on the monitor's thread.
    public typealias Reporter = @Sendable (RTPMonitorCore.Note) -> Void

    private struct Shared {
        /// By SDP origin (the node's `rtp.origin`).
        var wanted: [String: Wanted] = [:]
        var wantedChanged = false
        /// By JACK client.
        var facts: [String: RTPStreamFacts] = [:]
        var stopping = false
        var threadStarted = false
    }

    private let shared = Mutex(Shared())
    private let wake: Int32
    private let thread = Mutex<NamedThread?>(nil)
    /// The interface its sockets join their groups on; nil: the one the kernel's routes choose.
    public let interface: String?
    let log: Reporter

    public init(interface: String? = nil, log: @escaping Reporter) throws(SystemError) {
        wake = try EventFD.make()
        self.interface = interface
        self.log = log
    }

    deinit { Descriptor.close(wake) }

    /// Listens to exactly these streams from now on (by SDP origin); starts the monitor thread
    /// the first time there is one. Control thread.
    public func watch(_ wanted: [String: Wanted]) {
        let start = shared.withLock { shared -> Bool in
            guard !shared.stopping, shared.wanted != wanted else { return false }
            shared.wanted = wanted
            shared.wantedChanged = true
            guard !shared.threadStarted, !wanted.isEmpty else { return false }
            shared.threadStarted = true
            return true
        }
        if start {
            let loop = RTPMonitorLoop(monitor: self)
            do {
                let started = try NamedThread(name: "rtp monitor") { loop.run() }
                thread.withLock { $0 = started }
            } catch {
                log(
                    .init(
                        level: .warning, text: "cannot start the RTP monitor thread: \(error); RTP loss is not counted")
                )
            }
        }
        EventFD.signal(wake)
    }

    /// Ends the monitor thread and closes its sockets. Control thread, at shutdown.
    public func stop() {
        shared.withLock { $0.stopping = true }
        EventFD.signal(wake)
        thread.withLock { $0 }?.join()
    }

    /// The streams listened to, by JACK client. Any thread.
    public func facts() -> [String: RTPStreamFacts] { shared.withLock { $0.facts } }

    /// The first of `clients` that is a stream listened to. Any thread.
    public func facts(ofAnyOf clients: [String]) -> RTPStreamFacts? {
        shared.withLock { shared in
            for client in clients { if let facts = shared.facts[client] { return facts } }
            return nil
        }
    }

    // MARK: The monitor thread's side

    fileprivate var wakeDescriptor: Int32 { wake }

    /// The wanted set when it changed since the last call (and whether to stop). Monitor thread.
    fileprivate func takeWanted() -> (wanted: [String: Wanted]?, stopping: Bool) {
        shared.withLock { shared in
            defer { shared.wantedChanged = false }
            return (shared.wantedChanged ? shared.wanted : nil, shared.stopping)
        }
    }

    /// Publishes the monitor thread's counts. Monitor thread.
    fileprivate func publish(_ facts: [String: RTPStreamFacts]) {
        shared.withLock { $0.facts = facts }
    }
}

/// The monitor thread's sockets and loop; the decisions are `RTPMonitorCore`'s. Monitor thread only.
private final class RTPMonitorLoop: @unchecked Sendable {
    /// Strong: the thread keeps the monitor until `stop` ends it.
    private let monitor: RTPMonitor
    private var core = RTPMonitorCore(maximumStreams: RTPMonitor.maximumStreams)
    private var sap: Int32?
    /// By JACK client.
    private var sockets: [String: Int32] = [:]
    private let buffer = UnsafeMutableRawBufferPointer.allocate(
        byteCount: RTPMonitor.receiveBytes, alignment: MemoryLayout<UInt32>.alignment)

    init(monitor: RTPMonitor) { self.monitor = monitor }

    deinit { buffer.deallocate() }

    func run() {
        defer { closeAll() }
        var entries: [PollEntry] = []
        var clients: [String] = []
        while true {
            let (changed, stopping) = monitor.takeWanted()
            if stopping { return }
            if let changed { apply(changed) }
            entries.removeAll(keepingCapacity: true)
            entries.append(PollEntry(descriptor: monitor.wakeDescriptor, events: .readable))
            if let sap { entries.append(PollEntry(descriptor: sap, events: .readable)) }
            clients.removeAll(keepingCapacity: true)
            for (client, fd) in sockets {
                clients.append(client)
                entries.append(PollEntry(descriptor: fd, events: .readable))
            }
            let ready: Int
            do {
                // No timed wake-up: packets, announcements or the eventfd (a new set, the stop) wake it.
                ready = try Descriptor.poll(&entries, timeoutMilliseconds: -1)
            } catch {
                monitor.log(.init(level: .warning, text: "the RTP monitor stops: \(error)"))
                return
            }
            guard ready > 0 else { continue }
            if !entries[0].returned.isEmpty { EventFD.drain(monitor.wakeDescriptor) }
            // Kernel receive times are on the wall clock: one offset to CLOCK_MONOTONIC a round.
            let wallLessMonotonic = SystemClock.wallClockOffsetNanoseconds()
            var index = 1
            if let sap {
                if !entries[index].returned.isEmpty { readAnnouncements(sap, wallLessMonotonic: wallLessMonotonic) }
                index += 1
            }
            for client in clients {
                defer { index += 1 }
                guard !entries[index].returned.isEmpty, let fd = sockets[client] else { continue }
                readPackets(client: client, fd: fd, wallLessMonotonic: wallLessMonotonic)
            }
            flush()
        }
    }

    private func now() -> Int { Int(SystemClock.monotonicSeconds() * 1e6) }

    /// The streams PipeWire receives now; the SAP socket from the first stream wanted on.
    private func apply(_ wanted: [String: RTPMonitor.Wanted]) {
        perform(core.apply(wanted, now: now()))
        // Kept open once opened: a sender that comes back announces itself before pw-dump shows
        // its node, and the core remembers that announcement.
        if !wanted.isEmpty, sap == nil {
            do {
                sap = try MulticastSocket.open(
                    group: SAPAnnouncement.group, port: SAPAnnouncement.port, interface: monitor.interface)
            } catch {
                monitor.log(
                    .init(
                        level: .warning,
                        text: "RTP monitor: cannot hear SAP announcements: \(error); RTP loss is not counted"))
            }
        }
        flush()
    }

    private func perform(_ effects: [RTPMonitorCore.Effect]) {
        for effect in effects {
            switch effect {
            case .close(let client):
                if let fd = sockets.removeValue(forKey: client) { Descriptor.close(fd) }
            case .open(let client, let group, let port):
                if let fd = sockets.removeValue(forKey: client) { Descriptor.close(fd) }
                do {
                    sockets[client] = try MulticastSocket.open(group: group, port: port, interface: monitor.interface)
                } catch {
                    core.openFailed(client: client, error: "\(error)")
                }
            }
        }
    }

    /// The receive time of a datagram on CLOCK_MONOTONIC (µs): the kernel's, else now.
    private func micros(_ wall: Int64, _ wallLessMonotonic: Int64) -> (micros: Int, wall: Int64) {
        let wallNanoseconds = wall != 0 ? wall : SystemClock.realtimeNanoseconds()
        return (Int((wallNanoseconds &- wallLessMonotonic) / 1000), wallNanoseconds)
    }

    private func readAnnouncements(_ fd: Int32, wallLessMonotonic: Int64) {
        var taken = 0
        while taken < RTPMonitor.packetsPerRound, let datagram = try? MulticastSocket.receive(fd, into: buffer) {
            taken += 1
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<min(datagram.size, buffer.count)])
            let time = micros(datagram.realtimeNanoseconds, wallLessMonotonic)
            perform(core.announcement(bytes, size: datagram.size, from: datagram.source, now: time.micros))
        }
    }

    private func readPackets(client: String, fd: Int32, wallLessMonotonic: Int64) {
        // At most `packetsPerRound` a round: a flooded socket cannot starve the others.
        var taken = 0
        while taken < RTPMonitor.packetsPerRound, let datagram = try? MulticastSocket.receive(fd, into: buffer) {
            taken += 1
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<min(datagram.size, buffer.count)])
            let time = micros(datagram.realtimeNanoseconds, wallLessMonotonic)
            core.packet(
                client: client, bytes, from: datagram.source, arrivalMicros: time.micros, wallNanoseconds: time.wall,
                socketDrops: datagram.socketDrops)
        }
    }

    /// The core's notes to the log and its facts to the readers.
    private func flush() {
        for note in core.takeNotes() { monitor.log(note) }
        monitor.publish(core.facts)
    }

    private func closeAll() {
        for fd in sockets.values { Descriptor.close(fd) }
        sockets = [:]
        if let sap { Descriptor.close(sap) }
        sap = nil
        monitor.publish([:])
    }
}

// recd's own ear on the RTP streams PipeWire receives: for each stream whose node `pw-dump`
// shows (RTPSessions.swift), recd joins the stream's multicast group on a socket of its own,
// beside module-rtp-source's (SO_REUSEADDR/SO_REUSEPORT: both get every packet), reads only the
// RTP headers, and counts packets received and lost (sequence numbers) and silences (no packet
// for longer than a few packet times). PipeWire 0.3.65 keeps no such count a client can read
// (docs/network-audio.md).
//
// Where a stream's group and port come from: its SAP announcement (the SDP's `c=` and `m=`),
// heard on SAP's group as module-rtp-source hears it, and taken only for a session whose SDP
// origin (`o=`) is a node's `rtp.origin` in the last `pw-dump`: recd listens only to what
// PipeWire receives, never to an address a client names, and at most `maximumStreams` of them.
// A stream's socket closes when its node goes.
//
// Threads: `watch` and `stop` on the control thread; the sockets, the SAP parsing and the
// counting on the **rtp monitor** thread (one poll over all the sockets and an eventfd);
// `facts`, and `RTPReception`'s methods (a recorder's archiver), from any thread: the counts are
// published under a mutex after each poll round.
import Archive
import Platform
import Synchronization
import SystemSupport

/// A stretch of a stream's audio that no packet brought (`RTPAudioGaps`): `missingMicros` of it,
/// and the kernel's receive times of the last packet before and the first after, on
/// CLOCK_MONOTONIC (µs) and the wall clock (ns since 1970).
struct RTPSilence: Equatable, Sendable {
    var lastPacketMicros: Int
    var firstPacketMicros: Int
    var lastPacketWallNanoseconds: Int64
    var firstPacketWallNanoseconds: Int64
    var missingMicros: Int
}

/// What the monitor knows of one stream, by the JACK client its node shows as. A plain value.
struct RTPStreamFacts: Equatable, Sendable {
    var session: String
    /// The sender's address (the SDP origin's); nil when it announced none.
    var address: String?
    var group: String
    var port: UInt16
    var packets = 0
    var lost = 0
    var duplicates = 0
    /// Silences since the monitor joined (each ended by a packet).
    var silences = 0
    /// The last `RTPMonitor.keptSilences` of them, oldest first.
    var recentSilences: [RTPSilence] = []
    /// The kernel's receive time of the newest packet (CLOCK_MONOTONIC µs); nil before the first.
    var lastPacketMicros: Int?
    /// The packet time (the SDP's `a=ptime`; 1 ms when it says none, AES67's).
    var packetMicros: Int
    /// Missing audio longer than this is a silence: max(20 ms, 4 packet times).
    var silenceMicros: Int
    /// The receiver's buffer (`sess.latency.msec`): how long after a packet came its audio plays.
    var latencyMicros: Int

    /// `NAME@ADDRESS` (or `NAME`): as `routes` and the metrics name it.
    var label: String { address.map { "\(session)@\($0)" } ?? session }

    /// The stretches of the receiver's output (CLOCK_MONOTONIC µs) that hold zeros for want of
    /// packets, overlapping `range`, at `now`: each silence's missing audio, from where the last
    /// packet before it ended, one receiver's buffer after that packet came; one going on (no
    /// packet for longer than the buffer, or `silenceMicros` if longer, by `now`) ends at
    /// `range.upperBound`.
    func outages(overlapping range: Range<Int>, now: Int) -> [Range<Int>] {
        var outages = recentSilences.map {
            let start = $0.lastPacketMicros + packetMicros + latencyMicros
            return start..<(start + $0.missingMicros)
        }
        if let last = lastPacketMicros, now - last > max(silenceMicros, latencyMicros) {
            let start = last + packetMicros + latencyMicros
            if start < range.upperBound { outages.append(start..<range.upperBound) }
        }
        return outages.filter { $0.overlaps(range) && !$0.isEmpty }
    }
}

/// The RTP monitor (see the top of this file). Owned by the engine controller.
final class RTPMonitor: Sendable {
    /// The most streams listened to at once.
    static let maximumStreams = 64
    /// Silences kept per stream (older ones are only counted).
    static let keptSilences = 64
    /// The receiver's buffer when the node does not say (module-rtp-source's default).
    static let defaultLatencyMilliseconds = 100
    /// Bytes read of a packet: an RTP header is 12, an SAP announcement with its SDP well under
    /// this; the rest of a longer datagram is dropped unread.
    static let receiveBytes = 2048
    /// Datagrams read from one socket before the poll turns to the others (a round is a few ms
    /// of packets at AES67's 1 ms; the kernel's queue holds the rest).
    static let packetsPerRound = 256

    /// A stream PipeWire receives, as the last `pw-dump` showed its node.
    struct Wanted: Hashable, Sendable {
        /// The JACK client the node shows as.
        var client: String
        var session: String
        var address: String?
        var latencyMilliseconds: Int
    }

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
    let interface: String?

    init(interface: String? = nil) throws(SystemError) {
        wake = try EventFD.make()
        self.interface = interface
    }

    deinit { Descriptor.close(wake) }

    /// Listens to exactly these streams from now on (by SDP origin); starts the monitor thread
    /// the first time there is one. Control thread.
    func watch(_ wanted: [String: Wanted]) {
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
                Log.warning("cannot start the RTP monitor thread: \(error); RTP loss is not counted")
            }
        }
        EventFD.signal(wake)
    }

    /// Ends the monitor thread and closes its sockets. Control thread, at shutdown.
    func stop() {
        shared.withLock { $0.stopping = true }
        EventFD.signal(wake)
        thread.withLock { $0 }?.join()
    }

    /// The streams listened to, by JACK client. Any thread.
    func facts() -> [String: RTPStreamFacts] { shared.withLock { $0.facts } }

    /// The first of `clients` that is a stream listened to. Any thread.
    func facts(ofAnyOf clients: [String]) -> RTPStreamFacts? {
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

/// The monitor thread's state and loop: it owns every socket. Monitor thread only.
private final class RTPMonitorLoop: @unchecked Sendable {
    private struct Stream {
        var fd: Int32
        var origin: String
        var counter = RTPSequenceCounter()
        var facts: RTPStreamFacts
        var lastWall: Int64 = 0
        var gaps: RTPAudioGaps
        /// The RTP clock's rate (the SDP's; 48 kHz when it says none).
        var clockRate: Int
    }

    /// Strong: the thread keeps the monitor until `stop` ends it.
    private let monitor: RTPMonitor
    private var wanted: [String: RTPMonitor.Wanted] = [:]
    private var sap: Int32?
    /// By JACK client.
    private var streams: [String: Stream] = [:]
    /// The last SDP heard for each origin (at most `maximumStreams` × 4; the oldest forgotten first):
    /// a node pw-dump shows after its announcement was heard is listened to at once, not 5 s later.
    private var heard: [String: SDPSession] = [:]
    private var heardOrder: [String] = []
    /// Origins whose socket could not be opened, so that each failure is logged once.
    private var failedOrigins: Set<String> = []
    private let buffer = UnsafeMutableRawBufferPointer.allocate(
        byteCount: RTPMonitor.receiveBytes, alignment: MemoryLayout<UInt32>.alignment)

    init(monitor: RTPMonitor) { self.monitor = monitor }

    deinit { buffer.deallocate() }

    func run() {
        defer { closeAll() }
        var entries: [PollEntry] = []
        while true {
            let (changed, stopping) = monitor.takeWanted()
            if stopping { return }
            if let changed { apply(changed) }
            entries.removeAll(keepingCapacity: true)
            entries.append(PollEntry(descriptor: monitor.wakeDescriptor, events: .readable))
            if let sap { entries.append(PollEntry(descriptor: sap, events: .readable)) }
            let clients = Array(streams.keys)
            for client in clients { entries.append(PollEntry(descriptor: streams[client]!.fd, events: .readable)) }
            let ready: Int
            do {
                // No timed wake-up: packets, announcements or the eventfd (a new set, the stop) wake it.
                ready = try Descriptor.poll(&entries, timeoutMilliseconds: -1)
            } catch {
                Log.error("the RTP monitor stops: \(error)")
                return
            }
            guard ready > 0 else { continue }
            if !entries[0].returned.isEmpty { EventFD.drain(monitor.wakeDescriptor) }
            // Kernel receive times are on the wall clock: one offset to CLOCK_MONOTONIC a round.
            let wallLessMonotonic = SystemClock.wallClockOffsetNanoseconds()
            var index = 1
            if let sap {
                if !entries[index].returned.isEmpty { readAnnouncements(sap) }
                index += 1
            }
            var counted = false
            for client in clients {
                defer { index += 1 }
                guard !entries[index].returned.isEmpty, streams[client] != nil else { continue }
                readPackets(client: client, wallLessMonotonic: wallLessMonotonic)
                counted = true
            }
            if counted { publish() }
        }
    }

    /// The streams PipeWire receives now: close those that went, open those already announced;
    /// the SAP socket from the first stream wanted on.
    private func apply(_ newWanted: [String: RTPMonitor.Wanted]) {
        wanted = newWanted
        for (client, stream) in streams where wanted[stream.origin]?.client != client {
            Descriptor.close(stream.fd)
            streams[client] = nil
            Log.info("RTP monitor: stopped listening to \(stream.facts.label) (its node is gone)")
        }
        failedOrigins.formIntersection(wanted.keys)
        for (origin, want) in wanted where streams[want.client] == nil {
            if let sdp = heard[origin] { listen(to: sdp) }
        }
        // Kept open once opened: a sender that comes back announces itself before pw-dump shows
        // its node, and that announcement is what `heard` keeps.
        if !wanted.isEmpty, sap == nil {
            do {
                sap = try MulticastSocket.open(
                    group: SAPAnnouncement.group, port: SAPAnnouncement.port, interface: monitor.interface)
            } catch {
                Log.warning("RTP monitor: cannot hear SAP announcements: \(error); RTP loss is not counted")
            }
        }
        publish()
    }

    private func readAnnouncements(_ fd: Int32) {
        var taken = 0
        while taken < RTPMonitor.packetsPerRound, let (size, _) = try? MulticastSocket.receive(fd, into: buffer) {
            taken += 1
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<min(size, buffer.count)])
            guard let announcement = SAPAnnouncement(bytes), !announcement.deletion else { continue }
            remember(announcement.session)
            listen(to: announcement.session)
        }
    }

    private func remember(_ sdp: SDPSession) {
        if heard.updateValue(sdp, forKey: sdp.origin) == nil { heardOrder.append(sdp.origin) }
        if heardOrder.count > 4 * RTPMonitor.maximumStreams { heard[heardOrder.removeFirst()] = nil }
    }

    /// Opens the stream of `sdp` when its origin is a node PipeWire has (and it is not open yet,
    /// or moved to another group or port).
    private func listen(to sdp: SDPSession) {
        guard let want = wanted[sdp.origin] else { return }
        if let open = streams[want.client] {
            guard open.origin != sdp.origin || open.facts.group != sdp.group || open.facts.port != sdp.port else {
                return
            }
            Descriptor.close(open.fd)
            streams[want.client] = nil
        }
        guard streams.count < RTPMonitor.maximumStreams else {
            if failedOrigins.insert(sdp.origin).inserted {
                Log.warning("RTP monitor: already \(RTPMonitor.maximumStreams) streams; not counting \(want.session)")
            }
            return
        }
        let fd: Int32
        do {
            fd = try MulticastSocket.open(group: sdp.group, port: sdp.port, interface: monitor.interface)
        } catch {
            if failedOrigins.insert(sdp.origin).inserted {
                Log.warning("RTP monitor: cannot listen to \(want.session) at \(sdp.group):\(sdp.port): \(error)")
            }
            return
        }
        let packet = Int((sdp.packetMilliseconds ?? 1) * 1000)
        let rate = sdp.clockRate ?? 48_000
        let silence = max(20_000, 4 * packet)
        let facts = RTPStreamFacts(
            session: want.session, address: want.address, group: sdp.group, port: sdp.port, packetMicros: packet,
            silenceMicros: silence, latencyMicros: want.latencyMilliseconds * 1000)
        let gaps = RTPAudioGaps(
            thresholdSamples: silence * rate / 1_000_000,
            samplesPerPacket: sdp.packetMilliseconds.map { Int(($0 * Double(rate) / 1000).rounded()) })
        streams[want.client] = Stream(fd: fd, origin: sdp.origin, facts: facts, gaps: gaps, clockRate: rate)
        Log.info("RTP monitor: listening to \(facts.label) at \(sdp.group):\(sdp.port) (JACK client \(want.client))")
        publish()
    }

    private func readPackets(client: String, wallLessMonotonic: Int64) {
        guard var stream = streams[client] else { return }
        defer { streams[client] = stream }
        // At most `packetsPerRound` a round: a flooded socket cannot starve the others.
        var taken = 0
        while taken < RTPMonitor.packetsPerRound,
            let (size, wall) = try? MulticastSocket.receive(stream.fd, into: buffer)
        {
            taken += 1
            guard let header = RTPHeader(UnsafeRawBufferPointer(rebasing: buffer[0..<min(size, buffer.count)])) else {
                continue
            }
            let wallNanoseconds = wall != 0 ? wall : SystemClock.realtimeNanoseconds()
            let micros = Int((wallNanoseconds &- wallLessMonotonic) / 1000)
            let arrival = stream.counter.count(ssrc: header.ssrc, sequence: header.sequence)
            if arrival == .duplicate { continue }
            if let missing = stream.gaps.missing(before: header.timestamp, arrival: arrival),
                let last = stream.facts.lastPacketMicros
            {
                stream.facts.silences += 1
                stream.facts.recentSilences.append(
                    RTPSilence(
                        lastPacketMicros: last, firstPacketMicros: micros, lastPacketWallNanoseconds: stream.lastWall,
                        firstPacketWallNanoseconds: wallNanoseconds,
                        missingMicros: Int(Int64(missing) * 1_000_000 / Int64(stream.clockRate))))
                if stream.facts.recentSilences.count > RTPMonitor.keptSilences {
                    stream.facts.recentSilences.removeFirst()
                }
            }
            stream.facts.lastPacketMicros = max(micros, stream.facts.lastPacketMicros ?? micros)
            stream.lastWall = wallNanoseconds
        }
        stream.facts.packets = stream.counter.received
        stream.facts.lost = stream.counter.lost
        stream.facts.duplicates = stream.counter.duplicates
    }

    private func publish() {
        monitor.publish(streams.mapValues(\.facts))
    }

    private func closeAll() {
        for stream in streams.values { Descriptor.close(stream.fd) }
        streams = [:]
        if let sap { Descriptor.close(sap) }
        sap = nil
        publish()
    }
}

/// A recorder's view of the monitor: the network's facts about its input, whose ports are
/// `clients`' (looked up at each call: the stream may be found, lost and found again while the
/// recorder runs). Any thread (a recorder's archiver).
final class RTPReception: NetworkReception {
    private let monitor: RTPMonitor
    private let clients: [String]

    init(monitor: RTPMonitor, clients: [String]) {
        self.monitor = monitor
        self.clients = clients
    }

    func packetCounts() -> NetworkPacketCounts? {
        monitor.facts(ofAnyOf: clients).map { NetworkPacketCounts(received: $0.packets, lost: $0.lost) }
    }

    func outages(overlapping range: Range<Int>) -> [Range<Int>] {
        let now = Int(SystemClock.monotonicSeconds() * 1e6)
        return monitor.facts(ofAnyOf: clients)?.outages(overlapping: range, now: now) ?? []
    }
}

// One RTP stream as the monitor follows it: which datagrams are the stream's (from the announced
// sender, of the SSRC it established), their count, and its network losses (stretches
// without packets; NETWORK_LOSS in a segment), kept in a bounded
// list. Pure: the caller gives each datagram's bytes, source and receive time.
import Platform

/// A stretch of a stream's audio that no packet brought: `missingMicros` of it, and the kernel's
/// receive times of the last packet before and the first after, on CLOCK_MONOTONIC (µs) and the
/// wall clock (ns since 1970).
public struct NetworkLoss: Equatable, Sendable {
    public var lastPacketMicros: Int
    public var firstPacketMicros: Int
    public var lastPacketWallNanoseconds: Int64
    public var firstPacketWallNanoseconds: Int64
    public var missingMicros: Int

    public init(
        lastPacketMicros: Int, firstPacketMicros: Int, lastPacketWallNanoseconds: Int64,
        firstPacketWallNanoseconds: Int64, missingMicros: Int
    ) {
        self.lastPacketMicros = lastPacketMicros
        self.firstPacketMicros = firstPacketMicros
        self.lastPacketWallNanoseconds = lastPacketWallNanoseconds
        self.firstPacketWallNanoseconds = firstPacketWallNanoseconds
        self.missingMicros = missingMicros
    }
}

/// What the monitor knows of one stream, by the JACK client its node shows as. A plain value.
public struct RTPStreamFacts: Equatable, Sendable {
    /// Losses kept per stream (see `record`).
    public static let keptLosses = 64
    /// A kept loss that ended this long before the newest may make room for a new one whatever
    /// its length: no segment is longer than a day (`segment_seconds` ≤ 86400), and one that ended
    /// an hour more ago than that is behind every segment still open.
    public static let staleLossMicros = 25 * 3600 * 1_000_000

    public var session: String
    /// The sender's address (the SDP origin's); nil when it announced none.
    public var address: String?
    public var group: String
    public var port: UInt16
    public var packets = 0
    /// Sequence numbers skipped and not seen since, less those `unheard` explains.
    public var lost = 0
    public var duplicates = 0
    /// Sequence numbers skipped while recd's own socket dropped datagrams (its receive buffer
    /// full: the monitor fell behind, not the network; PipeWire's socket may well have had them):
    /// not in `lost`, and no network loss is recorded for a gap they explain.
    public var unheard = 0
    /// Datagrams on the stream's group and port that were not counted: from another address than
    /// the announced sender's, of another SSRC than the stream's, not RTP, or a jump.
    public var ignored = 0
    /// Losses since the monitor joined (each ended by a packet).
    public var lossCount = 0
    /// At most `keptLosses` of them, oldest first (see `record`).
    public var recentLosses: [NetworkLoss] = []
    /// The newest loss until the packet after the one that ended it says whether it was one:
    /// its timestamp going on from there keeps it (`record`), going back (the stream brought the
    /// audio it said was missing: a forged timestamp) drops it.
    public var pendingLoss: NetworkLoss?
    /// The kernel's receive time of the newest packet (CLOCK_MONOTONIC µs); nil before the first.
    public var lastPacketMicros: Int?
    /// The packet time (the SDP's `a=ptime`; 1 ms when it says none, AES67's).
    public var packetMicros: Int
    /// Missing audio longer than this is a loss: max(20 ms, 4 packet times).
    public var lossMicros: Int
    /// The receiver's buffer (`sess.latency.msec`): how long after a packet came its audio plays.
    public var latencyMicros: Int

    public init(
        session: String, address: String?, group: String, port: UInt16, packetMicros: Int, lossMicros: Int,
        latencyMicros: Int
    ) {
        self.session = session
        self.address = address
        self.group = group
        self.port = port
        self.packetMicros = packetMicros
        self.lossMicros = lossMicros
        self.latencyMicros = latencyMicros
    }

    /// `NAME@ADDRESS` (or `NAME`): as `routes` and the metrics name it.
    public var label: String { address.map { "\(session)@\($0)" } ?? session }

    /// Where a loss plays in the receiver's output (CLOCK_MONOTONIC µs): from where the last
    /// packet before it ended, one receiver's buffer after that packet came, for the audio missing.
    func placed(_ loss: NetworkLoss) -> Range<Int> {
        let start = loss.lastPacketMicros + packetMicros + latencyMicros
        return start..<(start + loss.missingMicros)
    }

    /// Counts `loss` and keeps it: merged into the newest kept one when it starts within a
    /// packet time of where that one ends (a loss right after another); apart when it
    /// overlaps it further (two losses of one stream cannot: forged timestamps can, and merging
    /// them would build one longer than any the stream had). When more than `keptLosses` are
    /// kept, the oldest goes if it is stale (`staleLossMicros`), else the shortest (the oldest
    /// of equally short ones): a flood of short losses cannot push a long one out while a
    /// segment may still ask for it.
    public mutating func record(_ loss: NetworkLoss) {
        lossCount += 1
        if let newest = recentLosses.last {
            let (before, new) = (placed(newest), placed(loss))
            if abs(new.lowerBound - before.upperBound) <= packetMicros {
                var merged = newest
                merged.firstPacketMicros = loss.firstPacketMicros
                merged.firstPacketWallNanoseconds = loss.firstPacketWallNanoseconds
                merged.missingMicros = max(before.upperBound, new.upperBound) - before.lowerBound
                recentLosses[recentLosses.count - 1] = merged
                return
            }
        }
        recentLosses.append(loss)
        guard recentLosses.count > Self.keptLosses else { return }
        if placed(recentLosses[0]).upperBound < placed(loss).upperBound - Self.staleLossMicros {
            recentLosses.removeFirst()
            return
        }
        var shortest = 0
        for index in recentLosses.indices
        where recentLosses[index].missingMicros < recentLosses[shortest].missingMicros {
            shortest = index
        }
        recentLosses.remove(at: shortest)
    }

    /// The stretches of the receiver's output (CLOCK_MONOTONIC µs) that hold zeros for want of
    /// packets, overlapping `range`, at `now`: each kept loss and the pending one where they
    /// play (`placed`); one going on (no packet for longer than the buffer, or `lossMicros` if
    /// longer, by `now`) ends at `range.upperBound`.
    public func losses(overlapping range: Range<Int>, now time: Int) -> [Range<Int>] {
        let now = min(max(0, time), RTPStreamTracker.latestMicros)
        var losses = recentLosses.map(placed)
        if let pendingLoss { losses.append(placed(pendingLoss)) }
        if let last = lastPacketMicros, isLosing(now: now) {
            let start = last + packetMicros + latencyMicros
            if start < range.upperBound { losses.append(start..<range.upperBound) }
        }
        return losses.filter { $0.overlaps(range) && !$0.isEmpty }
    }

    /// Whether a loss is going on at `now` (CLOCK_MONOTONIC µs): no packet for longer than the
    /// receiver's buffer, or `lossMicros` if longer. Its packets are counted lost only when the
    /// packet after it comes (`lost`).
    public func isLosing(now time: Int) -> Bool {
        guard let last = lastPacketMicros else { return false }
        let now = min(max(0, time), RTPStreamTracker.latestMicros)
        return now - last > max(lossMicros, latencyMicros)
    }

    /// The packets a loss going on at `now` has not brought so far (none are in `lost` yet):
    /// one a packet time since the last packet came; 0 while packets come.
    public func packetsMissing(now time: Int) -> Int {
        let now = min(max(0, time), RTPStreamTracker.latestMicros)
        guard let last = lastPacketMicros, isLosing(now: now), packetMicros > 0 else { return 0 }
        return max(0, (now - last) / packetMicros - 1)
    }
}

/// Follows one stream's datagrams (see the top of this file). Which datagrams count:
/// - only those from `source`, the address the SDP's origin names (or, when it names none, the
///   address its announcement came from);
/// - only those of the SSRC the stream established: the first packet from the source locks its
///   SSRC. Another SSRC from the same source takes over only after the locked one has sent
///   nothing for `handoverLossMicros` and the new one has sent `handoverPackets` packets in
///   sequence (a sender that started again); nothing is counted lost across, and the time
///   between the last packet of the old and the first of the new is a loss, by their arrival;
/// - a jump of sequence numbers or timestamps is a jump only beyond what the time since the last
///   packet could hold, plus `jumpSlackMicros` (`RTPSequenceCounter`, `NetworkLossFinder`).
public struct RTPStreamTracker: Sendable {
    /// What a jump may skip beyond the time that passed: a sender's burst (a cycle's packets at
    /// once: 21 ms at a 1024-frame quantum, 171 ms at PipeWire's largest, 8192), the kernel's
    /// queue and the monitor's round. A forged jump can place at most this much audio that was
    /// not missing.
    public static let jumpSlackMicros = 1_000_000
    /// How long the stream's SSRC must be silent before another may take over.
    public static let handoverLossMicros = 3_000_000
    /// Packets in sequence a new SSRC must send before it takes over.
    public static let handoverPackets = 4

    /// What became of one datagram.
    public enum Disposition: Equatable, Sendable {
        case counted
        case duplicate
        /// From another address than the stream's sender.
        case otherSource
        /// Of another SSRC than the stream's.
        case otherSSRC
        case notRTP
        /// A jump (`RTPSequenceCounter.Arrival.jump`).
        case jump
        /// A new SSRC took over (its first packet, counted).
        case handover
    }

    private struct Candidate: Equatable, Sendable {
        var ssrc: UInt32
        var next: UInt16
        var packets: Int
    }

    /// Where the stream's packets come from.
    public let source: IPAddress
    public private(set) var facts: RTPStreamFacts
    /// The RTP clock's rate (the SDP's; 48 kHz when it says none).
    let clockRate: Int
    private(set) var ssrc: UInt32?
    private var counter = RTPSequenceCounter()
    private var gaps: NetworkLossFinder
    private var lastWall: Int64 = 0
    /// The timestamp of the packet that ended the pending loss.
    private var pendingEnd: UInt32 = 0
    private var candidate: Candidate?
    /// The counts of the SSRCs before the current one: the facts' counts only grow.
    private var before = (received: 0, lost: 0, duplicates: 0, unheard: 0)
    /// The socket's drop count (SO_RXQ_OVFL) when the stream's last packet came; nil before
    /// the first.
    private var socketDropsBefore: UInt32?
    /// Skipped numbers the socket's drops explain, for the current SSRC.
    private var unheard = 0
    /// `facts.ignored` when the stream's last packet came.
    private var ignoredBefore = 0

    /// A stream of `session` (its SDP) from `source`, played by a receiver with a buffer of
    /// `latencyMilliseconds`; `address`: the sender as `routes` names it.
    public init(session sdp: SDPStreamDescription, source: IPAddress, name: String, address: String?, latencyMilliseconds: Int) {
        self.source = source
        let packet = Int((sdp.packetMilliseconds ?? 1) * 1000)
        let rate = sdp.clockRate ?? 48_000
        let loss = max(20_000, 4 * packet)
        clockRate = rate
        facts = RTPStreamFacts(
            session: name, address: address, group: sdp.group, port: sdp.port, packetMicros: packet,
            lossMicros: loss, latencyMicros: max(0, min(latencyMilliseconds, 60_000)) * 1000)
        gaps = NetworkLossFinder(
            thresholdSamples: loss * rate / 1_000_000,
            samplesPerPacket: sdp.packetMilliseconds.map { Int(($0 * Double(rate) / 1000).rounded()) })
    }

    /// A packet's duration: learnt from the timestamps when the SDP did not say.
    private var packetMicros: Int {
        max(1, gaps.samplesPerPacket.map { $0 * 1_000_000 / clockRate } ?? facts.packetMicros)
    }

    /// The latest receive time taken (CLOCK_MONOTONIC µs: about 142 years of uptime); later ones
    /// are taken as this, so that no sum of times can overflow.
    public static let latestMicros = 1 << 52
    /// The longest time between two packets that bounds a jump (a day; longer is no more).
    static let longestElapsedMicros = 86_400_000_000

    /// Takes one datagram that came from `source` at `arrivalMicros` (CLOCK_MONOTONIC) and
    /// `wallNanoseconds`, when its socket had dropped `socketDrops` datagrams in all
    /// (`MulticastSocket.receive`).
    @discardableResult
    public mutating func take(
        _ bytes: UnsafeRawBufferPointer, from source: IPAddress?, arrivalMicros time: Int, wallNanoseconds: Int64,
        socketDrops: UInt32 = 0
    ) -> Disposition {
        let arrivalMicros = min(max(0, time), Self.latestMicros)
        guard source == self.source else { return ignore(.otherSource) }
        guard let header = RTPHeader(bytes) else { return ignore(.notRTP) }
        var disposition = Disposition.counted
        if let ssrc, header.ssrc != ssrc {
            guard takesOver(header, at: arrivalMicros) else { return ignore(.otherSSRC) }
            handOver(at: arrivalMicros, wallNanoseconds: wallNanoseconds)
            disposition = .handover
        }
        ssrc = header.ssrc
        // The time since the stream's last packet bounds what a jump may skip.
        let elapsed =
            min(max(0, arrivalMicros - (facts.lastPacketMicros ?? arrivalMicros)), Self.longestElapsedMicros)
            + Self.jumpSlackMicros
        let arrival = counter.count(sequence: header.sequence, maximumSkip: elapsed / packetMicros)
        defer { publishCounts() }
        switch arrival {
        case .duplicate: return .duplicate
        case .jump: return ignore(.jump)
        default: break
        }
        // What the socket dropped since the stream's last packet: at most that many of the
        // numbers this packet skipped went unheard here, not lost, if the socket carried
        // nothing but the stream meanwhile. Datagrams that do not count (another host flooding
        // the group to overflow recd's socket) leave the gap a loss: a flood never hides one.
        let dropped = socketDropsBefore.map { Int(socketDrops &- $0) } ?? 0
        let onlyTheStream = facts.ignored == ignoredBefore
        socketDropsBefore = socketDrops
        ignoredBefore = facts.ignored
        var explained = false
        if case .inOrder(let skipped) = arrival, skipped > 0, dropped > 0, onlyTheStream {
            unheard += min(skipped, dropped)
            explained = dropped >= skipped
        }
        // The pending loss: kept when this packet's timestamp goes on from the one that ended
        // it, dropped when it goes back.
        if let pending = facts.pendingLoss, arrival != .late {
            facts.pendingLoss = nil
            if arrival != .resynchronized, Int32(bitPattern: header.timestamp &- pendingEnd) >= 0 {
                facts.record(pending)
            }
        }
        let maximumSamples = Int(Int64(elapsed) * Int64(clockRate) / 1_000_000)
        if let missing = gaps.missing(before: header.timestamp, arrival: arrival, maximumSamples: maximumSamples),
            let last = facts.lastPacketMicros, !explained
        {
            facts.pendingLoss = NetworkLoss(
                lastPacketMicros: last, firstPacketMicros: arrivalMicros, lastPacketWallNanoseconds: lastWall,
                firstPacketWallNanoseconds: wallNanoseconds,
                missingMicros: Int(Int64(missing) * 1_000_000 / Int64(clockRate)))
            pendingEnd = header.timestamp
        }
        facts.lastPacketMicros = max(arrivalMicros, facts.lastPacketMicros ?? arrivalMicros)
        lastWall = wallNanoseconds
        return disposition
    }

    private mutating func ignore(_ disposition: Disposition) -> Disposition {
        facts.ignored += 1
        return disposition
    }

    /// Whether a packet of another SSRC completes a handover: the stream's own silent long
    /// enough, and this SSRC's packets in sequence.
    private mutating func takesOver(_ header: RTPHeader, at arrivalMicros: Int) -> Bool {
        guard let last = facts.lastPacketMicros, arrivalMicros - last >= Self.handoverLossMicros else {
            candidate = nil
            return false
        }
        if var next = candidate, next.ssrc == header.ssrc, next.next == header.sequence {
            next.packets += 1
            next.next = header.sequence &+ 1
            candidate = next
        } else {
            candidate = Candidate(ssrc: header.ssrc, next: header.sequence &+ 1, packets: 1)
        }
        return (candidate?.packets ?? 0) >= Self.handoverPackets
    }

    /// A new SSRC from here: the old one's counts kept, the time without its packets a loss.
    private mutating func handOver(at arrivalMicros: Int, wallNanoseconds: Int64) {
        if let pending = facts.pendingLoss {
            facts.pendingLoss = nil
            facts.record(pending)
        }
        if let last = facts.lastPacketMicros, arrivalMicros - last - packetMicros > facts.lossMicros {
            facts.record(
                NetworkLoss(
                    lastPacketMicros: last, firstPacketMicros: arrivalMicros, lastPacketWallNanoseconds: lastWall,
                    firstPacketWallNanoseconds: wallNanoseconds, missingMicros: arrivalMicros - last - packetMicros))
        }
        before = (facts.packets, facts.lost, facts.duplicates, facts.unheard)
        unheard = 0
        counter = RTPSequenceCounter()
        gaps = NetworkLossFinder(thresholdSamples: gaps.thresholdSamples, samplesPerPacket: gaps.samplesPerPacket)
        candidate = nil
        // The new SSRC's packets start the timeline again: the loss above is the gap.
        facts.lastPacketMicros = nil
    }

    private mutating func publishCounts() {
        facts.packets = before.received + counter.received
        facts.lost = before.lost + max(0, counter.lost - unheard)
        facts.duplicates = before.duplicates + counter.duplicates
        facts.unheard = before.unheard + unheard
    }
}

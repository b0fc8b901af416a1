// The RTP monitor's decisions, without sockets: which announcements it takes, which streams it
// listens to, and each stream's datagrams (RTPStream.swift). The monitor's thread (RTPMonitor.swift)
// owns the sockets and does what the decisions say (`Effect`); tests and the fuzz target drive the
// same decisions with datagrams, source addresses and times of their own.
//
// The rules against a host on the network that is not the sender:
// - An announcement counts only from its SDP origin's address (the `o=` line's; when that names
//   none, from any address, which then is the stream's sender). Others are refused.
// - A stream's packets count only from its sender's address (RTPStreamTracker).
// - An announcement that changes an open stream's group, port or sender takes effect only once
//   the stream has had no packet for `moveAfterLossMicros`: never while it receives.
// - What is remembered of announcements for nodes PipeWire may show later is bounded, per sender
//   address and in all.
import Platform

/// The monitor's state and decisions. One owner (the monitor's thread, or a test); no I/O.
public struct RTPMonitorCore: Sendable {
    /// What the owner must do with its sockets.
    public enum Effect: Equatable, Sendable {
        /// Listen to `group`:`port` for `client`'s stream (then `packet(client:...)` with what comes).
        case open(client: String, group: String, port: UInt16)
        /// Stop listening for `client`.
        case close(client: String)
    }

    /// A line for the log.
    public struct Note: Equatable, Sendable {
        public enum Level: Sendable { case info, warning }
        public var level: Level
        public var text: String
    }

    /// How long an open stream must have had no packet before an announcement may move it.
    public static let moveAfterLossMicros = 3_000_000
    /// Announcements remembered for origins PipeWire does not show yet, per sender address.
    public static let heardPerSender = 4
    /// Notes kept until taken (more are dropped: the log is not for floods).
    static let maximumNotes = 32
    /// Warnings logged per minute at most (an attacker's datagrams each make a new one: a flood
    /// of refused announcements from ever new addresses must not flood the journal); the rest
    /// are counted and the count logged when the minute is over.
    static let warningsPerMinute = 20
    /// Things logged once (refused senders, ignored packets), at most this many remembered.
    static let maximumLogged = 256

    private struct Stream: Sendable {
        var origin: String
        var tracker: RTPStreamTracker
        /// When the stream was opened (CLOCK_MONOTONIC µs): its loss before a first packet.
        var openedMicros: Int
        /// Whether the first datagram it did not count was logged.
        var loggedIgnored = false
        /// Whether the socket's first drop was logged (once a stream).
        var loggedUnheard = false
    }

    private struct Heard: Sendable {
        var sdp: SDPStreamDescription
        var sender: IPAddress
        var order: Int
    }

    /// The most streams listened to at once.
    public let maximumStreams: Int
    /// What PipeWire receives, by SDP origin (the node's `rtp.origin`).
    public private(set) var wanted: [String: RTPMonitor.Wanted] = [:]
    /// By JACK client.
    private var streams: [String: Stream] = [:]
    /// The last announcement taken for each origin, at most `maximumStreams` × `heardPerSender`.
    private var heard: [String: Heard] = [:]
    private var heardCount = 0
    /// Origins whose stream could not be opened, and other things logged once.
    private var logged: Set<String> = []
    public private(set) var notes: [Note] = []
    /// The warning budget's minute: when it began (CLOCK_MONOTONIC µs), warnings in it, and the
    /// ones suppressed.
    private var warningWindow: (start: Int?, logged: Int, suppressed: Int) = (nil, 0, 0)
    /// The latest time an entry point was given.
    private var latestMicros = 0

    public init(maximumStreams: Int = 64) {
        self.maximumStreams = max(1, maximumStreams)
    }

    /// The streams listened to, by JACK client.
    public var facts: [String: RTPStreamFacts] { streams.mapValues(\.tracker.facts) }

    /// The group and port `client`'s stream is opened on; nil when none.
    public func destination(of client: String) -> (group: String, port: UInt16)? {
        streams[client].map { ($0.tracker.facts.group, $0.tracker.facts.port) }
    }

    /// The notes since the last call.
    public mutating func takeNotes() -> [Note] {
        defer { notes = [] }
        return notes
    }

    private mutating func note(_ level: Note.Level, _ text: String) {
        if level == .warning {
            if latestMicros - (warningWindow.start ?? Int.min / 2) >= 60_000_000 {
                if warningWindow.suppressed > 0, notes.count < Self.maximumNotes {
                    notes.append(
                        Note(
                            level: .warning,
                            text: "RTP monitor: \(warningWindow.suppressed) more warnings in the last minute not logged"
                        ))
                }
                warningWindow = (latestMicros, 0, 0)
            }
            guard warningWindow.logged < Self.warningsPerMinute else {
                warningWindow.suppressed += 1
                return
            }
            warningWindow.logged += 1
        }
        if notes.count < Self.maximumNotes { notes.append(Note(level: level, text: text)) }
    }

    /// Whether `key` is new to the log (and now remembered).
    private mutating func firstTime(_ key: String) -> Bool {
        if logged.count >= Self.maximumLogged { logged = [] }
        return logged.insert(key).inserted
    }

    /// The streams PipeWire receives now (by SDP origin): those that went are closed, those
    /// already announced opened.
    public mutating func apply(_ newWanted: [String: RTPMonitor.Wanted], now time: Int) -> [Effect] {
        let now = Self.clamped(time)
        latestMicros = max(latestMicros, now)
        wanted = newWanted
        var effects: [Effect] = []
        for (client, stream) in streams where wanted[stream.origin]?.client != client {
            streams[client] = nil
            effects.append(.close(client: client))
            note(.info, "RTP monitor: stopped listening to \(stream.tracker.facts.label) (its node is gone)")
        }
        logged = logged.filter { key in !key.hasPrefix("origin ") || wanted[String(key.dropFirst(7))] != nil }
        for (origin, want) in wanted.sorted(by: { $0.key < $1.key }) where streams[want.client] == nil {
            if let heard = heard[origin] { effects += listen(to: heard.sdp, sender: heard.sender, now: now) }
        }
        return effects
    }

    /// One SAP datagram of `size` bytes (`bytes` holds its first bytes) from `source`, received at
    /// `now` (CLOCK_MONOTONIC µs).
    public mutating func announcement(
        _ bytes: UnsafeRawBufferPointer, size: Int, from source: IPAddress?, now time: Int
    ) -> [Effect] {
        let now = Self.clamped(time)
        latestMicros = max(latestMicros, now)
        // A datagram longer than what was read is not an announcement recd reads whole.
        guard size <= bytes.count, let source, let announcement = SAPAnnouncement(bytes), !announcement.deletion else {
            return []
        }
        let sdp = announcement.session
        if let origin = sdp.originAddress, origin != source {
            if firstTime("refused \(source) \(sdp.origin)") {
                note(
                    .warning,
                    "RTP monitor: refused an announcement of \(sdp.origin) from \(source), not the address it names")
            }
            return []
        }
        let sender = sdp.originAddress ?? source
        if let want = wanted[sdp.origin], let open = streams[want.client], !same(open, sdp, sender),
            !quiet(open, now: now)
        {
            if firstTime("moved \(want.client) \(sdp.group):\(sdp.port) \(sender)") {
                note(
                    .warning,
                    "RTP monitor: \(open.tracker.facts.label) announced at \(sdp.group):\(sdp.port) from \(sender) "
                        + "while its packets still come to \(open.tracker.facts.group):\(open.tracker.facts.port); "
                        + "staying there until they stop")
            }
            return []
        }
        remember(sdp, sender: sender)
        return listen(to: sdp, sender: sender, now: now)
    }

    /// One datagram on `client`'s stream.
    public mutating func packet(
        client: String, _ bytes: UnsafeRawBufferPointer, from source: IPAddress?, arrivalMicros: Int,
        wallNanoseconds: Int64, socketDrops: UInt32 = 0
    ) {
        latestMicros = max(latestMicros, Self.clamped(arrivalMicros))
        let unheardBefore = streams[client]?.tracker.facts.unheard ?? 0
        // In place (no copy of the stream's state per packet).
        guard
            let disposition = streams[client]?.tracker.take(
                bytes, from: source, arrivalMicros: arrivalMicros, wallNanoseconds: wallNanoseconds,
                socketDrops: socketDrops)
        else { return }
        if let stream = streams[client], stream.tracker.facts.unheard > unheardBefore, !stream.loggedUnheard {
            streams[client]?.loggedUnheard = true
            note(
                .warning,
                "RTP monitor: recd's own socket dropped datagrams of \(stream.tracker.facts.label) (the monitor "
                    + "fell behind: the machine is too busy); they count as unheard, not as network loss")
        }
        guard disposition != .counted, disposition != .duplicate, let stream = streams[client] else { return }
        let label = stream.tracker.facts.label
        if disposition == .handover {
            note(.info, "RTP monitor: \(label) goes on with a new SSRC (its sender started again)")
        } else if !stream.loggedIgnored {
            streams[client]?.loggedIgnored = true
            let from = source.map { "\($0)" } ?? "an unknown address"
            note(
                .warning,
                "RTP monitor: not counting datagrams for \(label) (the first from \(from): \(disposition)); "
                    + "only \(stream.tracker.source)'s of the stream's SSRC count")
        }
    }

    /// The socket for `client` could not be opened (`error`): the stream is dropped.
    public mutating func openFailed(client: String, error: String) {
        guard let stream = streams.removeValue(forKey: client) else { return }
        if firstTime("origin \(stream.origin)") {
            note(
                .warning,
                "RTP monitor: cannot listen to \(stream.tracker.facts.session) at "
                    + "\(stream.tracker.facts.group):\(stream.tracker.facts.port): \(error)")
        }
    }

    /// A time within 0...`RTPStreamTracker.latestMicros`: no difference of two can overflow.
    static func clamped(_ micros: Int) -> Int { min(max(0, micros), RTPStreamTracker.latestMicros) }

    private func same(_ stream: Stream, _ sdp: SDPStreamDescription, _ sender: IPAddress) -> Bool {
        stream.origin == sdp.origin && stream.tracker.facts.group == sdp.group && stream.tracker.facts.port == sdp.port
            && stream.tracker.source == sender
    }

    /// Whether `stream` has had no packet (or none since it was opened) for `moveAfterLossMicros`.
    private func quiet(_ stream: Stream, now: Int) -> Bool {
        let last = stream.tracker.facts.lastPacketMicros ?? stream.openedMicros
        return now - last >= Self.moveAfterLossMicros
    }

    private mutating func remember(_ sdp: SDPStreamDescription, sender: IPAddress) {
        heardCount &+= 1
        if heard[sdp.origin] == nil {
            // Room first: this sender's oldest beyond its share, then anyone's oldest.
            let own = heard.filter { $0.value.sender == sender }
            if own.count >= Self.heardPerSender, let oldest = own.min(by: { $0.value.order < $1.value.order }) {
                heard[oldest.key] = nil
            } else if heard.count >= maximumStreams * Self.heardPerSender,
                let oldest = heard.min(by: { $0.value.order < $1.value.order })
            {
                heard[oldest.key] = nil
            }
        }
        heard[sdp.origin] = Heard(sdp: sdp, sender: sender, order: heardCount)
    }

    /// Opens the stream of `sdp` when its origin is a node PipeWire has (and it is not open yet,
    /// or it moved: the caller checked that it may).
    private mutating func listen(to sdp: SDPStreamDescription, sender: IPAddress, now: Int) -> [Effect] {
        guard let want = wanted[sdp.origin] else { return [] }
        var effects: [Effect] = []
        if let open = streams[want.client] {
            if same(open, sdp, sender) { return [] }
            streams[want.client] = nil
            effects.append(.close(client: want.client))
        }
        guard streams.count < maximumStreams else {
            if firstTime("origin \(sdp.origin)") {
                note(.warning, "RTP monitor: already \(maximumStreams) streams; not counting \(want.session)")
            }
            return effects
        }
        let tracker = RTPStreamTracker(
            session: sdp, source: sender, name: want.session, address: want.address,
            latencyMilliseconds: want.latencyMilliseconds)
        streams[want.client] = Stream(origin: sdp.origin, tracker: tracker, openedMicros: now)
        note(
            .info,
            "RTP monitor: listening to \(tracker.facts.label) at \(sdp.group):\(sdp.port) from \(sender) "
                + "(JACK client \(want.client))")
        effects.append(.open(client: want.client, group: sdp.group, port: sdp.port))
        return effects
    }
}

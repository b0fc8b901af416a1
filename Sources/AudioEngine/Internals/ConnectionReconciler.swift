// The one owner of recd's JACK connections. Two rules want connections: port keeping (a
// configured group ↔ the JACK ports behind it) and attachments (an attached application's
// ports ↔ recd's ports for it, and nothing else). Each contributes wanted and forbidden edges;
// `plan` diffs them against JACK's graph; `ConnectionWorker` applies the difference on a
// thread of its own. Conflicts are decided here and nowhere else, by this rule:
//
//   1. Forbidden beats wanted.
//   2. An attachment beats a configured group: a JACK port an attachment holds (the app's
//      ports and recd's ports for it) is no group's target while the attachment lasts, so
//      the group is unavailable and any edge of it touching that port is forbidden.
//   3. An edge recd changed more than twice within a second (recd made it, something undid
//      it, again) is left alone: neither made nor cut until its ports register again or
//      `ChurnTracker.retrySeconds` pass. Two owners fighting over an edge is a bug to report
//      (`status` jack.churning), not one to feed forever.
//
// `plan` and `ChurnTracker` are pure (no JACK, an injected clock): any thread.

/// Which rule wants an edge.
enum ConnectionOwner: Hashable, Sendable {
    /// Port keeping: the configured group of that name.
    case group(String)
    /// The attachment of that JACK client.
    case attachment(String)
}

/// What the rules want of the graph, as values: a snapshot the control thread builds and
/// hands to the worker.
struct ConnectionRules: Equatable, Sendable {
    /// Which way a watched port faces: an output is an edge's source, an input its destination.
    enum Side: Equatable, Sendable {
        case output
        case input
    }

    /// Edges a rule wants, with the rule.
    var wanted: [JackConnection: ConnectionOwner] = [:]
    /// Ports an attachment holds: an edge touching one that no attachment wants is forbidden.
    var guardedPorts: Set<String> = []
    /// Edges to remove once (an attachment that ended: its app and recd ports part).
    var forbidden: Set<JackConnection> = []
    /// Every port whose edges the worker reads (recd's groups and the guarded ports).
    var watched: [String: Side] = [:]
    /// Edges JACK announced removed since the last pass: connected without asking (the local
    /// view of the graph may lag the server's by a moment; "already connected" is success).
    var removedByOthers: Set<JackConnection> = []
    /// Ports that registered since the last pass: their left-alone edges are tried again.
    var registered: Set<String> = []

    /// Whether rule 1 or 2 forbids `edge`.
    func isForbidden(_ edge: JackConnection) -> Bool {
        if forbidden.contains(edge) { return true }
        guard guardedPorts.contains(edge.source) || guardedPorts.contains(edge.destination) else { return false }
        if case .attachment = wanted[edge] { return false }
        return true
    }
}

/// The changes one pass makes: first the cuts, then the connections.
struct ConnectionPlan: Equatable, Sendable {
    var disconnect: [JackConnection] = []
    var connect: [JackConnection] = []

    var isEmpty: Bool { disconnect.isEmpty && connect.isEmpty }
}

enum ConnectionReconciler {
    /// The difference between what the rules want and `actual` (the edges of the watched
    /// ports), without the edges left alone. Sorted, so that a pass is reproducible.
    static func plan(
        _ rules: ConnectionRules, actual: Set<JackConnection>, leftAlone: Set<JackConnection> = []
    ) -> ConnectionPlan {
        let disconnect = actual.filter { rules.isForbidden($0) && !leftAlone.contains($0) }
        let connect = rules.wanted.keys.filter { edge in
            !rules.isForbidden(edge) && !leftAlone.contains(edge)
                && (!actual.contains(edge) || rules.removedByOthers.contains(edge))
        }
        return ConnectionPlan(disconnect: disconnect.sorted(by: order), connect: connect.sorted(by: order))
    }

    /// The ports attachments hold (rule 2): no configured group may use them.
    static func heldPorts(_ attachments: [AttachmentHandle]) -> Set<String> {
        Set(attachments.flatMap { $0.playPorts + $0.capturePorts + $0.recdPlayPorts + $0.recdCapturePorts })
    }

    private static func order(_ lhs: JackConnection, _ rhs: JackConnection) -> Bool {
        (lhs.source, lhs.destination) < (rhs.source, rhs.destination)
    }
}

/// Rule 3: counts recd's own changes per edge and decides when an edge is left alone.
/// Owned by the connection worker; pure otherwise (the caller passes the time).
struct ChurnTracker: Sendable {
    /// The window changes are counted in.
    static let windowSeconds = 1.0
    /// Changes recd may make to one edge within the window; one more needed means a fight.
    static let changeLimit = 3
    /// How long an edge is left alone unless its ports register again first.
    var retrySeconds = 30.0

    /// An edge recd stopped touching.
    struct LeftAlone: Equatable, Sendable {
        var edge: JackConnection
        /// recd's changes within the window before it gave up.
        var changes: Int
        /// Whether recd was making it (port keeping, an attachment) or cutting it (a bypass).
        var recdWantedIt: Bool
        var since: Double
    }

    private var changes: [JackConnection: [Double]] = [:]
    private(set) var leftAlone: [JackConnection: LeftAlone] = [:]

    init(retrySeconds: Double = 30.0) { self.retrySeconds = retrySeconds }

    /// Edges left alone now (those whose retry time has come are forgiven first).
    mutating func leftAloneEdges(now: Double) -> Set<JackConnection> {
        leftAlone = leftAlone.filter { now - $0.value.since < retrySeconds }
        return Set(leftAlone.keys)
    }

    /// When the first left-alone edge is due to be tried again (nil: none is left alone).
    var nextRetry: Double? { leftAlone.values.map(\.since).min().map { $0 + retrySeconds } }

    /// `ports` registered again: their edges start afresh (a device plugged back in is not a fight).
    mutating func forgive(ports: Set<String>) {
        guard !ports.isEmpty else { return }
        func touches(_ edge: JackConnection) -> Bool { ports.contains(edge.source) || ports.contains(edge.destination) }
        leftAlone = leftAlone.filter { !touches($0.key) }
        changes = changes.filter { !touches($0.key) }
    }

    /// Takes back the change `mayChange` just counted: it changed nothing (JACK answered
    /// "already connected": a removal an earlier pass repaired before its news came).
    mutating func uncount(_ edge: JackConnection) {
        guard var recent = changes[edge], !recent.isEmpty else { return }
        recent.removeLast()
        changes[edge] = recent.isEmpty ? nil : recent
    }

    /// Whether recd may change `edge` now; if so, the change is counted. When the change
    /// would exceed the limit the edge is left alone and the answer is `.leaveAlone` (once:
    /// an edge already left alone is not asked about).
    mutating func mayChange(_ edge: JackConnection, recdWantsIt: Bool, now: Double) -> ChurnDecision {
        var recent = (changes[edge] ?? []).filter { now - $0 < Self.windowSeconds }
        guard recent.count < Self.changeLimit else {
            changes[edge] = nil
            let entry = LeftAlone(edge: edge, changes: recent.count, recdWantedIt: recdWantsIt, since: now)
            leftAlone[edge] = entry
            return .leaveAlone(entry)
        }
        recent.append(now)
        changes[edge] = recent
        // Old entries of edges recd no longer touches go, so the table stays as small as the graph.
        if changes.count > 4096 { changes = changes.filter { now - ($0.value.last ?? 0) < Self.windowSeconds } }
        return .change
    }
}

enum ChurnDecision: Equatable, Sendable {
    case change
    case leaveAlone(ChurnTracker.LeftAlone)
}

// What the control server's clients hold, per user and in all: connections and queued output
// bytes. Pure bookkeeping with no I/O, so the admission and budget rules are testable alone.

/// The control server's counts of connections and queued output, by uid. Owned by one
/// `ControlServer` on its control thread, kept in step with its connections (`connected`,
/// `disconnected`, `outputChanged` for every change of a connection's queue).
///
/// Exempt peers (`ControlServerHandler.isExemptFromUserLimits`: recd's administrators) count in
/// the totals only, never against a uid's share; they alone may take the reserved slots.
struct ClientLedger {
    /// Whose budget a connection counts against.
    struct Owner: Equatable {
        var uid: UInt32
        var exempt: Bool
    }

    /// Connections of each uid that is not exempt.
    private(set) var connectionsByUser: [UInt32: Int] = [:]
    /// Connections of peers that are not exempt, and of all.
    private(set) var ordinaryConnections = 0
    private(set) var connections = 0
    /// Queued output bytes of each uid's non-exempt connections (absent: none).
    private(set) var outputBytesByUser: [UInt32: Int] = [:]
    /// Queued output bytes of every connection.
    private(set) var outputBytes = 0

    /// Why a new connection of `owner` is refused, or nil to let it in. In order: the server is
    /// full; the slots left are reserved for the exempt; the uid holds its share already.
    func admission(of owner: Owner, _ limits: ControlServer.Limits) -> ClientRejection? {
        if connections >= limits.maxClients { return .tooManyClients }
        guard !owner.exempt else { return nil }
        if ordinaryConnections >= limits.maxClients - limits.reservedClients { return .tooManyClients }
        if connectionsByUser[owner.uid, default: 0] >= limits.maxClientsPerUser {
            return .tooManyClientsOfUser(uid: owner.uid, limit: limits.maxClientsPerUser)
        }
        return nil
    }

    mutating func connected(_ owner: Owner) {
        connections += 1
        guard !owner.exempt else { return }
        ordinaryConnections += 1
        connectionsByUser[owner.uid, default: 0] += 1
    }

    mutating func disconnected(_ owner: Owner) {
        connections -= 1
        guard !owner.exempt else { return }
        ordinaryConnections -= 1
        let left = connectionsByUser[owner.uid, default: 0] - 1
        connectionsByUser[owner.uid] = left > 0 ? left : nil
    }

    /// A connection of `owner` queued (positive) or wrote or dropped (negative) `delta` bytes.
    mutating func outputChanged(_ owner: Owner, by delta: Int) {
        outputBytes += delta
        guard !owner.exempt else { return }
        let held = outputBytesByUser[owner.uid, default: 0] + delta
        outputBytesByUser[owner.uid] = held > 0 ? held : nil
    }

    /// Whether `uid`'s non-exempt connections hold more than its budget.
    func isOver(_ limits: ControlServer.Limits, uid: UInt32) -> Bool {
        outputBytesByUser[uid, default: 0] > limits.maxPendingOutputBytesPerUser
    }
}

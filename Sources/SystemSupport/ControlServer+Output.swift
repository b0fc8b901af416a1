// The control server's output side: each client's unread output accounted against its own,
// its user's and the server's budgets; slow readers cut off; rejections flushed; the last
// output drained at stop. Control thread only.
import Platform

extension ControlServer {
    func reject(
        _ connection: Connection, _ reason: ClientRejection, _ handler: any ControlServerHandler
    ) {
        connection.rejected = true
        connection.reading = false
        connection.incompleteLineSince = nil
        if connection.closing == nil { connection.closing = .afterFlush }
        connection.lastDrainProgress = now
        if let line = handler.clientRejected(connection.id, reason: reason) {
            connection.output.append(line: line)
            account(connection)
        }
        needsService = true
    }

    /// Drops a client whose output queue overflowed: its queue is cut to the rest of the line it
    /// was in the middle of, then its last line; those it gets if it reads them within
    /// `Limits.flushTimeout` (a client that does not read has a full socket: one attempt now
    /// would lose the line that says why), then the connection closes.
    func dropSlowReader(
        _ connection: Connection, _ handler: any ControlServerHandler, reason: ClientRejection
    ) {
        connection.rejected = true
        connection.reading = false
        connection.output.truncateAfterCurrentLine()
        if let line = handler.clientRejected(connection.id, reason: reason) {
            connection.output.append(line: line)
        }
        flush(connection)
        account(connection)
        if connection.closing == nil { connection.closing = .afterFlush }
        connection.lastDrainProgress = now
    }

    /// Brings the ledger up to date with what `connection` has queued now. After every change
    /// to a connection's output: its bytes count against its uid's budget and everyone's.
    func account(_ connection: Connection) {
        let delta = connection.output.pendingByteCount - connection.accountedBytes
        guard delta != 0 else { return }
        ledger.outputChanged(connection.owner, by: delta)
        connection.accountedBytes += delta
    }

    /// Cuts off the slowest readers, the clients with the most output queued, until `uid` (a
    /// non-exempt sender's, or nil) and the server as a whole are within their budgets. Called
    /// from `send`, so that no burst of events within one callback outgrows a budget.
    func enforceOutputBudgets(uid: UInt32?) {
        if let uid {
            let reason = ClientRejection.unreadOverUserBudget(uid: uid, limit: limits.maxPendingOutputBytesPerUser)
            while ledger.isOver(limits, uid: uid), let slowest = slowestReader(uid: uid) {
                cutOff(slowest, reason)
            }
        }
        let reason = ClientRejection.unreadOverServerBudget(limit: limits.maxPendingOutputBytesTotal)
        while ledger.outputBytes > limits.maxPendingOutputBytesTotal, let slowest = slowestReader(uid: nil) {
            cutOff(slowest, reason)
        }
    }

    /// Stops output to `connection` and frees what it has queued at once (all but the rest of
    /// the line it is in the middle of reading); the handler hears of it, and the client gets
    /// its last line, at the next `service()`.
    func cutOff(_ connection: Connection, _ reason: ClientRejection) {
        guard connection.overflowed == nil else { return }
        connection.overflowed = reason
        connection.output.truncateAfterCurrentLine()
        account(connection)
        needsService = true
    }

    /// The client (of `uid`'s non-exempt ones, or of all) with the most output queued that is
    /// not already cut off.
    func slowestReader(uid: UInt32?) -> Connection? {
        var slowest: Connection?
        for connection in connections.values where connection.acceptsOutput && connection.accountedBytes > 0 {
            if let uid, connection.owner.exempt || connection.owner.uid != uid { continue }
            if connection.accountedBytes > (slowest?.accountedBytes ?? 0) { slowest = connection }
        }
        return slowest
    }

    /// How long the end of `run` waits, in all, for clients to read what is queued for them:
    /// the last events of a stop reach a watcher that reads; one that does not holds recd's
    /// exit no longer than this.
    public static let stopFlushSeconds = 2.0

    /// Writes each client's queued output as its reader takes it, until all is written, the
    /// clients that do not read have had `stopFlushSeconds`, or their connections failed.
    func drainAtStop() {
        let deadline = SystemClock.monotonicSeconds() + Self.stopFlushSeconds
        while true {
            let pending = connections.values.filter { !$0.output.isEmpty && !$0.failed }
            for connection in pending { flush(connection) }
            let waiting = pending.filter { !$0.output.isEmpty && !$0.failed }
            now = SystemClock.monotonicSeconds()
            guard !waiting.isEmpty, now < deadline else { return }
            var entries = waiting.map { PollEntry(descriptor: $0.fd, events: .writable) }
            let milliseconds = Int32(min(((deadline - now) * 1000).rounded(.up), 2000))
            if (try? Descriptor.poll(&entries, timeoutMilliseconds: milliseconds)) == nil {
                SystemClock.sleep(seconds: 0.01)
            }
        }
    }

    /// Writes queued output until the socket is full.
    func flush(_ connection: Connection) {
        var failure: SystemError?
        while !connection.output.isEmpty {
            let written = connection.output.drain { bytes in
                do throws(SystemError) {
                    guard case .transferred(let count) = try UnixSocket.send(connection.fd, bytes) else {
                        return 0
                    }
                    return count
                } catch {
                    failure = error
                    return 0
                }
            }
            if written == 0 { break }
            connection.lastDrainProgress = now
        }
        account(connection)
        if failure != nil {
            // EPIPE/ECONNRESET: the peer closed; nothing more can reach it.
            connection.failed = true
            needsService = true
        }
    }
}

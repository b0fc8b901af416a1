// The bounds a control server holds its clients to: line length, unread output per client, per
// user and in all, clients per user, how long a client may dawdle over a line or a flush.

extension ControlServer {
    /// Bounds that protect the daemon from misbehaving clients.
    public struct Limits: Sendable, Equatable {
        /// Longest accepted line, not counting its newline. Longer: `.lineTooLong`.
        public var maxLineBytes: Int
        /// Most output queued for one client. More: `.tooSlow`, and the client is dropped
        /// at once (its queued output is discarded).
        public var maxPendingOutputBytes: Int
        /// Seconds a client may keep an unterminated line. Longer: `.tooSlow`.
        public var incompleteLineTimeout: Double
        /// Most simultaneous clients. One more: `.tooManyClients`.
        public var maxClients: Int
        /// Of `maxClients`, the slots only peers exempt from user limits may take
        /// (`ControlServerHandler.isExemptFromUserLimits`: recd's administrators), so that
        /// they always get in however many connections the others hold. Beyond the rest:
        /// `.tooManyClients`.
        public var reservedClients: Int
        /// Most simultaneous clients of one uid that is not exempt. One more:
        /// `.tooManyClientsOfUser`.
        public var maxClientsPerUser: Int
        /// Most output queued for all the clients of one uid that is not exempt. More: its
        /// client with the most queued is dropped (`.unreadOverUserBudget`), and the next,
        /// until the uid is within.
        public var maxPendingOutputBytesPerUser: Int
        /// Most output queued for all clients together. More: the client with the most queued
        /// is dropped (`.unreadOverServerBudget`), and the next, until all are within.
        public var maxPendingOutputBytesTotal: Int
        /// Seconds a closing client (rejected, closed with `afterFlush`, or half-closed) may
        /// go without reading any of its remaining output before it is closed anyway.
        public var flushTimeout: Double
        /// Seconds between `tick` calls.
        public var tickInterval: Double
        /// Seconds between `tick` calls while the server is quiet: no client connected, the
        /// handler wants no frequent ticks (`ControlServerHandler.wantsFrequentTicks`). A
        /// client connecting or posted work brings the next tick back within `tickInterval`.
        /// Each timed wake-up costs a thread tens of µs; a recorder nobody watches needs few.
        public var quietTickInterval: Double
        /// Most descriptors a client may pass with one line (SCM_RIGHTS); at most
        /// `DescriptorPassing.maxDescriptorsPerMessage`. More: the server closes them all and
        /// delivers the line with `PassedDescriptors.refused`.
        public var maxDescriptorsPerLine: Int

        public init(
            maxLineBytes: Int = 64 * 1024,
            maxPendingOutputBytes: Int = 4 * 1024 * 1024,
            incompleteLineTimeout: Double = 10,
            maxClients: Int = 256,
            reservedClients: Int? = nil,
            maxClientsPerUser: Int? = nil,
            maxPendingOutputBytesPerUser: Int = 16 * 1024 * 1024,
            maxPendingOutputBytesTotal: Int = 64 * 1024 * 1024,
            flushTimeout: Double = 10,
            tickInterval: Double = 0.1,
            quietTickInterval: Double? = nil,
            maxDescriptorsPerLine: Int = 4
        ) {
            self.maxLineBytes = maxLineBytes
            self.maxPendingOutputBytes = maxPendingOutputBytes
            self.incompleteLineTimeout = incompleteLineTimeout
            self.maxClients = maxClients
            // Defaults: an eighth of the slots kept for the exempt, a quarter for any one user.
            self.reservedClients = reservedClients ?? maxClients / 8
            self.maxClientsPerUser = maxClientsPerUser ?? max(1, maxClients / 4)
            self.maxPendingOutputBytesPerUser = maxPendingOutputBytesPerUser
            self.maxPendingOutputBytesTotal = maxPendingOutputBytesTotal
            self.flushTimeout = flushTimeout
            self.tickInterval = tickInterval
            self.quietTickInterval = quietTickInterval ?? tickInterval
            self.maxDescriptorsPerLine = maxDescriptorsPerLine
        }
    }
}

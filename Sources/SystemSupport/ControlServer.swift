// The control socket server: one thread, one poll(2) loop, JSON lines in and out.
//
// Threads: `run` turns the calling thread into the control thread. `post` and `stop` may be
// called from any thread; everything else (`send`, `close`, `clientCount`) only from the
// control thread, normally from inside a `ControlServerHandler` callback or posted work.
import Glibc  // memchr
import Platform
import Synchronization

/// A single-threaded Unix-socket server for line-delimited messages.
///
/// The server owns the listening descriptor it is given (closed in `deinit`), every client
/// descriptor it accepts, and every descriptor a client passes (SCM_RIGHTS, read with
/// `recvmsg` and `MSG_CMSG_CLOEXEC`) until the handler takes it from the line it came with
/// (`PassedDescriptors`). It never blocks on a client: reads and writes are non-blocking,
/// output is buffered per client, and clients that send oversized lines, dawdle over a line,
/// stop reading, or exceed the connection limit are cut off (see `Limits`) with a last line
/// chosen by the handler.
///
/// A client that shuts down its sending side (`shutdown(SHUT_WR)`) still gets every reply
/// that the handler sends while handling its lines; the connection closes when that output
/// is flushed (or after `Limits.flushTimeout` without progress).
///
/// `@unchecked Sendable`: the mutable state is confined to the control thread (checked with
/// `assert` in debug builds); the only members used from other threads are `post` and
/// `stop`, which go through a `Mutex`, an `Atomic` and an eventfd.
public final class ControlServer: @unchecked Sendable {
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

    /// The limits this server enforces.
    public let limits: Limits

    // MARK: State shared with other threads

    /// Non-blocking eventfd; one write wakes the loop. Owned by the server.
    private let wakeFD: Int32
    private let stopRequested = Atomic<Bool>(false)
    private let postedWork = Mutex<[@Sendable () -> Void]>([])

    // MARK: Control-thread state

    /// Listening socket, owned by the server.
    private let listenFD: Int32
    /// signalfd for `watchedSignals`, owned by the server; nil when none are watched.
    private let signalFD: Int32?
    private let watchedSignals: [Int32]
    private var connections: [ClientID: Connection] = [:]
    /// Connections and queued output per uid and in all, kept with `connections`.
    private var ledger = ClientLedger()
    private var lastClientNumber: UInt64 = 0
    private var handler: (any ControlServerHandler)?
    private var controlThread: ThreadID?
    private var hasRun = false
    /// Monotonic time of the current loop iteration.
    private var now: Double = 0
    /// While accept is failing for lack of descriptors, when to try again.
    private var acceptResumesAt: Double = 0
    /// Set when some state change needs `service()` before the next poll may sleep.
    private var needsService = false
    /// One read's worth of scratch space, allocated once, owned by the server.
    private let readBuffer: UnsafeMutableRawBufferPointer

    /// Creates a server on `listeningFD`, a bound and listening Unix stream socket (from
    /// `bindListener` or `listenerFromSystemd`). On success the server owns the descriptor;
    /// on failure the caller still does.
    ///
    /// `signals` are reported to `ControlServerHandler.signalReceived` through a signalfd.
    /// They must be blocked in every thread for that to work: call `Signals.block` on the
    /// main thread before any other thread starts (`run` blocks them on the control thread
    /// as well).
    public init(
        listeningFD: Int32, limits: Limits = Limits(), watchingSignals signals: [Int32] = []
    ) throws(SystemError) {
        precondition(limits.maxLineBytes > 0 && limits.maxPendingOutputBytes > 0)
        precondition(limits.maxClients > 0 && limits.tickInterval > 0)
        precondition((0..<limits.maxClients).contains(limits.reservedClients) && limits.maxClientsPerUser > 0)
        precondition(limits.maxPendingOutputBytesPerUser > 0 && limits.maxPendingOutputBytesTotal > 0)
        precondition(limits.quietTickInterval >= limits.tickInterval)
        precondition((0...UnixSocket.descriptorSlots).contains(limits.maxDescriptorsPerLine))
        try Descriptor.setNonBlocking(listeningFD)
        try Descriptor.setCloseOnExec(listeningFD)
        let wakeFD = try EventFD.make()
        var signalFD: Int32? = nil
        if !signals.isEmpty {
            do throws(SystemError) {
                signalFD = try SignalFD.make(signals)
            } catch {
                Descriptor.close(wakeFD)
                throw error
            }
        }
        self.listenFD = listeningFD
        self.limits = limits
        self.wakeFD = wakeFD
        self.signalFD = signalFD
        self.watchedSignals = signals
        self.readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit {
        for connection in connections.values {
            connection.closePassedDescriptors()
            Descriptor.close(connection.fd)
        }
        Descriptor.close(listenFD)
        Descriptor.close(wakeFD)
        if let signalFD { Descriptor.close(signalFD) }
        readBuffer.deallocate()
    }

    // MARK: Any thread

    /// Runs `work` on the control thread, soon. Any thread. Work posted before `stop` runs
    /// before `run` returns; work posted after `run` has returned never runs.
    public func post(_ work: @escaping @Sendable () -> Void) {
        let wasEmpty = postedWork.withLock { queue in
            defer { queue.append(work) }
            return queue.isEmpty
        }
        // The loop drains the eventfd before taking the queue, so a non-empty queue is
        // always seen by a wake that is still to come.
        if wasEmpty { EventFD.signal(wakeFD) }
    }

    /// Makes `run` return after the current iteration. Any thread.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        EventFD.signal(wakeFD)
    }

    // MARK: Control thread

    /// Number of open client connections. Control thread.
    public var clientCount: Int {
        assertOnControlThread()
        return connections.count
    }

    /// Queues `line` and a newline for `client`. Control thread.
    ///
    /// `line` must not contain a newline (JSON encoders escape them). Unknown or closing
    /// clients are ignored. Queuing more than `Limits.maxPendingOutputBytes` gets the client
    /// rejected as `.tooSlow` once the current callback returns.
    public func send(_ line: String, to client: ClientID) {
        assertOnControlThread()
        guard let connection = connections[client], connection.acceptsOutput else { return }
        assert(!Self.containsNewline(line), "a control line must not contain a newline")
        connection.output.append(line: line)
        account(connection)
        if connection.output.pendingByteCount > limits.maxPendingOutputBytes {
            cutOff(connection, .tooSlow)
        }
        if ledger.outputBytes > limits.maxPendingOutputBytesTotal
            || (!connection.owner.exempt && ledger.isOver(limits, uid: connection.owner.uid))
        {
            enforceOutputBudgets(uid: connection.owner.exempt ? nil : connection.owner.uid)
        }
    }

    /// Closes `client`: stops reading from it at once; with `afterFlush`, first writes what
    /// is queued (further `send`s are dropped), otherwise discards it. `clientDisconnected`
    /// follows once the connection is gone. Control thread.
    public func close(_ client: ClientID, afterFlush: Bool) {
        assertOnControlThread()
        guard let connection = connections[client] else { return }
        connection.reading = false
        if !afterFlush {
            connection.closing = .now
        } else if connection.closing == nil {
            connection.closing = .afterFlush
            connection.lastDrainProgress = now
        }
        needsService = true
    }

    /// Runs the server on the calling thread, which becomes the control thread, until `stop`.
    /// May be called once. On return every client is closed (after its queued output was
    /// written as it read it, for at most `stopFlushSeconds` in all) and has had
    /// `clientDisconnected`.
    public func run(handler: any ControlServerHandler) {
        precondition(!hasRun, "ControlServer.run may be called only once")
        hasRun = true
        self.handler = handler
        controlThread = ThreadID.current
        if !watchedSignals.isEmpty {
            do {
                try SignalMask.block(watchedSignals)
            } catch {
                Log.error("control: cannot block signals \(watchedSignals): \(error)")
            }
        }
        now = SystemClock.monotonicSeconds()
        var nextTick = now + limits.tickInterval
        var pollSet: [PollEntry] = []
        var polled: [Connection] = []

        while !stopRequested.load(ordering: .acquiring) {
            service()

            pollSet.removeAll(keepingCapacity: true)
            polled.removeAll(keepingCapacity: true)
            pollSet.append(PollEntry(descriptor: wakeFD, events: .readable))
            let signalIndex = pollSet.count
            if let signalFD { pollSet.append(PollEntry(descriptor: signalFD, events: .readable)) }
            let listenIndex = pollSet.count
            let accepting = now >= acceptResumesAt
            if accepting { pollSet.append(PollEntry(descriptor: listenFD, events: .readable)) }
            let firstClientIndex = pollSet.count
            for connection in connections.values {
                var events: PollEvents = []
                if connection.reading { events.insert(.readable) }
                if !connection.output.isEmpty { events.insert(.writable) }
                pollSet.append(PollEntry(descriptor: connection.fd, events: events))
                polled.append(connection)
            }

            let wakeAt = accepting ? nextTick : min(nextTick, acceptResumesAt)
            let timeout: Int32 =
                needsService ? 0 : Int32(max(0, min(((wakeAt - now) * 1000).rounded(.up), 60_000)))
            do {
                _ = try Descriptor.poll(&pollSet, timeoutMilliseconds: timeout)
            } catch {
                // ENOMEM: the kernel is short of memory. Back off instead of spinning.
                Log.error("control: \(error)")
                SystemClock.sleep(seconds: 0.01)
            }
            now = SystemClock.monotonicSeconds()

            if !pollSet[0].returned.isEmpty {
                EventFD.drain(wakeFD)
                runPostedWork()
                nextTick = min(nextTick, now + limits.tickInterval)
            }
            if let signalFD, !pollSet[signalIndex].returned.isEmpty {
                for signo in SignalFD.readSignals(signalFD) {
                    handler.signalReceived(signo)
                }
            }
            if accepting, !pollSet[listenIndex].returned.isEmpty {
                acceptClients(handler)
                nextTick = min(nextTick, now + limits.tickInterval)
            }
            for (offset, connection) in polled.enumerated() {
                let revents = pollSet[firstClientIndex + offset].returned
                if revents.isEmpty || connections[connection.id] !== connection { continue }
                if revents.contains(.invalid) {
                    connection.failed = true
                    needsService = true
                    continue
                }
                if connection.reading && !revents.isDisjoint(with: [.readable, .hangUp, .error]) {
                    readFrom(connection, handler)
                }
                if !connection.output.isEmpty && !revents.isDisjoint(with: [.writable, .hangUp, .error]) {
                    flush(connection)
                }
            }

            if now >= nextTick {
                handler.tick(now: now)
                expireIncompleteLines(handler)
                let interval =
                    connections.isEmpty && !handler.wantsFrequentTicks ? limits.quietTickInterval : limits.tickInterval
                nextTick += interval
                if nextTick <= now { nextTick = now + interval }
            }
        }

        runPostedWork()
        drainAtStop()
        for connection in connections.values.sorted(by: { $0.id < $1.id }) {
            finish(connection, handler)
        }
        self.handler = nil
        controlThread = nil
    }

    // MARK: Loop internals

    /// One client connection. Control thread only.
    private final class Connection {
        enum Closing { case afterFlush, now }

        let id: ClientID
        /// Owned by the connection's entry in `connections`; closed in `finish`.
        let fd: Int32
        /// The peer's uid, and whether user limits spare it: whose budget it counts against.
        let owner: ClientLedger.Owner
        /// Queued output bytes as the ledger has them (`account`).
        var accountedBytes = 0
        var input: LineAssembler
        var output = OutputBuffer()
        /// Whether to poll for and deliver input.
        var reading = true
        /// The peer shut down its sending side; close once output is flushed.
        var peerFinishedSending = false
        var closing: Closing?
        /// Why `send` cut it off (its queue, or its uid's, or everyone's, grew past its limit):
        /// its output is discarded at once, and it is rejected at the next `service()`.
        var overflowed: ClientRejection?
        /// `clientRejected` was called.
        var rejected = false
        /// A read or write failed (peer gone); close at the next `service()`.
        var failed = false
        /// When the unterminated line now buffered began.
        var incompleteLineSince: Double?
        /// Last time a closing or half-closed client took some of its output.
        var lastDrainProgress: Double = 0
        /// Descriptors received and not yet delivered with their line, in arrival order. Owned
        /// here until `takePassedDescriptors` moves them into a `PassedDescriptors`.
        var passed: [PassedBatch] = []

        init(id: ClientID, fd: Int32, owner: ClientLedger.Owner, maxLineBytes: Int) {
            self.id = id
            self.fd = fd
            self.owner = owner
            self.input = LineAssembler(maxLineBytes: maxLineBytes)
        }

        /// Closes every descriptor still waiting for its line.
        func closePassedDescriptors() {
            for batch in passed {
                for descriptor in batch.descriptors { Descriptor.close(descriptor) }
            }
            passed.removeAll()
        }

        var acceptsOutput: Bool { closing == nil && overflowed == nil && !rejected && !failed }
        var acceptsInput: Bool { reading && acceptsOutput }
        var isWindingDown: Bool { closing != nil || peerFinishedSending }
    }

    /// Descriptors from one `recvmsg`, and where in the client's byte stream they belong.
    private struct PassedBatch {
        /// Stream position of the last byte that `recvmsg` read. The `sendmsg` that carried
        /// the descriptors began in that read, and the read ended inside that `sendmsg`'s
        /// bytes: with one line per `sendmsg`, this byte lies in the line they came with.
        var lastByte: Int
        var descriptors: [Int32]
        /// Too many arrived (or the kernel truncated them): they were closed, and the line
        /// they belong to is delivered with `PassedDescriptors.refused`.
        var refused: Bool
    }

    /// memchr over the UTF-8 bytes: a byte-wise Swift loop is slow in debug builds.
    private static func containsNewline(_ line: String) -> Bool {
        var line = line
        return line.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return false }
            return memchr(base, Int32(UInt8(ascii: "\n")), bytes.count) != nil
        }
    }

    private func assertOnControlThread() {
        assert(
            controlThread.map { $0 == ThreadID.current } ?? true,
            "ControlServer: this member must be used on the control thread")
    }

    private func runPostedWork() {
        let work = postedWork.withLock { queue in
            defer { queue.removeAll() }
            return queue
        }
        for item in work { item() }
    }

    /// Applies state changes left by callbacks: rejections, flushes, closes.
    private func service() {
        needsService = false
        guard let handler else { return }
        for connection in Array(connections.values) where connections[connection.id] === connection {
            if let reason = connection.overflowed, !connection.rejected {
                dropSlowReader(connection, handler, reason: reason)
            }
            if !connection.output.isEmpty && !connection.failed && connection.closing != .now {
                flush(connection)
            }
            if shouldFinish(connection) {
                finish(connection, handler)
            }
        }
    }

    private func shouldFinish(_ connection: Connection) -> Bool {
        if connection.failed || connection.closing == .now { return true }
        guard connection.isWindingDown else { return false }
        return connection.output.isEmpty || now - connection.lastDrainProgress > limits.flushTimeout
    }

    /// Closes the descriptor and tells the handler. The connection must still be registered.
    private func finish(_ connection: Connection, _ handler: any ControlServerHandler) {
        connections[connection.id] = nil
        ledger.outputChanged(connection.owner, by: -connection.accountedBytes)
        connection.accountedBytes = 0
        ledger.disconnected(connection.owner)
        connection.closePassedDescriptors()
        // Closing with unread input makes the peer's next read fail with ECONNRESET instead
        // of a clean end of file after our last line; take in what has arrived first.
        discardInput(connection.fd)
        Descriptor.close(connection.fd)
        handler.clientDisconnected(connection.id)
    }

    private func discardInput(_ fd: Int32) {
        for _ in 0..<16 {
            guard case .transferred = try? Descriptor.read(fd, into: readBuffer) else { return }
        }
    }

    private func acceptClients(_ handler: any ControlServerHandler) {
        // Bounded so that a connection storm cannot starve the clients already served.
        for _ in 0..<64 {
            let accepted: Int32?
            do {
                accepted = try UnixSocket.accept(listenFD)
            } catch {
                switch error.errno {
                case .connectionAborted, .protocolError, .notPermitted:
                    continue  // that one connection failed; others may be waiting
                case .tooManyOpenFiles, .tooManyOpenFilesInSystem, .noBufferSpace, .noMemory:
                    Log.warning("control: \(error); not accepting for a moment")
                    acceptResumesAt = now + limits.tickInterval
                    return
                default:
                    Log.error("control: \(error)")
                    acceptResumesAt = now + 1
                    return
                }
            }
            guard let fd = accepted else { return }
            lastClientNumber += 1
            let id = ClientID(rawValue: lastClientNumber)

            let peer: PeerCredentials
            do {
                peer = try Self.peerCredentials(of: fd)
            } catch {
                // Without knowing who it is, the peer cannot be authorised for anything.
                Log.warning("control: cannot identify a new client: \(error)")
                Descriptor.close(fd)
                continue
            }
            let owner = ClientLedger.Owner(uid: peer.uid, exempt: handler.isExemptFromUserLimits(peer))
            if let refusal = ledger.admission(of: owner, limits) {
                turnAway(fd, id, refusal, handler)
                continue
            }
            let connection = Connection(id: id, fd: fd, owner: owner, maxLineBytes: limits.maxLineBytes)
            connections[id] = connection
            ledger.connected(owner)
            handler.clientConnected(id, peer: peer)
        }
    }

    /// Refuses a connection at the door: one attempt to write the handler's last line, then
    /// close. The socket is new, so the line fits in its send buffer.
    private func turnAway(_ fd: Int32, _ id: ClientID, _ reason: ClientRejection, _ handler: any ControlServerHandler) {
        if let line = handler.clientRejected(id, reason: reason) {
            var output = OutputBuffer()
            output.append(line: line)
            _ = output.drain { bytes in
                guard case .transferred(let count) = try? UnixSocket.send(fd, bytes) else { return 0 }
                return count
            }
        }
        discardInput(fd)
        Descriptor.close(fd)
    }

    static func peerCredentials(of fd: Int32) throws(SystemError) -> PeerCredentials {
        let credentials = try UnixSocket.peerIdentity(fd)
        let groups: [UInt32]
        do {
            groups = try UnixSocket.peerGroups(fd)
        } catch {
            // Kernels before 4.13 lack SO_PEERGROUPS (ENOPROTOOPT).
            groups = UserDatabase.groupList(uid: credentials.uid, gid: credentials.gid)
        }
        return PeerCredentials(
            pid: credentials.pid, uid: credentials.uid, gid: credentials.gid, groups: groups)
    }

    private func readFrom(_ connection: Connection, _ handler: any ControlServerHandler) {
        let reception: Reception
        do {
            reception = try UnixSocket.receive(connection.fd, into: readBuffer)
        } catch {
            connection.failed = true  // ECONNRESET and friends: the peer is gone
            needsService = true
            return
        }
        switch reception.outcome {
        case .wouldBlock:
            for descriptor in reception.descriptors { Descriptor.close(descriptor) }
            return
        case .endOfFile:
            for descriptor in reception.descriptors { Descriptor.close(descriptor) }
            connection.reading = false
            connection.peerFinishedSending = true
            connection.lastDrainProgress = now
            connection.incompleteLineSince = nil
            if let last = connection.input.takeRemainder(), connection.acceptsOutput {
                var descriptors = takePassedDescriptors(connection, before: Int.max)
                handler.clientSentLine(connection.id, line: last, descriptors: &descriptors)
            }
            connection.closePassedDescriptors()
            needsService = true
        case .transferred(let count):
            connection.input.append(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
            if !reception.descriptors.isEmpty || reception.truncated {
                let refused = reception.truncated || reception.descriptors.count > limits.maxDescriptorsPerLine
                if refused { for descriptor in reception.descriptors { Descriptor.close(descriptor) } }
                connection.passed.append(
                    PassedBatch(
                        lastByte: connection.input.appendedByteCount - 1,
                        descriptors: refused ? [] : reception.descriptors, refused: refused))
            }
            deliverLines(connection, handler)
            limitWaitingDescriptors(connection)
        }
    }

    /// Moves the descriptors of the line just taken from the assembler, the one that ends
    /// before stream position `end`, out of `connection` into the value handed to the handler:
    /// all of them, or, past `Limits.maxDescriptorsPerLine`, none (closed, and the line
    /// refused). Earlier lines took theirs when they were delivered.
    private func takePassedDescriptors(_ connection: Connection, before end: Int) -> PassedDescriptors {
        var descriptors: [Int32] = []
        var refused = false
        while let batch = connection.passed.first, batch.lastByte < end {
            connection.passed.removeFirst()
            descriptors += batch.descriptors
            refused = refused || batch.refused
        }
        if refused || descriptors.count > limits.maxDescriptorsPerLine {
            for descriptor in descriptors { Descriptor.close(descriptor) }
            return PassedDescriptors(refused: true)
        }
        return PassedDescriptors(descriptors)
    }

    /// Descriptors for a line still incomplete are held at most `Limits.maxDescriptorsPerLine`
    /// at a time, however many `sendmsg`s a client splits a line into: beyond that, they are
    /// closed at once and the line will be refused.
    private func limitWaitingDescriptors(_ connection: Connection) {
        let waiting = connection.passed.reduce(0) { $0 + $1.descriptors.count }
        guard waiting > limits.maxDescriptorsPerLine, let last = connection.passed.last else { return }
        connection.closePassedDescriptors()
        connection.passed = [PassedBatch(lastByte: last.lastByte, descriptors: [], refused: true)]
    }

    private func deliverLines(_ connection: Connection, _ handler: any ControlServerHandler) {
        var deliveredAny = false
        while connection.acceptsInput && connections[connection.id] === connection {
            switch connection.input.nextLine() {
            case .line(let line):
                deliveredAny = true
                var descriptors = takePassedDescriptors(connection, before: connection.input.consumedByteCount)
                handler.clientSentLine(connection.id, line: line, descriptors: &descriptors)
            case .needMore:
                if connection.input.pendingByteCount == 0 {
                    connection.incompleteLineSince = nil
                } else if deliveredAny || connection.incompleteLineSince == nil {
                    connection.incompleteLineSince = now
                }
                return
            case .tooLong:
                reject(connection, .lineTooLong(limit: limits.maxLineBytes), handler)
                return
            }
        }
    }

    /// Rejects a client that can still read: its last line is flushed before it closes.
    private func reject(
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
    private func dropSlowReader(
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
    private func account(_ connection: Connection) {
        let delta = connection.output.pendingByteCount - connection.accountedBytes
        guard delta != 0 else { return }
        ledger.outputChanged(connection.owner, by: delta)
        connection.accountedBytes += delta
    }

    /// Cuts off the slowest readers, the clients with the most output queued, until `uid` (a
    /// non-exempt sender's, or nil) and the server as a whole are within their budgets. Called
    /// from `send`, so that no burst of events within one callback outgrows a budget.
    private func enforceOutputBudgets(uid: UInt32?) {
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
    private func cutOff(_ connection: Connection, _ reason: ClientRejection) {
        guard connection.overflowed == nil else { return }
        connection.overflowed = reason
        connection.output.truncateAfterCurrentLine()
        account(connection)
        needsService = true
    }

    /// The client (of `uid`'s non-exempt ones, or of all) with the most output queued that is
    /// not already cut off.
    private func slowestReader(uid: UInt32?) -> Connection? {
        var slowest: Connection?
        for connection in connections.values where connection.acceptsOutput && connection.accountedBytes > 0 {
            if let uid, connection.owner.exempt || connection.owner.uid != uid { continue }
            if connection.accountedBytes > (slowest?.accountedBytes ?? 0) { slowest = connection }
        }
        return slowest
    }

    private func expireIncompleteLines(_ handler: any ControlServerHandler) {
        for connection in Array(connections.values) where connection.acceptsInput {
            if let since = connection.incompleteLineSince,
                now - since > limits.incompleteLineTimeout
            {
                reject(connection, .tooSlow, handler)
            }
        }
    }

    /// How long the end of `run` waits, in all, for clients to read what is queued for them:
    /// the last events of a stop reach a watcher that reads; one that does not holds recd's
    /// exit no longer than this.
    public static let stopFlushSeconds = 2.0

    /// Writes each client's queued output as its reader takes it, until all is written, the
    /// clients that do not read have had `stopFlushSeconds`, or their connections failed.
    private func drainAtStop() {
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
    private func flush(_ connection: Connection) {
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

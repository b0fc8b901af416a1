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
    /// The limits this server enforces.
    public let limits: Limits

    // MARK: State shared with other threads

    /// Non-blocking eventfd; one write wakes the loop. Owned by the server.
    let wakeFD: Int32
    let stopRequested = Atomic<Bool>(false)
    let postedWork = Mutex<[@Sendable () -> Void]>([])

    // MARK: Control-thread state

    /// Listening socket, owned by the server.
    let listenFD: Int32
    /// signalfd for `watchedSignals`, owned by the server; nil when none are watched.
    let signalFD: Int32?
    let watchedSignals: [Int32]
    var connections: [ClientID: Connection] = [:]
    /// Connections and queued output per uid and in all, kept with `connections`.
    var ledger = ClientLedger()
    var lastClientNumber: UInt64 = 0
    var handler: (any ControlServerHandler)?
    var controlThread: ThreadID?
    var hasRun = false
    /// Monotonic time of the current loop iteration.
    var now: Double = 0
    /// While accept is failing for lack of descriptors, when to try again.
    var acceptResumesAt: Double = 0
    /// Set when some state change needs `service()` before the next poll may sleep.
    var needsService = false
    /// One read's worth of scratch space, allocated once, owned by the server.
    let readBuffer: UnsafeMutableRawBufferPointer

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
        var turn = TurnClock()

        while !stopRequested.load(ordering: .acquiring) {
            service()
            turn.end("service")

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
            turn.begin(at: now)

            if !pollSet[0].returned.isEmpty {
                EventFD.drain(wakeFD)
                runPostedWork()
                nextTick = min(nextTick, now + limits.tickInterval)
            }
            turn.mark("posted work")
            if let signalFD, !pollSet[signalIndex].returned.isEmpty {
                for signo in SignalFD.readSignals(signalFD) {
                    handler.signalReceived(signo)
                }
            }
            if accepting, !pollSet[listenIndex].returned.isEmpty {
                acceptClients(handler)
                nextTick = min(nextTick, now + limits.tickInterval)
            }
            turn.mark("signals and accepts")
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
            turn.mark("requests")

            if now >= nextTick {
                handler.tick(now: now)
                expireIncompleteLines(handler)
                let interval =
                    connections.isEmpty && !handler.wantsFrequentTicks ? limits.quietTickInterval : limits.tickInterval
                nextTick += interval
                if nextTick <= now { nextTick = now + interval }
            }
            turn.mark("tick")
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

    /// memchr over the UTF-8 bytes: a byte-wise Swift loop is slow in debug builds.
    static func containsNewline(_ line: String) -> Bool {
        var line = line
        return line.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return false }
            return memchr(base, Int32(UInt8(ascii: "\n")), bytes.count) != nil
        }
    }

    func assertOnControlThread() {
        assert(
            controlThread.map { $0 == ThreadID.current } ?? true,
            "ControlServer: this member must be used on the control thread")
    }

    func runPostedWork() {
        let work = postedWork.withLock { queue in
            defer { queue.removeAll() }
            return queue
        }
        for item in work { item() }
    }

    /// Applies state changes left by callbacks: rejections, flushes, closes.
    func service() {
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

    func shouldFinish(_ connection: Connection) -> Bool {
        if connection.failed || connection.closing == .now { return true }
        guard connection.isWindingDown else { return false }
        return connection.output.isEmpty || now - connection.lastDrainProgress > limits.flushTimeout
    }

    /// Closes the descriptor and tells the handler. The connection must still be registered.
    func finish(_ connection: Connection, _ handler: any ControlServerHandler) {
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

    func discardInput(_ fd: Int32) {
        for _ in 0..<16 {
            guard case .transferred = try? Descriptor.read(fd, into: readBuffer) else { return }
        }
    }
}

/// How long one turn of the control loop took, from poll's return to the next poll, by part:
/// the control thread must never block, and a turn over 50 ms is logged with its parts (at most
/// one line a second), so a stall shows what did it.
struct TurnClock {
    static let bound = 0.05
    private var started = 0.0
    private var last = 0.0
    private var parts: [(String, Double)] = []
    private var lastLogged = -Double.infinity

    mutating func begin(at now: Double) {
        started = now
        last = now
        parts.removeAll(keepingCapacity: true)
    }

    mutating func mark(_ part: String) {
        let now = SystemClock.monotonicSeconds()
        parts.append((part, now - last))
        last = now
    }

    /// Ends the turn begun last (nothing before the first).
    mutating func end(_ part: String) {
        guard started > 0 else { return }
        mark(part)
        let spent = last - started
        started = 0
        guard spent > Self.bound, last - lastLogged >= 1 else { return }
        lastLogged = last
        let detail = parts.filter { $0.1 >= 0.001 }.map { "\($0.0) \(Int(($0.1 * 1_000).rounded())) ms" }
        Log.warning("control: one turn took \(Int((spent * 1_000).rounded())) ms (\(detail.joined(separator: ", ")))")
    }
}

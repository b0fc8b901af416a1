// The control protocol's front end: the clients of the control socket and everything about
// them — who they are (peer credentials), what they watch, how their lines are spelled
// (protocol versions), the checks every request passes (decoding, passed descriptors,
// authorization: `RequestGate`), replies that come later, and events to the watchers. It
// speaks typed `Command`s to the `SessionCoordinator` and typed `Event`s to clients; it holds
// no session state.
//
// Threads: the control thread only (the control server calls it there; other threads only
// `post`), which feeds systemd's watchdog from `tick` and so must never wait long.
import ControlProtocol
import Platform
import SessionPolicy
import SystemSupport

/// The control server's handler: decode → authorize → coordinator → reply.
final class ControlFrontEnd: ControlServerHandler, EventSink, @unchecked Sendable {
    let link: any ClientLink
    /// Who may do what: administrators, session owners, passed descriptors, names.
    let gate: RequestGate
    /// Set once by the composition root, right after both exist.
    private(set) var coordinator: SessionCoordinator!

    private struct Client {
        var peer: PeerCredentials
        var watching = false
        var watchApp: String?
        /// The protocol version of the client's latest request: how its lines are spelled.
        var version = 1
        /// When it connected or last sent a line (monotonic seconds): for the idle timeout.
        var lastHeard: Double
    }

    /// A `permission.request` waiting for an administrator's decision (answered from the
    /// `permission` event that decision sends).
    private struct PendingPermission {
        var client: ClientID
        var id: JSONValue
        var app: String
    }

    private var clients: [ClientID: Client] = [:]
    private var pendingPermissions: [PendingPermission] = []
    private let watchdogInterval = SystemdNotify.watchdogInterval
    private var nextWatchdog = 0.0
    /// Seconds a connection that watches nothing, holds nothing and sends nothing stays open
    /// (`[daemon] idle_client_timeout`): an idle connection holds a slot of `Limits.maxClients`.
    let idleTimeout: Double
    private var nextIdleCheck = 0.0
    /// Set by SIGTERM or SIGINT: the streams are finished and the loop ends after this turn.
    private var stopping = false

    /// - Parameter slowThreshold: seconds on one request or tick past which recd logs "control
    ///   thread busy" (`defaultSlowThreshold`; `RECD_CONTROL_SLOW_MS` lowers it to find what
    ///   holds the thread, as the attach test does at 10 ms).
    init(
        link: any ClientLink, gate: RequestGate, slowThreshold: Double = ControlFrontEnd.defaultSlowThreshold,
        idleTimeout: Double = Double(DaemonSection.defaultIdleClientTimeout)
    ) {
        self.link = link
        self.gate = gate
        self.slowThreshold = slowThreshold
        self.idleTimeout = idleTimeout
    }

    func connect(_ coordinator: SessionCoordinator) { self.coordinator = coordinator }

    // MARK: Clients

    func clientConnected(_ client: ClientID, peer: PeerCredentials) {
        clients[client] = Client(peer: peer, lastHeard: SystemClock.monotonicSeconds())
    }

    func clientDisconnected(_ client: ClientID) {
        let pid = clients[client]?.peer.pid
        clients[client] = nil
        pendingPermissions.removeAll { $0.client == client }
        coordinator.clientGone(client)
        // A process's last connection closed: it ended (exit, crash, SIGKILL), or let go of
        // recd. A fact for the coordinator: the policy deactivates what it held.
        if let pid, pid > 0, !clients.values.contains(where: { $0.peer.pid == pid }) {
            coordinator.report(.processEnded(pid: pid))
        }
    }

    func clientRejected(_ client: ClientID, reason: ClientRejection) -> String? {
        let message: String
        switch reason {
        case .lineTooLong(let limit):
            message =
                "request line longer than \(limit) bytes; send one JSON object per line, each under \(limit) bytes"
        case .tooSlow:
            message = "client too slow (incomplete line or unread replies); reconnect and read what you ask for"
        case .tooManyClients:
            message = "too many control clients connected; close idle ones and retry"
        case .tooManyClientsOfUser(let uid, let limit):
            return Wire.failure(
                id: .null,
                SessionError(
                    .resourceNotAvailable,
                    "uid \(uid) holds \(limit) control connections already, the most one user may; "
                        + "close idle ones (stop a `recctl watch`) and retry"), for: .protocol)
        case .unreadOverUserBudget(let uid, let limit):
            message =
                "uid \(uid)'s connections left more than \(Self.size(limit)) of replies and events unread; "
                + "this one, with the most, is closed: read what you watch, or watch one app (`recctl watch APP`)"
        case .unreadOverServerBudget(let limit):
            message =
                "all control connections together left more than \(Self.size(limit)) of replies and events "
                + "unread; this one, with the most, is closed: read what you watch, then reconnect"
        }
        return Wire.failure(id: .null, SessionError(.badParam, message), for: .protocol)
    }

    /// "16 MiB", "64 KiB": a budget as a person writes it.
    private static func size(_ bytes: Int) -> String {
        bytes >= 1 << 20 && bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes >> 10) KiB"
    }

    /// Administrators (root, `[daemon] admin_group`) are spared the per-user connection and
    /// output budgets and may take the slots kept for them: root's `recctl status` always
    /// gets in.
    func isExemptFromUserLimits(_ peer: PeerCredentials) -> Bool { gate.isAdministrator(peer) }

    /// Checks in the protocol's fixed order (the line's shape, id, version and op in
    /// `Request.decode`, then passed descriptors, arguments, authorization), then runs the
    /// command. Descriptors the client passed and the command does not take are closed by the
    /// server when this returns; `play` takes its file's.
    func clientSentLine(_ client: ClientID, line: String, descriptors: inout PassedDescriptors) {
        guard let peer = clients[client]?.peer else { return }
        clients[client]?.lastHeard = SystemClock.monotonicSeconds()
        switch Request.decode(line) {
        case .failure(let failure):
            // A line recd cannot read says nothing of its caller's interface: the protocol's terms.
            send(Wire.failure(id: failure.id, failure.error, for: .protocol), to: client)
        case .success(let request):
            clients[client]?.version = request.version
            let began = Moment(waited: runQueue.waitedSeconds())
            defer { noteIfSlow(since: began, request.op.rawValue) }
            do {
                try RequestGate.checkPassed(descriptors, for: request.op)
                let command = try Command(request)
                try gate.authorize(command, peer: peer) { coordinator.store.sessions[$0]?.ownerUID }
                switch command {
                case .watch(let app):
                    clients[client]?.watching = true
                    clients[client]?.watchApp = app
                case .unwatch:
                    clients[client]?.watching = false
                default:
                    break
                }
                let caller = Caller(
                    client: client, peer: peer, gate: gate,
                    reply: replier(to: client, id: request.id, interface: request.interface),
                    progress: progressSender(to: client, id: request.id))
                switch try coordinator.run(command, from: caller, descriptors: &descriptors) {
                case .now(let fields):
                    send(Wire.success(id: request.id, fields), to: client)
                case .later:
                    break
                case .whenPermissionDecided(let app):
                    pendingPermissions.append(PendingPermission(client: client, id: request.id, app: app))
                }
            } catch {
                send(Wire.failure(id: request.id, RequestGate.replyError(error), for: request.interface), to: client)
            }
        }
    }

    /// Longest the control thread may spend on one request or tick before recd logs it: it
    /// feeds systemd's watchdog and answers every client, so slow work belongs on the worker.
    static let defaultSlowThreshold = 0.1
    let slowThreshold: Double

    /// The control thread's time waiting for a CPU (its schedstat, opened at the first request).
    private let runQueue = ThreadRunQueueClock()

    /// When a request or tick began: the clock, and how long the thread had waited for a CPU.
    private struct Moment {
        let seconds = SystemClock.monotonicSeconds()
        let waited: Double?
    }

    /// Logs a request or tick that held the control thread longer than `slowThreshold`: its own
    /// work and what it blocked on (JACK's answers, the disk). Time the thread stood runnable
    /// waiting for a CPU (a machine busy with other work) is not the request's: it is
    /// subtracted, and said.
    private func noteIfSlow(since began: Moment, _ what: String) {
        let wall = SystemClock.monotonicSeconds() - began.seconds
        guard wall > slowThreshold else { return }
        let waited = began.waited.flatMap { start in runQueue.waitedSeconds().map { $0 - start } } ?? 0
        let busy = wall - waited
        guard busy > slowThreshold else { return }
        Log.warning(
            "control thread busy \(Readable.duration(busy)) in \(what)"
                + "\(waited > 0.001 ? " (and \(Readable.duration(waited)) waiting for a CPU)" : ""); "
                + "other clients and the watchdog waited")
    }

    /// A reply that comes later, from the control thread: `fields`, or the error worded for the
    /// request's interface. Dropped when the client has gone (its ID is never used again).
    private func replier(to client: ClientID, id: JSONValue, interface: CallerInterface) -> LaterReply {
        { [weak self] result in
            switch result {
            case .success(let fields): self?.send(Wire.success(id: id, fields), to: client)
            case .failure(let error): self?.send(Wire.failure(id: id, error, for: interface), to: client)
            }
        }
    }

    private func progressSender(to client: ClientID, id: JSONValue) -> @Sendable (Int, Int) -> Void {
        { [weak self] done, total in self?.send(Wire.progress(id: id, done: done, total: total), to: client) }
    }

    // MARK: The loop

    /// Runs `body` (work posted to the control thread: the engine's news, which finishes
    /// attaches) with the same slow-work log as requests and ticks.
    func measured(_ what: String, _ body: () -> Void) {
        let began = Moment(waited: runQueue.waitedSeconds())
        defer { noteIfSlow(since: began, what) }
        body()
    }

    func tick(now: Double) {
        // Nothing starts again between the streams' end and the loop's.
        guard !stopping else { return }
        let began = Moment(waited: runQueue.waitedSeconds())
        defer { noteIfSlow(since: began, "the tick") }
        coordinator.tick(now: now)
        if now >= nextIdleCheck {
            closeIdleClients(now: now)
            coordinator.expireSessions(watched: Set(clients.values.compactMap { $0.watching ? $0.watchApp : nil }))
            nextIdleCheck = now + 1
        }
        // WATCHDOG=1 at half the interval systemd gave: the control loop is alive.
        if let interval = watchdogInterval, now >= nextWatchdog {
            try? SystemdNotify.watchdog()
            nextWatchdog = now + interval / 2
        }
    }

    var wantsFrequentTicks: Bool { coordinator.wantsFrequentTicks }

    /// Closes the connections that have watched nothing, held nothing (`holdsSomething`: no
    /// reply to come, no attachment, no activation of their process, no permission request)
    /// and sent nothing for `idleTimeout`, each with a last line that says why. A client that
    /// holds nothing loses nothing: it connects again for its next request.
    private func closeIdleClients(now: Double) {
        for (id, client) in clients where !client.watching && now - client.lastHeard > idleTimeout {
            if pendingPermissions.contains(where: { $0.client == id })
                || coordinator.holdsSomething(id, pid: client.peer.pid)
            {
                continue
            }
            Log.info("closing idle control connection \(id) of uid \(client.peer.uid), pid \(client.peer.pid)")
            send(
                Wire.closing(
                    SessionError(
                        .badParam,
                        "connection closed after \(Int(idleTimeout)) s without a request, a watch or anything held; "
                            + "connect again for the next request (`[daemon] idle_client_timeout`)"),
                    for: .protocol),
                to: id)
            link.close(id, afterFlush: true)
        }
    }

    func signalReceived(_ signo: Int32) {
        if signo == SignalMask.hangUp {
            Log.notice(
                "SIGHUP: recd does not reload its config in place; restart it (systemctl restart recd) to apply changes"
            )
            return
        }
        Log.notice("\(Signals.name(signo)) received; stopping")
        guard !stopping else { return }
        stopping = true
        // The streams end while the clients are still connected, so their last events (each
        // recording's `finished` segments, the `stopped`s) are queued for the watchers; the
        // server writes what is queued before it closes the connections.
        coordinator.finishStreams()
        link.stop()
    }

    // MARK: EventSink

    /// Sends `event` to the watchers of its app (and journals it); a decided permission answers the
    /// `permission.request`s that waited for it.
    func broadcast(_ event: Event) {
        // Every event passes here (the coordinator's and the services'): the day view's journal.
        coordinator?.archive.journal(event)
        let line = event.json.jsonText
        let app = event.app
        // Encoded once per event and spelling, not once per watcher: with many watchers the
        // only copies are the ones queued for them, which the server's budgets bound.
        var spelled: [Int: String] = [:]
        for (id, client) in clients where client.watching {
            if let filter = client.watchApp, let app, filter != app { continue }
            let text = spelled[client.version] ?? WireKeys.line(line, forVersion: client.version)
            spelled[client.version] = text
            link.send(text, to: id)
        }
        if case .permission(let app, let state) = event, state != .undetermined {
            let ready = pendingPermissions.filter { $0.app == app }
            pendingPermissions.removeAll { $0.app == app }
            for pending in ready {
                send(
                    Wire.success(id: pending.id, PermissionInfo(app: app, state: state.rawValue).fields),
                    to: pending.client)
            }
        }
    }

    /// Sends one line (built with version 2's camelCase keys) as the client's version spells it.
    func send(_ line: String, to client: ClientID) {
        link.send(WireKeys.line(line, forVersion: clients[client]?.version ?? protocolVersion), to: client)
    }
}

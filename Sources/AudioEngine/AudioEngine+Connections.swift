// What the engine asks of the connection reconciler (Internals/ConnectionReconciler.swift) and
// its worker, the one writer of recd's JACK connections: the rules built here from the groups
// and the attachments, passes when something changed, and requests answered when done.
// Control thread.
import Platform

extension AudioEngine {
    /// Has the connection reconciler bring JACK's graph in line with the rules (port keeping:
    /// every complete group connected to the JACK ports behind it; attachments: their edges,
    /// and no bypass) when something changed since the last pass. The pass runs on the
    /// engine's "jack connection" thread (`ConnectionReconciler.swift` states the rules and
    /// how conflicts are decided); this returns at once.
    ///
    /// Returns the connections passes made again, since the last call, after someone else
    /// removed them (a third party's `jack_disconnect`), for the caller to log; connections
    /// made because a device (re)appeared are not in it. A removal seen while the other port's
    /// client was leaving cannot be repaired (JACK refuses the connection) and is forgotten.
    @discardableResult
    public func repairConnections() -> [JackConnection] {
        guard let connection else { return [] }
        reconcileIfNeeded(connection)
        return connection.worker.takeRestored()
    }

    /// Hands the worker the rules now if something changed since the last pass.
    func reconcileIfNeeded(_ connection: Connection) {
        if connection.worker.retryDue(now: SystemClock.monotonicSeconds()) { connection.needsRepair = true }
        guard !connection.lost, connection.needsRepair else { return }
        connection.needsRepair = false
        connection.worker.submit(connectionRules(connection))
    }

    /// What the two rules want now (control thread; only the JACK port list is read here):
    /// port keeping's edges for every complete group, each attachment's edges and the ports
    /// it holds, and the one-shot news since the last pass.
    func connectionRules(_ connection: Connection) -> ConnectionRules {
        var rules = ConnectionRules()
        let excluded = excludedPorts(connection)
        for group in connection.inputs + connection.outputs {
            for name in group.fullNames { rules.watched[name] = group.direction == .input ? .input : .output }
            // Only complete devices: a device half gone is not worth a server round trip.
            guard group.available else { continue }
            keepEdges(of: group, excluding: excluded, connection, in: &rules)
        }
        let attachments = connection.memory.graph.attachments
        for handle in attachments {
            for (app, recd) in zip(handle.playPorts, handle.recdPlayPorts) {
                rules.wanted[JackConnection(source: app, destination: recd)] = .attachment(handle.clientName)
                rules.watched[app] = .output
                rules.watched[recd] = .input
            }
            for (app, recd) in zip(handle.capturePorts, handle.recdCapturePorts) {
                rules.wanted[JackConnection(source: recd, destination: app)] = .attachment(handle.clientName)
                rules.watched[recd] = .output
                rules.watched[app] = .input
            }
        }
        rules.guardedPorts = ConnectionReconciler.heldPorts(attachments)
        rules.forbidden = connection.releasedConnections
        rules.removedByOthers = connection.removedConnections
        rules.registered = connection.registeredPorts
        connection.releasedConnections = []
        connection.removedConnections = []
        connection.registeredPorts = []
        return rules
    }

    /// JACK connections recd leaves alone now because something kept undoing recd's changes to
    /// them (`ConnectionReconciler.swift`, rule 3); for `status`.
    public var churningConnections: [JackConnection] { connection?.worker.churning ?? [] }

    /// The connections passes newly left alone since the last call, for the caller to log once.
    public func takeChurnNews() -> [ChurningConnection] { connection?.worker.takeLeftAlone() ?? [] }

    /// Asks the connection reconciler for `group`'s edges (none for a group that is not
    /// available, or after a server loss: then the answer only keeps the order) after the jobs
    /// and requests before it; the worker answers `request` when they are made (or JACK
    /// refused, or rule 3 left an edge alone), and `drainNotifications` then runs, on the
    /// control thread, the player changes that waited for it (`DeferredPlayerChanges`). For a
    /// group about to receive a player: what is published after the answer reaches a device
    /// that has just arrived from its first frame. A worker that is stopping answers nothing
    /// (the engine is stopping: the changes are forgotten).
    func requestEdges(of group: Group, _ connection: Connection, request: Int) {
        let answers = connection.playerChanges.answers
        let wake = self.wake
        connection.worker.request(edgeRules(of: group, connection)) {
            answers.answer(request)
            wake()
        }
        // Without a worker thread the pass has run already.
        connection.playerChanges.applyAnswered()
    }

    /// Port keeping's edges of `group`: each channel to its target (not one of `excluded`).
    private func keepEdges(
        of group: Group, excluding excluded: Set<String>, _ connection: Connection, in rules: inout ConnectionRules
    ) {
        let targets = resolveTargets(group, client: connection.client, excluding: excluded)
        for channel in 0..<min(group.spec.channels, targets.count) {
            guard let target = targets[channel] else { continue }
            let edge =
                group.direction == .input
                ? JackConnection(source: target, destination: group.fullNames[channel])
                : JackConnection(source: group.fullNames[channel], destination: target)
            rules.wanted[edge] = .group(group.spec.name)
        }
    }

    /// The rules of a request for `group`'s edges: port keeping's edges of that group only,
    /// with the ports attachments hold guarded (rule 2 holds here as in every pass). Nothing
    /// is watched, so nothing is read and nothing is cut.
    func edgeRules(of group: Group, _ connection: Connection) -> ConnectionRules {
        var rules = ConnectionRules()
        rules.guardedPorts = ConnectionReconciler.heldPorts(connection.memory.graph.attachments)
        guard !connection.lost, group.available else { return rules }
        keepEdges(of: group, excluding: excludedPorts(connection), connection, in: &rules)
        return rules
    }

    /// The attachments changed: availability is computed again at the next drain (a configured
    func recheckSoon(_ connection: Connection) {
        connection.needsRepair = true
        reconcileIfNeeded(connection)
        let now = SystemClock.monotonicSeconds()
        connection.recheckAt = now
        armRecheckTimer(connection, now: now)
    }

    /// Keeps every attachment's audio inside recd: a connection of an app's play or capture
    /// port to anything but recd's port for it (the app's own auto-connect, a patchbay) is
    /// removed, and a removed connection to recd's port is made again, by the connection
    /// reconciler's next pass (off the control thread; see `repairConnections`). Returns what
    /// passes removed since the last call, for the caller to log.
    @discardableResult
    public func enforceAttachments() -> [JackConnection] {
        guard let connection else { return [] }
        reconcileIfNeeded(connection)
        return connection.worker.takeCut()
    }
}

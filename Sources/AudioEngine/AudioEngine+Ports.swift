// Port groups and their availability: JACK's news drained, each group's JACK ports resolved,
// the settle recheck. The one source of group availability. Control thread.
import Platform

extension AudioEngine {
    // MARK: Groups and ports

    /// Whether every JACK port behind the group exists now (as of the last drain).
    public func isAvailable(group name: String) -> Bool {
        guard let connection else { return false }
        return (connection.inputs + connection.outputs).first { $0.spec.name == name }?.available
            ?? false
    }

    /// Availability of every group, by name.
    public var groupAvailability: [String: Bool] {
        guard let connection else { return [:] }
        return Dictionary(
            (connection.inputs + connection.outputs).map { ($0.spec.name, $0.available) },
            uniquingKeysWith: { first, _ in first })
    }

    /// recd's own full JACK port names for a group, in channel order.
    public func jackPortNames(ofGroup name: String) -> [String] {
        guard let connection else { return [] }
        return (connection.inputs + connection.outputs).first { $0.spec.name == name }?.fullNames
            ?? []
    }

    /// The JACK ports behind a group that existed at the last availability check (patterns
    /// resolved), in channel order, each with where its audio comes from (`PortOrigin`).
    public func origins(ofGroup name: String) -> [(jackPort: String, origin: PortOrigin)] {
        guard let connection else { return [] }
        let group = (connection.inputs + connection.outputs).first { $0.spec.name == name }
        return (group?.targets ?? []).compactMap { $0 }.map { ($0, PortOrigin(jackPort: $0)) }
    }

    /// Full names of the JACK ports matching a shell-style pattern (all ports when nil).
    public func ports(matching pattern: String? = nil) -> [String] {
        guard let client = runningClient else { return [] }
        return client.ports(matching: pattern.map(PortPattern.regularExpression(forGlob:)))
            .sorted(by: PortPattern.naturallyOrdered)
    }

    /// Full names of the ports connected to the port named `port`.
    public func connections(of port: String) -> [String] {
        runningClient?.connections(of: port) ?? []
    }

    // MARK: Notifications

    /// Collects what JACK announced since the last call, and acts on it: when ports or clients
    /// come or go (registration, unregistration, a client's close or death, a rename), each
    /// group's availability is recomputed from the port list read here, without the ports
    /// JACK announced gone, and once more 40 ms later (reported as `.groupAvailabilityChanged`)
    /// and, with `repair`, groups are connected to ports that (re)appeared. Also frees retired
    /// snapshots, and publishes the player moves the connection reconciler has answered
    /// (`movePlayer`). Call it whenever `wake` fires (and now and then anyway).
    ///
    /// Availability is cheap; connection checks are not (JACK makes them wait for a pending
    /// graph change, a period or two). A caller that must react fast to a device going away
    /// passes `repair: false`, reacts, then calls `repairConnections()`.
    ///
    /// `.bufferSize` and `.sampleRate` are reported only when they differ from what this
    /// connection last reported (JACK repeats them at activation). A connection of one of our
    /// ports that someone else removed (`jack_disconnect`) is made again by the repair, which
    /// returns it (`repairConnections`).
    public func drainNotifications(repair: Bool = true) -> [EngineNotification] {
        guard let connection else { return [] }
        // Moves the reconciler has answered (their groups' edges are made) are published now.
        connection.playerChanges.applyAnswered()
        var connectionsChanged = false
        var notifications = connection.client.sink.drain().filter { notification in
            switch notification {
            case .bufferSize(let frames):
                defer { connection.bufferSize = frames }
                return frames != connection.bufferSize
            case .sampleRate(let rate):
                defer { connection.sampleRate = rate }
                return rate != connection.sampleRate
            case .portConnectionChanged(let source, let destination, let connected):
                let ours = ownPortNames(connection)
                if !connected, ours.contains(source) || ours.contains(destination) {
                    connection.removedConnections.insert(JackConnection(source: source, destination: destination))
                    connection.needsRepair = true
                    connectionsChanged = true
                } else if !connection.memory.graph.attachments.isEmpty {
                    // A bypass made (or an attachment's own edge removed): the reconciler decides.
                    let held = ConnectionReconciler.heldPorts(connection.memory.graph.attachments)
                    if held.contains(source) || held.contains(destination) {
                        connection.needsRepair = true
                        connectionsChanged = true
                    }
                }
                return true
            case .portRegistered(let name):
                connection.registeredPorts.insert(name)
                return true
            default:
                return true
            }
        }
        let changed = connection.client.sink.takePortsChanged()
        let now = SystemClock.monotonicSeconds()
        if let fires = connection.timerFiresAt, now >= fires { connection.timerFiresAt = nil }
        if notifications.contains(where: { if case .serverLost = $0 { true } else { false } }) {
            connection.lost = true
        } else if !connection.lost {
            let recheckDue = connection.recheckAt.map { now >= $0 } ?? false
            if changed || connectionsChanged {
                // Once more when the graph has settled: a closing client's ports may still be
                // listed, and a connection made again may not have held (PipeWire answers
                // "already connected" while it still tears the removed link down).
                connection.recheckAt = now + Self.settleRecheckSeconds
            } else if recheckDue {
                connection.recheckAt = nil
                connection.needsRepair = true
            }
            if changed || recheckDue {
                let changes = updateAvailability(connection, report: true)
                notifications += changes
                if changed || !changes.isEmpty { connection.needsRepair = true }
            }
            if repair { repairConnections() }
            armRecheckTimer(connection, now: now)
        }
        connection.memory.collectDeadWood()
        return notifications
    }

    /// How long after a port or client change availability is computed once more.
    static let settleRecheckSeconds = 0.04

    /// Makes sure the control thread is woken for a pending recheck: the connection worker's
    /// thread calls `wake` at `recheckAt` (without that thread, the caller's periodic drain
    /// does the recheck). `now` is kept for the callers' one clock reading.
    func armRecheckTimer(_ connection: Connection, now: Double) {
        guard let recheckAt = connection.recheckAt, connection.timerFiresAt == nil else { return }
        connection.worker.wake(at: max(recheckAt, now))
        connection.timerFiresAt = recheckAt
    }

    /// Our own ports' full names.
    func ownPortNames(_ connection: Connection) -> Set<String> {
        Set((connection.inputs + connection.outputs).flatMap(\.fullNames))
    }

    /// Recomputes availability (all JACK ports behind a group exist). Returns the changes.
    /// Never trusts a port JACK announced gone, nor one of a client JACK announced closed,
    /// even while the port list (not yet settled) still holds it.
    func updateAvailability(_ connection: Connection, report: Bool) -> [EngineNotification] {
        let excluded = excludedPorts(connection)
        var changes: [EngineNotification] = []
        func update(_ groups: inout [Group]) {
            for index in groups.indices {
                let group = groups[index]
                let targets = resolveTargets(group, client: connection.client, excluding: excluded)
                groups[index].targets = targets
                let available =
                    group.spec.connectTo.isEmpty
                    || (targets.count >= group.spec.channels
                        && targets.prefix(group.spec.channels).allSatisfy { $0 != nil })
                if available != group.available {
                    groups[index].available = available
                    if report {
                        changes.append(.groupAvailabilityChanged(group: group.spec.name, available: available))
                    }
                }
            }
        }
        update(&connection.inputs)
        update(&connection.outputs)
        return changes
    }

    /// The JACK ports behind a group in channel order; nil where an exact name is missing.
    func resolveTargets(_ group: Group, client: JackClient, excluding excluded: Set<String>)
        -> [String?]
    {
        // Behind an input group are JACK outputs (capture ports), behind an output group inputs.
        let wanted = group.direction == .input ? Self.jackPortIsOutput : Self.jackPortIsInput
        var targets: [String?] = []
        for entry in group.spec.connectTo {
            if PortPattern.isPattern(entry) {
                targets += client.ports(
                    matching: PortPattern.regularExpression(forGlob: entry), flags: wanted
                )
                .filter { !excluded.contains($0) }
                .sorted(by: PortPattern.naturallyOrdered)
                .map { Optional($0) }
            } else {
                targets.append(client.portExists(entry) && !excluded.contains(entry) ? entry : nil)
            }
        }
        return targets
    }

    /// Ports no group may use: our own, those JACK announced gone and those of clients JACK
    /// announced closed (still listed until its graph settles), and the ports attachments hold
    /// (the connection reconciler's rule 2: an attachment beats a configured group, so a group
    /// naming an attached port is unavailable until the application detaches).
    func excludedPorts(_ connection: Connection) -> Set<String> {
        let ownPorts = ownPortNames(connection)
        let listed = Set(connection.client.ports(matching: nil))
        let vanished = connection.client.sink.vanished(stillListed: listed)
        let attached = ConnectionReconciler.heldPorts(connection.memory.graph.attachments)
        return ownPorts.union(vanished.ports).union(attached)
            .union(listed.filter { vanished.clients.contains(NotificationSink.clientName(ofPort: $0)) })
    }
}

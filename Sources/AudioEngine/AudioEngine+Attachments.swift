// Attached applications: an application's own JACK client under recd, its ports registered on
// the connection worker, its capture gated or processed. Control thread.
import Platform

extension AudioEngine {
    // MARK: Attached applications

    /// Frames in an attachment voice's ring: the longest period JACK allows (the ring holds
    /// one period at a time).
    static let attachmentRingFrames = 8192

    /// Starts putting an application's own JACK client under recd (`session.attach`): checks
    /// the ports here (the port list is read locally, no server request), then the connection
    /// thread registers one recd input port per play port (the app's outputs) and one recd
    /// output port per capture port (the app's inputs) — server requests, which wait behind the
    /// reconciler's, so the control thread never makes them — and wakes the control thread.
    /// `finishedAttachments()` then hands back the handle: in the graph, with a paused player
    /// voice that plays what the app's play ports carry into `outputGroup` (routes:
    /// `PlayerRoute.defaultRoutes` unless given; needed only with play ports); the reconciler
    /// connects the app's ports to recd's and removes every other connection of them (nothing
    /// may bypass recd). The capture ports carry zeros until `setCapture` opens them.
    ///
    /// Throws `.invalidArgument` when a port does not exist, is not `appClient`'s, has the
    /// wrong direction, or is named twice.
    public func beginAttach(
        client appClient: String, playPorts: [String], capturePorts: [String], outputGroup: String?,
        routes: [PlayerRoute]? = nil, gainDecibels: Double = 0
    ) throws(AudioEngineError) -> AttachmentTicket {
        guard let connection, let client = runningClient else { throw lostOrNotRunning }
        guard !playPorts.isEmpty || !capturePorts.isEmpty else {
            throw .invalidArgument(
                "attach names no ports: give playPorts (the app's outputs) or capturePorts (its inputs)")
        }
        guard Set(playPorts + capturePorts).count == playPorts.count + capturePorts.count else {
            throw .invalidArgument("a port is named twice among playPorts and capturePorts")
        }
        for (port, wanted, role) in playPorts.map({ ($0, Self.jackPortIsOutput, "play port (an output)") })
            + capturePorts.map({ ($0, Self.jackPortIsInput, "capture port (an input)") })
        {
            guard port.hasPrefix(appClient + ":") else {
                throw .invalidArgument("port \(port) is not client \(appClient)'s; name it as \(appClient):PORT")
            }
            guard let flags = client.portFlags(port) else {
                throw .invalidArgument("port \(port) does not exist; see `jack_lsp \(appClient)`")
            }
            guard flags & wanted != 0 else {
                throw .invalidArgument("port \(port) cannot be a \(role): JACK says it is the other direction")
            }
        }
        let group = connection.outputs.first { $0.spec.name == outputGroup }
        if !playPorts.isEmpty && group == nil { throw .unknownGroup(outputGroup ?? "(none)") }
        var player: PlayerHandle?
        if let group, !playPorts.isEmpty {
            let routes = try Self.checkedRoutes(routes, playerChannels: playPorts.count, group: group)
            player = PlayerHandle(
                outputGroup: group.spec.name, channels: playPorts.count, capacityFrames: Self.attachmentRingFrames,
                routes: routes, flatOutputBase: group.flatBase,
                initialCommand: PlayerCommand(
                    gain: Self.linearGain(decibels: gainDecibels), rampFrames: 0, paused: true))
        }
        attachmentSerial += 1
        let ticket = AttachmentTicket(serial: attachmentSerial)
        let base = "\(appClient.prefix(48))-\(attachmentSerial)"
        let names =
            (0..<playPorts.count).map { ("\(base)-play_\($0 + 1)", GroupDirection.input) }
            + (0..<capturePorts.count).map { ("\(base)-capture_\($0 + 1)", GroupDirection.output) }
        connection.pendingAttachments[ticket] = PendingAttachment(
            clientName: appClient, playPorts: playPorts, capturePorts: capturePorts, player: player)
        // The output group's own edges first, asked of the reconciler (a device that just
        // arrived hears the attachment from its first frame); the registrations wait behind
        // that pass on the worker, and their news answers the attach.
        if let group { connection.worker.request(edgeRules(of: group, connection)) {} }
        let registrations = connection.registrations
        let wake = self.wake
        connection.worker.perform { client in
            var made: [RegisteredPort] = []
            var failure: JackError?
            for (name, direction) in names {
                do throws(JackError) {
                    let port = try client.registerPort(name: name, direction: direction)
                    made.append(RegisteredPort(port: port, name: client.fullName(of: port)))
                } catch {
                    failure = error
                    break
                }
            }
            if failure != nil {
                for port in made { client.unregisterPort(port.port) }
            }
            let result: Result<[RegisteredPort], JackError> = failure.map { .failure($0) } ?? .success(made)
            registrations.results.withLock { $0[ticket] = result }
            wake()
        }
        return ticket
    }

    /// The attachments whose ports the connection thread has registered (or failed to) since
    /// the last call, for the tickets `beginAttach` gave. A handle returned is in the graph:
    /// to undo it (its application went meanwhile), `detach` it. Attachments under way when
    /// the engine stops or loses its server are not returned (the caller fails them).
    public func finishedAttachments() -> [(AttachmentTicket, Result<AttachmentHandle, AudioEngineError>)] {
        guard let connection, !connection.pendingAttachments.isEmpty else { return [] }
        let done = connection.registrations.results.withLock { registrations in
            defer { registrations = [:] }
            return registrations
        }
        var finished: [(AttachmentTicket, Result<AttachmentHandle, AudioEngineError>)] = []
        var graph = connection.memory.graph
        for ticket in done.keys.sorted(by: { $0.serial < $1.serial }) {
            guard let pending = connection.pendingAttachments.removeValue(forKey: ticket), let result = done[ticket]
            else { continue }
            switch result {
            case .failure(let error):
                finished.append((ticket, .failure(.jack(error))))
            case .success(let ports):
                let play = ports.prefix(pending.playPorts.count).map {
                    AttachmentHandle.OwnPort(port: $0.port, name: $0.name)
                }
                let capture = ports.dropFirst(pending.playPorts.count).map {
                    AttachmentHandle.OwnPort(port: $0.port, name: $0.name)
                }
                let worker = connection.worker
                let handle = AttachmentHandle(
                    clientName: pending.clientName, playPorts: pending.playPorts, recdPlayPorts: Array(play),
                    capturePorts: pending.capturePorts, recdCapturePorts: Array(capture), player: pending.player,
                    release: { ports in
                        // Once the process thread has left them (the handle's deinit): a server
                        // request, so on the connection thread too.
                        let ports = RegisteredPorts(ports)
                        worker.perform { client in for port in ports.ports { client.unregisterPort(port) } }
                    })
                if let player = pending.player { graph.players.append(player) }
                graph.attachments.append(handle)
                finished.append((ticket, .success(handle)))
            }
        }
        if finished.contains(where: { if case .success = $0.1 { true } else { false } }) {
            connection.memory.publish(graph)
            recheckSoon(connection)
        }
        return finished
    }

    /// Takes an attachment out of the graph and disconnects the app's ports from recd's; recd's
    /// ports for it are unregistered once the process thread has left them.
    public func detach(_ handle: AttachmentHandle) {
        handle.player?.detach()
        if let player = handle.player { connection?.playerChanges.forget(player) }
        guard let connection else { return }
        var graph = connection.memory.graph
        guard graph.attachments.contains(where: { $0 === handle }) else { return }
        graph.attachments.removeAll { $0 === handle }
        graph.players.removeAll { $0 === handle.player }
        let processed = graph.processedCaptures.removeValue(forKey: ObjectIdentifier(handle))
        if let processed {
            graph.taps.removeAll { $0 === processed.tap }
            graph.referenceTaps.removeAll { $0 === processed.tap.reference }
        }
        connection.memory.publish(graph)
        if let processed { retire(processed, connection) }
        for (app, recd) in zip(handle.playPorts, handle.recdPlayPorts) {
            connection.releasedConnections.insert(JackConnection(source: app, destination: recd))
        }
        for (app, recd) in zip(handle.capturePorts, handle.recdCapturePorts) {
            connection.releasedConnections.insert(JackConnection(source: recd, destination: app))
        }
        recheckSoon(connection)
    }

    /// Attachments in the graph now.
    public var attachments: [AttachmentHandle] { connection?.memory.graph.attachments ?? [] }

    /// Capture port k of the attachment carries channel k of `inputGroup` (a mono group feeds
    /// every capture port; ports past the group's channels carry silence) while `open`, zeros
    /// otherwise (or without a group). From the process thread's next period.
    public func setCapture(_ handle: AttachmentHandle, inputGroup: String?, open: Bool) {
        let group = inputGroup.flatMap { name in connection?.inputs.first { $0.spec.name == name } }
        let sources = (0..<handle.capturePorts.count).map { index -> Int in
            guard let group else { return -1 }
            if group.spec.channels == 1 { return group.flatBase }
            return index < group.spec.channels ? group.flatBase + index : -1
        }
        handle.setCapture(sources: sources, open: open && group != nil)
        // A processed capture's tap records zeros while closed: the worker never sees a muted
        // or unpermitted input.
        if let processed = connection?.memory.graph.processedCaptures[ObjectIdentifier(handle)] {
            setZeroed(processed.tap, !(open && group != nil))
        }
    }

    /// The attachment's capture ports carry `inputGroup` processed from the next period: a
    /// capture tap over the group (the channels the ports carry: channel k to port k, a mono
    /// group's one channel to every port; at most 8) with its reference tap over
    /// `referenceOutputGroup` (the far end), and a ring that starts with `slackFrames` of
    /// silence, all in one snapshot — the ring's first read and the taps' first period are the
    /// same cycle. The caller runs the processing: it reads the taps and writes the processed
    /// frames into the returned `ProcessedCapture` a period at a time. A processed capture the
    /// attachment had is replaced in the same snapshot. `setCapture` still gates the ports.
    public func processCapture(
        _ handle: AttachmentHandle, inputGroup: String, referenceOutputGroup: String, slackFrames: Int
    ) throws(AudioEngineError) -> ProcessedCapture {
        guard let connection, let client = runningClient else { throw lostOrNotRunning }
        guard connection.memory.graph.attachments.contains(where: { $0 === handle }) else {
            throw .invalidArgument("\(handle.clientName) is not attached")
        }
        guard let group = connection.inputs.first(where: { $0.spec.name == inputGroup }) else {
            throw .unknownGroup(inputGroup)
        }
        guard (1...8_192).contains(slackFrames) else {
            throw .invalidArgument("a processed capture's slack is 1 to 8192 frames, not \(slackFrames)")
        }
        let ports = handle.capturePorts.count
        let channels = group.spec.channels == 1 ? 1 : min(group.spec.channels, max(ports, 1), 8)
        let portChannels = (0..<ports).map { $0 < channels ? $0 : (channels == 1 ? 0 : -1) }
        let tap = try makeCaptureTap(
            inputGroup: inputGroup, channels: Array(0..<channels), bufferFrames: client.sampleRate,
            zeroed: !handle.isCaptureOpen, referenceOutputGroup: referenceOutputGroup)
        let processed = ProcessedCapture(tap: tap, portChannels: portChannels, slackFrames: slackFrames)
        var graph = connection.memory.graph
        let old = graph.processedCaptures[ObjectIdentifier(handle)]
        if let old {
            graph.taps.removeAll { $0 === old.tap }
            graph.referenceTaps.removeAll { $0 === old.tap.reference }
        }
        graph.taps.append(tap)
        if let reference = tap.reference { graph.referenceTaps.append(reference) }
        graph.processedCaptures[ObjectIdentifier(handle)] = processed
        connection.memory.publish(graph)
        if let old { retire(old, connection) }
        return processed
    }

    /// The attachment's capture ports carry the raw input again from the next period; the
    /// processed capture's taps leave the graph (retired once no cycle can write them).
    public func unprocessCapture(_ handle: AttachmentHandle) {
        guard let connection else { return }
        var graph = connection.memory.graph
        guard let old = graph.processedCaptures.removeValue(forKey: ObjectIdentifier(handle)) else { return }
        graph.taps.removeAll { $0 === old.tap }
        graph.referenceTaps.removeAll { $0 === old.tap.reference }
        connection.memory.publish(graph)
        retire(old, connection)
    }

    /// The attachment's processed capture in the graph now (nil: raw).
    public func processedCapture(of handle: AttachmentHandle) -> ProcessedCapture? {
        connection?.memory.graph.processedCaptures[ObjectIdentifier(handle)]
    }

    func retire(_ processed: ProcessedCapture, _ connection: Connection) {
        let lost = connection.lost || connection.client.sink.serverLost.load(ordering: .acquiring)
        let mark = lost ? nil : connection.memory.cycles.markNow()
        processed.tap.detach(after: mark)
        processed.tap.reference?.detach(after: mark)
    }

    /// Attachments whose app ports are gone (the app's client closed or died).
    public func attachmentsWithMissingPorts() -> [AttachmentHandle] {
        guard let connection, let client = runningClient else { return [] }
        return connection.memory.graph.attachments.filter { handle in
            !(handle.playPorts + handle.capturePorts).allSatisfy(client.portExists)
        }
    }

    /// The process id of the JACK client `name`, when the server tells (PipeWire's JACK does;
    /// jackd2's libjack answers 0, "not implemented on library side": nil).
    public func processID(ofClient name: String) -> Int32? {
        runningClient?.processID(ofClient: name)
    }
}

// The control server's input side: accepting clients (within the per-user and total
// limits), reading their bytes and passed descriptors, and delivering whole lines to the
// handler. Control thread only.
import Platform

extension ControlServer {
    func acceptClients(_ handler: any ControlServerHandler) {
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
    func turnAway(_ fd: Int32, _ id: ClientID, _ reason: ClientRejection, _ handler: any ControlServerHandler) {
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

    func readFrom(_ connection: Connection, _ handler: any ControlServerHandler) {
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
    func takePassedDescriptors(_ connection: Connection, before end: Int) -> PassedDescriptors {
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
    func limitWaitingDescriptors(_ connection: Connection) {
        let waiting = connection.passed.reduce(0) { $0 + $1.descriptors.count }
        guard waiting > limits.maxDescriptorsPerLine, let last = connection.passed.last else { return }
        connection.closePassedDescriptors()
        connection.passed = [PassedBatch(lastByte: last.lastByte, descriptors: [], refused: true)]
    }

    func deliverLines(_ connection: Connection, _ handler: any ControlServerHandler) {
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

    func expireIncompleteLines(_ handler: any ControlServerHandler) {
        for connection in Array(connections.values) where connection.acceptsInput {
            if let since = connection.incompleteLineSince,
                now - since > limits.incompleteLineTimeout
            {
                reject(connection, .tooSlow, handler)
            }
        }
    }
}

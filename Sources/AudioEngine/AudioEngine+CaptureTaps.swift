// Capture taps: input groups (and buses) copied into rings for recorders. Control thread.
import Platform

extension AudioEngine {
    // MARK: Capture taps

    /// Adds a capture tap on an input group; returns its handle for the consumer.
    ///
    /// - Parameters:
    ///   - channels: which of the group's channels (0-based), in order; default all.
    ///   - bufferFrames: ring size; default two seconds.
    ///   - zeroed: start writing zeros (muted, or not granted) instead of samples.
    ///   - referenceOutputGroup: for a capture that is echo-cancelled, the output group whose
    ///     samples are its far end: the tap gets a `reference` tap over that group's channels
    ///     (at most 8, the processor's limit), published in the same snapshot and removed with it.
    public func addCaptureTap(
        inputGroup: String, channels: [Int]? = nil, bufferFrames: Int? = nil, zeroed: Bool = false,
        referenceOutputGroup: String? = nil
    ) throws(AudioEngineError) -> CaptureTap {
        guard let connection else { throw lostOrNotRunning }
        let tap = try makeCaptureTap(
            inputGroup: inputGroup, channels: channels, bufferFrames: bufferFrames, zeroed: zeroed,
            referenceOutputGroup: referenceOutputGroup)
        var graph = connection.memory.graph
        graph.taps.append(tap)
        if let reference = tap.reference { graph.referenceTaps.append(reference) }
        connection.memory.publish(graph)
        return tap
    }

    /// Replaces an input tap by a new one on `inputGroup` in ONE graph snapshot: the old tap's
    /// last period and the new tap's first are adjacent (the new tap's `firstFrameTime` is the
    /// frame after the old tap's last), so a recording can go on from another input
    /// continuous in time. The old tap is detached (what it captured stays readable), its
    /// reference tap with it; a tap not in the graph is simply not removed. Parameters as
    /// `addCaptureTap`.
    public func replaceCaptureTap(
        _ old: CaptureTap, inputGroup: String, channels: [Int]? = nil, bufferFrames: Int? = nil,
        zeroed: Bool = false, referenceOutputGroup: String? = nil
    ) throws(AudioEngineError) -> CaptureTap {
        guard let connection else { throw lostOrNotRunning }
        let tap = try makeCaptureTap(
            inputGroup: inputGroup, channels: channels, bufferFrames: bufferFrames, zeroed: zeroed,
            referenceOutputGroup: referenceOutputGroup)
        var graph = connection.memory.graph
        graph.taps.removeAll { $0 === old }
        graph.referenceTaps.removeAll { $0 === old.reference }
        graph.taps.append(tap)
        if let reference = tap.reference { graph.referenceTaps.append(reference) }
        connection.memory.publish(graph)
        let mark = connection.memory.cycles.markNow()
        old.detach(after: mark)
        old.reference?.detach(after: mark)
        return tap
    }

    func makeCaptureTap(
        inputGroup: String, channels: [Int]?, bufferFrames: Int?, zeroed: Bool, referenceOutputGroup: String? = nil
    ) throws(AudioEngineError) -> CaptureTap {
        guard let connection, let client = runningClient else { throw lostOrNotRunning }
        guard let group = connection.inputs.first(where: { $0.spec.name == inputGroup }) else {
            throw .unknownGroup(inputGroup)
        }
        let channels = channels ?? Array(0..<group.spec.channels)
        guard !channels.isEmpty, channels.allSatisfy({ (0..<group.spec.channels).contains($0) })
        else {
            throw .invalidArgument(
                "capture channels \(channels.map { $0 + 1 }) are not within group '\(inputGroup)''s "
                    + "\(group.spec.channels) channels")
        }
        let capacity = max(bufferFrames ?? 2 * client.sampleRate, 1)
        var reference: CaptureTap?
        if let referenceOutputGroup {
            guard let output = connection.outputs.first(where: { $0.spec.name == referenceOutputGroup }) else {
                throw .unknownGroup(referenceOutputGroup)
            }
            // Twice the capture's ring: read in step with the capture, it overruns only after the
            // capture has (whose gap its consumer then skips in both), not before.
            reference = CaptureTap(
                inputGroup: referenceOutputGroup,
                flatInputChannels: (0..<min(output.spec.channels, 8)).map { output.flatBase + $0 },
                capacityFrames: 2 * capacity, zeroed: false, sampleRate: client.sampleRate, isReference: true)
        }
        return CaptureTap(
            inputGroup: inputGroup, flatInputChannels: channels.map { group.flatBase + $0 },
            capacityFrames: capacity, zeroed: zeroed, sampleRate: client.sampleRate, reference: reference)
    }

    /// Makes a tap write zeros instead of samples (app input mute, permission not granted),
    /// from the next period on.
    public func setZeroed(_ tap: CaptureTap, _ zeroed: Bool) {
        tap.state.pointee.zeroed.store(zeroed, ordering: .releasing)
    }

    /// Takes a tap (input or bus) out of the graph, with its reference tap; what it captured
    /// stays readable.
    /// It is retired (`CaptureTap.isRetired`) once the process thread has finished a cycle
    /// begun after this.
    public func removeCaptureTap(_ tap: CaptureTap) {
        guard let connection else {
            tap.detach(after: nil)
            return
        }
        var graph = connection.memory.graph
        guard graph.taps.contains(where: { $0 === tap }) || graph.busTaps.contains(where: { $0 === tap })
        else {
            // Not in this graph (already removed, or the engine was restarted since): no cycle
            // of this client writes it.
            tap.detach(after: nil)
            tap.reference?.detach(after: nil)
            return
        }
        graph.taps.removeAll { $0 === tap }
        graph.busTaps.removeAll { $0 === tap }
        graph.referenceTaps.removeAll { $0 === tap.reference }
        connection.memory.publish(graph)
        // A lost server runs no cycle (libjack's process thread waits on the server that is
        // gone): the tap is retired now, not when the engine is stopped or reconnected.
        let lost = connection.lost || connection.client.sink.serverLost.load(ordering: .acquiring)
        let mark = lost ? nil : connection.memory.cycles.markNow()
        tap.detach(after: mark)
        tap.reference?.detach(after: mark)
    }
}

@testable import AudioEngine

/// The engine's real-time memory without a JACK server: fake port buffers, and `cycle` runs
/// the process path (`runCycle`) on them as JACK would. Test thread only.
final class ProcessRig {
    let memory: EngineMemory
    let inputs: [UnsafeMutablePointer<Float>]
    let outputs: [UnsafeMutablePointer<Float>]
    let maxFrames: Int
    /// Frames of the counter signal fed so far (see `feedCounter`).
    private(set) var counter = 0
    private(set) var frameTime: UInt32 = 1000

    init(inputChannels: Int, outputChannels: Int, maxFrames: Int = 1024) {
        self.maxFrames = maxFrames
        memory = EngineMemory(
            client: nil, inputPorts: Array(repeating: nil, count: inputChannels),
            outputPorts: Array(repeating: nil, count: outputChannels))
        inputs = (0..<inputChannels).map { _ in
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: maxFrames)
            buffer.initialize(repeating: 0, count: maxFrames)
            return buffer
        }
        outputs = (0..<outputChannels).map { _ in
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: maxFrames)
            buffer.initialize(repeating: 0, count: maxFrames)
            return buffer
        }
        for (index, buffer) in inputs.enumerated() {
            memory.state.pointee.inputBuffers[index] = buffer
        }
        for (index, buffer) in outputs.enumerated() {
            memory.state.pointee.outputBuffers[index] = buffer
        }
    }

    deinit {
        memory.freeAll()
        for buffer in inputs + outputs { buffer.deallocate() }
    }

    /// Fills the inputs with the next `frames` of the counter signal: channel c of stream frame
    /// k is (k + 1) * (c even ? 1 : -1).
    func feedCounter(frames: Int) {
        for (channel, buffer) in inputs.enumerated() {
            let sign: Float = channel % 2 == 0 ? 1 : -1
            for frame in 0..<frames { buffer[frame] = sign * Float(counter + frame + 1) }
        }
        counter += frames
    }

    /// One period, as JACK would run it (the inputs must already hold it).
    func cycle(frames: Int) {
        runCycle(memory.state, frames: frames, frameTime: frameTime)
        frameTime &+= UInt32(frames)
    }

    func addPlayer(
        channels: Int, outputs routes: [PlayerRoute], capacityFrames: Int, gain: Float = 1,
        flatOutputBase: Int = 0
    )
        -> PlayerHandle
    {
        let player = PlayerHandle(
            outputGroup: "out", channels: channels, capacityFrames: capacityFrames, routes: routes,
            flatOutputBase: flatOutputBase,
            initialCommand: PlayerCommand(gain: gain, rampFrames: 0, paused: false))
        memory.publish(players: memory.players + [player], taps: memory.taps)
        return player
    }

    /// Sets monitoring as `AudioEngine.setMonitoring` does, on these group layouts.
    @discardableResult
    func setMonitoring(
        _ setup: MonitoringSetup, rampFrames: Int, inputs: [String: GroupLayout],
        outputs: [String: GroupLayout]
    ) throws(AudioEngineError) -> MonitoringPlan {
        let plan = try memory.makeMonitoringPlan(
            setup, rampFrames: rampFrames, inputGroups: inputs, outputGroups: outputs)
        var graph = memory.graph
        graph.monitoring = plan
        memory.publish(graph)
        return plan
    }

    /// A tap on a bus, as `AudioEngine.addBusTap` makes it.
    func addBusTap(_ bus: Bus, channels: Int = 2, capacityFrames: Int) -> CaptureTap {
        let tap = CaptureTap(
            inputGroup: bus.rawValue, bus: bus,
            flatInputChannels: (0..<channels).map {
                MonitorState.busIndex(cue: bus == .cue, channel: $0)
            },
            capacityFrames: capacityFrames, zeroed: false)
        var graph = memory.graph
        graph.busTaps.append(tap)
        memory.publish(graph)
        return tap
    }

    /// A processed capture's pair as `AudioEngine.addCaptureTap(referenceOutputGroup:)` makes it:
    /// an input tap and its reference tap over `referenceOutputs` (flat output channels), in
    /// one snapshot.
    func addProcessedTap(channels: [Int], referenceOutputs: [Int], capacityFrames: Int) -> CaptureTap {
        let reference = CaptureTap(
            inputGroup: "out", flatInputChannels: referenceOutputs, capacityFrames: 2 * capacityFrames,
            zeroed: false, isReference: true)
        let tap = CaptureTap(
            inputGroup: "in", flatInputChannels: channels, capacityFrames: capacityFrames, zeroed: false,
            reference: reference)
        var graph = memory.graph
        graph.taps.append(tap)
        graph.referenceTaps.append(reference)
        memory.publish(graph)
        return tap
    }

    func addTap(channels: [Int], capacityFrames: Int) -> CaptureTap {
        let tap = CaptureTap(
            inputGroup: "in", flatInputChannels: channels, capacityFrames: capacityFrames,
            zeroed: false)
        memory.publish(players: memory.players, taps: memory.taps + [tap])
        return tap
    }
}

extension ProcessRig {
    /// An attachment as `AudioEngine.attach` makes it, with `play` and `capture` test buffers
    /// standing in for recd's ports (its voice plays to flat output channels from 0).
    func addAttachment(
        play: [UnsafeMutablePointer<Float>], capture: [UnsafeMutablePointer<Float>], groupChannels: Int
    ) -> AttachmentHandle {
        let player =
            play.isEmpty
            ? nil
            : PlayerHandle(
                outputGroup: "out", channels: play.count, capacityFrames: AudioEngine.attachmentRingFrames,
                routes: PlayerRoute.defaultRoutes(playerChannels: play.count, groupChannels: groupChannels),
                flatOutputBase: 0, initialCommand: PlayerCommand(gain: 1, rampFrames: 0, paused: true))
        let handle = AttachmentHandle(
            clientName: "app", playPorts: play.indices.map { "app:out_\($0 + 1)" },
            recdPlayPorts: play.indices.map { .init(port: nil, name: "recd:app-play_\($0 + 1)") },
            capturePorts: capture.indices.map { "app:in_\($0 + 1)" },
            recdCapturePorts: capture.indices.map { .init(port: nil, name: "recd:app-capture_\($0 + 1)") },
            player: player, release: nil)
        handle.setTestBuffers(play: play, capture: capture)
        var graph = memory.graph
        if let player { graph.players.append(player) }
        graph.attachments.append(handle)
        memory.publish(graph)
        return handle
    }
}

extension ProcessRig {
    /// A processed capture as `AudioEngine.processCapture` makes it for `handle`: a tap over
    /// input `channels` with its reference over `referenceOutputs`, and a ring starting with
    /// `slackFrames` of silence, in one snapshot.
    func addProcessedCapture(
        _ handle: AttachmentHandle, channels: [Int], referenceOutputs: [Int], portChannels: [Int], slackFrames: Int
    ) -> ProcessedCapture {
        let reference = CaptureTap(
            inputGroup: "out", flatInputChannels: referenceOutputs, capacityFrames: 8192, zeroed: false,
            isReference: true)
        let tap = CaptureTap(
            inputGroup: "in", flatInputChannels: channels, capacityFrames: 4096, zeroed: false, reference: reference)
        let processed = ProcessedCapture(tap: tap, portChannels: portChannels, slackFrames: slackFrames)
        var graph = memory.graph
        graph.taps.append(tap)
        graph.referenceTaps.append(reference)
        graph.processedCaptures[ObjectIdentifier(handle)] = processed
        memory.publish(graph)
        return processed
    }
}

// `capture`: input ports recorded to a file through a ring and a writer thread. Main thread.

internal import CJack

/// Runs `capture` to its end. Lifetime order: client → file → ring and state → writer thread →
/// activate → ports → connect → arm/ready → wait → close the client (the process thread stops)
/// → drain and join the writer → finish the file → free.
///
/// The ports are registered once the client is active, so that they appear (to recd, which
/// may route a player to them at once, as to a device just plugged) only when this client's
/// cycles run: registered first, a player moved within the period lost the audio of the
/// cycles before the client's activation and arming (seen: two periods, 2,048 frames, under a
/// test run's load). Until armed, the process callback returns at once and touches no port.
func runCapture(_ options: CaptureOptions, invocation: Invocation, signals: StopSignals)
    throws(Failure)
{
    let client = try SignalClient(name: invocation.clientName, serverName: invocation.serverName)
    defer { client.close() }
    let rate = client.sampleRate
    let channels = options.ports.count
    let frameBytes = channels * MemoryLayout<Float>.size

    let file = try CaptureFile(
        path: options.outputPath, wav: options.wav, channelCount: channels, sampleRate: rate)
    // Four seconds of audio: the writer sleeps 2 ms at a time, so only a stalled disk fills it.
    guard let ring = jack_ringbuffer_create(max(rate, 8000) * 4 * frameBytes) else {
        try? file.close(frames: 0)
        throw .jack("cannot allocate the capture ring")
    }
    _ = jack_ringbuffer_mlock(ring)

    let scratchFrames = 4096
    // Filled once the ports are registered, before the callback is armed.
    let portTable = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: channels)
    portTable.initialize(repeating: nil, count: channels)
    let buffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
    let scratch = UnsafeMutablePointer<Float>.allocate(capacity: scratchFrames * channels)
    scratch.initialize(repeating: 0, count: scratchFrames * channels)
    let state = UnsafeMutablePointer<CaptureState>.allocate(capacity: 1)
    state.initialize(
        to: CaptureState(
            client: client.handle!, ports: portTable, buffers: buffers, channelCount: channels,
            ring: ring, scratch: scratch, scratchFrames: scratchFrames,
            frameLimit: frameLimit(seconds: options.seconds, rate: rate)))
    defer {
        client.close()
        state.deinitialize(count: 1)
        state.deallocate()
        scratch.deinitialize(count: scratchFrames * channels)
        scratch.deallocate()
        buffers.deallocate()
        portTable.deinitialize(count: channels)
        portTable.deallocate()
        jack_ringbuffer_free(ring)
    }

    let writer: CaptureWriter
    do {
        writer = try CaptureWriter(ring: ring, descriptor: file.descriptor, frameBytes: frameBytes)
    } catch {
        try? file.close(frames: 0)
        throw error
    }
    let writerShared = writer.shared

    var failure: Failure?
    var rateOutcome: RateCheck.Outcome?
    do throws(Failure) {
        try client.setProcess(captureProcess, argument: UnsafeMutableRawPointer(state))
        try client.activate()
        let ports = try client.registerPorts(options.ports, direction: .input)
        for (index, port) in ports.enumerated() { portTable[index] = port }
        try client.connect(ports: ports, to: options.connections, direction: .input)
        let rateCheck = invocation.rateCheck ? RateCheck(client: client) : nil
        state.pointee.progress.armed.store(true, ordering: .releasing)
        client.announceReady(ports: ports)
        let reason = client.waitForStop(
            signals: signals,
            finished: {
                state.pointee.progress.finished.load(ordering: .acquiring)
                    || writerShared.pointee.failure.load(ordering: .relaxed) != 0
            },
            firstFrameTime: { state.pointee.progress.firstFrameTime.load(ordering: .acquiring) })
        if case .serverGone = reason { failure = .jack("the JACK server went away") }
        rateOutcome = rateCheck?.measure(client: client)
    } catch {
        failure = error
    }

    // After close the process thread is gone, so the writer can drain what is left.
    client.close()
    let (bytes, writeError) = writer.finish()
    let frames = bytes / frameBytes
    do {
        try file.close(frames: frames)
    } catch {
        failure = failure ?? error
    }
    if writeError != 0 {
        failure =
            failure ?? .jack("cannot write \(options.outputPath): \(errnoDescription(writeError))")
    }
    Console.error(
        "done frames=\(frames) channels=\(channels) rate=\(rate) xruns=\(client.xruns) "
            + "overruns=\(state.pointee.overruns.load(ordering: .relaxed)) "
            + "dropped-frames=\(state.pointee.droppedFrames.load(ordering: .relaxed))")
    if let failure { throw failure }
    try rateOutcome?.report()
}

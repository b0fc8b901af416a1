// `play`: output ports playing a generated signal. Main thread.

/// Runs `play` to its end. Lifetime order: client → ports → state → activate → connect →
/// arm/ready → wait → deactivate → close → free state.
func runPlay(_ options: PlayOptions, invocation: Invocation, signals: StopSignals)
    throws(Failure)
{
    let client = try SignalClient(name: invocation.clientName, serverName: invocation.serverName)
    defer { client.close() }
    let rate = client.sampleRate
    for frequency in options.signal.frequencies where frequency >= Double(rate) / 2 {
        throw .usage(
            "\(format(frequency, 1)) Hz is not below half the server's sample rate (\(rate) Hz)")
    }
    let ports = try client.registerPorts(options.ports, direction: .output)

    let channels = ports.count
    let portTable = UnsafeMutablePointer<OpaquePointer>.allocate(capacity: channels)
    portTable.initialize(from: ports, count: channels)
    let buffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
    let generator = Generator.make(
        signal: options.signal, amplitude: linearAmplitude(dBFS: options.levelDBFS),
        channelCount: channels, sampleRate: rate)
    let state = UnsafeMutablePointer<PlayState>.allocate(capacity: 1)
    state.initialize(
        to: PlayState(
            client: client.handle!, ports: portTable, buffers: buffers, channelCount: channels,
            frameLimit: frameLimit(seconds: options.seconds, rate: rate),
            silentFrom: options.silence.map { frameLimit(seconds: $0.from, rate: rate) } ?? 0,
            silentUntil: options.silence.map { frameLimit(seconds: $0.from + $0.length, rate: rate) } ?? 0,
            generator: generator, envelope: Envelope.make(options.envelope, sampleRate: rate)))
    defer {
        // The process thread must be gone before its memory is.
        client.close()
        state.pointee.generator.deallocate()
        state.pointee.envelope?.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
        buffers.deallocate()
        portTable.deinitialize(count: channels)
        portTable.deallocate()
    }

    try client.setProcess(playProcess, argument: UnsafeMutableRawPointer(state))
    try client.activate()
    try client.connect(ports: ports, to: options.connections, direction: .output)
    let rateCheck = invocation.rateCheck ? RateCheck(client: client) : nil
    state.pointee.progress.armed.store(true, ordering: .releasing)
    client.announceReady(ports: ports)

    let reason = client.waitForStop(
        signals: signals,
        finished: { state.pointee.progress.finished.load(ordering: .acquiring) },
        firstFrameTime: { state.pointee.progress.firstFrameTime.load(ordering: .acquiring) })
    if case .serverGone = reason { throw .jack("the JACK server went away") }
    let rateOutcome = rateCheck?.measure(client: client)
    client.deactivate()
    Console.error(
        "done frames=\(state.pointee.progress.frames.load(ordering: .acquiring)) "
            + "channels=\(channels) rate=\(rate) xruns=\(client.xruns)")
    try rateOutcome?.report()
}

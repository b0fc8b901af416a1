// `ports`: input ports that just exist, like a device that appears; SIGTERM/SIGINT removes
// them like a device that disappears. Main thread.

func runPorts(names: [String], invocation: Invocation, signals: StopSignals) throws(Failure) {
    let client = try SignalClient(name: invocation.clientName, serverName: invocation.serverName)
    defer { client.close() }
    let ports = try client.registerPorts(names, direction: .input)
    try client.activate()
    let rateCheck = invocation.rateCheck ? RateCheck(client: client) : nil
    client.announceReady(ports: ports)

    let reason = client.waitForStop(signals: signals, finished: { false })
    if case .serverGone = reason { throw .jack("the JACK server went away") }
    let rateOutcome = rateCheck?.measure(client: client)
    // Unregister explicitly, so the disappearance is port by port, as when a device goes.
    for port in ports { client.unregister(port) }
    client.deactivate()
    try rateOutcome?.report()
}

// `ports`: input ports that just exist, like a device that appears; SIGTERM/SIGINT removes
// them like a device that disappears: port by port, or (`--close-only`) by closing the client
// with its ports still registered, as alsa_in or zita-a2j do when their USB interface goes.
// Main thread.

func runPorts(names: [String], closeOnly: Bool, invocation: Invocation, signals: StopSignals)
    throws(Failure)
{
    let client = try SignalClient(name: invocation.clientName, serverName: invocation.serverName)
    defer { client.close() }
    let ports = try client.registerPorts(names, direction: .input)
    try client.activate()
    let rateCheck = invocation.rateCheck ? RateCheck(client: client) : nil
    client.announceReady(ports: ports)

    let reason = client.waitForStop(signals: signals, finished: { false })
    if case .serverGone = reason { throw .jack("the JACK server went away") }
    let rateOutcome = rateCheck?.measure(client: client)
    if closeOnly {
        // jack_client_close alone (the deferred close): the ports go with the client.
        try rateOutcome?.report()
        return
    }
    // Unregister explicitly, so the disappearance is port by port, as when a device goes.
    for port in ports { client.unregister(port) }
    client.deactivate()
    try rateOutcome?.report()
}

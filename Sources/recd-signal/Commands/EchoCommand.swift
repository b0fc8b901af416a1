// `echo`: a room made in the graph, for measuring echo cancellation. Main thread.

import Platform

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `echo` to its end. Lifetime order: near-end file → client → ports → state →
/// activate → connect → arm/ready → wait → close the client → free state.
func runEcho(_ options: EchoOptions, invocation: Invocation, signals: StopSignals) throws(Failure) {
    let near = try readNearEnd(options.nearPath)
    let client = try SignalClient(name: invocation.clientName, serverName: invocation.serverName)
    defer { client.close() }
    let rate = client.sampleRate
    let inputs = try client.registerPorts([options.ports[0]], direction: .input)
    let outputs = try client.registerPorts([options.ports[1]], direction: .output)
    let room = EchoRoom(
        delaySeconds: options.delayMilliseconds / 1_000, gain: linearAmplitude(dBFS: options.gainDB))
    let taps = room.taps(sampleRate: rate)
    let longest = (taps.map(\.offset).max() ?? 0) + 8_192
    var size = 1
    while size < longest { size *= 2 }

    let line = UnsafeMutablePointer<Float>.allocate(capacity: size)
    line.initialize(repeating: 0, count: size)
    let offsets = UnsafeMutablePointer<Int>.allocate(capacity: taps.count)
    offsets.initialize(from: taps.map(\.offset), count: taps.count)
    let gains = UnsafeMutablePointer<Float>.allocate(capacity: taps.count)
    gains.initialize(from: taps.map { Float($0.gain) }, count: taps.count)
    let nearSamples = UnsafeMutablePointer<Float>.allocate(capacity: max(near.count, 1))
    nearSamples.initialize(from: near, count: near.count)
    let state = UnsafeMutablePointer<EchoState>.allocate(capacity: 1)
    state.initialize(
        to: EchoState(
            client: client.handle!, input: inputs[0], output: outputs[0], line: line, mask: size - 1,
            offsets: offsets, gains: gains, tapCount: taps.count, near: nearSamples, nearCount: near.count,
            frameLimit: frameLimit(seconds: options.seconds, rate: rate)))
    defer {
        // The process thread must be gone before its memory is.
        client.close()
        state.deinitialize(count: 1)
        state.deallocate()
        line.deallocate()
        offsets.deallocate()
        gains.deallocate()
        nearSamples.deallocate()
    }

    try client.setProcess(echoProcess, argument: UnsafeMutableRawPointer(state))
    try client.activate()
    try client.connect(ports: inputs, to: [options.connections.first ?? nil], direction: .input)
    try client.connect(ports: outputs, to: [options.connections.dropFirst().first ?? nil], direction: .output)
    state.pointee.progress.armed.store(true, ordering: .releasing)
    client.announceReady(ports: inputs + outputs)
    let reason = client.waitForStop(
        signals: signals,
        finished: { state.pointee.progress.finished.load(ordering: .acquiring) },
        firstFrameTime: { state.pointee.progress.firstFrameTime.load(ordering: .acquiring) })
    if case .serverGone = reason { throw .jack("the JACK server went away") }
    client.deactivate()
    Console.error(
        "done frames=\(state.pointee.progress.frames.load(ordering: .acquiring)) channels=1 rate=\(rate) "
            + "xruns=\(client.xruns)")
}

/// The near end: raw float32 little-endian mono samples (no header), all in memory before the
/// client starts. At most 10 minutes at 48 kHz: the file sizes memory.
private func readNearEnd(_ path: String?) throws(Failure) -> [Float] {
    guard let path else { return [] }
    let bytes: [UInt8]
    do {
        let file = try OwnedFile(path, .readOnly)
        guard try file.size() <= 4 * 48_000 * 600 else {
            throw Failure(
                status: .usage, message: "--near \(path) is over 10 minutes at 48 kHz; give a shorter file")
        }
        bytes = try file.readToEnd()
        try file.close()
    } catch let error as Failure {
        throw error
    } catch {
        throw Failure(status: .failure, message: "cannot read --near \(path): \(error)")
    }
    guard bytes.count % 4 == 0 else {
        throw Failure(
            status: .usage, message: "--near \(path) is not raw float32 samples (\(bytes.count) bytes)")
    }
    return bytes.withUnsafeBytes { raw in
        (0..<(bytes.count / 4)).map {
            Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self)))
        }
    }
}

/// The room's impulse response (the help text gives it): the direct sound `delaySeconds` later
/// at `gain`, four early reflections, and a sparse tail of 40 taps from 20 to 40 ms after the
/// direct sound decaying by 10 ms, signs from a fixed seed (the same room every run).
struct EchoRoom {
    var delaySeconds: Double
    var gain: Double

    func taps(sampleRate: Int) -> [(offset: Int, gain: Double)] {
        let rate = Double(sampleRate)
        let direct = Int(delaySeconds * rate)
        var taps: [(offset: Int, gain: Double)] = [(direct, gain)]
        for (milliseconds, relative) in [(2.9, 0.45), (6.1, -0.3), (11.7, 0.2), (17.3, -0.12)] {
            taps.append((direct + Int(milliseconds * rate / 1_000), gain * relative))
        }
        var seed: UInt64 = 0x6563_686F
        for _ in 0..<40 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let milliseconds = 20 + 20 * Double((seed >> 33) % 1_000) / 1_000
            let sign: Double = (seed >> 32) & 1 == 0 ? 1 : -1
            let level = gain * 0.1 * exp(-(milliseconds - 20) / 10) * sign
            taps.append((direct + Int(milliseconds * rate / 1_000), level))
        }
        return taps
    }
}

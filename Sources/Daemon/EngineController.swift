// The daemon's side of the audio engine: config ports ↔ JACK port groups, port availability
// (the one place recd keeps it: the store gets a copy through `updatePorts`, services ask
// here), hardware facts for sessions, media-services loss and return, and the faces each
// service sees of the engine (EngineFacades.swift).
// Control thread only (the engine's wake closure merely posts to the control loop).
import Archive
import AudioEngine
import ControlProtocol
import Platform
import SessionPolicy
import SystemSupport

/// What the engine told the control loop since the last drain, in policy terms.
struct EngineNews {
    var availabilityChanged = false
    var serverLost: String?
    var xruns = 0
    /// The server's period or rate changed under the same client (another client's
    /// `jack_bufsize`, recd's own preference, PipeWire's quantum or rate): the new values.
    var bufferSize: Int?
    var sampleRate: Int?

    /// Whether the server's configuration changed (routeConfigurationChange, SPEC §4).
    var configurationChanged: Bool { bufferSize != nil || sampleRate != nil }
}

/// Owns the `AudioEngine` and translates between config ports and JACK port groups.
///
/// A port is available while the engine runs, every JACK port group behind it is complete
/// (the engine's group availability, as of its last drain) and its jack-sense control, if it
/// has one, says plugged. That is computed when asked, never stored, so nothing can disagree
/// with it; only the connection order ("last in wins") needs memory.
final class EngineController {
    private let engine: AudioEngine
    let config: RecdConfig
    /// Increases whenever a port becomes available: "last in wins" (SPEC §4).
    private var connectionCounter = 0
    private var connectedOrder: [String: Int] = [:]
    /// The ports available at the last `noteConnections`: only to see which ones came back.
    private var seenAvailable: Set<String> = []
    /// Jack-sense state per port (nil: no sense control, JACK alone decides).
    private var sensePlugged: [String: Bool] = [:]
    /// JACK's frame time and microsecond clock when recd first had news of the latest device
    /// to arrive (reactions to it are measured from there): JACK's port registration, or, when
    /// a drain found the port listed before JACK's notification came (it can), the drain
    /// itself; or a jack sense saying plugged reaching the control thread.
    private var lastArrival: (frameTime: UInt32, micros: UInt64)?
    /// The same for a jack sense saying unplugged (JACK's own losses are the engine's).
    private var lastSenseUnplug: (frameTime: UInt32, micros: UInt64)?
    private(set) var lastError: String?
    private var nextAttempt = 0.0
    /// Connections restored after someone else removed them: when each was last logged.
    private var repairLog: [JackConnection: RepairLogEntry] = [:]

    /// The RTP streams PipeWire receives (which clients' ports `routes` shows as an RTP
    /// session's) and recd's own count of their packets; made by the composition root.
    let rtp: RTPSessionDirectory

    init(config: RecdConfig, rtp: RTPSessionDirectory = RTPSessionDirectory(monitor: nil), wake: @escaping @Sendable () -> Void) {
        self.config = config
        self.engine = AudioEngine(wake: wake)
        self.rtp = rtp
    }

    /// Reads again which JACK clients are RTP streams (on PipeWire only: `pw-dump` on `worker`);
    /// when ports came or went.
    func refreshRTPSessions(worker: SlowRequestWorker) {
        let onPipeWire = isRunning && implementation.kind == .pipewire
        rtp.refresh(remote: serverName, onPipeWire: onPipeWire, worker: worker)
    }

    /// The network's facts about a configured input port's audio when it is an RTP stream
    /// PipeWire receives (looked up when asked: the monitor may find the stream later); nil on
    /// jackd2, or for a port that is no input.
    func networkReception(port name: String) -> (any NetworkReception)? {
        guard implementation.kind == .pipewire, let port = config.port(named: name),
            port.direction != .output
        else { return nil }
        let jack = port.direction == .duplex ? port.jackIn : port.jack
        var clients: [String] = []
        for name in jack {
            let client = String(name.prefix { $0 != ":" })
            if !clients.contains(client) { clients.append(client) }
        }
        return rtp.reception(clients: clients)
    }

    /// Group names: a duplex port has an input and an output group.
    static func inputGroup(_ port: PortDecl) -> String? {
        switch port.direction {
        case .input: port.name
        case .duplex: port.name + "_in"
        case .output: nil
        }
    }

    static func outputGroup(_ port: PortDecl) -> String? {
        switch port.direction {
        case .output: port.name
        case .duplex: port.name + "_out"
        case .input: nil
        }
    }

    /// Both groups of a port (one for an input or an output, two for a duplex port).
    static func groups(_ port: PortDecl) -> [String] {
        [inputGroup(port), outputGroup(port)].compactMap { $0 }
    }

    /// Channels of a port's output side (a duplex port's earpiece may differ from its mic).
    static func outputChannels(_ port: PortDecl) -> Int {
        port.direction == .duplex ? max(port.jackOut.count, 1) : port.channels
    }

    var engineConfiguration: AudioEngine.Configuration {
        var inputs: [PortGroupSpec] = []
        var outputs: [PortGroupSpec] = []
        for port in config.ports {
            if let name = Self.inputGroup(port) {
                inputs.append(
                    PortGroupSpec(
                        name: name, channels: port.channels,
                        connectTo: port.direction == .duplex ? port.jackIn : port.jack))
            }
            if let name = Self.outputGroup(port) {
                let jack = port.direction == .duplex ? port.jackOut : port.jack
                // A duplex port's earpiece may have its own channel count (config: channels counts jack_in).
                outputs.append(PortGroupSpec(name: name, channels: Self.outputChannels(port), connectTo: jack))
            }
        }
        return AudioEngine.Configuration(
            clientName: config.jack.clientName, serverName: config.jack.server, inputs: inputs, outputs: outputs)
    }

    // MARK: Connection

    var isRunning: Bool { engine.isRunning }

    /// Whether the server went away under the open client (the engine has not been stopped yet).
    var isServerLost: Bool { engine.isServerLost }

    /// Opens the JACK client. Never starts a server; false (with `lastError`) when none runs.
    func start() -> Bool {
        do {
            try engine.start(engineConfiguration)
            lastError = nil
            noteConnections()
            return true
        } catch {
            lastError = "\(error)"
            return false
        }
    }

    /// Leaves JACK (after a loss, at shutdown); every port is unavailable from now on.
    func stop() {
        engine.stop()
        noteConnections()
    }

    /// One reconnection attempt, at most every 250 ms (SPEC §6: back within 2 s).
    func tryReconnect(now: Double) -> Bool {
        guard now >= nextAttempt else { return false }
        nextAttempt = now + 0.25
        engine.stop()
        return start()
    }

    /// Collects engine notifications.
    func drain() -> EngineNews {
        var news = EngineNews()
        for notification in engine.drainNotifications(repair: false) {
            switch notification {
            case .groupAvailabilityChanged: news.availabilityChanged = true
            case .serverLost(let reason): news.serverLost = reason
            case .xrun(let count): news.xruns += count
            case .bufferSize(let frames): news.bufferSize = frames
            case .sampleRate(let rate): news.sampleRate = rate
            case .portRegistered, .portUnregistered, .portConnectionChanged: break
            }
        }
        if news.availabilityChanged && noteConnections() {
            // A port became available: from JACK's news of a registration if there was one
            // just before (within the 40 ms settling recheck and a period or two), else from
            // now (the port list showed it before JACK's notification came).
            let now = now()
            if let heard = engine.lastPortArrival, let now, heard.micros > lastArrival?.micros ?? 0,
                now.micros &- heard.micros < Self.arrivalNewsWindowMicros
            {
                lastArrival = heard
            } else {
                lastArrival = now
            }
        }
        return news
    }

    /// Makes missing JACK connections; after the policy has reacted (it can take a period or two).
    /// A connection someone else removed (`jack_disconnect recd:out_1 system:playback_1`) is
    /// made again every time: the config says where recd's ports go. The notice naming it is
    /// logged at most once a second per connection, with the count of repeats in between, so
    /// an operator (or a patchbay) removing it in a loop does not flood the journal.
    ///
    /// A connection that something keeps undoing (recd changed it more than twice within a
    /// second) the engine leaves alone: that is logged once, as an error, and `status` lists it
    /// (`churning`) until recd touches it again (its ports register again, or after a while).
    func repairConnections() {
        let restored = engine.repairConnections()
        for churn in engine.takeChurnNews() { Self.logChurn(churn) }
        guard !restored.isEmpty else { return }
        let now = SystemClock.monotonicSeconds()
        for connection in restored {
            var entry = repairLog[connection] ?? RepairLogEntry()
            entry.repeats += 1
            if now - entry.loggedAt >= Self.repairLogInterval {
                let again = entry.repeats > 1 ? " (removed \(entry.repeats) times since the last notice)" : ""
                Log.notice(
                    "JACK connection \(connection) was removed by another client\(again); recd restored it. "
                        + "recd keeps the connections its [port] config names: to send audio elsewhere, "
                        + "change that port's jack ports")
                entry = RepairLogEntry(loggedAt: now, repeats: 0)
            }
            repairLog[connection] = entry
        }
    }

    private static func logChurn(_ churn: ChurningConnection) {
        let fight =
            churn.recdWantedIt
            ? "recd made it (its [port] config or an attachment wants it) and another JACK client removed it"
            : "recd cut it (it would bypass an attached application) and another JACK client made it again"
        Log.error(
            "JACK connection \(churn.connection) changed \(churn.changes) times in "
                + "\(Int(churn.windowSeconds)) s: \(fight), each time; recd leaves it alone for "
                + "\(Int(churn.retrySeconds)) s or until its ports register again. Stop the other "
                + "client (a patchbay or session manager that restores its own connections), or change the [port] "
                + "jack ports or the attachment so that the two agree")
    }

    /// The connections recd leaves alone now ("A → B"), for `status`.
    var churningConnections: [String] { engine.churningConnections.map(\.description) }

    /// At most one notice a second per repaired connection.
    static let repairLogInterval = 1.0

    private struct RepairLogEntry {
        var loggedAt = -Double.infinity
        /// Repairs since the last notice.
        var repeats = 0
    }

    // MARK: Availability (the one source)

    /// Whether the configured port `name` is available now.
    func isAvailable(port name: String) -> Bool {
        config.port(named: name).map(isAvailable) ?? false
    }

    private func isAvailable(_ port: PortDecl) -> Bool {
        engine.isRunning && Self.groups(port).allSatisfy { engine.isAvailable(group: $0) }
            && sensePlugged[port.name] != false
    }

    /// A jack-sense control changed: a port is available only while plugged (nil: no control).
    func setSensePlugged(port: String, _ plugged: Bool?) {
        if let plugged, sensePlugged[port] != plugged {
            if plugged { lastArrival = now() } else { lastSenseUnplug = now() }
        }
        sensePlugged[port] = plugged
        noteConnections()
    }

    /// How recent JACK's news of a registration must be to count as the news of a port that
    /// has just become available.
    static let arrivalNewsWindowMicros: UInt64 = 100_000

    /// JACK's frame time and microsecond clock now (nil when not running).
    private func now() -> (frameTime: UInt32, micros: UInt64)? {
        engine.frameTime.map { ($0, AudioEngine.jackMicros) }
    }

    /// Gives each port that became available since the last call the next connection order;
    /// returns whether there was one.
    @discardableResult
    private func noteConnections() -> Bool {
        var arrived = false
        for port in config.ports {
            let available = isAvailable(port)
            if available && !seenAvailable.contains(port.name) {
                arrived = true
                connectionCounter += 1
                connectedOrder[port.name] = connectionCounter
            }
            if available { seenAvailable.insert(port.name) } else { seenAvailable.remove(port.name) }
        }
        return arrived
    }

    /// The policy's view of every configured port (its input: `SessionStore.updatePorts`).
    var portStates: [PortState] { config.ports.map(portState) }

    /// The policy's view of one configured port.
    func portState(named name: String) -> PortState? { config.port(named: name).map(portState) }

    private func portState(_ port: PortDecl) -> PortState {
        PortState(
            name: port.name, type: port.type, direction: port.direction, channels: port.channels,
            capabilities: port.capabilities, codec: port.codec, available: isAvailable(port),
            connectedOrder: connectedOrder[port.name] ?? 0, outputChannels: Self.outputChannels(port))
    }

    /// The ports and groups for `recctl routes`.
    func describePorts() -> [(
        port: PortDecl, available: Bool, recdPorts: [String], order: Int,
        origins: [(jackPort: String, origin: PortOrigin)]
    )] {
        config.ports.map { port in
            let groups = Self.groups(port)
            return (
                port, isAvailable(port), groups.flatMap { engine.jackPortNames(ofGroup: $0) },
                connectedOrder[port.name] ?? 0,
                groups.flatMap { engine.origins(ofGroup: $0) }.map {
                    (jackPort: $0.jackPort, origin: rtp.origin($0.origin))
                }
            )
        }
    }

    /// The groups of the configured port `name` (for meters); empty for an unknown port.
    func groups(ofPort name: String) -> [String] { config.port(named: name).map(Self.groups) ?? [] }

    // MARK: Server facts

    var clientName: String? { engine.clientName }
    /// The JACK implementation behind libjack (jackd2's or PipeWire's; docs/jack-servers.md).
    var implementation: JackImplementation { .loaded }
    /// The server recd reaches: `[jack] server` as that implementation reads it, with the environment.
    var serverName: String { implementation.serverName(configured: config.jack.server) }
    var sampleRate: Int? { engine.sampleRate }
    var bufferSize: Int? { engine.bufferSize }
    var xruns: Int { engine.xruns }
    /// How the process thread's cycles ran since the client connected; nil while not connected.
    var cycleTimes: CycleTimeReport? { engine.cycleTimes }

    /// Peak and RMS of every channel since the previous call.
    func meters() -> [MeterReading] { engine.meters() }
    /// Whether the process thread measures the input and output meters (see `AudioEngine`).
    var metersActive: Bool {
        get { engine.metersActive }
        set { engine.metersActive = newValue }
    }

    /// What JACK says of a session's route (SPEC §5): nil fields when not connected. The
    /// channel counts are those streams use: the preferred count, at most the port's.
    func actualHardware(route: Route, preferences: HardwarePreferences) -> ActualHardware {
        guard engine.isRunning, let rate = engine.sampleRate, let buffer = engine.bufferSize else {
            return ActualHardware()
        }
        let latencies = engine.latencies()
        func latency(_ group: String?) -> Double? {
            guard let group, let entry = latencies.first(where: { $0.group == group }) else { return nil }
            return entry.seconds
        }
        let inputs = route.inputs.compactMap { name in config.port(named: name) }
        let outputs = route.outputs.compactMap { name in config.port(named: name) }
        return ActualHardware(
            sampleRate: Double(rate), ioBufferDuration: Double(buffer) / Double(rate),
            inputLatency: inputs.first.flatMap { latency(Self.inputGroup($0)) },
            outputLatency: outputs.first.flatMap { latency(Self.outputGroup($0)) },
            inputChannels: inputs.first.map { preferences.inputChannels(ofPort: $0.channels) },
            outputChannels: outputs.first.map { preferences.outputChannels(ofPort: Self.outputChannels($0)) })
    }

    /// Applies a preferred IO buffer duration when the config allows it; returns a note for the log.
    func applyBufferPreference(_ duration: Double) -> String? {
        guard config.jack.allowBufferSizeChanges else {
            return "the JACK buffer size stays as it is ([jack] allow_buffer_size_changes = no)"
        }
        guard let rate = engine.sampleRate else { return nil }
        do {
            let change = try engine.setBufferSize(nearest: Int((duration * Double(rate)).rounded()))
            if change.tookEffect { return "JACK buffer size set to \(change.inForce) frames" }
            // jackd2 changes the period before it answers; PipeWire's JACK answers first and
            // changes its quantum a few cycles later, or never while the quantum is forced.
            let why =
                implementation.kind == .pipewire
                ? "PipeWire applies a new quantum later (actual follows when it does), and never while its quantum "
                    + "is forced (`pw-metadata -n settings 0 clock.force-quantum 0` lifts that)"
                : "the server did not change it"
            return
                "asked JACK for \(change.requested) frames; the buffer size is still \(change.inForce) frames: \(why)"
        } catch {
            return "JACK refused a new buffer size: \(error)"
        }
    }
}

// MARK: - The services' faces of the engine

extension EngineController: AttachmentEngine {
    var anyOutputGroup: String? { config.ports.lazy.compactMap(Self.outputGroup).first }

    func beginAttach(client: String, playPorts: [String], capturePorts: [String], outputGroup: String?)
        throws(AudioEngineError) -> AttachmentTicket
    {
        try engine.beginAttach(client: client, playPorts: playPorts, capturePorts: capturePorts, outputGroup: outputGroup)
    }

    func finishedAttachments() -> [(AttachmentTicket, Result<AttachmentHandle, AudioEngineError>)] {
        engine.finishedAttachments()
    }

    func detach(_ handle: AttachmentHandle) { engine.detach(handle) }
    func setCapture(_ handle: AttachmentHandle, inputGroup: String?, open: Bool) {
        engine.setCapture(handle, inputGroup: inputGroup, open: open)
    }
    func processCapture(
        _ handle: AttachmentHandle, inputGroup: String, referenceOutputGroup: String, slackFrames: Int
    ) throws(AudioEngineError) -> ProcessedCapture {
        try engine.processCapture(
            handle, inputGroup: inputGroup, referenceOutputGroup: referenceOutputGroup, slackFrames: slackFrames)
    }
    func unprocessCapture(_ handle: AttachmentHandle) { engine.unprocessCapture(handle) }
    func enforceAttachments() -> [JackConnection] { engine.enforceAttachments() }
    func attachmentsWithMissingPorts() -> [AttachmentHandle] { engine.attachmentsWithMissingPorts() }
    func processID(ofClient name: String) -> Int32? { engine.processID(ofClient: name) }
}

extension EngineController: PlayerEngine, RecorderEngine, MonitoringEngine, SenseEngine {
    func output(port name: String) -> EngineOutput? {
        guard let port = config.port(named: name), let group = Self.outputGroup(port) else { return nil }
        return EngineOutput(group: group, channels: Self.outputChannels(port))
    }

    func inputGroup(port name: String) -> String? { config.port(named: name).flatMap(Self.inputGroup) }

    var inputPortNames: [String] { config.ports.filter(\.direction.canCapture).map(\.name) }

    func addPlayer(channels: Int, outputGroup: String, routes: [PlayerRoute]?, gainDecibels: Double)
        throws(AudioEngineError) -> PlayerHandle
    {
        try engine.addPlayer(channels: channels, outputGroup: outputGroup, routes: routes, gainDecibels: gainDecibels)
    }

    func play(_ player: PlayerHandle, rampMilliseconds: Double) {
        engine.play(player, rampMilliseconds: rampMilliseconds)
    }
    func pause(_ player: PlayerHandle, rampMilliseconds: Double) {
        engine.pause(player, rampMilliseconds: rampMilliseconds)
    }
    func setGain(_ player: PlayerHandle, decibels: Double) { engine.setGain(player, decibels: decibels) }
    func removePlayer(_ player: PlayerHandle) { engine.removePlayer(player) }

    func movePlayer(
        _ player: PlayerHandle, toOutputGroup outputGroup: String, routes: [PlayerRoute]?, rampMilliseconds: Double,
        moved: (() -> Void)?
    ) throws(AudioEngineError) {
        try engine.movePlayer(
            player, toOutputGroup: outputGroup, routes: routes, rampMilliseconds: rampMilliseconds, moved: moved)
    }

    func portLossReaction() -> PortReaction? {
        var jackLoss: (frameTime: UInt32, micros: UInt64)?
        if let frameTime = engine.lastPortLossFrameTime, let micros = engine.lastPortLossMicros {
            jackLoss = (frameTime, micros)
        }
        return reaction(since: [jackLoss, lastSenseUnplug])
    }

    func portArrivalReaction() -> PortReaction? { reaction(since: [lastArrival]) }

    /// Frames and microseconds since the latest of `news` (JACK's, or a jack sense's).
    private func reaction(since news: [(frameTime: UInt32, micros: UInt64)?]) -> PortReaction? {
        guard let now = engine.frameTime,
            let latest = news.compactMap({ $0 }).max(by: { $0.micros < $1.micros })
        else { return nil }
        return PortReaction(
            frames: Int(now &- latest.frameTime), periodFrames: engine.bufferSize,
            microseconds: Int(AudioEngine.jackMicros &- latest.micros))
    }

    func replaceCaptureTap(_ old: CaptureTap, inputGroup: String, channels: Int, zeroed: Bool, reference: String?)
        throws(AudioEngineError) -> CaptureTap
    {
        try engine.replaceCaptureTap(
            old, inputGroup: inputGroup, channels: Array(0..<max(channels, 1)), zeroed: zeroed,
            referenceOutputGroup: reference)
    }

    func addCaptureTap(inputGroup: String, channels: Int, zeroed: Bool, reference: String?)
        throws(AudioEngineError) -> CaptureTap
    {
        try engine.addCaptureTap(
            inputGroup: inputGroup, channels: Array(0..<max(channels, 1)), zeroed: zeroed,
            referenceOutputGroup: reference)
    }

    func latencySeconds(ofGroup group: String) -> Double? {
        engine.latencies().first { $0.group == group }?.seconds
    }

    func addCaptureTap(inputGroup: String, channels: Int, zeroed: Bool, frames: Int, reference: String?)
        throws(AudioEngineError) -> CaptureTap
    {
        try engine.addCaptureTap(
            inputGroup: inputGroup, channels: Array(0..<max(channels, 1)), bufferFrames: frames, zeroed: zeroed,
            referenceOutputGroup: reference)
    }

    func addBusTap(_ bus: Bus) throws(AudioEngineError) -> CaptureTap { try engine.addBusTap(bus) }
    func setZeroed(_ tap: CaptureTap, _ zeroed: Bool) { engine.setZeroed(tap, zeroed) }
    func removeCaptureTap(_ tap: CaptureTap) { engine.removeCaptureTap(tap) }

    func utcNanoseconds(forFrameTime frameTime: UInt32) -> AudioEngine.FrameWallTime? {
        engine.utcNanoseconds(forFrameTime: frameTime)
    }

    func setMonitoring(_ setup: MonitoringSetup) throws(AudioEngineError) { try engine.setMonitoring(setup) }
}

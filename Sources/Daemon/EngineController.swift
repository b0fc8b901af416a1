// The daemon's side of the audio engine: config ports ↔ JACK port groups, port availability
// (the one place recd keeps it: the store gets a copy through `updatePorts`, services ask
// here), hardware facts for sessions, media-services loss and return, and the faces each
// service sees of the engine (EngineFacades.swift).
// Control thread only (the engine's wake closure merely posts to the control loop).
import Archive
import AudioEngine
import ControlProtocol
import NetworkAudio
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
    /// The audio engine whose groups this maps; the composition root hands it to the services
    /// too (each sees its face of it, EngineFacades.swift).
    let audio: AudioEngine
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
    /// The same for the latest device to go away: JACK's port unregistration or client
    /// closing, or the drain that found the port gone before that news came (jackd
    /// disconnects a closing client's ports first, and the connection news makes the control
    /// thread read a port list the port has already left), or a jack sense saying unplugged.
    private var lastLoss: (frameTime: UInt32, micros: UInt64)?
    private(set) var lastError: String?
    private var nextAttempt = 0.0
    /// Connections restored after someone else removed them: when each was last logged.
    private var repairLog: [JackConnection: RepairLogEntry] = [:]

    /// The RTP streams PipeWire receives (which clients' ports `routes` shows as an RTP
    /// session's) and recd's own count of their packets; made by the composition root.
    let rtp: RTPStreamDirectory

    init(config: RecdConfig, audio: AudioEngine, rtp: RTPStreamDirectory) {
        self.config = config
        self.audio = audio
        self.rtp = rtp
    }

    /// With an engine of its own whose news calls `wake`, and no RTP monitor (tests).
    convenience init(config: RecdConfig, wake: @escaping @Sendable () -> Void) {
        self.init(config: config, audio: AudioEngine(wake: wake), rtp: RTPStreamDirectory(monitor: nil))
    }

    /// Reads again which JACK clients are RTP streams (on PipeWire only: `pw-dump` on `worker`);
    /// when ports came or went.
    func refreshAnnouncedRTPStreams(worker: SlowRequestWorker) {
        let onPipeWire = audio.isRunning && implementation.kind == .pipewire
        rtp.refresh(remote: serverName, onPipeWire: onPipeWire, worker: worker)
    }

    /// The network's facts about a configured input port's audio when it is an RTP stream
    /// PipeWire receives (looked up when asked: the monitor may find the stream later); nil on
    /// jackd2, or for a port that is no input.
    func networkReception(port name: String) -> (any NetworkReception)? {
        inputClients(port: name).flatMap { rtp.reception(clients: $0) }
    }

    /// What the RTP monitor knows now of the stream a configured input port's audio comes
    /// from (for the health's `packets-lost`); nil when the port's audio is no stream it follows.
    func networkStream(port name: String) -> RTPStreamFacts? {
        inputClients(port: name).flatMap { rtp.facts(ofAnyOf: $0) }
    }

    /// The JACK clients whose ports a configured input port names (on PipeWire only: where an
    /// RTP stream's node can be one of them).
    private func inputClients(port name: String) -> [String]? {
        guard implementation.kind == .pipewire, let port = config.port(named: name),
            port.direction != .output
        else { return nil }
        let jack = port.direction == .duplex ? port.jackIn : port.jack
        var clients: [String] = []
        for name in jack {
            let client = String(name.prefix { $0 != ":" })
            if !clients.contains(client) { clients.append(client) }
        }
        return clients
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

    /// Opens the JACK client. Never starts a server; false (with `lastError`) when none runs.
    func start() -> Bool {
        do {
            try audio.start(engineConfiguration)
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
        audio.stop()
        noteConnections()
    }

    /// One reconnection attempt, at most every 250 ms (SPEC §6: back within 2 s).
    func tryReconnect(now: Double) -> Bool {
        guard now >= nextAttempt else { return false }
        nextAttempt = now + 0.25
        audio.stop()
        return start()
    }

    /// Collects engine notifications.
    func drain() -> EngineNews {
        var news = EngineNews()
        for notification in audio.drainNotifications(repair: false) {
            switch notification {
            case .groupAvailabilityChanged: news.availabilityChanged = true
            case .serverLost(let reason): news.serverLost = reason
            case .xrun(let count): news.xruns += count
            case .bufferSize(let frames): news.bufferSize = frames
            case .sampleRate(let rate): news.sampleRate = rate
            case .portRegistered, .portUnregistered, .portConnectionChanged: break
            }
        }
        if news.availabilityChanged {
            // A port became available (or went away): from JACK's news of a registration (or
            // a loss) if there was one just before (within the 40 ms settling recheck and a
            // period or two), else from now (the port list showed it before JACK's
            // notification came).
            let change = noteConnections()
            if change.arrived { lastArrival = firstNews(heard: audio.lastPortArrival, previous: lastArrival) }
            if change.lost { lastLoss = firstNews(heard: audio.lastPortLoss, previous: lastLoss) }
        }
        return news
    }

    /// When recd first had news of a change the drain has just seen: JACK's notification
    /// `heard` if it is newer than `previous` and recent, else now.
    private func firstNews(
        heard: (frameTime: UInt32, micros: UInt64)?, previous: (frameTime: UInt32, micros: UInt64)?
    ) -> (frameTime: UInt32, micros: UInt64)? {
        let now = now()
        if let heard, let now, heard.micros > previous?.micros ?? 0, now.micros &- heard.micros < Self.newsWindowMicros {
            return heard
        }
        return now
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
        let restored = audio.repairConnections()
        for churn in audio.takeChurnNews() { Self.logChurn(churn) }
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
        audio.isRunning && Self.groups(port).allSatisfy { audio.isAvailable(group: $0) }
            && sensePlugged[port.name] != false
    }

    /// A jack-sense control changed: a port is available only while plugged (nil: no control).
    func setSensePlugged(port: String, _ plugged: Bool?) {
        if let plugged, sensePlugged[port] != plugged {
            if plugged { lastArrival = now() } else { lastLoss = now() }
        }
        sensePlugged[port] = plugged
        noteConnections()
    }

    /// How recent JACK's news of a registration (or a loss) must be to count as the news of
    /// a port that has just become available (or gone away).
    static let newsWindowMicros: UInt64 = 100_000

    /// JACK's frame time and microsecond clock now (nil when not running).
    private func now() -> (frameTime: UInt32, micros: UInt64)? {
        audio.frameTime.map { ($0, AudioEngine.jackMicros) }
    }

    /// Gives each port that became available since the last call the next connection order;
    /// returns whether one arrived and whether one went away.
    @discardableResult
    private func noteConnections() -> (arrived: Bool, lost: Bool) {
        var change = (arrived: false, lost: false)
        for port in config.ports {
            let available = isAvailable(port)
            if available && !seenAvailable.contains(port.name) {
                change.arrived = true
                connectionCounter += 1
                connectedOrder[port.name] = connectionCounter
            }
            if !available && seenAvailable.contains(port.name) { change.lost = true }
            if available { seenAvailable.insert(port.name) } else { seenAvailable.remove(port.name) }
        }
        return change
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
                port, isAvailable(port), groups.flatMap { audio.jackPortNames(ofGroup: $0) },
                connectedOrder[port.name] ?? 0,
                groups.flatMap { audio.origins(ofGroup: $0) }.map {
                    (jackPort: $0.jackPort, origin: rtp.origin($0.origin))
                }
            )
        }
    }

    /// The groups of the configured port `name` (for meters); empty for an unknown port.
    func groups(ofPort name: String) -> [String] { config.port(named: name).map(Self.groups) ?? [] }

    // MARK: Server facts

    /// The JACK implementation behind libjack (jackd2's or PipeWire's; docs/jack-servers.md).
    var implementation: JackImplementation { .loaded }
    /// The server recd reaches: `[jack] server` as that implementation reads it, with the environment.
    var serverName: String { implementation.serverName(configured: config.jack.server) }

    /// What JACK says of a session's route (SPEC §5): nil fields when not connected. The
    /// channel counts are those streams use: the preferred count, at most the port's.
    func actualHardware(route: Route, preferences: HardwarePreferences) -> ActualHardware {
        guard audio.isRunning, let rate = audio.sampleRate, let buffer = audio.bufferSize else {
            return ActualHardware()
        }
        let latencies = audio.latencies()
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
        guard let rate = audio.sampleRate else { return nil }
        do {
            let change = try audio.setBufferSize(nearest: Int((duration * Double(rate)).rounded()))
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

// MARK: - The configured ports, as services see them

extension EngineController: EnginePorts, SenseEngine {
    var anyOutputGroup: String? { config.ports.lazy.compactMap(Self.outputGroup).first }

    func output(port name: String) -> EngineOutput? {
        guard let port = config.port(named: name), let group = Self.outputGroup(port) else { return nil }
        return EngineOutput(group: group, channels: Self.outputChannels(port))
    }

    func inputGroup(port name: String) -> String? { config.port(named: name).flatMap(Self.inputGroup) }

    var inputPortNames: [String] { config.ports.filter(\.direction.canCapture).map(\.name) }

    func portLossReaction() -> PortReaction? { reaction(since: lastLoss) }

    func portArrivalReaction() -> PortReaction? { reaction(since: lastArrival) }

    /// Frames and microseconds since `latest` (JACK's news, a drain's, or a jack sense's).
    private func reaction(since latest: (frameTime: UInt32, micros: UInt64)?) -> PortReaction? {
        guard let now = audio.frameTime, let latest else { return nil }
        return PortReaction(
            frames: Int(now &- latest.frameTime), periodFrames: audio.bufferSize,
            microseconds: Int(AudioEngine.jackMicros &- latest.micros))
    }
}

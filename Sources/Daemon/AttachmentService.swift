// Applications' own JACK clients under sessions (`session.attach`): recd connects their ports
// to its own and plays and feeds them under the session's policy, like its own players.
// Control thread only.
import AudioEngine
import ControlProtocol
import Platform
import SessionPolicy
import SystemSupport

/// Owns the attachments: which app's JACK client is under which session, for which control
/// connection, and what the policy lets it do now.
///
/// The play side is a player voice (the engine's `PlayerHandle`, fed each period by the app's
/// ports instead of a file), so the rules are the players': silent until the session is
/// active; an interruption pauses it (ramped, inside one period); ducking ramps its gain;
/// the loss of its output pauses it within a period (privacy) until the session is activated
/// again or a new device is plugged in; a new route moves it, crossfaded. The capture side
/// carries the session's input route, zeros unless the session is active, its input is not
/// muted and it has record permission. The router tells the service what the policy says
/// (`sync`, after every batch of effects); the service never sees the store.
final class AttachmentService {
    /// One attached client.
    final class Attachment {
        let app: String
        let handle: AttachmentHandle
        /// The control connection that made it: the attachment ends when it closes.
        let owner: ClientID
        /// The configured output port its voice plays to (nil: none yet).
        var port: String?
        /// Its output went away: silent until the session is activated again or a new device
        /// arrives.
        var privacyPaused = false
        /// Whether `port` was available at the last sync: privacy pauses on the change to
        /// unavailable (an event), not on every sync that finds it gone, which would undo
        /// `allowAgain` before the attachment could move to the session's new output.
        var portWasAvailable = false
        var playing = false
        var gainDB = 0.0
        /// Its capture's processing while the session's capture is processed and active (nil: raw),
        /// and what it was made for.
        var voice: AttachmentVoice?
        var voiceSetup: VoiceKey?

        init(app: String, handle: AttachmentHandle, owner: ClientID) {
            self.app = app
            self.handle = handle
            self.owner = owner
        }

        var client: String { handle.clientName }

        var info: AttachmentInfo {
            AttachmentInfo(
                app: app, client: handle.clientName, playPorts: handle.playPorts, capturePorts: handle.capturePorts,
                recdPlayPorts: handle.recdPlayPorts, recdCapturePorts: handle.recdCapturePorts,
                processing: voice?.processing.rawValue, processingLatency: voice?.latencySeconds,
                underruns: voice?.underruns)
        }
    }

    /// What an attachment's processed capture is made for: a change of any makes it anew.
    struct VoiceKey: Equatable {
        var processing: CaptureProcessing
        var inputGroup: String
        var outputGroup: String
    }

    /// What the policy says about a session, as the service needs it.
    struct SessionView {
        var isActive: Bool
        /// The route's outputs, first is where the audio goes.
        var outputs: [String]
        var input: String?
        /// 0 when not ducked.
        var duckDB: Double
        var capturesSilenced: Bool
        /// The category can play / record (a category change can take either away).
        var canPlay = true
        var canRecord = true
        /// What the session's mode does to its capture (`Session.captureProcessing`): anything
        /// but `.none` gives its attachments' capture ports the input echo-cancelled against the
        /// first output.
        var processing: CaptureProcessing = .none
    }

    private let engine: any AttachmentEngine
    private let ports: any EnginePorts
    private let sink: any ServiceSink
    /// The attachments. One that comes or goes may change who is heard: a fact for the policy.
    private(set) var attachments: [Attachment] = [] {
        didSet { sink.report(.streams) }
    }

    /// `[voice]`: how processed captures treat the echo.
    private let voice: VoiceSection

    init(
        engine: any AttachmentEngine, ports: any EnginePorts, sink: any ServiceSink,
        voice: VoiceSection = VoiceSection()
    ) {
        self.voice = voice
        self.engine = engine
        self.ports = ports
        self.sink = sink
    }

    var infos: [AttachmentInfo] { attachments.map(\.info) }
    var apps: Set<String> { Set(attachments.map(\.app)) }
    /// Apps with an attachment that is heard now.
    var playingApps: Set<String> { Set(attachments.filter(\.playing).map(\.app)) }

    /// The delay `app`'s processed attachments add to their capture (the longest; nil when none
    /// is processed or its processor is not made yet): part of the session's `inputLatency`.
    func processingLatency(of app: String) -> Double? {
        attachments.filter { $0.app == app }.compactMap { $0.voice?.latencySeconds }.max()
    }

    // MARK: Ownership

    /// Who may attach JACK client `client`: the uid of its process must be the caller's, or the
    /// caller an administrator. The uid is that of /proc/PID when JACK reports the client's
    /// pid (PipeWire's JACK does); jackd2's libjack reports none, but a jackd2 server only
    /// admits clients of its own user (its socket is not writable by others; promiscuous
    /// servers aside), which is the user recd runs as, so recd's own uid stands in. nil: no
    /// proof either way (the caller must be an administrator).
    func clientUID(_ client: String) -> UInt32? {
        if let pid = engine.processID(ofClient: client) {
            return FileSystem.status(of: "/proc/\(pid)")?.ownerID
        }
        return CurrentProcess.userID
    }

    // MARK: Requests

    /// An attach whose ports the engine's connection thread is registering: answered when
    /// they are (`finishAttaches`), so the control thread never waits for the JACK server.
    private struct Pending {
        let ticket: AttachmentTicket
        let request: AttachRequest
        let owner: ClientID
        let port: String?
        let reply: LaterReply
        /// Its control connection closed or its session was deleted meanwhile: undone at once.
        var cancelled: AttachmentEndReason?
    }

    private var pending: [Pending] = []

    /// `session.attach`, once the caller may change the session and owns the client: checks
    /// here, the JACK ports registered by the engine's connection thread, `reply` when done
    /// (`finishAttaches`).
    func attach(
        _ request: AttachRequest, category: SessionPolicy.Category, owner: ClientID, session: SessionView,
        reply: @escaping LaterReply
    ) throws(SessionError) {
        guard engine.isRunning else {
            throw SessionError(.mediaServicesFailed, "JACK is not running; attach again when media services are reset")
        }
        if !request.playPorts.isEmpty && !category.hasOutput {
            throw SessionError(
                .incompatibleCategory,
                "category \(category.rawValue) cannot play: playPorts need playback, playAndRecord or multiRoute")
        }
        if !request.capturePorts.isEmpty && !category.hasInput {
            throw SessionError(
                .incompatibleCategory,
                "category \(category.rawValue) cannot record: capturePorts need record, playAndRecord or multiRoute")
        }
        if attachments.contains(where: { $0.client == request.client })
            || pending.contains(where: { $0.request.client == request.client && $0.cancelled == nil })
        {
            throw SessionError(
                .badParam,
                "JACK client \(request.client) is already attached; detach it first (session.detach)")
        }
        let port = session.outputs.first
        let group = port.flatMap { ports.output(port: $0)?.group } ?? ports.anyOutputGroup
        if !request.playPorts.isEmpty && group == nil {
            throw SessionError(.resourceNotAvailable, "recd has no output port configured; add a [port] to its config")
        }
        do {
            let ticket = try engine.beginAttach(
                client: request.client, playPorts: request.playPorts, capturePorts: request.capturePorts,
                outputGroup: group, routes: nil, gainDecibels: 0)
            pending.append(Pending(ticket: ticket, request: request, owner: owner, port: port, reply: reply))
        } catch {
            throw Self.attachError(error, client: request.client)
        }
    }

    private static func attachError(_ error: AudioEngineError, client: String) -> SessionError {
        switch error {
        case .invalidArgument(let message): SessionError(.badParam, message)
        default: SessionError(.resourceNotAvailable, "recd could not attach \(client): \(error)")
        }
    }

    /// The engine registered (or failed to register) the ports of attaches under way: each
    /// becomes an attachment in line with its session's `view` (nil: the session is gone) and
    /// is answered. One whose connection closed or session went meanwhile is undone.
    func finishAttaches(view: (String) -> SessionView?) {
        guard !pending.isEmpty else { return }
        for (ticket, result) in engine.finishedAttachments() {
            guard let index = pending.firstIndex(where: { $0.ticket == ticket }) else { continue }
            let done = pending.remove(at: index)
            let request = done.request
            let handle: AttachmentHandle
            switch result {
            case .failure(let error):
                done.reply(.failure(Self.attachError(error, client: request.client)))
                continue
            case .success(let made): handle = made
            }
            guard done.cancelled == nil, let session = view(request.app) else {
                engine.detach(handle)
                let reason = done.cancelled ?? .sessionDeleted
                Log.info("\(request.app): JACK client \(request.client) not attached (\(reason.rawValue) meanwhile)")
                let error =
                    reason == .detached
                    ? SessionError(
                        .badParam, "\(request.client) was detached (session.detach) before its attach finished")
                    : SessionError(
                        .expiredSession,
                        "session \(request.app) ended while \(request.client) was being attached "
                            + "(\(reason.rawValue)); set it up and attach again")
                done.reply(.failure(error))
                continue
            }
            let attachment = Attachment(app: request.app, handle: handle, owner: done.owner)
            attachment.port = done.port
            attachment.portWasAvailable = done.port.map(ports.isAvailable) ?? false
            attachments.append(attachment)
            Log.info(
                "\(request.app): JACK client \(request.client) attached (play \(request.playPorts), capture "
                    + "\(request.capturePorts))")
            sync(attachment, session)
            done.reply(.success([("attachment", attachment.info.json)]))
        }
    }

    /// `session.detach`.
    func detach(app: String, client: String) throws(SessionError) {
        // One still being attached is undone once its ports are registered, its attach
        // answered that it was detached meanwhile.
        if let index = pending.firstIndex(where: { $0.request.app == app && $0.request.client == client }) {
            pending[index].cancelled = .detached
            return
        }
        guard let attachment = attachments.first(where: { $0.app == app && $0.client == client }) else {
            throw SessionError(.badParam, "JACK client \(client) is not attached to \(app); see `recctl status`")
        }
        end(attachment, reason: .detached)
    }

    private func end(_ attachment: Attachment, reason: AttachmentEndReason) {
        engine.detach(attachment.handle)
        attachment.voice?.stop()
        attachment.voice = nil
        attachments.removeAll { $0 === attachment }
        Log.info("\(attachment.app): JACK client \(attachment.client) detached (\(reason.rawValue))")
        sink.broadcast(.attachmentDetached(app: attachment.app, client: attachment.client, reason: reason))
    }

    /// Whether `client` made an attachment that lasts, or one under way.
    func holds(_ client: ClientID) -> Bool {
        attachments.contains { $0.owner == client } || pending.contains { $0.owner == client && $0.cancelled == nil }
    }

    /// The control connection that made them closed.
    func clientGone(_ client: ClientID) {
        for attachment in attachments where attachment.owner == client { end(attachment, reason: .connectionClosed) }
        for index in pending.indices where pending[index].owner == client { pending[index].cancelled = .connectionClosed }
    }

    /// The session was deleted.
    func sessionGone(_ app: String) {
        for attachment in attachments where attachment.app == app { end(attachment, reason: .sessionDeleted) }
        for index in pending.indices where pending[index].request.app == app {
            pending[index].cancelled = .sessionDeleted
        }
    }

    /// The JACK server went away: every attachment ends (the app attaches again after
    /// mediaServicesWereReset), and attaches under way fail.
    func endAll(reason: AttachmentEndReason) {
        for attachment in attachments { end(attachment, reason: reason) }
        for done in pending {
            done.reply(
                .failure(
                    SessionError(
                        .mediaServicesFailed,
                        "JACK went away while \(done.request.client) was being attached; attach again when media "
                            + "services are reset")))
        }
        pending = []
    }

    /// The engine had news: attachments whose app ports are gone end; connections that would
    /// bypass recd are removed (and logged).
    func engineWoke() {
        guard !attachments.isEmpty else { return }
        let missing = engine.attachmentsWithMissingPorts()
        for attachment in attachments where missing.contains(where: { $0 === attachment.handle }) {
            end(attachment, reason: .clientGone)
        }
        for connection in engine.enforceAttachments() {
            Log.notice(
                "JACK connection \(connection) would bypass recd's session policy for an attached client; removed. "
                    + "An attached application's audio goes only through recd (session.detach to free it)")
        }
    }

    // MARK: Policy

    /// The session was activated, or a new device arrived: what privacy paused may play.
    func allowAgain(of app: String) {
        for attachment in attachments where attachment.app == app { attachment.privacyPaused = false }
    }

    /// Brings the attachments of `app` in line with the policy (after every batch of effects).
    func sync(app: String, _ session: SessionView) {
        for attachment in attachments where attachment.app == app { sync(attachment, session) }
    }

    /// The fade of an interruption or deactivation: the default ramp, at most one period.
    private var silenceRampMilliseconds: Double {
        guard let frames = engine.bufferSize, let rate = engine.sampleRate, rate > 0 else {
            return AudioEngine.defaultRampMilliseconds
        }
        return min(AudioEngine.defaultRampMilliseconds, Double(frames) * 1000 / Double(rate))
    }

    private func sync(_ attachment: Attachment, _ session: SessionView) {
        let handle = attachment.handle
        let portAvailable = attachment.port.map(ports.isAvailable) ?? false
        if attachment.portWasAvailable && !portAvailable {
            // Its device went away: privacy, never a fall back to another output.
            attachment.privacyPaused = true
        }
        attachment.portWasAvailable = portAvailable
        if let player = handle.player {
            if !attachment.privacyPaused, let output = session.outputs.first, output != attachment.port,
                ports.isAvailable(port: output), let target = ports.output(port: output)
            {
                let routes = PlayerRoute.defaultRoutes(playerChannels: player.channels, groupChannels: target.channels)
                do {
                    try engine.movePlayer(
                        player, toOutputGroup: target.group, routes: routes,
                        rampMilliseconds: AudioEngine.defaultRampMilliseconds, moved: nil)
                    Log.info(
                        "\(attachment.app): \(attachment.client) moves from \(attachment.port ?? "none") to \(output)")
                    attachment.port = output
                    attachment.portWasAvailable = true
                } catch {
                    Log.warning(
                        "\(attachment.app): \(attachment.client) stays on \(attachment.port ?? "none"): \(error)")
                }
            }
            let audible =
                session.isActive && session.canPlay && !attachment.privacyPaused
                && attachment.port.map(ports.isAvailable) == true
            if audible != attachment.playing {
                if audible {
                    engine.play(player, rampMilliseconds: AudioEngine.defaultRampMilliseconds)
                } else {
                    // Privacy: a 1 ms fade; an interruption or deactivation: the usual ramp, cut
                    // to one period when periods are shorter: silent within one period.
                    engine.pause(player, rampMilliseconds: attachment.privacyPaused ? 1 : silenceRampMilliseconds)
                }
                attachment.playing = audible
                // Heard or not: isOtherAudioPlaying and the secondary-audio hint follow.
                sink.report(.streams)
            }
            if session.duckDB != attachment.gainDB {
                engine.setGain(player, decibels: session.duckDB, rampMilliseconds: AudioEngine.defaultRampMilliseconds)
                attachment.gainDB = session.duckDB
            }
        }
        if !handle.capturePorts.isEmpty {
            let input = session.input.flatMap(ports.inputGroup)
            let open =
                session.isActive && session.canRecord && !session.capturesSilenced
                && session.input.map(ports.isAvailable) == true
            engine.setCapture(handle, inputGroup: input, open: open)
            syncProcessing(attachment, session, inputGroup: input)
        }
    }

    /// The capture ports carry the input processed while the session is active and its capture
    /// processed (voiceChat, videoChat, prefersEchoCancelledInput, on a route with an output),
    /// raw otherwise; a change of processing, input or output makes the processing anew. The
    /// switch is one snapshot: the app gets the raw input up to a period and the processed one
    /// from the next, at its fixed delay (its first `latencySeconds` are silence).
    private func syncProcessing(_ attachment: Attachment, _ session: SessionView, inputGroup: String?) {
        let handle = attachment.handle
        var wanted: VoiceKey?
        if session.isActive && session.canRecord && session.processing != .none, let inputGroup,
            let output = session.outputs.first.flatMap(ports.output(port:))
        {
            wanted = VoiceKey(processing: session.processing, inputGroup: inputGroup, outputGroup: output.group)
        }
        let period = engine.bufferSize
        if wanted == attachment.voiceSetup {
            if let period { attachment.voice?.setPeriod(frames: period) }
            return
        }
        attachment.voice?.stop()
        attachment.voice = nil
        attachment.voiceSetup = wanted
        guard let wanted, let period, let rate = engine.sampleRate else {
            engine.unprocessCapture(handle)
            if wanted == nil {
                Log.info("\(attachment.app): \(attachment.client)'s capture carries the input unprocessed")
            }
            return
        }
        do {
            let processed = try engine.processCapture(
                handle, inputGroup: wanted.inputGroup, referenceOutputGroup: wanted.outputGroup, slackFrames: period)
            attachment.voice = AttachmentVoice(
                processed: processed, processing: wanted.processing, echoSuppression: voice.echoSuppression,
                sampleRate: rate, periodFrames: period,
                echoPathDelayMilliseconds: VoiceSetup.echoPathDelayMilliseconds(
                    outputSeconds: engine.latencySeconds(ofGroup: wanted.outputGroup),
                    inputSeconds: engine.latencySeconds(ofGroup: wanted.inputGroup)))
            Log.info(
                "\(attachment.app): \(attachment.client)'s capture is processed (\(wanted.processing.rawValue)) "
                    + "against \(wanted.outputGroup), \(period) frames of slack")
        } catch {
            engine.unprocessCapture(handle)
            Log.warning("\(attachment.app): \(attachment.client)'s capture stays unprocessed: \(error)")
        }
    }
}

// AVAudioSession for Linux applications: an application's audio session in recd, driven over
// recd's control protocol (docs/audiosession.md). A protocol client beside recctl (both talk
// through ControlClient's Connection) and libaudiosession, the C library with the same rules.
//
// Threads: every method may be called from any thread; calls are serialized on one request
// connection. Notifications are delivered on the session's own thread ("audiosession"), in
// the order recd sent them; a callback may call the session's methods. That thread also
// reconnects when recd goes away (restart, crash) and, once recd is back, applies the
// configuration again (category, microphone usage, preferred input, output override,
// attachments, activation), then delivers mediaServicesWereReset.
import ControlClient
import ControlProtocol
import Dispatch
import Foundation
import Platform
import SessionPolicy
import Synchronization

/// The errors of every call: an AVAudioSession code (SPEC §2) and a message saying what to do.
public typealias AudioSessionError = SessionError

/// An application's audio session in recd. Create one per application id; it connects at once
/// (and again whenever recd comes back) and closes when released or `close()`d.
public final class AudioSession: Sendable {
    public typealias Category = SessionPolicy.Category
    public typealias Mode = SessionPolicy.Mode
    public typealias CategoryOption = SessionPolicy.CategoryOption
    public typealias RouteSharingPolicy = SessionPolicy.RouteSharingPolicy
    public typealias RecordPermission = SessionPolicy.RecordPermission
    public typealias PortDescription = PortDescriptionInfo
    public typealias RouteDescription = RouteDescriptionInfo

    /// AVAudioSession.SetActiveOptions.
    public struct SetActiveOptions: OptionSet, Sendable, Hashable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Sessions this one interrupted get `ended` with shouldResume (upstream value 1).
        public static let notifyOthersOnDeactivation = SetActiveOptions(rawValue: 1)
    }

    /// AVAudioSession.PortOverride.
    public enum PortOverride: Sendable {
        case none, speaker
    }

    /// An application's JACK client put under this session (`session.attach`): its ports and
    /// recd's ports they are connected to.
    public typealias Attachment = AttachmentInfo

    /// The application id: the session's name in recd.
    public let app: String
    private let core: SessionCore

    /// Opens `app`'s session. `socketPath` nil: RECD_SOCKET, else recd's default socket (as
    /// recctl looks). `microphoneUsageDescription` is what Info.plist's
    /// NSMicrophoneUsageDescription is on Apple's systems: input categories need one to activate.
    /// Waits up to a second for recd so that no notification after `init` is missed; recd need
    /// not be running (calls then fail with mediaServicesFailed until it comes).
    public init(app: String, socketPath: String? = nil, microphoneUsageDescription: String? = nil) {
        self.app = app
        core = SessionCore(
            app: app,
            candidates: ControlSocket.candidates(socketPath, environment: ProcessInfo.processInfo.environment),
            micUsage: microphoneUsageDescription)
        core.start()
    }

    deinit { core.close() }

    /// Ends the session's connections (attachments end with them) and its thread. Idempotent.
    public func close() { core.close() }

    // MARK: Configuration

    /// `session.set`: the whole configuration (options are not sticky). A rejected call
    /// changes nothing (badParam naming what is wrong).
    public func setCategory(
        _ category: Category, mode: Mode = .default, options: Set<CategoryOption> = [],
        policy: RouteSharingPolicy = .default
    ) throws(AudioSessionError) {
        let settings = SessionSettings(
            app: app, category: category, mode: mode, options: options, policy: policy,
            micUsage: core.micUsage == nil ? .none : .some(core.micUsage))
        _ = try core.call(.sessionSet(settings))
        core.remember { $0.settings = settings }
    }

    /// `session.activate` / `session.deactivate`. Activating a non-mixable session interrupts
    /// the other non-mixable ones; deactivating with notifyOthersOnDeactivation lets them resume.
    public func setActive(_ active: Bool, options: SetActiveOptions = []) throws(AudioSessionError) {
        if active {
            // Held by this process: recd deactivates it when the process ends (crash, SIGKILL).
            _ = try core.call(.sessionActivate(app: app, hold: true))
        } else {
            _ = try core.call(
                .sessionDeactivate(app: app, notifyOthers: options.contains(.notifyOthersOnDeactivation), force: false))
        }
        core.remember { $0.active = active }
    }

    /// The input to use when it is available (`session.prefer`); nil clears the preference.
    public func setPreferredInput(_ input: PortDescription?) throws(AudioSessionError) {
        try setPreferredInput(named: input?.name)
    }

    /// The input port named in recd's config to use when available; nil clears the preference.
    public func setPreferredInput(named name: String?) throws(AudioSessionError) {
        _ = try core.call(.sessionPrefer(PreferenceChange(app: app, input: name ?? "none")))
        core.remember { $0.preferredInput = name }
    }

    /// AVAudioSession's `setPrefersNoInterruptionsFromSystemAlerts(_:)` (iOS 14.5): true, and
    /// the activation of a system-alert-class session (a non-mixable playback session in mode
    /// voicePrompt, priority normal) no longer interrupts this one; higher-priority ones still
    /// do (docs/protocol.md). Sent with `session.prefer`; kept by recd across its restarts.
    public func setPrefersNoInterruptionsFromSystemAlerts(_ prefers: Bool) throws(AudioSessionError) {
        _ = try core.call(.sessionPrefer(PreferenceChange(app: app, prefersNoInterruptionsFromSystemAlerts: prefers)))
        core.remember { $0.prefersNoInterruptionsFromSystemAlerts = prefers }
    }

    /// Whether system-alert-class sessions leave this one running (`session.show`).
    public var prefersNoInterruptionsFromSystemAlerts: Bool {
        get throws(AudioSessionError) { try sessionInfo().prefersNoInterruptionsFromSystemAlerts }
    }

    /// AVAudioSession's `setPrefersEchoCancelledInput(_:)` (iOS 18.2): true, and the session's
    /// recordings are echo-cancelled against its own output without voiceChat's other
    /// processing, while `isEchoCancelledInputAvailable`. playAndRecord only (incompatibleCategory
    /// otherwise). Sent with `session.prefer`; kept by recd across its restarts.
    public func setPrefersEchoCancelledInput(_ prefers: Bool) throws(AudioSessionError) {
        _ = try core.call(.sessionPrefer(PreferenceChange(app: app, prefersEchoCancelledInput: prefers)))
        core.remember { $0.prefersEchoCancelledInput = prefers }
    }

    /// Whether the session prefers echo-cancelled input (`session.show`).
    public var prefersEchoCancelledInput: Bool {
        get throws(AudioSessionError) { try sessionInfo().prefersEchoCancelledInput }
    }

    /// AVAudioSession's `isEchoCancelledInputAvailable`: playAndRecord, not in mode measurement,
    /// on a route with both an input and an output (`session.show`).
    public var isEchoCancelledInputAvailable: Bool {
        get throws(AudioSessionError) { try sessionInfo().isEchoCancelledInputAvailable }
    }

    /// `session.override`: speaker (playAndRecord only; lasts until the next route change) or none.
    public func overrideOutputAudioPort(_ port: PortOverride) throws(AudioSessionError) {
        _ = try core.call(.sessionOverride(app: app, speaker: port == .speaker))
        core.remember { $0.speakerOverride = port == .speaker }
    }

    // MARK: State

    /// The session as recd reports it (`session.show`); expiredSession before the first setCategory.
    public func sessionInfo() throws(AudioSessionError) -> SessionInfo {
        let reply = try core.call(.sessionShow(app: app))
        do {
            return try SessionInfo(reply: reply, key: "session")
        } catch {
            throw AudioSessionError(
                .unspecified,
                "recd sent a session this library cannot read: \(error.message); use a library as new as recd")
        }
    }

    /// The route's ports with their types and channels.
    public var currentRoute: RouteDescription { get throws(AudioSessionError) { try sessionInfo().routeDescription } }

    /// The inputs the session may use now (its category and options allowing).
    public var availableInputs: [PortDescription] {
        get throws(AudioSessionError) { try sessionInfo().availableInputs }
    }

    /// Another application's audio plays.
    public var isOtherAudioPlaying: Bool { get throws(AudioSessionError) { try sessionInfo().isOtherAudioPlaying } }

    /// Another application's primary (non-mixable) audio plays: secondary audio should be silenced.
    public var secondaryAudioShouldBeSilencedHint: Bool {
        get throws(AudioSessionError) { try sessionInfo().secondaryAudioShouldBeSilencedHint }
    }

    /// The app's record permission (`permission.list`; undetermined until someone decides).
    public var recordPermission: RecordPermission {
        get throws(AudioSessionError) {
            let reply = try core.call(.permissionList)
            let row = reply["permissions"]?.arrayValue?.first { $0["app"]?.stringValue == app }
            return row?["state"]?.stringValue.flatMap(RecordPermission.init(rawValue:)) ?? .undetermined
        }
    }

    // MARK: Record permission

    /// Asks for record permission: answers at once when decided, else when an administrator
    /// decides (`recctl permission grant|deny APP`). True when granted.
    public func requestRecordPermission() async -> Bool {
        await withCheckedContinuation { continuation in
            requestRecordPermission { granted in continuation.resume(returning: granted) }
        }
    }

    /// The same with a completion, called once on a thread of the library's (false when recd
    /// could not be asked: `error` says why).
    public func requestRecordPermission(_ completion: @escaping @Sendable (Bool) -> Void) {
        core.requestPermission { result in
            if case .success(let state) = result { completion(state == .granted) } else { completion(false) }
        }
    }

    /// Blocking form for callers without concurrency (the C library): the decision, or the error.
    public func requestRecordPermissionAndWait() throws(AudioSessionError) -> RecordPermission {
        let box = Mutex<Result<RecordPermission, AudioSessionError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        core.requestPermission { result in
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try box.withLock { $0! }.get()
    }

    // MARK: Attaching a JACK client

    /// `session.attach`: the application's own JACK client `jackClient` puts its audio under
    /// this session. `playPorts` (the client's output ports) reach the session's output route
    /// only through recd, under the policy; `capturePorts` (its input ports) get the session's
    /// input route (zeros until record permission is granted). Activation is not implied.
    @discardableResult
    public func attach(jackClient: String, playPorts: [String] = [], capturePorts: [String] = [])
        throws(AudioSessionError) -> Attachment
    {
        let attachment = try core.attach(jackClient: jackClient, playPorts: playPorts, capturePorts: capturePorts)
        core.remember { state in
            state.attachments.removeAll { $0.client == jackClient }
            state.attachments.append(
                AttachRequest(app: app, client: jackClient, playPorts: playPorts, capturePorts: capturePorts))
        }
        return attachment
    }

    /// `session.detach`: recd disconnects and unregisters what it made for the client.
    public func detach(jackClient: String) throws(AudioSessionError) {
        _ = try core.call(.sessionDetach(app: app, client: jackClient))
        core.remember { $0.attachments.removeAll { $0.client == jackClient } }
    }

    // MARK: Notifications

    /// Calls `handler` for each notification, on the session's thread, until removed.
    @discardableResult
    public func addObserver(_ handler: @escaping @Sendable (AudioSessionNotification) -> Void) -> ObserverToken {
        core.addObserver(handler)
    }

    public func removeObserver(_ token: ObserverToken) { core.removeObserver(token) }

    /// The notifications from now on, as an async sequence (each access is a new stream).
    public var notifications: AsyncStream<AudioSessionNotification> {
        let (stream, continuation) = AsyncStream<AudioSessionNotification>.makeStream()
        let token = core.addObserver { continuation.yield($0) }
        let core = self.core
        continuation.onTermination = { _ in core.removeObserver(token) }
        return stream
    }
}

/// What the application asked for, re-applied when recd comes back.
struct AppliedConfiguration: Sendable {
    var settings: SessionSettings?
    var preferredInput: String?
    var speakerOverride = false
    var prefersNoInterruptionsFromSystemAlerts: Bool?
    var prefersEchoCancelledInput: Bool?
    var attachments: [AttachRequest] = []
    var active = false
}

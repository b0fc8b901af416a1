// What an application hears from its session: AVAudioSession's notifications as one enum,
// decoded from recd's events (docs/protocol.md, "Events").
import ControlProtocol
import SessionPolicy

/// AVAudioSession.InterruptionOptions: what to do when an interruption ends.
public struct InterruptionOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// The interruption is over and the app may resume (upstream value 1).
    public static let shouldResume = InterruptionOptions(rawValue: 1)
}

/// AVAudioSession.SilenceSecondaryAudioHintType (upstream: begin = 1, end = 0).
public enum SilenceSecondaryAudioHintType: UInt, Sendable {
    case end = 0
    case begin = 1
}

/// One notification of an application's session.
public enum AudioSessionNotification: Sendable, Equatable, CustomStringConvertible {
    /// Another session took the audio (began) or gave it back (ended).
    case interruption(type: InterruptionType, options: InterruptionOptions, reason: InterruptionReason)
    /// The session's route changed; `previousRoute` is the route before.
    case routeChange(reason: RouteChangeReason, previousRoute: RouteDescriptionInfo)
    /// recd or its JACK server went away: calls fail with mediaServicesFailed until the reset.
    case mediaServicesWereLost
    /// recd (and JACK) are back and the session's configuration was applied again.
    case mediaServicesWereReset
    /// Another session's primary (non-mixable) audio started (begin) or stopped (end) playing.
    case silenceSecondaryAudioHint(SilenceSecondaryAudioHintType)
    /// The app's input mute changed.
    case inputMuteStateChange(muted: Bool)

    /// One line, as the example applications print it (tests read these lines):
    /// `interruption began reason=default options=shouldResume`,
    /// `routeChange reason=oldDeviceUnavailable previous=phones`, `mediaServicesWereLost`, ...
    public var description: String {
        switch self {
        case .interruption(let type, let options, let reason):
            "interruption \(type.name) reason=\(reason.name) options=\(options.contains(.shouldResume) ? "shouldResume" : "none")"
        case .routeChange(let reason, let previous):
            "routeChange reason=\(reason.name) previous=\(previous.outputs.map(\.name).joined(separator: ","))"
        case .mediaServicesWereLost: "mediaServicesWereLost"
        case .mediaServicesWereReset: "mediaServicesWereReset"
        case .silenceSecondaryAudioHint(let type): "silenceSecondaryAudioHint type=\(type == .begin ? "begin" : "end")"
        case .inputMuteStateChange(let muted): "inputMuteStateChange muted=\(muted)"
        }
    }

    /// The notification an event of recd's carries, or nil for events apps do not get
    /// (player, recording, ducked, session, permission, ...).
    init?(event: Event) {
        switch event {
        case .interruption(_, let type, let reason, let shouldResume, _):
            self = .interruption(type: type, options: shouldResume ? .shouldResume : [], reason: reason)
        case .routeChange(let change):
            self = .routeChange(reason: change.reason, previousRoute: change.previousRouteDescription)
        case .mediaServicesWereLost: self = .mediaServicesWereLost
        case .mediaServicesWereReset: self = .mediaServicesWereReset
        case .silenceSecondaryAudioHint(_, let begin): self = .silenceSecondaryAudioHint(begin ? .begin : .end)
        case .inputMuteStateChange(_, let muted): self = .inputMuteStateChange(muted: muted)
        case .ducked, .unducked, .permission, .session, .sessionDeleted, .player, .recording, .silence,
            .attachmentDetached, .health, .unknown:
            return nil
        }
    }
}

/// Returned by `AudioSession.addObserver`; pass it to `removeObserver`.
public struct ObserverToken: Hashable, Sendable {
    let id: Int
}

// What one user may make the daemon hold: sessions, bytes of client-given text, players. The
// daemon asks before it creates; administrators go past the shared limits, never the
// per-session ones.

extension SessionStore {
    /// Who asks to create or grow a session. Whether they are an administrator (root, or a
    /// member of the configured admin group) is the daemon's to tell: the store sees no groups.
    public struct Requester: Equatable, Sendable {
        public var uid: UInt32
        public var isAdministrator: Bool

        public init(uid: UInt32, isAdministrator: Bool) {
            self.uid = uid
            self.isAdministrator = isAdministrator
        }
    }

    /// The most sessions non-administrators may make together; administrators may go past it,
    /// so that no user's flood ever locks root out.
    public static let maxSessions = 1024
    /// The most sessions one user (not an administrator) may own: 16 users fill `maxSessions`.
    public static let maxSessionsPerUser = 64
    /// The longest microphone usage description, in UTF-8 bytes (AVAudioSession's is a
    /// sentence in Info.plist).
    public static let maxMicUsageBytes = 1024
    /// The most bytes of client-given text (app names and microphone usage descriptions) the
    /// sessions of one user (not an administrator) may hold: what that user's part of
    /// state.json, `status` and `session.list` grows with.
    public static let maxStateBytesPerUser = 32 * 1024

    /// Bytes of client-given text a session holds.
    public static func stateBytes(app: String, micUsage: String?) -> Int {
        app.utf8.count + (micUsage?.utf8.count ?? 0)
    }

    /// Bytes of client-given text the sessions owned by `uid` hold.
    public func stateBytes(ownedBy uid: UInt32) -> Int {
        sessions.values.reduce(0) {
            $0 + ($1.ownerUID == uid ? Self.stateBytes(app: $1.app, micUsage: $1.micUsage) : 0)
        }
    }

    /// Sessions owned by `uid`.
    public func sessionCount(ownedBy uid: UInt32) -> Int {
        sessions.values.reduce(0) { $0 + ($1.ownerUID == uid ? 1 : 0) }
    }

    /// Checks, before `configure`, that `requester` may create `app` (or change it) with the
    /// microphone usage description `micUsage` (`.none`: unchanged; `.some(nil)`: cleared), in
    /// this order: the description's length (everyone: badParam); then, for anyone but an
    /// administrator, the sessions one user may own, all sessions together, and the bytes one
    /// user's sessions hold (resourceNotAvailable). An existing session stays within them
    /// whatever it had: reconfiguring it never needs room it already has.
    public func checkRoom(for app: String, micUsage: String?? = .none, by requester: Requester) throws(SessionError) {
        if case .some(.some(let text)) = micUsage, text.utf8.count > Self.maxMicUsageBytes {
            throw SessionError(
                .badParam,
                "the microphone usage description is \(text.utf8.count) bytes; write one of at most "
                    + "\(Self.maxMicUsageBytes) bytes (a sentence saying why the app records)")
        }
        if requester.isAdministrator { return }
        let existing = sessions[app]
        let owner = existing?.ownerUID ?? requester.uid
        let deleteHint = "delete unused ones with `recctl session delete APP`, or ask an administrator"
        if existing == nil {
            let owned = sessionCount(ownedBy: owner)
            if owned >= Self.maxSessionsPerUser {
                throw SessionError(
                    .resourceNotAvailable,
                    "uid \(owner) owns \(owned) sessions, the most one user may; \(deleteHint)")
            }
            if sessions.count >= Self.maxSessions {
                throw SessionError(
                    .resourceNotAvailable, "too many sessions (\(Self.maxSessions)); \(deleteHint)")
            }
        }
        let newText: String?
        switch micUsage {
        case .none: newText = existing?.micUsage
        case .some(let text): newText = text
        }
        let before = existing.map { Self.stateBytes(app: app, micUsage: $0.micUsage) } ?? 0
        let after = Self.stateBytes(app: app, micUsage: newText)
        let total = stateBytes(ownedBy: owner) - before + after
        if after > before && total > Self.maxStateBytesPerUser {
            throw SessionError(
                .resourceNotAvailable,
                "the sessions of uid \(owner) would hold \(total) bytes of names and microphone usage "
                    + "descriptions, more than the \(Self.maxStateBytesPerUser) one user may; shorten the "
                    + "descriptions or \(deleteHint)")
        }
    }

    /// The most players one session may have (one per stream), for everyone.
    public static let maxPlayersPerSession = 8
    /// The most players the sessions of one user (not an administrator) may have together.
    public static let maxPlayersPerUser = 16
    /// The most players of all non-administrators together.
    public static let maxPlayers = 128

    /// Checks that `app` may start a player on a stream that has none (`newStream`; a stream
    /// that plays may always take a new file: it replaces its player). `players` is how many
    /// players each app has now. Each is a feeder thread, a ring and a converter in the daemon,
    /// so a client's loop of `play --stream N` stops here, with resourceNotAvailable, rather
    /// than at the system's thread limit. Administrators are held only to the per-session limit.
    public func checkPlayerRoom(
        app: String, newStream: Bool, players: [String: Int], by requester: Requester
    ) throws(SessionError) {
        let session = try session(app)
        guard newStream else { return }
        let own = players[app] ?? 0
        let stopHint = "stop one with `recctl stop APP --stream NAME`, or play on a stream that plays"
        if own >= Self.maxPlayersPerSession {
            throw SessionError(
                .resourceNotAvailable, "\(app) has \(own) players, the most one session may; \(stopHint)")
        }
        if requester.isAdministrator { return }
        let owner = session.ownerUID
        let owned = players.reduce(0) { $0 + (sessions[$1.key]?.ownerUID == owner ? $1.value : 0) }
        if owned >= Self.maxPlayersPerUser {
            throw SessionError(
                .resourceNotAvailable,
                "the sessions of uid \(owner) have \(owned) players, the most one user may; \(stopHint)")
        }
        let all = players.values.reduce(0, +)
        if all >= Self.maxPlayers {
            throw SessionError(
                .resourceNotAvailable, "recd plays \(all) files already, the most it plays at once; \(stopHint)")
        }
    }
}

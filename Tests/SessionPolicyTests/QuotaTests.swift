// What one user may make the daemon hold: sessions per user, all sessions together, bytes of
// names and microphone usage descriptions per user, and the length of one description.
// Administrators are exempt from every count, never from the description's length.

import Testing

@testable import SessionPolicy

@Suite("quotas: sessions and state bytes per user, the global cap, description length")
struct QuotaTests {
    enum Target: Sendable { case new, existing }

    struct Room: Sendable, CustomTestStringConvertible {
        let name: String
        /// Sessions the requester owns already ("own-00", ...), each with a description of
        /// `ownedMicBytes` bytes.
        var owned = 0
        var ownedMicBytes = 10
        /// Sessions of other users (64 each), none of them the requester's.
        var others = 0
        var admin = false
        /// A new session "new", or the requester's "own-00".
        var target = Target.new
        /// The description sent, in bytes; nil: none sent (unchanged).
        var micBytes: Int? = 20
        /// Sent as cleared (`.some(nil)`).
        var clear = false
        /// The refusal's code; nil: allowed.
        var refused: ErrorCode?
        var testDescription: String { name }
    }

    static let requester: UInt32 = 1000

    static let rooms: [Room] = [
        .init(name: "a first session"),
        .init(name: "the 64th of one user", owned: 63),
        .init(name: "the 65th of one user", owned: 64, refused: .resourceNotAvailable),
        .init(name: "an administrator's 65th", owned: 64, admin: true),
        .init(name: "reconfiguring one of 64", owned: 64, target: .existing),
        .init(name: "a description of 1024 bytes", micBytes: 1024),
        .init(name: "a description of 1025 bytes", micBytes: 1025, refused: .badParam),
        .init(name: "an administrator's description of 1025 bytes", admin: true, micBytes: 1025, refused: .badParam),
        .init(name: "a new session when all 1024 are taken", others: 1024, refused: .resourceNotAvailable),
        .init(name: "an administrator's new session when all 1024 are taken", others: 1024, admin: true),
        .init(name: "reconfiguring when all 1024 are taken", owned: 1, others: 1023, target: .existing),
        .init(
            name: "bytes: a new session over 32 KiB", owned: 32, ownedMicBytes: 1000, micBytes: 1000,
            refused: .resourceNotAvailable),
        .init(
            name: "bytes: an administrator's over 32 KiB", owned: 32, ownedMicBytes: 1000, admin: true,
            micBytes: 1000),
        .init(name: "bytes: a new session without a description", owned: 32, ownedMicBytes: 1000, clear: true),
        .init(
            name: "bytes: a description growing past 32 KiB", owned: 32, ownedMicBytes: 1020, target: .existing,
            micBytes: 1024, refused: .resourceNotAvailable),
        .init(
            name: "bytes: a description shrinking while over", owned: 32, ownedMicBytes: 1020, target: .existing,
            micBytes: 10),
        .init(name: "bytes: unchanged while over", owned: 32, ownedMicBytes: 1020, target: .existing, micBytes: nil),
    ]

    @Test(arguments: rooms)
    func room(_ row: Room) throws {
        var store = SessionStore.fixture()
        // `insert` (a persisted session), not `configure`: a thousand arbitrations take seconds.
        for index in 0..<row.owned {
            var session = Session(app: "own-" + (index < 10 ? "0" : "") + String(index), ownerUID: Self.requester)
            session.micUsage = String(repeating: "m", count: row.ownedMicBytes)
            store.insert(session, configuration: config(.playback))
        }
        for index in 0..<row.others {
            store.insert(
                Session(app: "other-\(index)", ownerUID: 2000 + UInt32(index / 64)), configuration: config(.playback))
        }
        let app = row.target == .new ? "new" : "own-00"
        let micUsage: String?? =
            row.clear ? .some(nil) : row.micBytes.map { .some(String(repeating: "x", count: $0)) } ?? .none
        let before = store
        do {
            try store.checkRoom(
                for: app, micUsage: micUsage, by: .init(uid: Self.requester, isAdministrator: row.admin))
            #expect(row.refused == nil, "allowed")
        } catch {
            #expect(error.code == row.refused, "\(error)")
            let advice = error.code == .badParam ? "at most 1024 bytes" : "recctl session delete"
            #expect(error.message.contains(advice), "says what to do: \(error.message)")
        }
        #expect(store == before, "a check changes nothing")
    }

    /// A flood by one user: 64 sessions, then every further one refused, the store never past
    /// 64 of theirs; root's session goes through afterwards.
    @Test func floodThenRoot() throws {
        var store = SessionStore.fixture()
        var refusals = 0
        for index in 0..<2000 {
            let app = "flood-\(index)"
            do {
                try store.checkRoom(for: app, micUsage: .some("x"), by: .init(uid: 65534, isAdministrator: false))
                _ = try store.configure(app: app, ownerUID: 65534, configuration: config(.playback), micUsage: "x")
            } catch {
                #expect(error.code == .resourceNotAvailable)
                refusals += 1
            }
        }
        #expect(store.sessionCount(ownedBy: 65534) == SessionStore.maxSessionsPerUser)
        #expect(refusals == 2000 - SessionStore.maxSessionsPerUser)
        try store.checkRoom(for: "root-app", micUsage: .none, by: .init(uid: 0, isAdministrator: true))
        try store.checkRoom(for: "other-user", micUsage: .none, by: .init(uid: 1000, isAdministrator: false))
    }

    @Test func stateBytesCountNamesAndDescriptions() throws {
        var store = SessionStore.fixture()
        _ = try store.configure(app: "abc", ownerUID: 7, configuration: config(.record), micUsage: "12345")
        _ = try store.configure(app: "de", ownerUID: 7, configuration: config(.playback))
        _ = try store.configure(app: "fgh", ownerUID: 8, configuration: config(.playback), micUsage: "1")
        #expect(store.stateBytes(ownedBy: 7) == 3 + 5 + 2)
        #expect(store.stateBytes(ownedBy: 8) == 4)
        #expect(store.sessionCount(ownedBy: 7) == 2)
    }
}

@Suite("quotas: players per session, per user, in all")
struct PlayerQuotaTests {
    struct Room: Sendable, CustomTestStringConvertible {
        let name: String
        /// Players of the requester's session "mine".
        var mine = 0
        /// Players of the requester's other sessions.
        var ownOthers = 0
        /// Players of other users' sessions.
        var others = 0
        var admin = false
        var newStream = true
        var refused = false
        var testDescription: String { name }
    }

    static let rooms: [Room] = [
        .init(name: "a first player"),
        .init(name: "a session's 8th", mine: 7),
        .init(name: "a session's 9th", mine: 8, refused: true),
        .init(name: "an administrator's session's 9th", mine: 8, admin: true, refused: true),
        .init(name: "a new file on a stream of a full session", mine: 8, newStream: false),
        .init(name: "a user's 16th", mine: 7, ownOthers: 8),
        .init(name: "a user's 17th", mine: 1, ownOthers: 15, refused: true),
        .init(name: "an administrator's 17th", mine: 1, ownOthers: 15, admin: true),
        .init(name: "the 129th in all", others: 128, refused: true),
        .init(name: "an administrator's 129th in all", others: 128, admin: true),
    ]

    @Test(arguments: rooms)
    func room(_ row: Room) throws {
        var store = SessionStore.fixture()
        var players: [String: Int] = [:]
        store.insert(Session(app: "mine", ownerUID: 1000), configuration: config(.playback))
        players["mine"] = row.mine
        for index in 0..<((row.ownOthers + 7) / 8) {
            store.insert(Session(app: "own-\(index)", ownerUID: 1000), configuration: config(.playback))
            players["own-\(index)"] = min(8, row.ownOthers - index * 8)
        }
        for index in 0..<((row.others + 7) / 8) {
            store.insert(Session(app: "other-\(index)", ownerUID: 2000 + UInt32(index)), configuration: config(.playback))
            players["other-\(index)"] = min(8, row.others - index * 8)
        }
        do {
            try store.checkPlayerRoom(
                app: "mine", newStream: row.newStream, players: players,
                by: .init(uid: 1000, isAdministrator: row.admin))
            #expect(!row.refused, "allowed")
        } catch {
            #expect(row.refused, "\(error)")
            #expect(error.code == .resourceNotAvailable && error.message.contains("recctl stop"), "\(error)")
        }
    }

    @Test func unknownSessionIsExpired() {
        let store = SessionStore.fixture()
        #expect(throws: SessionError.self) {
            try store.checkPlayerRoom(app: "gone", newStream: true, players: [:], by: .init(uid: 0, isAdministrator: true))
        }
    }
}

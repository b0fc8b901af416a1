// Sessions expire: which may go (never declared, inactive, nothing running, unused for the
// configured time) is the store's rule; the daemon notes uses and asks. No clock: times given.

import Testing

@testable import SessionPolicy

@Suite("sessions expire")
struct StoreExpiryTests {
    static let week = 7 * 86_400.0

    /// A store with an undeclared playback session `app` used at time 0.
    static func store(_ app: String = "errs") -> SessionStore {
        var store = SessionStore.fixture()
        store.add(app, .playback)
        store.noteUse(of: app, at: 0)
        return store
    }

    @Test("an undeclared, inactive session unused for the whole time expires, not a second earlier")
    func unusedExpires() {
        let store = Self.store()
        #expect(store.expired(at: Self.week - 1, idle: Self.week).isEmpty)
        #expect(store.expired(at: Self.week, idle: Self.week) == ["errs"])
        #expect(store.expired(at: 10 * Self.week, idle: 0).isEmpty, "0: never")
    }

    @Test("a use moves the time on, never back")
    func useMovesOn() {
        var store = Self.store()
        store.noteUse(of: "errs", at: 100)
        store.noteUse(of: "errs", at: 50)
        #expect(store.lastUsed["errs"] == 100)
        #expect(store.expired(at: Self.week, idle: Self.week).isEmpty)
        #expect(store.expired(at: Self.week + 100, idle: Self.week) == ["errs"])
        store.noteUse(of: "nobody-has-this", at: 1)
        #expect(store.lastUsed["nobody-has-this"] == nil)
    }

    struct Keeper: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let change: @Sendable (inout SessionStore) throws -> Void
    }

    static let keepers: [Keeper] = [
        Keeper(testDescription: "active") { _ = try $0.activate(app: "errs") },
        Keeper(testDescription: "interrupted") { store in
            _ = try store.activate(app: "errs")
            store.add("voice", .playAndRecord, .voiceChat)
            _ = try store.activate(app: "voice")
        },
        Keeper(testDescription: "declared in the config") { store in
            var session = try store.session("errs")
            session.declaredInConfig = true
            store.insert(session, configuration: store.sessions["errs"]!.configuration)
        },
    ]

    @Test("active, interrupted or declared in the config: never expires", arguments: keepers)
    func kept(_ keeper: Keeper) throws {
        var store = Self.store()
        try keeper.change(&store)
        #expect(store.expired(at: 10 * Self.week, idle: Self.week).isEmpty, "\(store.sessions["errs"]!)")
    }

    @Test("a deleted session's use is forgotten with it")
    func deleteForgets() throws {
        var store = Self.store()
        _ = try store.delete(app: "errs")
        #expect(store.lastUsed.isEmpty && store.expired(at: 10 * Self.week, idle: Self.week).isEmpty)
    }
}

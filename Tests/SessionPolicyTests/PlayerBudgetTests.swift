// What one user's players may move together: the player budget (`SessionStore.checkPlayerLoad`),
// from a table. Loads are samples per second: a file's rate × channels read, JACK's rate × the
// channels played.

import Testing

@testable import SessionPolicy

@Suite("quotas: the player budget per user")
struct PlayerBudgetTests {
    /// 384 kHz × 64 channels to a stereo output at 48 kHz: 24,672,000.
    static let wide = PlayerLoad(fileRate: 384_000, fileChannels: 64, outputRate: 48_000, outputChannels: 2)
    /// 48 kHz stereo to a stereo output: 192,000.
    static let stereo = PlayerLoad(fileRate: 48_000, fileChannels: 2, outputRate: 48_000, outputChannels: 2)
    static let budget = SessionStore.defaultPlayerLoadPerUser

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        var adding: PlayerLoad
        /// Load of the requester's session "mine" and of its other session "mine-too".
        var mine = 0
        var mineToo = 0
        /// Load of another user's session.
        var others = 0
        var replacing = 0
        var admin = false
        var budget = PlayerBudgetTests.budget
        var refused = false
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        .init(name: "one 384 kHz, 64-channel file", adding: wide),
        .init(name: "a second one", adding: wide, mine: wide.samplesPerSecond, refused: true),
        .init(
            name: "a second one in another session of the user", adding: wide, mineToo: wide.samplesPerSecond,
            refused: true),
        .init(name: "another user's players do not count", adding: wide, others: 30_000_000),
        .init(
            name: "a new file on the stream that plays gives its load back", adding: wide, mine: wide.samplesPerSecond,
            replacing: wide.samplesPerSecond),
        .init(name: "an administrator past the budget", adding: wide, mine: wide.samplesPerSecond, admin: true),
        .init(name: "16 stereo 48 kHz players", adding: stereo, mine: 8 * 192_000, mineToo: 7 * 192_000),
        .init(name: "exactly at the budget", adding: stereo, mine: budget - 192_000),
        .init(name: "one sample past it", adding: stereo, mine: budget - 191_999, refused: true),
        .init(name: "a file alone past a lowered budget", adding: wide, budget: 20_000_000, refused: true),
        .init(
            name: "a header's absurd numbers saturate, never trap",
            adding: PlayerLoad(fileRate: .max, fileChannels: .max, outputRate: .max, outputChannels: 2), refused: true),
        .init(name: "loads that would overflow when summed", adding: stereo, mine: .max, mineToo: .max, refused: true),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) throws {
        var store = SessionStore.fixture()
        store.insert(Session(app: "mine", ownerUID: 1000), configuration: config(.playback))
        store.insert(Session(app: "mine-too", ownerUID: 1000), configuration: config(.playback))
        store.insert(Session(app: "theirs", ownerUID: 2000), configuration: config(.playback))
        let loads = ["mine": row.mine, "mine-too": row.mineToo, "theirs": row.others]
        do {
            try store.checkPlayerLoad(
                app: "mine", adding: row.adding, replacing: row.replacing, loads: loads, budget: row.budget,
                by: .init(uid: 1000, isAdministrator: row.admin))
            #expect(!row.refused, "allowed")
        } catch {
            #expect(row.refused, "\(error)")
            #expect(error.code == .resourceNotAvailable)
            for words in ["uid 1000", "[daemon] player_load_per_user", "recctl stop APP --stream NAME", "sox"] {
                #expect(error.message.contains(words), "\(error.message)")
            }
        }
    }

    @Test("the message gives the loads as a person reads them")
    func message() {
        var store = SessionStore.fixture()
        store.insert(Session(app: "mine", ownerUID: 65534), configuration: config(.playback))
        #expect(throws: SessionError.self) {
            try store.checkPlayerLoad(
                app: "mine", adding: Self.wide, replacing: 0, loads: ["mine": Self.wide.samplesPerSecond],
                budget: Self.budget, by: .init(uid: 65534, isAdministrator: false))
        }
        do {
            try store.checkPlayerLoad(
                app: "mine", adding: Self.wide, replacing: 0, loads: ["mine": Self.wide.samplesPerSecond],
                budget: Self.budget, by: .init(uid: 65534, isAdministrator: false))
        } catch {
            #expect(
                error.message.hasPrefix(
                    "this file would take the players of uid 65534 to 49.3 M samples/s, over the 32 M one user's "
                        + "players may move ([daemon] player_load_per_user): the file moves 24.7 M (384 kHz × 64 "
                        + "channels read, 48 kHz × 2 played), the user's other players 24.7 M; stop one with"),
                "\(error.message)")
        }
        #expect(PlayerLoad.rate(44_100) == "44.1 kHz" && PlayerLoad.rate(8_000) == "8 kHz")
        #expect(PlayerLoad.amount(192_000) == "192 k" && PlayerLoad.amount(999_999) == "1 M")
    }

    @Test func unknownSessionIsExpired() {
        let store = SessionStore.fixture()
        #expect(throws: SessionError.self) {
            try store.checkPlayerLoad(
                app: "gone", adding: Self.stereo, replacing: 0, loads: [:], budget: Self.budget,
                by: .init(uid: 0, isAdministrator: true))
        }
    }
}

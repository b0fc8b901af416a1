// Rules that once lived in the daemon, now in the policy core: who decides permission, when
// captures carry silence, how many sessions there may be, which inputs dualRoute records.

import Testing

@testable import SessionPolicy

@Suite("permission decisions, silenced captures, session limit, dualRoute inputs")
struct DaemonRuleTests {
    struct Decision: Sendable, CustomTestStringConvertible {
        let from: RecordPermission
        let to: RecordPermission
        let allowed: Bool
        var testDescription: String { "\(from) → \(to): \(allowed ? "allowed" : "refused")" }
    }

    /// Every (current, decided) pair; only denied → granted is refused (denied stays denied).
    static let decisions: [Decision] = [
        .init(from: .undetermined, to: .undetermined, allowed: true),
        .init(from: .undetermined, to: .granted, allowed: true),
        .init(from: .undetermined, to: .denied, allowed: true),
        .init(from: .granted, to: .undetermined, allowed: true),
        .init(from: .granted, to: .granted, allowed: true),
        .init(from: .granted, to: .denied, allowed: true),
        .init(from: .denied, to: .undetermined, allowed: true),
        .init(from: .denied, to: .granted, allowed: false),
        .init(from: .denied, to: .denied, allowed: true),
    ]

    @Test(arguments: decisions)
    func permissionDecision(_ row: Decision) throws {
        var store = SessionStore.fixture()
        _ = store.setPermission(app: "app", row.from)
        do {
            let effects = try store.decidePermission(app: "app", row.to)
            #expect(row.allowed, "a refused decision went through")
            #expect(store.permission("app") == row.to)
            #expect(effects == (row.from == row.to ? [] : [.recordPermission(app: "app", state: row.to)]))
        } catch {
            #expect(!row.allowed, "\(error)")
            #expect(error.code == .badParam && error.message.contains("recctl permission reset app"))
            #expect(store.permission("app") == row.from, "a refused decision changed nothing")
        }
    }

    struct Silence: Sendable, CustomTestStringConvertible {
        let muted: Bool
        let permission: RecordPermission
        let silenced: Bool
        var testDescription: String { "muted \(muted), \(permission): \(silenced ? "silence" : "input")" }
    }

    /// Captures carry the input only when the session is unmuted and granted.
    static let silences: [Silence] = [
        .init(muted: false, permission: .granted, silenced: false),
        .init(muted: true, permission: .granted, silenced: true),
        .init(muted: false, permission: .undetermined, silenced: true),
        .init(muted: true, permission: .undetermined, silenced: true),
        .init(muted: false, permission: .denied, silenced: true),
        .init(muted: true, permission: .denied, silenced: true),
    ]

    @Test(arguments: silences)
    func capturesSilenced(_ row: Silence) throws {
        var store = SessionStore.fixture()
        store.add("rec", .record)
        _ = store.setPermission(app: "rec", row.permission)
        _ = try store.setInputMuted(app: "rec", row.muted)
        #expect(store.capturesSilenced(app: "rec") == row.silenced)
    }

    @Test func unknownAppIsSilenced() {
        var store = SessionStore.fixture()
        _ = store.setPermission(app: "ghost", .granted)
        #expect(store.capturesSilenced(app: "ghost"))
    }

    @Test func sessionLimit() throws {
        var store = SessionStore.fixture()
        let user = SessionStore.Requester(uid: 5000, isAdministrator: false)
        // 16 users of 64 sessions each fill the global cap.
        for index in 0..<(SessionStore.maxSessions - 1) {
            store.insert(Session(app: "app\(index)", ownerUID: 2000 + UInt32(index / 64)), configuration: config(.ambient))
        }
        try store.checkRoom(for: "one-more", by: user)  // the 1024th
        _ = try store.configure(app: "one-more", ownerUID: user.uid, configuration: config(.ambient))
        #expect(store.sessions.count == SessionStore.maxSessions)
        #expect(throws: SessionError.self) { try store.checkRoom(for: "too-many", by: user) }
        do {
            try store.checkRoom(for: "too-many", by: user)
        } catch {
            #expect(error.code == .resourceNotAvailable && error.message.contains("recctl session delete"))
        }
        try store.checkRoom(for: "app7", by: user)  // an existing session may always be reconfigured
        try store.checkRoom(for: "roots", by: .init(uid: 0, isAdministrator: true))  // never root
    }

    struct InputCase: Sendable, CustomTestStringConvertible {
        let mode: Mode
        let port: String
        let allowed: Bool
        var testDescription: String { "\(mode) records \(port): \(allowed)" }
    }

    /// dualRoute records only its route's inputs (built-in mic, duplex secondary); other
    /// modes leave the choice to port eligibility.
    static let inputCases: [InputCase] = [
        .init(mode: .dualRoute, port: "mic", allowed: true),
        .init(mode: .dualRoute, port: "hfp", allowed: true),
        .init(mode: .dualRoute, port: "usbIn", allowed: false),
        .init(mode: .default, port: "mic", allowed: true),
        .init(mode: .default, port: "usbIn", allowed: true),
    ]

    @Test(arguments: inputCases)
    func dualRouteInputs(_ row: InputCase) throws {
        var store = SessionStore.fixture(ports: Ports.builtIn + [Ports.usbIn(), Ports.hfp()])
        store.add("dj", .multiRoute, row.mode, row.mode == .dualRoute ? [.allowBluetoothHFP] : [])
        do {
            try store.checkRecordInput(app: "dj", port: row.port)
            #expect(row.allowed, "\(row.port) was accepted")
        } catch {
            #expect(!row.allowed, "\(error)")
            #expect(error.code == .resourceNotAvailable && error.message.contains("hfp"), "names the duplex secondary: \(error)")
        }
    }
}

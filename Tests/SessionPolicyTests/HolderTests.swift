// Activation belongs to a live holder: an application process's activation ends with the
// process (`holderEnded`); activations no process holds (recctl, the config) persist.

import Testing

@testable import SessionPolicy

@Suite("Activation holders")
struct HolderTests {
    /// How the session was activated, and whether its holder's end deactivates it.
    struct HolderCase: Sendable, CustomTestStringConvertible {
        let name: String
        let holder: Int32?
        let ended: Int32
        let deactivated: Bool
        var testDescription: String { name }

        static let all: [HolderCase] = [
            .init(name: "held by 100, 100 ends", holder: 100, ended: 100, deactivated: true),
            .init(name: "held by 100, 200 ends", holder: 100, ended: 200, deactivated: false),
            .init(name: "not held (recctl), 100 ends", holder: nil, ended: 100, deactivated: false),
        ]
    }

    /// The holder's end deactivates exactly its sessions, as with notifyOthers: the session it
    /// interrupted gets `ended` with shouldResume.
    @Test(arguments: HolderCase.all)
    func holderEndDeactivatesItsSessions(_ c: HolderCase) throws {
        var store = SessionStore.fixture()
        store.add("music", .playback)
        _ = try store.activate(app: "music")
        store.add("call", .playback)
        _ = try store.activate(app: "call", holder: c.holder)
        #expect(store.state("music") == .interrupted)
        let effects = store.holderEnded(c.ended)
        if c.deactivated {
            #expect(store.state("call") == .inactive)
            #expect(effects.interruptions == [ended("music", shouldResume: true)])
            #expect(store.sessions["call"]?.holder == nil)
        } else {
            #expect(effects.isEmpty)
            #expect(store.state("call") == .active)
            #expect(store.state("music") == .interrupted)
        }
    }

    /// A held session with running streams: they stop (force), and nothing is refused as isBusy.
    @Test func runningStreamsStopWithTheHolder() throws {
        var store = SessionStore.fixture()
        store.add("call", .playback)
        _ = try store.activate(app: "call", holder: 7)
        store.setStreamsRunning(app: "call", true)
        let effects = store.holderEnded(7)
        #expect(effects.contains(.stopStreams(app: "call", reason: .stop)))
        #expect(store.state("call") == .inactive)
        #expect(store.sessions["call"]?.streamsRunning == false)
    }

    /// A held session that was interrupted gives up when its holder ends: its interrupter's
    /// later deactivation with notifyOthers does not bring it back (no auto-resume).
    @Test func interruptedHeldSessionGivesUp() throws {
        var store = SessionStore.fixture()
        store.add("app", .playback, autoResume: true)
        _ = try store.activate(app: "app", holder: 5)
        store.add("voice", .playback)
        _ = try store.activate(app: "voice")
        #expect(store.state("app") == .interrupted)
        _ = store.holderEnded(5)
        #expect(store.state("app") == .inactive)
        let effects = try store.deactivate(app: "voice", notifyOthers: true, force: false)
        #expect(store.state("app") == .inactive)
        #expect(!effects.contains(.resumeStreams(app: "app")))
    }

    /// Each activation sets the holder anew: a session an application held, deactivated, and
    /// activated again by recctl is no longer the application's.
    @Test func activationSetsTheHolderAnew() throws {
        var store = SessionStore.fixture()
        store.add("app", .playback)
        _ = try store.activate(app: "app", holder: 9)
        _ = try store.deactivate(app: "app", notifyOthers: false, force: false)
        _ = try store.activate(app: "app")
        #expect(store.holderEnded(9).isEmpty)
        #expect(store.state("app") == .active)
    }

    /// An active session activated again by another holder passes to it: the new process of a
    /// restarted application keeps what recd had not yet ended for the old one.
    @Test func latestLiveActivatorHolds() throws {
        var store = SessionStore.fixture()
        store.add("app", .playback)
        _ = try store.activate(app: "app", holder: 1)
        #expect(try store.activate(app: "app", holder: 2).isEmpty)
        #expect(store.holderEnded(1).isEmpty)
        #expect(store.state("app") == .active)
        _ = store.holderEnded(2)
        #expect(store.state("app") == .inactive)
        // recctl's activation of an active held session leaves the holder as it is.
        _ = try store.activate(app: "app", holder: 3)
        _ = try store.activate(app: "app")
        _ = store.holderEnded(3)
        #expect(store.state("app") == .inactive)
    }

    /// auto_resume after the interrupter ended keeps the holder.
    @Test func autoResumeKeepsTheHolder() throws {
        var store = SessionStore.fixture()
        store.add("app", .playback, autoResume: true)
        _ = try store.activate(app: "app", holder: 4)
        store.add("voice", .playback)
        _ = try store.activate(app: "voice")
        _ = try store.deactivate(app: "voice", notifyOthers: true, force: false)
        #expect(store.state("app") == .active)
        #expect(store.sessions["app"]?.holder == 4)
    }
}

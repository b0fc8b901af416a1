// state.json is written on the state writer's thread: the newest state always ends up in the
// file, older ones still queued are skipped, and `finish` writes the final state at once.
import ControlProtocol
import Foundation
import Glibc
import SessionPolicy
import Testing

@testable import Daemon

private func state(granting count: Int) -> PersistedState {
    var state = PersistedState()
    for index in 0..<count { state.permissions["app\(index)"] = .granted }
    return state
}

/// How many apps the state file grants (nil: no file, or not readable yet).
private func grantedApps(_ file: StateFile) -> Int? {
    guard FileManager.default.fileExists(atPath: file.path) else { return nil }
    return file.load().permissions.count
}

@Suite("state writer")
struct StateWriterTests {
    @Test("the newest of many quick changes ends up in the file, written off the calling thread")
    func newestWins() throws {
        let directory = NSTemporaryDirectory() + "recd-state-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mailbox = Mailbox()
        let file = StateFile(stateDir: directory)
        let writer = try StateWriter(file: file, deliver: mailbox.deliver)
        let started = Date()
        for count in 1...40 { writer.save(state(granting: count)) }
        #expect(Date().timeIntervalSince(started) < 0.5, "save waited for the disk")
        let written = mailbox.run(until: { grantedApps(file) == 40 })
        #expect(written, "the file holds \(String(describing: grantedApps(file)))")

        // At shutdown: whatever is queued, the final state is on disk when finish returns.
        for count in 41...45 { writer.save(state(granting: count)) }
        writer.finish(state(granting: 3))
        #expect(grantedApps(file) == 3)
        usleep(20_000)
        mailbox.run()
        #expect(grantedApps(file) == 3, "a queued write ran after finish")
    }
}

@Suite("persisted sessions at start-up")
struct PersistedLimitTests {
    @Test("a description longer than 1024 bytes saved by an older recd is dropped at start; one of 1024 is kept")
    func oversizedDescriptionDropped() throws {
        let config = try testConfig(ports: "", directory: NSTemporaryDirectory() + "recd-limits-\(getpid())")
        var persisted = PersistedState()
        for (app, bytes) in [("long", 60_000), ("fits", 1024)] {
            persisted.sessions.append(
                .init(
                    app: app, ownerUID: 65534, configuration: .initial, micUsage: String(repeating: "m", count: bytes),
                    preferences: .init(), inputMuted: false, prefersInterruption: false))
        }
        let store = SessionDeclarations.makeStore(config: config, persisted: persisted)
        #expect(store.sessions["long"]?.micUsage == nil)
        #expect(store.sessions["fits"]?.micUsage?.utf8.count == 1024)
    }
}

@Suite("persisted preferences")
struct PersistedPreferenceTests {
    @Test("prefersNoInterruptionsFromSystemAlerts goes to state.json and comes back; an older file means false")
    func systemAlertPreferenceRoundTrip() throws {
        var store = SessionStore()
        for app in ["quiet", "plain"] {
            _ = try store.configure(app: app, ownerUID: 1000, configuration: .initial)
        }
        _ = try store.setPrefersNoInterruptionsFromSystemAlerts(app: "quiet", true)
        let json = PersistedState(store: store).json
        let decoded = PersistedState.decode(json) { Issue.record("warned: \($0)") }
        let flags = Dictionary(uniqueKeysWithValues: decoded.sessions.map { ($0.app, $0.prefersNoSystemAlerts) })
        #expect(flags == ["quiet": true, "plain": false])
        let config = try testConfig(ports: "", directory: NSTemporaryDirectory() + "recd-prefs-\(getpid())")
        let restored = SessionDeclarations.makeStore(config: config, persisted: decoded)
        #expect(restored.sessions["quiet"]?.prefersNoInterruptionsFromSystemAlerts == true)
        #expect(restored.sessions["plain"]?.prefersNoInterruptionsFromSystemAlerts == false)
        // A file written before the key existed: no preference.
        let older = JSONValue.object([
            ("version", .number(Double(PersistedState.formatVersion))),
            ("sessions", .array([["app": "old", "category": "playback", "mode": "default", "options": .array([])]])),
        ])
        #expect(PersistedState.decode(older) { _ in }.sessions.first?.prefersNoSystemAlerts == false)
    }
}

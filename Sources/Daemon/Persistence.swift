// Sessions and record permissions persisted under the state dir (state.json), written
// atomically after every change and restored on start.
//
// Threads: `PersistedState` and `StateFile.load` on the control thread (at start-up).
// `StateWriter.save` and `finish` on the control thread; the writes themselves (two fsyncs
// each, which take long on a busy disk) on the writer's own thread, "state writer".
import ControlProtocol
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

/// The persisted form, versioned; unknown or invalid entries are skipped with a warning.
struct PersistedState {
    static let formatVersion = 1

    struct SessionRecord {
        var app: String
        var ownerUID: UInt32
        var configuration: SessionConfiguration
        var micUsage: String?
        var preferences: HardwarePreferences
        var inputMuted: Bool
        var prefersInterruption: Bool
        var prefersNoSystemAlerts = false
        var prefersEchoCancelledInput = false
        /// When it was last used (wall-clock seconds; `SessionStore.lastUsed`); nil in a state
        /// file of an older recd: counted from this start.
        var lastUsed: Double?
    }

    var sessions: [SessionRecord] = []
    var permissions: [String: RecordPermission] = [:]

    init(store: SessionStore) {
        sessions = store.sortedSessions.map {
            SessionRecord(
                app: $0.app, ownerUID: $0.ownerUID, configuration: $0.configuration, micUsage: $0.micUsage,
                preferences: $0.preferences, inputMuted: $0.inputMuted,
                prefersInterruption: $0.prefersInterruptionOnRouteDisconnect,
                prefersNoSystemAlerts: $0.prefersNoInterruptionsFromSystemAlerts,
                prefersEchoCancelledInput: $0.prefersEchoCancelledInput, lastUsed: store.lastUsed[$0.app])
        }
        permissions = store.permissions
    }

    init() {}

    var json: JSONValue {
        .object([
            ("version", .number(Double(Self.formatVersion))),
            ("sessions", .array(sessions.map { record in
                [
                    "app": .string(record.app), "owner_uid": .number(Double(record.ownerUID)),
                    "category": .string(record.configuration.category.rawValue),
                    "mode": .string(record.configuration.mode.rawValue),
                    "options": JSONValue(record.configuration.requestedOptions.sorted().map(\.rawValue)),
                    "policy": .string(record.configuration.policy.rawValue),
                    "mic_usage": JSONValue(record.micUsage),
                    "preferences": WireFormat.preferences(record.preferences),
                    "input_muted": .bool(record.inputMuted),
                    "prefers_interruption": .bool(record.prefersInterruption),
                    "prefers_no_system_alerts": .bool(record.prefersNoSystemAlerts),
                    "prefers_echo_cancelled_input": .bool(record.prefersEchoCancelledInput),
                    "last_used": JSONValue(record.lastUsed),
                ]
            })),
            ("permissions", .object(permissions.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value.rawValue)) })),
        ])
    }

    /// Reads what can be trusted from a state file; `warn` hears about what was skipped.
    static func decode(_ value: JSONValue, warn: (String) -> Void) -> PersistedState {
        var state = PersistedState()
        guard value["version"]?.intValue == formatVersion else {
            warn("state file has version \(value["version"]?.jsonText ?? "none"), expected \(formatVersion); starting empty")
            return state
        }
        for item in value["sessions"]?.arrayValue ?? [] {
            guard let app = item["app"]?.stringValue else { continue }
            do {
                let configuration = try SessionConfiguration.validated(
                    category: Vocabulary.category(item["category"]?.stringValue ?? ""),
                    mode: Vocabulary.mode(item["mode"]?.stringValue ?? ""),
                    options: Set((item["options"]?.arrayValue ?? []).map { try Vocabulary.option($0.stringValue ?? "") }),
                    policy: Vocabulary.policy(item["policy"]?.stringValue ?? "default"))
                let prefs = item["preferences"]
                state.sessions.append(SessionRecord(
                    app: app, ownerUID: UInt32(item["owner_uid"]?.intValue ?? 0), configuration: configuration,
                    micUsage: item["mic_usage"]?.stringValue,
                    preferences: HardwarePreferences(
                        preferredInput: prefs?["preferredInput"]?.stringValue, sampleRate: prefs?["sampleRate"]?.doubleValue,
                        ioBufferDuration: prefs?["ioBufferDuration"]?.doubleValue, inputChannels: prefs?["inputChannels"]?.intValue,
                        outputChannels: prefs?["outputChannels"]?.intValue),
                    inputMuted: item["input_muted"]?.boolValue ?? false,
                    prefersInterruption: item["prefers_interruption"]?.boolValue ?? false,
                    prefersNoSystemAlerts: item["prefers_no_system_alerts"]?.boolValue ?? false,
                    prefersEchoCancelledInput: item["prefers_echo_cancelled_input"]?.boolValue ?? false,
                    lastUsed: item["last_used"]?.doubleValue.flatMap { $0.isFinite ? $0 : nil }))
            } catch {
                warn("skipping persisted session \(app): \(error)")
            }
        }
        for (app, value) in value["permissions"]?.objectValue ?? [] {
            if let permission = value.stringValue.flatMap(RecordPermission.init(rawValue:)) {
                state.permissions[app] = permission
            }
        }
        return state
    }
}

/// Reads and writes `state.json` in the state dir.
struct StateFile {
    let path: String

    init(stateDir: String) { path = stateDir + "/state.json" }

    func load() -> PersistedState {
        do {
            guard let bytes = try AtomicFile.read(path) else { return PersistedState() }
            let value = try JSONValue.parse(String(decoding: bytes, as: UTF8.self))
            return PersistedState.decode(value) { Log.warning("\(path): \($0)") }
        } catch {
            // Keep the unreadable file for a person to look at; never overwrite it.
            let aside = path + ".unreadable"
            try? FileSystem.rename(path, to: aside)
            Log.error("cannot read \(path): \(error); moved it to \(aside) and starting with no saved sessions")
            return PersistedState()
        }
    }

    func save(_ state: PersistedState) throws {
        try write(Self.bytes(state))
    }

    static func bytes(_ state: PersistedState) -> [UInt8] { Array((state.json.jsonText + "\n").utf8) }

    /// Any thread; writes of one file must not overlap (`AtomicFile.write`).
    func write(_ bytes: [UInt8]) throws {
        try AtomicFile.write(bytes, to: path, mode: 0o640)
    }
}

/// Writes state.json on its own thread, so that the control thread never waits for fsync.
/// Each change queues the newest state; a write still queued when a newer one comes is
/// skipped, so the file always ends up as the last change. A crash loses at most the changes
/// of the last write's few milliseconds; `finish` (SIGTERM) writes the final state.
final class StateWriter: Sendable {
    let file: StateFile
    private let worker: SlowRequestWorker
    /// The number of the newest state queued.
    private let newest = Atomic<Int>(0)

    /// Starts the writer thread; write failures are logged on the control thread (`deliver`).
    init(file: StateFile, deliver: @escaping SlowRequestWorker.Deliver) throws(SystemError) {
        self.file = file
        worker = try SlowRequestWorker(name: "state writer", deliver: deliver)
    }

    /// Queues `state` to be written. Control thread.
    func save(_ state: PersistedState) {
        let bytes = StateFile.bytes(state)
        let number = newest.add(1, ordering: .acquiringAndReleasing).newValue
        let write: @Sendable (WorkerJob) -> (any Error)? = { [self] _ in
            guard newest.load(ordering: .acquiring) == number else { return nil }  // a newer one follows
            do { try file.write(bytes) } catch { return error }
            return nil
        }
        worker.submit(for: nil, write) { [file] failure in
            guard let failure else { return }
            Log.error(
                "cannot save sessions to \(file.path): \(failure); "
                    + "they stay in memory, fix the state dir to keep them across restarts")
        }
    }

    /// Waits for the write under way, drops queued ones and writes `state` here, on the
    /// control thread: at shutdown, when the loop no longer runs.
    func finish(_ state: PersistedState) {
        worker.stop()
        do {
            try file.save(state)
        } catch {
            Log.error("cannot save sessions to \(file.path): \(error); the last changes are lost, fix the state dir")
        }
    }
}

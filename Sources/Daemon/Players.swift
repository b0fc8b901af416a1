// Players (SPEC §3, §4, §11): files streamed into the engine through a session's output route.
// Control thread only; each player's file is read on its own feeder thread (MediaFiles).
import AudioEngine
import ControlProtocol
import MediaFiles
import SessionPolicy
import SystemSupport

/// Why a player is paused: the user, or something the policy did (which resumption may undo).
enum PauseCause: String {
    case user, interruption, routeDisconnected = "oldDeviceUnavailable", mediaServicesLost
}

/// One playing (or paused) file of a session.
final class PlayerStream {
    let app: String
    let stream: String
    let path: String
    let port: String
    let handle: PlayerHandle
    let feeder: FilePlayer
    var pausedBy: PauseCause?

    init(app: String, stream: String, path: String, port: String, handle: PlayerHandle, feeder: FilePlayer) {
        self.app = app
        self.stream = stream
        self.path = path
        self.port = port
        self.handle = handle
        self.feeder = feeder
    }

    var stateName: String { pausedBy == nil ? "playing" : "paused" }

    var json: JSONValue {
        [
            "app": .string(app), "stream": .string(stream), "file": .string(path), "port": .string(port),
            "state": .string(stateName), "paused_by": JSONValue(pausedBy?.rawValue),
            "frames_played": .number(Double(handle.framesPlayed)), "underruns": .number(Double(handle.underruns)),
        ]
    }
}

/// All players, keyed by app and stream name.
final class PlayerTable {
    private(set) var players: [String: PlayerStream] = [:]

    static func key(_ app: String, _ stream: String) -> String { app + "\u{0}" + stream }

    func get(_ app: String, _ stream: String) -> PlayerStream? { players[Self.key(app, stream)] }
    func of(_ app: String) -> [PlayerStream] { players.values.filter { $0.app == app }.sorted { $0.stream < $1.stream } }
    var all: [PlayerStream] { players.values.sorted { ($0.app, $0.stream) < ($1.app, $1.stream) } }

    func insert(_ player: PlayerStream) { players[Self.key(player.app, player.stream)] = player }
    func remove(_ player: PlayerStream) { players[Self.key(player.app, player.stream)] = nil }

    /// Whether any of an app's players is playing (for the policy's isBusy).
    func anyPlaying(_ app: String) -> Bool { of(app).contains { $0.pausedBy == nil } }
}

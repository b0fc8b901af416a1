// The daemon's side of the RTP monitor (NetworkAudio's RTPMonitor): making it with recd's log,
// and a recorder's view of it as Archive's `NetworkReception`.
import Archive
import NetworkAudio
import Platform
import SystemSupport

extension RTPMonitor {
    /// A monitor whose lines go to recd's log. Nil (logged) when its eventfd cannot be made.
    static func forRecd() -> RTPMonitor? {
        do {
            return try RTPMonitor { note in
                switch note.level {
                case .info: Log.info(note.text)
                case .warning: Log.warning(note.text)
                }
            }
        } catch {
            Log.warning("no RTP monitor: \(error)")
            return nil
        }
    }
}

/// A recorder's view of the monitor: the network's facts about its input, whose ports are
/// `clients`' (looked up at each call: the stream may be found, lost and found again while the
/// recorder runs). Any thread (a recorder's archiver).
final class RTPReception: NetworkReception {
    private let monitor: RTPMonitor
    private let clients: [String]

    init(monitor: RTPMonitor, clients: [String]) {
        self.monitor = monitor
        self.clients = clients
    }

    func packetCounts() -> NetworkPacketCounts? {
        monitor.facts(ofAnyOf: clients).map { NetworkPacketCounts(received: $0.packets, lost: $0.lost) }
    }

    func losses(overlapping range: Range<Int>) -> [Range<Int>] {
        let now = Int(SystemClock.monotonicSeconds() * 1e6)
        return monitor.facts(ofAnyOf: clients)?.losses(overlapping: range, now: now) ?? []
    }
}

// The daemon's side of network audio (NetworkAudio holds the parsers, `pw-dump`'s run and the
// monitor): which JACK clients are RTP streams PipeWire receives, as the last `pw-dump` on the
// slow worker showed them (for the FROM of `routes`, and what the RTP monitor listens to); the
// monitor made with recd's log; a recorder's view of it as Archive's `NetworkReception`.
// Built by the composition root (`Recd.compose`), held by the engine controller.
//
// Threads: `RTPStreamDirectory`'s methods on the control thread; the `pw-dump` job on the slow
// worker; `RTPReception` on any thread (a recorder's archiver). The monitor's own thread is
// `RTPMonitor`'s: it makes it (on the first `watch` with a stream), holds it and ends it in
// `stop` (`RTPStreamDirectory.stop`, at shutdown).
import Archive
import AudioEngine
import Foundation
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

/// The RTP streams PipeWire receives, as the last `pw-dump` showed them, and the monitor that
/// counts their packets. Control thread only (`@unchecked Sendable`: the worker's completion,
/// which captures it, runs there too).
final class RTPStreamDirectory: @unchecked Sendable {
    /// By JACK client name.
    private(set) var sessions: [String: AnnouncedRTPStream] = [:]
    private var running = false
    /// Ports changed while a run was under way: one more run when it ends.
    private var again = false
    private var loggedFailure = false
    /// Told which receivers' streams to listen to after each run (nil: no monitor).
    private let monitor: RTPMonitor?

    init(monitor: RTPMonitor?) { self.monitor = monitor }

    /// `origin` as `routes` shows it: a client that is an RTP stream's node becomes `.rtp`.
    func origin(_ origin: PortOrigin) -> PortOrigin {
        guard case .local(let client) = origin, let session = sessions[client] else { return origin }
        return .rtp(session: session.name, address: session.address, client: client)
    }

    /// The network's facts about audio whose ports are `clients'` (nil without a monitor).
    func reception(clients: [String]) -> (any NetworkReception)? {
        monitor.map { RTPReception(monitor: $0, clients: clients) }
    }

    /// The first of `clients` that is a stream the monitor listens to, as it knows it now. Any thread.
    func facts(ofAnyOf clients: [String]) -> RTPStreamFacts? { monitor?.facts(ofAnyOf: clients) }

    /// The streams the monitor listens to (for /metrics). Any thread.
    func streams() -> [RTPStreamFacts] { monitor.map { Array($0.facts().values) } ?? [] }

    /// Ends the monitor's thread and closes its sockets (shutdown).
    func stop() { monitor?.stop() }

    /// Reads PipeWire's nodes again on `worker` (JACK ports came or went). `remote`: the PipeWire
    /// server recd's libjack reached. Nothing on jackd2, where there is nothing to ask.
    func refresh(remote: String, onPipeWire: Bool, worker: SlowRequestWorker) {
        guard onPipeWire, PipeWireRTPStreams.isInstalled else { return }
        guard !running else {
            again = true
            return
        }
        running = true
        let environment = PipeWireRTPStreams.environment(from: ProcessInfo.processInfo.environment)
        worker.submit(for: nil) { _ -> Result<[String: AnnouncedRTPStream], PipeWireRTPStreams.Failure> in
            PipeWireRTPStreams.read(remote: remote, environment: environment)
        } completion: { [weak self] result in
            guard let self else { return }
            running = false
            switch result {
            case .success(let found):
                if found != sessions {
                    Log.info("RTP streams PipeWire receives: \(PipeWireRTPStreams.describe(found))")
                }
                sessions = found
                monitor?.watch(PipeWireRTPStreams.wanted(found))
                loggedFailure = false
            case .failure(let failure):
                // Once until a run succeeds again: ports come and go often.
                if !loggedFailure { Log.warning("\(failure.message); recctl routes shows RTP streams as local") }
                loggedFailure = true
            }
            if again {
                again = false
                refresh(remote: remote, onPipeWire: onPipeWire, worker: worker)
            }
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
